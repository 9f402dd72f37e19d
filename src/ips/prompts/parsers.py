"""One parser per dataset format: a record to an item, or `BadRecord` saying why not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ips.prompts.items import LETTERS, InstructionItem, Item, MCQItem


class BadRecord(Exception):
    """A malformed record: the field and what is wrong with it (the caller adds where).

    Without a field it describes the whole record (a line that is not a JSON object).
    """

    def __init__(self, field: str | None, problem: str):
        super().__init__(problem if field is None else f"field '{field}' {problem}")


def _field(record: Mapping[str, Any], key: str) -> Any:
    if record.get(key) is None:
        have = ", ".join(record) or "no fields"
        raise BadRecord(key, f"is missing or null (the record has {have})")
    return record[key]


def _text(record: Mapping[str, Any], key: str, allow_empty: bool = False) -> str:
    value = _field(record, key)
    if not isinstance(value, str):
        raise BadRecord(key, f"is {type(value).__name__}, expected text")
    if not allow_empty and not value.strip():
        raise BadRecord(key, "is empty")
    return value.strip()


def _optional_text(record: Mapping[str, Any], key: str) -> str:
    return _text(record, key, allow_empty=True) if record.get(key) is not None else ""


def _choices(value: Any, key: str = "choices") -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise BadRecord(key, f"is {type(value).__name__}, expected a list of texts")
    if not value:
        raise BadRecord(key, "is empty")
    for i, c in enumerate(value):
        if not isinstance(c, str) or not c.strip():
            raise BadRecord(key, f"has an empty or non-text option at position {i}: {c!r}")
    return tuple(c.strip() for c in value)


def _gold(value: Any, n: int, key: str) -> int:
    """A gold option given as a letter (`B`) or a 0-based index, checked against `n` options."""
    if isinstance(value, str) and len(value) == 1 and value.upper() in LETTERS:
        gold = LETTERS.index(value.upper())
    elif isinstance(value, int) and not isinstance(value, bool):
        gold = value
    else:
        raise BadRecord(key, f"is {value!r}, expected a letter A-J or a 0-based index")
    if not 0 <= gold < n:
        raise BadRecord(key, f"is {value!r}, outside the {n} choices")
    return gold


def _record_id(record: Mapping[str, Any]) -> str:
    """The record's own id, or "" for `default_id` to fill in."""
    return str(record["id"]) if record.get("id") is not None else ""


def default_id(
    fmt: str, name: str, split: str, item: Item, row: int, per_subject: dict[str, int]
) -> str:
    """An id for a record without one: `dolly-<row>`; `mmlu-<subject>-<split>-<k>`, k counting
    rows per subject so that ids do not depend on which subjects a file or hub config holds
    and `dev` shots never share an id with `test` items; else `<dataset name>-<row>`."""
    if fmt == "dolly":
        return f"dolly-{row}"
    if fmt == "mmlu" and item.subject:
        per_subject[item.subject] = k = per_subject.get(item.subject, -1) + 1
        return f"mmlu-{item.subject}-{split}-{k}"
    return f"{name}-{row}"


def _parse_arc(record: Mapping[str, Any]) -> MCQItem:
    """ARC: `choices` is {text, label}; `answerKey` is one of the labels (`C` or `3`)."""
    raw = _field(record, "choices")
    if not isinstance(raw, Mapping) or "text" not in raw or "label" not in raw:
        raise BadRecord("choices", "must have lists 'text' and 'label'")
    choices = _choices(raw["text"], "choices.text")
    labels = [str(label).strip() for label in raw["label"]]
    if len(labels) != len(choices):
        raise BadRecord("choices", f"has {len(choices)} texts but {len(labels)} labels")
    key = str(_field(record, "answerKey")).strip()
    if key not in labels:
        raise BadRecord("answerKey", f"is {key!r}, not one of the labels {', '.join(labels)}")
    return MCQItem(
        id=_record_id(record),
        question=_text(record, "question"),
        choices=choices,
        gold=labels.index(key),
    )


def _parse_indexed(record: Mapping[str, Any], gold_field: str) -> MCQItem:
    """`choices` as a list and the answer in `gold_field` as a 0-based index or a letter."""
    choices = _choices(_field(record, "choices"))
    return MCQItem(
        id=_record_id(record),
        question=_text(record, "question"),
        choices=choices,
        gold=_gold(_field(record, gold_field), len(choices), gold_field),
        subject=_optional_text(record, "subject"),
    )


def _parse_mmlu(record: Mapping[str, Any]) -> MCQItem:
    """MMLU: `answer` is a 0-based index (or a letter)."""
    return _parse_indexed(record, "answer")


def _parse_mcq(record: Mapping[str, Any]) -> MCQItem:
    """Our own MCQ format: `gold` is a letter or a 0-based index."""
    return _parse_indexed(record, "gold")


def _parse_dolly(record: Mapping[str, Any]) -> InstructionItem:
    """Dolly-15k: context may be empty (open categories); an empty response is skipped later."""
    return InstructionItem(
        id=_record_id(record),
        instruction=_text(record, "instruction"),
        context=_text(record, "context", allow_empty=True),
        response=_text(record, "response", allow_empty=True),
        category=_text(record, "category"),
    )


PARSERS = {"arc": _parse_arc, "mmlu": _parse_mmlu, "mcq": _parse_mcq, "dolly": _parse_dolly}

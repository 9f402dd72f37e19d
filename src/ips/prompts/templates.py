"""Prompt templates: render an item to a prompt string, keeping every variable's span.

A template is data (`ips/data/templates.yaml`, or a user file of the same layout): a format
string over the item's fields. Rendering concatenates literal text and field texts, so the
offset of every field in the prompt is known, and a variable at `field[start:end]` lands at
`offset(field) + start` in the prompt. Few-shot conditions prepend k solved
examples rendered with the same template (Appendix E.6). Perturbation conditions
(Appendix L) replace a field's wording and say where each variable lies in the new wording;
a perturbation condition with k shots does both, its examples left as they are written.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from ips import yaml_text
from ips.errors import InputError
from ips.prompts.items import LETTERS, InstructionItem, Item, MCQItem
from ips.prompts.variables import Variable


class TemplateError(InputError):
    """A template file or perturbation entry that cannot be used as written."""


@dataclass(frozen=True)
class Template:
    """One surface form of a prompt for items of one kind (`mcq` or `instruction`)."""

    name: str
    kind: str
    format: str
    cue: str
    changes: frozenset[str]
    option: str = ""
    format_no_context: str = ""


@dataclass(frozen=True)
class TemplateSet:
    """All templates of a file, with the few-shot layout of each item kind."""

    templates: dict[str, Template]
    change_kinds: dict[str, str]
    shot_answer: dict[str, str]
    shot_separator: dict[str, str]

    def __getitem__(self, name: str) -> Template:
        try:
            return self.templates[name]
        except KeyError:
            raise TemplateError(
                f"unknown template {name!r}; known: {', '.join(self.templates)}"
            ) from None

    def pair_label(self, a: str, b: str) -> str:
        """`altering`, `adding` or `mixed`: the kinds of the changes between a and b (Appendix G).

        Templates that differ in nothing are labelled `none`.
        """
        diff = self[a].changes ^ self[b].changes
        kinds = {self.change_kinds[c] for c in diff}
        if not kinds:
            return "none"
        return kinds.pop() if len(kinds) == 1 else "mixed"


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its text, the character span of every variable, and the answer cue."""

    text: str
    spans: tuple[tuple[int, int], ...]
    cue: str


def _read_yaml(path: str | Path | None, shipped: str, what: str):
    """The parsed YAML of `path`, or of the package's data/`shipped` when path is None."""
    if path is None:
        source, label = resources.files("ips") / "data" / shipped, f"ips/data/{shipped}"
    else:
        source, label = Path(path), str(path)
        if not source.is_file():
            raise TemplateError(f"{label}: no such {what} file")
    try:
        raw = yaml_text.load(source.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise TemplateError(f"{label}: not valid YAML ({' '.join(str(e).split())})") from None
    if raw is not None and not isinstance(raw, dict):
        raise TemplateError(f"{label}: the top level must be a mapping, as in ips/data/{shipped}")
    return raw, label


def load_templates(path: str | Path | None = None) -> TemplateSet:
    """Read a template file (default: the one shipped with the package) and check it."""
    raw, label = _read_yaml(path, "templates.yaml", "template")
    raw = raw or {}
    change_kinds = dict(raw.get("change_kinds", {}))
    templates: dict[str, Template] = {}
    shot_answer, shot_separator = {}, {}
    for kind in ("mcq", "instruction"):
        section = raw.get(kind) or {}
        shot_answer[kind] = section.get("shot_answer", "")
        shot_separator[kind] = section.get("shot_separator", "\n\n")
        for name, entry in (section.get("templates") or {}).items():
            where = f"{label}: {kind}.templates.{name}"
            if name in templates:
                raise TemplateError(f"{where}: name already used by another template")
            t = Template(
                name=name,
                kind=kind,
                format=_required(entry, "format", where),
                cue=_required(entry, "cue", where),
                changes=frozenset(entry.get("changes") or ()),
                option=entry.get("option", ""),
                format_no_context=entry.get("format_no_context", ""),
            )
            _check_template(t, change_kinds, where)
            templates[name] = t
    return TemplateSet(templates, change_kinds, shot_answer, shot_separator)


def _required(entry: Mapping, key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise TemplateError(f"{where}: missing or empty field {key!r}")
    return value


# how often each placeholder must occur: a field written twice would leave one copy unmasked
_REQUIRED = {
    ("mcq", "format"): {"question": 1, "options": 1},
    ("instruction", "format"): {"instruction": 1, "context": 1},
    ("instruction", "format_no_context"): {"instruction": 1, "context": 0},
    ("mcq", "option"): {"letter": 1, "choice": 1},
}


def _check_template(t: Template, change_kinds: Mapping[str, str], where: str) -> None:
    if t.kind == "mcq" and not t.option:
        raise TemplateError(f"{where}: missing field 'option' (how one option is written)")
    parts = [("format", t.format)] + (
        [("format_no_context", t.format_no_context)] if t.format_no_context else []
    ) + ([("option", t.option)] if t.kind == "mcq" else [])
    for key, fmt in parts:
        _check_fields(fmt, _REQUIRED[t.kind, key], f"{where}.{key}")
        if key != "option" and not fmt.endswith(t.cue):
            raise TemplateError(f"{where}.{key}: does not end with its cue {t.cue!r}")
    unknown = set(t.changes) - set(change_kinds)
    if unknown:
        raise TemplateError(
            f"{where}.changes: {sorted(unknown)} not in change_kinds ({sorted(change_kinds)})"
        )


def _check_fields(fmt: str, required: Mapping[str, int], where: str) -> None:
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(fmt) if f is not None]
    except ValueError as e:
        raise TemplateError(f"{where}: not a valid format string ({e})") from None
    unknown = sorted(set(names) - set(required))
    if unknown:
        allowed = sorted(k for k, c in required.items() if c)
        raise TemplateError(f"{where}: unknown template field(s) {unknown}; allowed: {allowed}")
    for name, count in required.items():
        if names.count(name) != count:
            raise TemplateError(f"{where}: placeholder {{{name}}} must occur {count} time(s), "
                                f"found {names.count(name)}")


class _Writer:
    """Appends text and remembers where each field's text starts."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.offsets: dict[str, int] = {}

    def literal(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def field(self, key: str, text: str) -> None:
        self.offsets[key] = self.length
        self.literal(text)

    def format(self, fmt: str, values: Mapping[str, str], keys: Mapping[str, str]) -> None:
        """Write `fmt`, recording the offset of each field under `keys[field]` when given."""
        for literal, name, _, _ in string.Formatter().parse(fmt):
            self.literal(literal)
            if name is not None:
                if name in keys:
                    self.field(keys[name], values[name])
                else:
                    self.literal(values[name])

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _write_item(w: _Writer, t: Template, fields: Mapping[str, str], track: bool) -> None:
    """Render one item (its `fields()` texts) with `t`; record field offsets when `track`."""
    if t.kind == "mcq":
        w.format(t.format.split("{options}")[0], fields, {"question": "question"} if track else {})
        n_choices = sum(k.startswith("choice_") for k in fields)
        for i in range(n_choices):
            values = {"letter": LETTERS[i], "choice": fields[f"choice_{i}"]}
            w.format(t.option, values, {"choice": f"choice_{i}"} if track else {})
        rest = t.format.split("{options}", 1)[1] if "{options}" in t.format else ""
        w.format(rest, fields, {"question": "question"} if track else {})
    else:
        fmt = t.format if fields.get("context") or not t.format_no_context else t.format_no_context
        keys = {"instruction": "instruction", "context": "context"} if track else {}
        w.format(fmt, fields, keys)


def render(
    template: Template,
    item: Item,
    variables: Sequence[Variable],
    shots: Sequence[Item] = (),
    templates: TemplateSet | None = None,
    fields: Mapping[str, str] | None = None,
) -> Prompt:
    """Render `item` with `template`, after `shots` solved examples.

    `fields` replaces the item's field texts (a perturbed wording); the variables' spans must
    then refer to those texts. Raises `TemplateError` when the kinds do not match.
    """
    kind = "mcq" if isinstance(item, MCQItem) else "instruction"
    if template.kind != kind:
        raise TemplateError(f"template {template.name!r} is for {template.kind} items, "
                            f"item {item.id!r} is {kind}")
    if shots and templates is None:
        raise ValueError("rendering few-shot examples needs the TemplateSet (shot layout)")
    fields = dict(item.fields() if fields is None else fields)
    w = _Writer()
    for shot in shots:
        _write_item(w, template, shot.fields(), track=False)
        w.literal(templates.shot_answer[kind].format(**_answer_values(shot)))
        w.literal(templates.shot_separator[kind])
    _write_item(w, template, fields, track=True)
    text = w.text
    spans = []
    for var in variables:
        start = w.offsets[var.field] + var.start
        end = w.offsets[var.field] + var.end
        if text[start:end] != var.text:  # the template must carry the field text verbatim
            raise TemplateError(f"item {item.id!r}: variable {var.text!r} not found at its span "
                                f"in template {template.name!r}")
        spans.append((start, end))
    return Prompt(text, tuple(spans), template.cue)


def _answer_values(item: Item) -> dict[str, str]:
    if isinstance(item, MCQItem):
        return {"letter": item.gold_letter, "choice": item.choices[item.gold]}
    assert isinstance(item, InstructionItem)
    return {"response": item.response}


@dataclass(frozen=True)
class Perturbation:
    """A rewording of one item (Appendix L): new field texts and where each variable went.

    `variables` maps a variable's original text to its text in the new wording; a variable
    that is not listed keeps its text. Each must occur exactly once in its new field.
    """

    name: str
    item_id: str
    fields: dict[str, str]
    variables: dict[str, str]


def load_perturbations(path: str | Path | None = None) -> dict[str, dict[str, Perturbation]]:
    """Read a perturbation file: item id → perturbation name → `Perturbation`."""
    raw, label = _read_yaml(path, "dolly_perturbations.yaml", "perturbation")
    raw = raw or {}
    out: dict[str, dict[str, Perturbation]] = {}
    for item_id, entries in raw.items():
        for name, entry in (entries or {}).items():
            where = f"{label}: {item_id}.{name}"
            fields = {k: v for k, v in entry.items() if k != "variables"}
            if not fields or not all(isinstance(v, str) for v in fields.values()):
                raise TemplateError(f"{where}: give the new text of at least one field")
            variables = entry.get("variables") or {}
            if not isinstance(variables, dict):
                raise TemplateError(f"{where}.variables: must map old text to new text")
            out.setdefault(str(item_id), {})[name] = Perturbation(
                name, str(item_id), fields, {str(k): str(v) for k, v in variables.items()}
            )
    return out


def perturb(
    item: Item, variables: Sequence[Variable], p: Perturbation
) -> tuple[dict[str, str], list[Variable]]:
    """Field texts of the perturbed item and the variables re-located in them."""
    fields = item.fields()
    unknown = set(p.fields) - set(fields)
    if unknown:
        raise TemplateError(f"perturbation {p.name!r} of {item.id!r}: unknown field(s) "
                            f"{sorted(unknown)}; item fields: {sorted(fields)}")
    fields |= p.fields
    # a perturbation names variables by their text, so a text shared by two variables of a
    # reworded field cannot say which occurrence went where
    repeated = Counter((v.field, v.text) for v in variables if v.field in p.fields)
    moved = []
    for var in variables:
        if var.field not in p.fields:
            moved.append(var)
            continue
        if repeated[var.field, var.text] > 1:
            raise TemplateError(
                f"perturbation {p.name!r} of {item.id!r}: variable {var.text!r} occurs "
                f"{repeated[var.field, var.text]} times in the {var.field}, so its new place is "
                "ambiguous; reword the item so that no content word repeats, or leave the item "
                "out of the perturbation file"
            )
        new = p.variables.get(var.text, var.text)
        # whole words only: "set" must not be found inside "sunset"
        word = rf"(?<!\w){re.escape(new)}(?!\w)"
        hits = [m.start() for m in re.finditer(word, fields[var.field])]
        if len(hits) != 1:
            problem = "does not occur" if not hits else "occurs more than once"
            raise TemplateError(
                f"perturbation {p.name!r} of {item.id!r}: variable {var.text!r} → {new!r} "
                f"{problem} as a whole word in the new {var.field}; map it under 'variables'"
            )
        moved.append(Variable(new, var.field, hits[0], hits[0] + len(new)))
    return fields, moved


@dataclass(frozen=True)
class Condition:
    """One way of prompting: a template, k few-shot examples, optionally a perturbation."""

    name: str
    template: str
    shots: int = 0
    perturbation: str | None = None


#: the group of the plain templates (no examples, no perturbation), compared in the main results
ZERO_SHOT = "0shot"
#: the group of the first template and its rewordings (Appendix L)
PERTURBATION = "perturbation"


def conditions(
    template_names: Sequence[str],
    few_shot_templates: Sequence[str] = (),
    shots: Sequence[int] = (),
    perturbations: Sequence[str] = (),
    perturbation_shots: Sequence[int] = (),
) -> tuple[list[Condition], dict[str, list[str]]]:
    """The conditions of one dataset and the groups IPS compares pairwise.

    Group `0shot` holds the plain templates; `{k}shot` holds the few-shot templates with k
    examples; `perturbation` holds the first template and its perturbed wordings, and
    `perturbation-{k}shot` (k of `perturbation_shots`) the same prompts with k examples
    (Figs. 12d, 55): `{base}-{k}shot` (the k-shot template condition where the first
    template is a few-shot template, else one of its own) and `{base}-{p}-{k}shot` for each
    perturbation p.
    """
    out = [Condition(t, t) for t in template_names]
    groups: dict[str, list[str]] = {ZERO_SHOT: list(template_names)}
    for k in shots:
        names = [f"{t}-{k}shot" for t in few_shot_templates]
        out += [Condition(n, t, k) for n, t in zip(names, few_shot_templates)]
        groups[f"{k}shot"] = names
    if perturbations:
        base = template_names[0]
        names = [f"{base}-{p}" for p in perturbations]
        out += [Condition(n, base, 0, p) for n, p in zip(names, perturbations)]
        groups[PERTURBATION] = [base, *names]
        for k in perturbation_shots:
            plain = f"{base}-{k}shot"
            if plain not in {c.name for c in out}:
                out.append(Condition(plain, base, k))
            reworded = [f"{n}-{k}shot" for n in names]
            out += [Condition(n, base, k, p) for n, p in zip(reworded, perturbations)]
            groups[f"{PERTURBATION}-{k}shot"] = [plain, *reworded]
    return out, groups


@functools.cache
def _template_kinds(path: str | Path | None) -> dict[str, str]:
    """{template name: kind} of a template file, read once per process: `dataset_conditions`
    runs for every job the workflow plans."""
    return {name: t.kind for name, t in load_templates(path).templates.items()}


def dataset_conditions(kind: str, templates: Mapping, few_shot: Mapping,
                       perturbations: Mapping) -> tuple[list[Condition], dict[str, list[str]]]:
    """`conditions` of a dataset of `kind` ("mcq" | "instruction") under the config's
    `templates`, `few_shot` and `perturbations`: the few-shot templates of its own kind
    (Appendix E.6 for MCQ, Fig. 48 for instruction datasets), perturbations and their
    k-shot counts (`perturbations.shots`, Figs. 12d, 55) an instruction setting (Appendix L);
    a settings dict without `perturbations.shots` has none."""
    kinds = _template_kinds(templates.get("file"))
    shot_templates = [t for t in few_shot["templates"] if kinds[t] == kind]
    instruction = kind == "instruction"
    return conditions(templates[kind], shot_templates, few_shot["shots"] if shot_templates else (),
                      perturbations.get("names", []) if instruction else [],
                      perturbations.get("shots", []) if instruction else [])

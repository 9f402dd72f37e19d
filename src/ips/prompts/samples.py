"""From a configured dataset to the prompts that get scored: items, variables, conditions.

`prepare_samples(settings)` loads the dataset, draws `n_items` items that qualify (they
have variables, at most `n_max` of them after the reduction rule `variables.reduce` of
`ips.prompts.variables`, and every template condition renders), fixes the few-shot examples, and
renders every (item, condition) prompt with its variables' spans. An item without a rewording
of the perturbation file (`perturbations.file`) lacks that perturbation condition in its
`prompts`, at 0 and at k shots (it is not scored, `ips.formats.values`' `scored`);
`SampleSet.perturbed` counts the items that have each. A reworded condition with k shots
(`perturbations.shots`) writes the same k examples as the plain k-shot condition, as the
dataset gives them, and the query reworded: the two prompts of a pair differ only in the
query's wording, as at 0 shots (the paper does not say; Appendix L rewords the instruction
under test). It depends on no model, except for the one reference model of the
`occlusion` rule, so every model is explained over the same variables and prompts. The result round-trips through JSON (`results/samples/{dataset}.json`),
with each sample's `Reduction` (units before reduction, whether reduced, the rule, occlusion
scores and reference model).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ips import __version__
from ips.errors import InputError
from ips.outputs import atomic_path
from ips.prompts.datasets import PAPER_SHOTS, load_items, load_shot_items
from ips.prompts.draw import sample_items
from ips.prompts.items import InstructionItem, Item, MCQItem
from ips.prompts.templates import (
    Condition,
    Prompt,
    dataset_conditions,
    load_perturbations,
    load_templates,
    perturb,
    render,
)
from ips.prompts.variables import Reduction, Skip, Variable, select

if TYPE_CHECKING:  # torch is imported only where a model is used
    from collections.abc import Callable

log = logging.getLogger(__name__)


@dataclass
class Sample:
    """One item with its variables and its rendered prompt under every condition it has (all
    but the perturbation conditions whose rewording the item lacks)."""

    item: Item
    variables: list[Variable]
    prompts: dict[str, Prompt]
    reduction: Reduction | None = None  # None: not recorded (samples built by hand)


SHOTS_FROM = {"": "no few-shot examples", "items": "of its own items, never evaluated",
              "shot_split": "from its few-shot split", "paper": "the paper's (Appendix E.6)"}


@dataclass
class SampleSet:
    """Everything scoring needs about one dataset, independent of the model."""

    dataset: str
    kind: str  # "mcq" | "instruction"
    conditions: list[Condition]
    groups: dict[str, list[str]]
    samples: list[Sample]
    shots: list[Item] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    n_considered: int = 0
    settings: dict = field(default_factory=dict)
    shots_from: str = ""  # a key of SHOTS_FROM: where the few-shot examples came from

    def shard(self, index: int, size: int) -> list[Sample]:
        """Samples [index·size, (index+1)·size) of this set."""
        return self.samples[index * size : (index + 1) * size]

    def n_shards(self, size: int) -> int:
        return max(1, -(-len(self.samples) // size))

    def perturbed(self) -> dict[str, int]:
        """Per perturbation condition, how many samples have it (an item without its
        rewording runs its other conditions only)."""
        return {c.name: sum(c.name in s.prompts for s in self.samples)
                for c in self.conditions if c.perturbation}

    def with_conditions(self, names: Sequence[str]) -> SampleSet:
        """This set with only the named conditions (and groups cut to them); `InputError`
        naming the known conditions if one is not among them."""
        known = [c.name for c in self.conditions]
        for name in names:
            if name not in known:
                raise InputError(f"dataset {self.dataset!r}: no condition {name!r} "
                                 f"(its conditions: {', '.join(known)})")
        groups = {g: [c for c in members if c in names] for g, members in self.groups.items()}
        return replace(self, conditions=[c for c in self.conditions if c.name in names],
                       groups={g: m for g, m in groups.items() if m})


def prepare_samples(settings: dict, occlusion: Callable | None = None) -> SampleSet:
    """Load, sample, select variables and render every condition (see the module docstring).

    `settings`: `dataset_settings` of a validated config, or `check_settings` of JSON ones.

    `occlusion` (an `ips.scoring.occlusion.Occlusion` of the reference model) is required by the
    rule `occlusion`: an item with more than n_max units is rendered with all its units as
    variables under the first condition (the first template, 0-shot) and ranked by it.
    """
    name, entry = settings["dataset"], settings["entry"]
    loaded = load_items(name, entry)
    kind = "mcq" if loaded.items and isinstance(loaded.items[0], MCQItem) else "instruction"
    templates = load_templates(settings["templates"].get("file"))
    pert = settings["perturbations"]
    conditions, groups = dataset_conditions(kind, settings["templates"], settings["few_shot"],
                                            pert)
    perturbations = _perturbations(name, pert, [c.perturbation for c in conditions
                                                if c.perturbation], loaded.items)
    if settings["variables"]["reduce"] == "occlusion" and occlusion is None:
        raise InputError("variables.reduce is occlusion: give the reference model "
                         "(`ips samples --config ...`, or `--reference-entry` with --settings)")
    prepared: dict[str, Sample] = {}

    def qualifies(item: Item) -> str | None:
        got = _prepare(item, settings, templates, conditions, perturbations, occlusion)
        if isinstance(got, str):
            return got
        prepared[item.id] = got
        return None

    paper = settings["few_shot"].get("examples") == "paper" and kind == "mcq"
    n_shots = max((c.shots for c in conditions), default=0)
    shot_items = None if paper else load_shot_items(name, entry)
    shots_from = "" if not n_shots else ("paper" if paper else
                                          "items" if shot_items is None else "shot_split")
    if shots_from == "items" and n_shots >= len(loaded.items):
        raise InputError(f"dataset {name!r}: {n_shots} few-shot examples (few_shot.shots) "
                         f"would take all of its {len(loaded.items)} items, leaving none to "
                         f"evaluate: lower few_shot.shots, or give it a few-shot split "
                         f"(datasets.{name}.shot_split)")
    drawn = sample_items(loaded.items, n_items=settings["n_items"], seed=settings["seed"],
                         n_shots=n_shots, shot_items=shot_items,
                         qualifies=qualifies, fixed_shots=PAPER_SHOTS if paper else None,
                         exclude=entry.get("exclude_items", ()))
    samples = []
    for item in drawn.items:
        s = prepared[item.id]
        for c in conditions:  # shots are known once the items are drawn
            if c.shots and c.name in s.prompts:
                s.prompts[c.name] = _render(c, item, s.variables, templates, perturbations,
                                            drawn.shots[: c.shots])
        samples.append(s)
    skipped = dict(Counter(loaded.skipped) + Counter(drawn.skipped))
    sample_set = SampleSet(name, kind, conditions, groups, samples, list(drawn.shots), skipped,
                           drawn.n_considered, settings, shots_from)
    _report(sample_set, drawn)
    return sample_set


def _perturbations(name: str, pert: dict, names: Sequence[str], items: Sequence[Item]) -> dict:
    """The perturbation file's rewordings ({} without perturbation conditions, `names`);
    `InputError` if one of `names` rewords no item of the dataset (every sample would lack
    it)."""
    if not names:
        return {}
    perturbations = load_perturbations(pert.get("file"))
    ids = {i.id for i in items}
    for p in names:
        if not any(p in perturbations.get(i, {}) for i in ids):
            raise InputError(
                f"dataset {name!r}: perturbation {p!r}: the perturbation file "
                f"{pert.get('file') or 'ips/data/dolly_perturbations.yaml'} rewords none of "
                f"its items; give rewordings of its item ids, or drop {p!r} from "
                "perturbations.names")
    return perturbations


def _prepare(item: Item, settings: dict, templates, conditions, perturbations: dict,
             occlusion: Callable | None) -> Sample | str:
    """The item's sample (variables, and its own rendering under every condition), or why it
    does not qualify."""
    opts, n_max, entry = settings["variables"], settings["n_max"], settings["entry"]
    first = conditions[0]  # the first template, 0-shot, unperturbed: where occlusion ranks units

    def rank(units: list[Variable]):
        prompt = render(templates[first.template], item, units)
        return occlusion(item, prompt, first.name, entry.get("target"))

    try:
        variables, reduction = select(item, strategy=opts["strategy"], n_max=n_max,
                                      merge_phrases=opts["merge_phrases"],
                                      fields=entry.get("fields"), reduce=opts["reduce"],
                                      occlusion=rank)
    except Skip as s:
        return s.reason if s.code == "none" else f"more than {n_max} variables"
    if reduction.scores:
        reduction = replace(reduction, reference_model=occlusion.model)
    # shots are rendered after sampling; here only the item's own rendering is checked
    prompts = {c.name: p for c in conditions
               if (p := _render(c, item, variables, templates, perturbations)) is not None}
    return Sample(item, variables, prompts, reduction)


def _render(c: Condition, item: Item, variables: list[Variable], templates, perturbations: dict,
            shots: Sequence[Item] = ()) -> Prompt | None:
    """The item's prompt under `c` after the solved examples `shots`, the item reworded when
    `c` has a perturbation (the examples are not: see the module docstring); None when the
    perturbation file has no such rewording of the item (it runs its other conditions, this
    one is not scored)."""
    fields, vs = None, variables
    if c.perturbation:
        p = perturbations.get(item.id, {}).get(c.perturbation)
        if p is None:
            return None
        fields, vs = perturb(item, variables, p)
    return render(templates[c.template], item, vs, shots, templates, fields)


def _report(sample_set: SampleSet, drawn) -> None:
    """Log what was drawn; warn when fewer items qualify than asked, stop when none does or
    when no drawn item has one of the perturbations."""
    name, samples, skipped, settings = (sample_set.dataset, sample_set.samples,
                                        sample_set.skipped, sample_set.settings)
    n_reduced = sum(s.reduction.reduced for s in samples)
    why = ", ".join(f"{k}: {v}" for k, v in skipped.items()) or "none"
    perturbed = sample_set.perturbed()
    shots = "" if not sample_set.shots_from else \
        f"; {len(sample_set.shots)} few-shot examples {SHOTS_FROM[sample_set.shots_from]}"
    log.info(
        "%s: %d items drawn of %d considered: %d kept all their units, %d reduced to "
        "n_max = %d (%s); skipped: %s%s; %d conditions%s",
        name, len(samples), drawn.n_considered, len(samples) - n_reduced, n_reduced,
        settings["n_max"], settings["variables"]["reduce"], why, shots,
        len(sample_set.conditions),
        "".join(f"; {c} on {k} of {len(samples)} items (the others lack the rewording)"
                for c, k in perturbed.items()),
    )
    # advice that applies: n_max only where items had too many variables, a few-shot split
    # only where the examples took items
    too_many = any(k.startswith("more than") for k in skipped)
    fixes = ["lower n_items", "add items"] + (["raise n_max"] if too_many else []) + (
        [f"give it a few-shot split (datasets.{name}.shot_split) so that its "
         f"{len(sample_set.shots)} examples come from elsewhere"]
        if sample_set.shots_from == "items" else [])
    if samples and not drawn.complete:  # the run goes on, with fewer samples than asked
        log.warning("dataset %r: only %d items qualify, n_items asks for %d (skipped: %s): %s",
                    name, len(samples), drawn.n_requested, why, ", or ".join(fixes))
    if not samples:
        raise InputError(f"dataset {name!r}: no item qualifies (skipped: {why}): "
                         + ", or ".join(fixes[1:] + (["change the variable selection"]
                                                     if too_many else [])))
    for c, k in perturbed.items():
        if k == 0:
            raise InputError(f"dataset {name!r}: condition {c!r}: none of the {len(samples)} "
                             "drawn items has its rewording in the perturbation file; add "
                             "rewordings of the drawn items or drop it from "
                             "perturbations.names")


def save_samples(sample_set: SampleSet, path: str | Path) -> None:
    """Write a SampleSet as JSON, atomically."""
    doc = {
        "ips_version": __version__,
        "dataset": sample_set.dataset,
        "kind": sample_set.kind,
        "conditions": [asdict(c) for c in sample_set.conditions],
        "groups": sample_set.groups,
        "shots": [_item_dict(i) for i in sample_set.shots],
        "shots_from": sample_set.shots_from,
        "skipped": sample_set.skipped,
        "perturbed": sample_set.perturbed(),  # read back from the prompts, for the reader
        "n_considered": sample_set.n_considered,
        "settings": sample_set.settings,
        "samples": [
            {
                "item": _item_dict(s.item),
                "variables": [asdict(v) for v in s.variables],
                "reduction": None if s.reduction is None else asdict(s.reduction),
                "prompts": {k: {"text": p.text, "spans": p.spans, "cue": p.cue}
                            for k, p in s.prompts.items()},
            }
            for s in sample_set.samples
        ],
    }
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")


def load_samples(path: str | Path) -> SampleSet:
    """Read a SampleSet written by `save_samples`."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such samples file; run `ips samples` first") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not a samples file ({e})") from None
    try:
        return _sample_set(doc)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: not a samples file written by `ips samples` "
                         f"({type(e).__name__}: {e}); run `ips samples` again") from None


def _sample_set(doc: dict) -> SampleSet:
    samples = [
        Sample(
            _item(s["item"]),
            [Variable(**v) for v in s["variables"]],
            {k: Prompt(p["text"], tuple(map(tuple, p["spans"])), p["cue"])
             for k, p in s["prompts"].items()},
            _reduction(s.get("reduction")),
        )
        for s in doc["samples"]
    ]
    return SampleSet(
        doc["dataset"], doc["kind"], [Condition(**c) for c in doc["conditions"]], doc["groups"],
        samples, [_item(i) for i in doc["shots"]], doc["skipped"], doc["n_considered"],
        doc["settings"], doc.get("shots_from", ""),  # a file written before it has none
    )


def _reduction(d: dict | None) -> Reduction | None:
    if d is None:
        return None
    return Reduction(d["rule"], d["n_units"], d["reduced"],
                     tuple(Variable(**u) for u in d["units"]), tuple(d["scores"]),
                     d["reference_model"])


def _item_dict(item: Item) -> dict:
    return {"kind": item.kind} | asdict(item)


def _item(d: dict) -> Item:
    d = dict(d)
    kind = d.pop("kind")
    if kind == "mcq":
        d["choices"] = tuple(d["choices"])
        return MCQItem(**d)
    return InstructionItem(**d)

"""What `ips explain` checks and chooses before a model loads: the item (a dataset's sample
or one given on the command line), the model's entry, the template pair and the variables,
each refused in one line (`ExplainError`, naming the option) before seconds of loading."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from ips.config import DEFAULT_MODEL, DEFAULT_MODEL_ENTRY, TARGETS, load_config, validate
from ips.errors import InputError
from ips.models.entries import ModelSpec
from ips.prompts.datasets import load_items
from ips.prompts.items import LETTERS, N_CHOICES, MCQItem
from ips.prompts.templates import load_templates
from ips.prompts.variables import Skip, select_variables

log = logging.getLogger("ips")

#: the template pair compared when none is given, per item kind
DEFAULT_TEMPLATES = {"mcq": ("T1", "T4"), "instruction": ("A1", "A4")}
CUSTOM_ID = "custom"  # the id of an item given on the command line
DEFAULT_CONFIG = Path("config.yaml")  # what `ips explain` reads when no --config is given


class ExplainError(InputError):
    """Bad input to `ips explain`; the message names the option at fault."""


def check_comparison(item, templates, template_file, target):
    """The template set, the checked pair of names and the target; `ExplainError` if wrong."""
    kind = item.kind
    template_set = load_templates(template_file)
    names = tuple(templates) if templates else DEFAULT_TEMPLATES[kind]
    _check_templates(template_set, names, kind)
    target = target or TARGETS[kind][0]
    if target not in TARGETS[kind]:
        raise ExplainError(f"--target: {target!r} does not apply to {kind} items; use one of "
                           f"{', '.join(TARGETS[kind])}")
    return template_set, names, target


def case_variables(item, strategy, n_max, merge_phrases, fields, reduce: str = "skip",
                   n_max_from: str = "--n-max"):
    """`select_variables` with its refusals as `ExplainError` naming the option at fault.

    ``reduce``: how an item with more than ``n_max`` units is reduced: "skip" (an item given
    on the command line is explained as given, so too many units is an error) or the
    dataset's own rule for a configured item, so that its variables are the workflow's
    (`ips.prompts.samples`); ``n_max_from`` says where ``n_max`` came from."""
    try:  # occlusion ranks units by a reference model's scores, which explain has not
        return select_variables(item, strategy=strategy, n_max=n_max,
                                merge_phrases=merge_phrases, fields=fields,
                                reduce="skip" if reduce == "occlusion" else reduce)
    except Skip as s:
        if s.code == "too_many" and reduce == "occlusion":
            raise ExplainError(
                f"--sample: item {item.id!r} has {s.reason}, and its dataset reduces units by "
                "occlusion with a reference model (variables.reduce), which explain does not "
                "rank; give --n-max at least the item's units") from None
        what = "--question" if item.id == CUSTOM_ID else "--sample"
        hint = (f" (at most n_max = {n_max}, {n_max_from}; raise --n-max, each template "
                "scores 2**n masked prompts, or draw variables from fewer fields, e.g. "
                "--fields question)" if s.code == "too_many" else "")
        raise ExplainError(f"{what}: item {item.id!r} has {s.reason}{hint}") from None
    except ValueError as e:  # unknown field
        raise ExplainError(f"--fields: {e}") from None


def _check_templates(template_set, names: Sequence[str], kind: str) -> None:
    if len(names) != 2 or names[0] == names[1]:
        raise ExplainError(f"--templates: give two different templates, got {list(names)}")
    for name in names:
        if name not in template_set.templates:
            known = ", ".join(t for t, x in template_set.templates.items() if x.kind == kind)
            raise ExplainError(f"--templates: unknown template {name!r}; known: {known}")
        if template_set[name].kind != kind:
            raise ExplainError(f"--templates: template {name!r} is for "
                               f"{template_set[name].kind} items, this item is {kind}")


def custom_item(question: str, choices: Sequence[str], answer: str):
    """An MCQ item from the command line; `answer` is a letter (A-D) or a choice's text."""
    if not question or not question.strip():
        raise ExplainError("--question: give a non-empty question")
    choices = [str(c) for c in choices or ()]
    if len(choices) != N_CHOICES:
        raise ExplainError(f"--choices: give exactly {N_CHOICES} choices (the MCQ templates "
                           f"write options {LETTERS[0]}-{LETTERS[N_CHOICES - 1]}), got "
                           f"{len(choices)}")
    for i, c in enumerate(choices):
        if not c.strip():
            raise ExplainError(f"--choices: choice {LETTERS[i]} is empty")
    if answer is None:
        raise ExplainError("--answer: give the gold answer, a letter or the text of a choice")
    letters = LETTERS[:N_CHOICES]
    a = answer.strip()
    if len(a) == 1 and a in letters:
        gold = letters.index(a)
    elif a in choices:
        gold = choices.index(a)
    elif len(a) == 1 and a.upper() in letters:
        gold = letters.index(a.upper())
    else:
        raise ExplainError(f"--answer: {answer!r} is not among the choices; give a letter "
                           f"{letters[0]}-{letters[-1]} or the exact text of a choice "
                           f"({', '.join(map(repr, choices))})")
    return MCQItem(id=CUSTOM_ID, question=question, choices=tuple(choices), gold=gold)


def dataset_item(config: dict, dataset: str, sample_id: str):
    """Item `sample_id` of a configured dataset (any item of it, drawn by the workflow or not)."""
    entries = config.get("datasets", {})
    if dataset not in entries:
        known = ", ".join(entries) or "none"
        raise ExplainError(f"--dataset: no dataset {dataset!r} under 'datasets' in the config "
                           f"(configured: {known})")
    loaded = load_items(dataset, entries[dataset])
    for item in loaded.items:
        if item.id == sample_id:
            return item
    some = ", ".join(i.id for i in loaded.items[:3])
    raise ExplainError(f"--sample: no item {sample_id!r} in dataset {dataset!r} "
                       f"({len(loaded.items)} usable items, e.g. {some})")


def explain_config(args) -> dict:
    """The validated config of `ips explain`: --config, else ./config.yaml, else the default
    model alone."""
    path = args.config
    if path is None and DEFAULT_CONFIG.is_file():
        path = DEFAULT_CONFIG
        log.info("using %s (give --config to choose another)", path)
    if path is not None:
        return load_config(path)
    return validate({"models": {DEFAULT_MODEL: DEFAULT_MODEL_ENTRY}})


def choose_item(args, config: dict):
    """The item, the fields variables come from, and the target (None: the kind's default)."""
    given = [o for o, v in (("--question", args.question), ("--choices", args.choices),
                            ("--answer", args.answer)) if v is not None]
    if args.sample is not None:
        if given:
            raise ExplainError(f"--sample: give either --dataset/--sample or --question/--choices/"
                               f"--answer, not both ({', '.join(given)} given)")
        if not args.dataset:
            raise ExplainError("--dataset: --sample needs the dataset it is an item of")
        item = dataset_item(config, args.dataset, args.sample)
        entry = config["datasets"][args.dataset]
        return item, args.fields or entry.get("fields"), args.target or entry.get("target")
    if args.dataset:
        raise ExplainError("--sample: --dataset needs the id of one of its items")
    if not given:
        raise ExplainError("--question: give an item (--question, --choices, --answer) or "
                           "--dataset and --sample")
    for o, v in (("--question", args.question), ("--choices", args.choices)):
        if v is None:
            raise ExplainError(f"{o}: missing (an item given here needs --question, --choices "
                               "and --answer)")
    return custom_item(args.question, args.choices, args.answer), args.fields, args.target


def choose_spec(args, config: dict):
    """The model to explain: --entry, else --model's config entry (default: the default model),
    else a local model directory, else a hub id in the local Hugging Face cache (its
    attributes, for both, from the checkpoint)."""
    name = args.model
    if args.entry is not None:
        if name is None:
            raise ExplainError("--model: --entry needs the model's name (it names the cache "
                               "directory of a converted model)")
        return ModelSpec.from_config(name, args.entry)
    models = config.get("models", {})
    if name is None:
        name = DEFAULT_MODEL if (DEFAULT_MODEL in models or not models) else next(iter(models))
    if name in models:
        return ModelSpec.from_config(name, models[name])
    if name == DEFAULT_MODEL:
        return ModelSpec.from_config(name, DEFAULT_MODEL_ENTRY)
    if Path(name).is_dir():  # a local model directory: its attributes from its checkpoint
        path = Path(name)
        return ModelSpec.from_config(_safe_name(path.name), {"source": {"path": str(path)}})
    known = ", ".join(models) or "none"
    if _HUB_ID.match(name):
        if not _in_hub_cache(name):
            raise ExplainError(f"--model: {name!r} is not under 'models' in the config "
                               f"(configured: {known}) nor in the local Hugging Face cache, and "
                               f"explain downloads nothing: run `hf download {name}` first")
        return ModelSpec.from_config(_safe_name(name), {"source": {"hub": name}})
    raise ExplainError(f"--model: no model {name!r} under 'models' in the config (configured: "
                       f"{known}), no such model directory, and not a hub id (org/name)")


#: a Hugging Face hub id, `org/name`
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _in_hub_cache(repo: str) -> bool:
    """Whether the local Hugging Face cache holds the repository's config.json."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo, "config.json"), str)


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", text).lstrip("._-")
    return name or "local-model"

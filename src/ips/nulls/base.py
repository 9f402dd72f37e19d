"""The interface of a null: a config section under `nulls`, and for a variant, what it scores.

A null is what IPS gives where no template changed (docs/method.md#nulls). Each kind is a
`Null`: the keys of its section `nulls.<kind>` (`settings`: JSON-schema properties with their
defaults, merged into the config schema by `ips.config`). A *variant* (`Variant`) is a null
whose games are the same prompts scored again with one setting changed: its section lists the
settings of every model, the conditions and the first shards scored again; the workflow
scores each setting with one `ips score` option (`flag`), `ips metrics` reads the runs beside
the main games (`--{kind}-values`) and checks that only that setting differs, and the
metrics, claims, figures and README rows of every variant are driven by its class. A subclass
that sets `kind` registers itself (`ips.nulls`), a plug-in's too (`ips.plugins`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ips import plugins

#: every registered null class by kind, in the order registered (`ips.nulls`)
REGISTRY: dict[str, type[Null]] = {}

#: the keys every variant's section has beside its list of settings
_VARIANT_KEYS = {
    "conditions": {
        "description": "Conditions scored again, where a dataset has them (a template name is "
                       "its 0-shot condition; few-shot ones are named like T1-1shot); [] = "
                       "each dataset's first template, 0-shot. Each condition group with one of "
                       "them gets the null (the mean over its conditions scored again); the "
                       "others have none.",
        "type": "array", "items": {"$ref": "#/$defs/text"}, "uniqueItems": True, "default": []},
    "shards": {
        "description": "The first shards of each model and dataset scored again (0 = all).",
        "type": "integer", "minimum": 0, "default": 1},
}


class Null(plugins.Registered, registry=REGISTRY, what="null"):
    """A config section under `nulls` (module docstring)."""

    kind: ClassVar[str]
    """The registry's name of the class, and its section's key under `nulls`."""
    description: ClassVar[str]
    """The section's description in the config schema."""
    settings: ClassVar[dict[str, Any]] = {}
    """The section's keys, as JSON-schema properties with their defaults (a variant's are
    made by `Variant.properties`)."""
    @classmethod
    def properties(cls) -> dict[str, Any]:
        """The JSON-schema properties of `nulls.<kind>`."""
        return cls.settings

    @classmethod
    def schema(cls) -> dict:
        """The JSON schema of `nulls.<kind>`."""
        return {"description": cls.description, "type": "object", "default": {},
                "additionalProperties": False, "properties": cls.properties()}


class Variant(Null):
    """A null scored again with one setting changed (module docstring). Its section's keys:
    `listed` (the settings of every model), `per_model` (a model's own list), `conditions`
    and `shards`."""

    listed: ClassVar[str]
    """The key of the section's list of settings ("dtypes")."""
    item: ClassVar[dict[str, Any]]
    """The JSON schema of one setting."""
    setting: ClassVar[str]
    """A setting's name in tables, and its wildcard in the workflow's paths ("dtype")."""
    pattern: ClassVar[str]
    """A setting as its paths write it (`ips.baselines.path_setting`): a regular expression,
    the workflow's wildcard constraint."""
    flag: ClassVar[str]
    """The `ips score` option that scores it, with its setting as argument."""
    changes: ClassVar[str]
    """What is changed, as a phrase after "the same prompts scored again"."""
    by: ClassVar[str]
    """The values-file attribute naming a run's setting (runs are grouped by it)."""
    differs: ClassVar[str]
    """The values-file attribute that must differ from the values files' own."""
    same: ClassVar[tuple[str, ...]]
    """Values-file attributes that must equal the values files' own."""
    recorded: ClassVar[tuple[str, ...]] = ()
    """Values-file attributes recorded beside each run in the metrics file."""
    priority: ClassVar[int] = 0
    """Its scoring jobs' workflow priority."""
    mark: ClassVar[dict[str, Any]] = {"marker": "P", "ms": 6, "color": "#666666"}
    """Its mark in the nulls figure (matplotlib keywords), one per setting."""
    title: ClassVar[str]
    doc: ClassVar[str]
    measures: ClassVar[str]
    """What it measures, for the README: "what rounding alone gives"."""
    claim: ClassVar[str]
    paper: ClassVar[str]
    """Its claims row and the row's statement."""

    @classmethod
    def properties(cls) -> dict[str, Any]:
        """`listed`, `per_model`, `conditions` and `shards` (the class docstring)."""
        many = {"type": "array", "items": cls.item, "uniqueItems": True}
        return {cls.listed: {**many, "default": [], "description": cls.listed_description},
                "per_model": {"type": "object", "default": {}, "additionalProperties": many,
                              "description": f"A model's own list, instead of {cls.listed} "
                                             "(a control's entry takes its model's)."},
                **_VARIANT_KEYS}

    listed_description: ClassVar[str]
    """The description of the list of settings ([] = none)."""

    @classmethod
    def folder(cls) -> str:
        """Its runs' folder under results/ (`results/{folder}/{setting}/values/…`)."""
        return f"nulls/{cls.kind}"

    @classmethod
    def chosen(cls, settings: list[str], entry: dict) -> list[str]:
        """The settings a model entry is scored again with, of those listed for it: all."""
        return list(settings)

"""Re-scored variants: the same prompts scored again with one thing changed.

A variant answers "how much of IPS is this one choice?". Each kind is one row of `VARIANTS`:
what it changes, which shards and conditions it scores again, and how it is read:

| kind | changes | scored again | read as |
|---|---|---|---|
| `precision` | the forward pass's dtype (`ips score --dtype`) | `precision_null.conditions` of the first `shards` shards | a null: ips(x, v, v') of each game, against the template IPS |
| `mask` | the baseline of every game: another than the model's own (`ips score --baseline`) | `mask_null.conditions` of the first `shards` shards | a null, likewise |
| `twin` | the weights, re-drawn by the class's initialiser (`controls.twins`) | every shard and condition: a model entry of its own | a control: every claim computed on it too (`ips.comparisons.claims.controls`) |
| `baseline` | the baseline of every game: another token, or the absent words deleted (`baselines.others`, `ips score --baseline`) | every condition of the first `shards` shards (0: all) of every model | an axis: metrics, factors, claims and figures of their own under `results/baselines/{setting}/` |

A null is scored as one run per (model, setting) that `ips metrics` reads beside the values
files (`--{kind}-values`, `--{kind}-interactions`, from this table) and checks against them
(`same`, `differs`); the workflow's rules (`score_{kind}`, `fit_{kind}`, writing under
`results/{folder}/{setting}/`), the metrics, tables, README and claims rows of a null are
driven by its row. A control scores everything, so it is a model of its own (`ips.config`
adds it). An axis scores everything again under each setting, and the workflow runs the
whole analysis again under `results/{folder}/{setting}/`. Adding a null is a row here and its
scoring hook (the `ips score` option).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    """One kind of re-scored variant (module docstring)."""

    kind: str
    changes: str
    """What is changed, as a phrase after "the same prompts scored again"."""
    scored_again: str
    """Which shards and conditions, in words."""
    reading: str
    """`null` (ips against the original games, beside the template IPS), `control` or `axis`
    (the whole analysis again under each setting)."""
    section: str
    """The config section that asks for it."""
    settings: str = ""
    """A null's key of that section listing the settings every model is scored with."""
    by: str = ""
    """A null's values-file attribute naming a run's setting (runs are grouped by it)."""
    differs: str = ""
    """The values-file attribute that must differ from the values files' own."""
    same: tuple[str, ...] = ()
    """Values-file attributes that must equal the values files' own."""
    flag: str = ""
    """The `ips score` option that scores it, with its setting as argument."""
    folder: str = ""
    """A null's results folder (`results/{folder}/{setting}/values/…`)."""
    priority: int = 0
    """A null's scoring jobs' workflow priority."""
    pattern: str = ""
    """A setting as its paths write it (`path_setting`; a regular expression, the workflow's
    wildcard constraint)."""
    recorded: tuple[str, ...] = ()
    """Values-file attributes recorded beside each run in the metrics file."""
    title: str = ""
    doc: str = ""
    measures: str = ""
    """What the null measures, for the README: "what rounding alone gives"."""
    setting: str = ""
    """The name of a run's setting in tables ("dtype", "mask")."""
    claim: str = ""
    paper: str = ""
    """A null's claims row and its statement."""


#: a baseline's setting in a path: any the registry parses (`ips.baselines`), ":" as "-"
_BASELINE_PATH = r"[A-Za-z0-9][A-Za-z0-9._-]*"

VARIANTS: dict[str, Variant] = {v.kind: v for v in (
    Variant("precision", "in another precision", "the conditions of precision_null of its "
            "first shards", "null", "precision_null", "dtypes", by="dtype", differs="dtype",
            same=("model", "dataset", "target"), flag="--dtype", folder="precision",
            pattern=r"b?float[0-9]+",  # a dtype (ips.config.DTYPES checks which)
            title="Precision null", doc="docs/method.md#precision",
            measures="what rounding alone gives", setting="dtype",
            claim="template_above_precision_null",
            paper="(not in the paper; the paper assumes it) the template IPS exceeds the IPS "
                  "that rounding alone gives (the precision null: the same prompts in another "
                  "precision)"),
    Variant("mask", "with another mask token (the baseline of every game)", "the conditions "
            "of mask_null of its first shards", "null", "mask_null", "masks",
            by="mask_source", differs="mask_token_id",
            same=("model", "dataset", "target", "dtype"), flag="--baseline", folder="masks",
            # `ips score --baseline` checks it against the tokenizer before the weights
            # load: first, a baseline a tokenizer lacks stops the run before the main scoring
            priority=50,
            pattern=_BASELINE_PATH,
            recorded=("mask_token",), title="Mask null", doc="docs/method.md#mask-null",
            measures="what the choice of baseline alone gives", setting="mask",
            claim="template_above_mask_null",
            paper="(not in the paper, which calls its baseline clean and consistent) the "
                  "template IPS exceeds the IPS between two baselines of the same prompts (the "
                  "mask null; where it does not, which interactions are salient depends on the "
                  "baseline more than on the template, which does not make the template IPS "
                  "noise)"),
    Variant("twin", "with the weights re-drawn by the class's own initialiser", "every shard "
            "and condition, as a model entry of its own", "control", "controls"),
    Variant("baseline", "with another baseline (another token, or the absent words "
            "deleted)", "every condition of the first shards of every model", "axis",
            "baselines", "others", flag="--baseline", folder="baselines", priority=50,
            pattern=_BASELINE_PATH, setting="baseline"),
)}

NULLS: tuple[Variant, ...] = tuple(v for v in VARIANTS.values() if v.reading == "null")
"""The variants read as nulls, in table order."""


def path_setting(setting: str) -> str:
    """A setting as a path component: "word:the" → "word-the" (`Variant.pattern`); the
    workflow reads a path's setting back from the configured ones."""
    return setting.replace(":", "-", 1)

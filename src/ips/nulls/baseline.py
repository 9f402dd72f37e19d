"""The baseline null: the same prompts scored again under another baseline
(`nulls.baseline`, docs/method.md#baseline-null)."""

from __future__ import annotations

from ips.baselines import PATH_PATTERN
from ips.nulls.base import Variant


class BaselineNull(Variant):
    """Each game against the same game under another baseline: what the choice of baseline
    alone gives."""

    kind = "baseline"
    description = ("The baseline null (docs/method.md#baseline-null): chosen conditions of the "
                   "first shards scored again under another baseline (what an absent word "
                   "becomes) and fitted alike; `ips metrics` scores each game's two baselines "
                   "as a template pair. Costs forward passes.")
    listed = "others"
    listed_description = ("Other baselines of every model ([] = none), settings as for "
                          "`baseline` (docs/method.md#baselines). Each must differ from the "
                          "model's own; `ips score --baseline` checks it against the "
                          "tokenizer.")
    item = {"$ref": "#/$defs/baseline"}
    setting = "baseline"
    pattern = PATH_PATTERN
    flag = "--baseline"
    changes = "under another baseline"
    by, differs = "mask_source", "mask_token_id"
    same = ("model", "dataset", "target", "dtype")
    recorded = ("mask_token",)
    # `ips score --baseline` checks it against the tokenizer before the weights load: first,
    # a baseline a tokenizer lacks stops the run before the main scoring
    priority = 50
    mark = {"marker": "X", "ms": 6, "color": "#7570b3"}
    title = "Baseline null"
    doc = "docs/method.md#baseline-null"
    measures = "what the choice of baseline alone gives"
    claim = "template_above_baseline_null"
    paper = ("(not in the paper, which calls its baseline clean and consistent) the template "
             "IPS exceeds the IPS between two baselines of the same prompts (the baseline "
             "null; where it does not, which interactions are salient depends on the baseline "
             "more than on the template, which does not make the template IPS noise)")

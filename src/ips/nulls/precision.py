"""The precision null: the same prompts scored again in a second precision
(`nulls.precision`, docs/method.md#precision)."""

from __future__ import annotations

from ips.nulls.base import Variant


class Precision(Variant):
    """Each game against the same game in another dtype: what rounding alone gives."""

    kind = "precision"
    description = ("The precision null (docs/method.md#precision): chosen conditions of the "
                   "first shards scored again in a second precision and fitted alike; `ips "
                   "metrics` scores each game's two precisions as a template pair. Costs "
                   "forward passes.")
    listed = "dtypes"
    listed_description = ("Second precisions of every model ([] = none; a model's own dtype "
                          "is left out, so float32 measures the null of a model run in half "
                          "precision).")
    item = {"$ref": "#/$defs/dtype"}
    setting = "dtype"
    pattern = r"b?float[0-9]+"  # a dtype (the schema's $defs/dtype checks which)
    flag = "--dtype"
    changes = "in another precision"
    by = differs = "dtype"
    same = ("model", "dataset", "target")
    mark = {"marker": "*", "ms": 7, "color": "#d95f02"}
    title = "Precision null"
    doc = "docs/method.md#precision"
    measures = "what rounding alone gives"
    claim = "template_above_precision_null"
    paper = ("(not in the paper; the paper assumes it) the template IPS exceeds the IPS that "
             "rounding alone gives (the precision null: the same prompts in another precision)")

    @classmethod
    def chosen(cls, settings: list[str], entry: dict) -> list[str]:
        """All but the model's own dtype."""
        return [d for d in settings if d != entry["dtype"]]

"""Untrained twins: each listed model again, its weights drawn by its class's initialiser.

Settings (`controls`): `twins`, the configured models that get twins, `draws`, how many each
(independent weight draws), and `seed`. Draw k of model M's twin is the entry `M-twin`
(k = 1) or `M-twin-k` (`twin_name`): M's entry with `source: {redraw: M, seed: s}` (`twin_seed`),
built from M's prepared directory by `ips.models.redraw`. Every number and
claim is computed on it as on M, so a claim that it earns too is not a finding about trained
models (`ips.comparisons.claims.controls`).
"""

from __future__ import annotations

import copy
import zlib

from ips.controls.base import Control
from ips.errors import ConfigError


def twin_name(model: str, draw: int = 1) -> str:
    """The name of draw `draw` of the untrained twin of `model` under models."""
    return f"{model}-twin" if draw == 1 else f"{model}-twin-{draw}"


def twin_seed(seed: int, model: str, draw: int = 1) -> int:
    """The seed of the weights of draw `draw` of `model`'s twin: `controls.seed` plus the
    CRC-32 of the model's name in UTF-8 plus draw − 1, fixed across runs and machines (unlike
    `hash`) and different for each model, so that the twins of two models with one config (a
    base model and its chat version) are two draws, not one."""
    return seed + zlib.crc32(model.encode("utf-8")) + draw - 1


class UntrainedTwins(Control):
    """`M-twin`, `M-twin-2`, … for each model M of `controls.twins` (module docstring)."""

    kind = "twins"
    noun = "the untrained twin"
    settings = {
        "twins": {
            "description": "Configured models (names under models, not twins themselves) that "
                           "each get an untrained twin `<name>-twin`; [] = none.",
            "type": "array", "items": {"$ref": "#/$defs/text"}, "uniqueItems": True,
            "default": []},
        "draws": {
            "description": "Twins of each listed model, each its weights drawn from its own "
                           "seed: `<name>-twin`, `<name>-twin-2`, …. With 2 or more a verdict "
                           "is read against the spread between draws, not one draw "
                           "(docs/method.md#controls-as-a-distribution).",
            "type": "integer", "minimum": 1, "default": 1},
        "seed": {
            "description": "Seed of the twins' weights: draw k of M's twin draws them after "
                           "torch.manual_seed(seed + CRC-32 of M's name in UTF-8 + k − 1) "
                           "(ips.controls.twins.twin_seed), so twins of models with the same "
                           "config (a base model and its chat version) differ.",
            "type": "integer", "minimum": 0, "default": 0},
    }

    @classmethod
    def expand(cls, controls: dict, models: dict, source: str) -> list[str]:
        """Add the entries `twin_name(M, k)` of each listed M, k = 1 … draws: M's entry with
        `source: {redraw: M, seed: twin_seed(seed, M, k)}`; a twin added before is replaced by
        the same entry. A
        listed name that is no configured model or is a control's entry, and a model of the
        twin's name that is not M's twin, are errors."""
        added = []
        for i, name in enumerate(controls["twins"]):
            field = f"{source}: controls.twins.{i}"
            entry = models.get(name)
            if entry is not None and entry.get("control"):
                raise ConfigError(f"{field}: {name!r} is the control of "
                                  f"{entry['control']['of']!r}; a twin of a control is not "
                                  f"drawn, list {entry['control']['of']!r} alone")
            if entry is None:
                known = ", ".join(m for m, e in models.items() if not e.get("control"))
                raise ConfigError(f"{field}: {name!r} is not under models (configured: "
                                  f"{known or 'none'})")
            for k in range(1, controls["draws"] + 1):
                twin = twin_name(name, k)
                if twin in models and cls.controls_of(models[twin]) != name:
                    raise ConfigError(f"{source}: models.{twin}: a model of this name is "
                                      f"configured, and controls.twins.{i} adds a twin of "
                                      f"{name!r} under it; rename the model")
                models[twin] = cls.mark({**copy.deepcopy(entry), "weights": "random", "source": {
                    "redraw": name, "seed": twin_seed(controls["seed"], name, k)}}, name, k)
                added.append(twin)
        return added

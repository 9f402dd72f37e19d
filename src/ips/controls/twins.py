"""Untrained twins: each listed model again, its weights drawn by its class's initialiser.

Settings (`controls`): `twins`, the configured models that get a twin, and `seed`. The twin
of model M is the entry `M-twin` (`twin_name`): M's entry with `source: {redraw: M, seed: s}`
(`twin_seed`), built from M's prepared directory by `ips.models.redraw`. Every number and
claim is computed on it as on M, so a claim that it earns too is not a finding about trained
models (`ips.comparisons.claims.controls`).
"""

from __future__ import annotations

import copy
import zlib

from ips.controls.base import Control
from ips.errors import ConfigError


def twin_name(model: str) -> str:
    """The name of the untrained twin of `model` under models."""
    return f"{model}-twin"


def twin_seed(seed: int, model: str) -> int:
    """The seed of the weights of `model`'s twin: `controls.seed` plus the CRC-32 of the
    model's name in UTF-8, fixed across runs and machines (unlike `hash`) and different for
    each model, so that the twins of two models with one config (a base model and its chat
    version) are two draws, not one."""
    return seed + zlib.crc32(model.encode("utf-8"))


class UntrainedTwins(Control):
    """`M-twin` for each model M of `controls.twins` (module docstring)."""

    kind = "twins"
    noun = "the untrained twin"
    settings = {
        "twins": {
            "description": "Configured models (names under models, not twins themselves) that "
                           "each get an untrained twin `<name>-twin`; [] = none.",
            "type": "array", "items": {"$ref": "#/$defs/text"}, "uniqueItems": True,
            "default": []},
        "seed": {
            "description": "Seed of the twins' weights: the twin of M draws them after "
                           "torch.manual_seed(seed + CRC-32 of M's name in UTF-8) "
                           "(ips.controls.twins.twin_seed), so twins of models with the same "
                           "config (a base model and its chat version) differ.",
            "type": "integer", "minimum": 0, "default": 0},
    }

    @classmethod
    def expand(cls, controls: dict, models: dict, source: str) -> list[str]:
        """Add the entry `twin_name(M)` of each listed M: M's entry with `source: {redraw: M,
        seed: twin_seed(seed, M)}`; a twin added before is replaced by the same entry. A
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
            twin = twin_name(name)
            if twin in models and cls.controls_of(models[twin]) != name:
                raise ConfigError(f"{source}: models.{twin}: a model of this name is "
                                  f"configured, and controls.twins.{i} adds the twin of "
                                  f"{name!r} under it; rename the model")
            models[twin] = cls.mark({**copy.deepcopy(entry), "source": {
                "redraw": name, "seed": twin_seed(controls["seed"], name)}}, name)
            added.append(twin)
        return added

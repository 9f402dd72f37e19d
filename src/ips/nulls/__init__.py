"""Nulls: what IPS gives where no template changed, each a section of the config's `nulls`.

Each kind is one module behind the interface of ``base``, and registers itself by being
defined (a plug-in's class too, `ips.plugins`). The config schema's `nulls` section is one
property per kind (`Null.schema`). A *variant* is a null whose games are scored again with
one setting changed; the workflow, `ips metrics`, the claims, figures and README iterate over
`variants()`.

Modules:

* ``base``       `Null` (its section's keys), `Variant` (a setting scored again); the registry
* ``noise``      `Noise`: Gaussian noise on every value, refitted (`nulls.noise`)
* ``precision``  `Precision`: a second dtype (`nulls.precision`)
* ``baseline``   `BaselineNull`: another baseline (`nulls.baseline`)
"""

from __future__ import annotations

from ips.nulls.base import REGISTRY, Null, Variant
from ips.nulls.baseline import BaselineNull
from ips.nulls.noise import Noise
from ips.nulls.precision import Precision

# the built-in kinds in table order (their imports are sorted by name): the noise null, then
# the variants as the paper's doubts come, rounding before the baseline
for _cls in (Noise, Precision, BaselineNull):
    REGISTRY[_cls.kind] = REGISTRY.pop(_cls.kind)

__all__ = ["REGISTRY", "BaselineNull", "Noise", "Null", "Precision", "Variant", "schema",
           "variant", "variants"]


def schema() -> dict:
    """The `nulls` section's properties: one per registered kind."""
    return {kind: cls.schema() for kind, cls in REGISTRY.items()}


def variants() -> tuple[type[Variant], ...]:
    """The registered variants, in table order (the order registered)."""
    return tuple(cls for cls in REGISTRY.values() if issubclass(cls, Variant))


def variant(kind: str) -> type[Variant]:
    """The variant of a kind (`KeyError` for none)."""
    cls = REGISTRY[kind]
    if not issubclass(cls, Variant):
        raise KeyError(kind)
    return cls

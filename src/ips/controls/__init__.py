"""Controls: model entries scored beside the configured models, so that a verdict is read
against what the same analysis gives without training (docs/method.md#controls).

Each kind is one module behind the interface of ``base``, and registers itself by being
defined (a plug-in's class too, `ips.plugins`). The config schema's `controls` section is the
union of their settings, and `ips.config` lets every kind add its entries (`expand`). The
analysis finds an entry's control from its recorded model source (`controls_of`), so a kind
must give its entries a source of their own: the twins' `{twin: M, seed: s}`.

Modules:

* ``base``   `Control`: the keys it reads under `controls`, the entries it adds, which
             model an added entry controls; the registry
* ``twins``  `UntrainedTwins`: each listed model with its weights re-drawn (`M-twin`)
"""

from __future__ import annotations

from ips.controls.base import REGISTRY, Control
from ips.controls.twins import UntrainedTwins
from ips.errors import InputError

__all__ = ["REGISTRY", "Control", "UntrainedTwins", "controlled", "expand", "kind_of", "settings"]


def settings() -> dict:
    """The `controls` section's properties: every registered kind's keys; a key that two
    kinds read is an `InputError` naming both."""
    out, owner = {}, {}
    for cls in REGISTRY.values():
        for key, spec in cls.settings.items():
            if key in owner:
                raise InputError(f"controls.{key} is read by two control kinds, "
                                 f"{owner[key]!r} and {cls.kind!r}; rename one's key")
            out[key], owner[key] = spec, cls.kind
    return out


def expand(controls: dict, models: dict, source: str) -> None:
    """Let every registered kind add its entries to `models` (`Control.expand`)."""
    for cls in REGISTRY.values():
        cls.expand(controls, models, source)


def kind_of(entry: dict) -> type[Control] | None:
    """The kind that added a model entry, None for an entry that no control added."""
    return next((cls for cls in REGISTRY.values() if cls.controls_of(entry) is not None), None)


def controlled(entry: dict) -> str | None:
    """The configured model a model entry controls (`Control.controls_of`), None for one
    that no control added."""
    kind = kind_of(entry)
    return None if kind is None else kind.controls_of(entry)

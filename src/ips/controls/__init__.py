"""Controls: model entries scored beside the configured models, so that a verdict is read
against what the same analysis gives without training (docs/method.md#controls).

Each kind is one module behind the interface of ``base``, and registers itself by being
defined (a plug-in's class too, `ips.plugins`). The config schema's `controls` section is the
union of their settings, and `ips.config` lets every kind add its entries (`expand`), each
recording its kind and the model it controls (`control: {kind, of}`). A model has at most one
control entry.

Modules:

* ``base``   `Control`: the keys it reads under `controls`, the entries it adds, which
             model an added entry controls, which entry a claims row is compared with; the
             registry
* ``twins``  `UntrainedTwins`: each listed model with its weights re-drawn (`M-twin`)
"""

from __future__ import annotations

from collections.abc import Sequence

from ips.controls.base import REGISTRY, Control, Paired
from ips.controls.twins import UntrainedTwins
from ips.errors import ConfigError, InputError

__all__ = ["REGISTRY", "Control", "UntrainedTwins", "controlled", "expand", "kind_of", "pair",
           "settings"]


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
    """Let every registered kind add its entries to `models` (`Control.expand`). An entry
    with a `control` that no kind added now, and a model with two control entries, are
    `ConfigError`s."""
    added = {name: cls for cls in REGISTRY.values()
             for name in cls.expand(controls, models, source)}
    of: dict[str, str] = {}
    for name, entry in models.items():
        control = entry.get("control")
        if control is None:
            continue
        if name not in added:
            raise ConfigError(f"{source}: models.{name}.control: set by the control that adds "
                              f"the entry, not written by hand; configure it under controls "
                              f"(kinds: {', '.join(REGISTRY) or 'none'})")
        if control["of"] in of:
            raise ConfigError(f"{source}: controls: model {control['of']!r} gets two control "
                              f"entries, {of[control['of']]!r} and {name!r}; give each model "
                              f"one control")
        of[control["of"]] = name


def kind_of(entry: dict) -> type[Control] | None:
    """The kind that added a model entry (its `control`), None for an entry that no control
    added or whose kind is not registered."""
    return REGISTRY.get((entry.get("control") or {}).get("kind"))


def controlled(entry: dict) -> str | None:
    """The configured model a model entry controls, None for one that no control added."""
    return (entry.get("control") or {}).get("of")


def pair(model: str, entries: Sequence[Paired]) -> Paired | None:
    """The control entry among `entries` (of one dataset) that a row of the trained `model`
    is compared with, as its kind pairs them (`Control.pair`; a kind that this process has
    not registered, such as a plug-in's read without it, pairs as `Control` does)."""
    for kind in {e.control for e in entries if e.control_of == model}:
        found = (kind or Control).pair(model, [e for e in entries if e.control is kind])
        if found is not None:
            return found
    return None

"""Controls: model entries scored beside the configured models, so that a verdict is read
against what the same analysis gives without training (docs/method.md#controls).

Each kind is one module behind the interface of ``base``, and registers itself by being
defined (a plug-in's class too, `ips.plugins`). The config schema's `controls` section is the
union of their settings, and `ips.config` lets every kind add its entries (`expand`), each
recording its kind, the model it controls and its draw (`control: {kind, of[, draw]}`). A
model's control entries are of one kind, one entry per draw.

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

__all__ = ["REGISTRY", "Control", "UntrainedTwins", "controlled", "draws", "expand", "kind_of",
           "pair", "settings"]


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
    with a `control` that no kind added now, a model controlled by two kinds and two entries
    of one draw are `ConfigError`s."""
    added = {name: cls for cls in REGISTRY.values()
             for name in cls.expand(controls, models, source)}
    of: dict[str, tuple[str, str]] = {}  # model -> (kind, an entry)
    seen: dict[tuple[str, int], str] = {}  # (model, draw) -> entry
    for name, entry in models.items():
        control = entry.get("control")
        if control is None:
            continue
        if name not in added:
            raise ConfigError(f"{source}: models.{name}.control: set by the control that adds "
                              f"the entry, not written by hand; configure it under controls "
                              f"(kinds: {', '.join(REGISTRY) or 'none'})")
        model, draw = control["of"], control.get("draw", 1)
        kind, other = of.setdefault(model, (control["kind"], name))
        if kind != control["kind"]:
            raise ConfigError(f"{source}: controls: model {model!r} gets control entries of "
                              f"two kinds, {other!r} and {name!r}; give each model one "
                              f"control kind")
        if (model, draw) in seen:
            raise ConfigError(f"{source}: controls: model {model!r} gets two entries of draw "
                              f"{draw}, {seen[(model, draw)]!r} and {name!r}; give each draw "
                              f"one entry")
        seen[(model, draw)] = name


def kind_of(entry: dict) -> type[Control] | None:
    """The kind that added a model entry (its `control`), None for an entry that no control
    added or whose kind is not registered."""
    return REGISTRY.get((entry.get("control") or {}).get("kind"))


def controlled(entry: dict) -> str | None:
    """The configured model a model entry controls, None for one that no control added."""
    return (entry.get("control") or {}).get("of")


def pair(model: str, entries: Sequence[Paired]) -> list[Paired]:
    """The control entries among `entries` (of one dataset), one per draw, that a row of the
    trained `model` is compared with, as its kind pairs them (`Control.pair`; a kind that
    this process has not registered, such as a plug-in's read without it, pairs as
    `Control` does); [] for a model without control."""
    for kind in {e.control for e in entries if e.control_of == model}:
        found = (kind or Control).pair(model, [e for e in entries if e.control is kind])
        if found:
            return found
    return []


def draws(entries: Sequence[Paired]) -> dict[int, list[Paired]]:
    """The control entries among `entries` by draw: the k-th draw of every model's control
    (a row across models is computed on each draw's entries, as on the trained models')."""
    out: dict[int, list[Paired]] = {}
    for e in sorted(entries, key=lambda e: e.control_draw):
        if e.control_of:
            out.setdefault(e.control_draw, []).append(e)
    return out

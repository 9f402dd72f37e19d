"""The interface of a control: model entries scored beside the configured models.

A verdict about trained models needs what the same analysis gives without training (the
claims' controls, docs/method.md#controls). A `Control` adds model entries to the config
(`expand`), each marked with its kind, the model it controls and its draw (`mark`: the
entry's `control: {kind, of[, draw]}`, which the scores and metrics record as
`model_control`); each is scored, fitted and analysed as any model is. A kind may add several
draws of a model's control (draw 1, 2, …: its weights drawn again from other seeds); a claims
row of a model is compared with the rows of the draws its kind pairs it with (`pair`), read as
a distribution when there are two or more (`ips.comparisons.claims.controls`). Its settings are keys of the config's `controls`
section (`settings`: their JSON schema, merged into the config schema by `ips.config`). A
subclass that sets `kind` registers itself (`ips.controls`), a plug-in's too (`ips.plugins`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from ips import plugins


class Paired(Protocol):
    """What pairing reads of an analysed entry (`ips.formats.metrics.Entry`)."""

    model: str
    control_of: str | None
    control: type[Control] | None
    control_draw: int


E = TypeVar("E", bound=Paired)

#: every registered control class by kind, in the order registered (`ips.controls`)
REGISTRY: dict[str, type[Control]] = {}


class Control(plugins.Registered, ABC, registry=REGISTRY, what="control"):
    """What a control adds to the config, and what a claims row is compared with (module
    docstring)."""

    kind: ClassVar[str]
    """The registry's name of the class."""
    settings: ClassVar[dict[str, Any]]
    """The keys it reads under `controls`, as JSON-schema properties with their defaults; no
    two kinds read one key."""
    noun: ClassVar[str]
    """What an added entry is, as a claims note names it: "the untrained twin"."""
    @classmethod
    @abstractmethod
    def expand(cls, controls: dict, models: dict, source: str) -> list[str]:
        """Add its entries to `models` (the config's, validated) from the `controls` section
        (defaults filled in), each `mark`ed, and return their names. Idempotent: a config
        validated again gets the same entries. A `ConfigError` names the field
        (`source: controls.<key>...`) where the section or a model entry cannot be."""

    @classmethod
    def mark(cls, entry: dict, of: str, draw: int = 1) -> dict:
        """`entry` as draw `draw` (1, 2, …) of this kind's control of the configured model
        `of`; the first draw's record names no draw (as entries made before draws had)."""
        control = {"kind": cls.kind, "of": of, **({"draw": draw} if draw > 1 else {})}
        return {**entry, "control": control}

    @classmethod
    def controls_of(cls, entry: dict) -> str | None:
        """The configured model an entry of this kind controls, None for any other entry."""
        control = entry.get("control") or {}
        return control.get("of") if control.get("kind") == cls.kind else None

    @classmethod
    def pair(cls, model: str, added: Sequence[E]) -> list[E]:
        """The entries whose rows a row of the trained `model` is compared with, among
        `added` (this kind's entries on the row's dataset): those that control `model`, by
        draw."""
        return sorted((e for e in added if e.control_of == model), key=lambda e: e.control_draw)

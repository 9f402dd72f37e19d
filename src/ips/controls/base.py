"""The interface of a control: model entries scored beside the configured models.

A verdict about trained models needs what the same analysis gives without training (the
claims' controls, docs/method.md#controls). A `Control` adds model entries to the config
(`expand`): each is scored, fitted and analysed as any model is, and records the model it
controls in its source (`controls_of`). Its settings are keys of the config's `controls`
section (`settings`: their JSON schema, merged into the config schema by `ips.config`). A
subclass that sets `kind` registers itself (`ips.controls`), a plug-in's too (`ips.plugins`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ips import plugins

#: every registered control class by kind, in the order registered (`ips.controls`)
REGISTRY: dict[str, type[Control]] = {}


class Control(ABC):
    """What a control adds to the config (module docstring)."""

    kind: ClassVar[str]
    """The registry's name of the class."""
    settings: ClassVar[dict[str, Any]]
    """The keys it reads under `controls`, as JSON-schema properties with their defaults; no
    two kinds read one key."""
    noun: ClassVar[str]
    """What an added entry is, as a claims note names it: "the untrained twin"."""
    random_weights: ClassVar[bool] = False
    """Whether its entries' weights are drawn at random (every table's `weights` column)."""
    origin: ClassVar[str | None] = None
    """The plug-in that defined it (`ips.plugins`), None for the built-in ones."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            plugins.register(REGISTRY, cls, "control")

    @classmethod
    @abstractmethod
    def expand(cls, controls: dict, models: dict, source: str) -> None:
        """Add its entries to `models` (the config's, validated) from the `controls` section
        (defaults filled in). Idempotent: a config validated again gets the same entries. A
        `ConfigError` names the field (`source: controls.<key>...`) where the section or a
        model entry cannot be."""

    @classmethod
    @abstractmethod
    def controls_of(cls, entry: dict) -> str | None:
        """The configured model an entry it added controls, None for any other entry."""

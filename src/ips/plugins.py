"""Plug-ins: a user's own baselines (`ips.baselines`) and controls (`ips.controls`), as one
Python file or module each.

A plug-in is imported once; importing it defines its classes, and a subclass of a plug-in
interface registers itself by being defined (`register`: `ips.baselines.Baseline`,
`ips.controls.Control`), so a plug-in needs no edit of `ips`. Where a plug-in comes from:

- the config's `plugins:` list (`ips.config.validate` imports them before it checks the rest,
  so a plug-in's settings validate like the built-in ones), and `ips --plugin` for a command
  (the workflow passes it to the jobs whose setting a plug-in defines);
- the entry point group `ips.plugins` of any installed distribution, imported on first use.

Each item is a module name (`my_lab.baselines`) or the path of a `.py` file, relative to the
working directory. Standard library only.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import sys
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from ips.errors import InputError

#: the entry point group whose modules are imported as plug-ins
ENTRY_POINTS = "ips.plugins"

#: what was loaded under which name (a path as given); the registries record the origin
_LOADED: dict[str, ModuleType] = {}
#: the plug-ins being imported now, innermost last: the origin of the classes defined
_LOADING: list[str] = []


def load(items: list[str] | tuple[str, ...] = (), field: str = "plugins") -> list[ModuleType]:
    """Import each plug-in of `items` (module names or `.py` paths) and the entry points'
    once; an `InputError` naming `field` and the item when one cannot be imported."""
    _entry_points()
    return [_load(item, f"{field}.{i}") for i, item in enumerate(items)]


def _load(item: str, field: str) -> ModuleType:
    if item in _LOADED:
        return _LOADED[item]
    _LOADING.append(item)
    try:
        module = _import_file(item, field) if item.endswith(".py") else _import_module(item, field)
    finally:
        _LOADING.pop()
    _LOADED[item] = module
    return module


def _import_module(name: str, field: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        raise InputError(f"{field}: cannot import plug-in {name!r} ({e}); give a module on "
                         "the Python path or the path of a .py file") from None


def _import_file(path: str, field: str) -> ModuleType:
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{field}: plug-in file {path} does not exist; give the path of a .py "
                         "file (relative to the working directory) or a module name")
    # a name of its own per file: two plug-ins named alike in two folders do not collide
    digest = hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:12]
    name = f"ips_plugin_{file.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module


@functools.cache
def _entry_points() -> None:
    for point in entry_points(group=ENTRY_POINTS):
        _load(point.module, f"entry point {point.name}")


class Registered:
    """The base of a plug-in interface (`Baseline`, `Null`, `Control`): a subclass that sets
    `kind` registers itself by being defined (`register`). The interface names its registry
    and what its classes are: `class Null(Registered, registry=REGISTRY, what="null")`."""

    kind: ClassVar[str]
    """The registry's name of the class."""
    origin: ClassVar[str | None] = None
    """The plug-in that defined it, None for the built-in ones."""
    _registry: ClassVar[dict[str, type]]
    _what: ClassVar[str]

    def __init_subclass__(cls, registry: dict[str, type] | None = None, what: str = "",
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if registry is not None:  # the interface itself
            cls._registry, cls._what = registry, what
        elif "kind" in cls.__dict__:  # else an intermediate base (Replacement, Variant)
            register(cls._registry, cls, cls._what)


def register(registry: dict[str, type], cls: type, what: str) -> None:
    """Put `cls` into `registry` under its `kind` and record its `origin`: the plug-in whose
    import is running (None: `ips` itself). Another class of the same kind is an
    `InputError` naming both (`what`: "baseline", "control")."""
    other = registry.get(cls.kind)
    if other is not None and other.__qualname__ != cls.__qualname__:
        raise InputError(f"{what} kind {cls.kind!r} is defined twice: by {_where(other)} and "
                         f"by {_where(cls)}; rename one")
    cls.origin = _LOADING[-1] if _LOADING else None
    registry[cls.kind] = cls


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"

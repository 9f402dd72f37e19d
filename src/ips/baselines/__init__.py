"""Baselines: what "variable i is absent" means when a masked prompt x_S is scored.

The paper replaces every token of an absent word by the model's mask token (Appendix E.4);
other choices are settings such as `pad`, `word:the` or `delete`. Each kind is one module
behind the interface of ``base``, and registers itself by being defined.

Modules:

* ``base``      `Baseline` (its settings, the plain rows, the trie's segments),
                `Replacement` (a token in place of each absent token), `Segment`, the registry
* ``token``     `Token`: replacement by one token (a model's own mask token, unk, pad, eos,
                bos, word:W, id:N)
* ``deletion``  `Deletion`: absent tokens left out (`delete`)

A user's baseline is a file of its own that defines a subclass, named in the config's
`plugins:` (`ips.plugins`; docs/api.md#writing-a-baseline). Everything that names the
settings (the config schema's pattern, `ips score --baseline` and its help, their errors)
reads them from here. How an absent word maps to tokens (`masking`: each token, or one mask
token per word) is another choice, made beside the baseline (`ips.scoring.engine.Engine`).
"""

from __future__ import annotations

import re
from typing import Any

from ips.baselines.base import NO_TOKEN_ID, REGISTRY, Baseline, Replacement, Segment
from ips.baselines.deletion import Deletion
from ips.baselines.token import Token
from ips.errors import ModelError

__all__ = ["NO_TOKEN_ID", "PATH_PATTERN", "Baseline", "Deletion", "Replacement", "Segment", "Token",
           "as_baseline", "describe", "kind_of", "parse", "path_setting", "pattern", "resolve",
           "syntax"]


#: a setting as a path component (`path_setting`): a regular expression, the workflow's
#: wildcard constraint of every setting that names a baseline
PATH_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def path_setting(setting: str) -> str:
    """A setting as a path component: "word:the" → "word-the"; the workflow reads a path's
    setting back from the configured ones."""
    return setting.replace(":", "-", 1)


def as_baseline(baseline: Baseline | int) -> Baseline:
    """`baseline` itself, or a token id as replacement by that token (`Token`): what the
    scorers take (`ips.scoring.engine.Engine`)."""
    if isinstance(baseline, Baseline):
        return baseline
    return Token(int(baseline), source=f"id:{int(baseline)}")


def pattern() -> str:
    """A regular expression of every registered setting (the config schema's `baseline`)."""
    return "|".join(f"(?:{cls.settings})" for cls in REGISTRY.values())


def syntax() -> str:
    """The settings as a user writes them: "unk, pad, ..., delete"."""
    return ", ".join(cls.syntax for cls in REGISTRY.values())


def describe() -> str:
    """Each kind's settings and what absence means under it, for help texts."""
    return "; ".join(f"{cls.syntax}: {cls.summary}" for cls in REGISTRY.values())


def kind_of(setting: str) -> type[Baseline] | None:
    """The class that parses `setting`, None if none does."""
    return next((cls for cls in REGISTRY.values() if re.fullmatch(cls.settings, setting)), None)


def parse(setting: str, tokenizer: Any, *, model: str = "model") -> Baseline:
    """The baseline `setting` for `tokenizer`; a `ModelError` names the model and what to
    choose instead when no kind parses it or the tokenizer cannot give it."""
    cls = kind_of(setting)
    if cls is None:
        raise ModelError(f"model {model}: baseline {setting!r} is none of {syntax()}; choose "
                         "one (docs/method.md#baselines), or name its plug-in under plugins")
    return cls.resolve(setting, tokenizer, model)


def resolve(setting: str, tokenizer: Any, own: Baseline, *, model: str = "model") -> Baseline:
    """`parse` a baseline other than the model's `own`: one that gives the same inputs is a
    `ModelError` too (no other baseline at all)."""
    baseline = parse(setting, tokenizer, model=model)
    if baseline.same(own):
        what = f"{own.token!r} (id {own.token_id})" if own.token_id is not None else own.source
        raise ModelError(f"model {model}: baseline {setting!r} is {what}, the model's own "
                         "baseline; choose another (docs/method.md#baselines)")
    return baseline

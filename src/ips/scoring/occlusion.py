"""Occlusion scores of a reference model, for the `occlusion` reduction of variables."""

from __future__ import annotations

import logging

import numpy as np

from ips.config import TARGETS
from ips.errors import InputError
from ips.scoring.engine import (
    BATCH_TOKENS,
    Answers,
    Engine,
    encode_prompt,
    model_engine,
    resolve_target,
)
from ips.scoring.log_odds import naming_model

log = logging.getLogger(__name__)


def reference_occlusion(settings: dict, config: dict | None, reference_entry: dict | None, *,
                        cache_dir, device: str | None, threads: int | None,
                        batch_tokens: int, masking: str = "tokens") -> Occlusion | None:
    """The reference model's `Occlusion` under `reduce: occlusion`, else None. Its entry is
    the config's (when a config is given, validated), else `reference_entry`.

    The model is loaded when the first item needs ranking, not here.
    """
    variables = settings.get("variables", {})
    if variables.get("reduce") != "occlusion":
        return None
    from ips.models.entries import ModelSpec
    from ips.models.loading import load_model

    name = variables.get("reference_model")
    if not name:
        raise InputError("settings: variables.reference_model: required when variables.reduce "
                         "is occlusion")
    if config is not None:  # validated: the name is under models
        entry = config["models"][name]
    elif reference_entry is not None:  # `ips score` has none
        entry = reference_entry
    else:
        raise InputError(f"variables.reduce is occlusion: give the entry of {name!r} "
                         "(--reference-entry JSON)")
    spec = ModelSpec.from_config(name, entry)

    def load():
        return load_model(spec, cache_dir=cache_dir, device=device, threads=threads)

    return Occlusion(name, load, batch_tokens, masking)


class Occlusion:
    """Occlusion scores of one reference model, for the ``occlusion`` reduction of variables.

    For a prompt whose n units are its variables, unit i scores

        o_i = |v(x_N) − v(x_{N∖{i}})|,

    v, the masking, the mask token and the target y* exactly as `score_sample` computes them
    (the plain engine), from n + 1 forward passes (one more for `target: greedy`, whose y* is
    the unmasked greedy token). The model is loaded by `load()` on the first call, so that a
    dataset without a sample over n_max never loads it.
    """

    def __init__(self, model: str, load, batch_tokens: int = BATCH_TOKENS,
                 masking: str = "tokens"):
        self.model = model
        self._load = load
        self.batch_tokens = batch_tokens
        self.masking = masking
        self._engine: Engine | None = None
        self._answers: Answers | None = None

    def __call__(self, item, prompt, condition: str, target: str | None = None) -> np.ndarray:
        """o_i of every variable of `prompt` (a rendering of `item` under `condition`)."""
        if self._engine is None:
            loaded = self._load()
            log.info("occlusion ranking with %s (mask token %r)", self.model, loaded.mask_token)
            self._engine = model_engine(loaded, self.batch_tokens, masking=self.masking)
            self._answers = Answers(loaded.tokenizer)
        engine, answers = self._engine, self._answers
        target = target or TARGETS[item.kind][0]
        ids, owners, spaced, letters, options = encode_prompt(answers, item, prompt)
        greedy = engine.unmasked(ids).greedy if target == "greedy" else None
        y, _ = resolve_target(answers, item, condition, prompt.cue, target, letters, options, greedy)
        with naming_model(self.model):
            v = engine.occlusion(ids, owners, len(prompt.spans), y, spaced)
        return np.abs(v[0] - v[1:])

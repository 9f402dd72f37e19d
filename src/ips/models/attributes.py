"""A model's attributes (`ips.config.MODEL_ATTRIBUTES`) as its scores record them: the
entry's where it gives them, else read from the loaded checkpoint.

* ``params``: the distinct parameters of the model as loaded (tied weights once; a
  converted GGUF holds what it holds, an untied output head included);
* ``architecture``: ``moe`` where the checkpoint's config has more than one expert
  (``num_local_experts``, ``num_experts``), else ``dense``;
* ``active_params``: params, less, for an MoE, the share (E − k)/E of the routed experts'
  parameters (those under an ``experts`` module; shared experts count as active), E the
  experts and k those a token uses (``num_experts_per_tok``).

family, series and type default to ``unknown`` in the entry (`ips.config.UNKNOWN`); the
factor analyses leave such a model out (`ips.comparisons.factors`).
"""

from __future__ import annotations

from typing import Any

#: the config keys that count a model's routed experts, and those a token uses
_EXPERTS = ("num_local_experts", "num_experts")
_PER_TOKEN = ("num_experts_per_tok", "moe_topk", "top_k")


def checkpoint_attributes(model: Any) -> dict[str, Any]:
    """architecture, params and active_params of a loaded transformers model (module
    docstring)."""
    config = getattr(model, "config", None)
    experts = next((int(getattr(config, k)) for k in _EXPERTS
                    if isinstance(getattr(config, k, None), int)), 0)
    per_token = next((int(getattr(config, k)) for k in _PER_TOKEN
                      if isinstance(getattr(config, k, None), int)), experts)
    params = routed = 0
    for name, p in model.named_parameters():  # named_parameters yields a tied weight once
        params += p.numel()
        if ".experts." in f".{name}":
            routed += p.numel()
    moe = experts > 1 and routed > 0
    active = params - round(routed * (experts - per_token) / experts) if moe else params
    return {"architecture": "moe" if moe else "dense", "params": int(params),
            "active_params": int(active)}


def recorded_attributes(spec: Any, model: Any) -> dict[str, Any]:
    """The attributes a values file records: the entry's (`spec`), the checkpoint's where
    the entry gives none (`checkpoint_attributes`, counted only then)."""
    from ips.config import MODEL_ATTRIBUTES

    given = {k: getattr(spec, k) for k in MODEL_ATTRIBUTES}
    if all(given[k] is not None for k in ("architecture", "params", "active_params")):
        return given
    read = checkpoint_attributes(model)  # family, series and type are never None
    return {k: read[k] if given[k] is None else given[k] for k in MODEL_ATTRIBUTES}

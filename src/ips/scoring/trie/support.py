"""Which models the trie can evaluate: static checks before use (`unsupported_reason`) and
the error its first forward raises otherwise (`TrieUnsupported`)."""

from __future__ import annotations

# layer kinds whose attention is causal softmax attention over all (or a window of) earlier tokens
_LAYER_TYPES = {"full_attention", "sliding_attention"}
# attention arguments that change the computation in ways this kernel does not reproduce
UNSUPPORTED_KWARGS = ("s_aux", "sinks", "position_bias", "attention_chunk_size")


class TrieUnsupported(Exception):
    """The model's attention cannot be evaluated as a trie (the message says why)."""


def unsupported_reason(model) -> str | None:
    """Why `model` cannot be evaluated as a trie, or None if nothing speaks against it.

    Static checks only; a model that passes them is still checked on its first forward
    (every layer must call the registered attention) and against the plain scorer.
    """
    config = getattr(model, "config", None)
    if config is None or not hasattr(model, "get_decoder"):
        return f"{type(model).__name__} is not a transformers model"
    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder models are not supported"
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if getattr(text, "use_bidirectional_attention", False) or not getattr(text, "is_causal", True):
        return "the model's attention is bidirectional"
    kinds = set(getattr(text, "layer_types", None) or ["full_attention"])
    if not kinds <= _LAYER_TYPES:
        return f"layer types {sorted(kinds - _LAYER_TYPES)} are not softmax attention"
    for name in ("attention_chunk_size", "sliding_window_pattern_chunked"):
        if getattr(text, name, None):
            return f"chunked attention ({name}) is not supported"
    can_set = getattr(type(model), "_can_set_attn_implementation", None)
    if can_set is None or not can_set():
        return "the model does not route its attention through transformers' AttentionInterface"
    head = getattr(model, "lm_head", None)
    if head is None or model.get_output_embeddings() is not head:
        return "the model has no plain `lm_head` output projection"
    return None

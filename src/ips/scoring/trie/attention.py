"""The attention function the trie registers with transformers' `AttentionInterface` as
"ips_trie": it checks what the model asks of it and hands the computation to the forward's
`KeyValueTree`."""

from __future__ import annotations

from ips.scoring.trie.support import UNSUPPORTED_KWARGS, TrieUnsupported

ATTENTION = "ips_trie"


def _trie_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                    sliding_window=None, softcap=None, **kwargs):
    """The attention function registered as "ips_trie" (see transformers' AttentionInterface)."""
    tree = kwargs.get("ips_trie")
    if tree is None:
        raise TrieUnsupported("the trie attention was called outside a trie forward")
    if attention_mask is not None:
        raise TrieUnsupported("the model builds its own attention mask")
    if kwargs.get("is_causal", getattr(module, "is_causal", True)) is False:
        raise TrieUnsupported("the model's attention is not causal")
    for name in UNSUPPORTED_KWARGS:
        if kwargs.get(name) is not None:
            raise TrieUnsupported(f"the model's attention uses {name!r}")
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    return tree.attend(module, query, key, value, scaling, sliding_window, softcap)


def register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, _trie_attention)

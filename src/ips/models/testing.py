"""Tiny random causal LMs with real fast tokenizers, saved as transformers directories.

Shared by the model-loading and scoring tests and benchmarks/bench_precision.py (neither
imports the other, so they live in the package). Each builder writes a `from_pretrained`-able
directory (config.json, model.safetensors, tokenizer.json ...) in seconds:

- `make_tiny_llama`: a Llama with a byte-level BPE tokenizer in the style of SmolLM2 (any text
  tokenizes; offsets of a word include its leading space; no BOS);
- `make_tiny_gemma`: a Gemma 3 text model with a Gemma-style tokenizer (spaces become "▁",
  BOS added, `<pad>`/`<eos>`/`<bos>`/`<unk>` at ids 0-3 as in Gemma 3).

The tokenizers are trained as `ips.models.random_weights` trains them. The BPE vocabularies are
small (a few hundred tokens), so common words are one token and rarer words split into several.
Weights are random (seeded), with a larger initialiser range than usual so that the output moves
visibly when input tokens change.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.models.random_weights import PRINTABLE, byte_level_tokenizer, train_bpe


def make_tiny_llama(directory: str | Path, *, unk: bool = True, pad: bool = True) -> Path:
    """Save a tiny Llama + byte-level BPE tokenizer in `directory` and return it.

    `unk` / `pad` choose whether the tokenizer has an unk (`<unk>`) and a pad (`<pad>`) token,
    to exercise the mask-token fallbacks of `ips.models.loading.resolve_mask_token`.
    """
    directory = Path(directory)
    tokenizer = byte_level_tokenizer(unk=unk, pad=pad)
    tokenizer.save_pretrained(directory)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


def make_tiny_gemma(directory: str | Path) -> Path:
    """Save a tiny Gemma 3 text model + Gemma-style BPE tokenizer in `directory`; return it."""
    directory = Path(directory)
    special = ["<pad>", "<eos>", "<bos>", "<unk>"]  # ids 0-3, as in Gemma 3
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    # each word keeps its leading "▁", so its offsets include the space (as in Gemma 3)
    # punctuation is split off, so that " A." is " A" + "." as in Gemma 3
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split("▁", behavior="merged_with_next"), pre_tokenizers.Punctuation()]
    )
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A <bos> $B", special_tokens=[("<bos>", 2)]
    )
    train_bpe(tok, special, [*PRINTABLE, "▁", "\n"])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        unk_token="<unk>",
    )
    tokenizer.save_pretrained(directory)
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=8,
        query_pre_attn_scalar=8,
        sliding_window=16,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=1024,
        initializer_range=0.2,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
    )
    torch.manual_seed(0)
    Gemma3ForCausalLM(config).save_pretrained(directory)
    return directory


TINY_ATTRS = {"family": "tiny", "series": "tiny", "type": "base", "architecture": "dense",
              "params": 1}


def load_tiny(path, name="tiny"):
    """A loaded tiny model (ips.models.loading.load_model) from a directory of a builder above."""
    return load_model(ModelSpec.from_config(name, {"source": {"path": str(path)}, **TINY_ATTRS}))

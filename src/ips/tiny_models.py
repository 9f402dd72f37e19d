"""Tiny random causal LMs with real fast tokenizers, saved as transformers directories.

Shared by the model-loading and scoring tests and benchmarks/bench_precision.py (neither
imports the other, so they live in the package). Each builder writes a `from_pretrained`-able
directory (config.json, model.safetensors, tokenizer.json ...) in seconds:

- `make_tiny_llama`: a Llama with a byte-level BPE tokenizer in the style of SmolLM2 (any text
  tokenizes; offsets of a word include its leading space; no BOS);
- `make_tiny_gemma`: a Gemma 3 text model with a Gemma-style tokenizer (spaces become "▁",
  BOS added, `<pad>`/`<eos>`/`<bos>`/`<unk>` at ids 0-3 as in Gemma 3).

The BPE vocabularies are small (a few hundred tokens), so common words are one token and
rarer words split into several. Weights are random (seeded), with a larger initialiser range
than usual so that the output moves visibly when input tokens change.
"""

from __future__ import annotations

import string
from pathlib import Path

import torch
from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from ips.models import ModelSpec, load_model

ENGLISH = """\
Question: Which of these is a source of light? Answers: A. the Sun B. the Moon C. a mirror
D. a rock. Answer: A. Question: What do plants need to make their own food? Answers: water,
sunlight and carbon dioxide from the air. Answer: B. The water cycle moves water from oceans
to clouds, then to rain and rivers, and back to the oceans again. Animals that eat only
plants are called herbivores; animals that eat other animals are carnivores. A magnet pulls
on iron and steel but not on wood, glass or plastic. Ice melts when it is warmed and water
freezes when it is cooled below zero degrees Celsius. The Earth turns once every day and
goes around the Sun once every year. Seasons change because the Earth is tilted. Sound
travels as a wave through air, water and solid objects, and it moves faster in water than
in air. Which tool would a scientist use to measure the mass of a small stone? A balance
is the best tool, while a ruler measures length and a thermometer measures temperature.
Students observed that a ball rolled farther on a smooth floor than on a carpet, because
friction is smaller on the smooth surface. Fossils tell us about plants and animals that
lived long ago. Many birds fly south in the winter to find food and warmer weather. The
heart pumps blood through the body, and the lungs take in oxygen when we breathe. Rocks are
broken into smaller pieces by wind, water and ice; this process is called weathering. A
student wants to know whether seeds grow faster in the light or in the dark. She plants
ten seeds in each of two pots, waters them every morning, and writes down the height of
each plant after one week. Electricity flows through copper wire but not through rubber.
The history of the world includes many kings, queens, wars, inventions and discoveries.
Write a short summary of the following text. Give three reasons why people should exercise
every day. Explain how a bill becomes a law in the United States. Classify each of the
following as a fruit or a vegetable: apple, carrot, banana, potato, orange, onion. What is
the capital city of France? Paris is the capital and the largest city of France. Who wrote
the play Romeo and Juliet? It was written by William Shakespeare. Numbers such as 1, 2, 3,
10, 100 and 2024 appear in questions about time, money, distance and speed.
"""
# the answer letters of MCQ templates, often enough that " A" ... " D" become single tokens
_TRAINING_TEXT = ENGLISH.splitlines() + [f"Answer: {c}" for c in "ABCD"] * 8
_PRINTABLE = list(string.ascii_letters + string.digits + string.punctuation)


def _train(tok: Tokenizer, special: list[str], alphabet: list[str]) -> None:
    """Train a 512-token BPE vocabulary on the fixed training text."""
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=special,
                                  initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(_TRAINING_TEXT, trainer)


def make_tiny_llama(directory: str | Path, *, unk: bool = True, pad: bool = True) -> Path:
    """Save a tiny Llama + byte-level BPE tokenizer in `directory` and return it.

    `unk` / `pad` choose whether the tokenizer has an unk (`<unk>`) and a pad (`<pad>`) token,
    to exercise the mask-token fallbacks of `ips.models.resolve_mask_token`.
    """
    directory = Path(directory)
    special = ["<s>", "</s>"] + ["<unk>"] * unk + ["<pad>"] * pad
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    _train(tok, special, pre_tokenizers.ByteLevel.alphabet())
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>" if unk else None,
        pad_token="<pad>" if pad else None,
    )
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
    _train(tok, special, [*_PRINTABLE, "▁", "\n"])
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
    """A loaded tiny model (ips.models.load_model) from a directory of a builder above."""
    return load_model(ModelSpec.from_config(name, {"source": {"path": str(path)}, **TINY_ATTRS}))

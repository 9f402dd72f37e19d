"""Tiny random-weight models of the paper's architecture classes (`source: {random: <class>}`).

A model entry with `source: {random: mixtral, seed: 7}` is built by `ips prepare-model` into
the model cache (`ips.models.cache`): a transformers directory holding a two-layer model of
that class (hidden size 32, MoE classes with 4 experts, 2 active per token) with weights drawn
from `seed`, and a 512-token byte-level BPE tokenizer trained on a fixed English text, with
`<unk>` and `<pad>`, so the mask token is `<unk>` (paper Appendix E.4's first choice). The
same seed and versions of torch and transformers give the same weights, bit for bit.

They let the workflow run the paper's study at its own shape (workflow/configs/miniature.yaml,
docs/miniature.md) through every stage, loading and scoring each architecture class the
study names, in minutes. Their numbers come from random weights and measure nothing.

Classes are transformers' `model_type` names (`CLASSES`). InternLM2 and LLaMA-MoE ship their
code on the Hub (remote code), so they have no class here; the miniature gives them the
nearest native class (Llama and Mixtral).
"""

from __future__ import annotations

import string
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from ips.models.cache import build_once

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
"""The text the tokenizers are trained on: words of the bundled datasets' kind."""

# the answer letters of MCQ templates, often enough that " A" ... " D" become single tokens
_TRAINING_TEXT = ENGLISH.splitlines() + [f"Answer: {c}" for c in "ABCD"] * 8
PRINTABLE = list(string.ascii_letters + string.digits + string.punctuation)
"""The initial alphabet of a tokenizer that does not work on bytes."""

_EXPERTS = {"experts": 4, "active": 2}
#: the config of each class beyond the shared shape: the MoE classes' expert layers
CLASSES: dict[str, dict[str, Any]] = {
    "llama": {},
    "mistral": {},
    "mixtral": {"num_local_experts": _EXPERTS["experts"],
                "num_experts_per_tok": _EXPERTS["active"]},
    "qwen2": {},
    "qwen2_moe": {"num_experts": _EXPERTS["experts"], "num_experts_per_tok": _EXPERTS["active"],
                  "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64},
    "qwen3": {"head_dim": 8},
    "qwen3_moe": {"num_experts": _EXPERTS["experts"], "num_experts_per_tok": _EXPERTS["active"],
                  "moe_intermediate_size": 32, "head_dim": 8},
    "olmo": {},
    "olmo2": {},
    "olmoe": {"num_experts": _EXPERTS["experts"], "num_experts_per_tok": _EXPERTS["active"]},
}


def train_bpe(tok: Tokenizer, special: list[str], alphabet: list[str]) -> None:
    """Train a 512-token BPE vocabulary of `tok` on the fixed English text (deterministic)."""
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=special,
                                  initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(_TRAINING_TEXT, trainer)


def byte_level_tokenizer(*, unk: bool = True, pad: bool = True):
    """A fast byte-level BPE tokenizer in the style of SmolLM2, Llama 3 and Qwen (any text
    tokenizes; a word's offsets include its leading space; no BOS), with `<s>`, `</s>` and,
    as asked, `<unk>` and `<pad>`."""
    from transformers import PreTrainedTokenizerFast

    special = ["<s>", "</s>"] + ["<unk>"] * unk + ["<pad>"] * pad
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    train_bpe(tok, special, pre_tokenizers.ByteLevel.alphabet())
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>" if unk else None,
                                   pad_token="<pad>" if pad else None)


def build_random(architecture: str, seed: int, out: str | Path) -> Path:
    """Save a tiny model of class `architecture` (`CLASSES`) with weights drawn from `seed`,
    and its tokenizer, in the new folder `out`; return it."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    out = Path(out)
    tokenizer = byte_level_tokenizer()
    config = CONFIG_MAPPING[architecture](
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
        # larger than usual, so that the output moves visibly when input tokens change
        initializer_range=0.2, tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, **CLASSES[architecture])
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def prepare_random(name: str, source: dict[str, Any], cache_dir: Path) -> Path:
    """`cache_dir/<name>/`: the random model of the entry's `source` (`{"random": class,
    "seed": int}`), built on the first call and returned at once afterwards. The cache is
    keyed on the versions of torch and transformers too, whose initialisers draw the weights."""
    def build(out: Path, work: Path) -> dict[str, Any]:
        build_random(source["random"], source["seed"], out)
        return {}

    key = {**source, "versions": {p: version(p) for p in ("torch", "transformers")}}
    return build_once(name, cache_dir, key, build)

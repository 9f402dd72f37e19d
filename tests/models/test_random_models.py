"""Random-weight models of every architecture class the miniature names (`source: {random:}`):
each builds and loads as its own class, the seed fixes the weights bit for bit, the cache
reuses a build and rebuilds a changed one, the shared-prefix scorer gives the plain scorer's v
on every class (MoE routing included), and a bad entry fails in one line."""

import hashlib

import numpy as np
import pytest
import torch

from builders import plain_v, prompt, trie_v
from ips.errors import ModelError
from ips.models.cache import MANIFEST
from ips.models.entries import ModelSpec, job_mem_mb
from ips.models.loading import load_model, prepare_model
from ips.models.random_weights import CLASSES

#: transformers' class of each `random:` value, so a build is the class the miniature names
MODEL_CLASS = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
               "mixtral": "MixtralForCausalLM", "qwen2": "Qwen2ForCausalLM",
               "qwen2_moe": "Qwen2MoeForCausalLM", "qwen3": "Qwen3ForCausalLM",
               "qwen3_moe": "Qwen3MoeForCausalLM", "olmo": "OlmoForCausalLM",
               "olmo2": "Olmo2ForCausalLM", "olmoe": "OlmoeForCausalLM"}
MOE = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"}


def spec(name, architecture, seed=1, **extra):
    return ModelSpec.from_config(name, {
        "source": {"random": architecture, "seed": seed}, "family": "f", "series": "s",
        "type": "base", "architecture": "moe" if architecture in MOE else "dense",
        "params": "70B", "active_params": "13B", **extra})


def weights_digest(path):
    return hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("random-models")


def test_the_classes_are_the_ones_the_issue_names():
    assert set(CLASSES) == set(MODEL_CLASS)


@pytest.mark.parametrize("architecture", sorted(MODEL_CLASS))
def test_every_class_builds_loads_and_scores_alike_with_the_trie(architecture, cache):
    lm = load_model(spec(f"m-{architecture}", architecture), cache, device="cpu")
    assert type(lm.model).__name__ == MODEL_CLASS[architecture]
    assert (lm.mask_token, lm.mask_source) == ("<unk>", "unk")
    experts = lm.model.config.to_dict()
    assert (experts.get("num_local_experts") or experts.get("num_experts") or 0) == (
        4 if architecture in MOE else 0)
    ids, owners, n, letters = prompt(lm)
    plain = plain_v(lm, ids, owners, n, letters)
    trie, _ = trie_v(lm, ids, owners, n, letters)
    assert plain.shape == (1 << n,) and np.isfinite(plain).all()
    assert np.ptp(plain) > 1e-3  # the masks move the output: there is something to explain
    np.testing.assert_allclose(trie, plain, atol=1e-4)


def test_the_seed_fixes_the_weights(tmp_path):
    a = prepare_model(spec("a", "qwen2_moe", seed=5), tmp_path / "one")
    b = prepare_model(spec("a", "qwen2_moe", seed=5), tmp_path / "two")
    c = prepare_model(spec("a", "qwen2_moe", seed=6), tmp_path / "three")
    assert weights_digest(a) == weights_digest(b) != weights_digest(c)
    assert (a / "tokenizer.json").read_bytes() == (c / "tokenizer.json").read_bytes()


def test_the_cache_reuses_a_build_and_rebuilds_a_changed_entry(tmp_path):
    first = prepare_model(spec("m", "olmo", seed=1), tmp_path)
    stamp = (first / MANIFEST).stat().st_mtime_ns
    assert prepare_model(spec("m", "olmo", seed=1), tmp_path) == first
    assert (first / MANIFEST).stat().st_mtime_ns == stamp  # not rebuilt
    before = weights_digest(first)
    again = prepare_model(spec("m", "olmo", seed=2), tmp_path)
    assert again == first and weights_digest(again) != before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no scratch left


def test_a_folder_not_built_by_ips_is_not_overwritten(tmp_path):
    (tmp_path / "m").mkdir()
    with pytest.raises(ModelError, match=r"model m: .* has no ips-model.json"):
        prepare_model(spec("m", "llama"), tmp_path)


def test_a_random_model_asks_for_little_memory_whatever_its_namesake_weighs():
    s = spec("mixtral-8x7b", "mixtral", dtype="float16")
    assert job_mem_mb(s, "score") == job_mem_mb(s, "prepare") == 2000


@pytest.mark.parametrize("source, field", [
    ({"random": "mixtral"}, "seed"),
    ({"random": "gpt2", "seed": 1}, "random"),
    ({"random": "llama", "seed": -1}, "seed"),
    ({"seed": 1, "path": "/tmp"}, "seed"),
    ({"random": "llama", "seed": 1, "hub": "x/y"}, "hub"),
])
def test_a_bad_random_source_is_one_line_naming_the_field(source, field):
    with pytest.raises(ModelError) as e:
        ModelSpec.from_config("m", {"source": source, "family": "f", "series": "s",
                                    "type": "base", "architecture": "dense", "params": 1})
    assert "\n" not in str(e.value) and "model m" in str(e.value) and field in str(e.value)


def test_the_weights_are_a_model_of_the_class_not_of_the_namesake(cache):
    lm = load_model(spec("big", "llama"), cache, device="cpu")
    assert sum(p.numel() for p in lm.model.parameters()) < 1e6
    assert lm.model.dtype == torch.float32

"""workflow/configs/paper.yaml: valid, and it holds what reproducing the paper needs.

The 50 models of the paper's Table 1 (Appendix E.2) with attributes that make the four
factor comparisons constructible (ips.comparisons.compare pairs on
family/series/type/architecture/params), the mask tokens of Appendix E.4, and the paper's science
settings.
"""

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from ips.config import load_config
from ips.models.entries import ModelSpec

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "workflow" / "configs" / "paper.yaml"
WILDCARD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # workflow/rules/common.smk


@pytest.fixture(scope="module")
def config():
    return load_config(PAPER)


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load(PAPER.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def specs(config):
    return {name: ModelSpec.from_config(name, entry) for name, entry in config["models"].items()}


def test_science_settings(config):
    assert config["tau"] == 0.1
    assert config["tau_sweep"] == pytest.approx([0.05 + 0.01 * i for i in range(16)])
    assert config["figure_taus"] == [0.15, 0.05]  # Figs. 24-30 and 31-37 (Appendix F.8.2)
    assert config["solver"] == "auto" and config["noise"] == 0
    assert config["n_max"] == 10
    assert config["n_items"] == 100 and config["shard_size"] == 10
    assert config["batch_tokens"] == 4096  # within 80 GB (docs/workflow.md, planning)
    assert config["variables"] == {"strategy": "content", "merge_phrases": False,
                                   "reduce": "longest", "reference_model": None}
    assert config["templates"]["mcq"] == ["T1", "T2", "T3", "T4", "T5"]
    assert config["few_shot"] == {"templates": ["T1", "T4", "A1", "A4"], "shots": [1, 2, 3],
                                  "examples": "paper"}  # E.6's three; Dolly's Fig. 12d
    assert config["templates"]["instruction"] == ["A1", "A2", "A3", "A4"]
    assert config["perturbations"]["names"] == ["paraphrase", "reorder"]  # Appendix L


def test_every_schema_key_is_spelled_out(raw):
    schema = yaml.safe_load((ROOT / "src" / "ips" / "data" / "config.schema.yaml").read_text())
    assert set(schema["properties"]) <= set(raw)


def test_datasets(config):
    assert set(config["datasets"]) == {"arc-challenge", "mmlu", "dolly"}
    dolly = config["datasets"]["dolly"]  # Appendices K and L: every bundled record, 3 as shots
    assert dolly == {"format": "dolly", "source": "bundled", "fields": ["instruction"],
                     "n_items": 17, "models": [{"series": "llama-2"}],
                     "variables": {"merge_phrases": True}}  # K: the Llama-2 family, K.2
    arc, mmlu = config["datasets"]["arc-challenge"], config["datasets"]["mmlu"]
    assert arc["format"] == "arc" and arc["subset"] == "ARC-Challenge"
    assert arc["source"] in ("bundled", "allenai/ai2_arc")
    if arc["source"] != "bundled":
        assert arc.get("shot_split") not in (None, arc.get("split"))
    assert mmlu["format"] == "mmlu" and mmlu["subjects"] == "all"
    assert mmlu["source"] in ("bundled", "cais/mmlu")
    for entry in (arc, mmlu):  # variables from question and options
        assert "fields" not in entry and "n_items" not in entry


def test_fifty_models_that_all_build(raw, specs):
    assert len(specs) >= 45
    assert len(specs) == 50  # Table 1
    for name, spec in specs.items():
        assert WILDCARD.fullmatch(name), name
        assert spec.source.kind == "hub", name
        assert spec.dtype == "float16", name
        assert spec.active_params <= spec.params, name
        entry = raw["models"][name]
        # integers, not 7e9 (which YAML reads as a string)
        for key in ("params", "active_params"):
            assert type(entry[key]) is int and entry[key] >= 10**8, (name, key)
    families = Counter(s.family for s in specs.values())
    assert families == {"llama": 10, "mistral": 4, "qwen": 25, "olmo": 9, "internlm": 2}


def test_models_larger_than_one_gpu_are_spread_over_several(specs):
    """float16 weights (2 bytes a parameter) beyond one 80 GB GPU: 2 GPUs and a device_map."""
    big = {name for name, s in specs.items() if 2 * s.params > 80e9}
    assert big == {"llama-2-70b", "llama-2-70b-chat", "qwen2-72b-instruct", "qwen2.5-72b-instruct",
                   "mixtral-8x7b", "mixtral-8x7b-instruct"}
    for name, s in specs.items():
        if name in big:
            assert s.gpus * 80e9 >= 2 * s.params and s.device_map == "auto", name
        else:
            assert (s.gpus, s.device_map) == (1, None), name


def test_no_duplicate_hub_ids(specs):
    hubs = Counter(s.source.hub for s in specs.values())
    assert [h for h, n in hubs.items() if n > 1] == []
    for hub in hubs:
        assert re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", hub), hub


def test_instruct_base_pairs(specs):
    by_key = defaultdict(set)
    for s in specs.values():
        by_key[(s.family, s.series, s.params)].add(s.type)
    pairs = [k for k, types in by_key.items() if types == {"base", "instruct"}]
    assert len(pairs) >= 10
    # the 14 pairs of Appendix E.2 (1)
    for base, instruct in [
        ("llama-2-7b", "llama-2-7b-chat"), ("llama-2-13b", "llama-2-13b-chat"),
        ("llama-2-70b", "llama-2-70b-chat"), ("llama-3-8b", "llama-3-8b-instruct"),
        ("mistral-7b-v0.3", "mistral-7b-v0.3-instruct"), ("mixtral-8x7b", "mixtral-8x7b-instruct"),
        ("qwen3-4b", "qwen3-4b-instruct"), ("qwen3-8b", "qwen3-8b-instruct"),
        ("qwen3-14b", "qwen3-14b-instruct"), ("qwen1.5-moe-a2.7b", "qwen1.5-moe-a2.7b-chat"),
        ("qwen3-30b-a3b", "qwen3-30b-a3b-instruct"), ("olmo-7b", "olmo-7b-instruct"),
        ("olmoe-7b", "olmoe-7b-instruct"), ("internlm2-7b", "internlm2-chat-7b"),
    ]:  # fmt: skip
        b, i = specs[base], specs[instruct]
        assert (b.type, i.type) == ("base", "instruct")
        assert (b.family, b.series, b.params, b.architecture) == (
            i.family, i.series, i.params, i.architecture
        ), (base, instruct)


def test_scale_series(specs):
    sizes = defaultdict(set)
    for s in specs.values():
        sizes[(s.series, s.type, s.architecture)].add(s.params)
    assert sum(len(p) >= 3 for p in sizes.values()) >= 3
    # Appendix E.2 (3)
    assert len(sizes[("llama-2", "base", "dense")]) == 3
    assert len(sizes[("llama-2", "instruct", "dense")]) == 3
    assert len(sizes[("qwen2", "instruct", "dense")]) == 4
    assert len(sizes[("qwen2.5", "instruct", "dense")]) == 7
    assert len(sizes[("qwen3", "instruct", "dense")]) == 6
    assert len(sizes[("olmo-2", "instruct", "dense")]) == 4


def test_moe_models_have_dense_relatives(specs):
    dense_families = {s.family for s in specs.values() if s.architecture == "dense"}
    moe = [s for s in specs.values() if s.architecture == "moe"]
    assert len([s for s in moe if s.family in dense_families]) >= 4
    assert {s.family for s in moe} == {"llama", "mistral", "qwen", "olmo"}  # Figure 7
    for s in moe:
        assert s.active_params < s.params, s.name
    # dense vs moe pairs of equal family and type exist for every moe family
    dense = {(s.family, s.type) for s in specs.values() if s.architecture == "dense"}
    assert all((s.family, s.type) in dense for s in moe)


def test_mask_tokens_of_appendix_e4(specs):
    expected = {
        "llama-3-8b": 128255, "llama-3-8b-instruct": 128255,
        "llama-moe-v2-3_8b-2_8-sft": 128009,
        "qwen3-8b": 151654, "qwen3-8b-instruct": 151654,
        "qwen2-7b": 151646,  # <|PAD_TOKEN|>: a row of the embedding past the tokenizer
        "qwen3-14b": 151654, "qwen3-14b-instruct": 151654,
        "olmo-1b": 1, "olmo-7b": 1, "olmo-7b-instruct": 1, "olmoe-7b": 1, "olmoe-7b-instruct": 1,
        "olmo-2-1b-instruct": 100257, "olmo-2-7b-instruct": 100257,
        "olmo-2-13b-instruct": 100257, "olmo-2-32b-instruct": 100257,
    }  # fmt: skip
    for name, token in expected.items():
        assert specs[name].mask_token == token, name
    for name, s in specs.items():
        if s.family == "qwen" and name not in expected:
            assert s.mask_token == 151643, name  # <|endoftext|>
        # E.4's <unk> (id 0) models take the tokenizer's own unk token: no override
        if s.series in ("llama-2", "mistral-v0.3", "mixtral", "internlm2") or name.startswith(
            "llama-moe-v1"
        ):
            assert s.mask_token is None, name

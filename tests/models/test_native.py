"""`native: llama`: an InternLM2 checkpoint run by transformers' Llama class.

Ground truth: InternLM2's forward written out here from its definition (fused `wqkv` read
per key/value head as q_per_kv query heads, a key and a value head; rotary embeddings on
rotate-half pairs; SwiGLU w2(silu(w1 x) · w3 x); RMS norms), on a tiny random checkpoint
in InternLM2's names and layout, with a byte-level BPE tokenizer.
"""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from ips.errors import ModelError
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.models.random_weights import byte_level_tokenizer
from ips.scoring.engine import Engine
from ips.scoring.trie.support import unsupported_reason

HIDDEN, HEADS, KV_HEADS, LAYERS, FFN, THETA, EPS = 64, 8, 2, 2, 96, 1e6, 1e-6
HEAD_DIM = HIDDEN // HEADS


@pytest.fixture(scope="module")
def internlm2(tmp_path_factory):
    """A tiny InternLM2 checkpoint (config, weights, tokenizer) and its weights."""
    root = tmp_path_factory.mktemp("internlm2")
    tokenizer = byte_level_tokenizer(unk=True, pad=True)
    tokenizer.save_pretrained(root)
    vocab = len(tokenizer)
    g = torch.Generator().manual_seed(0)

    def w(*shape):
        return torch.randn(*shape, generator=g) * 0.2

    weights = {"model.tok_embeddings.weight": w(vocab, HIDDEN),
               "model.norm.weight": 1 + w(HIDDEN), "output.weight": w(vocab, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        weights |= {
            p + "attention.wqkv.weight": w((HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN),
            p + "attention.wo.weight": w(HIDDEN, HIDDEN),
            p + "feed_forward.w1.weight": w(FFN, HIDDEN),
            p + "feed_forward.w3.weight": w(FFN, HIDDEN),
            p + "feed_forward.w2.weight": w(HIDDEN, FFN),
            p + "attention_norm.weight": 1 + w(HIDDEN),
            p + "ffn_norm.weight": 1 + w(HIDDEN),
        }
    # two files, as a hub checkpoint is sharded
    keys = sorted(weights)
    save_file({k: weights[k] for k in keys[::2]}, root / "model-00001-of-00002.safetensors")
    save_file({k: weights[k] for k in keys[1::2]}, root / "model-00002-of-00002.safetensors")
    (root / "config.json").write_text(json.dumps({
        "model_type": "internlm2", "architectures": ["InternLM2ForCausalLM"],
        "auto_map": {"AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM"},
        "vocab_size": vocab, "hidden_size": HIDDEN, "intermediate_size": FFN,
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS, "hidden_act": "silu", "max_position_embeddings": 256,
        "rms_norm_eps": EPS, "rope_theta": THETA, "rope_scaling": None, "bias": False,
        "tie_word_embeddings": False, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id,
        "torch_dtype": "float32"}))
    return root, weights


def internlm2_logits(weights, ids):
    """InternLM2's forward of one sequence, float64, from its weights (module docstring)."""
    W = {k: v.double() for k, v in weights.items()}

    def norm(x, weight):
        return weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)

    s = len(ids)
    inv = THETA ** (-torch.arange(0, HEAD_DIM, 2, dtype=torch.float64) / HEAD_DIM)
    angles = torch.arange(s, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rotate(x):  # [heads, s, d]
        half = torch.cat([-x[..., HEAD_DIM // 2:], x[..., :HEAD_DIM // 2]], -1)
        return x * cos + half * sin

    q_per_kv = HEADS // KV_HEADS
    x = W["model.tok_embeddings.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        qkv = norm(x, W[p + "attention_norm.weight"]) @ W[p + "attention.wqkv.weight"].T
        qkv = qkv.view(s, KV_HEADS, q_per_kv + 2, HEAD_DIM)
        q = qkv[:, :, :q_per_kv].reshape(s, HEADS, HEAD_DIM).transpose(0, 1)
        k, v = qkv[:, :, -2].transpose(0, 1), qkv[:, :, -1].transpose(0, 1)
        q, k = rotate(q), rotate(k)
        k, v = k.repeat_interleave(q_per_kv, 0), v.repeat_interleave(q_per_kv, 0)
        scores = q @ k.transpose(-1, -2) / HEAD_DIM ** 0.5
        scores = scores.masked_fill(torch.ones(s, s).triu(1).bool(), -torch.inf)
        attn = (scores.softmax(-1) @ v).transpose(0, 1).reshape(s, HIDDEN)
        x = x + attn @ W[p + "attention.wo.weight"].T
        h = norm(x, W[p + "ffn_norm.weight"])
        up = torch.nn.functional.silu(h @ W[p + "feed_forward.w1.weight"].T) * (
            h @ W[p + "feed_forward.w3.weight"].T)
        x = x + up @ W[p + "feed_forward.w2.weight"].T
    return norm(x, W["model.norm.weight"]) @ W["output.weight"].T


def spec(root, **extra):
    return ModelSpec.from_config("tiny-internlm2", {
        "source": {"path": str(root)}, "family": "internlm", "series": "internlm2",
        "type": "base", "architecture": "dense", "params": 1, **extra})


def test_internlm2_runs_as_llama_with_its_own_logits(internlm2, tmp_path):
    root, weights = internlm2
    lm = load_model(spec(root, native="llama"), tmp_path)
    assert type(lm.model).__name__ == "LlamaForCausalLM" and lm.path == tmp_path / "tiny-internlm2"
    ids = lm.tokenizer.encode("Which one of these animals does not lay eggs?")
    with torch.no_grad():
        got = lm.model(torch.tensor([ids])).logits[0].double()
    np.testing.assert_allclose(got, internlm2_logits(weights, ids), rtol=0, atol=1e-4)
    # the trie evaluates it, as the plain scorer does
    assert unsupported_reason(lm.model) is None
    owners = np.full(len(ids), -1)
    owners[[3, 4, 6, 8]] = [0, 1, 2, 3]
    plain = Engine(lm.model, lm.mask_token_id).values(np.asarray(ids), owners, 4, [7])
    trie = Engine(lm.model, lm.mask_token_id, scorer="trie")
    np.testing.assert_allclose(trie.values(np.asarray(ids), owners, 4, [7]), plain, atol=1e-4)
    assert trie.trie.stats.prompts == 1
    # written once: a second load reads the converted directory
    before = (lm.path / "ips-model.json").stat().st_mtime_ns
    load_model(spec(root, native="llama"), tmp_path)
    assert (lm.path / "ips-model.json").stat().st_mtime_ns == before


def test_what_cannot_be_converted_is_named_in_one_line(internlm2, tmp_path):
    root, _ = internlm2
    other = tmp_path / "other"
    other.mkdir()
    for f in root.iterdir():
        (other / f.name).symlink_to(f)
    (other / "config.json").unlink()
    (other / "config.json").write_text(json.dumps(
        {**json.loads((root / "config.json").read_text()), "model_type": "llama_moe"}))
    with pytest.raises(ModelError, match=r"^model tiny-internlm2: native 'llama': no "
                       r"conversion for model_type 'llama_moe' \(known: internlm2 → llama\); "
                       r"remove `native` from its entry$"):
        load_model(spec(other, native="llama"), tmp_path / "cache")
    with pytest.raises(ModelError, match=r"^model m: native: converts .* not a random source"):
        ModelSpec.from_config("m", {
            "source": {"random": "llama", "seed": 0}, "family": "f", "series": "s", "type": "base",
            "architecture": "dense", "params": 1, "native": "llama"})

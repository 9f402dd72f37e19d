"""`native:`: remote-code checkpoints run by a transformers class.

Ground truth: each model's forward written out here from its definition, on a tiny random
checkpoint in its names and layout, with a byte-level BPE tokenizer. Shared: rotary
embeddings on rotate-half pairs, causal grouped-query attention, SwiGLU
w2(silu(w1 x) · w3 x), RMS norms. InternLM2 (`native: llama`): a fused `wqkv` read per
key/value head as q_per_kv query heads, a key and a value head. LLaMA-MoE v2 (`native:
mixtral`): a router's softmax over the experts, the top 2 renormalised, their SwiGLU
outputs summed with those weights and multiplied by `scale_factor`.
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


def checkpoint_start(tmp_path_factory, name: str, seed: int):
    """A new checkpoint directory holding a byte-level tokenizer; the tokenizer, and a draw of
    random weights (seeded) of any shape."""
    root = tmp_path_factory.mktemp(name)
    tokenizer = byte_level_tokenizer(unk=True, pad=True)
    tokenizer.save_pretrained(root)
    g = torch.Generator().manual_seed(seed)

    def w(*shape):
        return torch.randn(*shape, generator=g) * 0.2

    return root, tokenizer, w


def with_config(root, where, **changes):
    """A copy of the checkpoint `root` in `where` (its files linked) whose config.json has
    `changes`."""
    where.mkdir()
    for f in root.iterdir():
        if f.name != "config.json":
            (where / f.name).symlink_to(f)
    (where / "config.json").write_text(json.dumps(
        {**json.loads((root / "config.json").read_text()), **changes}))
    return where


def assert_trie_is_plain(lm, ids):
    """The trie evaluates the model, and gives the plain scorer's v on one prompt."""
    assert unsupported_reason(lm.model) is None
    owners = np.full(len(ids), -1)
    owners[[3, 4, 6, 8]] = [0, 1, 2, 3]
    plain = Engine(lm.model, lm.mask_token_id).values(np.asarray(ids), owners, 4, [7])
    trie = Engine(lm.model, lm.mask_token_id, scorer="trie")
    np.testing.assert_allclose(trie.values(np.asarray(ids), owners, 4, [7]), plain, atol=1e-4)
    assert trie.trie.stats.prompts == 1


@pytest.fixture(scope="module")
def internlm2(tmp_path_factory):
    """A tiny InternLM2 checkpoint (config, weights, tokenizer) and its weights."""
    root, tokenizer, w = checkpoint_start(tmp_path_factory, "internlm2", 0)
    vocab = len(tokenizer)
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


def rms(x, weight):
    return weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)


def attend(q, k, v):
    """Causal attention of [s, heads, d] queries on [s, kv_heads, d] keys and values, with
    rotary embeddings at positions 0..s-1; [s, heads · d] out."""
    s = q.shape[0]
    inv = THETA ** (-torch.arange(0, HEAD_DIM, 2, dtype=torch.float64) / HEAD_DIM)
    angles = torch.arange(s, dtype=torch.float64)[:, None, None] * inv
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rotate(x):
        return x * cos + torch.cat([-x[..., HEAD_DIM // 2:], x[..., :HEAD_DIM // 2]], -1) * sin

    q, k = rotate(q).transpose(0, 1), rotate(k).transpose(0, 1)
    k = k.repeat_interleave(HEADS // KV_HEADS, 0)
    v = v.transpose(0, 1).repeat_interleave(HEADS // KV_HEADS, 0)
    scores = q @ k.transpose(-1, -2) / HEAD_DIM ** 0.5
    scores = scores.masked_fill(torch.ones(s, s).triu(1).bool(), -torch.inf)
    return (scores.softmax(-1) @ v).transpose(0, 1).reshape(s, HEADS * HEAD_DIM)


def swiglu(h, w1, w3, w2):
    return (torch.nn.functional.silu(h @ w1.T) * (h @ w3.T)) @ w2.T


def internlm2_logits(weights, ids):
    """InternLM2's forward of one sequence, float64, from its weights (module docstring)."""
    W = {k: v.double() for k, v in weights.items()}
    s, q_per_kv = len(ids), HEADS // KV_HEADS
    x = W["model.tok_embeddings.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        qkv = rms(x, W[p + "attention_norm.weight"]) @ W[p + "attention.wqkv.weight"].T
        qkv = qkv.view(s, KV_HEADS, q_per_kv + 2, HEAD_DIM)
        q = qkv[:, :, :q_per_kv].reshape(s, HEADS, HEAD_DIM)
        x = x + attend(q, qkv[:, :, -2], qkv[:, :, -1]) @ W[p + "attention.wo.weight"].T
        h = rms(x, W[p + "ffn_norm.weight"])
        x = x + swiglu(h, *(W[p + f"feed_forward.{n}.weight"] for n in ("w1", "w3", "w2")))
    return rms(x, W["model.norm.weight"]) @ W["output.weight"].T


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
    assert_trie_is_plain(lm, ids)
    # written once: a second load reads the converted directory
    before = (lm.path / "ips-model.json").stat().st_mtime_ns
    load_model(spec(root, native="llama"), tmp_path)
    assert (lm.path / "ips-model.json").stat().st_mtime_ns == before


def test_what_cannot_be_converted_is_named_in_one_line(internlm2, tmp_path):
    other = with_config(internlm2[0], tmp_path / "other", model_type="llama_moe")
    with pytest.raises(ModelError, match=r"^model tiny-internlm2: native 'llama': no "
                       r"conversion for model_type 'llama_moe' \(known: internlm2 → llama, "
                       r"mixtral → mixtral\); remove `native` from its entry$"):
        load_model(spec(other, native="llama"), tmp_path / "cache")
    with pytest.raises(ModelError, match=r"^model m: native: converts .* not a random source"):
        ModelSpec.from_config("m", {
            "source": {"random": "llama", "seed": 0}, "family": "f", "series": "s", "type": "base",
            "architecture": "dense", "params": 1, "native": "llama"})


EXPERTS, TOP_K, SCALE = 4, 2, 4.0


@pytest.fixture(scope="module")
def llama_moe_v2(tmp_path_factory):
    """A tiny LLaMA-MoE v2 checkpoint (Mixtral's names, its remote config) and its weights."""
    root, tokenizer, w = checkpoint_start(tmp_path_factory, "llama_moe_v2", 1)
    vocab = len(tokenizer)
    weights = {"model.embed_tokens.weight": w(vocab, HIDDEN),
               "model.norm.weight": 1 + w(HIDDEN), "lm_head.weight": w(vocab, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        weights |= {
            p + "self_attn.q_proj.weight": w(HIDDEN, HIDDEN),
            p + "self_attn.k_proj.weight": w(KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.v_proj.weight": w(KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.o_proj.weight": w(HIDDEN, HIDDEN),
            p + "block_sparse_moe.gate.weight": w(EXPERTS, HIDDEN) * 5,  # distinct routes
            p + "input_layernorm.weight": 1 + w(HIDDEN),
            p + "post_attention_layernorm.weight": 1 + w(HIDDEN),
        }
        for e in range(EXPERTS):
            q = f"{p}block_sparse_moe.experts.{e}."
            weights |= {q + "w1.weight": w(FFN, HIDDEN), q + "w3.weight": w(FFN, HIDDEN),
                        q + "w2.weight": w(HIDDEN, FFN)}
    save_file(weights, root / "model.safetensors")
    (root / "config.json").write_text(json.dumps({
        "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
        "auto_map": {"AutoModelForCausalLM": "modeling_mixtral.MixtralForCausalLM"},
        "vocab_size": vocab, "hidden_size": HIDDEN, "intermediate_size": FFN,
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS, "hidden_act": "silu", "max_position_embeddings": 256,
        "rms_norm_eps": EPS, "rope_theta": THETA, "sliding_window": 4096,
        "num_local_experts": EXPERTS, "num_experts_per_tok": TOP_K, "scale_factor": SCALE,
        "moe_type": "modulelist", "num_moe_contract_layers": 0, "use_attn_moe": False,
        "intermediate_size_residual": None, "add_rescale_bias": False,
        "tie_word_embeddings": False, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, "torch_dtype": "float32"}))
    return root, weights


def llama_moe_v2_logits(weights, ids, routes):
    """LLaMA-MoE v2's forward of one sequence, float64, from its weights (module docstring);
    each token's chosen experts are added to the set `routes`."""
    W = {k: v.double() for k, v in weights.items()}
    s = len(ids)
    x = W["model.embed_tokens.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = rms(x, W[p + "input_layernorm.weight"])
        q, k, v = (h @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        a = attend(q.view(s, HEADS, HEAD_DIM), k.view(s, KV_HEADS, HEAD_DIM),
                   v.view(s, KV_HEADS, HEAD_DIM))
        x = x + a @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        probs = (h @ W[p + "block_sparse_moe.gate.weight"].T).softmax(-1)
        top, chosen = probs.topk(TOP_K, -1)
        top = top / top.sum(-1, keepdim=True)
        routes |= {tuple(sorted(r)) for r in chosen.tolist()}
        moe = torch.zeros_like(x)
        for t in range(s):
            for weight, e in zip(top[t], chosen[t].tolist()):
                q_ = f"{p}block_sparse_moe.experts.{e}."
                moe[t] += weight * swiglu(h[t], *(W[q_ + f"{n}.weight"] for n in ("w1", "w3", "w2")))
        x = x + SCALE * moe
    return rms(x, W["model.norm.weight"]) @ W["lm_head.weight"].T


def moe_spec(root, **extra):
    return ModelSpec.from_config("tiny-llama-moe-v2", {
        "source": {"path": str(root)}, "family": "llama", "series": "llama-moe",
        "type": "instruct", "architecture": "moe", "params": 2, "active_params": 1,
        "trust_remote_code": True, **extra})


def test_llama_moe_v2_runs_as_mixtral_with_its_own_logits(llama_moe_v2, tmp_path):
    root, weights = llama_moe_v2
    lm = load_model(moe_spec(root, native="mixtral"), tmp_path)
    assert type(lm.model).__name__ == "MixtralForCausalLM"
    ids = lm.tokenizer.encode("Which one of these animals does not lay eggs?")
    with torch.no_grad():
        got = lm.model(torch.tensor([ids])).logits[0].double()
    routes = set()
    np.testing.assert_allclose(got, llama_moe_v2_logits(weights, ids, routes), rtol=0, atol=1e-4)
    assert len(routes) >= 3  # tokens take different experts: the routing itself is checked
    assert_trie_is_plain(lm, ids)


@pytest.mark.parametrize("field, value", [("use_attn_moe", True),
                                          ("num_moe_contract_layers", 1),
                                          ("intermediate_size_residual", 32)])
def test_llama_moe_v2_parts_mixtral_lacks_are_refused(llama_moe_v2, tmp_path, field, value):
    other = with_config(llama_moe_v2[0], tmp_path / "other", **{field: value})
    with pytest.raises(ModelError, match=rf"^model tiny-llama-moe-v2: native 'mixtral': "
                       rf"config.json has {field}: {value!r}, which transformers' Mixtral has no "
                       rf"counterpart for; remove `native` from its entry$"):
        load_model(moe_spec(other, native="mixtral"), tmp_path / "cache")
    assert not (tmp_path / "cache" / "tiny-llama-moe-v2").exists()

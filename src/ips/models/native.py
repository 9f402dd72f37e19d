"""Remote-code models run by a transformers class (`native:` of a model entry).

InternLM2 and LLaMA-MoE v2 ship their model classes as remote code, whose attention does not
go through transformers' `AttentionInterface`, so the trie cannot evaluate them.
`prepare_native` writes their weights once for a transformers class (`<cache>/<name>/`,
`ips.models.cache`); the tokenizer stays the repository's own (its files and code are
copied beside).

InternLM2 is Llama with fused projections: the query/key/value rows of `wqkv` split apart.

`wqkv`'s output rows hold, for each key/value head g, its q_per_kv query heads, then its key
head, then its value head, each head_dim rows (InternLM2's modeling code reads them so):

    wqkv.view(kv_heads, q_per_kv + 2, head_dim, hidden) → q = [:, :q_per_kv], k = [:, -2], v = [:, -1]

LLaMA-MoE v2 is Mixtral (its config's `model_type` says so, in Mixtral's weight names),
except that each token's MoE output is multiplied by the config's `scale_factor` s:

    y = s · Σ_{e ∈ top-k} w_e · W2_e (silu(W1_e x) ⊙ W3_e x) = Σ_{e ∈ top-k} w_e · (s W2_e)(…)

so writing s · W2_e for each expert's `w2` is exact; the config's other additions (attention
MoE, dense end layers, a residual expert, rescale biases) have no Mixtral counterpart and
are refused.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from ips.errors import ModelError
from ips.models.cache import build_once

log = logging.getLogger(__name__)

#: the files of the source directory that the converted model keeps: its tokenizer
_TOKENIZER_FILES = ("tokenizer*", "special_tokens_map.json", "tokenization_*.py",
                    "generation_config.json", "*.model", "*.tiktoken")
_SHARD_BYTES = 4 << 30  # safetensors shard size of the converted weights


def prepare_native(name: str, native: str, source: Path, manifest_source: dict,
                   cache_dir: Path) -> Path:
    """`cache_dir/<name>/`: the model in `source` (a transformers directory whose class is
    remote code) written for transformers' `native` class, on the first call; a `ModelError`
    naming the model if no conversion is known for its `model_type`."""
    config = json.loads((source / "config.json").read_text())
    model_type = config.get("model_type")
    convert = CONVERSIONS.get((model_type, native))
    if convert is None:
        known = ", ".join(f"{a} → {b}" for a, b in CONVERSIONS)
        raise ModelError(f"model {name}: native {native!r}: no conversion for model_type "
                         f"{model_type!r} (known: {known}); remove `native` from its entry")

    def build(out: Path, work: Path) -> dict:
        out.mkdir()
        log.info("%s: writing %s's weights as %s (once)", name, model_type, native)
        try:
            convert(source, config, out)
        except ModelError as e:
            raise ModelError(f"model {name}: native {native!r}: {e}") from None
        for pattern in _TOKENIZER_FILES:
            for f in source.glob(pattern):
                shutil.copy2(f, out / f.name)
        return {"native": native, "from_model_type": model_type}

    return build_once(name, cache_dir, {"native": native, "from": manifest_source}, build)


def _decoder_config(config: dict) -> dict:
    """The fields every conversion carries over as they are: a decoder's shape, its norm,
    its special tokens and its dtype, under transformers' names."""
    return dict(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
        intermediate_size=config["intermediate_size"],
        num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"],
        num_key_value_heads=config["num_key_value_heads"],
        hidden_act=config.get("hidden_act", "silu"),
        max_position_embeddings=config["max_position_embeddings"],
        rms_norm_eps=config["rms_norm_eps"],
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        bos_token_id=config.get("bos_token_id"), eos_token_id=config.get("eos_token_id"),
        pad_token_id=config.get("pad_token_id"), dtype=config.get("torch_dtype"))


def internlm2_to_llama(source: Path, config: dict, out: Path) -> None:
    """InternLM2's config and weights as transformers' Llama (see the module docstring)."""
    from transformers import LlamaConfig

    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    hidden = config["hidden_size"]
    head_dim = hidden // heads
    scaling = dict(config.get("rope_scaling") or {})
    rope = {"rope_type": scaling.pop("rope_type", scaling.pop("type", "default")),
            "rope_theta": config.get("rope_theta", 10000.0), **scaling}
    LlamaConfig(**_decoder_config(config), rope_parameters=rope,
                attention_bias=bool(config.get("bias", False)),
                architectures=["LlamaForCausalLM"]).save_pretrained(out)

    def split_qkv(t):
        grouped = t.reshape(kv_heads, heads // kv_heads + 2, head_dim, *t.shape[1:])
        return {"q_proj": grouped[:, :-2].reshape(heads * head_dim, *t.shape[1:]),
                "k_proj": grouped[:, -2].reshape(kv_heads * head_dim, *t.shape[1:]),
                "v_proj": grouped[:, -1].reshape(kv_heads * head_dim, *t.shape[1:])}

    def rename(key, t) -> Iterator[tuple[str, object]]:
        if key.endswith("rotary_emb.inv_freq"):
            return  # a buffer Llama computes itself
        if m := re.fullmatch(r"(model\.layers\.\d+\.)attention\.wqkv\.(weight|bias)", key):
            for proj, part in split_qkv(t).items():
                yield f"{m[1]}self_attn.{proj}.{m[2]}", part.contiguous()
            return
        for pattern, to in _INTERNLM2_NAMES:
            if m := re.fullmatch(pattern, key):
                yield m.expand(to), t
                return
        raise ModelError(f"InternLM2 weight {key!r} has no Llama counterpart; remove `native` "
                         f"from its entry")

    _write_renamed(source, out, rename)


_INTERNLM2_NAMES = [
    (r"model\.tok_embeddings\.weight", r"model.embed_tokens.weight"),
    (r"(model\.layers\.\d+\.)attention\.wo\.(weight|bias)", r"\1self_attn.o_proj.\2"),
    (r"(model\.layers\.\d+\.)feed_forward\.w1\.weight", r"\1mlp.gate_proj.weight"),
    (r"(model\.layers\.\d+\.)feed_forward\.w3\.weight", r"\1mlp.up_proj.weight"),
    (r"(model\.layers\.\d+\.)feed_forward\.w2\.weight", r"\1mlp.down_proj.weight"),
    (r"(model\.layers\.\d+\.)attention_norm\.weight", r"\1input_layernorm.weight"),
    (r"(model\.layers\.\d+\.)ffn_norm\.weight", r"\1post_attention_layernorm.weight"),
    (r"model\.norm\.weight", r"model.norm.weight"),
    (r"output\.weight", r"lm_head.weight"),
]

#: LLaMA-MoE v2's config fields beyond Mixtral's, with the value under which its layer is
#: Mixtral's (module docstring)
_LLAMA_MOE_V2_PLAIN = {"use_attn_moe": False, "num_moe_contract_layers": 0,
                       "intermediate_size_residual": None, "add_rescale_bias": False,
                       "moe_type": "modulelist"}


def llama_moe_v2_to_mixtral(source: Path, config: dict, out: Path) -> None:
    """LLaMA-MoE v2's config and weights as transformers' Mixtral, `scale_factor` folded into
    each expert's `w2` (see the module docstring)."""
    import torch
    from transformers import MixtralConfig

    for field, plain in _LLAMA_MOE_V2_PLAIN.items():
        if config.get(field, plain) != plain:
            raise ModelError(f"config.json has {field}: {config[field]!r}, which transformers' "
                             f"Mixtral has no counterpart for; remove `native` from its entry")
    scale = float(config.get("scale_factor", 1.0))
    MixtralConfig(
        **_decoder_config(config),
        # its rotary embedding reads rope_theta alone, whatever rope_scaling says
        rope_parameters={"rope_type": "default", "rope_theta": config.get("rope_theta", 1e6)},
        sliding_window=config.get("sliding_window"),
        num_experts_per_tok=config["num_experts_per_tok"],
        num_local_experts=config["num_local_experts"],
        architectures=["MixtralForCausalLM"],
    ).save_pretrained(out)

    def rename(key, t) -> Iterator[tuple[str, object]]:
        if key.endswith("rotary_emb.inv_freq"):
            return  # a buffer Mixtral computes itself
        if not any(re.fullmatch(p, key) for p in _MIXTRAL_NAMES):
            raise ModelError(f"LLaMA-MoE v2 weight {key!r} has no Mixtral counterpart; remove "
                             f"`native` from its entry")
        if re.fullmatch(_MIXTRAL_W2, key):
            t = (t.to(torch.float64) * scale).to(t.dtype)
        yield key, t

    _write_renamed(source, out, rename)


_MIXTRAL_W2 = r"model\.layers\.\d+\.block_sparse_moe\.experts\.\d+\.w2\.weight"
#: the weight names of a Mixtral checkpoint, which transformers maps onto its fused experts
_MIXTRAL_NAMES = [
    r"model\.embed_tokens\.weight", r"model\.norm\.weight", r"lm_head\.weight",
    r"model\.layers\.\d+\.self_attn\.[qkvo]_proj\.weight",
    r"model\.layers\.\d+\.(input|post_attention)_layernorm\.weight",
    r"model\.layers\.\d+\.block_sparse_moe\.gate\.weight",
    r"model\.layers\.\d+\.block_sparse_moe\.experts\.\d+\.w[123]\.weight",
]

#: (model_type of the remote code, transformers class) → its conversion
CONVERSIONS: dict[tuple[str, str], Callable[[Path, dict, Path], None]] = {
    ("internlm2", "llama"): internlm2_to_llama,
    ("mixtral", "mixtral"): llama_moe_v2_to_mixtral,
}


def _write_renamed(source: Path, out: Path, rename) -> None:
    """Every safetensors tensor of `source` through `rename(key, tensor)` (pairs out), written
    to `out` in shards of up to `_SHARD_BYTES` with their index; one shard held at a time."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    files = sorted(source.glob("*.safetensors"))
    if not files:
        raise ModelError(f"{source} holds no *.safetensors weights to convert")
    shard: dict = {}
    size, total, weight_map, names = 0, 0, {}, []

    def flush():
        nonlocal shard, size
        if shard:
            names.append(f"model-{len(names) + 1:05d}.safetensors")
            save_file(shard, out / names[-1], metadata={"format": "pt"})
            weight_map.update(dict.fromkeys(shard, names[-1]))
            shard, size = {}, 0

    for f in files:
        with safe_open(f, framework="pt") as st:
            for key in st.keys():
                for new, t in rename(key, st.get_tensor(key)):
                    nbytes = t.numel() * t.element_size()
                    if size + nbytes > _SHARD_BYTES:
                        flush()
                    shard[new] = t
                    size += nbytes
                    total += nbytes
    flush()
    if len(names) == 1:
        (out / names[0]).rename(out / "model.safetensors")
        return
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))

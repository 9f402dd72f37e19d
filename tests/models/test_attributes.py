"""A model's attributes read from its checkpoint (ips.models.attributes), against counts from
its config by hand: a dense Llama and two MoE classes, built at random in seconds."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from ips.models.attributes import checkpoint_attributes, recorded_attributes
from ips.models.entries import ModelSpec
from ips.models.random_weights import build_random


def distinct_params(model) -> int:
    seen = {}
    for p in model.state_dict().values():
        seen.setdefault(p.data_ptr(), p.numel())
    return sum(seen.values())


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("attributes")
    return {k: AutoModelForCausalLM.from_pretrained(build_random(k, 0, root / k),
                                                    dtype=torch.float32)
            for k in ("llama", "mixtral", "qwen2_moe")}


def test_a_dense_model_counts_its_distinct_parameters(built):
    model = built["llama"]
    got = checkpoint_attributes(model)
    assert got == {"architecture": "dense", "params": distinct_params(model),
                   "active_params": distinct_params(model)}


@pytest.mark.parametrize("kind, inter", [("mixtral", "intermediate_size"),
                                         ("qwen2_moe", "moe_intermediate_size")])
def test_an_moe_model_leaves_out_the_experts_a_token_does_not_use(built, kind, inter):
    """Routed experts by hand: layers × E × 3 matrices of hidden × intermediate (gate, up,
    down; no biases); active = total − (E − k)/E of them."""
    model = built[kind]
    c = model.config
    experts = getattr(c, "num_local_experts", None) or c.num_experts
    routed = c.num_hidden_layers * experts * 3 * c.hidden_size * getattr(c, inter)
    total = distinct_params(model)
    got = checkpoint_attributes(model)
    assert got["architecture"] == "moe" and got["params"] == total
    assert got["active_params"] == total - routed * (experts - c.num_experts_per_tok) // experts


def test_the_entry_wins_where_it_gives_the_attributes(built):
    model = built["mixtral"]
    given = ModelSpec.from_config("m", {"source": {"random": "mixtral", "seed": 0},
                                        "family": "f", "type": "base", "architecture": "moe",
                                        "params": "8B", "active_params": "2B"})
    assert recorded_attributes(given, model) == {
        "family": "f", "series": "unknown", "type": "base", "architecture": "moe",
        "params": 8 * 10**9, "active_params": 2 * 10**9}
    alone = ModelSpec.from_config("m", {"source": {"random": "mixtral", "seed": 0}})
    read = checkpoint_attributes(model)
    assert recorded_attributes(alone, model) == {"family": "unknown", "series": "unknown",
                                                 "type": "unknown", **read}

"""The shared-prefix (trie) scorer gives the plain batched scorer's v on every mask."""

import logging

import numpy as np
import pytest
import torch

import ips.scoring.trie as trie
import ips.scoring.trie.scorer as trie_scorer
from builders import _Confident, plain_v, prompt, sample_set, trie_v
from ips.baselines import Deletion
from ips.models.loading import input_device
from ips.models.testing import load_tiny
from ips.scoring.engine import Engine
from ips.scoring.log_odds import ScoringError
from ips.scoring.shard import score_shard
from ips.scoring.trie import TrieScorer, plan_levels, trie_budget
from ips.scoring.trie.tree import KeyValueTree


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The tiny models' ops are too small to share: one thread is faster, and much faster
    when other processes compete for the cores (no waiting for a descheduled sibling)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def layouts(L: int, start: int) -> dict[str, tuple[np.ndarray, int]]:
    """Owner layouts over a row of L tokens; `start` is the first token that may be a variable."""
    out = {}

    def lay(name, n, spans):
        own = np.full(L, -1)
        for var, positions in spans:
            own[list(positions)] = var
        out[name] = (own, n)

    lay("one", 1, [(0, [start + 5])])
    lay("first_tokens", 2, [(0, [start, start + 1]), (1, [start + 4])])
    lay("last_token", 2, [(0, [start + 3]), (1, [L - 1])])
    # adjacent, multi-token, and in index order different from prompt order
    lay("adjacent_multi", 4, [(2, range(start + 2, start + 5)), (0, [start + 5]),
                              (3, [start + 6, start + 7]), (1, [L - 2, L - 1])])
    # a variable whose tokens are not contiguous, and one that owns no token (a dummy)
    lay("split_and_dummy", 4, [(1, [start + 1, start + 2, start + 9]), (3, [start + 4]),
                               (0, [start + 12])])
    lay("eight", 8, [(i, [start + 1 + 5 * i + (i % 2)]) for i in range(7)] + [(7, [L - 1])])
    return out


# ---------------------------------------------------------------- the plan


def test_plan_levels_cover_the_row_and_fix_the_variables_in_order():
    firsts, L = [3, 6, 9, 10, 13, 24, 28, 32], 38
    for cost in (0, 48, 10**6):
        levels = plan_levels(firsts, L, 4096, cost)
        assert levels[0][0] == 0 and levels[0][2] == 0 and levels[-1][1:] == (L, len(firsts))
        for (_, b, v), (c, _, w) in zip(levels, levels[1:]):
            assert b == c  # contiguous (an empty prefix level ends at 0)
            assert w > v and c == (firsts[v] if b > 0 or v > 0 else 0)
    # no cost per forward: the plain trie, one variable per level after the prefix
    assert plan_levels(firsts, L, 4096, 0) == [(0, 3, 0)] + [
        (a, b, i + 1) for i, (a, b) in enumerate(zip(firsts, firsts[1:] + [L]))]
    # forwards dearer than any token count: one level, i.e. the plain batched rows
    assert plan_levels(firsts, L, 10**9, 10**9) == [(0, 0, 0), (0, L, 8)]
    assert plan_levels([], 7, 4096, 48) == [(0, 7, 0)]
    assert plan_levels([0], 5, 4096, 0) == [(0, 0, 0), (0, 5, 1)]
    assert trie_budget(1024) >= 1024 and trie_budget(10**5) == 10**5


# ---------------------------------------------------------------- same values as plain


def left_to_plain(lm, ids, owners, target) -> bool:
    """Under deletion: the last prompt token is a variable's (deleting it moves the answer
    position), or the row is longer than the model's sliding window (16 in the tiny Gemma)."""
    window = getattr(lm.model.config, "sliding_window", None) or np.inf
    return owners[-1] >= 0 or len(ids) + len(target) - 1 > window


@pytest.mark.parametrize("mask", ["own", "delete"])
@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_trie_equals_plain_on_every_layout(which, mask, request):
    lm = request.getfixturevalue(which)
    baseline = Deletion() if mask == "delete" else None
    ids, _, _, letters = prompt(lm)
    bos = int(ids[0] == lm.tokenizer.bos_token_id)
    assert bos == (which == "gemma")  # Gemma adds a BOS, the llama (as SmolLM2) does not
    cases = layouts(len(ids), bos)
    cases["at_position_0"] = layouts(len(ids), 0)["first_tokens"]
    for name, (owners, n) in cases.items():
        for target in ([letters[1]], [letters[2], letters[0], letters[3]]):
            expect = plain_v(lm, ids, owners, n, target, baseline)
            assert np.ptp(expect) > 1e-3, name  # masking moves v: the comparison is not vacuous
            # budgets 1 and 12 force depth-first over tiny subtrees (1: one node per forward);
            # forward cost 0 gives one variable per level, 48 merges the first levels;
            # a logits budget of 100 projects the vocabulary in slices of at most 100 logits
            for budget, cost, logits in ((1, 0, 100), (12, 48, 1 << 24), (4096, 0, 1 << 24),
                                         (4096, 48, 100)):
                if budget == 1 and len(target) > 1:
                    continue
                got, _ = trie_v(lm, ids, owners, n, target, baseline, budget=budget,
                                forward_cost=cost, logits_budget=logits)
                if got is None:  # left to the plain scorer (`TrieScorer.values`)
                    assert mask == "delete" and left_to_plain(lm, ids, owners, target), name
                    continue
                np.testing.assert_allclose(got, expect, rtol=0, atol=1e-4,
                                           err_msg=f"{name} {target} {budget} {cost} {logits}")


@pytest.mark.parametrize("mask", ["own", "delete"])
@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_trie_equals_plain_on_rendered_prompts_past_the_sliding_window(which, mask, request):
    lm = request.getfixturevalue(which)
    baseline = Deletion() if mask == "delete" else None
    window = getattr(lm.model.config, "sliding_window", None)
    for cond, shots in (("T1", ()), ("T4", ()), ("T1-1shot", (1,))):
        ids, owners, n, letters = prompt(lm, cond, shots)
        first = int(np.flatnonzero(owners >= 0)[0])
        if window:  # Gemma 3's sliding layers: the answer no longer sees the first variable
            assert len(ids) - 1 - first >= window
        expect = plain_v(lm, ids, owners, n, [letters[0]], baseline)
        got, scorer = trie_v(lm, ids, owners, n, [letters[0]], baseline, budget=64)
        if got is None:  # past Gemma's window, deletion is left to the plain scorer
            assert (mask, which) == ("delete", "gemma")
            continue
        np.testing.assert_allclose(got, expect, rtol=0, atol=1e-4)
        st = scorer.stats
        assert st.masks == 1 << n and st.tokens < st.plain_tokens
        # everything before the first variable (the whole demonstration) is run once
        assert st.tokens <= st.plain_tokens - ((1 << n) - 1) * first


@pytest.mark.parametrize("mask", ["own", "delete"])
@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_a_design_shares_the_prefix_and_equals_plain(which, mask, request):
    """A design's masks (any order, with or without the empty and the full mask) get the
    plain scorer's v, in design order; the tokens before the first variable run once."""
    lm = request.getfixturevalue(which)
    baseline = lm.baseline if mask == "own" else Deletion()
    rng = np.random.default_rng(3)
    cases = [(lm_prompt, None) for lm_prompt in (prompt(lm, c, s) for c, s in
                                                 (("T1", ()), ("T1-1shot", (1,))))]
    ids, _, _, letters = prompt(lm)
    bos = int(ids[0] == lm.tokenizer.bos_token_id)
    cases += [((ids, owners, n, letters), name)
              for name, (owners, n) in layouts(len(ids), bos).items()]
    for (ids, owners, n, letters), name in cases:
        designs = [rng.permutation(1 << n)[: max(2, (1 << n) // 3)],  # no 0 / full, maybe
                   np.r_[0, (1 << n) - 1, rng.choice(np.arange(1, (1 << n) - 1),
                                                      min(5, (1 << n) - 2), replace=False)]]
        for design in designs:
            for target in ([letters[1]], [letters[2], letters[0]]):
                expect = plain_v(lm, ids, owners, n, target, baseline)[design]
                for budget in (16, 4096):
                    scorer = TrieScorer(lm.model, baseline, budget=budget)
                    got = scorer.values(ids, owners, n, target, design)
                    if got is None:  # left to the plain scorer (`TrieScorer.values`)
                        assert mask == "delete" and left_to_plain(lm, ids, owners, target)
                        continue
                    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-4,
                                               err_msg=f"{name} {design} {budget}")
                    first = int(np.flatnonzero(owners >= 0)[0])
                    st = scorer.stats
                    assert st.masks == len(design)
                    assert st.tokens == st.plain_tokens - (len(design) - 1) * first


@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_trie_is_exact_in_float64(which, tiny_llama_dir, tiny_gemma_dir):
    lm = load_tiny(tiny_llama_dir if which == "llama" else tiny_gemma_dir)
    lm.model.double()
    ids, owners, n, letters = prompt(lm, "T1-1shot", (1,))
    cases = {"prompt": (owners, n), **layouts(len(ids), int(which == "gemma"))}
    for name, (own, k) in cases.items():
        for target in ([letters[3]], [letters[1], letters[2]]):
            expect = plain_v(lm, ids, own, k, target)
            for logits in (1 << 24, 40 * len(target)):  # the whole vocabulary, or 40 at a time
                got, _ = trie_v(lm, ids, own, k, target, budget=16, logits_budget=logits)
                np.testing.assert_allclose(got, expect, rtol=0, atol=1e-9, err_msg=name)


def test_depth_first_bounds_the_stored_keys_and_values(llama):
    ids, _, _, letters = prompt(llama)
    owners, n = layouts(len(ids), 0)["eight"]
    wide, w = trie_v(llama, ids, owners, n, [letters[0]], budget=4096, forward_cost=0)
    narrow, s = trie_v(llama, ids, owners, n, [letters[0]], budget=8, forward_cost=0)
    np.testing.assert_allclose(narrow, wide, rtol=0, atol=1e-5)
    assert s.stats.tokens == w.stats.tokens  # the same tree, run in more, smaller pieces
    assert s.stats.forwards > 4 * w.stats.forwards
    assert s.stats.peak_stored < w.stats.peak_stored / 4
    # stored: at most about `budget` tokens per level (a chunk has at least one node)
    cfg = llama.model.config
    per_token = cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * cfg.head_dim * 4
    seg = np.diff(np.flatnonzero(np.r_[owners >= 0, True])).max()  # longest segment
    assert s.stats.peak_stored <= (n + 1) * max(8, seg) * per_token


# ---------------------------------------------------------------- the engine


@pytest.mark.parametrize("scorer", ["trie", "auto"])
def test_engine_uses_the_trie_and_score_shard_writes_the_same_values(llama, scorer, tmp_path):
    ids, owners, n, letters = prompt(llama)
    engine = Engine(llama.model, llama.mask_token_id, scorer=scorer)
    assert engine.trie is not None and engine.trie.active
    np.testing.assert_allclose(engine.values(ids, owners, n, [letters[0]]),
                               plain_v(llama, ids, owners, n, [letters[0]]), rtol=0, atol=1e-4)
    assert engine.trie.stats.prompts == 1
    assert llama.model.config._attn_implementation == "sdpa"  # restored after the trie forward
    ss = sample_set()
    a = score_shard(llama, ss, tmp_path / "plain.h5", progress=False, scorer="plain")
    b = score_shard(llama, ss, tmp_path / "trie.h5", progress=False, scorer=scorer)
    np.testing.assert_allclose(b.v.values, a.v.values, rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="scorer"):
        Engine(llama.model, llama.mask_token_id, scorer="fast")


def test_a_model_that_cannot_branch_falls_back_with_a_logged_reason(caplog):
    ids, owners = np.arange(5, 10), np.array([-1, 0, -1, 1, -1])
    plain = Engine(_Confident(margin=3.0), 0).values(ids, owners, 2, [3])
    with caplog.at_level(logging.WARNING, logger="ips.scoring.trie"):
        engine = Engine(_Confident(margin=3.0), 0, scorer="auto")
    assert not engine.trie.active and "not a transformers model" in engine.trie.reason
    assert "using the plain scorer" in caplog.text and "_Confident" in caplog.text
    np.testing.assert_array_equal(engine.values(ids, owners, 2, [3]), plain)
    with pytest.raises(ScoringError, match="cannot be evaluated as a trie"):
        Engine(_Confident(margin=3.0), 0, scorer="trie")


@pytest.mark.parametrize("where", ["one device", "cpu and disk"])
def test_a_dispatched_model_scores_the_undispatched_v(tiny_llama_dir, tmp_path, where):
    """A model dispatched by accelerate (hooks move activations, and weights offloaded to disk,
    between its devices) gives the undispatched model's v through the trie, under its mask
    token and under deletion: the trie's attention runs inside each layer's hook, and the
    output head is read through the head's hook (an offloaded weight is on "meta" outside
    it)."""
    from accelerate import dispatch_model

    whole = load_tiny(tiny_llama_dir)
    ids, owners, n, letters = prompt(whole)
    lm = load_tiny(tiny_llama_dir)
    second = "disk" if where == "cpu and disk" else "cpu"
    device_map = {"model.embed_tokens": "cpu", "model.rotary_emb": "cpu", "model.layers.0": "cpu",
                  "model.layers.1": second, "model.norm": "cpu", "lm_head": second}
    model = dispatch_model(lm.model, device_map=device_map, offload_dir=tmp_path, force_hooks=True)
    assert hasattr(model.lm_head, "_hf_hook")
    for baseline in (lm.baseline, Deletion()):
        expected = plain_v(whole, ids, owners, n, [letters[1]], baseline)
        engine = Engine(model, baseline, device=input_device(model), scorer="trie")
        v = engine.values(ids, owners, n, [letters[1]])
        np.testing.assert_allclose(v, expected, rtol=0, atol=1e-5)
        assert engine.trie.active and engine.trie.stats.prompts == 1
    if where == "cpu and disk":
        assert model.lm_head.weight.device.type == "meta"  # back on disk after the head


def test_bidirectional_gemma_falls_back(tiny_gemma_dir, caplog):
    lm = load_tiny(tiny_gemma_dir)
    lm.model.config.use_bidirectional_attention = True
    with caplog.at_level(logging.WARNING, logger="ips.scoring.trie"):
        engine = Engine(lm.model, lm.mask_token_id, scorer="auto")
    assert engine.trie.reason == "the model's attention is bidirectional"
    assert "bidirectional" in caplog.text


@pytest.mark.parametrize("scorer", ["trie", "auto"])
def test_the_first_prompt_is_checked_against_plain(gemma, monkeypatch, caplog, scorer):
    """A trie that computes something else (here: a corrupted attention) is caught."""
    ids, owners, n, letters = prompt(gemma)
    real = KeyValueTree.attend

    def corrupt(self, *a):
        out, w = real(self, *a)
        return out.flip(-1), w  # (a mere scale is undone by Gemma's post-attention norm)

    monkeypatch.setattr(KeyValueTree, "attend", corrupt)
    engine = Engine(gemma.model, gemma.mask_token_id, scorer=scorer)
    if scorer == "trie":
        with pytest.raises(ScoringError, match="differs from the plain scorer"):
            engine.values(ids, owners, n, [letters[0]])
    else:
        with caplog.at_level(logging.WARNING, logger="ips.scoring.trie"):
            v = engine.values(ids, owners, n, [letters[0]])
        assert "differs from the plain scorer" in caplog.text
        np.testing.assert_allclose(v, plain_v(gemma, ids, owners, n, [letters[0]]), atol=1e-6)
        assert not engine.trie.active  # plain from now on, logged once
        caplog.clear()
        engine.values(ids, owners, n, [letters[0]])
        assert "differs" not in caplog.text
    assert gemma.model.config._attn_implementation == "sdpa"


def test_a_model_that_bypasses_the_attention_interface_is_detected(llama, monkeypatch, caplog):
    """Layers that never call the trie's attention (their own code) make the trie refuse."""
    from transformers import AttentionInterface

    def elsewhere(module, query, key, value, mask, **kwargs):
        R, H, s, d = query.shape
        return query.new_zeros(R, s, H, d), None

    monkeypatch.setitem(AttentionInterface._global_mapping, trie.ATTENTION, elsewhere)
    monkeypatch.setattr(trie_scorer, "register", lambda: None)
    ids, owners, n, letters = prompt(llama)
    scorer = TrieScorer(llama.model, llama.mask_token_id, mode="auto")
    with caplog.at_level(logging.WARNING, logger="ips.scoring.trie"):
        assert scorer.values(ids, owners, n, [letters[0]]) is None
    assert "layers called the trie attention" in caplog.text and not scorer.active
    assert llama.model.config._attn_implementation == "sdpa"


def test_deletion_trie_on_gemma_within_its_window(gemma):
    """The tiny Gemma's rows within its 16-token window: deletion as the trie evaluates it
    equals the plain scorer's, for every budget, with fewer tokens run than the plain rows."""
    ids, _, _, letters = prompt(gemma)
    ids = ids[:12]
    owners = np.full(12, -1)
    for var, positions in ((0, [2, 3]), (1, [5]), (2, [7, 9]), (3, [10])):
        owners[positions] = var
    for target in ([letters[1]], [letters[2], letters[0], letters[3]]):
        assert not left_to_plain(gemma, ids, owners, target)
        expect = plain_v(gemma, ids, owners, 4, target, Deletion())
        assert np.ptp(expect) > 1e-3
        for budget, cost in ((1, 0), (4096, 0), (4096, 48)):
            if budget == 1 and len(target) > 1:
                continue
            got, scorer = trie_v(gemma, ids, owners, 4, target, Deletion(), budget=budget,
                                 forward_cost=cost)
            np.testing.assert_allclose(got, expect, rtol=0, atol=1e-4, err_msg=f"{budget}")
            assert scorer.stats.tokens < scorer.stats.plain_tokens

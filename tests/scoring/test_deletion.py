"""The deletion baseline: absent words' tokens are not fed, the others keep their positions.

Ground truth: one forward of each shortened prompt, built token by token, with the position
ids the kept tokens have in the full prompt, for every architecture class the project loads
(the tiny random models of each class, the tiny Llama and Gemma 3, and SmolLM2). The trie's
deletion is tested against the plain scorer's here and in test_trie.py.
"""

import numpy as np
import pytest
import torch

from builders import _Confident, encode, logp_of, sample_set
from ips.baselines import Deletion
from ips.models.loading import load_model
from ips.models.random_weights import CLASSES, build_random
from ips.models.testing import load_tiny
from ips.scoring.engine import Engine
from ips.scoring.log_odds import ScoringError

TOL = 1e-5  # log p, float32


def shortened_logp(model, seq, owners, mask, target):
    """log P(y* | x_S) from one forward of the prompt without the absent variables' tokens."""
    kept = [t for t, o in enumerate(owners) if o < 0 or (mask >> int(o)) & 1]
    ids = torch.tensor([[int(seq[t]) for t in kept] + list(target[:-1])])
    pos = torch.tensor([kept + list(range(len(seq), len(seq) + len(target) - 1))])
    with torch.no_grad():
        logits = model(input_ids=ids, position_ids=pos, attention_mask=torch.ones_like(ids),
                       use_cache=False).logits[0].double()
    logp = torch.log_softmax(logits[-len(target):], -1)
    return float(sum(logp[j, y] for j, y in enumerate(target)))


def a_prompt(lm):
    s = sample_set().samples[0]
    ids, owners = encode(lm, s.prompts["T4"])
    return ids, owners, len(s.variables)


def check_against_shortened(lm, target, masks=None, batch_tokens=64):
    ids, owners, n = a_prompt(lm)
    # a small batch: rows of several lengths, several batches per length
    v = Engine(lm.model, Deletion(), batch_tokens=batch_tokens).values(ids, owners, n, target,
                                                                       masks)
    chosen = range(1 << n) if masks is None else masks
    expect = [shortened_logp(lm.model, ids, owners, m, target) for m in chosen]
    np.testing.assert_allclose(logp_of(v), expect, rtol=0, atol=TOL)
    return ids, owners, n, v


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    root = tmp_path_factory.mktemp("classes")
    return {c: load_tiny(build_random(c, 0, root / c), c) for c in CLASSES}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_deletion_equals_the_shortened_prompt_in_every_class(classes, name):
    check_against_shortened(classes[name], [7])


@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_deletion_in_any_mask_order_and_with_a_longer_target(which, request):
    lm = request.getfixturevalue(which)
    check_against_shortened(lm, [7], masks=[9, 0, 15, 3, 6])
    check_against_shortened(lm, [7, 11, 5])


def test_deletion_on_smollm2(smollm2_spec, smollm2_dir):
    lm = load_model(smollm2_spec, smollm2_dir.parent)
    ids, owners, n, v = check_against_shortened(lm, lm.tokenizer.encode(" B"),
                                                batch_tokens=1024)
    # the kept tokens' positions matter: the same tokens at positions 0, 1, ... read otherwise
    m = 0b0101
    kept = [int(t) for t, o in zip(ids, owners) if o < 0 or (m >> int(o)) & 1]
    with torch.no_grad():
        contiguous = lm.model(torch.tensor([kept])).logits[0, -1].double()
    y = lm.tokenizer.encode(" B")[0]
    assert abs(float(torch.log_softmax(contiguous, -1)[y]) - logp_of(v[m])) > 1e-3
    trie = Engine(lm.model, Deletion(), scorer="trie")
    np.testing.assert_allclose(trie.values(ids, owners, n, [y]), v, rtol=0, atol=1e-4)
    assert trie.trie.stats.prompts == 1


def test_occlusion_deletes_one_variable_at_a_time(llama):
    ids, owners, n = a_prompt(llama)
    engine = Engine(llama.model, Deletion(), batch_tokens=64)
    full = (1 << n) - 1
    rows = engine.occlusion(ids, owners, n, [7])
    v = engine.values(ids, owners, n, [7], [full] + [full ^ (1 << i) for i in range(n)])
    np.testing.assert_allclose(rows, v, rtol=0, atol=1e-9)


def test_deletion_differs_from_replacement_only_where_a_word_is_absent(llama):
    ids, owners, n = a_prompt(llama)
    deleted = Engine(llama.model, Deletion()).values(ids, owners, n, [7])
    replaced = Engine(llama.model, llama.mask_token_id).values(ids, owners, n, [7])
    assert deleted[-1] == pytest.approx(replaced[-1], abs=1e-6)  # x_N: nothing absent
    assert np.abs(deleted[:-1] - replaced[:-1]).min() > 1e-4


def test_a_model_without_position_ids_is_refused_in_one_line():
    with pytest.raises(ScoringError, match=r"^_Confident takes no position ids.*mask token"):
        Engine(_Confident(1.0), Deletion())
    assert Engine(_Confident(1.0), 0).values(np.arange(5), np.array([-1, 0, 0, 1, -1]), 2,
                                             [3]).shape == (4,)


def test_the_trie_scores_deletion_as_the_plain_scorer(llama):
    ids, owners, n = a_prompt(llama)
    plain = Engine(llama.model, Deletion()).values(ids, owners, n, [7])
    engine = Engine(llama.model, Deletion(), scorer="trie")
    np.testing.assert_allclose(engine.values(ids, owners, n, [7]), plain, rtol=0, atol=1e-4)
    st = engine.trie.stats
    assert st.prompts == 1 and st.tokens < st.plain_tokens


class _Planted(torch.nn.Module):
    """A stand-in LM whose answer logit depends only on which content words (ids 10-15) the
    input holds: their weights plus an AND of the first two; nothing else is read."""

    WORDS = torch.arange(10, 16)

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0, 0.25, -0.75, 1.5]))

    def forward(self, input_ids, position_ids=None, attention_mask=None, logits_to_keep=1, **_):
        present = (input_ids[..., None] == self.WORDS).any(dim=1).double()  # [rows, words]
        score = present @ self.w.double() + 3.0 * present[:, 0] * present[:, 1]
        logits = torch.zeros(input_ids.shape[0], logits_to_keep, 40, dtype=torch.float64)
        logits[..., 3] = score[:, None]
        return type("Out", (), {"logits": logits})


def test_a_model_that_reads_only_which_words_are_present_has_one_game_under_every_baseline():
    """Replacement by the own mask (0) or by a word (2), and deletion: the same v for every
    mask, so the same interactions; v still moves with the words (the test is not vacuous)."""
    ids = np.array([5, 10, 6, 11, 11, 7, 12, 13, 8, 14, 15, 9])
    owners = np.array([-1, 0, -1, 1, 1, -1, 2, 2, -1, 3, 4, -1])
    games = [Engine(_Planted(), mask).values(ids, owners, 5, [3]) for mask in (0, 2, Deletion())]
    np.testing.assert_array_equal(games[0], games[1])
    np.testing.assert_array_equal(games[0], games[2])
    assert np.ptp(games[0]) > 1

"""`masking: word`, Appendix A's form: an absent word reads as one mask token after its space.

Ground truth: the masked text itself. Decoding each scored row gives the prompt with every
absent word replaced by the mask token's text (its space kept), on the byte-level BPE of
the tiny Llama and of SmolLM2 and the "▁" vocabulary of the tiny Gemma; v is one forward
of each such row at positions 0, 1, ..., and hand-built slots for a toy prompt.
"""

import numpy as np
import pytest
import torch

from builders import logp_of, sample_set
from ips.baselines import Deletion
from ips.models.loading import load_model
from ips.scoring.engine import Answers, Engine, encode_prompt, space_token
from ips.scoring.log_odds import (
    ScoringError,
    kept_tokens,
    shown_inputs,
    token_owners,
    word_slots,
    word_spaces,
)

TOL = 1e-5  # log p, float32


def test_the_slots_of_a_toy_prompt_read_as_one_mask_per_word():
    """Tokens 2, 3 are word 0, which carries its space; token 5 is word 1, which does not."""
    seq, owners = np.array([1, 2, 3, 4, 5, 6]), np.array([-1, 0, 0, -1, 1, -1])
    slots, own, absent = word_slots(seq, owners, 2, mask_id=9, space_id=8,
                                    spaced=np.array([True, False]))
    assert slots.tolist() == [1, 8, 9, 2, 3, 4, 9, 5, 6]
    assert own.tolist() == [-1, 0, 0, 0, 0, -1, 1, 1, -1]
    rows = {m: shown_inputs(slots, absent, kept_tokens(own, 2, [m]))["input_ids"][0].tolist()
            for m in range(4)}
    assert rows == {0: [1, 8, 9, 4, 9, 6], 1: [1, 2, 3, 4, 9, 6], 2: [1, 8, 9, 4, 5, 6],
                    3: [1, 2, 3, 4, 5, 6]}


@pytest.mark.parametrize("offsets, spaced", [
    ([(0, 2), (2, 5), (5, 7), (7, 13), (13, 18)], True),  # " green" holds its space
    ([(0, 2), (3, 5), (6, 7), (8, 13), (14, 18)], True),  # trimmed: nobody holds it
    ([(0, 2), (2, 5), (5, 7), (7, 8), (8, 13), (13, 18)], False),  # a background space token
])
def test_a_word_carries_its_space_unless_a_background_token_holds_it(offsets, spaced):
    text = "He is a green hand"
    spans = [(8, 13)]
    owners = token_owners(offsets, spans)
    assert word_spaces(text, offsets, spans, owners).tolist() == [spaced]
    assert word_spaces("green hand", [(0, 5), (5, 10)], [(0, 5)],
                       np.array([0, -1])).tolist() == [False]  # nothing before it


def masked_text(prompt, masks_present: int, mask_text: str) -> str:
    """The prompt with each absent variable's characters replaced by the mask's text."""
    text, out, at = prompt.text, [], 0
    for i, (a, b) in enumerate(prompt.spans):
        out.append(text[at:a])
        out.append(text[a:b] if (masks_present >> i) & 1 else mask_text)
        at = b
    return "".join(out) + text[at:]


def check_rows_and_values(lm, target, tol=TOL, forwards=None, batch_tokens=64):
    """Each row decodes to the masked text; v equals one forward of each row (of the masks
    `forwards`, default all) within `tol`."""
    s = sample_set().samples[0]
    p = s.prompts["T4"]
    n = len(s.variables)
    ids, owners, spaced, _, _ = encode_prompt(Answers(lm.tokenizer), s.item, p)
    space = space_token(lm.tokenizer)
    engine = Engine(lm.model, lm.mask_token_id, batch_tokens, masking="word", space_id=space)
    v = engine.values(ids, owners, n, target, spaced=spaced)
    tail = len(target) - 1
    slots, own, absent = word_slots(np.concatenate([ids, np.asarray(target[:-1], int)]),
                                    np.concatenate([owners, np.full(tail, -1)]), n,
                                    lm.mask_token_id, space, spaced)
    mask_text = lm.tokenizer.decode([lm.mask_token_id])
    for m in range(1 << n):
        row = shown_inputs(slots, absent, kept_tokens(own, n, [m]))["input_ids"][0]
        prompt_row = row[:len(row) - tail]
        if prompt_row[0] == lm.tokenizer.bos_token_id:  # Gemma's BOS opens every prompt
            prompt_row = prompt_row[1:]
        assert lm.tokenizer.decode(prompt_row) == masked_text(p, m, mask_text), m
        if forwards is not None and m not in forwards:
            continue
        with torch.no_grad():
            logits = lm.model(torch.tensor(row[None, :])).logits[0, -len(target):].double()
        logp = torch.log_softmax(logits, -1)
        expect = float(sum(logp[j, y] for j, y in enumerate(target)))
        assert logp_of(v[m]) == pytest.approx(expect, abs=tol), m
    return ids, owners, spaced, n, v


@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_each_row_is_the_masked_text_and_v_its_forward(which, request):
    lm = request.getfixturevalue(which)
    check_rows_and_values(lm, [7])
    check_rows_and_values(lm, [7, 11, 5])


def test_on_smollm2(smollm2_spec, smollm2_dir):
    lm = load_model(smollm2_spec, smollm2_dir.parent)
    # 30 layers in float32: batched rows differ from single ones by ~1e-5, as in the trie's tests
    ids, owners, spaced, n, v = check_rows_and_values(lm, lm.tokenizer.encode(" B"), tol=1e-4,
                                                      forwards=(0, 5, 10, 15), batch_tokens=1024)
    assert spaced.all()  # its words carry their space
    # x_N has no mask: the token masking's unmasked prompt; masked rows read otherwise
    tokens = Engine(lm.model, lm.mask_token_id).values(ids, owners, n, lm.tokenizer.encode(" B"))
    assert v[-1] == pytest.approx(tokens[-1], abs=1e-5)
    assert np.abs(v[:-1] - tokens[:-1]).max() > 1e-3


def test_occlusion_masks_one_word_at_a_time(llama):
    s = sample_set().samples[0]
    ids, owners, spaced, _, _ = encode_prompt(Answers(llama.tokenizer), s.item, s.prompts["T1"])
    n = len(s.variables)
    engine = Engine(llama.model, llama.mask_token_id, masking="word",
                    space_id=space_token(llama.tokenizer))
    full = (1 << n) - 1
    rows = engine.occlusion(ids, owners, n, [7], spaced)
    v = engine.values(ids, owners, n, [7], [full] + [full ^ (1 << i) for i in range(n)], spaced)
    np.testing.assert_allclose(rows, v, rtol=0, atol=1e-9)


def test_word_masking_is_scored_plainly_and_refused_with_deletion(llama):
    space = space_token(llama.tokenizer)
    assert Engine(llama.model, llama.mask_token_id, scorer="auto", masking="word",
                  space_id=space).trie is None
    with pytest.raises(ScoringError, match=r"^masking word reads .* use scorer plain or auto$"):
        Engine(llama.model, llama.mask_token_id, scorer="trie", masking="word", space_id=space)
    with pytest.raises(ScoringError, match=r"^masking word .* the baseline .delete. has none"):
        Engine(llama.model, Deletion(), masking="word", space_id=space)

"""v(x_S) on masked prompts, checked against direct single-prompt computations."""

import contextlib

import numpy as np
import pytest
import torch
import xarray as xr

from builders import ITEMS, _Confident, encode, sample_set
from ips.models.entries import ModelSpec
from ips.models.loading import load_model
from ips.models.testing import TINY_ATTRS, load_tiny
from ips.prompts.items import InstructionItem
from ips.prompts.templates import load_templates, render
from ips.scoring.engine import Answers, Engine, letter_tokens
from ips.scoring.log_odds import (
    NonFiniteError,
    ScoringError,
    finite_values,
    half_products,
    log_odds,
    masked_inputs,
    token_owners,
    v_from_logits,
)
from ips.scoring.shard import score_shard


def direct_v(lm, text, spans, keep, target):
    """v(x_S) for one mask, the slow way: one prompt, full logits, no batching."""
    enc = lm.tokenizer(text, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    for t, (a, b) in enumerate(enc["offset_mapping"]):
        overlaps = [max(0, min(b, e) - max(a, s)) for s, e in spans]
        if max(overlaps, default=0) > 0 and not keep[int(np.argmax(overlaps))]:
            ids[t] = lm.mask_token_id
    logp = 0.0
    for j, y in enumerate(target):
        with torch.no_grad():
            logits = lm.model(torch.tensor([ids + list(target[:j])])).logits[0, -1].double()
        logp += torch.log_softmax(logits, -1)[y].item()
    return float(log_odds(np.array(logp)))


# ---------------------------------------------------------------- token ownership


def test_token_owners_edge_cases():
    # "  The X-Files, don't" with variables "X-Files" (6..13) and "don't" (15..20)
    spans = [(6, 13), (15, 20)]
    offsets = [
        (0, 0),  # BOS: no characters
        (0, 5),  # "  The": background
        (5, 7),  # " X": leading space + first letter -> variable 0
        (7, 8),  # "-"
        (8, 13),  # "Files"
        (13, 14),  # ",": punctuation after a variable stays background
        (14, 17),  # " do": leading space
        (17, 20),  # "n't"
    ]
    assert token_owners(offsets, spans).tolist() == [-1, -1, 0, 0, 0, -1, 1, 1]
    # a token straddling two variables goes to the one it overlaps most; ties to the first
    assert token_owners([(0, 4), (4, 9)], [(0, 3), (3, 9)]).tolist() == [0, 1]
    assert token_owners([(2, 6)], [(0, 4), (4, 8)]).tolist() == [0]
    assert token_owners([(0, 3)], []).tolist() == [-1]


@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_masking_replaces_exactly_each_variables_tokens(which, request):
    lm = request.getfixturevalue(which)
    ss = sample_set()
    for s in ss.samples:
        p = s.prompts["T1"]
        ids, owners = encode(lm, p)
        n = len(s.variables)
        # every variable owns a token, and its tokens spell the variable
        for i, v in enumerate(s.variables):
            toks = np.flatnonzero(owners == i)
            assert len(toks) >= 1
            assert v.text in lm.tokenizer.decode(ids[toks])
        rows = masked_inputs(ids, owners, n, lm.mask_token_id)
        assert rows.shape == (1 << n, len(ids))
        for m, row in enumerate(rows):
            dropped = [i for i in range(n) if not (m >> i) & 1]
            expect = np.isin(owners, dropped)
            assert np.array_equal(row != ids, expect & (ids != lm.mask_token_id))
            assert np.all(row[expect] == lm.mask_token_id)


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_values_match_direct_computation(which, request):
    lm = request.getfixturevalue(which)
    s = sample_set().samples[0]
    p = s.prompts["T4"]
    ids, owners = encode(lm, p)
    n = len(s.variables)
    letters, _ = letter_tokens(lm.tokenizer, p.cue, "ABCD")
    for target in ([letters[0]], [letters[2], letters[1], letters[3]]):
        v = Engine(lm.model, lm.mask_token_id, batch_tokens=4096).values(ids, owners, n, target)
        direct = [direct_v(lm, p.text, p.spans, [(m >> i) & 1 for i in range(n)], target)
                  for m in range(1 << n)]
        # float32 forwards of a batch and of one row round differently: 1e-6 or a few ulps
        np.testing.assert_allclose(v, direct, rtol=1e-7, atol=1e-6)
        assert np.ptp(v) > 1e-3  # masking moves the output: the comparison is not vacuous


def test_values_are_exact_in_float64(tiny_llama_dir):
    lm = load_tiny(tiny_llama_dir)
    lm.model.double()  # without float32 rounding, batching must not change a single digit
    s = sample_set().samples[2]
    p = s.prompts["T1"]
    ids, owners = encode(lm, p)
    n = len(s.variables)
    v = Engine(lm.model, lm.mask_token_id, batch_tokens=4096).values(ids, owners, n, [5, 9])
    direct = [direct_v(lm, p.text, p.spans, [(m >> i) & 1 for i in range(n)], [5, 9])
              for m in range(1 << n)]
    np.testing.assert_allclose(v, direct, rtol=0, atol=1e-10)


def test_batch_size_does_not_change_values(llama):
    s = sample_set().samples[1]
    p = s.prompts["T1"]
    ids, owners = encode(llama, p)
    n = len(s.variables)
    results = [Engine(llama.model, llama.mask_token_id, batch_tokens=bt).values(ids, owners, n, [7])
               for bt in (1, len(ids) * 3, 10**6)]
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], rtol=0, atol=1e-6)


def test_log_odds_is_finite_for_extreme_probabilities():
    logp = np.array([-1e-300, -1e-12, np.log(0.5), -700.0])
    v = log_odds(logp)
    assert np.all(np.isfinite(v))
    assert v[2] == pytest.approx(0.0)
    assert v[1] == pytest.approx(np.log(1 - 1e-12) - np.log(1e-12), rel=1e-9)
    assert v[3] == pytest.approx(-700.0)


def test_letters_need_single_tokens(llama):
    with pytest.raises(ScoringError, match="choice_text"):
        letter_tokens(llama.tokenizer, "Answer:", ["Zebra", "Quokka"])


# ---------------------------------------------------------------- the unmasked prompt


def direct_unmasked(lm, ids, letters, options):
    """What `Engine.unmasked` returns, the slow way: a full forward of the prompt, and one of
    the prompt followed by each option's whole text (log_softmax, summed over the option)."""
    with torch.no_grad():
        out = lm.model(torch.as_tensor(ids)[None], output_hidden_states=True)
        last = out.logits[0, -1].double()
        logp = []
        for o in options:
            logits = lm.model(torch.as_tensor([*ids, *o])[None]).logits[0].double()
            lp = torch.log_softmax(logits[len(ids) - 1:-1], -1)
            logp.append(float(lp[torch.arange(len(o)), torch.as_tensor(o)].sum()))
    return (int(last.argmax()), last[letters].numpy(), np.array(logp),
            out.hidden_states[-1][0, -1].numpy())


class _NoCache(torch.nn.Module):
    """A model behind a plain module, which `Engine` cannot give a transformers cache."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    def forward(self, input_ids, **kwargs):
        assert "cache" not in kwargs
        return self.inner(input_ids=input_ids, **kwargs)


def unmasked_cases(lm):
    """(ids, letters, options) of a 0-shot and a 2-shot prompt (a long shared prefix), with
    the items' own option texts, options of 1 to 15 tokens (padding) and of one token."""
    answers = Answers(lm.tokenizer)
    ss = sample_set(ITEMS, names=("T1",), shots=(2,))
    cases = []
    for name in ("T1", "T1-2shot"):
        p = ss.samples[3].prompts[name]
        ids, _ = encode(lm, p)
        letters, _ = letter_tokens(lm.tokenizer, p.cue, "ABCD")
        own = answers.options(p.cue, ss.samples[3].item.choices)
        mixed = answers.options(p.cue, ["A", "a ruler", "carbon dioxide from the air and water",
                                        "Quokka zebra"])
        cases += [(ids, letters, own), (ids, letters, mixed), (ids, letters, [[5], [9]])]
    return cases


@pytest.mark.parametrize("scorer", ["plain", "trie", "auto"])
@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_unmasked_matches_full_forwards_of_prompt_and_options(which, scorer, request):
    """One prompt forward whose keys/values the options continue, in one batch padded to the
    longest option, gives what full forwards of prompt + option give (Gemma's prompts are
    longer than its 16-token sliding window)."""
    torch.manual_seed(0)
    lm = request.getfixturevalue(which)
    cases = unmasked_cases(lm)
    expected = [direct_unmasked(lm, *case) for case in cases]
    engine = Engine(lm.model, lm.mask_token_id, scorer=scorer)
    assert engine.cache_prompt
    shapes = []
    hook = lm.model.register_forward_pre_hook(
        lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    try:
        for (ids, letters, options), (greedy, letter_logit, option_logp, hidden) in zip(
                cases, expected):
            shapes.clear()
            un = engine.unmasked(ids, letters, options)
            # the prompt once, then the tokens of the options longer than one token
            longer = [len(o) - 1 for o in options if len(o) > 1]
            assert shapes == [(1, len(ids))] + ([(len(longer), max(longer))] if longer else [])
            assert un.greedy == greedy
            np.testing.assert_allclose(un.letter_logit, letter_logit, rtol=0, atol=1e-4)
            np.testing.assert_allclose(un.option_logp, option_logp, rtol=0, atol=1e-4)
            np.testing.assert_allclose(un.hidden, hidden, rtol=0, atol=1e-4)
    finally:
        hook.remove()
    assert len({len(o) for o in cases[1][2]}) == 4  # four lengths, padded to the longest
    assert len(cases[3][0]) > 100  # the 2-shot prompt: beyond Gemma's 16-token window
    assert np.ptp(expected[1][2]) > 1.0  # the options' log-probabilities differ: not vacuous


@pytest.mark.parametrize("which", ["llama", "gemma"])
def test_unmasked_without_a_cache_runs_the_prompt_with_each_option(which, request):
    """A model that is not a transformers model keeps no cache: each row of the options'
    forward starts with the prompt, and the results are those of the cache path."""
    torch.manual_seed(0)
    lm = request.getfixturevalue(which)
    engine = Engine(_NoCache(lm.model), lm.mask_token_id, scorer="auto")
    assert not engine.cache_prompt and not engine.trie.active
    cached = Engine(lm.model, lm.mask_token_id)
    for ids, letters, options in unmasked_cases(lm):
        un, ref = engine.unmasked(ids, letters, options), cached.unmasked(ids, letters, options)
        greedy, _, option_logp, _ = direct_unmasked(lm, ids, letters, options)
        assert un.greedy == ref.greedy == greedy
        np.testing.assert_allclose(un.option_logp, option_logp, rtol=0, atol=1e-4)
        np.testing.assert_allclose(un.option_logp, ref.option_logp, rtol=0, atol=1e-4)
        np.testing.assert_allclose(un.letter_logit, ref.letter_logit, rtol=0, atol=1e-4)
        np.testing.assert_allclose(un.hidden, ref.hidden, rtol=0, atol=1e-4)
    assert engine.unmasked(ids).option_logp.shape == (0,)


# ---------------------------------------------------------------- shards, files, resume


def test_score_shard_writes_a_complete_values_file(llama, tmp_path):
    ss = sample_set(shots=(1,))
    out = tmp_path / "v.h5"
    score_shard(llama, ss, out, shard=0, shard_size=3, batch_tokens=512, progress=False,
                scorer="plain")
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert list(ds.sample.values) == ["i0", "i1", "i2"]
    assert list(ds.condition.values) == ["T1", "T4", "T1-1shot", "T4-1shot"]
    n = ds.n_vars.values
    for i in range(3):
        v = ds.v.values[i]
        assert np.all(np.isfinite(v[:, : 1 << n[i]])) and np.all(np.isnan(v[:, 1 << n[i]:]))
    assert ds.attrs["mask_token"] == "<unk>" and ds.attrs["mask_source"] == "unk"
    assert ds.attrs["target"] == "letter"
    assert set(ds.pred.values.ravel()) <= {0, 1, 2, 3}
    assert np.array_equal(ds.pred.values, ds.letter_logit.values.argmax(-1))
    assert np.array_equal(ds.pred_text.values, ds.option_logp.values.argmax(-1))
    assert np.all(ds.option_logp.values < 0)
    # the unmasked row of v is the log-odds of the gold letter, computed the slow way
    for i in range(3):
        s = ss.samples[i]
        for j, c in enumerate(ss.conditions):
            p = s.prompts[c.name]
            y = int(ds.letter_token.values[i, j, ds.gold.values[i]])
            assert ds.target_ids.values[i, j, 0] == y and ds.target_form.values[i, j] == "space"
            expect = direct_v(llama, p.text, p.spans, [1] * n[i], [y])
            assert ds.v.values[i, j, (1 << n[i]) - 1] == pytest.approx(expect, abs=1e-6)
    assert ds.hidden.shape[:2] == (3, 4) and ds.hidden.shape[2] == llama.model.config.hidden_size
    assert ds.variable.values[0, 0] == ss.samples[0].variables[0].text
    assert not (tmp_path / "v.h5.partial").exists()
    ds.close()


def test_resume_after_a_killed_run_gives_identical_output(llama, tmp_path, monkeypatch):
    import ips.scoring.shard as scoring

    ss = sample_set()
    whole = tmp_path / "whole.h5"
    score_shard(llama, ss, whole, progress=False, scorer="plain")

    out = tmp_path / "resumed.h5"
    real = scoring.score_sample
    calls = []

    def dies_after_two(*a, **k):
        if len(calls) == 2:
            raise KeyboardInterrupt  # the job is killed while scoring the third sample
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(scoring, "score_sample", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        score_shard(llama, ss, out, progress=False, scorer="plain")
    assert not out.exists() and len(list((tmp_path / "resumed.h5.partial").glob("*.npz"))) == 2

    calls.clear()
    monkeypatch.setattr(scoring, "score_sample", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    score_shard(llama, ss, out, progress=False, scorer="plain")
    assert len(calls) == 2  # only the two unfinished samples were scored again
    a, b = (xr.open_dataset(p, engine="h5netcdf") for p in (whole, out))
    for name in ("v", "pred", "option_logp", "hidden", "greedy_token", "span"):
        assert np.array_equal(a[name].values, b[name].values, equal_nan=True), name
    a.close(), b.close()


def test_partial_results_of_other_inputs_are_discarded(llama, tmp_path):
    ss = sample_set()
    out = tmp_path / "v.h5"
    partial = tmp_path / "v.h5.partial"
    partial.mkdir()
    (partial / "fingerprint.json").write_text('{"other": 1}')
    np.savez(partial / "000000.npz", v=np.zeros((2, 2)))
    score_shard(llama, ss, out, progress=False, scorer="plain")
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert np.all(np.isfinite(ds.v.values[0, :, : 1 << int(ds.n_vars[0])]))
    ds.close()


def test_choice_text_target(llama, tmp_path):
    ss = sample_set(items=ITEMS[:2], names=("T1", "T5"))
    ds = score_shard(llama, ss, tmp_path / "v.h5", target="choice_text", progress=False,
                     scorer="plain")
    assert ds.attrs["target"] == "choice_text"
    assert np.all(ds.target_ids.values[0, :, 0] >= 0)
    s = ss.samples[0]
    p = s.prompts["T1"]
    gold = llama.tokenizer.encode(p.cue + " " + s.item.choices[0], add_special_tokens=False)
    cue = llama.tokenizer.encode(p.cue, add_special_tokens=False)
    target = gold[len(cue):]
    n = len(s.variables)
    full = (1 << n) - 1
    expect = direct_v(llama, p.text, p.spans, [1] * n, target)
    assert ds.v.values[0, 0, full] == pytest.approx(expect, abs=1e-6)
    with pytest.raises(Exception, match="does not apply to mcq"):
        score_shard(llama, ss, tmp_path / "w.h5", target="response", progress=False, scorer="plain")


def test_instruction_items_score_the_reference_response(gemma, tmp_path):
    items = [InstructionItem("d0", "Explain how a bill becomes a law in the United States.", "",
                             "Congress passes it and the President signs it.", "open_qa"),
             InstructionItem("d1", "Give three reasons why people should exercise every day.", "",
                             "Health, mood and sleep.", "brainstorming")]
    ss = sample_set(items=items, names=("A1", "A3"), kind="instruction")
    ds = score_shard(gemma, ss, tmp_path / "v.h5", progress=False, scorer="plain")
    assert ds.attrs["target"] == "response"
    assert np.all(ds.pred.values == -1) and np.all(ds.gold.values == -1)
    first = gemma.tokenizer.encode(ss.samples[0].prompts["A1"].cue + items[0].response,
                                   add_special_tokens=False)
    assert ds.target_ids.values[0, 0, 0] in first
    greedy = score_shard(gemma, ss, tmp_path / "g.h5", target="greedy", progress=False,
                         scorer="plain")
    assert np.array_equal(greedy.target_ids.values[..., 0], greedy.greedy_token.values)


# ---------------------------------------------------------------- the real SmolLM2


def test_smollm2_scores_an_arc_item_reproducibly(smollm2_spec, smollm2_cache, tmp_path):
    from ips.prompts.datasets import load_items

    lm = load_model(smollm2_spec, cache_dir=smollm2_cache)
    assert (lm.mask_token, lm.mask_token_id, lm.mask_source) == ("<|endoftext|>", 0, "unk")
    item = next(i for i in load_items("arc", {"format": "arc", "subset": "ARC-Easy"}).items
                if i.id == "MCAS_2000_4_6")
    ss = sample_set(items=[item], names=("T1", "T2"), n_max=10)
    ss.samples[0].variables[:] = ss.samples[0].variables[:4]  # 16 masks keep the test short
    ts = load_templates()
    ss.samples[0].prompts.update(
        {c.name: render(ts[c.template], item, ss.samples[0].variables) for c in ss.conditions})
    letters, form = letter_tokens(lm.tokenizer, "Answer:", "ABCD")
    assert (letters, form) == ([330, 389, 340, 422], "space")
    first = score_shard(lm, ss, tmp_path / "a.h5", progress=False, scorer="plain")
    again = score_shard(lm, ss, tmp_path / "b.h5", progress=False, scorer="plain")
    v = first.v.values[0, :, :16]
    assert np.all(np.isfinite(v)) and np.ptp(v) > 0.01
    assert np.array_equal(v, again.v.values[0, :, :16])
    assert int(first.target_ids.values[0, 0, 0]) == letters[item.gold]
    assert first.letter_token.values[0, 0].tolist() == letters


def overflowing(directory, dtype: str):
    """The tiny Llama in `dtype` with its output weights scaled by 3e4: logits of ~1e5, beyond
    float16's 65504 (its weights, up to ~2.4e4, still fit)."""
    lm = load_model(ModelSpec.from_config("big-logits", {"source": {"path": str(directory)},
                                                         **TINY_ATTRS, "dtype": dtype}))
    with torch.no_grad():
        lm.model.lm_head.weight.mul_(3e4)
    return lm


@pytest.mark.parametrize("scorer", ["plain", "auto"])
def test_overflow_in_float16_names_the_model_and_the_dtype_to_use(tiny_llama_dir, tmp_path,
                                                                  scorer, caplog):
    ss = sample_set(ITEMS[:1], n_max=2)
    wide = overflowing(tiny_llama_dir, "float32")
    p = ss.samples[0].prompts["T1"]
    with torch.no_grad():
        logits = wide.model(torch.as_tensor(encode(wide, p)[0])[None]).logits
    assert logits.abs().max() > 65504  # the float32 model's logits are beyond float16's range
    for dtype in ("float32", "bfloat16"):
        ds = score_shard(overflowing(tiny_llama_dir, dtype), ss, tmp_path / f"{dtype}.h5",
                         progress=False, scorer=scorer)
        assert np.isfinite(ds.v.values).all()
    half = overflowing(tiny_llama_dir, "float16")
    with pytest.raises(NonFiniteError) as err:
        score_shard(half, ss, tmp_path / "float16.h5", progress=False, scorer=scorer)
    msg = str(err.value)
    assert "plain scorer" not in caplog.text  # "auto": the trie raised it, it did not fall back
    assert msg.startswith(f"model big-logits: item {ss.samples[0].item.id!r}, condition T1: v is "
                          "not finite (inf/nan) in float16 (masks [0, ")
    assert msg.endswith("; set `dtype: bfloat16` or `float32` in its entry") and "\n" not in msg
    # the kernel's check alone, for each precision
    v = np.array([0.5, np.nan, np.inf])
    with pytest.raises(NonFiniteError, match=r"in bfloat16 \(masks \[1, 2\]\); set `dtype: float32`"):
        finite_values(v, torch.bfloat16)
    with pytest.raises(NonFiniteError, match=r"in float32 .*P\(y\*\) is 1 in float64"):
        finite_values(v, torch.float32)
    assert finite_values(v[:1], torch.float16) is not None


def test_single_token_log_odds_stay_finite_when_p_rounds_to_one():
    engine = Engine(_Confident(margin=100.0), 0)
    ids, owners = np.arange(5, 10), np.array([-1, 0, -1, 1, -1])
    v = engine.values(ids, owners, 2, [3])
    # v = l_y − logsumexp of the 49 others = 100 − log 49, although 1 − p is below 1e-43
    np.testing.assert_allclose(v, 100.0 - np.log(49.0), rtol=1e-12)
    assert np.exp(-100.0) * 49 < np.finfo(float).eps  # log p alone would round to 0


def test_bare_letters_when_spaced_ones_are_not_single_tokens(llama):
    # after "Answer::" this vocabulary may split " A"; either form must decode to the letter
    ids, form = letter_tokens(llama.tokenizer, "Answer:", "ABCD")
    assert form in ("space", "bare") and len(set(ids)) == 4
    for letter, i in zip("ABCD", ids):
        assert llama.tokenizer.decode([i]).strip() == letter

    class Spaceless:  # a tokenizer that never merges a space into the next letter
        def encode(self, text, add_special_tokens=False):
            return [ord(ch) for ch in text]

    assert letter_tokens(Spaceless(), "Answer:", "ABCD") == ([65, 66, 67, 68], "bare")


def test_v_from_logits_against_a_direct_definition():
    """v from logits against numpy sums of exponentials: one token, l_y − log Σ_{j≠y} e^{l_j};
    several, log p = Σ_j log softmax(l_j)[y_j] and v = log p − log(1 − p)."""
    torch.manual_seed(0)
    logits = torch.randn(6, 3, 40, dtype=torch.float64) * 4
    logits[0, -1, 7] = 60.0  # p = 1 − 1e-24: log(1 − p) from 1 − p would be −inf
    x = logits.numpy()
    got = v_from_logits(logits.clone(), [7])
    last = x[:, -1]
    others = np.delete(last, 7, axis=1)
    top = others.max(axis=1)
    want = last[:, 7] - (top + np.log(np.exp(others - top[:, None]).sum(axis=1)))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert got[0] > 30 and np.all(np.isfinite(got))  # p ≈ 1, yet v is finite
    target = [1, 2, 7]
    z = np.exp(x - x.max(axis=2, keepdims=True))
    logp = np.log(z / z.sum(axis=2, keepdims=True))[:, np.arange(3), target].sum(axis=1)
    want = logp - np.log(-np.expm1(logp))
    np.testing.assert_allclose(v_from_logits(logits.clone(), target), want, rtol=1e-10)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_products_on_the_cpu_are_float32_products_rounded(dtype):
    """Inside `half_products` a half matrix product is the float32 product of the same half
    inputs, rounded once (by hand: upcast, multiply, round); other operations and float32
    inputs compute as they are."""
    gen = torch.Generator().manual_seed(0)
    x, w = (torch.randn(7, 33, generator=gen).to(dtype), torch.randn(5, 33, generator=gen).to(dtype))
    by_hand = (x.float() @ w.float().T).to(dtype)
    with half_products(dtype, torch.device("cpu")):
        lin = torch.nn.functional.linear(x, w)
        mat = x @ w.T
        out = torch.empty(7, 5, dtype=dtype)
        into = torch.matmul(x, w.T, out=out)
        s = x + 1  # not a product: half arithmetic
        f32 = x.float() @ w.float().T
    assert lin.dtype == mat.dtype == dtype and f32.dtype == torch.float32
    assert torch.equal(lin, by_hand) and torch.equal(mat, by_hand)
    assert into is out and torch.equal(out, by_hand)
    assert torch.equal(s, x + 1) and torch.equal(f32, x.float() @ w.float().T)
    assert isinstance(half_products(torch.float32, torch.device("cpu")), contextlib.nullcontext)
    assert isinstance(half_products(dtype, torch.device("meta")), contextlib.nullcontext)


def test_a_half_model_on_the_cpu_scores_with_the_rounding_of_half_precision(tiny_llama_dir):
    """The tiny Llama in bfloat16, scored through `Engine` (products in float32, rounded):
    v moves away from float32 by as much as torch's own bfloat16 arithmetic moves it, not
    by zero and not by more (a precision null measures that rounding)."""
    s = sample_set(ITEMS[:1], n_max=3).samples[0]
    p = s.prompts["T1"]

    def v(lm, emulate=True):
        ids, owners = encode(lm, p)
        target = letter_tokens(lm.tokenizer, p.cue, "ABCD")[0][:1]
        engine = Engine(lm.model, lm.mask_token_id, scorer="plain")
        if emulate:
            return engine.values(ids, owners, len(s.variables), target)
        return Engine.values.__wrapped__(engine, ids, owners, len(s.variables), target)

    f32 = v(load_tiny(tiny_llama_dir))
    half = load_model(ModelSpec.from_config("tiny-bf16", {"source": {"path": str(tiny_llama_dir)},
                                                          **TINY_ATTRS, "dtype": "bfloat16"}))
    emulated, native = np.abs(v(half) - f32).max(), np.abs(v(half, emulate=False) - f32).max()
    assert 0 < emulated < 4 * native and 0 < native < 4 * emulated


def test_a_greedy_nul_token_is_stored_escaped(tmp_path):
    """A byte-level model may predict the token of byte 0x00 (a random OLMo 2 of the
    miniature did); HDF5 strings cannot hold a NUL, so it is stored as the text \\x00."""
    from ips.formats.hdf5 import write_dataset
    from ips.formats.values import storable_text

    ds = xr.Dataset({"greedy_text": (("s",), np.array([storable_text("a\x00b"), "c"], dtype=object))})
    write_dataset(ds, tmp_path / "v.h5")
    with xr.open_dataset(tmp_path / "v.h5", engine="h5netcdf") as back:
        assert back["greedy_text"].values.tolist() == ["a\\x00b", "c"]


def test_progress_counts_masked_prompts_with_rate_and_time_left(llama, tmp_path, capsys):
    """On a terminal the bar counts masked prompts (conditions × masks of every sample), so
    it shows their rate and the time left; a resumed run starts at what is done."""
    ss = sample_set()
    total = sum(len(ss.conditions) << len(s.variables) for s in ss.samples)
    score_shard(llama, ss, tmp_path / "v.h5", progress=True, scorer="plain")
    err = capsys.readouterr().err
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    assert "100%" in last and f"{total}/{total}" in last and "masked prompts/s" in last
    assert "<" in last  # tqdm's [elapsed<remaining]


def test_an_entry_of_its_source_alone_records_the_checkpoints_attributes(tiny_llama_dir,
                                                                        tmp_path):
    """The values file of a model whose entry is its source alone records family, series and
    type unknown, and the architecture and counts of its checkpoint."""
    import json

    from ips.models.entries import ModelSpec
    from ips.models.loading import load_model

    loaded = load_model(ModelSpec.from_config("bare", {"source": {"path": str(tiny_llama_dir)}}))
    ds = score_shard(loaded, sample_set(), tmp_path / "v.h5", progress=False, scorer="plain")
    total = sum({p.data_ptr(): p.numel() for p in loaded.model.state_dict().values()}.values())
    assert json.loads(ds.attrs["model_attributes"]) == {
        "family": "unknown", "series": "unknown", "type": "unknown", "architecture": "dense",
        "params": total, "active_params": total}

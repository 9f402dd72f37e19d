"""Across baselines: robust verdicts and how two baselines' games agree, against hand-made
tables, brute-force sets and games whose answer is known."""

import math

import numpy as np
import pytest

from ips.analysis import metrics
from ips.comparisons.baselines import (
    agreement,
    changed_interactions,
    jaccard,
    robust_claims,
)
from ips.errors import InputError
from ips.formats.shards import Merged

TAU = 0.1


def row(claim, scope, verdict, weights="trained", raw=None):
    return {"claim": claim, "scope": scope, "weights": weights, "paper": f"{claim} holds",
            "verdict": verdict, "raw_verdict": raw or verdict, "estimate": "0.5",
            "p_value": "0.01"}


def test_the_robust_verdict_is_the_one_every_baseline_decides():
    own = [row("a", "m / d", "supported"), row("b", "m / d", "supported"),
           row("c", "m / d", "undecided"), row("d", "m / d", "contradicted"),
           row("e", "m / d", "supported"), row("a", "m / d", "supported", "control")]
    delete = [row("a", "m / d", "supported"), row("b", "m / d", "undecided"),
              row("c", "m / d", "undecided"), row("d", "m / d", "supported"),
              row("a", "m / d", "contradicted", "control")]
    the = [row("a", "m / d", "supported"), row("b", "m / d", "supported"),
           row("c", "m / d", "undecided"), row("d", "m / d", "contradicted"),
           row("e", "m / d", "supported"), row("a", "m / d", "supported", "control")]
    out = robust_claims({"own": own, "delete": delete, "word:the": the})
    got = {(r["claim"], r["weights"]): (r["robust_verdict"], r["disagree"]) for r in out}
    assert got == {
        ("a", "trained"): ("supported", ""),
        ("b", "trained"): ("undecided", "delete: undecided"),
        ("c", "trained"): ("undecided", ""),
        ("d", "trained"): ("undecided", "delete: supported"),
        ("e", "trained"): ("undecided", "delete: absent"),
        ("a", "control"): ("undecided", "delete: contradicted"),
    }
    assert [r["own"] for r in out] == [r["verdict"] for r in own]
    assert out[1]["delete"] == "undecided" and out[1]["word:the"] == "supported"
    assert out[0]["delete p_value"] == "0.01" and out[4]["delete estimate"] == ""


def test_the_robust_raw_verdict_reads_the_verdicts_before_the_controls():
    """Without twins every final verdict is undecided; the raw ones still decide."""
    own = [row("a", "m / d", "undecided", raw="supported"),
           row("b", "m / d", "undecided", raw="supported")]
    other = [row("a", "m / d", "undecided", raw="supported"),
             row("b", "m / d", "undecided", raw="contradicted")]
    out = robust_claims({"own": own, "delete": other})
    assert [(r["robust_verdict"], r["robust_raw_verdict"], r["disagree_raw"]) for r in out] == [
        ("undecided", "supported", ""), ("undecided", "undecided", "delete: contradicted")]
    assert out[1]["delete raw_verdict"] == "contradicted"


def random_norm(rng, samples=6, conditions=3, n=3):
    """Normalised interactions (sample, condition, 2, 2**n) of random AND-OR fits."""
    x = rng.normal(size=(samples, conditions, 2 << n)).reshape(samples, conditions, 2, 1 << n)
    return metrics.normalize(x[:, :, 0], x[:, :, 1], np.full((samples, 1), n))


def test_changed_interactions_and_their_jaccard_by_brute_force():
    rng = np.random.default_rng(0)
    norm, other = random_norm(rng), random_norm(rng)
    pairs = metrics.all_pairs(3)
    got = jaccard(changed_interactions(norm, pairs, TAU), changed_interactions(other, pairs, TAU))

    def salient(x):
        return {(k, m) for k in range(2) for m in range(1, x.shape[-1]) if abs(x[k, m]) > TAU}

    for s in range(norm.shape[0]):
        for p, (a, b) in enumerate(pairs):
            c = salient(norm[s, a]) ^ salient(norm[s, b])
            c2 = salient(other[s, a]) ^ salient(other[s, b])
            union = c | c2
            want = len(c & c2) / len(union) if union else math.nan
            assert got[s, p] == pytest.approx(want, nan_ok=True)


def merged(samples, and_, or_, n, conditions=("T1", "T2", "T3")):
    """A (model, dataset)'s merged fits with what `agreement` reads; the rest is filler."""
    S, C = and_.shape[:2]
    return Merged(attrs={}, conditions={"condition": np.array(conditions)},
                  groups={"0shot": list(conditions)}, n_vars=np.full(S, n), and_=and_, or_=or_,
                  games=None, masks=None, matching_error=np.zeros((S, C)),
                  pred=np.zeros((S, C), int), gold=np.zeros(S, int), greedy=None, hidden=None,
                  samples=np.array(samples), v=np.zeros((S, C, and_.shape[-1])))


def fits(rng, S=8, C=3, n=3):
    return rng.normal(size=(S, C, 1 << n)), rng.normal(size=(S, C, 1 << n))


def test_identical_baselines_agree_on_everything():
    rng = np.random.default_rng(1)
    a, o = fits(rng)
    ids = [f"s{i}" for i in range(8)]
    own = merged(ids, a, o, 3)
    # the other baseline scored the first 5 samples, in another order
    order = [4, 2, 0, 3, 1]
    other = merged([ids[i] for i in order], a[order], o[order], 3)
    got = agreement(own, other, TAU, seed=0)
    assert got.baseline_ips == 0 and got.n_valued == 5
    assert got.sample_rho == pytest.approx(1) and got.n_samples == 5
    assert got.pair_rho == pytest.approx(1) and got.n_pairs == 3
    assert got.changed_jaccard == 1 and got.n_cells > 0
    assert got.sample_p == pytest.approx(2 / math.factorial(5))  # exact: both orderings


def relabel(x, perm):
    """The same game with variable i renamed perm[i]: bitmask m → Σ bit_i(m) << perm[i]."""
    masks = np.arange(x.shape[-1])
    new = sum(((masks >> i) & 1) << p for i, p in enumerate(perm))
    out = np.empty_like(x)
    out[..., new] = x
    return out


def test_ips_can_agree_while_what_changes_does_not():
    """Renaming the variables of every game keeps every IPS (ρ = 1, IPS between the
    baselines' per-pair values equal) but moves the changed interactions to other sets."""
    rng = np.random.default_rng(2)
    a, o = fits(rng)
    ids = [f"s{i}" for i in range(8)]
    perm = [1, 2, 0]
    got = agreement(merged(ids, a, o, 3), merged(ids, relabel(a, perm), relabel(o, perm), 3),
                    TAU, seed=0)
    assert got.sample_rho == pytest.approx(1) and got.pair_rho == pytest.approx(1)
    assert got.changed_jaccard < 0.5
    assert got.baseline_ips > 0.5  # the games themselves are far apart


def test_baselines_of_other_conditions_or_no_common_sample_are_refused():
    rng = np.random.default_rng(3)
    a, o = fits(rng, S=2)
    own = merged(["x", "y"], a, o, 3)
    with pytest.raises(InputError, match="other conditions"):
        agreement(own, merged(["x", "y"], a, o, 3, ("T1", "T2", "T4")), TAU, where="m / d")
    with pytest.raises(InputError, match="no sample is scored under both"):
        agreement(own, merged(["z", "w"], a, o, 3), TAU)


def test_the_command_wants_one_table_and_one_group_of_files_a_baseline(tmp_path, capsys):
    from ips.cli.main import main

    code = main(["baselines", "--names", "own", "delete", "--claims", str(tmp_path / "c.csv"),
                 "--values", "v.h5", "--interactions", "i.h5", "--tau", "0.1",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "--claims: 1 given for 2 baselines (--names)" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()

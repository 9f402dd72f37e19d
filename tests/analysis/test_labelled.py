"""Labelled interactions (`ips export`, ips.analysis.labelled): each row against the HDF5
files it came from, read independently with xarray; the words of S from the values file's
variables; the normalisation by its definition; a save/load round trip in both formats."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from builders import attrs, make_values, write_pair
from ips.analysis.labelled import LabelledInteractions
from ips.cli.main import main


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("labelled")
    ds = make_values([f"q{i}" for i in range(3)], seed=7, model="m", dataset="arc",
                     attrs=attrs(), n_max=4)
    n = ds["n_vars"].values
    words = np.array([[f"w{s}{i}" if i < n[s] else "" for i in range(4)]
                      for s in range(len(n))], dtype=object)
    ds["variable"] = (("sample", "var"), words)  # the variables' texts, as ips score writes them
    v, f = write_pair(tmp, "m", ds)
    out = tmp / "export"
    assert main(["export", "--values", str(v), "--interactions", str(f), "--tau", "0.2",
                 "--out", str(out)]) == 0
    return v, f, out


def test_every_row_is_the_files_number_with_its_words(run):
    v_path, f_path, out = run
    table = LabelledInteractions.load(out)
    values = xr.open_dataset(v_path, engine="h5netcdf")
    fit = xr.open_dataset(f_path, engine="h5netcdf")
    n_vars = values["n_vars"].values.astype(int)
    samples = values["sample"].values.astype(str)
    conditions = values["condition"].values.astype(str)
    t = table.interactions
    assert len(t) == len(conditions) * sum(1 << n for n in n_vars)
    rng = np.random.default_rng(0)
    for _ in range(40):  # rows drawn at random, each checked against the arrays
        s = int(rng.integers(len(samples)))
        c = int(rng.integers(len(conditions)))
        m = int(rng.integers(1 << n_vars[s]))
        row = t[(t["sample"] == samples[s]) & (t["condition"] == conditions[c])
                & (t["mask"] == m)].iloc[0]
        words = [f"w{s}{i}" for i in range(n_vars[s]) if m >> i & 1]
        assert row["words"] == " | ".join(words) and row["order"] == len(words)
        assert row["and_effect"] == fit["and"].values[s, c, m]
        assert row["or_effect"] == fit["or"].values[s, c, m]
        vrow = table.values[(table.values["sample"] == samples[s])
                            & (table.values["condition"] == conditions[c])
                            & (table.values["mask"] == m)].iloc[0]
        assert vrow["v"] == values["v"].values[s, c, m] and vrow["words"] == row["words"]
    values.close(), fit.close()


def test_normalised_effects_follow_section_3_2_and_salience_tau(run):
    """Ĩ = sgn(I)(|I| − Min)/(Max − Min) over the 2(2^n − 1) non-empty effects of one game;
    salient where |Ĩ| > τ (0.2 here)."""
    _, _, out = run
    t = LabelledInteractions.load(out).interactions
    for _, game in t.groupby(["sample", "condition"]):
        inner = game[game["mask"] > 0]
        effects = np.concatenate([inner["and_effect"], inner["or_effect"]])
        lo, hi = np.abs(effects).min(), np.abs(effects).max()
        want = np.sign(inner["and_effect"]) * (np.abs(inner["and_effect"]) - lo) / (hi - lo)
        assert np.allclose(inner["and_normalised"], want, atol=1e-9)
        assert (inner["and_salient"] == (np.abs(inner["and_normalised"]) > 0.2)).all()
        assert game[game["mask"] == 0]["and_normalised"].isna().all()


def test_parquet_and_csv_hold_the_same_table(run):
    _, _, out = run
    a, b = LabelledInteractions.load(out), LabelledInteractions.load(out, "csv")
    assert a.tau == b.tau == 0.2
    pd.testing.assert_frame_equal(a.interactions, b.interactions, check_dtype=False)
    pd.testing.assert_frame_equal(a.values, b.values, check_dtype=False)


def test_bad_inputs_are_one_line(run, tmp_path, capsys):
    v, f, _ = run
    assert main(["export", "--values", str(v), "--interactions", str(f), str(f),
                 "--out", str(tmp_path / "x")]) == 2
    assert "--interactions: 2 files for 1 values files" in capsys.readouterr().err
    assert main(["export", "--values", str(tmp_path / "none.h5"), "--interactions", str(f),
                 "--out", str(tmp_path / "x")]) == 2
    assert "none.h5: no such file; score and fit the run first" in capsys.readouterr().err
    with pytest.raises(Exception, match="missing; export the run first"):
        LabelledInteractions.load(tmp_path / "nothing")

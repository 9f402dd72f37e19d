"""`ips figures` (ips.figures): the directory, its PNGs, table and README; and the three
result commands end to end on fitted synthetic values."""

import csv
import json
import struct

import numpy as np
import pytest
import xarray as xr
from test_factors import attrs, make_metrics, write_all
from test_summary import make_values, write_pair

from ips.cli import main
from ips.figures import FILES, MIN_WIDTH, TABLE_COLUMNS, make_figures

PNGS = [name for name in FILES if name.endswith(".png")]
DPI = 110


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    return struct.unpack(">II", data[16:24])  # IHDR width, height


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("figures")
    ms = []
    for d in ("arc-easy", "mmlu"):
        ms += [
            make_metrics("qwen-1b", attrs("qwen", "qwen3", params=1e9), dataset=d,
                         ips0=[1.6, 1.3, 1.6, 1.8], shots={1: 1.4, 2: 1.35}, pair14=1.55),
            make_metrics("qwen-1b-instruct", attrs("qwen", "qwen3", "instruct", params=1e9),
                         dataset=d, ips0=[1.5, 1.1, 1.5, 1.8], shots={1: 1.3}),
            make_metrics("qwen-4b", attrs("qwen", "qwen3", params=4e9), dataset=d,
                         ips0=[1.45, 1.0, 1.45, 1.75], sweep=np.linspace(1.5, 1.4, 4)),
            make_metrics("a-rather-long-model-name-7b-chat", attrs("llama", "llama2", "instruct",
                                                                   params=7e9), dataset=d,
                         ips0=[1.55, 1.2, 1.5, 1.7], sweep=np.linspace(1.6, 1.5, 4)),
        ]
    paths = write_all(tmp, ms)
    factors = tmp / "factors.nc"
    assert main(["factors", "--metrics", *map(str, paths), "--out", str(factors)]) == 0
    out = tmp / "results" / "figures"
    assert main(["figures", "--metrics", *map(str, paths), "--factors", str(factors),
                 "--out", str(out)]) == 0
    return tmp, paths, factors, out, ms


def test_directory_holds_every_file(results):
    tmp, _, _, out, _ = results
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, "README.md"])
    for name in PNGS:
        w, h = png_size(out / name)
        assert (out / name).stat().st_size > 10_000, name
        assert w >= MIN_WIDTH * DPI - 1 and h >= 2.5 * DPI, (name, w, h)
    # 2 datasets side by side, 4 models: the ranking is 2 panels of 5.2 in, 1.7 + 0.32·4 in
    assert png_size(out / "ips_ranking.png") == pytest.approx((10.4 * DPI, 2.98 * DPI), abs=1)
    # factors: instruct_vs_base, scale, few_shot present (3 panels), dense_vs_moe absent (note)
    w, h = png_size(out / "factors.png")
    assert w == pytest.approx(3 * 4.6 * DPI, abs=1) and h > 4.4 * DPI
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_table_is_tidy(results):
    _, _, _, out, ms = results
    with open(out / "ips_table.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == TABLE_COLUMNS
        rows = list(reader)
    assert len(rows) == sum(m.sizes["group"] * 4 for m in ms)
    row = next(r for r in rows if (r["model"], r["dataset"], r["group"], r["band"])
               == ("qwen-1b", "mmlu", "0shot", "low"))
    assert float(row["ips"]) == pytest.approx(1.3)
    assert (row["family"], row["series"], row["type"], row["architecture"], row["params"]) == (
        "qwen", "qwen3", "base", "dense", "1000000000")
    assert int(row["n_valued_samples"]) == 5 and float(row["tau"]) == 0.1
    assert {r["group"] for r in rows if r["model"] == "qwen-1b"} == {"0shot", "1shot", "2shot"}


def test_readme_names_files_and_absent_factors(results):
    _, _, _, out, _ = results
    text = (out / "README.md").read_text()
    for name in FILES:
        assert f"`{name}`" in text
    assert "τ = 0.1" in text
    assert "dense vs MoE (`dense_vs_moe`): absent: no dense/moe pair" in text
    assert "Absent factors: `dense_vs_moe`" in text
    assert "instruct vs base (`instruct_vs_base`): present" in text
    assert "mean Spearman" in text  # 4 models: the robustness is defined


def test_rerun_replaces_the_directory_and_no_factor_note(results, tmp_path):
    tmp, paths, _, out, _ = results
    target = tmp_path / "figs"
    target.mkdir()
    (target / "stale.txt").write_text("old")
    one = [paths[0]]  # one model, one dataset: no model factor, few-shot only
    factors = tmp_path / "f.nc"
    assert main(["factors", "--metrics", str(one[0]), "--out", str(factors)]) == 0
    make_figures(one, factors, target)
    assert not (target / "stale.txt").exists()
    assert sorted(p.name for p in target.iterdir()) == sorted([*FILES, "README.md"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.nc", "figs"]
    # no factor at all: factors.png is a note
    bare = tmp_path / "bare.nc"
    xr.open_dataset(paths[2], engine="h5netcdf").load().to_netcdf(bare, engine="h5netcdf")
    f2 = tmp_path / "f2.nc"
    assert main(["factors", "--metrics", str(bare), "--out", str(f2)]) == 0
    make_figures([bare], f2, tmp_path / "figs2")
    assert png_size(tmp_path / "figs2" / "factors.png") == pytest.approx((8 * DPI, 2.6 * DPI),
                                                                          abs=1)
    assert "Absent factors: `instruct_vs_base`, `scale`, `dense_vs_moe`, `few_shot`" in (
        tmp_path / "figs2" / "README.md").read_text()


def test_bad_inputs(results, tmp_path, capsys):
    _, paths, factors, _, _ = results
    code = main(["figures", "--metrics", str(paths[0]), "--factors", str(paths[0]),
                 "--out", str(tmp_path / "x")])
    assert code == 2 and f"{paths[0]}: no variable 'factor_present'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    other = tmp_path / "tau.nc"
    make_metrics("z", attrs(), tau=0.2).to_netcdf(other, engine="h5netcdf")
    code = main(["figures", "--metrics", str(other), "--factors", str(factors),
                 "--out", str(tmp_path / "x")])
    assert code == 2 and f"{other}: computed at τ = 0.2" in capsys.readouterr().err


def test_metrics_factors_figures_end_to_end(tmp_path):
    """Three models, fitted synthetic values, through the three commands as the workflow
    calls them."""
    conds = ["T1", "T2", "T4", "T1-1shot", "T4-1shot"]
    groups = {"0shot": conds[:3], "1shot": conds[3:]}
    models = {"base": attrs("f", "s", "base"), "inst": attrs("f", "s", "instruct"),
              "big": attrs("f", "s", "base", params=8e9)}
    metrics_files = []
    for k, (name, a) in enumerate(models.items()):
        ds = make_values(["q1", "q2", "q3"], seed=20 + k, model=name, dataset="arc",
                         conditions=conds, templates=["T1", "T2", "T4", "T1", "T4"],
                         shots=[0, 0, 0, 1, 1], groups=groups, attrs=a, n_max=4)
        v, f = write_pair(tmp_path, name, ds)
        out = tmp_path / "metrics" / name / "arc.nc"
        assert main(["metrics", "--values", str(v), "--fits", str(f), "--tau", "0.1",
                     "--tau-sweep", "0.05", "0.1", "0.15", "0.2", "--out", str(out)]) == 0
        metrics_files.append(str(out))
    factors = tmp_path / "factors" / "factors.nc"
    assert main(["factors", "--metrics", *metrics_files, "--out", str(factors)]) == 0
    figs = tmp_path / "figures"
    assert main(["figures", "--metrics", *metrics_files, "--factors", str(factors),
                 "--out", str(figs)]) == 0
    with xr.open_dataset(factors, engine="h5netcdf") as fac:
        present = dict(zip(fac["factor"].values, fac["factor_present"].values))
        assert present == {"instruct_vs_base": True, "scale": True, "dense_vs_moe": False,
                           "few_shot": True}
        assert np.isfinite(float(fac["tau_spearman"].sel(dataset="arc")))
        assert json.loads(fac.attrs["absent"]) == {
            "dense_vs_moe": "no dense/moe pair of the same family and type"}
    with xr.open_dataset(metrics_files[0], engine="h5netcdf") as m:
        expected = float(m["ips"].sel(group="0shot", band="all"))
    with open(figs / "ips_table.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f)
                   if (r["model"], r["group"], r["band"]) == ("base", "0shot", "all"))
    assert float(row["ips"]) == pytest.approx(expected)

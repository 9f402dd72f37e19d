"""`ips figures` (ips.figures): the directory, its PNGs, table and README; and the three
result commands end to end on fitted synthetic values."""

import csv
import dataclasses
import json
import struct

import numpy as np
import pytest
import xarray as xr

from builders import attrs, make_metrics, make_values, outside, write_all, write_pair
from ips.cli.main import main
from ips.figures.make import FILES, figure_files, make_figures
from ips.figures.plots.factors import factor_figure, factors_figure
from ips.figures.plots.interaction_types import types_figure
from ips.figures.plots.order import order_figure
from ips.figures.plots.overview import overview_figure
from ips.figures.plots.perturbation import perturbation_figure
from ips.figures.plots.ranking import consistency_figure, ranking_figure
from ips.figures.plots.representation import representation_figure
from ips.figures.plots.robustness import tau_figure
from ips.figures.plots.scale import scale_figure
from ips.figures.plots.shots import shot_curve_figure, shot_curves
from ips.figures.plots.sparsity import matching_figure, sparsity_figure
from ips.figures.style import MIN_WIDTH
from ips.figures.tables.results import FACTOR_COLUMNS, TABLE_COLUMNS
from ips.figures.text.captions import TABLES, case_study_name
from ips.formats.factors import read_factors
from ips.formats.metrics import read_metrics

PNGS = [name for name in FILES if name.endswith(".png")]
DPI = 110
FIXED = sorted([*figure_files(), *TABLES, "README.md"])


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
                         ips0=[1.6, 1.3, 1.6, 1.8], shots={1: 1.4, 2: 1.35}, pair14=1.55,
                         samples=12),
            make_metrics("qwen-1b-instruct", attrs("qwen", "qwen3", "instruct", params=1e9),
                         dataset=d, ips0=[1.5, 1.1, 1.5, 1.8], shots={1: 1.3}, samples=12,
                         own=0.05, own_seed=1),
            make_metrics("qwen-4b", attrs("qwen", "qwen3", params=4e9), dataset=d,
                         ips0=[1.45, 1.0, 1.45, 1.75], sweep=np.linspace(1.5, 1.4, 4),
                         samples=12, own=0.05, own_seed=2),
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
    # hand-made metrics files hold no case study: the fixed files only
    assert sorted(p.name for p in out.iterdir()) == FIXED
    for name in PNGS:
        w, h = png_size(out / name)
        assert (out / name).stat().st_size > 10_000, name
        assert w >= MIN_WIDTH * DPI - 1 and h >= 2.5 * DPI, (name, w, h)
        pdf = (out / name).with_suffix(".pdf")
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000
    # 2 datasets of 4 models stacked: the ranking is 7.5 in wide (the narrowest figure) and
    # 2 panels of 1.2 + 0.32·4 in high, legible at a repository page's width
    assert png_size(out / "ips_ranking.png") == pytest.approx((7.5 * DPI, 4.96 * DPI), abs=1)
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
    with open(out / "factors_table.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == FACTOR_COLUMNS
        frows = list(reader)
    inst = next(r for r in frows if (r["factor"], r["dataset"], r["band"], r["model_b"])
                == ("instruct_vs_base", "mmlu", "all", "qwen-1b"))
    assert float(inst["delta_ips"]) == pytest.approx(-0.1 / 1.6, rel=1e-5)
    assert float(inst["delta_ips_ci_low"]) <= float(inst["delta_ips"]) <= float(
        inst["delta_ips_ci_high"])
    assert 0 < float(inst["p_value"]) <= 1 and int(inst["n_paired"]) == 12
    # 12 paired samples: an exact sign-flip test, not flagged
    assert (inst["test"], inst["n_tested"], inst["few_samples"]) == (
        "sign-flip exact", "12", "false")
    # the llama model has no per-sample table: no test, flagged
    old = [r for r in frows if "a-rather-long-model-name-7b-chat" in (r["model_a"], r["model_b"])]
    assert all((r["test"], r["n_tested"], r["few_samples"], r["p_value"]) == ("", "0", "true", "")
               for r in old)
    assert len(rows) == sum(m.sizes["group"] * 4 for m in ms)
    row = next(r for r in rows if (r["model"], r["dataset"], r["group"], r["band"])
               == ("qwen-1b", "mmlu", "0shot", "low"))
    assert float(row["ips"]) == pytest.approx(1.3)
    assert (row["family"], row["series"], row["type"], row["architecture"], row["params"]) == (
        "qwen", "qwen3", "base", "dense", "1000000000")
    assert int(row["n_valued_samples"]) == 5 and float(row["tau"]) == 0.1
    assert all(r["few_samples"] == ("true" if int(r["n_valued_samples"]) < 10 else "false")
               for r in rows)
    assert row["few_samples"] == "true"
    assert float(row["ips_ci_low"]) <= 1.3 <= float(row["ips_ci_high"])
    assert {r["group"] for r in rows if r["model"] == "qwen-1b"} == {"0shot", "1shot", "2shot"}


def test_the_shot_curve_joins_the_zero_shot_pairs_to_each_k(results):
    """Fig. 8's line of qwen-1b: its T1|T4 pair at 0 shots (pair14 = 1.55), then its 1- and
    2-shot IPS (1.4, 1.35), as the builder made them; a model with one k has two points."""
    _, _, factors, _, _ = results
    curves = shot_curves(read_factors(factors).comparisons("few_shot"))
    x, y, n = curves["mmlu", "qwen-1b"]
    assert x.tolist() == [0, 1, 2] and y == pytest.approx([1.55, 1.4, 1.35])
    assert n[0] == -1 and (n[1:] == 12).all()
    x, y, _ = curves["arc-easy", "qwen-1b-instruct"]
    assert x.tolist() == [0, 1] and y[1] == pytest.approx(1.3)
    assert {m for _, m in curves} == {"qwen-1b", "qwen-1b-instruct"}


def test_tables_4_5_split_by_architecture_and_table_1_lists_the_models(results):
    _, _, _, out, _ = results
    with open(out / "models_table.csv", newline="") as f:
        models = list(csv.DictReader(f))
    # by family and series, smallest first; every dataset the model ran on
    assert [r["model"] for r in models] == ["a-rather-long-model-name-7b-chat", "qwen-1b",
                                            "qwen-1b-instruct", "qwen-4b"]
    assert {r["datasets"] for r in models} == {"arc-easy mmlu"}
    assert models[3]["params"] == "4000000000" and models[3]["control_of"] == ""
    with open(out / "perturbation_types_dense.csv", newline="") as f:
        dense = list(csv.DictReader(f))
    with open(out / "perturbation_types_moe.csv", newline="") as f:
        moe = list(csv.DictReader(f))
    assert len(dense) == 8 and {r["architecture"] for r in dense} == {"dense"} and moe == []


def test_the_paper_map_places_every_figure_and_table_of_the_paper(results):
    """Figs. 1-58 and Tables 1-7 each once, in order; every file named is one that `ips
    figures` writes (here, or in a τ set), and a missing one says why."""
    from ips.figures.text.paper_map import PAPER_MAP

    _, _, _, out, _ = results
    with open(out / "paper_map.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["paper"], r["file"]) for r in rows] == [(i.paper, i.file) for i in PAPER_MAP]
    figures = [r["paper"] for r in rows if r["paper"].startswith("Fig.")]
    numbers = [int(p.split()[1].rstrip("abcd-")) for p in figures]
    assert sorted(set(numbers)) == list(range(1, 59)) and numbers == sorted(numbers)
    assert [r["paper"] for r in rows if r["paper"].startswith("Table")] == [
        f"Table {k}" for k in range(1, 8)]
    known = {*FILES, "case_study_{model}_{dataset}.png"}
    for r in rows:
        if r["file"]:
            assert r["file"].rsplit("/", 1)[-1] in known, r
            assert r["written"] == ("" if r["file"].startswith("../tau/") else
                                    "no" if r["file"].startswith("case_study") else "yes"), r
        else:
            assert r["note"].startswith("none: "), r
    text = (out / "README.md").read_text()
    assert "## The paper's figures and tables" in text
    assert "| Table 5 | IPS by perturbation type, MoE models | `perturbation_types_moe.csv` |" in text
    # the reworded prompts' few-shot (Figs. 12d, 55): a panel, empty without perturbations.shots
    for fig in ("12d", "55"):
        assert f"| Fig. {fig} | 0-shot vs few-shot | `perturbation_group_factors.png` | " in text
    assert text.count("a run without perturbations.shots scores the reworded prompts at 0 "
                      "shots only, and the panel says so |") == 2


def test_readme_names_files_and_absent_factors(results):
    _, _, _, out, _ = results
    text = (out / "README.md").read_text()
    for name in FILES:
        assert f"`{name}`" in text
    assert "case_study_{model}_{dataset}" in text
    assert "τ = 0.1" in text
    assert "dense vs MoE (`dense_vs_moe`): absent: no dense/moe pair" in text
    assert "Absent factors: `dense_vs_moe`" in text
    assert "instruct vs base (`instruct_vs_base`): present" in text
    assert "mean Spearman" in text  # 4 models: the robustness is defined


def test_the_same_figure_gives_the_same_bytes(results, tmp_path):
    """Same config, same files: no date in the PDF (two runs a second apart compare equal)."""
    import time

    _, paths, _, _, _ = results
    entries = [read_metrics(p) for p in paths]
    first = [p.read_bytes() for p in ranking_figure(entries, 0.1, tmp_path / "a" / "r.png")]
    time.sleep(1.1)
    again = [p.read_bytes() for p in ranking_figure(entries, 0.1, tmp_path / "b" / "r.png")]
    assert first == again


def test_read_factors_gives_each_figure_its_rows(results):
    """The factors file read once: a model factor's comparisons are its 0-shot rows, few-shot's
    every k-shot row; absent factors and τ robustness as the file holds them."""
    _, _, factors, _, _ = results
    fac = read_factors(factors)
    with xr.open_dataset(factors, engine="h5netcdf") as ds:
        f = ds["comparison_factor"].values.astype(str)
        g = ds["comparison_group"].values.astype(str)
        assert fac.comparisons("scale").sizes["comparison"] == int(
            np.sum((f == "scale") & (g == "0shot")))
        assert fac.comparisons("few_shot").sizes["comparison"] == int(np.sum(f == "few_shot"))
        assert set(fac.comparisons("few_shot")["comparison_group"].values.astype(str)) == {
            "1shot", "2shot"}
        assert fac.absent == json.loads(ds.attrs["absent"])
        assert fac.present == [str(x) for x, p in zip(ds["factor"].values,
                                                      ds["factor_present"].values) if p]
        for d in ds["dataset"].values:
            assert fac.tau[str(d)].n_models == int(ds["tau_n_models"].sel(dataset=d))
            np.testing.assert_equal(fac.tau[str(d)].spearman,
                                    float(ds["tau_spearman"].sel(dataset=d)))


def test_a_file_that_is_not_a_factors_file_is_one_line(results):
    from ips.errors import InputError

    _, paths, _, _, _ = results
    with pytest.raises(InputError, match="ips factors"):
        read_factors(paths[0])


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
    assert sorted(p.name for p in target.iterdir()) == FIXED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.nc", "figs"]
    # no factor at all: factors.png is a note
    bare = tmp_path / "bare.nc"
    xr.open_dataset(paths[2], engine="h5netcdf").load().to_netcdf(bare, engine="h5netcdf")
    f2 = tmp_path / "f2.nc"
    assert main(["factors", "--metrics", str(bare), "--out", str(f2)]) == 0
    make_figures([bare], f2, tmp_path / "figs2")
    assert png_size(tmp_path / "figs2" / "factors.png") == pytest.approx((8 * DPI, 2.6 * DPI),
                                                                          abs=1)
    for f in ("instruct_vs_base", "few_shot"):  # absent factors: a note naming the reason
        assert png_size(tmp_path / "figs2" / f"factor_{f}.png") == pytest.approx(
            (8 * DPI, 2.6 * DPI), abs=1)
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
        assert main(["metrics", "--values", str(v), "--interactions", str(f), "--tau", "0.1",
                     "--tau-sweep", "0.05", "0.1", "0.15", "0.2", "--out", str(out)]) == 0
        metrics_files.append(str(out))
    factors = tmp_path / "factors" / "factors.nc"
    assert main(["factors", "--metrics", *metrics_files, "--out", str(factors)]) == 0
    figs = tmp_path / "figures"
    named = [{"claim": "factor_scale", "scope": "arc / big vs base / 0shot",
              "direction": "supported"}, {"claim": "factor_scale", "scope": "nowhere",
                                          "direction": "supported"}]
    assert main(["figures", "--metrics", *metrics_files, "--factors", str(factors),
                 "--out", str(figs), "--hypotheses", json.dumps(named)]) == 0
    with open(figs / "claims.csv", newline="") as f:
        claims_rows = list(csv.DictReader(f))
    # the corrections: q-values on the decidable rows only, Holm over the 2 named (one absent)
    decidable = [r for r in claims_rows if r["q_value"]]
    assert decidable and all(r["verdict"] not in ("control", "untestable") and r["p_value"]
                             and float(r["q_value"]) >= float(r["p_value"]) for r in decidable)
    (scale,) = [r for r in claims_rows if r["holm_p"]]
    assert (scale["claim"], scale["scope"]) == ("factor_scale", "arc / big vs base / 0shot")
    assert float(scale["holm_p"]) == pytest.approx(min(1.0, 2 * float(scale["p_value"])))
    readme = (figs / "README.md").read_text()
    assert "Holm over 1 found in this table): `factor_scale` arc / big vs base / 0shot" in readme
    assert f"Benjamini–Hochberg over its {len(decidable)} decidable rows" in readme
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
    assert float(row["ips"]) == pytest.approx(expected, rel=1e-5)
    # three samples: every factor p-value is a multiple of 1/8 and at least 2/8, flagged
    with open(figs / "factors_table.csv", newline="") as f:
        frows = [r for r in csv.DictReader(f) if r["p_value"]]
    assert frows and all(float(r["p_value"]) >= 0.25 and r["test"] == "sign-flip exact"
                         and r["few_samples"] == "true" and int(r["n_tested"]) <= 3
                         for r in frows)
    assert "Holm-adjusted" in (figs / "README.md").read_text()
    # one case study per (model, dataset), from the metrics file's chosen sample
    cases = sorted(f"{case_study_name(m, 'arc')}.{x}" for m in models for x in ("png", "pdf"))
    assert sorted(p.name for p in figs.iterdir()) == sorted([*FIXED, *cases])
    for name in cases:
        assert (figs / name).stat().st_size > 1000


FIGURE_FUNCTIONS = {
    "ranking": lambda es, fac, p: ranking_figure(es, 0.1, p),
    "consistency": lambda es, fac, p: consistency_figure(es, 0.1, p),
    "order": lambda es, fac, p: order_figure(es, 0.1, p),
    # Fig. 56: the bands of the perturbation group (here the files' 1-shot group, renamed), and
    # the panel that says no dataset has one
    "order_perturbation": lambda es, fac, p: order_figure(
        [dataclasses.replace(e, ds=e.ds.assign_coords(group=[
            "perturbation" if g == "1shot" else g for g in e.ds["group"].values.astype(str)]))
         for e in es], 0.1, p, "perturbation"),
    "order_no_perturbation": lambda es, fac, p: order_figure(es, 0.1, p, "perturbation"),
    "tau": lambda es, fac, p: tau_figure(es, fac.tau, 0.1, p),
    "factors": lambda es, fac, p: factors_figure({f: fac.summaries(f) for f in fac.present},
                                                 fac.absent, 0.1, p),
    "factor_instruct": lambda es, fac, p: factor_figure(fac.comparisons("instruct_vs_base"),
                                                        "instruct_vs_base", None, 0.1, p),
    "factor_scale": lambda es, fac, p: factor_figure(fac.comparisons("scale"), "scale", None,
                                                     0.1, p),
    "factor_moe_absent": lambda es, fac, p: factor_figure(fac.comparisons("dense_vs_moe"),
                                                          "dense_vs_moe",
                                                          fac.absent["dense_vs_moe"], 0.1, p),
    "factor_few_shot": lambda es, fac, p: factor_figure(fac.comparisons("few_shot"), "few_shot",
                                                        None, 0.1, p),
    "perturbation": lambda es, fac, p: perturbation_figure(es, 0.1, p),
    "overview": lambda es, fac, p: overview_figure(es, 0.1, p),
    "ips_by_scale": lambda es, fac, p: scale_figure(es, "0shot", 0.1, p, "IPS", bands=("all",)),
    "few_shot_curve": lambda es, fac, p: shot_curve_figure(fac, 0.1, p),
    "representation": lambda es, fac, p: representation_figure(es, 0.1, p),
    "types": lambda es, fac, p: types_figure(es, 0.1, p),
    "sparsity": lambda es, fac, p: sparsity_figure(es, 0.1, p),
    "matching": lambda es, fac, p: matching_figure(es, p),
}


@pytest.mark.parametrize("name", sorted(FIGURE_FUNCTIONS))
def test_every_figure_function_writes_png_and_pdf(results, tmp_path, monkeypatch, name):
    """Each figure from small synthetic tables: hand-made metrics files (no sparsity, types
    or case study: those panels say so) and one file made by `ips metrics`; no text of it
    crosses the figure's edges."""
    from matplotlib.figure import Figure

    tmp, paths, factors, _, _ = results
    entries = [read_metrics(p) for p in paths]
    figs, original = [], Figure.savefig

    def keep(self, *args, **kwargs):
        figs.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    written = FIGURE_FUNCTIONS[name](entries, read_factors(factors), tmp_path / f"{name}.png")
    assert not outside(figs[0]), (name, outside(figs[0])[:3])
    assert [p.name for p in written] == [f"{name}.png", f"{name}.pdf"]
    png_size(tmp_path / f"{name}.png")
    assert (tmp_path / f"{name}.png").stat().st_size > 5000
    assert (tmp_path / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    """Metrics files of `ips metrics` on fitted synthetic values (every table present)."""
    tmp = tmp_path_factory.mktemp("computed")
    out = []
    for k, name in enumerate(("m1", "m2")):
        ds = make_values([f"q{i}" for i in range(4)], seed=40 + k, model=name, dataset="arc",
                         attrs=attrs("f", "s", "base" if k else "instruct"), n_max=4)
        v, f = write_pair(tmp, name, ds)
        path = tmp / f"{name}.nc"
        assert main(["metrics", "--values", str(v), "--interactions", str(f), "--out", str(path),
                     "--seed", "3"]) == 0
        out.append(path)
    factors = tmp / "factors.nc"
    assert main(["factors", "--metrics", *map(str, out), "--out", str(factors)]) == 0
    return out, factors


@pytest.mark.parametrize("name", ["sparsity", "matching", "types", "representation",
                                  "perturbation", "factor_instruct", "consistency", "overview"])
def test_figures_from_computed_metrics(computed, tmp_path, name):
    paths, factors = computed
    entries = [read_metrics(p) for p in paths]
    written = FIGURE_FUNCTIONS[name](entries, read_factors(factors), tmp_path / "f.png")
    assert all(p.stat().st_size > 1000 for p in written)


def test_order_figure_labels_hold_the_holm_adjusted_p_values(computed, results):
    from ips.figures.numbers import band_test_text, p_short

    e = read_metrics(computed[0][0])
    q = e.ds["band_p_holm"].sel(group="0shot").values
    n = e.ds["band_n"].sel(group="0shot").values
    assert band_test_text(e) == ("Holm p " + "/".join(p_short(x).removeprefix("0") for x in q)
                                 + (f" (n={n.min()})" if n.min() == n.max()
                                    else f" (n={n.min()}-{n.max()})"))
    # 4 samples: Holm of exact p-values, each at least 2/16
    assert np.all(q[np.isfinite(q)] >= 2 / 16)
    # hand-made metrics files hold no band tests
    assert band_test_text(read_metrics(results[1][0])) == "Holm p n/a"


def test_the_ceiling_stands_beside_ips_and_its_nulls(computed, tmp_path):
    """The ceiling of `ips metrics` (m1: samples of n 4, 4, 3, 4, so one sample has no other
    of its n and no ceiling) in the IPS table, the null table (with IPS minus it over the
    samples valued in both), the README's null section and the nulls figure."""
    from ips.figures.plots.nulls import nulls_figure
    from ips.figures.tables.results import null_rows, table_rows
    from ips.figures.text.readme import null_section

    paths, _ = computed
    entries = [read_metrics(p) for p in paths]
    ds = entries[0].ds
    at = {"group": "0shot", "band": "all"}
    want = float(ds["ceiling_ips"].sel(at))
    low, high = ds["ceiling_ips_ci"].sel(at).values
    per_sample = ds["sample_ceiling_ips"].sel(at).values
    assert int(ds["ceiling_n_valued"].sel(at)) == 3 and np.isnan(per_sample).sum() == 1
    assert want == pytest.approx(np.nanmean(per_sample)) and low <= want <= high
    row = next(r for r in table_rows(entries)
               if (r["model"], r["group"], r["band"]) == ("m1", "0shot", "all"))
    assert (row["ceiling_ips"], row["ceiling_ci_low"], row["ceiling_ci_high"]) == (
        want, low, high)
    null = next(r for r in null_rows(entries)
                if (r["model"], r["group"], r["band"], r["null"]) == ("m1", "0shot", "all",
                                                                      "ceiling"))
    d = ds["sample_ips"].sel(at).values - per_sample
    assert null["null_ips"] == want and null["n_paired"] == np.isfinite(d).sum() == 3
    assert null["ips_minus_null"] == pytest.approx(np.nanmean(d))
    lines = null_section(entries)
    header = next(line for line in lines if line.startswith("| model | dataset | IPS |"))
    assert header.endswith("| matched-size null | IPS − matched (n) | ceiling | IPS / ceiling |")
    mine = next(line for line in lines if line.startswith("| m1 | arc |"))
    ratio = float(ds["ips"].sel(at)) / want
    assert mine.endswith(f"| {want:.3f} | {ratio:.2f}" + (" **saturated**" if ratio >= 0.9
                                                          else "") + " |")
    assert row["ips_over_ceiling"] == pytest.approx(ratio) and row["saturated"] == (ratio >= 0.9)
    written = nulls_figure(entries, 0.1, tmp_path / "nulls.png")
    assert all(p.stat().st_size > 1000 for p in written)


def test_docs_cli_names_every_file_the_command_writes():
    """docs/cli.md lists the files of `ips figures` by name (their captions live in one place)."""
    from pathlib import Path

    cli = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    section = cli[cli.index("## `ips figures`"):cli.index("## `ips explain`")]
    from ips.figures.text.captions import FIGURES

    missing = [name for name in [*FIGURES, *TABLES, "case_study_<model>_<dataset>"]
               if f"`{name}`" not in section]
    assert missing == []


def test_the_case_study_shows_a_changed_and_an_unchanged_sample(computed, tmp_path,
                                                                 monkeypatch):
    """Fig. 3a: per model and dataset a panel for a sample whose prediction changed and one
    for a sample whose prediction stayed, each the metrics file's; a note where a run has no
    sample of a kind."""
    import ips.figures.plots.case_study as figure
    from ips.figures import make

    entries = [read_metrics(p) for p in computed[0]]
    assert all("case_same_norm" in e.ds for e in entries)
    drawn = make.case_study_figures(entries, 0.1, tmp_path)
    assert len(drawn) == 2 * len(entries) and all((tmp_path / f).stat().st_size > 5000
                                                  for f in drawn)
    panels = []
    monkeypatch.setattr(figure, "case_study_figure",
                        lambda cases, path, **kw: panels.append(cases) or [])
    make.case_study_figures(entries, 0.1, tmp_path)
    for e, (first, second) in zip(entries, panels):
        a = e.ds.attrs
        assert a["case_changed"] == 1  # these random games change predictions
        assert first.prediction_changed and first.sample == a["case_sample"]
        assert not second.prediction_changed and second.sample == a["case_same_sample"]
    # a run whose every valued pair changed its prediction: its note second
    ds = entries[1].ds.drop_vars([v for v in entries[1].ds.data_vars
                                  if str(v).startswith("case_same_")])
    panels.clear()
    make.case_study_figures([dataclasses.replace(entries[1], ds=ds)], 0.1, tmp_path)
    assert panels[0][1] == make.NO_UNCHANGED_CASE
    # a run whose predictions never change: the note first, its unchanged sample second
    ds = entries[0].ds.drop_vars([v for v in entries[0].ds.data_vars
                                  if str(v).startswith("case_same_")])
    ds.attrs = {**ds.attrs, "case_changed": 0, "case_pred_b": ds.attrs["case_pred_a"]}
    panels.clear()
    make.case_study_figures([dataclasses.replace(entries[0], ds=ds)], 0.1, tmp_path)
    (first, second), = panels
    assert first == make.NO_CHANGED_CASE and not second.prediction_changed

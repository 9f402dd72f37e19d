"""The figures at the paper's scale (issue 31, point 3): 50 models with the paper's names and
attributes (workflow/configs/miniature.yaml) on three datasets. Every figure stays within
about 16 × 20 inches, and no two row labels of a panel overlap; the README lists the models
and case studies in tables, not in one line."""

from pathlib import Path

import numpy as np
import pytest
import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from builders import attrs, make_metrics, outside, write_all
from ips.cli.main import main
from ips.figures.plots.factors import draw_factors
from ips.figures.plots.interaction_types import types_figure
from ips.figures.plots.nulls import nulls_figure
from ips.figures.plots.order import order_figure
from ips.figures.plots.perturbation import perturbation_figure
from ips.figures.plots.ranking import consistency_figure, ranking_figure
from ips.figures.plots.representation import representation_figure
from ips.figures.plots.robustness import tau_figure
from ips.figures.plots.scale import scale_figure
from ips.figures.plots.shots import few_shot_band_figure
from ips.figures.plots.sparsity import matching_figure, sparsity_figure
from ips.figures.text.readme import readme_text
from ips.formats.factors import read_factors
from ips.formats.metrics import read_metrics

CONFIG = Path(__file__).parents[2] / "workflow" / "configs" / "miniature.yaml"
MAX_W, MAX_H, DPI = 16.5, 20.5, 110  # inches (a little above the 16 × 20 aimed at)


@pytest.fixture(scope="module")
def paper_scale(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scale")
    models = yaml.safe_load(CONFIG.read_text())["models"]
    assert len(models) == 50
    rng = np.random.default_rng(0)
    ms = []
    for name, m in models.items():
        a = attrs(m["family"], m["series"], m["type"], m["architecture"], m["params"],
                  m["active_params"])
        for d in ("arc-challenge", "mmlu", "dolly"):
            base = rng.uniform(0.9, 1.7)
            ms.append(make_metrics(name, a, dataset=d, ips0=[base, base - 0.2, base, base + 0.1],
                                   shots={1: base - 0.1, 2: base - 0.05, 3: base}))
    paths = write_all(tmp, ms)
    factors = tmp / "factors.nc"
    # few replicates and draws: the layout, not the intervals, is under test
    assert main(["factors", "--metrics", *map(str, paths), "--resamples", "100",
                 "--permutations", "99", "--out", str(factors)]) == 0
    return [read_metrics(p) for p in paths], read_factors(factors), tmp


DRAW = {
    "ranking": lambda es, f, o: ranking_figure(es, 0.1, o / "ips_ranking.png"),
    "consistency": lambda es, f, o: consistency_figure(es, 0.1, o / "ips_vs_consistency.png"),
    "order": lambda es, f, o: order_figure(es, 0.1, o / "ips_by_order.png"),
    "types": lambda es, f, o: types_figure(es, 0.1, o / "interaction_types.png"),
    "perturbation": lambda es, f, o: perturbation_figure(es, 0.1, o / "perturbation_types.png"),
    "tau": lambda es, f, o: tau_figure(es, f.tau, 0.1, o / "tau_robustness.png"),
    "sparsity": lambda es, f, o: sparsity_figure(es, 0.1, o / "sparsity.png"),
    "matching": lambda es, f, o: matching_figure(es, o / "universal_matching.png"),
    "representation": lambda es, f, o: representation_figure(es, 0.1, o / "rep.png"),
    "nulls": lambda es, f, o: nulls_figure(es, 0.1, o / "nulls.png"),
    "factors": lambda es, f, o: draw_factors(f, 0.1, o),
    "few_shot_by_order": lambda es, f, o: few_shot_band_figure(f, 0.1, o / "shots.png"),
    "scale": lambda es, f, o: scale_figure(es, "0shot", 0.1, o / "scale.png", "IPS by scale"),
}


def _overlaps(fig: Figure, renderer) -> list[str]:
    """Pairs of y tick labels of one panel whose drawn extents overlap (drawn by
    ``renderer``)."""
    bad = []
    for ax in fig.axes:
        boxes = [(t.get_window_extent(renderer), t.get_text())
                 for t in ax.get_yticklabels() if t.get_text() and t.get_visible()]
        boxes.sort(key=lambda b: b[0].y0)
        for (b1, t1), (b2, t2) in zip(boxes, boxes[1:]):
            if b1.y1 > b2.y0 + 0.5:  # half a pixel of antialiasing
                bad.append(f"{ax.get_title()!r}: {t1!r} / {t2!r}")
    return bad


@pytest.mark.parametrize("name", sorted(DRAW))
def test_figure_fits_and_labels_do_not_overlap(paper_scale, tmp_path, monkeypatch, name):
    entries, factors, _ = paper_scale
    figs = []
    original = Figure.savefig

    def keep(self, *args, **kwargs):
        figs.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    DRAW[name](entries, factors, tmp_path)
    assert figs
    for fig in {id(f): f for f in figs}.values():
        w, h = fig.get_size_inches()
        assert w <= MAX_W and h <= MAX_H, (name, fig.get_suptitle()[:60], w, h)
        canvas = FigureCanvasAgg(fig)  # one drawing for both checks: these figures are large
        canvas.draw()
        renderer = canvas.get_renderer()
        assert not _overlaps(fig, renderer), (name, _overlaps(fig, renderer)[:3])
        assert not outside(fig, renderer), (name, outside(fig, renderer)[:3])


def test_readme_at_fifty_models_uses_tables(paper_scale):
    entries, factors, _ = paper_scale
    cases = [f"case_study_{e.model}_{e.dataset}.png" for e in entries]
    text = readme_text(entries, factors, 0.1, cases)
    assert "| family | series | models |" in text
    assert "## Case studies" in text
    assert "| llama-moe-v1-3_5b-2_8-sft | ✓ | ✓ | ✓ |" in text
    assert "Metrics files: 150 under" in text
    assert max(len(line) for line in text.splitlines() if not line.startswith("|")) < 1500


def test_readme_leaves_a_long_claims_table_to_the_csv(paper_scale):
    from types import SimpleNamespace

    from ips.figures.text.readme import MAX_CLAIM_ROWS, claims_section

    row = SimpleNamespace(claim="c", paper="the paper says", verdict="undecided",
                          weights="random", q_value=float("nan"), holm_p=float("nan"))
    import ips.figures.text.readme as readme

    def fake_summary(rows):
        return {"c": {"undecided": len(rows)}}

    original = readme.claims_summary
    readme.claims_summary = fake_summary
    try:
        text = "\n".join(claims_section([row] * (MAX_CLAIM_ROWS + 1)))
    finally:
        readme.claims_summary = original
    assert f"The {MAX_CLAIM_ROWS + 1} rows are in `claims.csv`" in text
    assert text.count("\n|") == 0

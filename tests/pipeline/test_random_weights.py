"""Random-weight models (`source: {random: …}`): the metrics file carries `model_source`, an
`Entry` says whether its model has random weights, and every output of `ips figures` says so
(the README's first line and its claims section, a banner on every figure, `weights` in every
table)."""

import csv
import json
import re
import struct

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from builders import attrs, make_metrics, make_values, write_all, write_pair
from ips.analysis.summary import summarize
from ips.cli.main import main
from ips.errors import InputError
from ips.figures.make import make_figures
from ips.figures.style import BANNER_COLOR, TITLE_SIZE, banner, panels, save
from ips.figures.text.captions import FIGURES, TABLES
from ips.formats.metrics import WEIGHTS, read_metrics, weights

RANDOM = json.dumps({"random": "mixtral", "seed": 7})
DPI = 110


def png_size(path):
    return struct.unpack(">II", path.read_bytes()[16:24])


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_the_metrics_file_carries_the_model_source(tmp_path):
    """`ips metrics` copies the values files' `model_source` and `model_control`; a values
    file without them (an older file) gives "", a trained model and no control."""
    from ips.controls import UntrainedTwins

    ds = make_values(["q1", "q2", "q3"], seed=5, n_max=3)
    ds.attrs["model_source"] = RANDOM
    ds.attrs["model_control"] = '{"kind": "twins", "of": "m"}'
    v, f = write_pair(tmp_path, "r", ds)
    out = tmp_path / "r.nc"
    assert main(["metrics", "--values", str(v), "--interactions", str(f), "--out",
                 str(out)]) == 0
    e = read_metrics(out)
    assert e.ds.attrs["model_source"] == RANDOM and e.random_weights
    assert (e.control_of, e.control) == ("m", UntrainedTwins)
    assert weights([e]) == "random"
    old = make_values(["q1", "q2", "q3"], seed=5, n_max=3)
    v, f = write_pair(tmp_path, "t", old)
    trained = summarize([v], [f])
    assert trained.attrs["model_source"] == trained.attrs["model_control"] == ""
    trained.to_netcdf(tmp_path / "t.nc", engine="h5netcdf")
    t = read_metrics(tmp_path / "t.nc")
    assert not t.random_weights and (t.control_of, t.control) == (None, None)
    assert weights([read_metrics(tmp_path / "t.nc"), e]) == "random"
    assert weights([]) == "trained"


def test_a_model_declared_random_is_labelled_so(tmp_path):
    """A checkpoint of untrained weights of one's own (`weights: random` on a path model):
    its values file's `model_weights` reaches the metrics file, and every table labels it
    random; a declared `trained` beats nothing but the default, and a file without the
    attribute falls back to its source."""
    from ips.models.entries import ModelSpec

    spec = ModelSpec.from_config("mine", {"source": {"path": "/m"}, "weights": "random"})
    assert spec.random_weights
    assert not ModelSpec.from_config("mine", {"source": {"path": "/m"}}).random_weights
    assert ModelSpec.from_config("t", {"source": {"redraw": "m", "seed": 0}}).random_weights
    for declared, random in (("random", True), ("trained", False)):
        ds = make_values(["q1", "q2", "q3"], seed=5, n_max=3)
        ds.attrs["model_source"] = json.dumps({"path": "/m"})
        ds.attrs["model_weights"] = declared
        v, f = write_pair(tmp_path, declared, ds)
        out = tmp_path / f"{declared}.nc"
        assert main(["metrics", "--values", str(v), "--interactions", str(f), "--out",
                     str(out)]) == 0
        e = read_metrics(out)
        assert e.ds.attrs["model_weights"] == declared and e.random_weights == random
        assert weights([e]) == WEIGHTS[random]


@pytest.mark.parametrize("name, source, message", [
    ("model_source", "{not json", "attribute 'model_source' is not JSON"),
    ("model_source", '["random"]', "attribute 'model_source' is not a mapping"),
    ("model_control", '"twins"', "attribute 'model_control' is not a mapping"),
])
def test_a_bad_model_source_is_one_line_naming_file_and_field(tmp_path, name, source, message):
    ds = make_metrics("m", attrs())
    ds.attrs[name] = source
    (path,) = write_all(tmp_path, [ds])
    with pytest.raises(InputError, match=message) as err:
        read_metrics(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_the_banner_is_a_red_line_above_the_title(tmp_path):
    """Inside `banner` a saved figure is 0.25 in taller, its title gains an empty first line
    and the banner's text is written there in red; outside, nothing changes."""
    fig, _ = panels(1, 8.0, 3.0, "a title")
    save(fig, tmp_path / "plain.png")
    fig, _ = panels(1, 8.0, 3.0, "a title")
    with banner("random weights (m): these numbers measure nothing"):
        save(fig, tmp_path / "marked.png")
    (text,) = [t for t in fig.artists if "random" in t.get_text()]
    assert text.get_text() == "random weights (m): these numbers measure nothing"
    assert text.get_color() == BANNER_COLOR and text.get_fontsize() == TITLE_SIZE - 2
    assert fig.get_suptitle() == "\na title"
    (w0, h0), (w1, h1) = png_size(tmp_path / "plain.png"), png_size(tmp_path / "marked.png")
    assert w1 == w0 and h1 - h0 == pytest.approx(0.25 * DPI, abs=1)
    fig, _ = panels(1, 8.0, 3.0, "a title")
    save(fig, tmp_path / "after.png")  # the banner ends with its block
    assert fig.get_suptitle() == "a title" and png_size(tmp_path / "after.png") == (w0, h0)


@pytest.mark.parametrize("height", [3.0, 13.0])
def test_the_banner_lies_above_the_title_in_a_tall_figure(tmp_path, height):
    """The layout moves the title up by a margin fixed in inches, so in a 50-model figure
    (13 in tall) a banner at a fixed figure fraction lay on the title's first line (seen on
    the miniature's figures); it sits on the title's empty first line at any height."""
    fig, _ = panels(3, 5.2, height, "a title\nits second line")
    with banner("random weights (m): these numbers measure nothing"):
        save(fig, tmp_path / "marked.png")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    (text,) = [t for t in fig.artists if "random" in t.get_text()]
    mark = text.get_window_extent(canvas.get_renderer())
    title = fig._suptitle.get_window_extent(canvas.get_renderer())
    line = title.height / 3  # "\na title\nits second line"
    assert mark.y0 >= title.y1 - line - 1 and mark.y1 <= title.y1 + 1, (mark, title)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The same three models drawn twice: all trained, and with `small` of random weights."""
    tmp = tmp_path_factory.mktemp("random")
    runs = {}
    for kind in ("trained", "random"):
        ms = [make_metrics("small", attrs("f", "s", params=1e9), ips0=1.6, shots={1: 1.3},
                           samples=12, own=0.05, own_seed=1),
              make_metrics("small-instruct", attrs("f", "s", "instruct", params=1e9), ips0=1.4,
                           samples=12, own=0.05, own_seed=2),
              make_metrics("large", attrs("f", "s", params=4e9), ips0=1.5, samples=12,
                           own=0.05, own_seed=3)]
        if kind == "random":
            ms[0].attrs["model_source"] = RANDOM
        paths = write_all(tmp / kind, ms)
        factors = tmp / kind / "factors.nc"
        assert main(["factors", "--metrics", *map(str, paths), "--out", str(factors)]) == 0
        make_figures(paths, factors, tmp / kind / "figs")
        runs[kind] = tmp / kind / "figs"
    return runs


def test_every_figure_carries_the_banner(two_runs):
    """Each figure of the random run is the trained run's figure plus the 0.25 in banner."""
    for name in FIGURES:
        w0, h0 = png_size(two_runs["trained"] / f"{name}.png")
        w1, h1 = png_size(two_runs["random"] / f"{name}.png")
        assert w1 == w0 and h1 - h0 == pytest.approx(0.25 * DPI, abs=1), name


def test_every_table_has_weights(two_runs):
    """`weights` ends every CSV; `random` exactly on the rows that rest on `small`."""
    for name in TABLES:
        for kind in ("trained", "random"):
            with open(two_runs[kind] / name, newline="") as f:
                reader = csv.DictReader(f)
                rows = list(reader)
            assert reader.fieldnames[-1] == "weights", name
            assert {r["weights"] for r in rows} <= set(WEIGHTS), name
            if kind == "trained":
                assert all(r["weights"] == "trained" for r in rows), name
    table = {n: read_csv(two_runs["random"] / n) for n in ("ips_table.csv", "factors_table.csv", "tau_robustness.csv",
                       "tau_table.csv", "claims.csv")}
    assert all((r["weights"] == "random") == (r["model"] == "small")
               for r in table["ips_table.csv"] + table["tau_table.csv"])
    assert all((r["weights"] == "random") == ("small" in (r["model_a"], r["model_b"]))
               for r in table["factors_table.csv"])
    assert {r["weights"] for r in table["tau_robustness.csv"]} == {"random"}  # all models
    claims = table["claims.csv"]
    assert all(r["weights"] == "random" for r in claims if r["scope"].startswith("small /"))
    assert all(r["weights"] == "trained" for r in claims if r["scope"].startswith("large /"))
    inst = [r for r in claims if r["claim"] == "factor_instruct_vs_base"]
    assert inst and all(r["weights"] == "random" for r in inst)  # small-instruct vs small


def test_the_readme_says_so_first_and_in_the_claims(two_runs):
    text = (two_runs["random"] / "README.md").read_text()
    first = text.splitlines()[0]
    assert first.startswith("**Random weights (small): these numbers measure nothing.**")
    claims = text[text.index("## The paper's claims"):]
    rows = read_csv(two_runs["random"] / "claims.csv")
    n_random = sum(r["weights"] == "random" for r in rows)
    assert 0 < n_random < len(rows)
    assert (f"**Random weights (small): these numbers measure nothing:** {n_random} of the "
            f"{len(rows)} rows rest on them") in claims
    plain = (two_runs["trained"] / "README.md").read_text()
    assert plain.startswith("# IPS results") and "Random weights" not in plain


def test_the_report_says_so():
    """workflow/report/workflow.rst names the models whose source is `random`, and renders
    as reStructuredText without a system message; without one it says nothing of it."""
    import copy
    import io
    from types import SimpleNamespace

    import docutils.core
    import jinja2

    from builders import CONFIG, REPORT
    from ips.config import validate

    def html(config):
        snakemake = SimpleNamespace(wildcards=SimpleNamespace(),
                                    params=SimpleNamespace(captions={}), config=config)
        text = jinja2.Template((REPORT / "workflow.rst").read_text(encoding="utf-8")).render(
            snakemake=snakemake)
        warnings = io.StringIO()
        out = docutils.core.publish_parts(text, writer="html", settings_overrides={
            "warning_stream": warnings, "report_level": 2, "halt_level": 5})["body"]
        assert not warnings.getvalue() and "system-message" not in out
        return out

    config = validate(copy.deepcopy(CONFIG))
    assert "Random weights" not in html(config)
    first, second = list(config["models"])[:2]
    config["models"][first]["source"] = {"random": "mixtral", "seed": 7}
    config["models"][second]["source"] = {"random": "llama", "seed": 1}
    text = html(config)
    assert "<strong>Random weights: these numbers measure nothing.</strong>" in text
    assert re.search(rf"weights of {re.escape(first)},\s+{re.escape(second)} were drawn at "
                     "random", text)

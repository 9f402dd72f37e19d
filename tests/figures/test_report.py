"""The report captions (workflow/report/*.rst): every branch renders as reStructuredText with no
docutils system message (a stray ``|x|`` is a substitution reference, an error)."""

import io
from types import SimpleNamespace

import docutils.core
import jinja2
import pytest

from builders import CONFIG, REPORT
from ips.config import validate
from ips.figures.make import figure_files
from ips.figures.text.captions import (
    TABLES,
    captions,
    case_study_name,
    report_captions,
    report_section,
)


def render(template: str, **wildcards) -> str:
    """The caption as the report shows it: Jinja with `snakemake` (params as the figures rule
    gives them), then docutils to HTML; fails on any system message of level warning or
    above."""
    snakemake = SimpleNamespace(wildcards=SimpleNamespace(**wildcards),
                                params=SimpleNamespace(captions=report_captions(["m"], ["d"])),
                                config=validate(dict(CONFIG)))
    text = jinja2.Template((REPORT / template).read_text(encoding="utf-8")).render(
        snakemake=snakemake)
    warnings = io.StringIO()
    html = docutils.core.publish_parts(
        text, writer="html",
        settings_overrides={"warning_stream": warnings, "report_level": 2, "halt_level": 5},
    )["body"]
    assert not warnings.getvalue(), f"{template} {wildcards}: {warnings.getvalue()}"
    assert "system-message" not in html
    return html


FILES = sorted({f.rsplit(".", 1)[0] + ".png" for f in figure_files()} | set(TABLES)
               | {case_study_name("m", "d") + ".png"})


@pytest.mark.parametrize("file", FILES)
def test_every_figure_and_table_has_its_own_clean_caption(file):
    name, ext = file.rsplit(".", 1)
    html = render("figures.rst", name=name, ext=ext)
    # its own caption (the fallback shows only the file name), the README's text under a title
    caption = captions(["m"], ["d"])[file]
    assert caption.title in html and caption.text[1:60] in html, html


@pytest.mark.parametrize("file, section", [
    ("sparsity.png", "1 Interactions"), ("case_study_m_d.png", "1 Interactions"),
    ("ips_by_order.png", "2 IPS of the models"), ("factor_scale.png", "3 Factors"),
    ("factors.png", "3 Factors"), ("representation_baseline.png", "4 Robustness and baselines"),
    ("ips_table.csv", "5 Tables"), ("claims.csv", "5 Tables"), ("unknown.png", "5 Tables")])
def test_report_sections(file, section):
    assert report_section(file) == section


def test_workflow_description_renders_cleanly():
    html = render("workflow.rst")
    assert "sign-flip" in html


def test_the_factor_captions_are_the_four_factors():
    from ips.comparisons.factors import FACTORS
    from ips.figures.text.captions import FACTOR_TITLES

    assert tuple(FACTOR_TITLES) == FACTORS

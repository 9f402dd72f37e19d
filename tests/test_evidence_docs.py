"""The tables of docs/evidence.md that tests/evidence_tables.py generates from a committed claims
table (which of the paper's claims survive their controls, and every row that does) are the
ones the document holds. Every other number that docs/evidence.md and docs/method.md quote
from a committed table is rendered from it by `make docs` (docs/templates/; checked by
tests/figures/test_docs.py)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
S, G = "smollm2-135m-instruct", "gemma3-270m"


def test_the_survival_tables_are_generated_from_the_claims_table():
    """docs/evidence.md holds the two tables `evidence_tables` makes from
    studies/evidence/claims.csv: per claim and model which verdicts survive their controls, and
    every surviving row; and the surviving rows of studies/retired/scale/claims.csv."""
    import evidence_tables

    doc = (ROOT / "docs/evidence.md").read_text(encoding="utf-8")
    rows = evidence_tables.read(ROOT / "studies/evidence/claims.csv")
    for lines in (evidence_tables.survival_table(rows, {S, G}),
                  evidence_tables.surviving_rows(rows)):
        assert "\n".join(lines) in doc, "run: python tests/evidence_tables.py studies/evidence/claims.csv"
    scale = evidence_tables.read(ROOT / "studies/retired/scale/claims.csv")  # its surviving rows
    assert "\n".join(evidence_tables.surviving_rows(scale)) in doc, \
        "run: python tests/evidence_tables.py studies/retired/scale/claims.csv"

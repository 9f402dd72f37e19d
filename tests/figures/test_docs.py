"""Documents rendered from tables (ips.figures.text.docs, `ips docs`): the repository's are
current, numbers print as the docs print them, and a template that reads a missing row,
column or name, or whose sentence no longer holds, stops in one line naming it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ips.errors import InputError
from ips.figures.text.docs import count, num, p, pct, percent, render, signed, stale

ROOT = Path(__file__).resolve().parents[2]


def test_the_repositorys_docs_are_rendered_from_their_tables():
    r = subprocess.run([sys.executable, "-m", "ips", "docs", "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rendered = render(ROOT, ROOT / "docs/templates")
    assert {p.relative_to(ROOT).as_posix() for p in rendered} >= {"README.md",
                                                                 "docs/evidence.md"}


@pytest.mark.parametrize("value, expected", [
    (p(0.0253906), "0.025"), (p(0.00195312), "0.0020"), (p(0.000454541), "0.00045"),
    (p(0.130194), "0.13"), (p(1.0), "1"), (p(0.5), "0.5"), (p(0.0625), "0.063"),
    (p(0.125), "0.13"), (p(0.0), "0"), (p(0.7031), "0.70"), (num(-0.0037, 2), "0.00"),
    (pct(-0.18384), "−18.4 %"), (pct(0.00387), "+0.4 %"), (pct(0.0), "+0.0 %"),
    (percent(0.0652054), "6.5 %"), (num(0.876978), "0.877"), (num(-0.3811, 3), "−0.381"),
    (num(0.425667, 2), "0.43"), (signed(0.0432), "+0.043"), (count(1234.0), "1,234"),
])
def test_numbers_print_as_the_docs_print_them(value, expected):
    assert value == expected


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "t.csv").write_text("claim,scope,estimate,verdict\n"
                                    "a,x,-0.2,supported\na,y,0.05,undecided\nb,x,0.3,control\n")
    (tmp_path / "c.yaml").write_text("hypotheses: [{claim: a, scope: x}]\n")
    templates = tmp_path / "templates"
    (templates / "docs").mkdir(parents=True)
    return tmp_path, templates


def write(templates, name, text):
    (templates / name).write_text(text)


def test_a_template_renders_its_tables_numbers(tree):
    root, templates = tree
    write(templates, "_part.j2", '{% set t = table("t.csv") %}')
    write(templates, "docs/out.md.j2",
          '{% import "_part.j2" as part %}{% set h = config("c.yaml").hypotheses[0] %}'
          '{% set r = part.t.row(claim=h.claim, scope=h.scope) %}'
          '{{ require(r.verdict == "supported", "a holds") }}'
          'a drops by {{ r.estimate | pct }}; {{ part.t.count(claim="a") }} rows of a; '
          '{{ part.t.rows() | rejectattr("verdict", "equalto", "control") | list | length }} '
          'trained\n')
    out = render(root, templates)
    assert out == {root / "docs/out.md": "a drops by −20.0 %; 2 rows of a; 2 trained\n"}
    assert stale(out) == [root / "docs/out.md"]  # not written yet; _part.j2 is no document
    (root / "docs").mkdir()
    (root / "docs/out.md").write_text(out[root / "docs/out.md"])
    assert stale(out) == []


@pytest.mark.parametrize("text, message", [
    ('{{ table("t.csv").row(claim="a").estimate }}', "2 rows where {'claim': 'a'}"),
    ('{{ table("t.csv").row(claim="z").estimate }}', "0 rows where {'claim': 'z'}"),
    ('{{ table("t.csv").row(scope="y").mde }}', "t.csv: no column 'mde'"),
    ('{{ table("nope.csv").rows() }}', "nope.csv: cannot be read"),
    ('{{ estimate }}', "'estimate' is undefined"),
    ('{{ table("t.csv").row(scope="y").verdict - 1 }}', "TypeError: unsupported operand"),
    ('{{ require(table("t.csv").row(scope="y").verdict == "supported", "y holds") }}',
     "no longer true of its table: y holds"),
])
def test_a_template_that_no_longer_fits_its_tables_stops(tree, text, message):
    root, templates = tree
    write(templates, "bad.md.j2", text)
    with pytest.raises(InputError, match="bad.md.j2") as e:
        render(root, templates)
    assert message in str(e.value)


def test_check_names_each_stale_document(tree):
    root, templates = tree
    write(templates, "out.md.j2", '{{ table("t.csv").row(scope="y").estimate | num(2) }}\n')
    cmd = [sys.executable, "-m", "ips", "docs", "--templates", str(templates), "--root",
           str(root)]
    r = subprocess.run([*cmd, "--check"], capture_output=True, text=True)
    assert r.returncode == 1 and "out.md: stale; run `make docs`" in r.stdout
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    assert (root / "out.md").read_text() == "0.05\n"
    assert subprocess.run([*cmd, "--check"], capture_output=True).returncode == 0


def test_the_survival_tables_count_a_claims_table_by_hand(tmp_path):
    """docs/templates/_survival.j2 on a claims table small enough to count by hand: rows are
    grouped by claim and the model their scope names (a pair "a vs b", else all models), a
    twin's rows (weights random) left out, and the rows that stand listed."""
    head = "claim,scope,estimate,ci_low,ci_high,n,p_value,raw_verdict,verdict,control_estimate,control_verdict,control_p,weights\n"
    rows = ["c,a / x,0.5,0.4,0.6,10,,supported,supported,0.1,undecided,0.01,trained",
            "c,a / y,0.2,0.1,0.3,12,,supported,undecided,0.2,supported,0.4,trained",
            "c,b / x,0.3,,,8,0.03,contradicted,undecided,0.3,contradicted,0.5,trained",
            "d,x / a vs b / 0shot,-0.1,,,6,0.02,supported,supported,0.0,undecided,0.04,trained",
            "e,x,0.9,,,,,untestable,untestable,,,,trained",
            "c,a-twin / x,0.5,0.4,0.6,10,,supported,control,,,,random"]
    (tmp_path / "claims.csv").write_text(head + "\n".join(rows) + "\n")
    templates = tmp_path / "templates"
    shutil.copytree(ROOT / "docs/templates", templates, ignore=shutil.ignore_patterns("*.md.j2"))
    (templates / "out.md.j2").write_text(
        '{% import "_survival.j2" as s %}{% set t = table("claims.csv").where(weights="trained") %}'
        '{{ s.survival_table(t, ["a", "b"]) }}\n{{ s.surviving_rows(t) }}\n')
    text = render(tmp_path, templates)[tmp_path / "out.md"]
    assert text.splitlines()[2:] == [
        "| `c` | a | 2 | 10–12 | 2 / 0 | 1 | 1 / 0 |",
        "| `c` | b | 1 | 8 | 0 / 1 | 1 | 0 / 0 |",
        "| `d` | a vs b | 1 | 6 | 1 / 0 | 0 | 1 / 0 |",
        "| `e` | all models | 1 | – | 0 / 0 | 0 | 0 / 0 |",
        "| claim | scope | estimate [95% CI] | n | p | twins' estimate | p (trained − twins) | verdict |",
        "|---|---|---|---|---|---|---|---|",
        "| `c` | a / x | 0.5 [0.4, 0.6] | 10 | – | 0.1 | 0.01 | ✓ |",
        "| `d` | x / a vs b / 0shot | -0.1 | 6 | 0.02 | 0 | 0.04 | ✓ |"]

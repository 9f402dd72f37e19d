"""The tables of docs/evidence.md that are generated from a committed claims table: which of
the paper's claims survive their controls (the untrained twins), per claim and model, with n,
and every row that does. tests/test_evidence_docs.py checks that the document holds them as
generated here; `python tests/evidence_tables.py studies/evidence/claims.csv` prints them.
"""

import csv
import sys
from collections import defaultdict

SYMBOL = {"supported": "✓", "contradicted": "✗"}
DECIDED = tuple(SYMBOL)


def read(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def who(scope: str, models: set[str]) -> str:
    """The model a row is about: the part of its scope that names a model (or a pair, "a vs
    b"); "all models" for a row across models."""
    for part in scope.split(" / "):
        if part in models or (" vs " in part and set(part.split(" vs ")) <= models):
            return part
    return "all models"


def trained(rows: list[dict]) -> list[dict]:
    """The rows about trained models: a twin's own rows read `control`."""
    return [r for r in rows if r["verdict"] != "control"]


def _count(rows: list[dict], column: str) -> str:
    return " / ".join(str(sum(r[column] == v for r in rows)) for v in DECIDED)


def survival_table(rows: list[dict], models: set[str]) -> list[str]:
    """Per claim and model: rows, their n, how many the raw test decides (✓ / ✗), how many of
    those the twins' same statistic decides alike, and how many survive the control (the
    final verdict ✓ / ✗)."""
    groups = defaultdict(list)
    for r in trained(rows):
        groups[r["claim"], who(r["scope"], models)].append(r)
    out = ["| claim | model | rows | n | raw ✓ / ✗ | twins decide alike | final ✓ / ✗ |",
           "|---|---|---|---|---|---|---|"]
    for (claim, model), mine in groups.items():
        ns = sorted(int(r["n"]) for r in mine if r["n"])
        n = "–" if not ns else (f"{ns[0]}" if ns[0] == ns[-1] else f"{ns[0]}–{ns[-1]}")
        alike = sum(r["raw_verdict"] in DECIDED and r["control_verdict"] == r["raw_verdict"]
                    for r in mine)
        out.append(f"| `{claim}` | {model} | {len(mine)} | {n} | {_count(mine, 'raw_verdict')} "
                   f"| {alike} | {_count(mine, 'verdict')} |")
    return out


def _number(x: str, fmt: str = ".3g") -> str:
    return "–" if x in ("", "nan") else format(float(x), fmt)


def surviving_rows(rows: list[dict]) -> list[str]:
    """Every row decided in its final verdict: its estimate and test, its control's estimate
    and the test of trained − control."""
    out = ["| claim | scope | estimate [95% CI] | n | p | twins' estimate | p (trained − "
           "twins) | verdict |", "|---|---|---|---|---|---|---|---|"]
    for r in trained(rows):
        if r["verdict"] not in DECIDED:
            continue
        ci = (f" [{_number(r['ci_low'])}, {_number(r['ci_high'])}]" if r["ci_low"] else "")
        out.append(f"| `{r['claim']}` | {r['scope']} | {_number(r['estimate'])}{ci} | {r['n']} "
                   f"| {_number(r['p_value'], '.2g')} | {_number(r['control_estimate'])} | "
                   f"{_number(r['control_p'], '.2g')} | {SYMBOL[r['verdict']]} |")
    return out


if __name__ == "__main__":
    table = read(sys.argv[1])
    names = {r["scope"].split(" / ")[0] for r in table if " / " in r["scope"]}
    print("\n".join(survival_table(table, names)), "\n")
    print("\n".join(surviving_rows(table)))

"""The numbers that docs/evidence.md (its sections, and "In short", once the README's) quote from the committed
tables (studies/evidence/*.csv, studies/retired/scale/*.csv) are those tables' numbers. The passages
that its template (docs/templates/docs/evidence.md.j2) reads from the tables itself, the
confirmatory run's and the README's findings, are rendered by `make docs` instead
(tests/figures/test_docs.py checks that they are current).

QUOTES holds every such passage, each with `{}` (or `N` in an f-string) where a number stands and
the values the tables give for those numbers, read from the CSVs as the study wrote them: cells,
the min and max of the rows a range summarises, counts of rows and of verdicts. A passage must
occur in its document (any run of spaces and line breaks reads as one space), and each number
must be its value rounded to the digits the document prints (half a unit of its last digit either
way; a list of values: each of them). A re-run that changes a table fails here until the document
follows; so does a document whose wording drifts from its passage. Verdict words and symbols in a
passage are read from the tables too.

What is quoted here is what comes from a committed table. Every other number of these texts is
left alone: timings, memory and job counts, commits and dates, the study's settings (n = 6, τ,
α, items per dataset, noise levels), the paper's own numbers and section numbers, bounds that are
arithmetic (2/2^n, 2/4!, a uniform guesser's PSS), and the numbers of runs whose tables are not
committed (the quick start of the README, the run before this one, the sgd fits' objectives).
"""

import csv
import math
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
N = "{}"  # a number's place in a passage
NUMBER = r"[−+-]?\d+(?:,\d{3})*(?:\.\d+)?"

S, G = "smollm2-135m-instruct", "gemma3-270m"
Q05, Q15 = "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"
FOUR = (S, G, Q05, Q15)
MCQ, DATASETS = ("arc-easy", "mmlu"), ("arc-easy", "mmlu", "dolly")
CELLS = [(m, d) for m in (S, G) for d in DATASETS]  # the order of every table of evidence.md
NAME = {S: "SmolLM2", G: "Gemma 3", "arc-easy": "ARC-Easy", "mmlu": "MMLU", "dolly": "Dolly"}
SYMBOL = {"supported": "✓", "contradicted": "✗", "undecided": "?"}
DECIDED = ("supported", "contradicted")
# the rows of claims.csv that test the paper's own claims (the claims table and few-shot table)
PAPER = ("sparse_salient_share", "sparse_matching_top5", "types_changed_opposite",
         "types_changed_similar", "types_unchanged_unstable", "order_low_below_mid",
         "order_mid_below_high", "few_shot_most_from_0_to_1")
ORDER = ("order_low_below_mid", "order_mid_below_high")
BEYOND = tuple(f"{c}_beyond_null" for c in ORDER)


class Cell(float):
    """A number read from a table, with where it was read; a p-value is printed with at least
    two significant digits (0.0059, not 0.006; 0.5 and 1 where the second digit is 0)."""

    def __new__(cls, value, where: str):
        cell = super().__new__(cls, value)
        cell.where = where
        return cell

    def __neg__(self):
        return Cell(-float(self), f"−({self.where})")

    def digits(self) -> int:
        """The fewest decimals that print this number."""
        return 1 - math.floor(math.log10(self)) if self.where.endswith("p_value") else 0


@cache
def table_rows(name: str) -> tuple[dict[str, str], ...]:
    """Every row of a committed table, the twins' included."""
    # a study's tables: studies/evidence/ for a bare name, studies/<study>/ for "study/name"
    path = ROOT / "studies" / (name if "/" in name else f"evidence/{name}")
    with open(path, newline="", encoding="utf-8") as f:
        return tuple(csv.DictReader(f))


@cache
def table(name: str) -> tuple[dict[str, str], ...]:
    """A committed table without the untrained twins' rows (a claims row of a twin reads
    `control`; other tables name the twin's model): the quoted numbers are the trained
    models'; the twins enter through the claims table's control columns."""
    return tuple(r for r in table_rows(name)
                 if r.get("verdict") != "control" and not r.get("model", "").endswith("-twin"))


def rows(name: str, **where) -> list[dict[str, str]]:
    """The rows of a table whose columns equal `where` (a tuple: any of its values); `verdict`
    is a row's own verdict (`own`)."""
    def value(r, k):
        return own(r) if k == "verdict" else r[k]
    return [r for r in table(name) if all(
        value(r, k) in v if isinstance(v, tuple) else value(r, k) == v
        for k, v in where.items())]


def cells(name: str, column: str, **where) -> list[Cell]:
    found = rows(name, **where)
    assert found, f"no row of {name} with {where}"
    return [Cell(r[column], f"{name} {where} {column}") for r in found]


def cell(name: str, column: str, **where) -> Cell:
    found = cells(name, column, **where)
    assert len(found) == 1, f"{len(found)} rows of {name} with {where}"
    return found[0]


def count(name: str, **where) -> Cell:
    return Cell(len(rows(name, **where)), f"rows of {name} with {where}")


def span(values) -> tuple[Cell, Cell]:
    values = list(values)
    return min(values), max(values)


def pct(*values: Cell) -> list[Cell]:
    return [Cell(100 * v, f"{v.where} × 100") for v in values]


def claim(claim: str, scope: str, column: str = "estimate", name: str = "claims.csv") -> Cell:
    return cell(name, column, claim=claim, scope=scope)


def own(row: dict[str, str]) -> str:
    """The verdict of a row's own test (`raw_verdict`; a table written before the controls
    has only `verdict`): the tables and prose of evidence.md quote it, the survival tables
    the final verdict beside the twins."""
    return row.get("raw_verdict") or row["verdict"]


def verdict(claim: str, scope: str, name: str = "claims.csv") -> str:
    (row,) = rows(name, claim=claim, scope=scope)
    return own(row)


def verdicts(name: str, claims: tuple[str, ...]) -> dict[tuple[int, str], str]:
    """{(which of `claims`, scope): verdict}; the scope without the group "/ 0shot" that the
    rows tested against a null add."""
    return {(claims.index(r["claim"]), r["scope"].removesuffix(" / 0shot")): own(r)
            for r in rows(name, claim=claims)}


def changed(a: dict, b: dict) -> Cell:
    assert a.keys() == b.keys()
    return Cell(sum(a[k] != b[k] for k in a), "verdicts that differ")


def scope(*parts: str) -> str:
    return " / ".join(parts)


def mask_scope(model: str, dataset: str, mask: str) -> str:
    own = "pad" if model in (Q05, Q15) else "unk"
    return scope(model, dataset, "0shot", f"{own} vs {mask}, band all")


def ips(model: str, dataset: str, group: str = "0shot", band: str = "all",
        column: str = "ips", name: str = "ips_table.csv") -> Cell:
    return cell(name, column, model=model, dataset=dataset, group=group, band=band)


def null(model: str, dataset: str, kind: str, level: str = "", column: str = "null_ips",
         name: str = "null_table.csv") -> Cell:
    return cell(name, column, model=model, dataset=dataset, group="0shot", band="all",
                null=kind, level=level)


def share(kind: str, level: str, models: tuple[str, ...], datasets: tuple[str, ...],
          name: str = "null_table.csv") -> list[float]:
    """A null's IPS over the template IPS beside it, per cell (0-shot group, band all)."""
    found = rows(name, model=models, dataset=datasets, group="0shot", band="all",
                 null=kind, level=level)
    assert found, f"no {kind} null {level} in {name}"
    return [float(r["null_ips"]) / float(r["ips"]) for r in found]


def keyed(kind: str, **where) -> Cell:
    """How many rows of ips_table.csv (model, dataset, group, band) have a null of this kind."""
    return Cell(len({(r["model"], r["dataset"], r["group"], r["band"])
                     for r in rows("null_table.csv", null=kind, **where)}), f"{kind} null rows")


def mask_rows(column: str, **where) -> list[Cell]:
    """`column` of the baseline null's band-all rows (null_table.csv)."""
    return cells("null_table.csv", column, null="baseline", group="0shot", band="all", **where)


def differing_masks() -> list[Cell]:
    """Salient-set Jaccard of every baseline null of both studies whose two baselines differ:
    all but Gemma 3's pad, which acts as its unk does."""
    return (mask_rows("jaccard", model=S) + mask_rows("jaccard", level="word:the")
            + cells("retired/scale/null_table.csv", "jaccard", null="baseline", band="all"))


def r_squared(model: str, dataset: str, name: str = "claims.csv") -> tuple[Cell, Cell]:
    """The mean R² of IPS and of the matched-size null that the note of ips_beyond_change_size
    prints."""
    (row,) = rows(name, claim="ips_beyond_change_size", scope=scope(model, dataset, "0shot"))
    found = re.search(r"mean R² of IPS ([\d.]+), of the null ([\d.]+)", row["note"])
    return tuple(Cell(x, f"{name} note of ips_beyond_change_size {model}/{dataset}")
                 for x in found.groups())


def claim_cell(claim: str, scope: str, name: str = "claims.csv", percent: bool = False):
    """A cell of a claims table as evidence.md writes it: the verdict's symbol, the estimate
    with its interval and n, or with its p and n; and its numbers."""
    found = rows(name, claim=claim, scope=scope)
    if not found:
        return "", []
    (r,) = found
    c = {k: Cell(r[k], f"{name} {claim} {scope} {k}") for k in
         ("estimate", "ci_low", "ci_high", "p_value", "n") if r[k]}
    if percent:
        return f"{SYMBOL[own(r)]} {N}% [{N}%, {N}%] p={N}", [
            *pct(c["estimate"], c["ci_low"], c["ci_high"]), c["p_value"]]
    if "ci_low" in c:
        return f"{SYMBOL[own(r)]} {N} [{N}, {N}] n={N}", [
            c["estimate"], c["ci_low"], c["ci_high"], c["n"]]
    return f"{SYMBOL[own(r)]} {N} p={N} n={N}", [c["estimate"], c["p_value"], c["n"]]


def table_row(label: str, parts) -> tuple[str, list]:
    """A Markdown table row from its label and (text, values) cells."""
    return (" | ".join([f"| {label}", *(text for text, _ in parts)]) + " |",
            [v for _, values in parts for v in values])


def interval(name: str, stem: str, **where) -> tuple[str, list[Cell]]:
    """`x [lo, hi]` of a peer_table column, or — where the table has none."""
    (r,) = rows(name, **where)
    if not r[stem]:
        return "—", []
    return f"{N} [{N}, {N}]", [Cell(r[k], f"{name} {where} {k}")
                               for k in (stem, f"{stem}_ci_low", f"{stem}_ci_high")]


def evidence_tables() -> list[tuple[str, list]]:
    """The Markdown tables of evidence.md, row by row."""
    out = []
    for m, d in CELLS:
        f16 = [(N, [null(m, d, "precision", "float16")])] if m == S else [("(not run)", [])]
        out.append(table_row(f"{NAME[m]} / {NAME[d]}", [
            (N, [ips(m, d)]),
            (f"{N} / {N} / {N}", [null(m, d, "gaussian", lv) for lv in ("0.003", "0.01", "0.03")]),
            (N, [null(m, d, "matched")]), (N, [null(m, d, "precision", "bfloat16")]), *f16,
            (N, [null(m, d, "baseline", "pad")]), (N, [null(m, d, "baseline", "word:the")])]))
    for c in PAPER:
        out.append(table_row(c, [claim_cell(c, scope(m, d)) for m, d in CELLS]))
    for k in ("1", "3"):
        out.append(table_row(f"{k}-shot", [
            claim_cell("factor_few_shot", scope(d, m, f"{k}shot vs 0shot"), percent=True)
            for m in (S, G) for d in MCQ]))
    for m, d in CELLS:
        where = {"model": m, "dataset": d, "group": "0shot"}
        out.append(table_row(f"{NAME[m]} / {NAME[d]}", [
            (N, [ips(m, d)]),
            *(interval("peer_table.csv", k, **where)
              for k in ("accuracy_spread", "pss", "consistency_rate", "dv_unmasked"))]))
    for m, label in zip(FOUR, ("SmolLM2-135M-Instruct", "Gemma 3 270M",
                               "Qwen2.5-Coder-0.5B-Instruct", "Qwen2.5-Coder-1.5B-Instruct")):
        out.append(table_row(label, [
            (f"{N} [{N}, {N}]", [ips(m, "mmlu", name="retired/scale/ips_table.csv", column=k)
                                 for k in ("ips", "ips_ci_low", "ips_ci_high")]),
            (N, [ips(m, "mmlu", name="retired/scale/ips_table.csv", column="matched_null_ips")]),
            (N, [null(m, "mmlu", "gaussian", "0.01", name="retired/scale/null_table.csv")]),
            (f"{N} [{N}, {N}]", [ips(m, "mmlu", "1shot", name="retired/scale/ips_table.csv", column=k)
                                 for k in ("ips", "ips_ci_low", "ips_ci_high")]),
            (N, [ips(m, "mmlu", name="retired/scale/ips_table.csv", column="output_consistency")])]))
    return out


def evidence_prose() -> list[tuple[str, list]]:
    """The numbers of evidence.md's text, section by section."""
    gauss = {lv: [scope(m, d, "0shot", f"noise {lv} × range of v") for m, d in CELLS]
             for lv in ("0.01", "0.03")}
    beyond = (-claim("template_below_matched_null", scope(m, d, "0shot"))
              for m, d in [(G, "arc-easy"), (G, "mmlu"), (G, "dolly"), (S, "dolly")])
    few = {(m, d, k): scope(d, m, f"{k}shot vs 0shot") for m in (S, G) for d in MCQ
           for k in ("1", "3")}
    sgd_long = [claim("factor_few_shot", few[G, d, k], name="claims_sgd_long.csv")
                for d in MCQ for k in ("1", "3")]
    lost = [claim("factor_few_shot", few[G, d, k], "p_value", name="claims_sgd_long.csv")
            for d, k in (("arc-easy", "1"), ("arc-easy", "3"), ("mmlu", "1"))]
    return [
        ("the precision null (T1/T2, T1-1shot, A1/A2 and A1's two rewordings of the first shard, "
         "{} samples per cell",
         [cells("null_table.csv", "n_paired", null="precision", band="all")]),
        ("IPS of the 0-shot template pairs (band all, n = {} samples; Dolly {})",
         [cells("ips_table.csv", "n_valued_samples", group="0shot", band="all", dataset=MCQ),
          cells("ips_table.csv", "n_valued_samples", group="0shot", band="all", dataset="dolly")]),
        ("beside every IPS of `ips_table.csv` (all {} rows: the 0-shot, few-shot and perturbed "
         "groups, every band); the precision and baseline nulls, which re-score samples, beside the "
         "groups some of whose conditions were scored again: the precision null in {} rows (the "
         "0-shot, 1-shot and perturbation groups; not 3-shot), the baseline null in {} (the 0-shot "
         "and perturbation groups)",
         [[count("ips_table.csv"), keyed("gaussian"), keyed("matched")],
          [keyed("precision"), count("ips_table.csv", group=("0shot", "1shot", "perturbation"))],
          [keyed("baseline"), count("ips_table.csv", group=("0shot", "perturbation"))]]),
        ("gives {}–{} % (SmolLM2) and {}–{} % (Gemma) of the template IPS on the MCQ datasets",
         [*span(100 * x for x in share("gaussian", "0.01", (S,), MCQ)),
          *span(100 * x for x in share("gaussian", "0.01", (G,), MCQ))]),
        ("the precision null is over the {} re-scored samples, the baseline null over the {} re-scored",
         [cells("null_table.csv", "n_paired", null="precision", band="all"),
          cells("null_table.csv", "n_paired", null="baseline", band="all")]),
        (f"and the template IPS lies above it in {N} of {N} cells (per-sample sign-flip; Gemma on "
         f"Dolly: {N} against {N}, {verdict('template_above_gaussian_null', gauss['0.01'][5])}, "
         f"p = {N}). **Noise of 3 %** gives {N}–{N}: SmolLM2's MCQ IPS still lies above it (by {N} "
         f"and {N}), Gemma's MCQ IPS only by {N} (p = {N} and {N}, undecided), and on Dolly the "
         f"template IPS lies below it for both models (Gemma by {N}: contradicted)",
         [count("claims.csv", claim="template_above_gaussian_null", scope=tuple(gauss["0.01"]),
                verdict="supported"),
          count("claims.csv", claim="template_above_gaussian_null", scope=tuple(gauss["0.01"])),
          ips(G, "dolly"), null(G, "dolly", "gaussian", "0.01"),
          claim("template_above_gaussian_null", gauss["0.01"][5], "p_value"),
          *span(null(m, d, "gaussian", "0.03") for m, d in CELLS),
          claim("template_above_gaussian_null", gauss["0.03"][0]),
          claim("template_above_gaussian_null", gauss["0.03"][1]),
          [claim("template_above_gaussian_null", gauss["0.03"][i]) for i in (3, 4)],
          claim("template_above_gaussian_null", gauss["0.03"][3], "p_value"),
          claim("template_above_gaussian_null", gauss["0.03"][4], "p_value"),
          -claim("template_above_gaussian_null", gauss["0.03"][5])]),
        (f"gives {N}–{N} for SmolLM2 on MCQ, {N}–{N} % of its template IPS, and more than the "
         f"template IPS for Gemma on every dataset ({N} against {N}, {N} against {N}, {N} against "
         f"{N}) and for SmolLM2 on Dolly ({N} against {N}). With {N} re-scored samples per cell",
         [*span(null(S, d, "precision", "bfloat16") for d in MCQ),
          *span(100 * x for x in share("precision", "bfloat16", (S,), MCQ)),
          *(x for d in DATASETS for x in (null(G, d, "precision", "bfloat16"), ips(G, d))),
          null(S, "dolly", "precision", "bfloat16"), ips(S, "dolly"),
          cells("null_table.csv", "n_paired", null="precision", band="all")]),
        ("Rounding to float16, the paper's precision, gives SmolLM2 {}–{}",
         span(null(S, d, "precision", "float16") for d in DATASETS)),
        (f"For SmolLM2 the IPS between its unk baseline and its pad token is {N}–{N}, and with "
         f'" the" {N}–{N}, beside template IPS of {N}–{N} on MCQ and {N} on Dolly: larger in all '
         f"{N} rows (IPS − baseline null {N} to {N}, p ≤ {N}, contradicted); the salient sets of the "
         f"two baselines share {N}–{N} % of their union (Jaccard {N}–{N}), and v moves by {N}–{N} "
         f"% of its range (median sd(Δv)/range). For Gemma 3 the pad token acts as its unk does "
         f"(baseline null {N}–{N}, Jaccard {N}–{N}, sd(Δv)/range {N}–{N} %: the template IPS lies "
         f"above it, supported in all {N} cells, p = {N}), but the word \" the\" gives {N}–{N}, "
         f"above its template IPS on all three datasets (contradicted, p = {N}; Jaccard {N}–{N})",
         [*span(mask_rows("null_ips", model=S, level="pad")),
          *span(mask_rows("null_ips", model=S, level="word:the")),
          *span(ips(S, d) for d in MCQ), ips(S, "dolly"),
          count("claims.csv", claim="template_above_baseline_null", verdict="contradicted",
                scope=tuple(mask_scope(S, d, k) for d in DATASETS for k in ("pad", "word:the"))),
          *reversed(span(mask_rows("ips_minus_null", model=S))),
          max(claim("template_above_baseline_null", mask_scope(S, d, k), "p_value")
              for d in DATASETS for k in ("pad", "word:the")),
          *span(pct(*mask_rows("jaccard", model=S))), *span(mask_rows("jaccard", model=S)),
          *span(pct(*mask_rows("dv_rel", model=S))),
          *span(mask_rows("null_ips", model=G, level="pad")),
          *span(mask_rows("jaccard", model=G, level="pad")),
          *span(pct(*mask_rows("dv_rel", model=G, level="pad"))),
          count("claims.csv", claim="template_above_baseline_null", verdict="supported",
                scope=tuple(mask_scope(G, d, "pad") for d in DATASETS)),
          [claim("template_above_baseline_null", mask_scope(G, d, "pad"), "p_value")
           for d in DATASETS],
          *span(mask_rows("null_ips", model=G, level="word:the")),
          [claim("template_above_baseline_null", mask_scope(G, d, "word:the"), "p_value")
           for d in DATASETS],
          *span(mask_rows("jaccard", model=G, level="word:the"))]),
        ("(Gemma's pad aside) the salient sets share {}–{} % of their union (Jaccard {}–{}, both "
         "studies)", [*span(pct(*differing_masks())), *span(differing_masks())]),
        ("paired sign-flip over the {} re-scored samples, band all)", [mask_rows("n_paired")]),
        ("(ΔIPS = (IPS_k − IPS_0)/IPS_0, n = {} each)",
         [cells("claims.csv", "n", claim="factor_few_shot")]),
        ("95 % bootstrap interval, n = {} samples (Dolly {})",
         [cells("peer_table.csv", "dv_unmasked_n", group="0shot", dataset=MCQ),
          cells("peer_table.csv", "dv_unmasked_n", group="0shot", dataset="dolly")]),
        ("(IPS − matched null {} [{}, {}] and {} [{}, {}], undecided)",
         [claim("template_below_matched_null", scope(S, d, "0shot"), k)
          for d in MCQ for k in ("estimate", "ci_low", "ci_high")]),
        ("(by {}–{}, supported; Gemma's p ≤ {})",
         [*span(beyond), max(claim("template_below_matched_null", scope(G, d, "0shot"), "p_value")
                             for d in DATASETS)]),
        (f"within SmolLM2 on ARC-Easy (Spearman ρ = {N}, p = {N}, n = {N}) and on Dolly ({N}, "
         f"p = {N}, n = {N}) and within Gemma on Dolly ({N}, p = {N}, n = {N}); undecided in "
         f"the other {N} cells",
         [*(claim("ips_falls_with_range", scope(m, d, "0shot"), k)
            for m, d in [(S, "arc-easy"), (S, "dolly"), (G, "dolly")]
            for k in ("estimate", "p_value", "n")),
          count("claims.csv", claim="ips_falls_with_range", verdict="undecided")]),
        (f"{N}–{N}% of all interactions are salient at τ = 0.1 in {N} of {N} cells (SmolLM2 on "
         f"Dolly: {N}% [{N}%, {N}%], {verdict('sparse_salient_share', scope(S, 'dolly'))}), and "
         f"the top 5% reproduce v with a normalised RMS error of {N}–{N} in all {N}",
         [*span(pct(*cells("claims.csv", "estimate", claim="sparse_salient_share",
                           verdict="contradicted"))),
          count("claims.csv", claim="sparse_salient_share", verdict="contradicted"),
          count("claims.csv", claim="sparse_salient_share"),
          *pct(*(claim("sparse_salient_share", scope(S, "dolly"), k)
                 for k in ("estimate", "ci_low", "ci_high"))),
          *span(cells("claims.csv", "estimate", claim="sparse_matching_top5")),
          count("claims.csv", claim="sparse_matching_top5", verdict="contradicted")]),
        (f"**Prediction unchanged, most interactions still unstable: supported** in {N} of {N} "
         f"cells ({N}–{N}%), contradicted for Gemma on Dolly ({N}% [{N}%, {N}%])",
         [count("claims.csv", claim="types_unchanged_unstable", verdict="supported"),
          count("claims.csv", claim="types_unchanged_unstable"),
          *span(pct(*cells("claims.csv", "estimate", claim="types_unchanged_unstable",
                           verdict="supported"))),
          *pct(*(claim("types_unchanged_unstable", scope(G, "dolly"), k)
                 for k in ("estimate", "ci_low", "ci_high")))]),
        ("only {}–{} samples per cell changed their prediction under a 0-shot template pair, too "
         "few to decide. The point estimates, {}–{}% opposite sign and {}–{}% similar",
         [*span(cells("claims.csv", "n", claim="types_changed_opposite")),
          *span(pct(*cells("claims.csv", "estimate", claim="types_changed_opposite"))),
          *span(pct(*cells("claims.csv", "estimate", claim="types_changed_similar")))]),
        ("Of the {} band tests, {} contradict it (IPS^mid above IPS^high by {} for SmolLM2 on "
         "ARC-Easy, p = {}, and by {} for Gemma on MMLU, p = {}), {} supports it (IPS^low below "
         "IPS^mid by {} for Gemma on Dolly, p = {}, n = {}), {} are undecided.",
         [count("claims.csv", claim=ORDER),
          count("claims.csv", claim=ORDER, verdict="contradicted"),
          claim("order_mid_below_high", scope(S, "arc-easy")),
          claim("order_mid_below_high", scope(S, "arc-easy"), "p_value"),
          claim("order_mid_below_high", scope(G, "mmlu")),
          claim("order_mid_below_high", scope(G, "mmlu"), "p_value"),
          count("claims.csv", claim=ORDER, verdict="supported"),
          -claim("order_low_below_mid", scope(G, "dolly")),
          claim("order_low_below_mid", scope(G, "dolly"), "p_value"),
          claim("order_low_below_mid", scope(G, "dolly"), "n"),
          count("claims.csv", claim=ORDER, verdict="undecided")]),
        ("That most of the drop comes from the first example is undecided in all {} cells.",
         [count("claims.csv", claim="few_shot_most_from_0_to_1", verdict="undecided")]),
        ("The {} rows of these two tables are testable",
         [count("claims.csv", claim=(*PAPER, "factor_few_shot"))]),
        ("(`claims.csv` also holds {} rows tested against the nulls or the range of v, {} against "
         "the baseline null, the {} low-band rows of the next section, the {} within-model rows of "
         "`ips_beyond_change_size` and {} untestable ones, {} of them the across-model rows of "
         "the output-level metrics.)",
         [count("claims.csv", claim=("template_below_matched_null", *BEYOND,
                                     "template_above_gaussian_null", "ips_falls_with_range",
                                     "template_above_precision_null",
                                     "factor_few_shot_beyond_null")),
          count("claims.csv", claim="template_above_baseline_null"),
          count("claims.csv", claim="factor_few_shot_low_falls_most"),
          count("claims.csv", claim="ips_beyond_change_size"),
          count("claims.csv", verdict="untestable"),
          count("claims.csv", claim=("ips_vs_accuracy_spread", "ips_vs_pss",
                                     "ips_vs_consistency_rate", "ips_vs_dv_unmasked"))]),
        (f"Gemma's 3-shot drop survives on both datasets ({N}, p = {N}; {N}, p = {N}), its 1-shot "
         f"drop only just on ARC-Easy ({N}, p = {N}) and not on MMLU (p = {N}: "
         f"{verdict('factor_few_shot', few[G, 'mmlu', '1'])} → "
         f"{verdict('factor_few_shot_beyond_null', few[G, 'mmlu', '1'])}), and SmolLM2's 3-shot "
         f"rise on ARC-Easy stays ({N}, p = {N}). {N} of the {N} few-shot verdicts changes",
         [*(claim("factor_few_shot_beyond_null", few[m, d, k], c)
            for m, d, k in [(G, "arc-easy", "3"), (G, "mmlu", "3"), (G, "arc-easy", "1")]
            for c in ("estimate", "p_value")),
          claim("factor_few_shot_beyond_null", few[G, "mmlu", "1"], "p_value"),
          claim("factor_few_shot_beyond_null", few[S, "arc-easy", "3"]),
          claim("factor_few_shot_beyond_null", few[S, "arc-easy", "3"], "p_value"),
          changed(verdicts("claims.csv", ("factor_few_shot",)),
                  verdicts("claims.csv", ("factor_few_shot_beyond_null",))),
          count("claims.csv", claim="factor_few_shot")]),
        ("{} of the {} order verdicts change. Beyond its null IPS^low lies *above* IPS^mid for "
         "SmolLM2 on ARC-Easy ({}, p = {}) and Dolly ({}) and for Gemma on ARC-Easy ({}, p = {}), "
         "MMLU ({}) and Dolly ({}, where the raw IPS supported IPS^low < IPS^mid); IPS^mid lies above IPS^high for "
         "SmolLM2 on ARC-Easy and Gemma on MMLU, as in the raw IPS, and now also for Gemma on "
         "Dolly ({}, p = {}); SmolLM2 on Dolly points the other way, IPS^mid below IPS^high ({}, "
         f"p = {N}, {verdict(BEYOND[1], scope(S, 'dolly', '0shot'))};",
         [changed(verdicts("claims.csv", ORDER), verdicts("claims.csv", BEYOND)),
          count("claims.csv", claim=ORDER),
          claim(BEYOND[0], scope(S, "arc-easy", "0shot")),
          claim(BEYOND[0], scope(S, "arc-easy", "0shot"), "p_value"),
          claim(BEYOND[0], scope(S, "dolly", "0shot")),
          claim(BEYOND[0], scope(G, "arc-easy", "0shot")),
          claim(BEYOND[0], scope(G, "arc-easy", "0shot"), "p_value"),
          claim(BEYOND[0], scope(G, "mmlu", "0shot")),
          claim(BEYOND[0], scope(G, "dolly", "0shot")),
          claim(BEYOND[1], scope(G, "dolly", "0shot")),
          claim(BEYOND[1], scope(G, "dolly", "0shot"), "p_value"),
          claim(BEYOND[1], scope(S, "dolly", "0shot")),
          claim(BEYOND[1], scope(S, "dolly", "0shot"), "p_value")]),
        ("the paper's low < mid < high is contradicted in {} of the {} band tests and supported "
         "in {} (raw IPS: {} and {})",
         [count("claims.csv", claim=BEYOND, verdict="contradicted"),
          count("claims.csv", claim=BEYOND),
          count("claims.csv", claim=BEYOND, verdict="supported"),
          count("claims.csv", claim=ORDER, verdict="contradicted"),
          count("claims.csv", claim=ORDER, verdict="supported")]),
        ("undecided in all {} comparisons, now that the row has a test",
         [[count("claims.csv", claim="factor_few_shot_low_falls_most", verdict="undecided"),
           count("claims.csv", claim="factor_few_shot_low_falls_most")]]),
        ("Gemma on MMLU with 1 shot, which the percentile bootstrap called supported before, "
         "gives {} [{}, {}], n = {}.",
         [claim("factor_few_shot_low_falls_most", few[G, "mmlu", "1"], k)
          for k in ("estimate", "ci_low", "ci_high", "n")]),
        ("under all five templates alike (spread and PSS {} on all {} items)",
         [[cell("peer_table.csv", k, model=S, dataset="mmlu", group="0shot")
           for k in ("accuracy_spread", "pss")],
          cell("peer_table.csv", "accuracy_spread_n", model=S, dataset="mmlu", group="0shot")]),
        (f"{verdict('ips_beyond_change_size', scope(G, 'arc-easy', '0shot'))} for Gemma 3 on "
         f"ARC-Easy (R²_null − R²_IPS = {N} [{N}, {N}], p = {N}, n = {N}: mean R² of IPS {N}, of "
         f"the null {N})",
         [*(claim("ips_beyond_change_size", scope(G, "arc-easy", "0shot"), k)
            for k in ("estimate", "ci_low", "ci_high", "p_value", "n")),
          *r_squared(G, "arc-easy")]),
        (f"and for SmolLM2 on ARC-Easy ({N}, p = {N}, n = {N}), so there the size of the change "
         "explains IPS *more* than it explains noise of that size; undecided in the other four "
         f"cells (SmolLM2 {N}, p = {N}, {N}, p = {N}; Gemma 3 on MMLU {N}, p = {N}, on Dolly {N}, "
         f"p = {N}; n = {N}, {N}, {N}, {N})",
         [*(claim("ips_beyond_change_size", scope(S, "arc-easy", "0shot"), k)
            for k in ("estimate", "p_value", "n")),
          *(claim("ips_beyond_change_size", scope(m, d, "0shot"), k)
            for m, d in [(S, "mmlu"), (S, "dolly"), (G, "mmlu"), (G, "dolly")]
            for k in ("estimate", "p_value")),
          *(claim("ips_beyond_change_size", scope(m, d, "0shot"), "n")
            for m, d in [(S, "mmlu"), (S, "dolly"), (G, "mmlu"), (G, "dolly")])]),
        ("the IPS R² of {}–{} says", span(r_squared(m, d)[0] for m, d in CELLS)),
        ("change {} of the {} verdicts, all on Gemma: the four few-shot supports become undecided "
         "(on ARC-Easy ΔIPS turns to {}% and {}%)",
         [changed(verdicts("claims.csv", (*PAPER, "factor_few_shot")),
                  verdicts("claims_sgd.csv", (*PAPER, "factor_few_shot"))),
          count("claims_sgd.csv", claim=(*PAPER, "factor_few_shot")),
          *pct(*(claim("factor_few_shot", few[G, "arc-easy", k], name="claims_sgd.csv")
                 for k in ("1", "3")))]),
        ("and {} verdicts still move (`studies/evidence/claims_sgd_long.csv`): the Gemma few-shot "
         "effects keep their sign and size ({}% to {}%) but three of four lose significance "
         "(p = {}–{}; 3-shot on MMLU stays supported, p = {}), SmolLM2's 3-shot rise goes from "
         "p = {} to {}, and Gemma's IPS^low < IPS^mid on Dolly shrinks from {} to {} (undecided)",
         [changed(verdicts("claims.csv", (*PAPER, "factor_few_shot")),
                  verdicts("claims_sgd_long.csv", (*PAPER, "factor_few_shot"))),
          *reversed(span(pct(*sgd_long))), *span(lost),
          claim("factor_few_shot", few[G, "mmlu", "3"], "p_value", name="claims_sgd_long.csv"),
          claim("factor_few_shot", few[S, "arc-easy", "3"], "p_value"),
          claim("factor_few_shot", few[S, "arc-easy", "3"], "p_value", name="claims_sgd_long.csv"),
          claim("order_low_below_mid", scope(G, "dolly")),
          claim("order_low_below_mid", scope(G, "dolly"), name="claims_sgd_long.csv")]),
        *scale_prose(),
    ]


def scale_prose() -> list[tuple[str, list]]:
    """The numbers of evidence.md's section on the four models (studies/retired/scale/)."""
    sc = "retired/scale/claims.csv"
    pair = {k: f"mmlu / {Q15} vs {Q05} / {k}" for k in ("0shot", "1shot")}
    few = {m: f"mmlu / {m} / 1shot vs 0shot" for m in FOUR}
    factor = {b: cell("retired/scale/factors_table.csv", "delta_ips", factor="scale", group="0shot", band=b)
              for b in ("all", "low", "mid", "high")}
    peers = {k: [cell("retired/scale/peer_table.csv", k, model=m, group="0shot") for m in FOUR]
             for k in ("accuracy_spread", "pss", "consistency_rate", "dv_unmasked")}
    return [
        ("IPS on MMLU at τ = 0.1 (band all, 95 % bootstrap interval, n = {} items)",
         [cells("retired/scale/ips_table.csv", "n_valued_samples", band="all")]),
        ("ΔIPS {} % [{}, {}], lower in the sign-flip test at p = {} (n = {}). The matched-size "
         "nulls of the two differ by {} % only, and the difference beyond them (per item, "
         "(IPS_A − IPS_B) − (null_A − null_B) = {}) has p = {}. Under 1-shot T1/T4 the two are "
         "not told apart ({} % [{}, {}], p = {}).",
         [*pct(*(claim("factor_scale", pair["0shot"], k, sc)
                 for k in ("estimate", "ci_low", "ci_high"))),
          claim("factor_scale", pair["0shot"], "p_value", sc),
          claim("factor_scale", pair["0shot"], "n", sc),
          *pct(cell("retired/scale/factors_table.csv", "delta_null", factor="scale", group="0shot",
                    band="all")),
          claim("factor_scale_beyond_null", pair["0shot"], name=sc),
          claim("factor_scale_beyond_null", pair["0shot"], "p_value", sc),
          *pct(*(claim("factor_scale", pair["1shot"], k, sc)
                 for k in ("estimate", "ci_low", "ci_high"))),
          claim("factor_scale", pair["1shot"], "p_value", sc)]),
        ("With scale, ΔIPS is {} % in the low band, {} % mid and {} % high; max(ΔIPS^low − "
         "ΔIPS^mid, ΔIPS^low − ΔIPS^high) = {} [{}, {}] lies below 0",
         [*pct(factor["low"], factor["mid"], factor["high"]),
          *(claim("factor_scale_low_falls_most", pair["0shot"], k, sc)
            for k in ("estimate", "ci_low", "ci_high"))]),
        ("Qwen 0.5B {} % [{}, {}] (lower in all {} items, p = {}; beyond the null p = {}), Qwen "
         "1.5B {} % [{}, {}] (p = {}; beyond the null p = {}), Gemma 3 {} % [{}, {}] (p = {}, "
         f"{verdict('factor_few_shot', few[G], sc)}; the evidence run's {N} items gave p = {N}), "
         f"SmolLM2 {N} % (p = {N})",
         [*pct(*(claim("factor_few_shot", few[Q05], k, sc)
                 for k in ("estimate", "ci_low", "ci_high"))),
          claim("factor_few_shot", few[Q05], "n", sc),
          claim("factor_few_shot", few[Q05], "p_value", sc),
          claim("factor_few_shot_beyond_null", few[Q05], "p_value", sc),
          *pct(*(claim("factor_few_shot", few[Q15], k, sc)
                 for k in ("estimate", "ci_low", "ci_high"))),
          claim("factor_few_shot", few[Q15], "p_value", sc),
          claim("factor_few_shot_beyond_null", few[Q15], "p_value", sc),
          *pct(*(claim("factor_few_shot", few[G], k, sc)
                 for k in ("estimate", "ci_low", "ci_high"))),
          claim("factor_few_shot", few[G], "p_value", sc),
          claim("factor_few_shot", scope("mmlu", G, "1shot vs 0shot"), "n"),
          claim("factor_few_shot", scope("mmlu", G, "1shot vs 0shot"), "p_value"),
          *pct(claim("factor_few_shot", few[S], name=sc)),
          claim("factor_few_shot", few[S], "p_value", sc)]),
        ("Spearman ρ = {} (the paper's sign), permutation p = {}",
         [claim("ips_vs_consistency", "mmlu", k, sc) for k in ("estimate", "p_value")]),
        ("(mean Spearman {}, Pearson {}, over {} models: a coarse check)",
         [cell("retired/scale/tau_robustness.csv", k, dataset="mmlu")
          for k in ("tau_spearman", "tau_pearson", "tau_n_models")]),
        ("below its matched-size null for Gemma 3 and both Qwen models (by {}–{}, p = {} each, "
         "n = {}), and not told apart from it for SmolLM2 ({} [{}, {}], p = {})",
         [*span(-claim("template_below_matched_null", scope(m, "mmlu", "0shot"), name=sc)
                for m in (G, Q05, Q15)),
          [claim("template_below_matched_null", scope(m, "mmlu", "0shot"), "p_value", sc)
           for m in (G, Q05, Q15)],
          [claim("template_below_matched_null", scope(m, "mmlu", "0shot"), "n", sc)
           for m in (G, Q05, Q15)],
          *(claim("template_below_matched_null", scope(S, "mmlu", "0shot"), k, sc)
            for k in ("estimate", "ci_low", "ci_high", "p_value"))]),
        ("Every template IPS is {}–{} times the Gaussian 1 % null.",
         span(1 / x for x in share("gaussian", "0.01", FOUR, ("mmlu",), "retired/scale/null_table.csv"))),
        ("gives an IPS between the two baselines of {} (SmolLM2), {} (Gemma 3), {} (Qwen 0.5B) "
         "and {} (Qwen 1.5B), beside template IPS of {}, {}, {} and {}: "
         "`template_above_baseline_null` is contradicted for every model (band all: {} [{}, {}], "
         "p = {}; {}, {}, {}, p = {} each; n = {}), with salient-set Jaccard {} / {} / {} / {}. "
         "The baseline null is about as large as the matched-size null ({}–{})",
         [*(null(m, "mmlu", "baseline", "word:the", name="retired/scale/null_table.csv") for m in FOUR),
          *(ips(m, "mmlu", name="retired/scale/ips_table.csv") for m in FOUR),
          *(claim("template_above_baseline_null", mask_scope(S, "mmlu", "word:the"), k, sc)
            for k in ("estimate", "ci_low", "ci_high", "p_value")),
          *(claim("template_above_baseline_null", mask_scope(m, "mmlu", "word:the"), name=sc)
            for m in (G, Q05, Q15)),
          [claim("template_above_baseline_null", mask_scope(m, "mmlu", "word:the"), "p_value", sc)
           for m in (G, Q05, Q15)],
          [claim("template_above_baseline_null", mask_scope(m, "mmlu", "word:the"), "n", sc)
           for m in FOUR],
          *(null(m, "mmlu", "baseline", "word:the", "jaccard", "retired/scale/null_table.csv") for m in FOUR),
          *span(ips(m, "mmlu", name="retired/scale/ips_table.csv", column="matched_null_ips")
                for m in FOUR)]),
        ("0-shot on MMLU (`peer_table.csv`, n = {}): accuracy spread {} / {} / {} / {}, PSS {} / "
         "{} / {} / {}, consistency rate {} / {} / {} / {}, mean |Δv(x_N)| {} / {} / {} / {} "
         "(SmolLM2, Gemma 3, Qwen 0.5B, 1.5B). Spearman of IPS against them: {} (spread and PSS, "
         "p = {}), {} (consistency rate, p = {}), {} (|Δv(x_N)|, p = {}), all undecided with "
         "n = {} models",
         [cells("retired/scale/peer_table.csv", "accuracy_spread_n", group="0shot"),
          *(v for k in peers for v in peers[k]),
          [claim(c, "mmlu", name=sc) for c in ("ips_vs_accuracy_spread", "ips_vs_pss")],
          [claim(c, "mmlu", "p_value", sc) for c in ("ips_vs_accuracy_spread", "ips_vs_pss")],
          *(claim("ips_vs_consistency_rate", "mmlu", k, sc) for k in ("estimate", "p_value")),
          *(claim("ips_vs_dv_unmasked", "mmlu", k, sc) for k in ("estimate", "p_value")),
          [claim(c, "mmlu", "n", sc) for c in ("ips_vs_accuracy_spread", "ips_vs_pss",
                                                "ips_vs_consistency_rate", "ips_vs_dv_unmasked")]]),
        ("its correctness never changes across templates (spread and PSS {} on all {} items), "
         "though its answer does (consistency rate {})",
         [[peers["accuracy_spread"][0], peers["pss"][0]],
          cell("retired/scale/peer_table.csv", "accuracy_spread_n", model=S, group="0shot"),
          peers["consistency_rate"][0]]),
        (f"{verdict('ips_beyond_change_size', scope(S, 'mmlu', '0shot'), sc)} for all four "
         "(R²_null − R²_IPS = {}, p = {}; {}, p = {}; {}, p = {}; {}, p = {}; n = {} each; "
         "SmolLM2, Gemma 3, Qwen 0.5B, 1.5B)",
         [*(claim("ips_beyond_change_size", scope(m, "mmlu", "0shot"), k, sc)
            for m in FOUR for k in ("estimate", "p_value")),
          [claim("ips_beyond_change_size", scope(m, "mmlu", "0shot"), "n", sc) for m in FOUR]]),
        ("IPS^mid > IPS^high for SmolLM2, Gemma 3 and Qwen 0.5B (p = {}–{}). Qwen 1.5B is the one "
         "model whose bands rise in the paper's order ({} < {} < {}), but neither step is "
         "significant (p = {} and {}).",
         [*span(claim("order_mid_below_high", scope(m, "mmlu"), "p_value", sc)
                for m in (S, G, Q05)),
          *(ips(Q15, "mmlu", band=b, name="retired/scale/ips_table.csv") for b in ("low", "mid", "high")),
          *(claim(c, scope(Q15, "mmlu"), "p_value", sc) for c in ORDER)]),
        ("Gemma 3's is contradicted (low − mid {}, p = {}, and mid − high {}, p = {}, beyond "
         "the null)",
         [claim(c, scope(G, "mmlu", "0shot"), k, sc) for c in BEYOND
          for k in ("estimate", "p_value")]),
        ("two raw verdicts moved (SmolLM2's 1-shot change beyond the null is now "
         f"{verdict('factor_few_shot_beyond_null', few[S], sc)}, p = {N}; Qwen 0.5B's "
         f"`ips_beyond_change_size` {verdict('ips_beyond_change_size', scope(Q05, 'mmlu', '0shot'), sc)}"
         f", p = {N})",
         [claim("factor_few_shot_beyond_null", few[S], "p_value", sc),
          claim("ips_beyond_change_size", scope(Q05, "mmlu", "0shot"), "p_value", sc)]),
        *twins_prose(),
    ]


def twins_prose() -> list[tuple[str, list]]:
    """The numbers of evidence.md's scale section beside the untrained twins: the final
    verdicts (`verdict`) and the control columns of studies/retired/scale/claims.csv."""
    sc = "retired/scale/claims.csv"
    pair = f"mmlu / {Q15} vs {Q05} / 0shot"
    few = {m: f"mmlu / {m} / 1shot vs 0shot" for m in (G, Q05, Q15)}
    trained = table(sc)

    def final(*verdicts: str) -> Cell:
        return Cell(sum(r["verdict"] in verdicts for r in trained), f"final {verdicts} in {sc}")

    decided = [r for r in trained if r["raw_verdict"] in DECIDED]
    mask_all = {m: mask_scope(m, "mmlu", "word:the") for m in (S, G)}
    return [
        ("of the {} raw verdicts the trained models' rows decide, {} stand ({} supported, {} "
         "contradicted); for {} the twins' same statistic earns the same raw verdict.",
         [Cell(len(decided), f"raw-decided rows of {sc}"), final(*DECIDED), final("supported"),
          final("contradicted"),
          Cell(sum(r["control_verdict"] == r["raw_verdict"] for r in decided),
               f"raw-decided rows of {sc} whose control decides alike")]),
        ("0.5B twin ({} %, " + rows(sc, claim="factor_scale", scope=pair)[0]["control_verdict"]
         + " on its own), and trained and twins differ per item at p = {} (n = {}); beyond the "
         "matched-size null too (p = {}).",
         [*pct(claim("factor_scale", pair, "control_estimate", sc)),
          claim("factor_scale", pair, "control_p", sc), claim("factor_scale", pair, "n", sc),
          claim("factor_scale_beyond_null", pair, "control_p", sc)]),
        ("their twins move {} % and {} % with one shot (trained − twins p = {} and {}). Gemma "
         "3's drop ({} %, raw p = {}) differs from its twin's {} % (p = {})",
         [*pct(*(claim("factor_few_shot", few[m], "control_estimate", sc) for m in (Q05, Q15))),
          *(claim("factor_few_shot", few[m], "control_p", sc) for m in (Q05, Q15)),
          *pct(claim("factor_few_shot", few[G], name=sc)),
          claim("factor_few_shot", few[G], "p_value", sc),
          *pct(claim("factor_few_shot", few[G], "control_estimate", sc)),
          claim("factor_few_shot", few[G], "control_p", sc)]),
        ("(the twins' IPS ranking is as stable over τ, mean Spearman {}); the three IPS^mid > "
         "IPS^high contradictions (the twins' mid − high do not differ from the trained ones, "
         "p = {}–{})",
         [claim("tau_robustness", "mmlu", "control_estimate", sc),
          *span(claim("order_mid_below_high", scope(m, "mmlu"), "control_p", sc)
                for m in (S, G, Q05))]),
        ("as the twins of Gemma 3 and Qwen 0.5B lie below it too (p = {} and {} for the "
         "difference)",
         [claim("template_below_matched_null", scope(m, "mmlu", "0shot"), "control_p", sc)
          for m in (G, Q05)]),
        ("SmolLM2's twin lies further below its baseline null than SmolLM2 (band all {} against "
         "{}), Gemma 3's about as far ({} against {}, p = {}).",
         [claim("template_above_baseline_null", mask_all[S], "control_estimate", sc),
          claim("template_above_baseline_null", mask_all[S], name=sc),
          claim("template_above_baseline_null", mask_all[G], "control_estimate", sc),
          claim("template_above_baseline_null", mask_all[G], name=sc),
          claim("template_above_baseline_null", mask_all[G], "control_p", sc)]),
    ]


def readme_evidence() -> list[tuple[str, list]]:
    """The numbers of docs/evidence.md's "In short" (the README's evidence section before)."""
    few = [scope(d, G, f"{k}shot vs 0shot") for d in MCQ for k in ("1", "3")]
    qwen = [f"mmlu / {m} / 1shot vs 0shot" for m in (Q05, Q15)]
    sc = "retired/scale/claims.csv"
    decided = ("supported", "contradicted")
    paper = rows("claims.csv", claim=(*PAPER, "factor_few_shot"))

    def final(found) -> Cell:
        return Cell(sum(r["verdict"] in decided for r in found), "final verdicts decided")

    unstable = rows("claims.csv", claim="types_unchanged_unstable", scope=tuple(
        scope(S, d) for d in DATASETS))
    bs = "baselines/scale/claims.csv"
    scale_scope = f"mmlu / {Q15} vs {Q05} / 0shot"
    scale_drop = [claim("factor_scale", scale_scope, f"{b} estimate", bs) for b in BASELINES]
    scale_p = [claim("factor_scale", scale_scope, f"{b} p_value", bs) for b in BASELINES]
    qwen_drops = [claim("factor_few_shot", q, f"{b} estimate", bs) for q in qwen for b in BASELINES]
    qwen_p = [claim("factor_few_shot", q, f"{b} p_value", bs) for q in qwen for b in BASELINES]
    agree, _, rest = agreement_split()
    smol_sparse = [r for r in rows("claims.csv", claim=("sparse_salient_share",
                                                        "sparse_matching_top5"))
                   if r["scope"].startswith(f"{S} /") and own(r) == "contradicted"]
    return [
        ("Of the {} rows of the paper's own claims the models' own tests decide {}, and {} stand "
         "beside the twins",
         [Cell(len(paper), "paper rows"), Cell(sum(own(r) in decided for r in paper), "raw"),
          final(paper)]),
        ("unchanged prediction for SmolLM2 on all three datasets ({}–{} of them, its twin {}–{})",
         [*span(Cell(r["estimate"], "estimate") for r in unstable),
          *span(Cell(r["control_estimate"], "control") for r in unstable)]),
        ("and not for Gemma 3 on Dolly ({}, its twin {}: "
         f"{verdict('types_unchanged_unstable', scope(G, 'dolly'))}), the sparsity claims are "
         "contradicted for Gemma 3 on ARC-Easy (both rows) and on Dolly (top-5 error {}, its "
         "twin {})",
         [claim("types_unchanged_unstable", scope(G, "dolly")),
          claim("types_unchanged_unstable", scope(G, "dolly"), "control_estimate"),
          claim("sparse_matching_top5", scope(G, "dolly")),
          claim("sparse_matching_top5", scope(G, "dolly"), "control_estimate")]),
        ("while {} order rows beyond the matched-size null stand",
         [final(rows("claims.csv", claim=BEYOND))]),
        ("SmolLM2 differs from its twin in {} of its {} sparsity contradictions, but it is the "
         "sparser of the two (MMLU salient share {}, its twin {}, p = {}; top-5 error p = {} on "
         "MMLU, {} on Dolly)",
         [Cell(sum(float(r["control_p"]) < 0.05 and float(r["estimate"])
                   < float(r["control_estimate"]) for r in smol_sparse), "differ, sparser"),
          Cell(len(smol_sparse), "raw contradictions"),
          claim("sparse_salient_share", scope(S, "mmlu")),
          claim("sparse_salient_share", scope(S, "mmlu"), "control_estimate"),
          claim("sparse_salient_share", scope(S, "mmlu"), "control_p"),
          claim("sparse_matching_top5", scope(S, "mmlu"), "control_p"),
          claim("sparse_matching_top5", scope(S, "dolly"), "control_p")]),
        ("few-shot drop stands on MMLU ({} % and {} %, its twin {} % and {} %)",
         [*pct(*(claim("factor_few_shot", scope("mmlu", G, f"{k}shot vs 0shot")) for k in "13")),
          *pct(*(claim("factor_few_shot", scope("mmlu", G, f"{k}shot vs 0shot"),
                       "control_estimate") for k in "13"))]),
        ("Over the whole table ({} rows with the nulls) {} are raw-decided and {} stand",
         [count("claims.csv"), Cell(len([r for r in table("claims.csv") if own(r) in decided]),
                                    "raw decided"), final(table("claims.csv"))]),
        ("the scale drop ({} %, {} %, {} %; p ≤ {}, n = 8) and both Qwen 1-shot drops ({} % to "
         "{} %, p ≤ {}) keep their sign",
         [*pct(*scale_drop), max(scale_p), *span(pct(*qwen_drops)), max(qwen_p)]),
        ("alike under each baseline and the own (ρ = {}–{} in 7 of 8 comparisons) while the changed "
         "interactions share only {}–{} % of their sets",
         [*span(Cell(r["pair_rho"], "pair_rho") for r in rest),
          *pct(*span(Cell(r["changed_jaccard"], "changed_jaccard") for r in agree))]),
        ("at n = 6 ({}–{} % of Ω salient)",
         span(pct(*cells("claims.csv", "estimate", claim="sparse_salient_share",
                         verdict="contradicted")))),
        ("most changed interactions under an unchanged prediction is supported in {} of {} cells",
         [count("claims.csv", claim="types_unchanged_unstable", verdict="supported"),
          count("claims.csv", claim="types_unchanged_unstable")]),
        ("few-shot lowers IPS for Gemma 3 ({} % to {} %)",
         reversed(span(pct(*(claim("factor_few_shot", s) for s in few))))),
        ("noise of 1 % of the range of v gives {}–{} % (SmolLM2) and {}–{} % (Gemma 3) of the "
         "template IPS on the MCQ datasets",
         [*span(100 * x for x in share("gaussian", "0.01", (S,), MCQ)),
          *span(100 * x for x in share("gaussian", "0.01", (G,), MCQ))]),
        ("its 1-shot drop only just on ARC-Easy (p = {}) and not on MMLU, and {} of the {} "
         "order-band verdicts change",
         [claim("factor_few_shot_beyond_null", few[0], "p_value"),
          changed(verdicts("claims.csv", ORDER), verdicts("claims.csv", BEYOND)),
          count("claims.csv", claim=ORDER)]),
        ('For SmolLM2 the IPS between unk and its pad token or the word " the" is {}–{}, beside '
         "its template IPS of {}–{} on MCQ and {} on Dolly (larger in all {} cells, p ≤ {}, "
         "n = {}). Gemma 3's pad token acts like its unk ({}–{}), but \" the\" gives {}–{} beside "
         "{}–{}; on the four models of the scale study \" the\" gives {}–{} beside template IPS "
         "of {}–{} (p ≤ {}, n = {}). Under two baselines that differ (Gemma's pad aside) the "
         "salient sets share {}–{} % of their union (Jaccard {}–{})",
         [*span(mask_rows("null_ips", model=S)), *span(ips(S, d) for d in MCQ), ips(S, "dolly"),
          count("claims.csv", claim="template_above_baseline_null", verdict="contradicted",
                scope=tuple(mask_scope(S, d, k) for d in DATASETS for k in ("pad", "word:the"))),
          max(claim("template_above_baseline_null", mask_scope(S, d, k), "p_value")
              for d in DATASETS for k in ("pad", "word:the")),
          mask_rows("n_paired"),
          *span(mask_rows("null_ips", model=G, level="pad")),
          *span(mask_rows("null_ips", model=G, level="word:the")),
          *span(ips(G, d) for d in DATASETS),
          *span(cells("retired/scale/null_table.csv", "null_ips", null="baseline", band="all")),
          *span(ips(m, "mmlu", name="retired/scale/ips_table.csv") for m in FOUR),
          max(claim("template_above_baseline_null", mask_scope(m, "mmlu", "word:the"), "p_value", sc)
              for m in FOUR),
          cells("retired/scale/null_table.csv", "n_paired", null="baseline", band="all"),
          *span(pct(*differing_masks())), *span(differing_masks())]),
        ("({} cells contradicted, {} undecided)",
         [count("claims.csv", claim="ips_beyond_change_size", verdict=v)
          for v in ("contradicted", "undecided")]),
        ("IPS, {} % (p = {})",
         [*pct(claim("factor_scale", f"mmlu / {Q15} vs {Q05} / 0shot", name=sc)),
          claim("factor_scale", f"mmlu / {Q15} vs {Q05} / 0shot", "p_value", sc)]),
        ("One shot lowers IPS by {}–{} % for both Qwen models (p ≤ {})",
         [*span(pct(*(-claim("factor_few_shot", s, name=sc) for s in qwen))),
          max(claim("factor_few_shot", s, "p_value", sc) for s in qwen)]),
        ("whose 1.5B has {} % more IPS than its 0.5B and whose IPS one shot does not lower "
         "({} % and {} %)",
         [*pct(claim("factor_scale", f"mmlu / {Q15} vs {Q05} / 0shot", "control_estimate", sc)),
          *pct(*sorted(claim("factor_few_shot", s, "control_estimate", sc) for s in qwen))]),
        ("{} of the {} raw-decided rows stand",
         [Cell(sum(r["verdict"] in DECIDED for r in table(sc)), f"final-decided rows of {sc}"),
          Cell(sum(r["raw_verdict"] in DECIDED for r in table(sc)), f"raw-decided rows of {sc}")]),
    ]


def baselines_prose() -> list[tuple[str, list]]:
    """The numbers of evidence.md's section on baselines (studies/baselines/)."""
    gp = "baselines/gemma-pad/"
    agree = {k: cell(gp + "agreement.csv", k, model=G, dataset="arc-easy", baseline="pad")
             for k in ("baseline_ips", "n_valued", "sample_rho", "sample_p", "n_samples",
                       "pair_rho", "pair_p", "n_pairs", "changed_jaccard", "n_cells")}
    claims = table(gp + "claims.csv")
    raw = [r for r in claims if r["own raw_verdict"] in ("supported", "contradicted")]
    same = [r for r in raw if r["robust_raw_verdict"] != "undecided"]
    ratio = max(max(a / b, b / a) for r in same if r["own p_value"] and r["pad p_value"]
                for a, b in [(float(r["own p_value"]), float(r["pad p_value"]))])
    few = {s: {b: claim("factor_few_shot", f"arc-easy / {G} / {s} vs 0shot", f"{b} p_value",
                        gp + "claims.csv") for b in ("own", "pad")} for s in ("1shot", "3shot")}
    return [
        ("baseline null of only {} on ARC-Easy (T1, {} items",
         [cell("null_table.csv", "null_ips", model=G, dataset="arc-easy", group="0shot",
               band="all", null="baseline", level="pad"),
          cell("null_table.csv", "n_paired", model=G, dataset="arc-easy", group="0shot",
               band="all", null="baseline", level="pad")]),
        ("The baseline null's {} is reproduced (the same games), and over all 9 conditions the IPS "
         "between the two baselines' games of a prompt is {} (n = {} items).",
         [cell("null_table.csv", "null_ips", model=G, dataset="arc-easy", group="0shot",
               band="all", null="baseline", level="pad"), agree["baseline_ips"],
          agree["n_valued"]]),
        ("(Spearman ρ = {}, permutation p = {}, n = {}), and so does per-pair IPS (ρ = {}, "
         "p = {}, n = {} pairs); the changed interactions (salient under one template of a pair "
         "and not the other) share {} % of their sets (mean Jaccard over {} sample-pair cells).",
         [agree["sample_rho"], agree["sample_p"], agree["n_samples"], agree["pair_rho"],
          agree["pair_p"], agree["n_pairs"], *pct(agree["changed_jaccard"]), agree["n_cells"]]),
        ("Of the {} claims rows, {} are raw-decided under unk; {} of them are decided the same "
         "way under pad, their p-values (where a row has one) within a factor of {} (the "
         "few-shot drops on ARC-Easy: 1-shot p = {} under unk and {} under pad, 3-shot {} under "
         "both), and the other {} are the baseline-null rows",
         [Cell(len(claims), "rows"), Cell(len(raw), "raw-decided"), Cell(len(same), "robust"),
          Cell(ratio, "largest p ratio"), few["1shot"]["own"], few["1shot"]["pad"],
          [few["3shot"]["own"], few["3shot"]["pad"]], Cell(len(raw) - len(same), "the rest")]),
    ]



BASELINES = ("own", "delete", "word:the")


def agreement_split():
    """The deciding run's agreement rows (each model's own baseline against each other one):
    all of them, SmolLM2 under deletion (whose per-pair IPS does not agree), and the 7
    others."""
    agree = table("baselines/scale/agreement.csv")
    smol_delete = next(r for r in agree if (r["model"], r["baseline"]) == (S, "delete"))
    return agree, smol_delete, [r for r in agree if r is not smol_delete]


def deciding_run_prose() -> list[tuple[str, list]]:
    """The numbers of the deciding run: the four models under three baselines
    (studies/baselines/scale/)."""
    bs = "baselines/scale/"

    def by(claim_: str, scope_: str, column: str) -> list[Cell]:
        return [claim(claim_, scope_, f"{b} {column}", bs + "claims.csv") for b in BASELINES]

    scale = f"mmlu / {Q15} vs {Q05} / "
    few = {m: f"mmlu / {m} / 1shot vs 0shot" for m in FOUR}
    est = {k: pct(*by("factor_scale", scale + k, "estimate")) for k in ("0shot", "1shot")}
    p_scale = {k: by("factor_scale", scale + k, "p_value") for k in ("0shot", "1shot")}
    fs = {m: (pct(*by("factor_few_shot", few[m], "estimate")), by("factor_few_shot", few[m],
                                                                  "p_value")) for m in FOUR}
    beyond = {m: by("factor_few_shot_beyond_null", few[m], "p_value") for m in (Q05, Q15)}

    def ips(tree: str, model: str, column: str = "ips") -> Cell:
        return cell(bs + tree + "/ips_table.csv", column, model=model, dataset="mmlu",
                    group="0shot", band="all")

    agree, smol_delete, rest = agreement_split()
    claims_ = table(bs + "claims.csv")
    decided = [r for r in claims_ if r["own raw_verdict"] in DECIDED]
    mask = [r for r in decided if r["claim"] == "template_above_baseline_null"]
    robust = [r for r in decided if r["robust_raw_verdict"] in DECIDED]
    newly = [r for r in claims_ if r["own raw_verdict"] not in DECIDED
             and any(r[f"{b} raw_verdict"] in DECIDED for b in BASELINES[1:])]
    flips = [r for r in claims_ if {r[f"{b} raw_verdict"] for b in BASELINES} >= set(DECIDED)]
    assert flips == []  # the prose says: none flips
    assert all(float(r["sample_p"]) >= 0.05 for r in agree)  # "none with p below 0.05"
    order = {t: sorted(FOUR, key=lambda m: -ips(t, m)) for t in ("own", "delete", "word-the")}
    assert order["own"] == order["delete"] == [S, Q05, G, Q15]  # the ranking the prose gives
    assert order["word-the"] == [S, G, Q05, Q15]
    return [
        ("ΔIPS {} % under the own baseline (p = {}), {} % under deletion (p = {}) and {} % under "
         "\" the\" (p = {}); beyond the matched-size null too (p = {}, {} and {}). Under 1-shot "
         "T1/T4, where the own baseline does not tell the two apart ({} %, p = {}), deletion and "
         "\" the\" do ({} % and {} %, p = {} each).",
         [est["0shot"][0], p_scale["0shot"][0], est["0shot"][1], p_scale["0shot"][1],
          est["0shot"][2], p_scale["0shot"][2],
          *by("factor_scale_beyond_null", scale + "0shot", "p_value"),
          est["1shot"][0], p_scale["1shot"][0], est["1shot"][1], est["1shot"][2],
          p_scale["1shot"][1:]]),
        ("Qwen 0.5B {} %, {} % and {} % (p = {} each; own, deletion, \" the\"), Qwen 1.5B {} %, "
         "{} % and {} % (p = {}, {} and {}). Beyond the matched-size null the 0.5B's drop stands "
         "under all three (p = {} each), the 1.5B's only under its own baseline (p = {}; "
         "deletion {}, \" the\" {}).",
         [*fs[Q05][0], fs[Q05][1], *fs[Q15][0], *fs[Q15][1], beyond[Q05], *beyond[Q15]]),
        ("deletion only:** {} % (p = {}), {} % (p = {}), {} % (p = {}). SmolLM2's few-shot change "
         "has no stable sign: {} % under its own baseline (p = {}), {} % under deletion (p = {}, "
         "supported), {} % under \" the\" (p = {}).",
         [x for m in (G, S) for pair in zip(*fs[m]) for x in pair]),
        ("own baseline ({}, {}, {}, {}) and under deletion ({}, {}, {}, {}); under \" the\" Gemma 3 "
         "and Qwen 0.5B change places ({} [{}, {}] and {} [{}, {}], the intervals overlapping), "
         "SmolLM2 first and Qwen 1.5B last as before. τ robustness is supported under all three "
         "(mean Spearman {}, {} and {} over the sweep;",
         [*(ips(t, m) for t in ("own", "delete") for m in (S, Q05, G, Q15)),
          *(ips("word-the", m, c) for m in (G, Q05) for c in ("ips", "ips_ci_low", "ips_ci_high")),
          *by("tau_robustness", "mmlu", "estimate")]),
        ("alike (Spearman ρ = {}–{}, permutation p ≤ {}, in 7 of the 8 comparisons; SmolLM2 under "
         "deletion ρ = {}, p = {}), while the changed interactions (salient under one template of "
         "a pair and not the other) share only {}–{} % of their sets (mean Jaccard over {} "
         "sample-pair cells each), where Gemma 3's unk and pad share {} %. The items' order by "
         "per-sample IPS is not kept (ρ = {} to {}, none with p below {}, n = {}).",
         [*span(Cell(r["pair_rho"], "pair_rho") for r in rest),
          max(Cell(r["pair_p"], "pair_p_value") for r in rest),
          Cell(smol_delete["pair_rho"], "pair_rho"), Cell(smol_delete["pair_p"], "pair_p_value"),
          *pct(*span(Cell(r["changed_jaccard"], "changed_jaccard") for r in agree)),
          [Cell(r["n_cells"], "n_cells") for r in agree],
          *pct(cell("baselines/gemma-pad/agreement.csv", "changed_jaccard", model=G)),
          *span(Cell(r["sample_rho"], "sample_rho") for r in agree),
          Cell(0.05, "alpha"), [Cell(r["n_samples"], "n_samples") for r in agree]]),
        ("of its {} rows, {} are raw-decided under the own baseline; {} of them are baseline-null "
         "rows, which only the own baseline has. Of the other {}, {} are decided the same way "
         "under all three baselines and {} are undecided under deletion or \" the\"",
         [Cell(len(claims_), "rows"), Cell(len(decided), "own decided"), Cell(len(mask), "mask"),
          Cell(len(decided) - len(mask), "others"), Cell(len(robust), "robust"),
          Cell(len(decided) - len(mask) - len(robust), "fall")]),
        ("None flips. {} rows are decided under deletion or \" the\" and not under the own "
         "baseline", [Cell(len(newly), "newly decided")]),
    ]

def normalisation_prose() -> list[tuple[str, list]]:
    """docs/method.md's departures row on the normalisation, from
    studies/normalisation/default_run.csv."""
    with open(ROOT / "studies/normalisation/default_run.csv", newline="") as f:
        rows = {(r["model"], r["dataset"]): r for r in csv.DictReader(f)}

    def cell(model, dataset, column):
        return float(rows[model, dataset][column])

    def spread(model):
        medians = [cell(model, d, "empty_over_max_median") for d in DATASETS]
        return [min(medians), max(medians)]

    return [
        ("is a median {}–{} times the largest interaction for SmolLM2 and {}–{} times for "
         "Gemma 3", [*spread(S), *spread(G)]),
        ("(IPS undefined; {} salient interactions become {} on ARC-Easy) and SmolLM2 keeps about "
         "a tenth of its salient set ({} → {} on ARC-Easy, mean Jaccard {}), its IPS moving {} → "
         "{} (ARC-Easy) and {} → {} (MMLU), n = {} items each",
         [cell(G, "arc-easy", "salient_nonempty"), cell(G, "arc-easy", "salient_paper"),
          cell(S, "arc-easy", "salient_nonempty"), cell(S, "arc-easy", "salient_paper"),
          cell(S, "arc-easy", "jaccard_mean"),
          cell(S, "arc-easy", "ips_nonempty"), cell(S, "arc-easy", "ips_paper"),
          cell(S, "mmlu", "ips_nonempty"), cell(S, "mmlu", "ips_paper"),
          cell(S, "mmlu", "n_valued_nonempty")]),
    ]


QUOTES = [("docs/evidence.md", p, list(v))
          for p, v in evidence_tables() + evidence_prose() + baselines_prose()
          + deciding_run_prose()] + [
    ("docs/evidence.md", p, list(v)) for p, v in readme_evidence()] + [
    ("docs/method.md", p, list(v)) for p, v in normalisation_prose()]


def agrees(printed: str, value: float) -> bool:
    """`printed` is `value` rounded to the digits it shows (half a unit of its last digit), and
    to no fewer than the value needs."""
    digits = max(len(printed.partition(".")[2]), value.digits() if isinstance(value, Cell) else 0)
    number = float(printed.replace("−", "-").replace(",", ""))
    return abs(number - value) <= 0.5 * 10**-digits + 1e-9


@cache
def text(doc: str) -> str:
    return " ".join((ROOT / doc).read_text(encoding="utf-8").split())


@pytest.mark.parametrize("doc, passage, values", QUOTES, ids=[q[1][:70] for q in QUOTES])
def test_every_quoted_number_is_its_tables(doc, passage, values):
    passage = " ".join(passage.split())
    assert passage.count(N) == len(values), "a value for each number of the passage"
    pattern = re.escape(passage).replace(re.escape(N), f"({NUMBER})")
    found = list(re.finditer(pattern, text(doc)))
    assert found, f"{doc} no longer says: {passage}"
    wrong = [f"{printed} is {float(v):.6g}: {getattr(v, 'where', 'computed')}"
             for match in found for printed, value in zip(match.groups(), values)
             for v in (value if isinstance(value, list) else [value])
             if not agrees(printed, v)]
    assert not wrong, f"{doc}: «{found[0][0]}»\n" + "\n".join(wrong)


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

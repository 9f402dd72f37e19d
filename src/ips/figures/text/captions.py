"""What every results file shows: one caption per figure and table, read by the results
README (`ips figures`) and by the Snakemake report (`workflow/report/figures.rst`, through
the `figures` rule's params), with the report section it belongs to."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from ips.analysis.uncertainty import EXACT_MAX, MIN_RELIABLE_N

INTERACTIONS, MODELS, FACTOR_SECTION, ROBUSTNESS, TABLE_SECTION = (
    "1 Interactions", "2 IPS of the models", "3 Factors", "4 Robustness and baselines",
    "5 Tables")


class Caption(NamedTuple):
    """`title` heads the caption in the report; `text` follows it there and is the file's
    line in the results README; `section` is its report category."""

    title: str
    text: str
    section: str


#: an architecture as the text writes it
ARCHITECTURES = {"dense": "dense", "moe": "MoE"}
#: the two tables of Appendix G (`ips.figures.tables.appendix`), by the architecture of their
#: models: dense (Table 4) and MoE (Table 5)
PERTURBATION_TABLES = {"perturbation_types_dense.csv": "dense",
                       "perturbation_types_moe.csv": "moe"}

#: a factor in a few words (figure titles, legends, the README)
FACTOR_TITLES = {
    "instruct_vs_base": "instruct vs base",
    "scale": "larger vs next smaller",
    "dense_vs_moe": "dense vs MoE",
    "few_shot": "k-shot vs 0-shot (same template pairs)",
}
_FACTOR_TITLES = {"instruct_vs_base": "Instruct vs base models (paper Fig. 5)",
                  "scale": "Larger vs next smaller model (beside paper Fig. 6)",
                  "dense_vs_moe": "Dense vs MoE (paper Fig. 7)",
                  "few_shot": "Few-shot vs 0-shot (beside paper Fig. 8)"}

FIGURES = {
    "overview": Caption(
        "The method on one item (paper Fig. 1)",
        "one item as the run computed it: its variables under one template, v(x_S) of all "
        "2^n masked inputs in ascending order (the full and the empty input named), and its "
        "largest salient AND and OR interactions Ĩ with ±τ (Fig. 1; the case-study sample "
        "of the first model and dataset that has one, under its first template)",
        INTERACTIONS),
    "sparsity": Caption(
        "Sparsity of the interactions (paper Fig. 2a)",
        "normalised interactions |Ĩ| in descending order, mean over samples and templates, "
        "one line per model (paper Fig. 2a); the legend gives the share above τ",
        INTERACTIONS),
    "universal_matching": Caption(
        "Universal matching with the largest interactions (paper Fig. 2b)",
        "how well the LLM's output v is reconstructed from only the largest 3% / 5% / all "
        "interactions: mean normalised RMS error per model, and v of every mask of one "
        "sample in ascending order against the reconstructions (Fig. 2b)",
        INTERACTIONS),
    "interaction_types": Caption(
        "Interaction types (paper Fig. 3b)",
        "shares of the three interaction types (opposite sign; same sign, different effect; "
        "same sign, similar effect) among the salient interactions of the 0-shot template "
        "pairs, split by whether the prediction changed (Fig. 3b)",
        INTERACTIONS),
    "ips_ranking": Caption(
        "IPS of every model (paper Fig. 4a)",
        "models ranked by IPS at τ on the 0-shot templates, one panel per dataset, with 95% "
        "bootstrap intervals over samples (lower = less sensitive; Fig. 4a); an open marker "
        f"and 'n<{MIN_RELIABLE_N}' flag an interval from fewer than {MIN_RELIABLE_N} samples",
        MODELS),
    "ips_vs_consistency": Caption(
        "IPS vs output consistency (paper Fig. 4b)",
        "IPS against output consistency (share of samples with one prediction under every "
        "0-shot template), with Pearson / Spearman r (Fig. 4b)",
        MODELS),
    **{f"factor_{f}": Caption(
        _FACTOR_TITLES[f],
        f"{FACTOR_TITLES[f]}: IPS_A and IPS_B of every comparison with 95% intervals, ΔIPS "
        "and the p-value of a paired sign-flip test over samples with the samples it rests "
        f"on, n (Figs. 5-8); bars hatched where n < {MIN_RELIABLE_N}; an absent factor is "
        "named with its reason",
        FACTOR_SECTION) for f in FACTOR_TITLES},
    "ips_by_scale": Caption(
        "IPS across model scales (paper Fig. 6)",
        "IPS on the 0-shot templates against the parameter count (log axis), one panel per "
        "dataset, one line per series, type and architecture with at least two sizes (solid: "
        "instruct, dashed: base), with 95% intervals (Fig. 6; the paper reads scale as a "
        "trend, not as a relative change, Section 4.3); an open marker rests on fewer than "
        f"{MIN_RELIABLE_N} samples",
        FACTOR_SECTION),
    "few_shot_curve": Caption(
        "IPS from 0 to k shots (paper Fig. 8)",
        "IPS of the few-shot template pairs (T1, T4 by default) at 0, 1, 2 and 3 examples, one "
        "line per model and one panel per dataset (Fig. 8); an open marker where the "
        f"k-shot comparison rests on fewer than {MIN_RELIABLE_N} samples",
        FACTOR_SECTION),
    "ips_by_order": Caption(
        "IPS by interaction order (paper Figs. 9, 20)",
        "IPS of low-, mid- and high-order interactions (order bands of ⌊n/3⌋, ⌊2n/3⌋) per "
        "model and dataset, with 95% intervals (Figs. 9, 20); under each model the "
        "Holm-adjusted p-values of paired sign-flip tests of low vs mid, mid vs high and low "
        "vs high (Holm over these three tests of one model, dataset and group), with their "
        f"n; bars hatched where n < {MIN_RELIABLE_N}",
        MODELS),
    "factors": Caption(
        "Relative change by order (paper Figs. 10, 21)",
        "mean relative change ΔIPS = (IPS_A − IPS_B)/IPS_B per order band for every factor "
        "the configured models allow (A: instruct, larger, dense, k-shot), with 95% "
        "intervals (Figs. 10, 21); bars hatched where the sign-flip test of the mean "
        f"rests on fewer than {MIN_RELIABLE_N} samples",
        FACTOR_SECTION),
    "scale_by_order": Caption(
        "IPS by order across model scales (paper Figs. 11, 22)",
        "IPS^low, IPS^mid and IPS^high on the 0-shot templates against the parameter count "
        "(log axis), one panel per dataset and band, one line per series, type and "
        "architecture with at least two sizes (the models the scale factor compares; solid: "
        "instruct, dashed: base), with 95% intervals; an open marker rests on fewer than "
        f"{MIN_RELIABLE_N} samples; the models alone in their series are named below",
        FACTOR_SECTION),
    "few_shot_by_order": Caption(
        "Few-shot by order band per model (paper Fig. 23)",
        "for every model and k-shot group, IPS^low, IPS^mid and IPS^high of the k-shot "
        "template pairs (filled, one colour per k) against the same pairs without examples "
        "(open grey), with 95% paired-bootstrap intervals, one panel per dataset and band; a "
        f"cross where the comparison's sign-flip test rests on fewer than {MIN_RELIABLE_N} "
        "samples",
        FACTOR_SECTION),
    "tau_robustness": Caption(
        "τ robustness (paper Appendix F.8)",
        "IPS on the 0-shot templates over the τ sweep, one line per model; the panel titles "
        "give the mean Spearman / Pearson / Kendall correlation of the models' IPS between "
        "every two τ values (Table 2; the numbers in `tau_robustness.csv`, `tau_pairs.csv` "
        "and `tau_table.csv`)",
        ROBUSTNESS),
    "perturbation_types": Caption(
        "Perturbation type (paper Appendix G)",
        "mean IPS of the 0-shot template pairs that differ only by altering tokens (case) "
        "and of those that differ only by adding tokens (separators, markers), Appendix G, "
        "with 95% intervals; pairs with both kinds of change (`mixed`) are left out, and the "
        "reworded prompts of a `perturbation` group get a bar of their own",
        ROBUSTNESS),
    "perturbation_group_factors": Caption(
        "The four factors on reworded prompts (paper Fig. 12)",
        "the factors of Figs. 5-8 on the perturbation group (the first template and its "
        "paraphrased and reordered wordings, Appendix L): IPS_A and IPS_B of every comparison "
        "with 95% intervals, ΔIPS and the paired sign-flip p with its n, one panel per "
        "factor, few-shot the same prompts with k examples against them without "
        "(`perturbations.shots`, Figs. 12d, 55); a factor without a comparison on this "
        "group says why",
        ROBUSTNESS),
    "perturbation_group_factors_by_order": Caption(
        "Relative change by order on reworded prompts (paper Fig. 13)",
        "mean ΔIPS per order band of each factor on the perturbation group, with 95% "
        "intervals, as `factors.png` draws it for the 0-shot templates (Fig. 13)",
        ROBUSTNESS),
    "perturbation_group_by_order": Caption(
        "IPS by interaction order on reworded prompts (paper Fig. 56)",
        "IPS per order band on the perturbation group (the first template and its "
        "paraphrased and reordered wordings, Appendix L) per model, with 95% intervals and "
        "the Holm-adjusted band tests, as `ips_by_order.png` draws the 0-shot templates "
        "(Fig. 56)",
        ROBUSTNESS),
    "perturbation_group_scale_by_order": Caption(
        "IPS by order across model scales on reworded prompts (paper Fig. 14)",
        "IPS per order band on the perturbation group against the parameter count, one "
        "line per series, type and architecture, as `scale_by_order.png` draws the 0-shot "
        "templates (Fig. 14)",
        ROBUSTNESS),
    "representation_baseline": Caption(
        "Representation baseline (paper Appendix H)",
        "cosine similarity and L2 distance of the final-layer hidden states of two templates "
        "against the IPS of the pair, one point per model and 0-shot pair, with Pearson / "
        "Spearman r (Appendix H)",
        ROBUSTNESS),
    "nulls": Caption(
        "IPS beside its nulls (beyond the paper)",
        "one panel per dataset, one row per model (ranked by IPS): the 0-shot template IPS "
        "with its 95% interval beside its matched-size null (noise of each pair's own size "
        "of change beyond the best affine map a·v + b, a ≥ 0, between its two games), its "
        "Gaussian null at each noise level (noise of c × range of v on every value of a game, "
        "refitted), the precision null of each second dtype (stars), the baseline null of each "
        "other baseline (crosses) and the ceiling (open squares: the IPS of unrelated "
        "games, each sample's template against the other template of other samples of the "
        "same n); right, the (sample, pair) cells whose IPS lies above their matched-size "
        "null; the numbers in `null_table.csv`; docs/method.md#nulls",
        MODELS),
}
"""The figures every run draws (PNG and PDF), by file stem."""

CASE_STUDY = "case_study_{model}_{dataset}"
CASE_STUDY_CAPTION = Caption(
    "Case study (paper Fig. 3a / Fig. 19)",
    "salient interactions of a sample under a 0-shot template pair, side by side, labelled "
    "by their words and coloured by type, with both predictions (Fig. 3a / 19): above, the "
    "pair with the largest ips(x, T, T̂) among those whose prediction changed; below, among "
    "those whose prediction stayed; a note where the run has no pair of a kind",
    INTERACTIONS)

TABLES = {
    "ips_table.csv": Caption(
        "IPS table",
        "one row per model, dataset, condition group and band: IPS with its 95% bootstrap "
        "interval, samples averaged, empty pairs, the matched-size null IPS (noise of the "
        "size of each pair's change that IPS can see: what is left after the best affine map "
        "between the two games) with its interval and the mean per-sample IPS minus it, the "
        "ceiling (the IPS of unrelated games: other samples of the same n) with its interval, "
        "IPS / ceiling and `saturated` (true at 0.9 or above: IPS cannot tell the template "
        "change from replacing the item), output consistency, the model attributes "
        f"and `few_samples` (true: the interval rests on fewer than {MIN_RELIABLE_N} "
        "samples; an empty cell has no value)",
        TABLE_SECTION),
    "factors_table.csv": Caption(
        "Factor comparisons",
        "one row per factor comparison and band: IPS_A, IPS_B with their 95% bootstrap "
        "intervals, ΔIPS with the interval that inverts its test (it excludes 0 exactly when "
        "p < 0.05), the two-sided p-value of a paired sign-flip test of the per-sample "
        f"differences (`test`: exact up to {EXACT_MAX} samples, else Monte Carlo), the "
        f"samples tested (`n_tested`), the paired samples and `few_samples` (n_tested < "
        f"{MIN_RELIABLE_N})",
        TABLE_SECTION),
    "null_table.csv": Caption(
        "Null IPS table",
        "one row per model, dataset, condition group, band and null: the Gaussian null at each "
        "level (noise of that share of the range of v on every value of a game, refitted and "
        "scored against the game's fit), the matched-size null (noise of the size of each "
        "template pair's change left after the best affine map) and the ceiling (the IPS of "
        "unrelated games), with 95% bootstrap intervals, samples valued, IPS, and "
        "the mean per-sample IPS minus the null over the `n_paired` samples valued in both; "
        "precision and mask rows (main group; level: the second dtype, or the other mask "
        "token) add max and median |Δv|, the median sd(Δv) / range of v, the mean "
        "salient-set Jaccard and the games compared (docs/method.md#nulls, "
        "docs/method.md#precision, docs/method.md#baseline-null; `ips.analysis.nulls`)",
        TABLE_SECTION),
    "peer_table.csv": Caption(
        "What other tools report, beside IPS",
        "one row per model, dataset and condition group: IPS (band all) beside the spread of "
        "accuracy over the group's templates (FormatSpread), ProSA's prompt sensitivity score "
        "(PSS), the consistency rate of lm-evaluation-harness's SCORE tasks and the mean "
        "|Δv(x_N)| of the unmasked prompt between two templates (POSIX-style, on a fixed "
        "target), each with its 95% bootstrap interval and samples; the first three are for "
        "multiple-choice datasets only (docs/method.md#peers; `ips.analysis.peers`)",
        TABLE_SECTION),
    "accuracy_table.csv": Caption(
        "Accuracy per template",
        "one row per model, multiple-choice dataset and condition (template, shots, "
        "rewording): the share of the samples scored under it whose prediction is the gold "
        "option, with its exact 95% (Clopper-Pearson) interval and k of n; chance is one over "
        "the item's options (0.25 with four), beside which an accuracy is read",
        TABLE_SECTION),
    "control_table.csv": Caption(
        "IPS beside its controls' draws",
        "one row per trained model, dataset, condition group and band with a control: its IPS "
        "and share of the ceiling beside its controls' IPS over their draws (mean, sd between "
        "draws, min, max, mean share of the ceiling) and, with two or more draws, the "
        "prediction test of the model's IPS against them (docs/method.md#controls-as-a-"
        "distribution; `ips.controls`)",
        TABLE_SECTION),
    "models_table.csv": Caption(
        "The models (paper Table 1)",
        "every model by family and series, smallest first: type, architecture, parameters "
        "and activated parameters as the run read them (the entry's, else the checkpoint's), "
        "the datasets it ran on and, for a control, the model it controls",
        TABLE_SECTION),
    "tau_robustness.csv": Caption(
        "τ robustness table (paper Table 2)",
        "per dataset, the agreement of the models' IPS (0-shot, band all) between every two τ "
        "of the sweep, averaged over the pairs: Spearman, Pearson and Kendall τ_b correlation, "
        "root mean square difference and mean absolute difference (the five measures of "
        "Table 2 as read here: the paper names correlation coefficients and RMSE among "
        "them), the models used and why a value is missing; correlations need 3 models",
        TABLE_SECTION),
    "tau_pairs.csv": Caption(
        "τ robustness per pair of τ (paper Table 2, unaveraged)",
        "for every dataset and every two τ of the sweep (τ_a before τ_b), the five measures "
        "of `tau_robustness.csv`, with the models they rest on",
        TABLE_SECTION),
    "tau_table.csv": Caption(
        "IPS at every τ (paper Table 3)",
        "IPS (0-shot, band all) of every model and dataset at every τ of the sweep, one "
        "column per τ, within a dataset sorted by IPS at the sweep's first τ as the paper "
        "sorts (least sensitive first)",
        TABLE_SECTION),
    **{name: Caption(
        f"IPS by perturbation type, {ARCHITECTURES[arch]} models (paper Table {table})",
        f"per {ARCHITECTURES[arch]} model and dataset, the mean IPS of the 0-shot template pairs that alter "
        "tokens (case) and of those that add tokens (separators, markers), each with its 95% "
        "bootstrap interval, samples and pairs; `more_sensitive` (the larger, the paper's "
        "bold); and the paired sign-flip test of the per-sample difference adding − "
        "altering with its n (whether the model's difference is more than sample noise); "
        "the counts per architecture are claims",
        TABLE_SECTION) for (name, arch), table in zip(PERTURBATION_TABLES.items(), (4, 5))},
    "representation_pairs.csv": Caption(
        "Representation baseline per base/instruct pair (paper Table 6)",
        "every base/instruct pair of the instruct_vs_base factor with each model's cosine "
        "similarity and L2 distance of the final hidden states (mean over the 0-shot "
        "template pairs, no interval: only means are stored) beside the pair's IPS, ΔIPS "
        "with its interval and sign-flip p with its n, and which model each measure calls "
        "more stable (`*_favours`)",
        TABLE_SECTION),
    "moe_matched.csv": Caption(
        "MoE vs dense at matched activated parameters (paper Table 7)",
        "per dataset, every MoE model beside the dense model of its family and type with "
        "the closest activated parameters (`matched` when within a factor 1.5; "
        "docs/method.md#tables-factors-figures): both IPS (0-shot, band all) with 95% paired "
        "bootstrap intervals, ΔIPS = (IPS_dense − IPS_MoE)/IPS_MoE with its interval, and "
        "the paired sign-flip p with its n",
        TABLE_SECTION),
    "paper_map.csv": Caption(
        "Where the paper's figures and tables are",
        "every figure and table of the paper, in its order, with the file that holds it "
        "(here, or in the figure set at another τ) and which panel, or why none does; "
        "`written` says whether this run wrote the file",
        TABLE_SECTION),
    "claims.csv": Caption(
        "The paper's claims on these models",
        "one row per claim of the paper and scope (model and dataset, dataset, or factor "
        "comparison): the paper's statement, our estimate with its interval and n, the test "
        "and its p-value, and the verdict (supported, contradicted, undecided, or untestable "
        "with the reason; `ips.comparisons.claims`)",
        TABLE_SECTION),
}
"""The tables every run writes, by file name."""


def case_study_name(model: str, dataset: str) -> str:
    return CASE_STUDY.format(model=model, dataset=dataset)


def captions(models: Sequence[str], datasets: Sequence[str]) -> dict[str, Caption]:
    """The caption of every PNG and table a run over `models` × `datasets` can write."""
    out = {f"{name}.png": c for name, c in FIGURES.items()}
    out.update({f"{case_study_name(m, d)}.png": CASE_STUDY_CAPTION
                for m in models for d in datasets})
    return {**out, **TABLES}


def _rst(text: str) -> str:
    """Markdown-ish caption text as reStructuredText: `|` is literal, `x` is ``x``."""
    return re.sub(r"`([^`]+)`", r"``\1``", text.replace("|", r"\|"))


def report_captions(models: Sequence[str], datasets: Sequence[str]) -> dict[str, str]:
    """The report's caption (reStructuredText) of every file, by file name."""
    return {f: f"**{_rst(c.title)}.** {_rst(c.text[0].upper() + c.text[1:])}."
            for f, c in captions(models, datasets).items()}


def report_section(file: str) -> str:
    """The report category of a results file (its name with extension)."""
    stem, ext = file.rsplit(".", 1)
    if file in TABLES or ext == "csv":
        return TABLE_SECTION
    if stem in FIGURES:
        return FIGURES[stem].section
    return CASE_STUDY_CAPTION.section if stem.startswith("case_study_") else TABLE_SECTION


def report_subsections(models: Sequence[str], datasets: Sequence[str]) -> dict[str, str]:
    """The report subcategory of each case-study figure, by file name: its dataset. At 50
    models a section would otherwise list 150 case studies before its own figures; every
    other file stays in its section's default subcategory."""
    return {f"{case_study_name(m, d)}.png": f"case studies: {d}"
            for m in models for d in datasets}

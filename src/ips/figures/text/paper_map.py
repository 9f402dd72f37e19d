"""Where each figure and table of the paper is in a run's results (`paper_map.csv` and the
README's *The paper's figures and tables*), or why none is.

A file is named relative to `results/figures/`; the figure sets at another τ (Appendix F.8.2)
are under `results/tau/<τ>/figures/`, drawn when `figure_taus` lists that τ. A figure the
paper draws for one dataset is a panel of a file that has one panel (or row) per dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ips.figures.text.captions import (
    ARCHITECTURES,
    CASE_STUDY,
    FACTOR_TITLES,
    PERTURBATION_TABLES,
)


class PaperItem(NamedTuple):
    """One figure or table of the paper: its number, what it shows, the file that holds it
    ("" for none) and where in the file, or why there is none."""

    paper: str
    shows: str
    file: str
    note: str


#: the seven figures each robustness block of the appendix repeats, as (what, file of the
#: 0-shot templates, file of the reworded prompts (perturbation group))
_BLOCK = {
    "instruct": ("instruct/chat vs base", "factor_instruct_vs_base.png",
                 "perturbation_group_factors.png"),
    "scale": ("IPS across model scales", "ips_by_scale.png", "perturbation_group_factors.png"),
    "moe": ("MoE vs dense", "factor_dense_vs_moe.png", "perturbation_group_factors.png"),
    "shots": ("0-shot vs few-shot", "few_shot_curve.png", "perturbation_group_factors.png"),
    "relative": ("relative change by order band", "factors.png",
                 "perturbation_group_factors_by_order.png"),
    "orders": ("IPS by order type", "ips_by_order.png", "perturbation_group_by_order.png"),
    "order_scale": ("IPS by order across model scales", "scale_by_order.png",
                    "perturbation_group_scale_by_order.png"),
}
_FACTOR_ORDER = ("instruct", "scale", "moe", "shots")
#: the factor of each panel of perturbation_group_factors.png
_FACTOR_PANELS = {"instruct": "instruct_vs_base", "scale": "scale", "moe": "dense_vs_moe",
                  "shots": "few_shot"}
#: the few-shot panel of the reworded prompts (paper Figs. 12d, 55) in a run that did not
#: set `perturbations.shots` (the template few-shot of Dolly is few_shot_curve.png's panel)
_NO_PERTURBED_SHOTS = ("a run without perturbations.shots scores the reworded prompts at 0 "
                       "shots only, and the panel says so")


def _panel(key: str) -> str:
    """Where the factor of `key` is in perturbation_group_factors.png."""
    note = f"as ΔIPS bars, its panel {FACTOR_TITLES[_FACTOR_PANELS[key]]}"
    return f"{note}; {_NO_PERTURBED_SHOTS}" if key == "shots" else note


def _block(first: int, order: Sequence[str], where: str, prefix: str = "",
           perturbed: bool = False) -> list[PaperItem]:
    """A run of the paper's figures from number `first`, one per key of `order`."""
    items = []
    for i, key in enumerate(order):
        shows, main, reworded = _BLOCK[key]
        note = where
        if perturbed and key in _FACTOR_PANELS:
            note += f"; {_panel(key)}"
        items.append(PaperItem(f"Fig. {first + i}", shows,
                               f"{prefix}{reworded if perturbed else main}", note))
    return items


def _tau_set(tau: str) -> str:
    return f"../tau/{tau}/figures/"


PAPER_MAP: tuple[PaperItem, ...] = (
    PaperItem("Fig. 1", "the method: masked inputs, v, salient AND/OR interactions",
              "overview.png", "one item as the run computed it, not a schematic"),
    PaperItem("Fig. 2a", "sparsity of the interactions", "sparsity.png", "one line per model"),
    PaperItem("Fig. 2b", "universal matching", "universal_matching.png", ""),
    PaperItem("Fig. 3a", "case studies", f"{CASE_STUDY}.png", "one file per model and dataset"),
    PaperItem("Fig. 3b", "interaction types", "interaction_types.png", ""),
    PaperItem("Fig. 4", "IPS of every model, ascending", "ips_ranking.png",
              "one panel per dataset; IPS against output consistency: ips_vs_consistency.png"),
    *_block(5, _FACTOR_ORDER, "the ARC panel"),
    *_block(9, ("orders", "relative", "order_scale"), "the ARC panel"),
    PaperItem("Fig. 12a-c", "the factors on reworded prompts", "perturbation_group_factors.png",
              "Dolly's reworded prompts (the perturbation group), as ΔIPS bars"),
    PaperItem("Fig. 12d", _BLOCK["shots"][0], _BLOCK["shots"][2],
              f"Dolly's reworded prompts with k examples against them without (the "
              f"perturbation-{{k}}shot groups), {_panel('shots')}"),
    *_block(13, ("relative", "order_scale"), "Dolly's reworded prompts", perturbed=True),
    PaperItem("Fig. 15", "the MCQ templates", "",
              "none: data, not a result (src/ips/data/templates.yaml, T1-T5)"),
    PaperItem("Fig. 16", "the few-shot templates", "",
              "none: data, not a result (src/ips/data/templates.yaml, shot_answer)"),
    PaperItem("Fig. 17", "sparsity, every model", "sparsity.png", ""),
    PaperItem("Fig. 18", "universal matching, every model", "universal_matching.png", ""),
    PaperItem("Fig. 19", "a detailed case study", f"{CASE_STUDY}.png", ""),
    *_block(20, ("orders", "relative", "order_scale"), "every model, the ARC panel"),
    PaperItem("Fig. 23", "0-shot vs few-shot by order band, per model", "few_shot_by_order.png",
              ""),
    *_block(24, ("instruct", "scale", "moe", "shots", "relative", "orders", "order_scale"),
            "at τ = 0.15, the ARC panel", _tau_set("0.15")),
    *_block(31, ("instruct", "scale", "moe", "shots", "relative", "orders", "order_scale"),
            "at τ = 0.05, the ARC panel", _tau_set("0.05")),
    *_block(38, ("instruct", "scale", "moe", "shots", "relative", "orders", "order_scale"),
            "the MMLU panel"),
    *_block(45, ("instruct", "scale", "moe", "shots", "orders", "relative", "order_scale"),
            "the Dolly panel (its templates A1-A4)"),
    *_block(52, ("instruct", "scale", "moe", "shots", "orders", "relative", "order_scale"),
            "Dolly's reworded prompts (the perturbation group)", perturbed=True),
    PaperItem("Table 1", "the models", "models_table.csv", ""),
    PaperItem("Table 2", "τ robustness, averaged", "tau_robustness.csv",
              "every pair of τ: tau_pairs.csv"),
    PaperItem("Table 3", "IPS at every τ", "tau_table.csv", ""),
    *(PaperItem(f"Table {n}", f"IPS by perturbation type, {ARCHITECTURES[arch]} models", file,
                "")
      for n, (file, arch) in zip((4, 5), PERTURBATION_TABLES.items())),
    PaperItem("Table 6", "representation baseline, base vs instruct", "representation_pairs.csv",
              ""),
    PaperItem("Table 7", "MoE vs dense at matched activated parameters", "moe_matched.csv", ""),
)
"""Every figure and table of the paper, in its order."""

PAPER_MAP_COLUMNS = ("paper", "shows", "file", "note", "written", "weights")


def paper_map_rows(written: Sequence[str], weights: str) -> list[dict]:
    """`PAPER_MAP` as table rows, with `written`: whether this run wrote the file (`yes`,
    `no`; empty for another τ's figure set, which another job draws), and the run's
    `weights` (`ips.formats.metrics.weights`), as every table ends."""
    case = CASE_STUDY.split("{", 1)[0]
    rows = []
    for item in PAPER_MAP:
        if not item.file or item.file.startswith("../"):
            here = ""
        elif item.file.startswith(case):
            here = "yes" if any(n.startswith(case) for n in written) else "no"
        else:
            here = "yes" if item.file in written else "no"
        rows.append({**item._asdict(), "written": here, "weights": weights})
    return rows


def paper_map_markdown(rows: Sequence[dict]) -> list[str]:
    """The README's section: one line per figure and table of the paper."""
    lines = ["", "## The paper's figures and tables", "",
             "Where each figure and table of the paper is (`paper_map.csv`): a file of this "
             "folder, a figure set at another τ (`../tau/<τ>/figures/`, drawn when "
             "`figure_taus` lists it), or why there is none.", "",
             "| paper | shows | file | where, or why none |", "|---|---|---|---|"]
    for r in rows:
        file = f"`{r['file']}`" + (" (not in this run)" if r["written"] == "no" else "")
        lines.append(f"| {r['paper']} | {r['shows']} | {file if r['file'] else '—'} | "
                     f"{r['note']} |")
    return lines

"""The four factors (paper Figs. 5-8) and their relative change by order (Figs. 10, 21), on
the 0-shot templates and on the reworded prompts of the perturbation group (Figs. 12, 13).

Every comparison of `ips factors` is drawn with its paired-bootstrap interval and its paired
sign-flip p-value with the samples tested; bars whose test rests on fewer than
`ips.analysis.uncertainty.MIN_RELIABLE_N` samples are hatched. A factor the configured models cannot
show gets a figure that names the reason."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import xarray as xr

from ips.comparisons.factors import FACTORS
from ips.figures.numbers import few_note, p_text
from ips.figures.style import (
    band_label,
    blank,
    colors,
    few_hatch,
    grid,
    legend_below,
    note,
    panels,
    patch,
    row_font,
    row_height,
    save,
    whiskers,
)
from ips.figures.text.captions import FACTOR_TITLES
from ips.formats.factors import FactorsFile
from ips.formats.metrics import BANDS
from ips.prompts.templates import PERTURBATION, ZERO_SHOT

SIDE_COLORS = ("#1b9e77", "#bdbdbd")  # A (has the factor), B
#: what A and B of a factor are (legend of the factor figures)
FACTOR_SIDES = {
    "instruct_vs_base": ("instruct", "base"),
    "scale": ("larger", "next smaller"),
    "dense_vs_moe": ("dense", "MoE"),
    "few_shot": ("k-shot", "0-shot"),
}


def draw_factors(factors: FactorsFile, tau: float, out: Path) -> None:
    """`factor_<name>.png` for each factor and `factors.png`, each given its own rows; the
    same two on the perturbation group (`perturbation_group_factors*.png`, Figs. 12, 13; its
    few-shot rows are the reworded prompts' k-shot groups, Figs. 12d, 55)."""
    for f in FACTORS:
        factor_figure(factors.comparisons(f), f, factors.absent.get(f), tau,
                      out / f"factor_{f}.png")
    factors_figure({f: factors.summaries(f) for f in factors.present},
                   factors.absent, tau, out / "factors.png")
    group_factors_figure(factors, PERTURBATION, tau,
                         out / "perturbation_group_factors.png")
    rows = {f: factors.summaries(f, PERTURBATION) for f in FACTORS}
    factors_figure({f: r for f, r in rows.items() if r.sizes["summary"]},
                   {f: factors.absent.get(f) or f"no comparison on the {PERTURBATION} "
                    "group" for f, r in rows.items() if not r.sizes["summary"]}, tau,
                   out / "perturbation_group_factors_by_order.png", PERTURBATION)


def _absent_figure(title: str, lines: list[str], path: Path) -> list[Path]:
    fig, (ax,) = panels(1, 8.0, 2.6, title)
    note(ax, "\n".join(lines))
    blank(ax)
    return save(fig, path)


def _band(rows: xr.Dataset, name: str, fill=np.nan) -> np.ndarray:
    """Variable `name` of the comparison rows in band all (an interval: (rows, 2)); `fill`
    where the factors file has no such variable."""
    if name not in rows.variables:
        n = rows.sizes["comparison"]
        return np.full((n, 2) if name.endswith("_ci") else n, fill)
    return rows[name].sel(band="all").values


def _label(rows: xr.Dataset, factor: str, i: int, sep: str = "\n") -> str:
    """"A\nvs B" (sep: one line where the panel has many rows)."""
    a = str(rows["model_a"].values[i])
    if factor == "few_shot":
        return f"{a}{sep}{rows['setting_a'].values[i]} vs {rows['setting_b'].values[i]}"
    return f"{a}{sep}vs {rows['model_b'].values[i]}"


def factor_figure(rows: xr.Dataset, factor: str, absent: str | None, tau: float,
                  path: Path) -> list[Path]:
    """IPS_A and IPS_B of every comparison of one factor (its `comparison` rows, band all),
    one panel per dataset, with 95% CIs, ΔIPS and the sign-flip p-value with its n beside each
    pair of bars; `absent`: why the factor has no comparison at all."""
    title = f"{FACTOR_TITLES.get(factor, factor)}: IPS at τ = {tau:g}"
    if absent is not None:
        return _absent_figure(title, [f"{FACTOR_TITLES.get(factor, factor)}: absent", absent],
                              path)
    dataset = rows["comparison_dataset"].values.astype(str)
    datasets = list(dict.fromkeys(dataset))
    if not datasets:
        return _absent_figure(title, [f"no comparison on the {ZERO_SHOT} group"], path)
    n = max(int(np.sum(dataset == d)) for d in datasets)
    if factor == "few_shot" and n > 20:
        return _few_shot_forest(rows, datasets, title, path)
    fig, axes = _factor_grid(len(datasets), n,
                             f"{title}\nwhiskers: 95% CI; p: paired sign-flip test over "
                             "samples\n" + few_note())
    for ax, d in zip(axes, datasets):
        comparison_panel(ax, rows.isel(comparison=np.flatnonzero(dataset == d)), factor)
        ax.set_title(d, fontsize=10)
    side_a, side_b = FACTOR_SIDES.get(factor, ("A", "B"))
    legend_below(fig, [patch(SIDE_COLORS[0], f"A: {side_a}"),
                       patch(SIDE_COLORS[1], f"B: {side_b}")])
    return save(fig, path)


def _few_shot_forest(rows: xr.Dataset, datasets: list[str], title: str,
                     path: Path) -> list[Path]:
    """Few-shot at many models: one panel per dataset, one row per model, ΔIPS of each k-shot
    group (one colour per k) with its 95% CI; filled where p < 0.05, a cross where the test
    rests on few samples (IPS_A, IPS_B and p of each: factors_table.csv)."""
    dataset = rows["comparison_dataset"].values.astype(str)
    ks = list(dict.fromkeys(sorted(rows["setting_a"].values.astype(str))))
    col = dict(zip(ks, colors(len(ks))))
    n = max(len(set(rows["model_a"].values.astype(str)[dataset == d])) for d in datasets)
    fig, axes = panels(len(datasets), 5.2, 1.8 + row_height(n) * n,
                       f"{title}\nΔIPS = (IPS_k-shot − IPS_0-shot) / IPS_0-shot of the same "
                       "template pairs; whiskers: 95% CI\nfilled: sign-flip p < 0.05; ×: test "
                       "from few samples; IPS_A, IPS_B and p in factors_table.csv")
    for ax, d in zip(axes, datasets):
        mine = rows.isel(comparison=np.flatnonzero(dataset == d))
        models = list(dict.fromkeys(mine["model_a"].values.astype(str)))
        dv, ci = 100 * _band(mine, "delta_ips"), 100 * _band(mine, "delta_ips_ci")
        p, nt = _band(mine, "p_value"), _band(mine, "n_tested", fill=0).astype(int)
        for i, (m, k) in enumerate(zip(mine["model_a"].values.astype(str),
                                       mine["setting_a"].values.astype(str))):
            y = models.index(m) + 0.6 * ((ks.index(k) + 1) / (len(ks) + 1) - 0.5)
            ax.errorbar(dv[i], y, xerr=whiskers([dv[i]], [ci[i]]), ms=4, elinewidth=0.7,
                        fmt="x" if few_hatch(nt[i]) else "o", color=col[k],
                        mfc=col[k] if p[i] < 0.05 else "white")
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yticks(range(len(models)), models, fontsize=row_font(n))
        ax.set_ylim(n - 0.5, -0.5)
        ax.grid(axis="y", color="#eeeeee", lw=0.6)
        ax.set_xlabel("ΔIPS (%)", fontsize=8)
        ax.set_title(d, fontsize=10)
    legend_below(fig, [patch(col[k], f"{k} vs {ZERO_SHOT}") for k in ks], ncols=len(ks))
    return save(fig, path)


def comparison_height(n: int) -> float:
    """Inches of a comparison panel of n rows: two-line labels up to 20 rows, one line
    beyond (`common.row_height`)."""
    return 1.6 + (0.42 if n <= 20 else 1.2 * row_height(n)) * n


def _factor_grid(panes: int, n: int, title: str):
    """Up to 3 panels in a row; more (few-shot: a panel per dataset and k) in rows of 3, so
    that the figure stays under about 16 inches wide."""
    cols = min(panes, 3)
    fig, axes = grid(-(-panes // cols), cols, 5.3, max(2.8, comparison_height(n)), title)
    flat = [ax for row in axes for ax in row]
    for ax in flat[panes:]:
        ax.set_axis_off()
    return fig, flat[:panes]


def comparison_panel(ax, rows: xr.Dataset, factor: str, with_dataset: bool = False) -> None:
    """Horizontal IPS_A and IPS_B bars of each comparison row (band all, one row of the
    panel each, so that tens of comparisons stay legible) with their intervals, and ΔIPS
    with the sign-flip p and its n right of them; hatched where the test rests on few
    samples."""
    y = np.arange(rows.sizes["comparison"])
    many = y.size > 20  # one-line labels and texts
    fs = row_font(y.size) - 1
    ia, ib = _band(rows, "ips_a"), _band(rows, "ips_b")
    h = 0.38
    ntest = _band(rows, "n_tested", fill=0).astype(int)
    hatches = [few_hatch(k) for k in ntest]
    ax.barh(y + h / 2, np.nan_to_num(ib), h, color=SIDE_COLORS[1], hatch=hatches,
            xerr=whiskers(np.nan_to_num(ib), _band(rows, "ips_b_ci")), capsize=2)
    ax.barh(y - h / 2, np.nan_to_num(ia), h, color=SIDE_COLORS[0], hatch=hatches,
            xerr=whiskers(np.nan_to_num(ia), _band(rows, "ips_a_ci")), capsize=2)
    right = np.nanmax(np.concatenate([ia, ib, [0.1]]))
    for yi, dv, p, k in zip(y, _band(rows, "delta_ips"), _band(rows, "p_value"), ntest):
        text = (("Δ n/a" if not np.isfinite(dv) else f"Δ {100 * dv:+.1f}%")
                + ("; " if many else "\n") + p_text(p, k).removeprefix("sign-flip "))
        ax.text(right * 1.12, yi, text, ha="left", va="center", fontsize=fs)
    ax.set_xlim(0, right * (2.2 if many else 1.9))
    labels = [_label(rows, factor, i, " " if many else "\n") for i in y]
    if with_dataset:
        labels = [f"{d}: {t}" for d, t in zip(rows["comparison_dataset"].values, labels)]
    ax.set_yticks(y, labels, fontsize=fs)
    ax.set_ylim(len(y) - 0.5, -0.5)
    ax.set_xlabel("IPS")


def group_factors_figure(factors: FactorsFile, group: str, tau: float,
                         path: Path) -> list[Path]:
    """The four factors on one condition group (paper Fig. 12 on the reworded prompts of the
    perturbation group, few-shot its k-shot groups, Fig. 12d): one panel per factor with its
    comparisons on `group` in every dataset, drawn as `comparison_panel`; a factor without
    one says why."""
    rows = {f: factors.comparisons(f, group) for f in FACTORS}
    n = max([r.sizes["comparison"] for r in rows.values()] + [2])
    fig, axes = panels(len(FACTORS), 4.0, 0.2 + comparison_height(n),
                       f"The four factors on the {group} group: IPS at τ = {tau:g}\n"
                       "whiskers: 95% CI; p: paired sign-flip test over samples\n" + few_note())
    for ax, (f, r) in zip(axes, rows.items()):
        ax.set_title("\n".join(textwrap.wrap(FACTOR_TITLES.get(f, f), 26)), fontsize=10)
        if r.sizes["comparison"]:
            comparison_panel(ax, r, f, with_dataset=True)
            continue
        why = (factors.absent.get(f) or
               (f"no k-shot group of the {group} group (config perturbations.shots)"
                if f == "few_shot" else f"no pair of models both have the {group} group"))
        note(ax, "\n".join(textwrap.wrap(f"absent: {why}", 30)))
    legend_below(fig, [patch(SIDE_COLORS[0], "A: instruct, larger, dense, k-shot"),
                       patch(SIDE_COLORS[1], "B: base, next smaller, MoE, 0-shot")])
    return save(fig, path)


def factors_figure(summaries: dict[str, xr.Dataset], absent: dict[str, str], tau: float,
                   path: Path, group: str = ZERO_SHOT) -> list[Path]:
    """Mean ΔIPS = (IPS_A − IPS_B)/IPS_B by order band of every present factor (one panel
    each from its `summary` rows, one bar per dataset / k-shot group), with the bootstrap
    interval of the mean; hatched where its sign-flip test rests on fewer than MIN_RELIABLE_N
    samples. `absent`: the factors without a comparison, and why; `group`: the condition
    group of the model factors' rows (the title names any but the 0-shot group)."""
    where = "" if group == ZERO_SHOT else f" on the {group} group"
    if not summaries:
        lines = [f"No factor comparison{where} is possible with the configured models:"]
        lines += [f"{FACTOR_TITLES.get(f, f)}: {r}" for f, r in absent.items()]
        return _absent_figure(f"Factors{where} at τ = {tau:g}", lines, path)
    text = ("Absent: " + "; ".join(f"{FACTOR_TITLES.get(f, f)} ({r})" for f, r in absent.items())
            if absent else "")
    fig, axes = panels(len(summaries), 4.6 if len(summaries) <= 3 else 3.9, 4.4,
                       f"ΔIPS = (IPS_A − IPS_B) / IPS_B by order band{where} at τ = {tau:g}\n"
                       "A: instruct, larger, dense, k-shot; whiskers: 95% CI\n"
                       + few_note(), text)
    for ax, (f, rows) in zip(axes, summaries.items()):
        ax.set_title(FACTOR_TITLES.get(f, f), fontsize=10)
        count = rows.sizes["summary"]
        if not count:
            note(ax, f"no comparison on the {group} group")
            continue
        x = np.arange(len(BANDS))
        w = 0.8 / count
        cols = colors(count)
        mean = 100 * rows["delta_ips_mean"].values
        ci = (100 * rows["delta_ips_mean_ci"].values if "delta_ips_mean_ci" in rows
              else np.full((count, len(BANDS), 2), np.nan))
        ntest = (rows["n_tested_mean"].values if "n_tested_mean" in rows
                 else np.zeros((count, len(BANDS)), int))
        handles = []  # plain patches: the bars' own may be hatched
        for k in range(count):
            n = int(rows["n_comparisons"].values[k])
            group = f", {rows['summary_group'].values[k]}" if f == "few_shot" else ""
            handles.append(patch(cols[k], f"{rows['summary_dataset'].values[k]}{group} "
                                 f"({n} comparison{'' if n == 1 else 's'})"))
            ax.bar(x + (k - (count - 1) / 2) * w, np.nan_to_num(mean[k]), width=w,
                   color=cols[k], yerr=whiskers(np.nan_to_num(mean[k]), ci[k]),
                   hatch=[few_hatch(m) for m in ntest[k]],
                   error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x, [band_label(b) for b in BANDS], fontsize=9)
        ax.set_ylabel("ΔIPS (%)")
        if np.isnan(mean).any():
            ax.text(0.01, 0.01, "missing bars: no value (IPS_B = 0 or no salient pair)",
                    transform=ax.transAxes, fontsize=7, color="#555555")
        ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1),
                  ncols=min(2, count), frameon=False)
    return save(fig, path)

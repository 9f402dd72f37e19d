"""The four factors (paper Figs. 5-8) and their relative change by order (Figs. 10, 11, 21).

Every comparison of `ips factors` is drawn with its paired-bootstrap interval and its paired
sign-flip p-value with the samples tested; bars whose test rests on fewer than
`ips.uncertainty.MIN_RELIABLE_N` samples are hatched. A factor the configured models cannot
show gets a figure that names the reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from ips.figures.common import (FACTOR_SIDES, FACTOR_TITLES, MAIN_GROUP, absent_factors, blank,
                                colors, few_hatch, few_note, legend_below, p_text, patch,
                                whiskers)
from ips.figures.style import band_label, note, panels, save
from ips.metrics_file import BANDS

SIDE_COLORS = ("#1b9e77", "#bdbdbd")  # A (has the factor), B


def _absent_figure(title: str, lines: list[str], path: Path) -> list[Path]:
    fig, (ax,) = panels(1, 8.0, 2.6, title)
    note(ax, "\n".join(lines))
    blank(ax)
    return save(fig, path)


def _rows(factors: xr.Dataset, factor: str, dataset: str | None = None) -> list[int]:
    """Comparisons of a factor: on the 0-shot group for model factors, every k-shot group
    for few-shot."""
    f = factors["comparison_factor"].values.astype(str)
    g = factors["comparison_group"].values.astype(str)
    d = factors["comparison_dataset"].values.astype(str)
    return [i for i in range(f.size) if f[i] == factor
            and (factor == "few_shot" or g[i] == MAIN_GROUP)
            and (dataset is None or d[i] == dataset)]


def _ci(factors: xr.Dataset, name: str, rows: list[int], band: str = "all") -> np.ndarray:
    if name not in factors.variables:
        return np.full((len(rows), 2), np.nan)
    return factors[name].sel(band=band).values[rows].reshape(len(rows), 2)


def _n(factors: xr.Dataset, name: str, rows: list[int], band: str = "all") -> np.ndarray:
    """Samples tested (`n_tested` / `n_tested_mean`) of some rows; 0 where unknown."""
    if name not in factors.variables:
        return np.zeros(len(rows), int)
    return factors[name].sel(band=band).values[rows].astype(int)


def _label(factors: xr.Dataset, factor: str, i: int) -> str:
    a = str(factors["model_a"].values[i])
    b = str(factors["model_b"].values[i])
    if factor == "few_shot":
        return f"{a}\n{factors['setting_a'].values[i]} vs {MAIN_GROUP}"
    return f"{a}\nvs {b}"


def factor_figure(factors: xr.Dataset, factor: str, tau: float, path: Path) -> list[Path]:
    """IPS_A and IPS_B of every comparison of one factor (band all), one panel per dataset,
    with 95% CIs, ΔIPS and the sign-flip p-value with its n above each pair of bars."""
    title = f"{FACTOR_TITLES.get(factor, factor)}: IPS at τ = {tau:g}"
    absent = absent_factors(factors)
    if factor in absent:
        return _absent_figure(title, [f"{FACTOR_TITLES.get(factor, factor)}: absent",
                                      absent[factor]], path)
    datasets = [str(d) for d in dict.fromkeys(factors["comparison_dataset"].values.astype(str))
                if _rows(factors, factor, str(d))]
    if not datasets:
        return _absent_figure(title, [f"no comparison on the {MAIN_GROUP} group"], path)
    n = max(len(_rows(factors, factor, d)) for d in datasets)
    fig, axes = panels(len(datasets), max(3.2, 1.1 * n + 1.6), 4.6,
                       f"{title}\nwhiskers: 95% CI; p: paired sign-flip test over samples\n"
                       + few_note())
    side_a, side_b = FACTOR_SIDES.get(factor, ("A", "B"))
    for ax, d in zip(axes, datasets):
        rows = _rows(factors, factor, d)
        x = np.arange(len(rows))
        ia = factors["ips_a"].sel(band="all").values[rows]
        ib = factors["ips_b"].sel(band="all").values[rows]
        w = 0.38
        ntest = _n(factors, "n_tested", rows)
        hatches = [few_hatch(k) for k in ntest]
        ax.bar(x - w / 2, np.nan_to_num(ib), w, color=SIDE_COLORS[1], hatch=hatches,
               yerr=whiskers(np.nan_to_num(ib), _ci(factors, "ips_b_ci", rows)), capsize=3)
        ax.bar(x + w / 2, np.nan_to_num(ia), w, color=SIDE_COLORS[0], hatch=hatches,
               yerr=whiskers(np.nan_to_num(ia), _ci(factors, "ips_a_ci", rows)), capsize=3)
        delta = factors["delta_ips"].sel(band="all").values[rows]
        pv = (factors["p_value"].sel(band="all").values[rows] if "p_value" in factors
              else np.full(len(rows), np.nan))
        top = np.nanmax(np.concatenate([ia, ib, [0.1]]))
        for xi, dv, p, k in zip(x, delta, pv, ntest):
            text = (("Δ n/a" if not np.isfinite(dv) else f"Δ {100 * dv:+.1f}%")
                    + f"\n{p_text(p, k)}")
            ax.text(xi, top * 1.12, text, ha="center", va="bottom", fontsize=7)
        ax.set_ylim(0, top * 1.45)
        ax.set_xticks(x, [_label(factors, factor, i) for i in rows], fontsize=7)
        ax.set_ylabel("IPS")
        ax.set_title(d, fontsize=10)
    legend_below(fig, [patch(SIDE_COLORS[0], f"A: {side_a}"), patch(SIDE_COLORS[1],
                                                                     f"B: {side_b}")])
    return save(fig, path)


def factors_figure(factors: xr.Dataset, tau: float, path: Path) -> list[Path]:
    """Mean ΔIPS = (IPS_A − IPS_B)/IPS_B by order band of every present factor (one panel
    each, one bar per dataset / k-shot group), with the bootstrap interval of the mean;
    hatched where its sign-flip test rests on fewer than MIN_RELIABLE_N samples."""
    present = [str(f) for f, p in zip(factors["factor"].values, factors["factor_present"].values)
               if p]
    absent = absent_factors(factors)
    if not present:
        lines = ["No factor comparison is possible with the configured models:"]
        lines += [f"{FACTOR_TITLES.get(f, f)}: {r}" for f, r in absent.items()]
        return _absent_figure(f"Factors at τ = {tau:g}", lines, path)
    text = ("Absent: " + "; ".join(f"{FACTOR_TITLES.get(f, f)} ({r})" for f, r in absent.items())
            if absent else "")
    fig, axes = panels(len(present), 4.6, 4.4,
                       f"ΔIPS = (IPS_A − IPS_B) / IPS_B by order band at τ = {tau:g}\n"
                       "A: instruct, larger, dense, k-shot; whiskers: 95% CI\n"
                       + few_note(), text)
    sf = factors["summary_factor"].values.astype(str)
    sd = factors["summary_dataset"].values.astype(str)
    sg = factors["summary_group"].values.astype(str)
    for ax, f in zip(axes, present):
        rows = [i for i in range(sf.size)
                if sf[i] == f and (f == "few_shot" or sg[i] == MAIN_GROUP)]
        ax.set_title(FACTOR_TITLES.get(f, f), fontsize=10)
        if not rows:
            note(ax, f"no comparison on the {MAIN_GROUP} group")
            continue
        x = np.arange(len(BANDS))
        w = 0.8 / len(rows)
        cols = colors(len(rows))
        handles = []  # plain patches: the bars' own may be hatched
        for k, i in enumerate(rows):
            vals = 100 * factors["delta_ips_mean"].values[i]
            ci = (100 * factors["delta_ips_mean_ci"].values[i]
                  if "delta_ips_mean_ci" in factors else np.full((len(BANDS), 2), np.nan))
            n = int(factors["n_comparisons"].values[i])
            ntest = (factors["n_tested_mean"].values[i] if "n_tested_mean" in factors
                     else np.zeros(len(BANDS), int))
            handles.append(patch(cols[k], sd[i] + (f", {sg[i]}" if f == "few_shot" else "")
                                 + f" ({n} comparison{'' if n == 1 else 's'})"))
            ax.bar(x + (k - (len(rows) - 1) / 2) * w, np.nan_to_num(vals), width=w,
                   color=cols[k], yerr=whiskers(np.nan_to_num(vals), ci),
                   hatch=[few_hatch(m) for m in ntest],
                   error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x, [band_label(b) for b in BANDS], fontsize=9)
        ax.set_ylabel("ΔIPS (%)")
        if any(np.isnan(factors["delta_ips_mean"].values[i]).any() for i in rows):
            ax.text(0.01, 0.01, "missing bars: no value (IPS_B = 0 or no salient pair)",
                    transform=ax.transAxes, fontsize=7, color="#555555")
        ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1),
                  ncols=min(2, len(rows)), frameon=False)
    return save(fig, path)

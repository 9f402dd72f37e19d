"""IPS over the τ sweep (paper Table 2/3, App. F.8)."""

from __future__ import annotations

from pathlib import Path

from ips.factors import TauRobustness
from ips.metrics_file import Entry
from ips.figures.common import (MAIN_GROUP, by_dataset, datasets_of, legend_below, model_colors,
                                robustness_text)
from ips.figures.style import panels, save


def tau_figure(entries: list[Entry], robustness: dict[str, TauRobustness], tau: float,
               path: Path) -> list[Path]:
    """IPS (0-shot, band all) against τ, one line per model and one panel per dataset; the
    panel titles give the mean Spearman / Pearson correlation between every two τ (the
    factors file's `robustness`, by dataset)."""
    datasets = datasets_of(entries)
    fig, axes = panels(len(datasets), 5.0, 4.2,
                       f"IPS over the τ sweep (0-shot templates; band: 95% CI; dashed: τ = {tau:g})")
    color = model_colors(entries)
    for ax, d in zip(axes, datasets):
        for e in by_dataset(entries, d):
            if MAIN_GROUP not in e.ds["group"].values:
                continue
            taus = e.ds["tau"].values
            ax.plot(taus, e.ds["ips_sweep"].sel(group=MAIN_GROUP).values,
                    marker="o", markersize=3, color=color[e.model], label=e.model)
            if "ips_sweep_ci" in e.ds:  # 95% bootstrap band
                ci = e.ds["ips_sweep_ci"].sel(group=MAIN_GROUP).values
                ax.fill_between(taus, ci[:, 0], ci[:, 1], color=color[e.model], alpha=0.15,
                                linewidth=0)
        ax.axvline(tau, color="#999999", linestyle="--", linewidth=1)
        ax.set_xlabel("τ (salience threshold)")
        ax.set_ylabel("IPS")
        ax.set_title(f"{d}\n{robustness_text(robustness, d)}", fontsize=9)
    seen = {}
    for ax in axes:
        for hnd, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, hnd)
    legend_below(fig, seen.values(), ncols=4, labels=seen)
    return save(fig, path)

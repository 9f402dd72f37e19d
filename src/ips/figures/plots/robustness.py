"""IPS over the τ sweep (paper Table 2/3, App. F.8)."""

from __future__ import annotations

from pathlib import Path

from ips.figures.numbers import by_dataset, datasets_of, robustness_text
from ips.figures.style import colors, grid, legend_below, model_colors, panels, save
from ips.formats.factors import TauRobustness
from ips.formats.metrics import Entry
from ips.prompts.templates import ZERO_SHOT

#: beyond this many models the lines are drawn in one panel per family, coloured by series
MAX_LINES = 12


def tau_figure(entries: list[Entry], robustness: dict[str, TauRobustness], tau: float,
               path: Path) -> list[Path]:
    """IPS (0-shot, band all) against τ, one line per model and one panel per dataset; the
    panel titles give the mean Spearman / Pearson correlation between every two τ (the
    factors file's `robustness`, by dataset). Beyond MAX_LINES models, one row of panels per
    dataset and one panel per model family (`_by_family`)."""
    datasets = datasets_of(entries)
    title = f"IPS over the τ sweep (0-shot templates; band: 95% CI; dashed: τ = {tau:g})"
    if len({e.model for e in entries}) > MAX_LINES:
        return _by_family(entries, robustness, tau, path, title)
    fig, axes = panels(len(datasets), 5.0, 4.2, title)
    color = model_colors(entries)
    for ax, d in zip(axes, datasets):
        for e in by_dataset(entries, d):
            _line(ax, e, color[e.model], e.model)
        _axes(ax, tau)
        ax.set_title(f"{d}\n{robustness_text(robustness, d)}", fontsize=9)
    seen = {}
    for ax in axes:
        for hnd, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, hnd)
    legend_below(fig, seen.values(), ncols=4, labels=seen)
    return save(fig, path)


def _line(ax, e: Entry, color, label: str, style: str = "-", band: bool = True) -> None:
    if ZERO_SHOT not in e.ds["group"].values:
        return
    taus = e.ds["tau"].values
    ax.plot(taus, e.ds["ips_sweep"].sel(group=ZERO_SHOT).values, style, marker="o",
            markersize=2.5, color=color, label=label, linewidth=1)
    if band and "ips_sweep_ci" in e.ds:  # 95% bootstrap band
        ci = e.ds["ips_sweep_ci"].sel(group=ZERO_SHOT).values
        ax.fill_between(taus, ci[:, 0], ci[:, 1], color=color, alpha=0.15, linewidth=0)


def _axes(ax, tau: float, fontsize: float = 10) -> None:
    ax.axvline(tau, color="#999999", linestyle="--", linewidth=1)
    ax.set_xlabel("τ (salience threshold)", fontsize=fontsize)
    ax.set_ylabel("IPS", fontsize=fontsize)


def _by_family(entries: list[Entry], robustness: dict[str, TauRobustness], tau: float,
               path: Path, title: str) -> list[Path]:
    """Rows: datasets; columns: model families; in each panel one line per model of the
    family, coloured by series, solid for instruct and dashed for base, with no interval
    band (it would hide the lines); under each column the legend of its family's models."""
    datasets = datasets_of(entries)
    fams = sorted({e.attrs.get("family", "?") for e in entries})
    fig, axes = grid(len(datasets), len(fams), 3.1, 3.4,
                     f"{title}\none panel per family; colour: series; dashed: base model; "
                     "95% intervals in tau_table.csv")
    for row, d in zip(axes, datasets):
        rows = by_dataset(entries, d)
        for ax, f in zip(row, fams):
            mine = sorted((e for e in rows if e.attrs.get("family", "?") == f),
                          key=lambda e: (e.attrs["series"], e.attrs["params"], e.model))
            series = list(dict.fromkeys(e.attrs["series"] for e in mine))
            col = dict(zip(series, colors(len(series))))
            for e in mine:
                _line(ax, e, col[e.attrs["series"]], e.model,
                      "--" if e.attrs["type"] == "base" else "-", band=False)
            _axes(ax, tau, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.set_title(f"{d}: {f} ({len(mine)})", fontsize=9)
            if mine and d == datasets[-1]:  # the same models in every row: one legend
                ax.legend(fontsize=6, frameon=False, ncols=2 if len(mine) > 12 else 1,
                          loc="upper center", bbox_to_anchor=(0.5, -0.22))
        row[0].annotate(robustness_text(robustness, d), (0, 1.13), xycoords="axes fraction",
                        fontsize=8, color="#555555")
    return save(fig, path)

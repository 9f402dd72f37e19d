"""Figures, a tidy table and a README of the results (`ips figures`).

Reads the metrics files of `ips metrics` (one per model and dataset) and the factors file of
`ips factors`, and writes a directory:

| file | content |
|---|---|
| `ips_ranking.png` | models ranked by IPS at τ (0-shot templates), one panel per dataset (paper Fig. 4) |
| `ips_by_order.png` | IPS^low / IPS^mid / IPS^high per model (paper Fig. 9) |
| `tau_robustness.png` | IPS over the τ sweep per model, with the mean Spearman / Pearson correlation (App. F.8) |
| `factors.png` | mean ΔIPS by band of every present factor (paper Figs. 10, 11); absent factors are named |
| `perturbation_types.png` | mean IPS of the altering and of the adding template pairs per model (App. G) |
| `ips_table.csv` | tidy table: one row per model, dataset, group, band |
| `README.md` | what each file shows, τ, the models and datasets, the absent factors |

The directory is written next to its destination under a temporary name and renamed onto it
when complete, so a reader sees either the old or the new directory, never half of one.
Figures are drawn with matplotlib's object API on the Agg canvas (no display, no pyplot state).
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import uuid
from pathlib import Path
from typing import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ips import __version__
from ips.factors import ATTRIBUTES, Entry, read_metrics
from ips.figures.style import BAND_COLORS, DPI, LABEL_COLORS, MIN_WIDTH, TYPE_COLORS
from ips.figures.style import band_label as _band_label
from ips.figures.style import note as _note
from ips.figures.style import panels as _panels
from ips.io import InputError
from ips.summary import BANDS

MAIN_GROUP = "0shot"
FILES = {
    "ips_ranking.png": "models ranked by IPS at τ on the 0-shot templates, one panel per "
    "dataset (lower = less sensitive)",
    "ips_by_order.png": "IPS of low-, mid- and high-order interactions (order bands of "
    "⌊n/3⌋, ⌊2n/3⌋) per model and dataset",
    "tau_robustness.png": "IPS on the 0-shot templates over the τ sweep, one line per model; "
    "the panel titles give the mean Spearman / Pearson correlation of the model ranking "
    "between every two τ values",
    "factors.png": "mean relative change ΔIPS = (IPS_A − IPS_B)/IPS_B per order band for "
    "every factor the configured models allow (A: instruct, larger, dense, k-shot)",
    "perturbation_types.png": "mean IPS of the 0-shot template pairs that differ only by "
    "altering tokens (case) and of those that differ only by adding tokens (separators, "
    "markers), Appendix G; pairs with both kinds of change (`mixed`) are left out, and the "
    "reworded prompts of a `perturbation` group get a bar of their own",
    "ips_table.csv": "one row per model, dataset, condition group and band: IPS, samples "
    "averaged, empty pairs, output consistency and the model attributes (an empty cell has "
    "no value)",
}
FACTOR_TITLES = {
    "instruct_vs_base": "instruct vs base",
    "scale": "larger vs next smaller",
    "dense_vs_moe": "dense vs MoE",
    "few_shot": "k-shot vs 0-shot (same template pairs)",
}


# --------------------------------------------------------------------------------- helpers


def _ips(e: Entry, group: str = MAIN_GROUP, band: str = "all") -> float:
    if group not in e.ds["group"].values:
        return float("nan")
    return float(e.ds["ips"].sel(group=group, band=band))


def _datasets(entries: list[Entry]) -> list[str]:
    return list(dict.fromkeys(e.dataset for e in entries))


def _by_dataset(entries: list[Entry], d: str) -> list[Entry]:
    """The entries of dataset d, ranked by IPS (0-shot, all); models without IPS last."""
    rows = [e for e in entries if e.dataset == d]

    def key(e: Entry):
        x = _ips(e)
        return (bool(np.isnan(x)), 0.0 if np.isnan(x) else x, e.model)

    return sorted(rows, key=key)


def _save(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=DPI)


# --------------------------------------------------------------------------------- figures


def ranking_figure(entries: list[Entry], tau: float, path: Path) -> None:
    datasets = _datasets(entries)
    n_models = max(len(_by_dataset(entries, d)) for d in datasets)
    fig, axes = _panels(len(datasets), 5.2, 1.7 + 0.32 * n_models,
                        f"IPS ranking at τ = {tau:g} (0-shot templates)")
    for ax, d in zip(axes, datasets):
        rows = _by_dataset(entries, d)  # least sensitive first, drawn at the top
        vals = np.array([_ips(e) for e in rows])
        y = np.arange(len(rows))
        finite = vals[np.isfinite(vals)]
        lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 2.0)
        pad = max(0.05, 0.15 * (hi - lo))
        ax.set_xlim(max(0.0, lo - pad), min(2.0, hi + pad) + 0.6 * pad)
        ax.hlines(y, ax.get_xlim()[0], np.where(np.isfinite(vals), vals, ax.get_xlim()[0]),
                  color="#dddddd", linewidth=1, zorder=1)
        for yi, v, e in zip(y, vals, rows):
            if np.isnan(v):
                ax.text(ax.get_xlim()[0], yi, " no value", va="center", fontsize=8)
                continue
            ax.plot(v, yi, "o", color=TYPE_COLORS.get(e.attrs["type"], "#888888"), zorder=2)
            ax.annotate(f"{v:.3f}", (v, yi), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=8)
        ax.set_yticks(y, [e.model for e in rows], fontsize=8)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlabel("IPS (lower = less sensitive)")
        ax.set_title(d, fontsize=10)
    handles = [_marker(c, t) for t, c in TYPE_COLORS.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8,
               frameon=False)
    _save(fig, path)


def _marker(color: str, label: str):
    from matplotlib.lines import Line2D

    return Line2D([], [], marker="o", linestyle="", color=color, label=label)


def _patch(color: str, label: str):
    from matplotlib.patches import Patch

    return Patch(facecolor=color, label=label)


def order_figure(entries: list[Entry], tau: float, path: Path) -> None:
    datasets = _datasets(entries)
    n_models = max(len(_by_dataset(entries, d)) for d in datasets)
    fig, axes = _panels(len(datasets), 5.2, 1.8 + 0.45 * n_models,
                        f"IPS by interaction order, τ = {tau:g} (0-shot templates)")
    bands = ("low", "mid", "high")
    h = 0.26
    for ax, d in zip(axes, datasets):
        rows = _by_dataset(entries, d)
        y = np.arange(len(rows))
        for k, band in enumerate(bands):
            vals = np.array([_ips(e, band=band) for e in rows])
            ax.barh(y + (k - 1) * h, np.nan_to_num(vals), height=h, color=BAND_COLORS[band],
                    label=_band_label(band))
            for yi, v in zip(y, vals):
                if np.isnan(v):
                    ax.text(0.02, yi + (k - 1) * h, "no value", va="center", fontsize=7)
        ax.set_yticks(y, [e.model for e in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 2.1)
        ax.set_xlabel("IPS within the order band")
        ax.set_title(d, fontsize=10)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3,
               fontsize=8, frameon=False)
    _save(fig, path)


def tau_figure(entries: list[Entry], factors: xr.Dataset, tau: float, path: Path) -> None:
    datasets = _datasets(entries)
    fig, axes = _panels(len(datasets), 5.0, 4.2,
                        f"IPS over the τ sweep (0-shot templates; dashed: τ = {tau:g})")
    cmap = _colors(len({e.model for e in entries}))
    color = {m: cmap[i] for i, m in enumerate(dict.fromkeys(e.model for e in entries))}
    for ax, d in zip(axes, datasets):
        for e in _by_dataset(entries, d):
            if MAIN_GROUP not in e.ds["group"].values:
                continue
            taus = e.ds["tau"].values
            ax.plot(taus, e.ds["ips_sweep"].sel(group=MAIN_GROUP).values, marker="o",
                    markersize=3, color=color[e.model], label=e.model)
        ax.axvline(tau, color="#999999", linestyle="--", linewidth=1)
        ax.set_xlabel("τ (salience threshold)")
        ax.set_ylabel("IPS")
        ax.set_title(f"{d}\n{_robustness_text(factors, d)}", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes[1:]:
        for hnd, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, hnd)
    fig.legend(list(seen.values()), list(seen), loc="outside lower center",
               ncols=min(4, max(1, len(seen))), fontsize=8, frameon=False)
    _save(fig, path)


def _robustness_text(factors: xr.Dataset, d: str) -> str:
    if d not in factors["dataset"].values:
        return "τ robustness: not in the factors file"
    sp = float(factors["tau_spearman"].sel(dataset=d))
    pe = float(factors["tau_pearson"].sel(dataset=d))
    n = int(factors["tau_n_models"].sel(dataset=d))
    if np.isnan(sp) and np.isnan(pe):
        return f"Spearman / Pearson: n/a ({n} model(s), need ≥ 3)"
    return f"mean Spearman {sp:.3f}, Pearson {pe:.3f} ({n} models)"


def _colors(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(max(n, 1))]


def factors_figure(factors: xr.Dataset, tau: float, path: Path) -> None:
    present = [str(f) for f, p in zip(factors["factor"].values, factors["factor_present"].values)
               if p]
    absent = _absent(factors)
    if not present:
        fig, (ax,) = _panels(1, 8.0, 2.6, f"Factors at τ = {tau:g}")
        lines = ["No factor comparison is possible with the configured models:"]
        lines += [f"{FACTOR_TITLES.get(f, f)}: {r}" for f, r in absent.items()]
        _note(ax, "\n".join(lines))
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        _save(fig, path)
        return
    note = ("Absent: " + "; ".join(f"{FACTOR_TITLES.get(f, f)} ({r})" for f, r in absent.items())
            if absent else "")
    fig, axes = _panels(len(present), 4.6, 4.4,
                        f"ΔIPS = (IPS_A − IPS_B) / IPS_B by order band at τ = {tau:g} "
                        "(A: instruct, larger, dense, k-shot)", note)
    sf = factors["summary_factor"].values.astype(str)
    sd = factors["summary_dataset"].values.astype(str)
    sg = factors["summary_group"].values.astype(str)
    for ax, f in zip(axes, present):
        # model factors on the main templates; few-shot rows are k-shot groups by nature
        rows = [i for i in range(sf.size)
                if sf[i] == f and (f == "few_shot" or sg[i] == MAIN_GROUP)]
        ax.set_title(FACTOR_TITLES.get(f, f), fontsize=10)
        if not rows:
            _note(ax, f"no comparison on the {MAIN_GROUP} group")
            continue
        x = np.arange(len(BANDS))
        w = 0.8 / len(rows)
        colors = _colors(len(rows))
        for k, i in enumerate(rows):
            vals = 100 * factors["delta_ips_mean"].values[i]
            n = int(factors["n_comparisons"].values[i])
            label = sd[i] + (f", {sg[i]}" if f == "few_shot" else "") + f" (n={n})"
            ax.bar(x + (k - (len(rows) - 1) / 2) * w, np.nan_to_num(vals), width=w,
                   color=colors[k], label=label)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x, [_band_label(b) for b in BANDS], fontsize=9)
        ax.set_ylabel("ΔIPS (%)")
        missing = [i for i in rows if np.isnan(factors["delta_ips_mean"].values[i]).any()]
        if missing:
            ax.text(0.01, 0.01, "missing bars: no value (IPS_B = 0 or no salient pair)",
                    transform=ax.transAxes, fontsize=7, color="#555555")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1),
                  ncols=min(2, len(rows)), frameon=False)
    _save(fig, path)


def _absent(factors: xr.Dataset) -> dict[str, str]:
    out = {}
    for f, p, note in zip(factors["factor"].values, factors["factor_present"].values,
                          factors["factor_note"].values):
        if not p:
            out[str(f)] = str(note).removeprefix("absent: ")
    return out


def perturbation_figure(entries: list[Entry], tau: float, path: Path) -> None:
    datasets = _datasets(entries)
    n_models = max(len(_by_dataset(entries, d)) for d in datasets)
    fig, axes = _panels(len(datasets), 5.2, 1.8 + 0.4 * n_models,
                        f"IPS of altering vs adding template pairs (0-shot), τ = {tau:g}")
    labels = ("altering", "adding", "perturbation")
    used = set()
    for ax, d in zip(axes, datasets):
        rows = _by_dataset(entries, d)
        y = np.arange(len(rows))
        means = np.array([[_label_mean(e, lab) for lab in labels] for e in rows]).reshape(-1, 3)
        show = [k for k in range(3) if np.isfinite(means[:, k]).any()]
        if not show:
            _note(ax, "no altering or adding pair")
            ax.set_title(d, fontsize=10)
            continue
        h = 0.8 / len(show)
        for j, k in enumerate(show):
            ax.barh(y + (j - (len(show) - 1) / 2) * h, np.nan_to_num(means[:, k]), height=h,
                    color=LABEL_COLORS[labels[k]], label=labels[k])
            used.add(labels[k])
        ax.set_yticks(y, [e.model for e in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 2.1)
        ax.set_xlabel("mean IPS of the pairs (band all)")
        ax.set_title(d, fontsize=10)
    if "perturbation" in used:
        fig.suptitle(f"IPS of altering vs adding template pairs (0-shot) and of reworded "
                     f"prompts, τ = {tau:g}", fontsize=12)
    handles = [_patch(LABEL_COLORS[lab], _LABEL_TEXT[lab]) for lab in labels if lab in used]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8,
                   frameon=False)
    _save(fig, path)


_LABEL_TEXT = {
    "altering": "altering tokens (case)",
    "adding": "adding tokens (separator, marker)",
    "perturbation": "reworded prompt (perturbation group)",
}


def _label_mean(e: Entry, label: str) -> float:
    """Mean pair_ips (band all) over the pairs with this label: 0-shot pairs for
    altering/adding, the perturbation group's pairs for `perturbation`."""
    ds = e.ds
    if ds.sizes.get("pair", 0) == 0:
        return float("nan")
    lab = ds["pair_label"].values.astype(str)
    grp = ds["pair_group"].values.astype(str)
    sel = (lab == label) & ((grp == MAIN_GROUP) if label != "perturbation" else True)
    vals = ds["pair_ips"].sel(band="all").values[sel]
    vals = vals[np.isfinite(vals)]
    return float(vals.mean()) if vals.size else float("nan")


# --------------------------------------------------------------------------------- table


TABLE_COLUMNS = ("model", "dataset", "group", "band", "ips", "n_valued_samples",
                 "n_empty_pairs", "output_consistency", "n_samples", "tau", *ATTRIBUTES)


def table_rows(entries: list[Entry]) -> list[dict]:
    rows = []
    for e in entries:
        ds = e.ds
        for g in ds["group"].values:
            for b in BANDS:
                rows.append({
                    "model": e.model, "dataset": e.dataset, "group": str(g), "band": b,
                    "ips": float(ds["ips"].sel(group=g, band=b)),
                    "n_valued_samples": int(ds["n_valued_samples"].sel(group=g, band=b)),
                    "n_empty_pairs": int(ds["n_empty_pairs"].sel(group=g, band=b)),
                    "output_consistency": float(ds["output_consistency"].sel(group=g))
                    if "output_consistency" in ds else float("nan"),
                    "n_samples": int(ds["n_samples"]) if "n_samples" in ds else "",
                    "tau": float(ds.attrs["tau"]),
                    **{k: _attr_text(e.attrs.get(k)) for k in ATTRIBUTES},
                })
    return rows


def _attr_text(x) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return "" if x is None else str(x)


def write_table(entries: list[Entry], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=TABLE_COLUMNS)
        w.writeheader()
        for row in table_rows(entries):
            w.writerow({k: ("" if isinstance(v, float) and np.isnan(v) else v)
                        for k, v in row.items()})


# --------------------------------------------------------------------------------- README


def readme(entries: list[Entry], factors: xr.Dataset, tau: float) -> str:
    datasets = _datasets(entries)
    models = list(dict.fromkeys(e.model for e in entries))
    lines = [
        "# IPS results",
        "",
        f"Interaction-based prompt sensitivity at τ = {tau:g} of {len(models)} model(s) on "
        f"{len(datasets)} dataset(s), written by `ips figures` (ips {__version__}).",
        "",
        f"- Models: {', '.join(models)}",
        f"- Datasets: {', '.join(datasets)}",
        "",
        "## Files",
        "",
    ]
    lines += [f"- `{name}`: {text}." for name, text in FILES.items()]
    lines += ["", "## Factors", ""]
    for f, note in zip(factors["factor"].values, factors["factor_note"].values):
        lines.append(f"- {FACTOR_TITLES.get(str(f), str(f))} (`{f}`): {note}")
    absent = _absent(factors)
    if absent:
        lines += ["", "Absent factors: " + ", ".join(f"`{f}`" for f in absent)
                  + ". They are not drawn in `factors.png`."]
    lines += ["", "## τ robustness", ""]
    for d in datasets:
        lines.append(f"- {d}: {_robustness_text(factors, d)}"
                     + (f"; {factors['tau_note'].sel(dataset=d).item()}"
                        if d in factors["dataset"].values
                        and factors["tau_note"].sel(dataset=d).item() else ""))
    lines += ["", "Metrics files: " + ", ".join(f"`{e.path}`" for e in entries), ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------- driver


def _read_factors(path: Path) -> xr.Dataset:
    if not Path(path).is_file():
        raise InputError(f"{path}: no such factors file")
    try:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            ds = ds.load()
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable factors file ({e})") from None
    for name in ("factor_present", "factor_note", "delta_ips_mean", "tau_spearman"):
        if name not in ds.variables:
            raise InputError(f"{path}: no variable {name!r} (is this a file of `ips factors`?)")
    return ds


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a fresh temporary directory next to `path`; on success it replaces `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    tmp.mkdir()
    try:
        yield tmp
        old = None
        if path.exists():
            old = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.old"
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def make_figures(metrics_paths: Sequence[str | os.PathLike], factors_path: str | os.PathLike,
                 out: str | os.PathLike) -> list[str]:
    """Write the figures, the table and the README into the directory `out`; return the names."""
    if not metrics_paths:
        raise InputError("no metrics files given")
    entries = [read_metrics(p) for p in metrics_paths]
    factors = _read_factors(Path(factors_path))
    tau = float(factors.attrs.get("tau", entries[0].ds.attrs["tau"]))
    for e in entries:
        if not np.isclose(float(e.ds.attrs["tau"]), tau):
            raise InputError(f"{e.path}: computed at τ = {e.ds.attrs['tau']}, but "
                             f"{factors_path} at τ = {tau}")
    with atomic_dir(out) as tmp:
        ranking_figure(entries, tau, tmp / "ips_ranking.png")
        order_figure(entries, tau, tmp / "ips_by_order.png")
        tau_figure(entries, factors, tau, tmp / "tau_robustness.png")
        factors_figure(factors, tau, tmp / "factors.png")
        perturbation_figure(entries, tau, tmp / "perturbation_types.png")
        write_table(entries, tmp / "ips_table.csv")
        (tmp / "README.md").write_text(readme(entries, factors, tau), encoding="utf-8")
    return [*FILES, "README.md"]

"""Helpers shared by the figure modules: reading values off the metrics entries, ordering,
colours, legends, the interval whiskers of every IPS number, the flag of intervals from few
samples and the text of p-values."""

from __future__ import annotations

import numpy as np

from ips.metrics_file import Entry
from ips.metrics_file import BAND_PAIRS
from ips.templates import ZERO_SHOT
from ips.uncertainty import MIN_RELIABLE_N

MAIN_GROUP = ZERO_SHOT
"""The condition group of the main comparisons (the 0-shot templates)."""
PERTURBATION_GROUP = "perturbation"
"""The condition group of the reworded prompts (paraphrase, reorder; Appendix L)."""
FEW_HATCH = "////"
"""Hatch of a bar whose interval rests on fewer than MIN_RELIABLE_N samples."""


def ips_value(e: Entry, group: str = MAIN_GROUP, band: str = "all") -> float:
    if group not in e.ds["group"].values:
        return float("nan")
    return float(e.ds["ips"].sel(group=group, band=band))


def ips_ci(e: Entry, group: str = MAIN_GROUP, band: str = "all") -> tuple[float, float]:
    """Bootstrap interval of IPS; NaN when the metrics file has none."""
    if "ips_ci" not in e.ds.variables or group not in e.ds["group"].values:
        return float("nan"), float("nan")
    lo, hi = e.ds["ips_ci"].sel(group=group, band=band).values.astype(float)
    return float(lo), float(hi)


#: how the nulls are marked beside IPS (ips.nulls): the matched-size null and the Gaussian null
NULL_MARKS = {"matched": dict(marker="D", color="#e6ab02", mfc="none", ms=6, ls=""),
              "gaussian": dict(marker="|", color="#222222", ms=9, mew=1.5, ls="")}


def null_values(e: Entry, group: str = MAIN_GROUP, band: str = "all") -> dict[str, np.ndarray]:
    """The nulls of a group and band to mark beside its IPS: `matched` (one value) and
    `gaussian` (one per level); empty where the metrics file has none."""
    ds, out = e.ds, {}
    if group not in ds["group"].values:
        return out
    if "matched_null_ips" in ds:
        out["matched"] = np.atleast_1d(float(ds["matched_null_ips"].sel(group=group, band=band)))
    if "null_ips" in ds:
        out["gaussian"] = ds["null_ips"].sel(group=group, band=band).values.astype(float)
    return out


def null_legend() -> list:
    """Legend entries of `NULL_MARKS`."""
    from matplotlib.lines import Line2D

    return [Line2D([], [], label="matched-size null", **NULL_MARKS["matched"]),
            Line2D([], [], label="Gaussian null (each level)", **NULL_MARKS["gaussian"])]


def n_valued(e: Entry, group: str = MAIN_GROUP, band: str = "all") -> int:
    """Samples behind IPS and its interval (0 without that group)."""
    if group not in e.ds["group"].values:
        return 0
    return int(e.ds["n_valued_samples"].sel(group=group, band=band))


def few(n) -> bool:
    """Whether an interval or test rests on fewer than MIN_RELIABLE_N samples."""
    return int(n) < MIN_RELIABLE_N


def few_hatch(n) -> str | None:
    return FEW_HATCH if few(n) else None


def few_note(mark: str = "hatched", what: str = "interval or test") -> str:
    """Legend text of the few-samples flag."""
    return f"{mark}: {what} from n < {MIN_RELIABLE_N} samples"


def whiskers(values, cis) -> np.ndarray:
    """matplotlib's xerr/yerr (2, n) from values and (n, 2) intervals; 0 where unknown."""
    v = np.asarray(values, float)
    c = np.asarray(cis, float).reshape(-1, 2)
    err = np.stack([v - c[:, 0], c[:, 1] - v])
    return np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)


def datasets_of(entries: list[Entry]) -> list[str]:
    return list(dict.fromkeys(e.dataset for e in entries))


def by_dataset(entries: list[Entry], d: str) -> list[Entry]:
    """The entries of dataset d, ranked by IPS (0-shot, all); models without IPS last."""
    rows = [e for e in entries if e.dataset == d]

    def key(e: Entry):
        x = ips_value(e)
        return (bool(np.isnan(x)), 0.0 if np.isnan(x) else x, e.model)

    return sorted(rows, key=key)


def colors(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(max(n, 1))]


def model_colors(entries: list[Entry]) -> dict[str, tuple]:
    models = list(dict.fromkeys(e.model for e in entries))
    return dict(zip(models, colors(len(models))))


ROW_INCHES = (0.32, 0.24)
"""Height of one model's row in the figures with a row per model: up to 20 rows, beyond."""


def row_height(n: int) -> float:
    """Inches of one of n rows of a row-per-model panel: roomy for a few models, tighter for
    the paper's 50, so that 50 rows stay under about 20 inches (`ROW_INCHES`)."""
    return ROW_INCHES[0] if n <= 20 else ROW_INCHES[1]


def row_font(n: int) -> float:
    """Font size of the row labels of a panel with n rows: 8 points up to 20 rows, 7 beyond."""
    return 8 if n <= 20 else 7


FAMILY_STYLES = {"instruct": "-", "base": "--"}


def family_colors(entries: list[Entry]) -> dict[str, tuple]:
    """One colour per model family (`family` attribute): the line figures colour their 50
    lines by family, not by model (a legend of 50 colours cannot be read)."""
    fams = sorted({e.attrs.get("family", "?") for e in entries})
    return dict(zip(fams, colors(len(fams))))


def family_legend(entries: list[Entry]) -> list:
    """Legend entries of `family_colors` with the line style of each model type."""
    from matplotlib.lines import Line2D

    count = {}
    for e in entries:
        count.setdefault(e.attrs.get("family", "?"), set()).add(e.model)
    hs = [Line2D([], [], color=c, label=f"{f} ({len(count[f])} models)")
          for f, c in family_colors(entries).items()]
    return hs + [Line2D([], [], color="#555555", ls=s, label=t) for t, s in
                 FAMILY_STYLES.items()]


def marker(color, label: str):
    from matplotlib.lines import Line2D

    return Line2D([], [], marker="o", linestyle="", color=color, label=label)


def patch(color, label: str):
    from matplotlib.patches import Patch

    return Patch(facecolor=color, label=label)


def robustness_text(robustness: dict, d: str) -> str:
    """The τ robustness of dataset `d` in words (`ips.factors.TauRobustness`)."""
    return robustness[d].text() if d in robustness else "τ robustness: not in the factors file"


def legend_below(fig, handles, ncols: int = 4, labels=None) -> None:
    """One legend for the whole figure, below its panels (labels: the handles' own)."""
    if handles:
        extra = {} if labels is None else {"labels": list(labels)}
        fig.legend(handles=list(handles), loc="outside lower center",
                   ncols=min(ncols, max(1, len(handles))), fontsize=8, frameon=False, **extra)


def blank(ax) -> None:
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)


def p_short(p: float) -> str:
    if not np.isfinite(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def p_text(p: float, n: int | None = None) -> str:
    """A sign-flip p-value with the samples it rests on, e.g. "sign-flip p = 0.250, n = 3"."""
    text = "p n/a" if not np.isfinite(p) else "p " + ("< 0.001" if p < 0.001 else f"= {p:.3f}")
    return text if n is None else f"sign-flip {text}, n = {int(n)}"


def band_test_text(e: Entry, group: str = MAIN_GROUP) -> str:
    """Holm-adjusted sign-flip p-values of the order bands (`BAND_PAIRS` order) of a group,
    e.g. "Holm p .250/.500/.250 (n=3)"; "Holm p n/a" where the metrics file has none."""
    if "band_p_holm" not in e.ds.variables or group not in e.ds["group"].values:
        return "Holm p n/a"
    p = e.ds["band_p_holm"].sel(group=group, band_pair=list(BAND_PAIRS)).values.astype(float)
    n = e.ds["band_n"].sel(group=group).values.astype(int)
    ns = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    return "Holm p " + "/".join(p_short(x).removeprefix("0") for x in p) + f" (n={ns})"


def correlation_text(x, y) -> str:
    """Pearson and Spearman r of the finite pairs, or why there is none."""
    import scipy.stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return f"r: n/a ({int(ok.sum())} point(s), need ≥ 3 that vary)"
    pr = scipy.stats.pearsonr(x[ok], y[ok])[0]
    sr = scipy.stats.spearmanr(x[ok], y[ok])[0]
    return f"Pearson r = {pr:.2f}, Spearman ρ = {sr:.2f} (n = {int(ok.sum())})"


def random_note(entries: list[Entry]) -> str:
    """What every output of `ips figures` says when a model of the run has random weights
    (the banner above every figure's title, the README's first line); "" when none has."""
    names = sorted({e.model for e in entries if e.random_weights})
    if not names:
        return ""
    shown = ", ".join(names) if len(names) <= 4 else f"{len(names)} models: {names[0]}, …"
    return f"random weights ({shown}): these numbers measure nothing"

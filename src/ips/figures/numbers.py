"""Numbers shared by the figure modules: values read off the metrics entries (IPS, its
interval, its nulls, n; the mean IPS of a label's pairs), the entries by dataset, the flag of intervals from few samples and
the text of p-values, tests and correlations. Their look (colours, legends, whiskers) is
`ips.figures.style`'s."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ips.analysis import uncertainty
from ips.analysis.uncertainty import MIN_RELIABLE_N
from ips.comparisons.claims.verdicts import bootstrap_settings
from ips.formats.metrics import BAND_PAIRS, Entry
from ips.prompts.templates import PERTURBATION, ZERO_SHOT


def ips_value(e: Entry, group: str = ZERO_SHOT, band: str = "all") -> float:
    if group not in e.ds["group"].values:
        return float("nan")
    return float(e.ds["ips"].sel(group=group, band=band))


def ips_ci(e: Entry, group: str = ZERO_SHOT, band: str = "all") -> tuple[float, float]:
    """Bootstrap interval of IPS; NaN when the metrics file has none."""
    if "ips_ci" not in e.ds.variables or group not in e.ds["group"].values:
        return float("nan"), float("nan")
    lo, hi = e.ds["ips_ci"].sel(group=group, band=band).values.astype(float)
    return float(lo), float(hi)


def null_values(e: Entry, group: str = ZERO_SHOT, band: str = "all") -> dict[str, np.ndarray]:
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


def n_valued(e: Entry, group: str = ZERO_SHOT, band: str = "all") -> int:
    """Samples behind IPS and its interval (0 without that group)."""
    if group not in e.ds["group"].values:
        return 0
    return int(e.ds["n_valued_samples"].sel(group=group, band=band))


def few(n) -> bool:
    """Whether an interval or test rests on fewer than MIN_RELIABLE_N samples."""
    return int(n) < MIN_RELIABLE_N


def few_note(mark: str = "hatched", what: str = "interval or test") -> str:
    """Legend text of the few-samples flag."""
    return f"{mark}: {what} from n < {MIN_RELIABLE_N} samples"


def datasets_of(entries: list[Entry]) -> list[str]:
    return list(dict.fromkeys(e.dataset for e in entries))


def by_dataset(entries: list[Entry], d: str) -> list[Entry]:
    """The entries of dataset d, ranked by IPS (0-shot, all); models without IPS last."""
    rows = [e for e in entries if e.dataset == d]

    def key(e: Entry):
        x = ips_value(e)
        return (bool(np.isnan(x)), 0.0 if np.isnan(x) else x, e.model)

    return sorted(rows, key=key)


def robustness_text(robustness: dict, d: str) -> str:
    """The τ robustness of dataset `d` in words (`ips.formats.factors.TauRobustness`)."""
    return robustness[d].text() if d in robustness else "τ robustness: not in the factors file"


def p_short(p: float) -> str:
    if not np.isfinite(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def p_text(p: float, n: int | None = None) -> str:
    """A sign-flip p-value with the samples it rests on, e.g. "sign-flip p = 0.250, n = 3"."""
    text = "p n/a" if not np.isfinite(p) else "p " + ("< 0.001" if p < 0.001 else f"= {p:.3f}")
    return text if n is None else f"sign-flip {text}, n = {int(n)}"


def band_test_text(e: Entry, group: str = ZERO_SHOT) -> str:
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
    # a control's entry is one the run asked for: its figures name it
    names = sorted({e.model for e in entries if e.random_weights and not e.control_of})
    if not names:
        return ""
    shown = ", ".join(names) if len(names) <= 4 else f"{len(names)} models: {names[0]}, …"
    return f"random weights ({shown}): these numbers measure nothing"


#: the labels of template pairs (Appendix G): altering and adding tokens, reworded prompts
LABELS = ("altering", "adding", "perturbation")


def label_columns(e: Entry, label: str) -> np.ndarray:
    """The pairs with this label: 0-shot pairs for altering/adding, every pair of the
    perturbation group for `perturbation` (its k-shot groups' pairs, labelled alike, are
    the few-shot factor's)."""
    ds = e.ds
    if ds.sizes.get("pair", 0) == 0:
        return np.zeros(0, dtype=int)
    lab = ds["pair_label"].values.astype(str)
    grp = ds["pair_group"].values.astype(str)
    group = PERTURBATION if label == "perturbation" else ZERO_SHOT
    return np.flatnonzero((lab == label) & (grp == group))


class LabelMean(NamedTuple):
    mean: float  # mean of pair_ips over the label's pairs (band all)
    ci: tuple[float, float]  # bootstrap interval over samples; NaN without per-sample values
    n: int  # samples with a value on any of the pairs (0 without per-sample values)
    pairs: int  # the label's pairs


def label_mean(e: Entry, label: str) -> LabelMean:
    """Mean pair_ips (band all) over the pairs with this label (`label_columns`) and its
    bootstrap interval over samples with the metrics file's bootstrap settings (the mean
    over the pairs of the per-pair means, recomputed in every replicate)."""
    cols = label_columns(e, label)
    nan = (float("nan"), float("nan"))
    if cols.size == 0:
        return LabelMean(float("nan"), nan, 0, 0)
    vals = e.ds["pair_ips"].sel(band="all").values[cols]
    vals = vals[np.isfinite(vals)]
    mean = float(vals.mean()) if vals.size else float("nan")
    if "sample_pair_ips" not in e.ds.variables:
        return LabelMean(mean, nan, 0, int(cols.size))
    x = e.ds["sample_pair_ips"].sel(band="all").transpose("sample", "pair").values[:, cols]
    seed, n_boot, level = bootstrap_settings(e)
    _, ci = uncertainty.bootstrap_ci(x, n_boot=n_boot, level=level, seed=seed)
    return LabelMean(mean, (float(ci[0]), float(ci[1])),
                     int(np.isfinite(x).any(axis=1).sum()), int(cols.size))

"""The metrics file of one (model, dataset): its layout, how it is written
(`write_metrics`, after `ips.analysis.summary.summarize` computed it) and how the later steps
read it (`read_metrics`).

`read_metrics` checks the attributes every reader relies on and returns an `Entry`: the
file's model, dataset and model attributes (`ips.config.MODEL_ATTRIBUTES`; `active_params`
defaults to `params`, as for a dense model) next to the dataset itself, and whether the model
has random weights (`Entry.random_weights`, from `model_weights` or `model_source`).

Output layout (one netCDF/HDF5 file, `xarray.open_dataset(path, engine="h5netcdf")`):

| variable | dims | content |
|---|---|---|
| `ips` | group, band | IPS (band `all`) and IPS^low/mid/high at τ over the group's unordered condition pairs |
| `n_valued_samples`, `n_empty_pairs` | group, band | samples averaged into `ips`; (sample, pair) cells with an empty U |
| `n_missing_pairs` | group | (sample, pair) cells with a condition the sample was not scored under (the values files' `scored`: a rewording its item lacks): no value, not counted as an empty U |
| `ips_sweep`, `n_valued_samples_sweep` | tau, group | IPS (band `all`) for every τ of the sweep |
| `pair_ips`, `pair_n_valued` | pair, band | per condition pair: mean over the samples with a non-empty U of ips(x, T, T̂), and how many |
| `type_share`, `type_count` | group, type, changed | shares / counts of the interaction types over U, pooled over the group's (sample, pair) cells whose prediction changed (`yes`) or not (`no`) |
| `sample_type_count` | sample, group, type, changed | the same counts per sample (over its pairs); `type_count` is their sum over samples (for intervals of the shares over samples) |
| `n_type_cells` | group, changed | number of (sample, pair) cells with a changed / unchanged prediction |
| `output_consistency` | group | share of samples with the same prediction under every condition of the group (of those scored under all of them) |
| `pair_consistency` | pair | share of samples with the same prediction under both conditions (of those scored under both) |
| `accuracy`, `accuracy_n` | condition | accuracy of `pred` per condition, over the samples scored under it, and how many (NaN and 0 for instruction datasets) |
| `peer_value`, `peer_ci`, `peer_n` | group, peer (, bound) | what other tools report on the same outputs (`ips.analysis.peers`; `peer`: `accuracy_spread`, `pss`, `consistency_rate`, `dv_unmasked`), its bootstrap interval over samples and the samples it rests on; the first three NaN for instruction datasets |
| `sample_pair_dv_unmasked` | sample, pair | |v_b(x_N) − v_a(x_N)| of every sample and pair: the change of the unmasked prompt's score (`ips.analysis.peers.size_r2` relates IPS to it) |
| `rep_cosine`, `rep_l2` | pair | representation baseline (App. H): mean over samples of the cosine similarity / L2 distance of the final-layer hidden states of the two conditions |
| `matching_error_max`, `n_samples`, `n_vars_mean` | – | largest fit matching error; samples; mean number of variables |
| `sample_ips` | sample, group, band | per-sample IPS (mean over the sample's valued pairs of the group); NaN where the sample has no valued pair |
| `sample_pair_ips` | sample, pair, band | ips(x, T, T̂) of every sample and pair; NaN where U is empty |
| `ips_sweep_ci` | tau, group, bound | the same interval for `ips_sweep` |
| `ips_ci`, `pair_ips_ci` | group / pair, band, bound | percentile-bootstrap interval (bound `low`, `high`) of `ips` / `pair_ips` over samples (`ips.analysis.uncertainty`) |
| `band_diff`, `band_p`, `band_p_holm`, `band_n` | group, band_pair | order of the bands (paper 4.3): for the pairs low-mid, mid-high, low-high, the mean over samples of the per-sample difference `sample_ips` first minus second band, the two-sided paired sign-flip p-value of it (`ips.analysis.uncertainty.sign_flip_test`, on the samples valued in both bands), the Holm-adjusted p-value over the group's three tests, and those samples |
| `sparsity_mean`, `sparsity_median` | rank | sorted |Ĩ| over Ω of every (sample, condition), read at relative ranks 0 (largest) … 1 (smallest), averaged (Fig. 2a) |
| `salient_share` | – | mean share of Ω with |Ĩ| > τ |
| `matching_nrmse` | keep | universal matching keeping only the largest 3 % / 5 % / all interactions: mean over (sample, condition) of RMS(φ_k − v) / (max v − min v) (Fig. 2b) |
| `sample_salient_share`, `sample_matching_nrmse` | sample[, keep] | the same two per sample (mean over its conditions), for intervals over samples |
| `case_norm`, `case_v`, `case_rec`, `case_words` | case_side, kind, case_mask / case_var | the case-study sample (`case_study_data`): Ĩ under both conditions (side `a`, `b`; kind `AND`, `OR`), v, the surrogate with the largest interactions, its variables |
| `case_same_norm`, `case_same_v`, `case_same_rec`, `case_same_words` | case_same_side, kind, case_same_mask / case_same_var | the same for the sample whose prediction stayed, beside a `case` whose prediction changed (Fig. 3a), where there is one |
| `null_ips`, `null_ips_ci`, `null_n_valued` | group, null_level, band[, bound] | Gaussian null IPS (`ips.analysis.nulls`): mean over samples of each sample's mean over the group's conditions of ips(x, v, v') with v' = v + level·range(v)·N(0, 1) refitted; its bootstrap interval and samples |
| `sample_null_ips`, `null_ips_sweep` | sample, group, null_level, band / tau, group, null_level | the same per sample, and over the τ sweep (band all) |
| `matched_null_ips`, `matched_null_ips_ci`, `matched_null_n_valued`, `sample_matched_null_ips` | group, band (sample, …) | matched-size null: per sample the mean over the group's pairs of the pair's null (each side + noise of the size of its game's change beyond the best affine map from the other game, `sample_pair_residual_change`; mean of the two sides) |
| `sample_pair_matched_null`, `pair_matched_null` | sample, pair, band / pair, band | the matched-size null of every pair, and its mean over samples |
| `sample_pair_residual_change` | sample, pair, pair_side | the noise size of each side of the matched-size null (`ips.analysis.nulls.residual_size`): side `a` sd(v_a − (α·v_b + β)), side `b` sd(v_b − (α'·v_a + β')), least squares with α, α' ≥ 0 |
| `sample_pair_change`, `sample_pair_change_rel` | sample, pair | raw size of each pair's change sd(v_b − v_a) (scale and shift included: the output-level size), and that over the mean range of the two games |
| `ceiling_ips`, `ceiling_ips_ci`, `ceiling_n_valued`, `sample_ceiling_ips` | group, band (sample, …) | ceiling (`ips.analysis.nulls.ceiling`): per sample the mean over the group's pairs (T, T̂) and over up to `ips.analysis.nulls.CEILING_PARTNERS` other samples s' of the same n of ips(x, Ĩ_T of the sample, Ĩ_T̂ of s'), interactions matched by bitmask: the IPS of unrelated games; NaN for a sample alone in its n |
| `ceiling_type_count` | group, type | the interaction types (`ips.analysis.interaction_types`) of the ceiling's games, Ĩ_T of each sample against Ĩ_T̂ of its partners, over the group's pairs, pooled over samples and partners (`ips.analysis.nulls.ceiling_types`): what replacing the item gives the shares of Fig. 3b |
| `sample_v_range` | sample, condition | max v − min v of every game |
| `{kind}_null_ips`, `{kind}_null_ips_ci`, `{kind}_null_n_valued`, `sample_{kind}_null_ips` | {kind}, group, band (sample, …) | the null of each variant (`ips.nulls.variants`: kind `precision`, `baseline`; `ips.analysis.nulls.variant_null`): per sample and group the mean over the group's conditions scored again of ips(x, v, v') between this run's fit and the fit of the same prompt scored with the coordinate's setting (a dtype, a baseline); NaN for samples not scored again and groups with no condition scored again |
| `{kind}_null_ips_sweep` | tau, {kind}, group | the same over the τ sweep (band all) |
| `{kind}_max_abs_dv`, `{kind}_median_abs_dv`, `{kind}_dv_rel`, `{kind}_jaccard`, `{kind}_games` | {kind} | max and median |v' − v| over every mask of the games scored again, their median sd(v' − v) / range of v, mean salient-set Jaccard at τ, and how many games |
| `heldout_error`, `reliable` | sample, condition | sparse fits only: each game's held-out reconstruction error (NaN for a complete design) and whether it is at most `ips.interactions.sparse.UNRELIABLE_HELDOUT` |

Sparse fits (`sampling: sparse`, any n): the interactions are their games' entries, laid on
the sets that are an entry of any game of the sample (`ips.analysis.sparse_metrics.entry_grid`, with
which `ips.analysis.metrics` computes what it computes on the 2^n axis); `case_norm` is then on
`case_set` (the bitmasks of ∅ and those sets), `case_v` and `case_rec` on the design's masks
(`case_mask`: bitmask coordinate), and `matching_nrmse` measures the error on those masks.

Coordinates: `group` (in the order of the values files' `groups`), `band` (`all`, `low`,
`mid`, `high`), `tau` (the sweep), `condition` with `template`, `shots`, `perturbation`,
`pair` (`"{group}:{a}|{b}"`) with `pair_a`, `pair_b` (condition names), `pair_group` and
`pair_label` (`altering`, `adding`, `mixed`, `none` from the template file's change kinds,
Appendix G; `perturbation` when either condition is a reworded prompt), `type`
(`ips.analysis.interaction_types.INTERACTION_TYPES`), `changed` (`yes`, `no`), `band_pair`
(`BAND_PAIRS`), `pair_side` (`a`, `b`: the two conditions of a pair).

Attributes: `model`, `model_attributes` (JSON), `model_source` (JSON: the entry's `source`
as the values files record it, "" for values files that do not; `{"random": …}` and
`{"redraw": …}` mark random weights), `model_weights` (`trained` or `random` as the entry
declared them or its source implies; "" in files written before), `model_control` (JSON: the
entry's `control`, {kind, of[, draw]},
when a control added it; "" otherwise), `dataset`, `kind`, `target`, `tau`, `groups`
(JSON), `prediction` (`pred`, the letter argmax, for MCQ; `greedy_token` for instruction
datasets, whose `pred` is −1), `template_file`, `values_files`, `interactions_files` (JSON lists),
`ips_version`, `sampling`, for sparse fits `budget`, `games` and `unreliable_games`,
`bootstrap` (JSON: method, n_boot, level, seed), `null` (JSON: how the nulls were made, or
`{"computed": false}`), `precision` (JSON: this run's dtype, and each precision run's
conditions and samples), `test` (JSON: method,
exact_max, draws, seed, multiplicity), and the case study's
`case_sample` ("" when there is none), `case_group`, `case_condition_a/_b`,
`case_template_a/_b`, `case_pred_a/_b`, `case_gold`, `case_ips`, `case_changed`, and the
same with `case_same_` for the unchanged sample.
Coordinate `sample` holds the sample ids, sorted (the bootstrap resamples in that order, so
sharding cannot change an interval).

Choices: a group with fewer than two conditions has no pair; its IPS, shares and output
consistency are NaN. A hidden state of norm 0 has no cosine; that sample is left out of
`rep_cosine`.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import xarray as xr

from ips import controls
from ips.config import MODEL_ATTRIBUTES, RANDOM_SOURCES
from ips.controls import Control
from ips.errors import InputError
from ips.formats.hdf5 import read_dataset, write_dataset

log = logging.getLogger(__name__)

BANDS = ("all", "low", "mid", "high")  # "all", then ips.analysis.layout.BANDS
CHANGED = ("yes", "no")
BAND_PAIRS = ("low-mid", "mid-high", "low-high")
"""Order-band comparisons of `band_p` (first minus second); one Holm family per group."""
PERTURBATION_LABEL = "perturbation"

# ----------------------------------------------------------------------------------- metrics


# ------------------------------------------------------------------------------ case study


# ---------------------------------------------------------------------------------- reading


WEIGHTS = ("trained", "random")
"""The `weights` column of every table: `random` when a row rests on any model whose weights
were drawn at random (`source: {random: …}` or `{redraw: …}`), whose numbers measure nothing
about an LLM."""


@dataclass
class Entry:
    """One metrics file."""

    path: Path
    model: str
    dataset: str
    attrs: dict  # model attributes
    ds: xr.Dataset

    @cached_property
    def random_weights(self) -> bool:
        """Whether the model's weights are untrained: as its entry declared them
        (`model_weights`), else (a file written before) a `random` or `redraw` source."""
        if declared := self.ds.attrs.get("model_weights"):
            return declared == "random"
        return bool(set(RANDOM_SOURCES) & set(json_attribute(self.ds, self.path, "model_source")))

    @cached_property
    def control_record(self) -> dict:
        """The entry's `control` as the scores record it (`model_control`: kind, of), {} for
        a model no control added."""
        return json_attribute(self.ds, self.path, "model_control")

    @cached_property
    def control(self) -> type[Control] | None:
        """The control kind that added this model (`ips.controls`), else None (also for a
        kind no plug-in of this process registers)."""
        return controls.kind_of({"control": self.control_record})

    @cached_property
    def control_of(self) -> str | None:
        """The configured model this one is a control of, else None."""
        return self.control_record.get("of")

    @cached_property
    def control_draw(self) -> int:
        """Which draw of its model's control this entry is (1, 2, …; 1 for any other)."""
        return int(self.control_record.get("draw", 1))


def json_attribute(ds: xr.Dataset, path: str | os.PathLike, name: str) -> dict:
    """The metrics file's JSON attribute `name` (`model_source`, `model_control`) as a mapping;
    {} for a file without it (a model no control added; values files written before sources
    were recorded, when every model was trained)."""
    text = ds.attrs.get(name, "")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: attribute {name!r} is not JSON ({e})") from None
    if not isinstance(value, dict):
        raise InputError(f"{path}: attribute {name!r} is not a mapping: {text!r}")
    return value


def weights(entries) -> str:
    """`random` when any of `entries` has random weights, else `trained` (`WEIGHTS`)."""
    return WEIGHTS[any(e.random_weights for e in entries)]


def read_metrics(path: str | os.PathLike) -> Entry:
    """Read one metrics file of `ips metrics`; `InputError` names the file."""
    path = Path(path)
    ds = read_dataset(path, "metrics", ("ips", "pair_ips", "ips_sweep"), "ips metrics")
    for name in ("model", "dataset", "model_attributes", "tau"):
        if name not in ds.attrs:
            raise InputError(f"{path}: attribute {name!r} is missing")
    try:
        attrs = json.loads(ds.attrs["model_attributes"])
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: attribute 'model_attributes' is not JSON ({e})") from None
    missing = [k for k in MODEL_ATTRIBUTES[:5] if k not in attrs]
    if missing:
        raise InputError(f"{path}: model_attributes lacks {missing}")
    attrs = {k: attrs.get(k) for k in MODEL_ATTRIBUTES}
    for k in ("params", "active_params"):
        if attrs[k] is not None:
            attrs[k] = float(attrs[k])
    if attrs["active_params"] is None:
        attrs["active_params"] = attrs["params"]
    for name in ("model_source", "model_control"):  # a bad one is an error here, not in a figure
        json_attribute(ds, path, name)
    return Entry(path, str(ds.attrs["model"]), str(ds.attrs["dataset"]), attrs, ds)


def write_metrics(ds: xr.Dataset, path: str | os.PathLike) -> None:
    """Write the metrics of `ips.analysis.summary.summarize` as the metrics file `path`."""
    write_dataset(ds, path)

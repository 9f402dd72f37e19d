"""`TrieScorer`: v(x_S) for every mask of a prompt, its levels run depth-first over the tree
(`ips.scoring.trie`), the answer positions projected to v as the model's head would."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ips.baselines import Baseline, as_baseline
from ips.models.loading import input_device
from ips.scoring.log_odds import (
    ScoringError,
    finite_values,
    kept_tokens,
    log_odds,
    model_dtype,
    v_from_logits,
)
from ips.scoring.trie.attention import ATTENTION, register
from ips.scoring.trie.plan import DESIGN_BITS, plan_levels, pow2_floor
from ips.scoring.trie.support import TrieUnsupported, unsupported_reason
from ips.scoring.trie.tree import KeyValueTree

log = logging.getLogger(__name__)

_LOCK = threading.Lock()


@dataclass
class TrieStats:
    """What the trie computed, summed over calls (for benchmarks and tests)."""

    prompts: int = 0
    masks: int = 0  # masked evaluations returned (2**n per prompt)
    tokens: int = 0  # token positions run through the decoder
    plain_tokens: int = 0  # what the plain scorer would run: 2**n × row length per prompt
    key_pairs: int = 0  # (query, key) pairs attended, summed over layers
    forwards: int = 0
    projected: int = 0  # positions projected to logits
    peak_stored: int = 0  # most key/value bytes stored at once



_BLOCK = 1 << 18  # float64 elements of one block of exp terms (2 MB: stays in cache)


class TrieScorer:
    """v(x_S) for all 2**n masks of a prompt, evaluated as a trie; same values as `Engine`.

    `budget`: most tokens (rows × segment length) per forward; `logits_budget`: most logits
    (rows × target length × vocabulary slice) held at once at the output projection;
    `forward_cost`: a forward's fixed cost in tokens (see `plan_levels`; default: 48 on a
    CPU, 512 on an accelerator); `check`: compare with a plain forward on the first prompt.
    `mode`: "trie" raises `ScoringError` where the model cannot be evaluated as a trie,
    "auto" logs why once and makes `values` return None (the caller then scores plainly).
    `stats` sums what was computed (tokens, forwards, stored keys/values ...).
    """

    def __init__(self, model, baseline: Baseline | int, budget: int = 4096, device=None, *,
                 mode: str = "trie", logits_budget: int = 1 << 22, check: bool = True,
                 forward_cost: int | None = None):
        if mode not in ("trie", "auto"):
            raise ValueError(f"mode must be 'trie' or 'auto', got {mode!r}")
        self.model = model
        self.baseline = as_baseline(baseline)
        self.budget = max(1, int(budget))
        self.logits_budget = max(1, int(logits_budget))
        self.mode = mode
        self.check = check  # compare with the plain scorer on the first prompt
        if device is None:  # where the input ids go (a dispatched model: its embeddings')
            device = (input_device(model) if hasattr(model, "get_input_embeddings")
                      else torch.device("cpu"))
        self.device = device
        # a forward's fixed cost in tokens' time (see `plan_levels`): measured on a 2-core CPU
        # with SmolLM2 (about 60 ms per forward against 1.4 ms per token); on an accelerator
        # launching the kernels of a forward costs more tokens' time
        if forward_cost is None:
            forward_cost = 48 if torch.device(self.device).type == "cpu" else 512
        self.forward_cost = int(forward_cost)
        self.stats = TrieStats()
        self.reason: str | None = None
        reason = unsupported_reason(model)
        if reason is None:
            register()
            self.decoder = model.get_decoder()
            self.n_layers = model.config.get_text_config().num_hidden_layers
            text = model.config.get_text_config()
            self.softcap = getattr(text, "final_logit_softcapping", None)
            self.window = getattr(text, "sliding_window", None) or float("inf")
            self._configs = self._find_configs()
        else:
            self._unsupported(reason)

    @property
    def active(self) -> bool:
        return self.reason is None

    def _unsupported(self, reason: str) -> None:
        self.reason = reason
        name = type(self.model).__name__
        if self.mode == "trie":
            raise ScoringError(f"scorer 'trie': {name} cannot be evaluated as a trie: {reason}; "
                               "use scorer 'plain' or 'auto'")
        log.warning("scorer 'auto': %s cannot be evaluated as a trie (%s); using the plain "
                    "scorer", name, reason)

    # ------------------------------------------------------------------ evaluation

    def values(self, ids: np.ndarray, owners: np.ndarray, n: int, target: Sequence[int],
               masks: np.ndarray | None = None) -> np.ndarray | None:
        """v(x_S) for all 2**n masks S, or for the bitmasks `masks` (a design, in its order),
        as `Engine.values`; None where `mode` is "auto" and the model cannot be evaluated as
        a trie (the reason is logged once). Under a baseline that shortens rows (deletion)
        also None (the caller scores it plainly) for a prompt whose last token belongs to a
        variable (leaving it out moves the answer position; rendered prompts end with their
        cue) or that is longer than the model's sliding window (a shortened prompt's window
        counts the tokens kept, not positions, so a key's place in it depends on every level
        above).

        A design is a two-level trie: the tokens before the first variable run once, and
        every design mask runs the rest attending to them (the masks of a design share no
        longer prefix in general)."""
        if not self.active:
            return None
        if self.baseline.shortens and (owners[-1] >= 0
                                       or len(ids) + len(target) - 1 > self.window):
            return None
        try:
            # before the self-check: an overflow is the precision's fault, not the trie's
            v = finite_values(self._values(ids, owners, n, target, masks), model_dtype(self.model))
            if self.check:
                self._self_check(ids, owners, n, target, v, masks)
        except TrieUnsupported as e:
            self._unsupported(str(e))
            return None
        return v

    @torch.inference_mode()
    def _values(self, ids, owners, n, target, design=None) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        owners = np.asarray(owners, dtype=np.int64)
        target = [int(t) for t in target]
        seq = np.concatenate([ids, np.asarray(target[:-1], dtype=np.int64)])
        own = np.concatenate([owners, np.full(len(target) - 1, -1, dtype=np.int64)])
        # the variables that own tokens, in the order of their first token
        firsts = {}
        for pos, o in enumerate(own):
            if 0 <= o < n and o not in firsts:
                firsts[int(o)] = pos
        order = sorted(firsts, key=firsts.get)
        m = len(order)
        if design is None:
            levels = plan_levels([firsts[o] for o in order], len(seq), self.budget,
                                 self.forward_cost)
        else:  # the prefix, then every design mask as a child of it (see `values`)
            start = firsts[order[0]] if order else len(seq)
            levels = [(0, start, 0), (start, len(seq), DESIGN_BITS)]
        self._seq, self._own, self._n, self._order = seq, own, n, np.asarray(order, dtype=np.int64)
        self._target = target
        self._leaf = np.empty(1 << m if design is None else len(design), dtype=np.float64)
        tree = KeyValueTree(levels, self.n_layers)
        self._tree = tree
        configs = self._configs
        saved = [c._attn_implementation_internal for c in configs]
        with _LOCK:
            try:
                for c in configs:
                    c._attn_implementation_internal = ATTENTION
                if design is None:
                    self._run(0, 0, 1)
                else:
                    self._run_design(np.asarray(design, dtype=np.int64))
            finally:
                for c, a in zip(configs, saved):
                    c._attn_implementation_internal = a
                self._tree = None
        st = self.stats
        st.prompts += 1
        st.plain_tokens += self._plain_tokens(np.arange(1 << n) if design is None else design)
        if design is not None:
            st.masks += len(design)
            return self._leaf.copy()
        # every mask S: its leaf is the node that keeps exactly the ordered variables in S
        masks = np.arange(1 << n, dtype=np.int64)
        leaf = np.zeros(1 << n, dtype=np.int64)
        for j, o in enumerate(order):
            leaf |= ((masks >> o) & 1) << (m - 1 - j)
        st.masks += 1 << n
        return self._leaf[leaf]

    def _plain_tokens(self, masks: np.ndarray) -> int:
        """The tokens the plain scorer runs for `masks` (`Baseline.lengths`)."""
        absent = 1 - ((np.asarray(masks)[:, None] >> np.arange(self._n)) & 1)
        return int(self.baseline.lengths(self._own, self._n, absent).sum())

    def _find_configs(self) -> list:
        """Every distinct config object the model's modules read `_attn_implementation` from."""
        seen = {}
        for mod in self.model.modules():
            c = getattr(mod, "config", None)
            if c is not None and hasattr(c, "_attn_implementation_internal"):
                seen[id(c)] = c
        return list(seen.values())

    def _rows(self, level: int) -> int:
        """Most nodes of `level` per forward (a power of two)."""
        return pow2_floor(self.budget // max(1, self._tree.lengths[level]))

    def _run(self, level: int, lo: int, hi: int) -> None:
        """Run nodes [lo, hi) of `level` (their ancestors are stored), then their subtrees."""
        tree = self._tree
        last = len(tree.lengths) - 1
        if tree.lengths[level] > 0:
            self._forward(level, lo, hi, last)
        if level == last:
            return
        r = tree.bits[level + 1] - tree.bits[level]  # each node has 2**r children
        step = min((hi - lo) << r, self._rows(level + 1))
        for c in range(lo << r, hi << r, step):
            self._run(level + 1, c, c + step)
        tree.kv[level] = None  # the subtree is done: free this level's chunk

    def _run_design(self, design: np.ndarray) -> None:
        """The two levels of a design: the prefix (if any), then the design's masks in
        chunks of the token budget, each chunk's rows being leaves lo..hi−1."""
        tree = self._tree
        if tree.lengths[0] > 0:
            self._forward(0, 0, 1, 1)
        step = self._rows(1)
        for lo in range(0, len(design), step):
            self._forward(1, lo, min(lo + step, len(design)), 1, design[lo:lo + step])

    def _forward(self, level: int, lo: int, hi: int, last: int, masks=None) -> None:
        """Run nodes lo..hi−1 of `level`; their masks follow from the node index (bit
        (fixed−1−j) keeps the j-th variable in order) unless given (a design's leaves), with
        the inputs the baseline gives (`Baseline.segments`). Under a baseline that shortens
        rows the nodes run in groups keeping the same tokens of the segment."""
        tree = self._tree
        a, s = tree.starts[level], tree.lengths[level]
        if masks is None:
            nodes = np.arange(lo, hi, dtype=np.int64)
            masks = np.zeros(len(nodes), dtype=np.int64)
            fixed = tree.bits[level]
            for j in range(fixed):
                masks |= ((nodes >> (fixed - 1 - j)) & 1) << self._order[j]
        tree.level, tree.lo, tree.store = level, lo, level < last
        tree.first[level] = lo
        if tree.store:
            tree.kv[level] = {}
        positions = np.arange(a, a + s)
        kept = kept_tokens(self._own[a:a + s], self._n, masks)
        segments = self.baseline.segments(self._seq[a:a + s], positions, kept)
        if not self.baseline.shortens:  # one segment: every row, every slot
            (part,) = segments
            self._decode(level, last, part.ids, positions, slice(lo, hi))
            return
        # the slots each node holds (rows without a segment hold none: the children attend
        # past it), read by the levels below
        tree.chunk = hi - lo
        valid = np.zeros_like(kept)
        for part in segments:
            pattern = np.zeros(s, dtype=bool)
            pattern[part.slots] = True
            valid[part.rows] = pattern
            tree.nodes = torch.as_tensor(lo + part.rows, device=self.device)
            tree.slots = torch.as_tensor(part.slots, device=self.device)
            tree.kept_key = pattern.tobytes()
            self._decode(level, last, part.ids, positions[part.slots], lo + part.rows)
        tree.valid[level] = torch.as_tensor(valid, device=self.device)
        tree.nodes, tree.slots, tree.kept_key = None, None, b""

    def _decode(self, level: int, last: int, rows: np.ndarray, positions: np.ndarray,
                leaves) -> None:
        """One forward of `rows` (token ids at `positions`) through the decoder over the
        stored levels; at the last level their v goes to `self._leaf[leaves]`."""
        tree = self._tree
        tree.calls, tree.pairs = 0, 0
        out = self.decoder(input_ids=torch.as_tensor(rows, device=self.device),
                           position_ids=torch.as_tensor(positions, device=self.device)[None],
                           use_cache=False, ips_trie=tree)
        if tree.calls != self.n_layers:
            raise TrieUnsupported(f"{tree.calls} of {self.n_layers} layers called the trie "
                                  "attention (the model does not use AttentionInterface)")
        st = self.stats
        st.forwards += 1
        st.tokens += rows.size
        st.key_pairs += tree.pairs
        st.peak_stored = max(st.peak_stored, tree.stored_bytes())
        if level == last:
            k = len(self._target)
            self._leaf[leaves] = self._project(out.last_hidden_state[:, -k:, :])
            st.projected += len(rows) * k

    def _project(self, hidden: torch.Tensor) -> np.ndarray:
        """v of each row from the decoder's output at its last k positions, `[rows, k, dim]`.

        The logits as the model's forward computes them (`lm_head`, then Gemma's final
        soft-capping if configured) and v from them in float64 as
        `ips.scoring.log_odds.v_from_logits` does, but streamed over slices of the vocabulary, so
        that each slice of the output matrix is read once for many rows (Gemma 3's is 262144 × 640)
        and nothing vocabulary-sized is allocated per row: per slice, the maximum is taken in the
        logits' precision (exact), every term exp(l − max) in float64 in cache-sized blocks, and the
        slices' log-sum- exps are combined with logaddexp (the same terms; only the order of the
        sums differs, ~1e-16 relative).
        """
        head = self.model.lm_head
        # a dispatched model's head: its weights where its forward has them (an offloaded
        # weight sits on "meta" outside accelerate's hook), the rows on its device
        hook = getattr(head, "_hf_hook", None)
        if hook is not None:
            (hidden,), _ = hook.pre_forward(head, hidden)
        try:
            return self._head_values(head.weight, head.bias, hidden)
        finally:
            if hook is not None:
                hook.post_forward(head, None)

    def _head_values(self, weight: torch.Tensor, bias: torch.Tensor | None,
                     hidden: torch.Tensor) -> np.ndarray:
        """`_project` with the head's weight and bias at hand."""
        vocab, dim = weight.shape
        rows, k = hidden.shape[:2]
        device = hidden.device
        target = torch.as_tensor(self._target, device=device)
        per = max(1, min(rows, self.logits_budget // (k * min(vocab, 1024))))  # rows per pass
        out = np.empty(rows, dtype=np.float64)
        for r0 in range(0, rows, per):
            h = hidden[r0:r0 + per].reshape(-1, dim)  # [rows·k, dim]
            n = h.shape[0]
            y = target.repeat(n // k)  # the target token of each (row, position)
            step = max(1, min(vocab, self.logits_budget // n))  # vocabulary slice
            block = max(1, min(step, _BLOCK // n))  # columns per float64 block
            flat = torch.empty(n * step, dtype=h.dtype, device=device)
            flat64 = torch.empty(n * block, dtype=torch.float64, device=device)
            ly = torch.empty(n, dtype=torch.float64, device=device)
            lse = torch.full((n,), -torch.inf, dtype=torch.float64, device=device)
            for c0 in range(0, vocab, step):
                c1 = min(vocab, c0 + step)
                logits = flat[:n * (c1 - c0)].view(n, c1 - c0)
                torch.mm(h, weight[c0:c1].t(), out=logits)
                if bias is not None:
                    logits.add_(bias[c0:c1])
                if self.softcap is not None:
                    logits.div_(self.softcap).tanh_().mul_(self.softcap)
                inside = ((y >= c0) & (y < c1)).nonzero().flatten()
                if len(inside):
                    cols = y[inside] - c0
                    ly[inside] = logits[inside, cols].double()
                    if k == 1:  # v = l_y − logsumexp over the other tokens
                        logits[inside, cols] = -torch.inf
                top = logits.amax(dim=-1).double()
                top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
                total = torch.zeros(n, dtype=torch.float64, device=device)
                for b0 in range(0, c1 - c0, block):
                    b1 = min(c1 - c0, b0 + block)
                    terms = flat64[:n * (b1 - b0)].view(n, b1 - b0).copy_(logits[:, b0:b1])
                    total += terms.sub_(top[:, None]).exp_().sum(dim=-1)
                lse = torch.logaddexp(lse, top + total.log())
            if k == 1:
                out[r0:r0 + n] = (ly - lse).cpu().numpy()
            else:
                out[r0:r0 + n // k] = log_odds((ly - lse).view(-1, k).sum(dim=1).cpu().numpy())
        return out

    @torch.inference_mode()
    def _self_check(self, ids, owners, n, target, v, design=None) -> None:
        """Compare with the plain scorer on masks "all kept" and "none kept" (those of them
        in `design`, whose v is in design order), once."""
        self.check = False
        seq = np.concatenate([np.asarray(ids), np.asarray(target[:-1], dtype=np.int64)])
        own = np.concatenate([np.asarray(owners), np.full(len(target) - 1, -1, dtype=np.int64)])
        masks = np.array(sorted({0, (1 << n) - 1}))
        at = masks
        if design is not None:
            design = np.asarray(design)
            masks = masks[np.isin(masks, design)]
            at = np.array([int(np.flatnonzero(design == m)[0]) for m in masks], dtype=np.int64)
            if len(masks) == 0:
                self.check = True  # nothing to compare here; check the next prompt
                return
        plain = np.empty(len(masks))
        for i, m in enumerate(masks):  # one row each: under deletion their lengths differ
            inputs = self.baseline.rows(seq, kept_tokens(own, n, [m]))
            logits = self.model(**{k: torch.as_tensor(x, device=self.device)
                                   for k, x in inputs.items()},
                                logits_to_keep=len(target), use_cache=False).logits
            plain[i] = v_from_logits(logits, target)[0]
        dtype = model_dtype(self.model)
        tol = 1e-3 if dtype in (torch.float32, torch.float64) else 0.1
        err = np.abs(plain - v[at])
        if not np.all(err <= tol * np.maximum(1.0, np.abs(plain))):
            raise TrieUnsupported(f"the trie's v differs from the plain scorer's by "
                                  f"{err.max():.3g} (masks {masks.tolist()})")
        log.debug("trie self-check passed: max |dv| = %.2g", err.max())

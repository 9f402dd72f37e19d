"""The keys and values of the trie's stored levels, and the attention of one level's rows
over them (`KeyValueTree`): the kernel behind the "ips_trie" attention function.

Under a baseline that shortens rows (deletion, `ips.baselines.Baseline.shortens`) a level's
nodes run in groups that keep the same tokens of its segment (`slots`), each group's segment
without the absent tokens. Their keys/values are
stored in the slots of the whole segment, with `valid` marking the slots a node holds; a
later row attends only to the valid slots of its ancestors.
"""

from __future__ import annotations

import torch

from ips.scoring.trie.support import TrieUnsupported


class KeyValueTree:
    """Keys/values of the stored levels, and the attention of one level's rows over them."""

    def __init__(self, levels: list[tuple[int, int, int]], n_layers: int):
        self.starts = [a for a, _, _ in levels]  # first position of each level's segment
        self.lengths = [b - a for a, b, _ in levels]
        self.bits = [v for _, _, v in levels]  # variables fixed by a node of each level
        starts = self.starts
        self.n_layers = n_layers
        self.kv: list[dict[int, tuple[torch.Tensor, torch.Tensor]] | None] = [None] * len(starts)
        self.first: list[int] = [0] * len(starts)  # node index of the first stored node
        self.level = 0
        self.lo = 0  # first node of the rows being run
        # under a shortening baseline, set by the scorer for each group: the rows' node
        # indices, the slots of the segment they keep (indices) and a key of them; the
        # level's chunk size; per level the slots each stored node holds (`[nodes, segment]`,
        # bool)
        self.nodes: torch.Tensor | None = None
        self.slots: torch.Tensor | None = None
        self.kept_key: bytes = b""
        self.chunk = 0
        self.valid: list[torch.Tensor | None] = [None] * len(starts)
        self.store = True
        self.calls = 0
        self.pairs = 0  # (query, key) pairs of the current forward, one layer
        self._masks: dict = {}

    def stored_bytes(self) -> int:
        return sum(k.numel() * k.element_size() * 2 for lv in self.kv if lv for k, _ in lv.values())

    def _allowed(self, j: int, window: int | None, device) -> torch.Tensor | None | bool:
        """Which keys of level j each query of the current level sees: a `[s, s_j]` mask,
        None (all of them) or False (none)."""
        key = (self.level, j, window, self.kept_key, str(device))  # per device: layers may sit
        if key not in self._masks:                                  # on several (device_map)
            q = self.starts[self.level] + torch.arange(self.lengths[self.level], device=device)
            kp = self.starts[j] + torch.arange(self.lengths[j], device=device)
            if self.slots is not None:  # the group's own tokens: only those it keeps
                q = q[self.slots.to(device)]
                kp = q if j == self.level else kp
            ok = kp[None, :] <= q[:, None]
            if window is not None:
                ok &= kp[None, :] > q[:, None] - window
            self._masks[key] = None if bool(ok.all()) else (False if not bool(ok.any()) else ok)
        return self._masks[key]

    def attend(self, module, query, key, value, scaling, window, softcap):
        layer = module.layer_idx
        R, H, s, d = query.shape
        kvh = key.shape[1]
        length = self.lengths[self.level] if self.slots is None else len(self.slots)
        if key.shape[0] != R or key.shape[2] != s or H % kvh or s != length:
            raise TrieUnsupported(f"unexpected attention shapes query {tuple(query.shape)}, key "
                                  f"{tuple(key.shape)} in layer {layer}")
        g = H // kvh
        k_new = key.transpose(0, 1).contiguous()  # [kvh, R, s, d]
        v_new = value.transpose(0, 1).contiguous()
        if self.store:
            self._keep(layer, k_new, v_new)
        # [R, H, s, d] -> [kvh, R, g, s, d]: query head h reads key head h // g
        q = (query * scaling).view(R, kvh, g, s, d).permute(1, 0, 2, 3, 4).contiguous()
        parts, scores = [], []
        for j in range(self.level + 1):
            if self.lengths[j] == 0:
                continue
            allowed = self._allowed(j, window, query.device)
            if allowed is False:
                continue
            valid = None
            if j < self.level:
                if layer not in self.kv[j]:  # under deletion: these ancestors kept nothing
                    continue
                K, V = self.kv[j][layer]
                shift = self.bits[self.level] - self.bits[j]
                if self.nodes is None:
                    groups = max(1, R >> shift)  # distinct ancestors of the rows at level j
                    a0 = (self.lo >> shift) - self.first[j]
                    K, V = K[:, a0:a0 + groups], V[:, a0:a0 + groups]
                else:  # the rows are every k-th node: as many of them under each ancestor
                    nodes = self.nodes.to(K.device)  # this layer's device (device_map)
                    at = torch.unique_consecutive((nodes >> shift) - self.first[j])
                    groups = len(at)
                    K, V, valid = K[:, at], V[:, at], self.valid[j].to(K.device)[at]
            else:
                K, V, groups = k_new, v_new, R
            sj = K.shape[2]
            sc = torch.matmul(q.view(kvh, groups, -1, d), K.transpose(-1, -2))
            sc = sc.view(kvh, R, g, s, sj)
            if softcap is not None:
                sc = torch.tanh(sc / softcap) * softcap
            if allowed is not None:
                sc = sc.masked_fill(~allowed, -torch.inf)
            if valid is not None:  # the slots the ancestor left out (after the soft-capping)
                sc = sc.view(kvh, groups, -1, sj).masked_fill(~valid[None, :, None, :],
                                                              -torch.inf).view(kvh, R, g, s, sj)
            parts.append((V, groups, sj))
            scores.append(sc)
            self.pairs += R * (s * sj if allowed is None else int(allowed.sum()))
        sc = torch.cat(scores, dim=-1) if len(scores) > 1 else scores[0]
        upcast = query.dtype in (torch.float16, torch.bfloat16)
        p = torch.softmax(sc, dim=-1, dtype=torch.float32 if upcast else None).to(query.dtype)
        out, off = None, 0
        for V, groups, sj in parts:
            o = torch.matmul(p[..., off:off + sj].reshape(kvh, groups, -1, sj), V)
            out = o.view(kvh, R, g, s, d) if out is None else out.add_(o.view(kvh, R, g, s, d))
            off += sj
        self.calls += 1
        # [kvh, R, g, s, d] -> [R, s, H, d], what the attention interface returns
        return out.permute(1, 3, 0, 2, 4).reshape(R, s, H, d), None

    def _keep(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> None:
        """Store the rows' keys/values `[kvh, R, s, d]` for the next levels: as they are, or
        under deletion in the slots of the whole segment that the group keeps."""
        level = self.kv[self.level]
        if self.slots is None:
            level[layer] = (k_new, v_new)
            return
        if layer not in level:
            shape = (k_new.shape[0], self.chunk, self.lengths[self.level], k_new.shape[-1])
            level[layer] = (k_new.new_zeros(shape), v_new.new_zeros(shape))
        rows = (self.nodes.to(k_new.device) - self.lo)[:, None]
        slots = self.slots.to(k_new.device)
        for stored, new in zip(level[layer], (k_new, v_new)):
            stored[:, rows, slots[None, :]] = new

"""The in-memory exact vector index of one store: one contiguous float32 matrix.

Rows are retrieval chunks, L2-normalised so cosine distance is ``1 - dot``. Scope, type,
status and expiry live in parallel numpy columns, so a scoped search is a vectorised mask
plus one matrix-vector product over the surviving rows: no per-record Python work. The
index is rebuilt from the database on open (or after another process wrote) and kept in
step by the store after each of its own commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store._planning import FAMILY

TYPE_CODES: dict[str, int] = {t: i for i, t in enumerate(FAMILY)}
DIMENSIONS = ("user", "agent", "thread")
PREFERENCE_PENALTY = 0.05
"""Added to the cosine distance once per preferred (non-exact) scope dimension a row misses."""


@dataclass
class IndexRow:
    rid: int
    vector: NDArray[np.float32]
    record_type: str
    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    valid: bool
    expires_at: float | None


class VectorIndex:
    """Exact cosine top-k over a growable matrix with vectorised filters."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._n = 0
        self._dead = 0
        self._alloc(1024)
        self._codes: dict[str, dict[str, int]] = {d: {} for d in DIMENSIONS}
        self._pos_by_rid: dict[int, list[int]] = {}

    def _alloc(self, cap: int) -> None:
        first = self._n == 0 and not hasattr(self, "vecs")
        n = self._n

        def grow(old: NDArray[Any] | None, shape: tuple[int, ...], dtype: Any) -> NDArray[Any]:
            new: NDArray[Any] = np.empty(shape, dtype=dtype)
            if old is not None:
                new[:n] = old[:n]
            return new

        self.vecs: NDArray[np.float32] = grow(
            None if first else self.vecs, (cap, self.dim), np.float32
        )
        self.rid: NDArray[np.int64] = grow(None if first else self.rid, (cap,), np.int64)
        self.type: NDArray[np.int8] = grow(None if first else self.type, (cap,), np.int8)
        self.scope: NDArray[np.int32] = grow(None if first else self.scope, (cap, 3), np.int32)
        self.valid: NDArray[np.bool_] = grow(None if first else self.valid, (cap,), np.bool_)
        self.expires: NDArray[np.float64] = grow(
            None if first else self.expires, (cap,), np.float64
        )
        self.alive: NDArray[np.bool_] = grow(None if first else self.alive, (cap,), np.bool_)
        self._cap = cap

    def __len__(self) -> int:
        return self._n - self._dead

    def _code(self, dim: str, value: str | None) -> int:
        if value is None:
            return -1
        table = self._codes[dim]
        code = table.get(value)
        if code is None:
            code = table[value] = len(table)
        return code

    def add(self, rows: Iterable[IndexRow]) -> None:
        rows = list(rows)
        if not rows:
            return
        need = self._n + len(rows)
        if need > self._cap:
            self._alloc(max(need, self._cap * 2))
        start = self._n
        mat = np.stack([r.vector for r in rows]).astype(np.float32, copy=False)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        end = start + len(rows)
        self.vecs[start:end] = mat / norms
        for i, r in enumerate(rows, start):
            self.rid[i] = r.rid
            self.type[i] = TYPE_CODES[r.record_type]
            self.scope[i, 0] = self._code("user", r.user_id)
            self.scope[i, 1] = self._code("agent", r.agent_id)
            self.scope[i, 2] = self._code("thread", r.thread_id)
            self.valid[i] = r.valid
            self.expires[i] = np.inf if r.expires_at is None else r.expires_at
            self.alive[i] = True
            self._pos_by_rid.setdefault(r.rid, []).append(i)
        self._n = end

    def remove(self, rids: Iterable[int]) -> None:
        for rid in rids:
            for pos in self._pos_by_rid.pop(rid, ()):
                if self.alive[pos]:
                    self.alive[pos] = False
                    self._dead += 1
        if self._dead > max(4096, self._n // 4):
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self._n])
        for name in ("vecs", "rid", "type", "scope", "valid", "expires", "alive"):
            arr = getattr(self, name)
            arr[: keep.size] = arr[keep]
        self._n = int(keep.size)
        self._dead = 0
        self._pos_by_rid = {}
        for i in range(self._n):
            self._pos_by_rid.setdefault(int(self.rid[i]), []).append(i)

    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        *,
        record_types: Iterable[str],
        exact: Mapping[str, str | None],
        prefer: Mapping[str, str | None],
        valid_only: bool,
        now: float,
        allowed_rids: NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """Top-k (rid, distance) pairs, one per record (its best chunk), distance ascending."""
        n = self._n
        if n == 0:
            return []
        mask = self.alive[:n] & (self.expires[:n] > now)
        codes = [TYPE_CODES[t] for t in record_types]
        if len(codes) < len(TYPE_CODES):
            mask &= np.isin(self.type[:n], codes)
        for dim, value in exact.items():
            col = DIMENSIONS.index(dim)
            if value is None:
                code = -1
            else:
                found = self._codes[dim].get(value)
                if found is None:
                    return []
                code = found
            mask &= self.scope[:n, col] == code
        if valid_only:
            mask &= self.valid[:n]
        if allowed_rids is not None:
            mask &= np.isin(self.rid[:n], allowed_rids)
        pos = np.flatnonzero(mask)
        if pos.size == 0:
            return []
        q = query.astype(np.float32, copy=False)
        q = q / float(np.linalg.norm(q))
        dist = 1.0 - (self.vecs[pos] @ q)
        for dim, value in prefer.items():
            col = DIMENSIONS.index(dim)
            code = (
                -2
                if value is not None and value not in self._codes[dim]
                else (-1 if value is None else self._codes[dim][value])
            )
            dist = dist + PREFERENCE_PENALTY * (self.scope[pos, col] != code)
        return _top_unique(dist, self.rid[pos], k)


def _top_unique(
    dist: NDArray[np.float64] | NDArray[np.float32], rids: NDArray[np.int64], k: int
) -> list[tuple[int, float]]:
    """The k best distinct rids, widening the partial sort until enough are distinct."""
    total = dist.shape[0]
    m = min(total, max(4 * k, k + 16))
    while True:
        if m < total:
            idx = np.argpartition(dist, m - 1)[:m]
            idx = idx[np.argsort(dist[idx], kind="stable")]
        else:
            idx = np.argsort(dist, kind="stable")
        out: dict[int, float] = {}
        for i in idx:
            rid = int(rids[i])
            if rid not in out:
                out[rid] = float(dist[i])
                if len(out) == k:
                    break
        if len(out) >= k or m >= total:
            return list(out.items())
        m = min(total, m * 4)

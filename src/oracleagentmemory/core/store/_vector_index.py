"""The in-memory exact vector index of one store: one contiguous float32 matrix.

Rows are retrieval chunks, L2-normalised so cosine distance is ``1 - dot``. Scope, type,
status and expiry live in parallel numpy columns, and each scope value keeps a posting list of
its rows, so a user-scoped search touches only that user's rows: a gather plus one small
matrix-vector product. An unscoped search with nothing to filter is one product over the whole
matrix, the memory-bandwidth floor. No per-record Python work happens on the search path. The
index is rebuilt from the database on open (or after another process wrote) and kept in step
by the store after each of its own commits.
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store._planning import FAMILY

TYPE_CODES: dict[str, int] = {t: i for i, t in enumerate(FAMILY)}
DIMENSIONS = ("user", "agent", "thread")
PREFERENCE_PENALTY = 0.05
"""Added to the cosine distance once per preferred (non-exact) scope dimension a row misses."""
FILTER_CACHE_SIZE = 64
RID_TAIL_MAX = 16_384
"""Rows appended since the rows were last sorted by rid before they are sorted again."""
LONG_RUN = 256
"""Contiguous rows read through a view rather than gathered."""
MAX_RUNS = 16
"""A scope whose rows form fewer contiguous runs is read through views, not a copy."""
BLOCK_CACHE_BYTES = 512 * 2**20
"""Memory the contiguous per-scope copies of vectors may use (least recently used go first)."""
_COLUMNS = ("vecs", "rid", "type", "scope", "valid", "expires", "alive")


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
        self._invalid = 0
        self._expiring = 0
        self._codes: dict[str, dict[str, int]] = {d: {} for d in DIMENSIONS}
        self._posting_cache: dict[tuple[int, int], NDArray[np.int64]] = {}
        self._blocks: OrderedDict[tuple[int, int], NDArray[np.float32]] = OrderedDict()
        self._block_bytes = 0
        self._by_rid: tuple[int, NDArray[np.int64], NDArray[np.int64]] | None = None
        """(rows covered, their rids sorted, their positions): finds a record's rows."""
        self._types_present: set[int] = set()
        self._clustered = -1
        self._filter_masks: OrderedDict[Hashable, NDArray[np.bool_]] = OrderedDict()
        self._max_rid = 0
        self._cap = 0
        self._alloc(1024)

    def _alloc(self, cap: int) -> None:
        n = self._n
        shapes: dict[str, tuple[tuple[int, ...], Any]] = {
            "vecs": ((cap, self.dim), np.float32),
            "rid": ((cap,), np.int64),
            "type": ((cap,), np.int8),
            "scope": ((cap, 3), np.int32),
            "valid": ((cap,), np.bool_),
            "expires": ((cap,), np.float64),
            "alive": ((cap,), np.bool_),
        }
        for name, (shape, dtype) in shapes.items():
            new: NDArray[Any] = np.empty(shape, dtype=dtype)
            if self._cap:
                new[:n] = getattr(self, name)[:n]
            setattr(self, name, new)
        self.vecs: NDArray[np.float32]
        self.rid: NDArray[np.int64]
        self.type: NDArray[np.int8]
        self.scope: NDArray[np.int32]
        self.valid: NDArray[np.bool_]
        self.expires: NDArray[np.float64]
        self.alive: NDArray[np.bool_]
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
        """Append the store's own rows (their vectors are unit-length already)."""
        rows = list(rows)
        if not rows:
            return
        if len(rows) == 1:
            self._add_one(rows[0])
            return
        self.add_columns(
            rows[0].vector[None, :] if len(rows) == 1 else np.stack([r.vector for r in rows]),
            [r.rid for r in rows],
            [r.record_type for r in rows],
            [r.user_id for r in rows],
            [r.agent_id for r in rows],
            [r.thread_id for r in rows],
            [r.valid for r in rows],
            [r.expires_at for r in rows],
            unit=True,
        )

    def add_columns(
        self,
        vectors: NDArray[np.float32],
        rids: Sequence[int],
        record_types: Sequence[str],
        user_ids: Sequence[str | None],
        agent_ids: Sequence[str | None],
        thread_ids: Sequence[str | None],
        valid: Sequence[bool],
        expires_at: Sequence[float | None],
        *,
        unit: bool = False,
    ) -> None:
        """Append rows given column by column (the bulk path: no object per row);
        ``unit``: the vectors are L2-normalised already."""
        count = len(rids)
        if count == 0:
            return
        start = self._n
        end = start + count
        if end > self._cap:
            # Headroom, so rows caught up on later do not copy the whole matrix at once.
            self._alloc(max(end + end // 8 + 1024, self._cap * 2))
        mat = np.asarray(vectors, dtype=np.float32)
        if unit:
            self.vecs[start:end] = mat
        else:
            norms = np.linalg.norm(mat, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            np.divide(mat, norms, out=self.vecs[start:end])
        self.rid[start:end] = rids
        self._max_rid = max(self._max_rid, int(self.rid[start:end].max()))
        type_codes = [TYPE_CODES[t] for t in record_types]
        self.type[start:end] = type_codes
        self._types_present.update(type_codes)
        for col, (dim, values) in enumerate(
            (("user", user_ids), ("agent", agent_ids), ("thread", thread_ids))
        ):
            self.scope[start:end, col] = [self._code(dim, v) for v in values]
        self.valid[start:end] = valid
        self._invalid += count - int(np.count_nonzero(self.valid[start:end]))
        self.expires[start:end] = [np.inf if e is None else e for e in expires_at]
        self._expiring += int(np.count_nonzero(np.isfinite(self.expires[start:end])))
        self.alive[start:end] = True
        self._note_appended(start, end)
        self._filter_masks.clear()
        self._n = end

    def _add_one(self, row: IndexRow) -> None:
        """``add_columns`` for a single unit-length row, with scalar stores instead of
        column slices: the path of a single-record write."""
        pos = self._n
        if pos + 1 > self._cap:
            end = pos + 1
            self._alloc(max(end + end // 8 + 1024, self._cap * 2))
        self.vecs[pos] = row.vector
        self.rid[pos] = row.rid
        self._max_rid = max(self._max_rid, int(self.rid[pos]))
        type_code = TYPE_CODES[row.record_type]
        self.type[pos] = type_code
        self._types_present.add(type_code)
        codes = (
            self._code("user", row.user_id),
            self._code("agent", row.agent_id),
            self._code("thread", row.thread_id),
        )
        self.scope[pos] = codes
        self.valid[pos] = row.valid
        if not self.valid[pos]:
            self._invalid += 1
        self.expires[pos] = np.inf if row.expires_at is None else row.expires_at
        if math.isfinite(self.expires[pos]):
            self._expiring += 1
        self.alive[pos] = True
        for col, code in enumerate(codes):
            self._note_row(col, code, pos)
        self._filter_masks.clear()
        self._n = pos + 1

    def _note_appended(self, start: int, end: int) -> None:
        """Keep the per-scope caches right for rows [start, end) just appended: a few rows
        extend the cached posting lists they belong to (and drop those scopes' contiguous
        copies); a bulk append clears the caches."""
        if end - start > 64:
            self._clear_scope_caches()
            return
        for col in range(len(DIMENSIONS)):
            for pos, code in enumerate(self.scope[start:end, col].tolist(), start):
                self._note_row(col, code, pos)

    def _note_row(self, col: int, code: int, pos: int) -> None:
        """Row ``pos`` (scope value ``code`` in column ``col``) was appended: extend that
        scope's cached posting list and drop its contiguous copy."""
        key = (col, code)
        posting = self._posting_cache.get(key)
        if posting is not None:
            self._posting_cache[key] = np.append(posting, np.int64(pos))
        block = self._blocks.pop(key, None)
        if block is not None:
            self._block_bytes -= block.nbytes

    def filter_mask(
        self, key: Hashable, allowed_rids: Callable[[], NDArray[np.int64]]
    ) -> NDArray[np.bool_]:
        """Rows whose record passes a metadata filter, cached per filter until the next write.

        Evaluating a JSON filter in SQL costs about a microsecond per record; applications
        repeat the same few filters, so the answer is kept as a boolean column.
        """
        mask = self._filter_masks.get(key)
        if mask is None:
            mask = np.isin(self.rid[: self._n], allowed_rids())
            self._filter_masks[key] = mask
            while len(self._filter_masks) > FILTER_CACHE_SIZE:
                self._filter_masks.popitem(last=False)
        else:
            self._filter_masks.move_to_end(key)
        return mask

    def _positions(self, rids: NDArray[np.int64]) -> NDArray[np.int64]:
        """Rows (alive or not) of the sorted, distinct ``rids``: a binary search over the
        rows sorted by rid, plus a scan of the few rows appended since that sort."""
        n = self._n
        if self._by_rid is None or n - self._by_rid[0] > RID_TAIL_MAX:
            order = np.argsort(self.rid[:n], kind="stable").astype(np.int64)
            self._by_rid = (n, self.rid[:n][order], order)
        covered, keys, order = self._by_rid
        lo = np.searchsorted(keys, rids, "left").tolist()
        hi = np.searchsorted(keys, rids, "right").tolist()
        parts = [order[a:b] for a, b in zip(lo, hi, strict=True) if b > a]
        if n > covered:
            parts.append(np.flatnonzero(np.isin(self.rid[covered:n], rids)) + covered)
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def remove(self, rids: Iterable[int]) -> None:
        self.remove_array(np.unique(np.fromiter(rids, dtype=np.int64)))

    def remove_array(self, rids: NDArray[np.int64]) -> None:
        """Drop every row of ``rids`` (sorted, distinct) in time proportional to their number
        (plus the rows appended since the last sort): what catching up on another process's
        writes costs, whatever the index's size."""
        rids = rids[rids <= self._max_rid]  # rows never added cannot be in the index
        if rids.size == 0 or self._n == 0:
            return
        self._filter_masks.clear()
        pos = self._positions(rids)
        hit = pos[self.alive[pos]]
        if hit.size:
            self.alive[hit] = False
            self._dead += int(hit.size)
        if self._dead > max(4096, self._n // 4):
            self._compact()

    def cluster(self) -> None:
        """Drop deleted rows and store each user's rows contiguously.

        A user-scoped search then reads one dense slice of the matrix (a view, no copy);
        rows added later are appended and read through their posting list.
        """
        if self._clustered == self._n and not self._dead:
            return  # nothing added or deleted since the last time
        self._compact(order_by_user=True)
        self._clustered = self._n

    def _compact(self, order_by_user: bool = False) -> None:
        self._filter_masks.clear()
        keep = np.flatnonzero(self.alive[: self._n])
        if order_by_user:
            keep = keep[np.argsort(self.scope[keep, 0], kind="stable")]
        for name in _COLUMNS:
            arr = getattr(self, name)
            if not arr.flags.writeable:  # a memory-mapped snapshot: copy before editing
                arr = np.array(arr)
                setattr(self, name, arr)
            if order_by_user:  # a permutation: gather into a fresh buffer, then copy back
                arr[: keep.size] = np.array(arr[keep])
            else:
                arr[: keep.size] = arr[keep]
        self._n = int(keep.size)
        self._dead = 0
        self._invalid = int(np.count_nonzero(~self.valid[: self._n]))
        self._expiring = int(np.count_nonzero(np.isfinite(self.expires[: self._n])))
        self._by_rid = None
        self._clear_scope_caches()

    def _clear_scope_caches(self) -> None:
        self._posting_cache.clear()
        self._blocks.clear()
        self._block_bytes = 0

    def _scoped_product(
        self, col: int, code: int, pos: NDArray[np.int64], q: NDArray[np.float32]
    ) -> NDArray[np.float32]:
        """``vecs[pos] @ q`` without gathering when ``pos`` is a few contiguous runs (a
        clustered user plus rows appended since), over views of its long runs plus a gather
        of the rest when most rows lie in long runs (a clustered user with scattered rows
        caught up since), else over a cached contiguous copy."""
        breaks = np.flatnonzero(np.diff(pos) != 1) + 1
        starts = [0, *breaks.tolist()]
        ends = [*breaks.tolist(), pos.size]
        if breaks.size < MAX_RUNS:
            out = np.empty(pos.size, dtype=np.float32)
            for start, end in zip(starts, ends, strict=True):
                first = int(pos[start])
                out[start:end] = self.vecs[first : first + (end - start)] @ q
            return out
        runs = [(a, b) for a, b in zip(starts, ends, strict=True) if b - a >= LONG_RUN]
        if len(runs) < MAX_RUNS and 2 * sum(b - a for a, b in runs) >= pos.size:
            out = np.empty(pos.size, dtype=np.float32)
            rest = np.ones(pos.size, dtype=np.bool_)
            for start, end in runs:
                first = int(pos[start])
                out[start:end] = self.vecs[first : first + (end - start)] @ q
                rest[start:end] = False
            out[rest] = self.vecs[pos[rest]] @ q
            return out
        result: NDArray[np.float32] = self._block(col, code, pos) @ q
        return result

    def _block(self, col: int, code: int, pos: NDArray[np.int64]) -> NDArray[np.float32]:
        """The vectors of one scope value as a contiguous copy, cached until the next write.

        A gather of scattered rows costs more than the product over them; keeping a user's
        rows contiguous makes a scoped search one product over a small dense block.
        """
        key = (col, code)
        block = self._blocks.get(key)
        if block is not None:
            self._blocks.move_to_end(key)
            return block
        block = np.ascontiguousarray(self.vecs[pos])
        if block.nbytes <= BLOCK_CACHE_BYTES:
            self._blocks[key] = block
            self._block_bytes += block.nbytes
            while self._block_bytes > BLOCK_CACHE_BYTES:
                _, old = self._blocks.popitem(last=False)
                self._block_bytes -= old.nbytes
        return block

    def _posting(self, col: int, code: int) -> NDArray[np.int64]:
        """Rows whose scope column ``col`` holds ``code``; cached until the next write."""
        key = (col, code)
        cached = self._posting_cache.get(key)
        if cached is None:
            cached = np.flatnonzero(self.scope[: self._n, col] == code).astype(np.int64)
            self._posting_cache[key] = cached
        return cached

    # ------------------------------------------------------------------ snapshots

    def save(self, directory: Path, stamp: str) -> None:
        """Write the index next to its database, tagged with the database state it reflects.

        A fresh process then maps the matrix instead of reading every vector from SQL, and
        catches up on later writes from the change log. Arrays go to files named by a fresh
        token and ``index.json`` (which names the token) is replaced atomically last, so a
        reader never pairs one save's description with another's arrays.
        """
        self.cluster()
        n = self._n
        directory.mkdir(parents=True, exist_ok=True)
        token = f"{os.getpid()}-{os.urandom(6).hex()}"
        for name in _COLUMNS:
            np.save(directory / f"{name}-{token}.npy", getattr(self, name)[:n], allow_pickle=False)
        info = {"stamp": stamp, "dim": self.dim, "n": n, "codes": self._codes, "token": token}
        try:
            previous = json.loads((directory / "index.json").read_text()).get("token")
        except (OSError, ValueError, AttributeError):
            previous = None
        tmp = directory / f"index.json.{token}"
        tmp.write_text(json.dumps(info))
        os.replace(tmp, directory / "index.json")
        # The save this one replaced goes (maps already open stay valid), with files of the
        # format before tokens.
        for name in _COLUMNS:
            (directory / f"{name}.npy").unlink(missing_ok=True)
            if previous and previous != token:
                (directory / f"{name}-{previous}.npy").unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path, dim: int) -> tuple[VectorIndex, str] | None:
        """The saved index and the state stamp it reflects, or None (absent or unreadable)."""
        try:
            info = json.loads((directory / "index.json").read_text())
            if info["dim"] != dim:
                return None
            token = info["token"]
            index = cls(dim)
            arrays = {
                # The big matrix is memory-mapped; it is copied only when the index grows.
                name: np.load(
                    directory / f"{name}-{token}.npy", mmap_mode="r" if name == "vecs" else None
                )
                for name in _COLUMNS
            }
        except (OSError, ValueError, KeyError, TypeError):
            return None
        n = int(info["n"])
        for name, arr in arrays.items():
            if arr.shape[0] != n:
                return None
            setattr(index, name, arr)
        index._n = index._cap = index._clustered = n
        index._codes = info["codes"]
        index._invalid = int(np.count_nonzero(~index.valid))
        index._expiring = int(np.count_nonzero(np.isfinite(index.expires)))
        index._types_present = set(np.unique(index.type).tolist())
        index._by_rid = None
        index._max_rid = int(index.rid.max()) if n else 0
        return index, str(info["stamp"])

    def _exact_codes(self, exact: Mapping[str, str | None]) -> dict[int, int] | None:
        """Scope column -> code to match; None when an id is unknown (nothing can match)."""
        out = {}
        for dim, value in exact.items():
            if value is None:
                out[DIMENSIONS.index(dim)] = -1
            else:
                code = self._codes[dim].get(value)
                if code is None:
                    return None
                out[DIMENSIONS.index(dim)] = code
        return out

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
        allowed: NDArray[np.bool_] | None = None,
    ) -> list[tuple[int, float]]:
        """Top-k (rid, distance) pairs, one per record (its best chunk), distance ascending."""
        n = self._n
        if n == 0:
            return []
        codes = self._exact_codes(exact)
        if codes is None:
            return []
        q = query.astype(np.float32, copy=False)
        q = q / float(np.linalg.norm(q))
        types = [TYPE_CODES[t] for t in record_types]

        # Candidate rows: the shortest posting list of an exact scope, else every row.
        pos: NDArray[np.int64] | None = None
        if codes:
            # Users are the most selective scope in practice, then agents, then threads.
            col = min(codes)
            pos = self._posting(col, codes[col])
            if pos.size == 0:
                return []

        def view(arr: NDArray[Any]) -> NDArray[Any]:
            return arr[:n] if pos is None else arr[pos]

        mask: NDArray[np.bool_] | None = None

        def narrow(cond: NDArray[np.bool_]) -> None:
            nonlocal mask
            mask = cond if mask is None else mask & cond

        if self._dead:
            narrow(view(self.alive))
        if self._expiring:
            narrow(view(self.expires) > now)
        if not self._types_present.issubset(types):
            narrow(np.isin(view(self.type), types))
        if valid_only and self._invalid:
            narrow(view(self.valid))
        scope_view = view(self.scope)
        for col, code in codes.items():
            if pos is None or col != min(codes):
                narrow(scope_view[:, col] == code)
        if allowed is not None:
            narrow(view(allowed))

        if pos is None:
            # Whole-matrix scan: one product over contiguous memory (the bandwidth floor);
            # filtered-out rows get an infinite distance instead of a costly gather.
            dist = 1.0 - (self.vecs[:n] @ q)
            if mask is not None:
                dist[~mask] = np.inf
            rids = self.rid[:n]
            scope_rows = self.scope[:n]
        else:
            col = min(codes)
            dist = 1.0 - self._scoped_product(col, codes[col], pos, q)
            if mask is not None:
                dist[~mask] = np.inf
            rids = self.rid[pos]
            scope_rows = self.scope[pos]
        for dim, value in prefer.items():
            col = DIMENSIONS.index(dim)
            code = -1 if value is None else self._codes[dim].get(value, -2)
            dist = dist + PREFERENCE_PENALTY * (scope_rows[:, col] != code)
        return _top_unique(dist, rids, k)


def _top_unique(
    dist: NDArray[np.floating[Any]], rids: NDArray[np.int64], k: int
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
        for i in idx.tolist():
            if dist[i] == np.inf:
                return list(out.items())  # sorted: only filtered-out rows remain
            rid = int(rids[i])
            if rid not in out:
                out[rid] = float(dist[i])
                if len(out) == k:
                    break
        if len(out) >= k or m >= total:
            return list(out.items())
        m = min(total, m * 4)

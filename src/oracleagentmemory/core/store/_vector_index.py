"""The in-memory exact vector index of one store: one contiguous float32 matrix.

Rows are retrieval chunks, L2-normalised so cosine distance is ``1 - dot``. Scope, type,
status and expiry live in parallel numpy columns, and each scope value keeps a posting list of
its rows, so a user-scoped search touches only that user's rows: a gather plus one small
matrix-vector product. An unscoped search with nothing to filter is one product over the whole
matrix, the memory-bandwidth floor. No per-record Python work happens on the search path. The
index is rebuilt from the database on open (or after another process wrote) and kept in step
by the store after each of its own commits.

Beside the matrix, when ``hnswlib`` is installed (extra ``ann``), a large index keeps an HNSW
graph (:mod:`._ann_index`) over the same rows, keyed by stable row labels. A search whose
candidate set (its exact scope, or every row) holds at least ``ANN_MIN_ROWS`` rows asks the
graph for more neighbours than it needs, filters them exactly (scope, type, status, expiry,
metadata) and adds the rows not yet in the graph (the tail) by exact scan; when too few
survive, or a row outside the fetched set could still rank, it fetches more and finally falls
back to the exact scan. No result outside the scope is ever returned.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store._ann_index import AnnGraph, AnnJob, AnnLoader, available
from oracleagentmemory.core.store._planning import FAMILY

log = logging.getLogger("oracleagentmemory")

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
POSTING_TAIL_MAX = 4096
"""Rows a cached posting list may gather unread before it is dropped instead."""
BLOCK_CACHE_BYTES = 512 * 2**20
"""Memory the contiguous per-scope copies of vectors may use (least recently used go first)."""
ANN_MIN_ROWS = 10_000
"""Candidate sets at least this large are searched through the HNSW graph (when present);
smaller ones by the exact scan, so small scopes keep recall 1.0. Measured on 2 cores
(``python -m bench.ann_threshold``): the exact scan costs about 0.08 ms per 1,000 rows, the
graph path 0.2-0.45 ms from 2k to 50k rows; at 10k the graph is 2.5x faster (0.29 against
0.76 ms, recall@10 0.995). The first search with a candidate set this large starts building
the graph (but see ``ANN_MIN_SHARE``)."""
ANN_MIN_SHARE = 0.2
"""A scope's candidate set uses the graph only when it also holds at least this share of the
live rows, or ``ANN_SCOPE_ROWS`` rows: the graph covers every row, so its build, memory and
per-write insertion scale with the store, while for one user holding 10% of a 100k store it
saves 0.1 ms a search (1.56 against 1.45 ms, after an 18 s build), against 2.4 ms at 20% (3.48
against 1.06 ms; ``python -m bench.ann_share``, bench/results/ann-share.md)."""
ANN_SCOPE_ROWS = 50_000
"""A candidate set this large uses the graph whatever its share (its exact scan costs 5 ms or
more)."""
ANN_FETCH = 40
"""Neighbours asked of the graph for k=10 in an unfiltered search (4k, at least 40)."""
ANN_FETCH_MAX = 1024
"""A search that needs more neighbours than this from the graph scans exactly instead (a
selective filter: its candidate set is a small share of the graph)."""
ANN_TAIL_MAX = 20_000
"""The graph is used only while at most this many rows are missing from it (read exactly)."""
ANN_PREFER_EXACT_MAX = 4096
"""A preferred scope value with at most this many rows is scored exactly beside the graph."""
ANN_INLINE_MAX = 64
"""Appends of at most this many rows go into the graph at once; larger ones in the background."""
ANN_ABSORB_MIN = 256
"""Rows missing from the graph before a background job inserts them."""
ANN_DRIFT = 0.3
"""Share of deleted labels in the graph above which it is rebuilt in the background."""
_COLUMNS = ("vecs", "rid", "type", "scope", "valid", "expires", "alive", "label")


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
        self._posting_tail: dict[tuple[int, int], list[int]] = {}
        """Rows appended to a cached posting list since it was last read (joined on read:
        appending to an array copies it, and one scope may hold every row)."""
        self._blocks: OrderedDict[tuple[int, int], NDArray[np.float32]] = OrderedDict()
        self._block_bytes = 0
        self._by_rid: tuple[int, NDArray[np.int64], NDArray[np.int64]] | None = None
        """(rows covered, their rids sorted, their positions): finds a record's rows."""
        self._types_present: set[int] = set()
        self._clustered = -1
        self._filter_masks: OrderedDict[Hashable, NDArray[np.bool_]] = OrderedDict()
        self._max_rid = 0
        self._next_label = 0
        self._rows_lock = threading.Lock()
        """Held while rows are written or reordered (a background graph job reads them)."""
        self._ann: AnnGraph | None = None
        self._ann_job: AnnJob | None = None
        self._ann_loader: AnnLoader | None = None
        self._ann_saved: tuple[Path, Path, int] | None = None
        """A graph saved beside the snapshot this index was loaded from, not read yet."""
        self._ann_broken = False
        self.ann_unsaved = False
        """Whether the graph changed since it was loaded or saved."""
        self._in_graph: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        """By label: whether the row is in the graph."""
        self._row_of_label: NDArray[np.int64] | None = None
        self._tail: NDArray[np.int64] | None = None
        """Positions of rows not in the graph (None: recompute)."""
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
            "label": ((cap,), np.int64),
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
        self.label: NDArray[np.int64]
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
        with self._rows_lock:  # a background graph job reads the rows
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
            labels = np.arange(self._next_label, self._next_label + count, dtype=np.int64)
            self.label[start:end] = labels
            self._next_label += count
            if self._row_of_label is not None:
                grown = np.full(self._next_label, -1, dtype=np.int64)
                grown[: self._row_of_label.size] = self._row_of_label
                grown[labels] = np.arange(start, end, dtype=np.int64)
                self._row_of_label = grown
            self._note_appended(start, end)
            self._filter_masks.clear()
            self._n = end
        self._ann_appended(start, end)

    def _note_appended(self, start: int, end: int) -> None:
        """Keep the per-scope caches right for rows [start, end) just appended: a few rows
        extend the cached posting lists they belong to (and drop those scopes' contiguous
        copies); a bulk append clears the caches."""
        if end - start > 64:
            self._clear_scope_caches()
            return
        for col in range(len(DIMENSIONS)):
            for pos, code in enumerate(self.scope[start:end, col].tolist(), start):
                key = (col, code)
                if key in self._posting_cache:
                    tail = self._posting_tail.setdefault(key, [])
                    tail.append(pos)
                    if len(tail) > POSTING_TAIL_MAX:  # not read for long: recompute if asked
                        del self._posting_cache[key], self._posting_tail[key]
                block = self._blocks.pop(key, None)
                if block is not None:
                    self._block_bytes -= block.nbytes

    def cached_filter_mask(self, key: Hashable) -> NDArray[np.bool_] | None:
        """The mask :meth:`filter_mask` keeps for ``key``, if it does."""
        mask = self._filter_masks.get(key)
        if mask is not None:
            self._filter_masks.move_to_end(key)
        return mask

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
            if self._ann is not None:
                labels = self.label[hit]
                self._ann.delete(labels[self._graph_has(labels)])
                self.ann_unsaved = True
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
        with self._rows_lock:
            self._compact_rows(order_by_user)

    def _compact_rows(self, order_by_user: bool) -> None:
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
        self._row_of_label = None
        self._tail = None
        self._clear_scope_caches()

    def _clear_scope_caches(self) -> None:
        self._posting_cache.clear()
        self._posting_tail.clear()
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
        else:
            tail = self._posting_tail.pop(key, None)
            if tail:
                cached = np.concatenate([cached, np.asarray(tail, dtype=np.int64)])
                self._posting_cache[key] = cached
        return cached

    # ------------------------------------------------------------------ approximate index

    def _graph_has(self, labels: NDArray[np.int64]) -> NDArray[np.bool_]:
        inside = np.zeros(labels.size, dtype=np.bool_)
        known = labels < self._in_graph.size
        inside[known] = self._in_graph[labels[known]]
        return inside

    def _mark_in_graph(self, labels: NDArray[np.int64]) -> None:
        if self._in_graph.size < self._next_label:
            grown = np.zeros(self._next_label + self._next_label // 4, dtype=np.bool_)
            grown[: self._in_graph.size] = self._in_graph
            self._in_graph = grown
        self._in_graph[labels] = True

    def _rows_of(self, labels: NDArray[np.int64]) -> NDArray[np.int64]:
        """Current positions of ``labels`` (-1 where the row is gone)."""
        table = self._row_of_label
        if table is None:
            n = self._n
            table = np.full(self._next_label, -1, dtype=np.int64)
            table[self.label[:n]] = np.arange(n, dtype=np.int64)
            self._row_of_label = table
        out: NDArray[np.int64] = table[labels]
        return out

    def _alive_at(self, rows: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Which of ``rows`` (positions from :meth:`_rows_of`, -1 for gone) hold a live row."""
        alive = rows >= 0
        alive[alive] = self.alive[rows[alive]]
        return alive

    def _gather(self, labels: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """(A background job's read.) The labels still alive, with a copy of their vectors."""
        with self._rows_lock:
            rows = self._rows_of(labels)
            keep = self._alive_at(rows)
            return labels[keep], np.array(self.vecs[rows[keep]], dtype=np.float32)

    def _tail_positions(self) -> NDArray[np.int64]:
        """Alive rows not in the graph (cached; appends extend it, compaction resets it)."""
        tail = self._tail
        if tail is None:
            n = self._n
            tail = np.flatnonzero(self.alive[:n] & ~self._graph_has(self.label[:n]))
            self._tail = tail = tail.astype(np.int64)
        return tail

    def _ann_appended(self, start: int, end: int) -> None:
        graph = self._ann
        if graph is None:
            return
        job = self._ann_job
        if end - start <= ANN_INLINE_MAX and (job is None or job.rebuild) and available():
            labels = self.label[start:end]
            graph.reserve(labels.size)
            graph.add(np.ascontiguousarray(self.vecs[start:end]), labels, 1)
            self._mark_in_graph(labels)
            self.ann_unsaved = True
        elif self._tail is not None:
            self._tail = np.concatenate([self._tail, np.arange(start, end, dtype=np.int64)])

    def _ann_take(self, job: AnnJob) -> None:
        """Record the rows a job inserted into the live graph (deleting those removed since)."""
        for labels in job.take_done():
            if not labels.size:
                continue
            self._mark_in_graph(labels)
            self.ann_unsaved = True
            gone = ~self._alive_at(self._rows_of(labels))
            if gone.any():
                job.graph.delete(labels[gone])
        if self._tail is not None and self._tail.size:
            self._tail = self._tail[~self._graph_has(self.label[self._tail])]

    def _ann_finish(self, job: AnnJob) -> None:
        """Install a finished rebuild (or drop a failed job)."""
        self._ann_job = None
        if job.error is not None:
            log.warning("approximate vector index disabled: %s", job.error)
            self._ann_broken = True
            self._ann = None
            self._in_graph = np.zeros(0, dtype=np.bool_)
            self._tail = None
            return
        if job.rebuild:
            self._ann = job.graph
            self._in_graph = np.zeros(0, dtype=np.bool_)
            self._tail = None
        self._ann_take(job)
        self._tail = None

    def ann_maintain(self, *, wait: bool = False) -> None:
        """Collect background work and start what is due: the first build once the index is
        large enough, insertion of rows missing from the graph, a rebuild when deletions
        dominate. ``wait``: block until the graph holds every row (tests, benchmarks)."""
        if wait:
            self.ann_load_saved()
        while True:
            loader = self._ann_loader
            if loader is not None:
                if not (wait or loader.finished):
                    return
                self._ann_install_loaded(loader)
            job = self._ann_job
            if job is not None:
                if wait:
                    job.join()
                if job.finished:
                    self._ann_finish(job)
                elif not job.rebuild:
                    self._ann_take(job)
                if self._ann_job is not None:
                    return
            if (
                self._ann_broken
                or self._ann_saved is not None
                or not available()
                or len(self) < ANN_MIN_ROWS
            ):
                return
            graph = self._ann
            n = self._n
            if graph is None or graph.deleted > ANN_DRIFT * max(graph.size, 1):
                labels = self.label[:n][self.alive[:n]].copy()
                fresh = AnnGraph(self.dim, labels.size + labels.size // 8)
                self._ann_job = AnnJob(fresh, labels, self._gather, rebuild=True)
            else:
                tail = self._tail_positions()
                if tail.size < (1 if wait else ANN_ABSORB_MIN):
                    return
                labels = self.label[tail].copy()
                graph.reserve(labels.size)
                self._ann_job = AnnJob(graph, labels, self._gather, rebuild=False)
            if not wait:
                return

    def _ann_install_loaded(self, loader: AnnLoader) -> None:
        loader.join()
        self._ann_loader = None
        if loader.graph is None:
            return
        loaded = self._ann = loader.graph
        self._in_graph = np.zeros(0, dtype=np.bool_)
        labels = loader.labels[loader.labels < self._next_label]
        self._mark_in_graph(labels)
        self._tail = None
        # Rows deleted since the save (caught up from the change log) leave.
        gone = ~self._alive_at(self._rows_of(labels))
        if gone.any():
            loaded.delete(labels[gone])
            self.ann_unsaved = True

    def ann_load_saved(self) -> None:
        """Start reading the graph saved beside the snapshot, if any (in the background)."""
        saved = self._ann_saved
        if saved is not None:
            self._ann_saved = None
            if available():
                self._ann_loader = AnnLoader(saved[0], saved[1], self.dim, saved[2])

    def ann_close(self) -> None:
        """Stop background work (at most one chunk's wait) and record what it did."""
        job = self._ann_job
        if job is not None:
            job.stop()
            self._ann_job = None
            if not job.rebuild and job.error is None:
                self._ann_take(job)
        loader = self._ann_loader
        if loader is not None:
            loader.join()
            self._ann_loader = None

    @property
    def ann_rows(self) -> int:
        """Rows the graph serves (0: no graph)."""
        return 0 if self._ann is None else self._ann.live

    def _passes(
        self,
        cand: NDArray[np.int64],
        codes: Mapping[int, int],
        types: Sequence[int],
        valid_only: bool,
        now: float,
        allowed: NDArray[np.bool_] | None,
    ) -> NDArray[np.bool_]:
        """The exact filter, on a few candidate rows."""
        ok = self.alive[cand].copy()
        if self._expiring:
            ok &= self.expires[cand] > now
        if not self._types_present.issubset(types):
            ok &= np.isin(self.type[cand], types)
        if valid_only and self._invalid:
            ok &= self.valid[cand]
        for col, code in codes.items():
            ok &= self.scope[cand, col] == code
        if allowed is not None:
            ok &= allowed[cand]
        return ok

    def _graph_pays(self, candidates: int) -> bool:
        """Whether a search over this many candidate rows should go through the graph."""
        if candidates < ANN_MIN_ROWS:
            return False
        return candidates >= ANN_SCOPE_ROWS or candidates >= ANN_MIN_SHARE * (self._n - self._dead)

    def _ann_search(
        self,
        q: NDArray[np.float32],
        k: int,
        codes: Mapping[int, int],
        candidates: int,
        types: Sequence[int],
        prefer: Mapping[str, str | None],
        valid_only: bool,
        now: float,
        allowed: NDArray[np.bool_] | None,
    ) -> list[tuple[int, float]] | None:
        """Top-k through the graph, or None when the exact scan should answer."""
        self.ann_maintain()
        graph = self._ann
        if graph is None or not self._graph_pays(candidates) or not available():
            return None
        tail = self._tail_positions()
        if tail.size > ANN_TAIL_MAX:
            return None
        share = candidates / max(1, self._n)
        if allowed is not None:
            share *= int(np.count_nonzero(allowed)) / max(1, allowed.size)
        fetch = math.ceil(max(4 * k, ANN_FETCH) / max(share, 1e-9))
        live = graph.live
        penalties = [
            (DIMENSIONS.index(dim), -1 if value is None else self._codes[dim].get(value, -2))
            for dim, value in prefer.items()
        ]
        # Rows in a small preferred scope (a thread) are scored exactly: a row that neither
        # the graph nor these returned then misses every such preference, and its penalty
        # widens the margin by which the graph's answer is final.
        covered = 0
        preferred: list[NDArray[np.int64]] = []
        for col, code in penalties:
            rows = self._posting(col, code) if code != -2 else np.empty(0, dtype=np.int64)
            if rows.size <= ANN_PREFER_EXACT_MAX:
                preferred.append(rows)
                covered += 1
        margin = PREFERENCE_PENALTY * covered
        while True:
            want = min(fetch, live)
            if want > ANN_FETCH_MAX:
                return None
            if want > 0:
                try:
                    labels, gdist = graph.search(q, want, min(1.0, share))
                except RuntimeError:  # hnswlib could not find that many: scan instead
                    return None
            else:
                labels, gdist = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
            gpos = self._rows_of(labels[labels < self._next_label])
            cand = np.concatenate([gpos[gpos >= 0], tail, *preferred])
            cand = cand[self._passes(cand, codes, types, valid_only, now, allowed)]
            dist = 1.0 - (self.vecs[cand] @ q)
            for col, code in penalties:
                dist = dist + PREFERENCE_PENALTY * (self.scope[cand, col] != code)
            hits = _top_unique(dist, self.rid[cand], k)
            if want >= live:
                return hits
            # A row the graph did not return lies at least as far as the farthest it did
            # (approximately), so hits nearer than that (plus the penalty such a row pays)
            # cannot be displaced.
            if len(hits) >= k and gdist.size and hits[-1][1] <= float(gdist[-1]) + margin:
                return hits
            fetch = want * 4

    # ------------------------------------------------------------------ snapshots

    def save(self, directory: Path, stamp: str) -> None:
        """Write the index next to its database, tagged with the database state it reflects.

        A fresh process then maps the matrix instead of reading every vector from SQL, and
        catches up on later writes from the change log. Arrays go to files named by a fresh
        token and ``index.json`` (which names the token) is replaced atomically last, so a
        reader never pairs one save's description with another's arrays.
        """
        # A saved graph not read yet is read now (this save replaces its file); hnswlib saves
        # only a graph no thread is inserting into.
        self.ann_load_saved()
        if self._ann_loader is not None:
            self._ann_install_loaded(self._ann_loader)
        self.ann_close()
        self.cluster()
        n = self._n
        directory.mkdir(parents=True, exist_ok=True)
        token = f"{os.getpid()}-{os.urandom(6).hex()}"
        for name in _COLUMNS:
            np.save(directory / f"{name}-{token}.npy", getattr(self, name)[:n], allow_pickle=False)
        info: dict[str, Any] = {
            "stamp": stamp,
            "dim": self.dim,
            "n": n,
            "codes": self._codes,
            "token": token,
            "next_label": self._next_label,
        }
        graph = self._ann
        if graph is not None:
            in_graph = np.flatnonzero(self._in_graph).astype(np.int64)
            np.save(directory / f"ann_labels-{token}.npy", in_graph, allow_pickle=False)
            graph.save(directory / f"ann-{token}.bin")
            info["ann"] = {"deleted": graph.deleted}
        self.ann_unsaved = False
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
        if previous and previous != token:
            (directory / f"ann_labels-{previous}.npy").unlink(missing_ok=True)
            (directory / f"ann-{previous}.bin").unlink(missing_ok=True)

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
                if name != "label" or "next_label" in info
            }
        except (OSError, ValueError, KeyError, TypeError):
            return None
        n = int(info["n"])
        if "label" not in arrays:  # a snapshot saved before labels: number the rows afresh
            arrays["label"] = np.arange(n, dtype=np.int64)
        index._next_label = int(info.get("next_label", n))
        ann = info.get("ann")
        graph_file = directory / f"ann-{token}.bin"
        if isinstance(ann, dict) and graph_file.exists():
            index._ann_saved = (
                graph_file,
                directory / f"ann_labels-{token}.npy",
                int(ann.get("deleted", 0)),
            )
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
        candidates = self._n - self._dead if pos is None else int(pos.size)
        if self._ann is not None or self._ann_job is not None or self._ann_loader is not None:
            hits = self._ann_search(
                q, k, codes, candidates, types, prefer, valid_only, now, allowed
            )
            if hits is not None:
                return hits
        elif self._graph_pays(candidates):
            # The first search that would use a graph starts building it (in the background):
            # a store searched only in small scopes never pays for one.
            self.ann_maintain()

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
        hits = _top_unique(dist, rids, k)
        if self._ann_saved is not None:
            self.ann_load_saved()  # after the first answer: reading the graph holds the GIL
        return hits


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

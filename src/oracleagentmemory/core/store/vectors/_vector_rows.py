"""The rows of the in-process vector index (``_vector_index.VectorIndex``) and their caches.

One contiguous float32 matrix of L2-normalised retrieval chunks with parallel numpy columns
(rid, record type, scope codes, validity, expiry, liveness, graph label); appends (row by row
or column by column), removals by rid, compaction and clustering by user; per-scope posting
lists, contiguous per-scope copies of vectors and metadata-filter masks, all dropped or
extended at the next write; and the bookkeeping of which rows the HNSW graph
(:mod:`._ann_index`) holds: labels, the tail of rows not in it yet, the background jobs'
results and a graph loaded from a snapshot. Search and the graph policy are in
``_vector_index``, snapshots in ``_vector_snapshot``.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store.schema._planning import FAMILY
from oracleagentmemory.core.store.vectors._ann_index import AnnGraph, AnnJob, AnnLoader, available
from oracleagentmemory.core.store.vectors._thread_table import Scan

log = logging.getLogger("oracleagentmemory")

TYPE_CODES: dict[str, int] = {t: i for i, t in enumerate(FAMILY)}
DIMENSIONS = ("user", "agent", "thread")
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
ANN_INLINE_MAX = 64
"""Appends of at most this many rows go into the graph at once; larger ones in the background."""
COLUMNS = ("vecs", "rid", "type", "scope", "valid", "expires", "alive", "label", "seq")
"""The per-row arrays (what a snapshot saves)."""
NO_SEQ = -1
"""``seq`` of a row whose record has no thread position (not a message)."""
UNKNOWN_SEQ = -2
"""``seq`` of a row whose record's thread position was not read yet (a row written by this
store, or loaded from a snapshot saved before positions): read when a search needs it."""


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
    seq: int = UNKNOWN_SEQ


class IndexRows:
    """The index's rows, their per-scope caches and which of them the graph holds."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._n = 0
        self._dead = 0
        self._invalid = 0
        self._expiring = 0
        self._codes: dict[str, dict[str, int]] = {d: {} for d in DIMENSIONS}
        self._code_next: dict[str, int] = dict.fromkeys(DIMENSIONS, 0)
        """The next code of each dimension (a snapshot saves only the codes rows use)."""
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
        self._scan: Scan | None = None
        """The last scoped search's products, conditions and hits: a HYBRID search's thread
        neighbours reuse them (``scanned``, ``scan_rows``) instead of reading rows again."""
        self._thread_tables: OrderedDict[Hashable, tuple[NDArray[np.int64], Any]] = OrderedDict()
        """By (scope column, code, steps or "rids"): the posting list a table was built for,
        and the table (``ThreadTable``, or its rids sorted and their places; None: none)."""
        self._cap = 0
        self._alloc(1024)

    def holds_type(self, record_type: str) -> bool:
        """Whether a row of ``record_type`` was ever added (rows deleted since may count)."""
        return TYPE_CODES[record_type] in self._types_present

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
            "seq": ((cap,), np.int64),
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
        self.seq: NDArray[np.int64]
        """The record's ``seq_no`` in its thread (``NO_SEQ``, ``UNKNOWN_SEQ``)."""
        self._cap = cap

    def __len__(self) -> int:
        return self._n - self._dead

    def reserve(self, rows: int) -> bool:
        """Room for ``rows`` rows in all, made now while the index holds none (no copy;
        pages past the rows are only address space until written): appending them later
        never copies the matrix (PostgreSQL's user cache reserves what its pass at open
        will read, so no doubling copy runs under the cache's lock). False where the
        memory could not be had: the matrix then grows as rows come, as before."""
        with self._rows_lock:
            if self._n == 0 and rows > self._cap:
                try:
                    self._alloc(rows)
                except MemoryError:  # arrays made so far are larger than ``_cap``: harmless
                    return False
            return True

    def _code(self, dim: str, value: str | None) -> int:
        if value is None:
            return -1
        table = self._codes[dim]
        code = table.get(value)
        if code is None:
            code = table[value] = self._code_next[dim]
            self._code_next[dim] = code + 1
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
            seqs=[r.seq for r in rows],
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
        seqs: Sequence[int | None] | None = None,
    ) -> None:
        """Append rows given column by column (the bulk path: no object per row);
        ``unit``: the vectors are L2-normalised already; ``seqs``: the records' thread
        positions (None: none; not given: not known yet, ``UNKNOWN_SEQ``)."""
        count = len(rids)
        if count == 0:
            return
        with self._rows_lock:  # a background graph job reads the rows
            start = self._n
            end = start + count
            if end > self._cap:
                # Twice the rows: pages past the rows are only address space until written, so
                # the matrix is copied once per doubling of the store, not soon after a load
                # (the copy writes every row to fresh memory under the rows lock: 1.7 s at 113k
                # x 384 on this project's 2-core VM, where first-touched pages are slow).
                self._alloc(max(2 * end, 1024))
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
            if seqs is None:
                self.seq[start:end] = UNKNOWN_SEQ
            else:
                self.seq[start:end] = [NO_SEQ if v is None else v for v in seqs]
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
            self._scan = None  # the rows changed since
            self._n = end
        self._ann_appended(start, end)

    def _note_appended(self, start: int, end: int) -> None:
        """Keep the per-scope caches right for rows [start, end) just appended: a few rows
        extend the cached posting lists they belong to (and drop those scopes' contiguous
        copies); a bulk append drops the caches of the scopes it holds rows of (the others'
        rows did not move: a user read into PostgreSQL's user cache leaves the users cached
        before with their posting lists)."""
        if end - start > 64:
            for col in range(len(DIMENSIONS)):
                cached = [k for k in (*self._posting_cache, *self._blocks) if k[0] == col]
                if not cached:
                    continue
                present = set(np.unique(self.scope[start:end, col]).tolist())
                for key in cached:
                    if key[1] in present:
                        self._posting_cache.pop(key, None)
                        self._posting_tail.pop(key, None)
                        block = self._blocks.pop(key, None)
                        if block is not None:
                            self._block_bytes -= block.nbytes
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

    def exclusion_mask(self, rids: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Rows whose record is not among ``rids`` (sorted, distinct): an ``as_of`` search's
        mask (``schema/_validity``), one pass over the few rows excluded."""
        mask = np.ones(self._n, dtype=np.bool_)
        mask[self._positions(rids)] = False
        return mask

    def _positions(self, rids: NDArray[np.int64]) -> NDArray[np.int64]:
        """Rows (alive or not) of the sorted, distinct ``rids``: a binary search over the
        rows sorted by rid, plus a scan of the few rows appended since that sort."""
        n = self._n
        if self._by_rid is None or n - self._by_rid[0] > RID_TAIL_MAX:
            order = np.argsort(self.rid[:n], kind="stable").astype(np.int64)
            self._by_rid = (n, self.rid[:n][order], order)
        covered, keys, order = self._by_rid
        lo = np.searchsorted(keys, rids, "left")
        counts = np.searchsorted(keys, rids, "right") - lo
        total = int(counts.sum())
        if total == counts.size and bool((counts == 1).all()):  # one row a record (usual)
            found = order[lo]
        else:  # each record's run of rows: lo, lo + 1, ... lo + count - 1
            ends = np.cumsum(counts)
            found = order[np.repeat(lo - ends + counts, counts) + np.arange(total)]
        if n > covered:
            tail = np.flatnonzero(np.isin(self.rid[covered:n], rids)) + covered
            return np.concatenate([found, tail])
        return found

    def rids_of(self, dim: str, value: str) -> NDArray[np.int64]:
        """The rids (sorted, distinct) of the live rows whose scope ``dim`` is ``value``."""
        code = self._codes[dim].get(value)
        if code is None:
            return np.empty(0, dtype=np.int64)
        n = self._n
        hit = (self.scope[:n, DIMENSIONS.index(dim)] == code) & self.alive[:n]
        return np.unique(self.rid[:n][hit])

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
            self._scan = None  # the rows changed since
            self._thread_tables.clear()  # built over the rows alive then
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
        for name in COLUMNS:
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
        self._scan = None
        self._thread_tables.clear()
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

    def scanned(self, q: NDArray[np.float32], rows: NDArray[np.int64]) -> NDArray[np.float32]:
        """``vecs[rows] @ q``, taken from the last scoped search's products where that search
        was of the same unit query and covered every one of ``rows``."""
        scan = self._scan
        if scan is not None and rows.size:
            sq, spos, sprod = scan.query, scan.pos, scan.product
            if sq.shape == q.shape and np.array_equal(sq, q):
                at = np.minimum(np.searchsorted(spos, rows), spos.size - 1)
                if bool((spos[at] == rows).all()):
                    return sprod[at]
        vecs = self.vecs
        if type(vecs) is not np.ndarray:  # a memory-mapped snapshot: index the plain array
            vecs = vecs.view(np.ndarray)
        result: NDArray[np.float32] = vecs[rows] @ q
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

    def index_scopes(self, dim: str, values: Iterable[str]) -> None:
        """Cache the posting lists of scope ``dim``'s ``values`` (one pass over the rows), so
        that their first search does not scan every row for them (PostgreSQL's user cache
        calls it as a user is read in)."""
        col = DIMENSIONS.index(dim)
        known = (self._codes[dim].get(v) for v in values)
        codes = np.array(sorted({c for c in known if c is not None}), dtype=np.int32)
        if codes.size == 0:
            return
        column = self.scope[: self._n, col]
        rows = np.flatnonzero(np.isin(column, codes))
        rows = rows[np.argsort(column[rows], kind="stable")]  # by code, rows ascending
        keys = column[rows]
        lo = np.searchsorted(keys, codes, "left").tolist()
        hi = np.searchsorted(keys, codes, "right").tolist()
        for code, a, b in zip(codes.tolist(), lo, hi, strict=True):
            self._posting_cache[(col, code)] = rows[a:b].astype(np.int64)
            self._posting_tail.pop((col, code), None)

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

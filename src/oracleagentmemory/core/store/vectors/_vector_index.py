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

The class is built in three floors: ``_vector_rows.IndexRows`` (the rows, their caches, the
graph's bookkeeping), ``_vector_snapshot.IndexSnapshots`` (save and load) and, here,
``VectorIndex`` (search and the graph policy: when a graph is built, grown, rebuilt and used).
The tunables below stay in this module (tests and benchmarks set them here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store.vectors._ann_index import AnnGraph, AnnJob, available
from oracleagentmemory.core.store.vectors._thread_table import (
    THREAD_TABLES_MAX,
    Scan,
    ScanRows,
    ThreadTable,
    build_table,
)
from oracleagentmemory.core.store.vectors._vector_rows import (
    ANN_INLINE_MAX as ANN_INLINE_MAX,
    BLOCK_CACHE_BYTES as BLOCK_CACHE_BYTES,
    DIMENSIONS,
    FILTER_CACHE_SIZE as FILTER_CACHE_SIZE,
    LONG_RUN as LONG_RUN,
    MAX_RUNS as MAX_RUNS,
    NO_SEQ,
    POSTING_TAIL_MAX as POSTING_TAIL_MAX,
    RID_TAIL_MAX as RID_TAIL_MAX,
    TYPE_CODES,
    UNKNOWN_SEQ,
    IndexRow as IndexRow,
)
from oracleagentmemory.core.store.vectors._vector_snapshot import IndexSnapshots

THREAD_COL = DIMENSIONS.index("thread")
PREFERENCE_PENALTY = 0.05
"""Added to the cosine distance once per preferred (non-exact) scope dimension a row misses."""
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
ANN_ABSORB_MIN = 256
"""Rows missing from the graph before a background job inserts them."""
ANN_DRIFT = 0.3
"""Share of deleted labels in the graph above which it is rebuilt in the background."""


class VectorIndex(IndexSnapshots):
    """Exact cosine top-k over a growable matrix with vectorised filters."""

    graph_allowed = True
    """False: never build the approximate graph (every search ranks exactly)."""

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
                or not self.graph_allowed
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
        self._scan = None
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
            product = self._scoped_product(col, codes[col], pos, q)
            dist = 1.0 - product
            if mask is not None:
                dist[~mask] = np.inf
            rids = self.rid[pos]
            scope_rows = self.scope[pos]
        for dim, value in prefer.items():
            col = DIMENSIONS.index(dim)
            code = -1 if value is None else self._codes[dim].get(value, -2)
            dist = dist + PREFERENCE_PENALTY * (scope_rows[:, col] != code)
        hits, at = _top_unique_at(dist, rids, k)
        if pos is not None:
            conditions = (tuple(types), tuple(exact.items()), tuple(prefer.items()), valid_only)
            scope_key = (min(codes), codes[min(codes)])
            at_rows = np.asarray(at, dtype=np.int64)
            self._scan = Scan(
                source=query,
                query=q,
                conditions=conditions,
                unmasked=allowed is None,
                scope_key=scope_key,
                pos=pos,
                rids=rids,
                product=product,
                passes=mask,
                hits=hits,
                hit_rid=rids[at_rows],
                hit_dist=dist[at_rows].astype(np.float64),
                hit_at=at_rows,
            )
        if self._ann_saved is not None:
            self.ann_load_saved()  # after the first answer: reading the graph holds the GIL
        return hits

    def thread_neighbours(
        self,
        query: NDArray[np.float32],
        rids: Sequence[int],
        before: int,
        after: int,
        *,
        record_types: Iterable[str],
        exact: Mapping[str, str | None],
        prefer: Mapping[str, str | None],
        valid_only: bool,
        now: float,
        seq_of: Callable[[list[int]], Mapping[int, int | None]],
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
        """The message rows from ``before`` positions before to ``after`` after the thread
        position of one of ``rids``, each row once, that a search of these conditions could
        return (as :meth:`search` filters): their position ``(thread code << 40) + seq``,
        rid, and similarity ``dot - preference penalties`` (the penalties summed as SQL
        sums them, in double). ``seq_of`` reads the thread positions of the records given
        (rows added without theirs: they are kept for later searches)."""
        empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64))
        codes = self._exact_codes(exact)
        if self._n == 0 or codes is None or not rids:
            return empty
        hit = self._positions(np.unique(np.asarray(rids, dtype=np.int64)))
        hit = hit[self.alive[hit]]
        col = THREAD_COL
        hit_thread = self.scope[hit, col]
        threads = np.unique(hit_thread[hit_thread >= 0]).tolist()
        if not threads:
            return empty
        parts = [self._posting(col, c) for c in threads]
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        seq = self.seq
        unknown = rows[seq[rows] == UNKNOWN_SEQ]
        if unknown.size:
            found = seq_of(np.unique(self.rid[unknown]).tolist())
            seq[unknown] = [
                NO_SEQ if (v := found.get(r)) is None else v for r in self.rid[unknown].tolist()
            ]
        # A position is (thread code << 40) + seq: the windows around the hits, and the rows'.
        hit_seq = seq[hit]
        placed = (hit_thread >= 0) & (hit_seq >= 0)
        keys = (hit_thread[placed].astype(np.int64) << 40) + hit_seq[placed]
        if keys.size == 0:
            return empty
        windows = np.unique((keys[:, None] + np.arange(-before, after + 1)).ravel())
        row_seq = seq[rows]
        row_keys = (self.scope[rows, col].astype(np.int64) << 40) + row_seq
        at = np.minimum(np.searchsorted(windows, row_keys), windows.size - 1)
        inside = (windows[at] == row_keys) & (row_seq >= 0)
        inside &= self.type[rows] == TYPE_CODES["message"]
        rows = rows[inside]
        types = [TYPE_CODES[t] for t in record_types]
        kept = self._passes(rows, codes, types, valid_only, now, None)
        rows = rows[kept]
        if rows.size == 0:
            return empty
        q = query.astype(np.float32, copy=False)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sims = self.scanned(q, rows).astype(np.float64)
        if prefer:
            penalty = np.zeros(rows.size, dtype=np.float64)
            for dim, value in prefer.items():
                dcol = DIMENSIONS.index(dim)
                code = -1 if value is None else self._codes[dim].get(value, -2)
                penalty += np.where(self.scope[rows, dcol] != code, PREFERENCE_PENALTY, 0.0)
            sims -= penalty  # as SQL sums them (0.0 + each, in double), then subtracted
        return row_keys[inside][kept], self.rid[rows], sims

    def scan_rows(
        self,
        query: NDArray[np.float32],
        hits: Sequence[tuple[int, float]],
        steps: int,
        *,
        record_types: Iterable[str],
        exact: Mapping[str, str | None],
        prefer: Mapping[str, str | None],
        valid_only: bool,
        seq_of: Callable[[list[int]], Mapping[int, int | None]],
    ) -> ScanRows | None:
        """The posting list of the search just made (of ``query``, these conditions, its
        ``hits`` in order), as the follow-ups read it: which rows they may read, the
        rows' similarities (its products, less the preference penalties) and each row's
        thread neighbours up to ``steps`` positions away (:class:`ThreadTable`, kept until
        the next write). None where the search was another, unscoped or masked, or where
        a record has several rows with one thread position: :meth:`thread_neighbours`
        reads them."""
        scan = self._scan
        if scan is None or not scan.unmasked:
            return None
        if hits is not scan.hits and list(hits) != scan.hits:
            return None
        types = tuple(TYPE_CODES[t] for t in record_types)
        if scan.conditions != (types, tuple(exact.items()), tuple(prefer.items()), valid_only):
            return None
        if query is not scan.source:
            q = query.astype(np.float32, copy=False)
            q = q / max(float(np.linalg.norm(q)), 1e-12)
            if scan.query.shape != q.shape or not np.array_equal(scan.query, q):
                return None
        table = self._thread_table(scan.scope_key, scan.pos, steps, seq_of)
        if table is None:
            return None
        readable = table.placed if scan.passes is None else table.placed & scan.passes
        value = scan.product.astype(np.float64)
        if prefer:
            penalty = np.zeros(value.size, dtype=np.float64)
            for dim, pref in prefer.items():
                dcol = DIMENSIONS.index(dim)
                code = -1 if pref is None else self._codes[dim].get(pref, -2)
                penalty += np.where(self.scope[scan.pos, dcol] != code, PREFERENCE_PENALTY, 0.0)
            value -= penalty  # as thread_neighbours subtracts them
        return ScanRows(
            rid=scan.rids,
            readable=readable,
            value=value,
            before=table.before,
            after=table.after,
            hit_at=scan.hit_at,
            hit_rid=scan.hit_rid,
            hit_sim=1.0 - scan.hit_dist,
        )

    def _thread_table(
        self,
        scope_key: tuple[int, int],
        pos: NDArray[np.int64],
        steps: int,
        seq_of: Callable[[list[int]], Mapping[int, int | None]],
    ) -> ThreadTable | None:
        """The thread table of the posting list ``pos`` (see :meth:`scan_rows`)."""
        key = (*scope_key, steps)
        held = self._thread_tables.get(key)
        if held is not None and held[0] is pos:
            self._thread_tables.move_to_end(key)
            kept: ThreadTable | None = held[1]
            return kept
        seq = self.seq
        unknown = pos[seq[pos] == UNKNOWN_SEQ]
        if unknown.size:  # rows this store wrote: their positions read once
            found = seq_of(np.unique(self.rid[unknown]).tolist())
            seq[unknown] = [
                NO_SEQ if (v := found.get(r)) is None else v for r in self.rid[unknown].tolist()
            ]
        row_seq = seq[pos]
        thread = self.scope[pos, THREAD_COL].astype(np.int64)
        has_place = (thread >= 0) & (row_seq >= 0) & self.alive[pos]
        message = self.type[pos] == TYPE_CODES["message"]
        table = None
        # A record other than a message with a thread position: row by row.
        if not bool((has_place & ~message).any()):
            table = build_table((thread << 40) + row_seq, has_place, steps)
        self._thread_tables[key] = (pos, table)
        while len(self._thread_tables) > THREAD_TABLES_MAX:
            self._thread_tables.popitem(last=False)
        return table

    def record_conditions(
        self,
        rids: Sequence[int] | NDArray[np.int64],
        *,
        record_types: Iterable[str],
        exact: Mapping[str, str | None],
        prefer: Mapping[str, str | None],
        valid_only: bool,
        now: float,
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64]] | None:
        """Whether a search of these conditions could return each of ``rids`` (as
        :meth:`search` filters), and each one's preference penalties (a column per
        ``prefer`` dimension, in order: 0.0 or ``PREFERENCE_PENALTY``); None when a record
        has no row here (no vector: only the database can tell)."""
        asked = np.asarray(rids, dtype=np.int64)
        types = [TYPE_CODES[t] for t in record_types]
        scanned = self._scanned_conditions(asked, types, exact, prefer, valid_only, now)
        if scanned is not None:
            return scanned
        wanted, inverse = np.unique(asked, return_inverse=True)
        rows = self._positions(wanted)
        rows = rows[self.alive[rows]]
        place = np.searchsorted(wanted, self.rid[rows])
        held = np.zeros(wanted.size, dtype=np.bool_)
        held[place] = True
        if not held.all():
            return None
        passes = np.zeros(wanted.size, dtype=np.bool_)
        codes = self._exact_codes(exact)
        if codes is not None:
            passes[place[self._passes(rows, codes, types, valid_only, now, None)]] = True
        penalties = np.zeros((wanted.size, len(prefer)), dtype=np.float64)
        for j, (dim, value) in enumerate(prefer.items()):
            col = DIMENSIONS.index(dim)
            code = -1 if value is None else self._codes[dim].get(value, -2)
            penalties[place, j] = np.where(self.scope[rows, col] != code, PREFERENCE_PENALTY, 0.0)
        return passes[inverse], penalties[inverse]

    def _scanned_conditions(
        self,
        asked: NDArray[np.int64],
        types: list[int],
        exact: Mapping[str, str | None],
        prefer: Mapping[str, str | None],
        valid_only: bool,
        now: float,
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64]] | None:
        """:meth:`record_conditions` read from the last scoped search of these conditions
        (no write since: a write drops it) where every one of ``asked`` has its one row, a
        live one, in that search's posting list; else None. Expiry is checked again at
        ``now``: that search may be an earlier one, of an earlier time."""
        scan = self._scan
        if scan is None or not scan.unmasked or not asked.size:
            return None
        if scan.conditions != (
            tuple(types),
            tuple(exact.items()),
            tuple(prefer.items()),
            valid_only,
        ):
            return None
        key = (*scan.scope_key, "rids")
        held = self._thread_tables.get(key)
        if held is None or held[0] is not scan.pos:
            # The live rows (a removal drops this), by rid.
            live = np.flatnonzero(self.alive[scan.pos])
            order = live[np.argsort(scan.rids[live], kind="stable")]
            sorted_rids = scan.rids[order]
            distinct = sorted_rids.size < 2 or bool((sorted_rids[1:] > sorted_rids[:-1]).all())
            # (A record of several live rows in the list: record_conditions reads them.)
            held = (scan.pos, _rid_places(sorted_rids, order) if distinct else None)
            self._thread_tables[key] = held
        else:
            self._thread_tables.move_to_end(key)
            while len(self._thread_tables) > THREAD_TABLES_MAX:
                self._thread_tables.popitem(last=False)
        found = held[1]
        if found is None or not found[0].size:
            return None
        sorted_rids, order, lo, place_of = found
        if place_of is not None:  # each rid's place looked up
            at = asked - lo
            if int(at.min()) < 0 or int(at.max()) >= place_of.size:
                return None
            place = place_of[at]
            if int(place.min()) < 0:
                return None
        else:
            at = np.minimum(np.searchsorted(sorted_rids, asked), sorted_rids.size - 1)
            if not bool((sorted_rids[at] == asked).all()):
                return None
            place = order[at]
        rows = scan.pos[place]
        if not bool(self.alive[rows].all()):
            return None
        passes = np.ones(asked.size, dtype=np.bool_) if scan.passes is None else scan.passes[place]
        if self._expiring:
            passes = passes & (self.expires[rows] > now)
        penalties = np.zeros((asked.size, len(prefer)), dtype=np.float64)
        for j, (dim, value) in enumerate(prefer.items()):
            col = DIMENSIONS.index(dim)
            code = -1 if value is None else self._codes[dim].get(value, -2)
            penalties[:, j] = np.where(self.scope[rows, col] != code, PREFERENCE_PENALTY, 0.0)
        return passes, penalties


RID_PLACES_SPAN = 16
"""A posting list whose record ids span at most this many times its rows, plus 65,536
(and at most ``RID_PLACES_MAX``), keeps each id's place in a table of 4-byte places (else
its ids are searched)."""
RID_PLACES_MAX = 1 << 22


def _rid_places(
    sorted_rids: NDArray[np.int64], order: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], int, NDArray[np.int32] | None]:
    """A posting list's live rows by rid (``sorted_rids``, distinct, and their places
    ``order``), with each rid's place in a table over the rids' span (-1: no row) where
    that span is small (a user's records are written close together)."""
    if not sorted_rids.size:
        return sorted_rids, order, 0, None
    lo = int(sorted_rids[0])
    span = int(sorted_rids[-1]) - lo + 1
    if span > min(RID_PLACES_SPAN * sorted_rids.size + 65_536, RID_PLACES_MAX):
        return sorted_rids, order, lo, None
    place_of = np.full(span, -1, dtype=np.int32)
    place_of[sorted_rids - lo] = order
    return sorted_rids, order, lo, place_of


def _top_unique(
    dist: NDArray[np.floating[Any]], rids: NDArray[np.int64], k: int
) -> list[tuple[int, float]]:
    """The k best distinct rids, widening the partial sort until enough are distinct."""
    return _top_unique_at(dist, rids, k)[0]


def _top_unique_at(
    dist: NDArray[np.floating[Any]], rids: NDArray[np.int64], k: int
) -> tuple[list[tuple[int, float]], list[int]]:
    """:func:`_top_unique`, and the place in ``dist`` of each hit's row."""
    total = dist.shape[0]
    m = min(total, max(4 * k, k + 16))
    while True:
        if m < total:
            idx = np.argpartition(dist, m - 1)[:m]
            idx = idx[np.argsort(dist[idx], kind="stable")]
        else:
            idx = np.argsort(dist, kind="stable")
        if idx.size >= k:
            # The k nearest rows finite and of k distinct records (the usual): they are the
            # answer, in order, as the loop below would take them.
            first = idx[:k]
            near = dist[first]
            if near[-1] < np.inf and np.unique(rids[first]).size == k:
                return (
                    list(zip(rids[first].tolist(), near.tolist(), strict=True)),
                    first.tolist(),
                )
        out: dict[int, float] = {}
        at: list[int] = []
        # One conversion to Python numbers, not a numpy scalar per row looked at.
        for i, d, rid in zip(idx.tolist(), dist[idx].tolist(), rids[idx].tolist(), strict=True):
            if d == math.inf:
                return list(out.items()), at  # sorted: only filtered-out rows remain
            if rid not in out:
                out[rid] = d
                at.append(i)
                if len(out) == k:
                    break
        if len(out) >= k or m >= total:
            return list(out.items()), at
        m = min(total, m * 4)

"""The vector branch of a search: in-process ranking with filter checks, or the engine's.

Engines with native vector search (pgvector) rank in SQL (:meth:`VectorBranch.sql_hits`),
but for the users a process caches (``_user_vectors``); otherwise, and for those, the
in-process index ranks (``_index_keeper``), with a metadata filter applied as
a cached mask, or checked on the best-ranked records alone (see :meth:`VectorBranch.branch`).
A hybrid search over a large index runs this branch's scan on a thread of its own, beside the
keyword query.
"""

from __future__ import annotations

import builtins
import contextvars
import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.records import Record
from oracleagentmemory.core.store._reads import to_record
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store.schema._validity import excluded_rids
from oracleagentmemory.core.store.search._search_sql import (
    RECORDS_WITH_RANKING_MAX,
    ScopeSpec,
    chunk_types_sql,
    more_to_read,
    preference_params,
    preference_penalties,
    same_as,
    scope_sql,
    search_conditions,
)
from oracleagentmemory.core.store.search._user_vectors import UserVectors, locked
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper
from oracleagentmemory.core.store.vectors._thread_table import ScanRows
from oracleagentmemory.core.store.vectors._vector_index import VectorIndex

PARALLEL_BRANCH_ROWS = 50_000
"""An in-process index at least this large runs a hybrid search's vector scan beside its
keyword query; below it the scan costs less than handing it to another thread."""
FILTER_CHECK_PER_RESULT = 16
"""A scoped vector search with a metadata filter whose mask is not cached first ranks this
many records per result asked (at least 128) and checks the filter on those alone; too few
passing, more are ranked, up to ``FILTER_CHECK_MAX``, before the filter's mask is made."""
FILTER_CHECK_MAX = 4096
FILTERED_FIRST_WIDER = 4
"""PostgreSQL: how much more of the approximate index an unscoped search with a metadata
filter reads in its first round (at 100k records, a filter keeping a quarter of the rows
took two rounds from 20 rows, 11.0 ms at p50, and one from 80, 7.3 ms)."""
NATIVE_ANN_FETCH_MAX = 640
"""PostgreSQL: an unscoped search through the approximate index that still lacks k records
at this many rows (its filter keeps too few: pgvector's HNSW filters after its search)
turns exact. Scoped searches are always exact."""
NATIVE_USER_FETCH_MAX = 4096
"""PostgreSQL: a user-scoped search ranks the user's chunks of the searched types in their
covering index, then checks the other conditions on the best of them; when even this many
leave fewer than k records, it ranks the conditions' rows instead."""

Hits = builtins.list[tuple[int, float]]
Loaded = dict[int, Record]
"""Records a ranking statement read with its hits, by rid (see ``VectorBranch.branch``)."""

_T = TypeVar("_T")


class VectorBranch:
    """Vector hits ``(rid, distance)`` for one search, best first."""

    def __init__(self, core: StoreCore, keeper: IndexKeeper) -> None:
        self._core = core
        self._keeper = keeper
        self.users = UserVectors(core, keeper)
        """PostgreSQL: the vectors of users searched often, in process (``_user_vectors``)."""
        self.pool: ThreadPoolExecutor | None = None
        """The branch thread (made on first use; made again in a forked child)."""
        self._pool_pid = 0
        self._idle = threading.BoundedSemaphore(1)
        """Held while a ranking in SQL runs on the branch thread (one at a time: a search
        that finds it taken ranks on its own thread); made again with the pool."""
        self._closed = False

    def close(self) -> None:
        self._closed = True  # a search under way ranks on its own thread from now on
        self.users.close()
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None

    def _filter_rids(
        self, types: builtins.list[str], scope: ScopeSpec, flt: dict[str, Any]
    ) -> NDArray[np.int64]:
        d = self._core.dialect
        conds, params = scope_sql(d, scope)
        fsql, fparams = d.compile_filter(flt, "r.metadata")
        marks = ",".join("?" * len(types))
        rows = d.execute(
            f"SELECT r.rid FROM {d.tables.records} r WHERE r.record_type IN ({marks})"
            f" AND {' AND '.join([*conds, fsql]) if conds else fsql}",
            [*types, *params, *fparams],
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def may_hold(self, record_type: str, scope: ScopeSpec) -> bool:
        """Whether a search of ``scope`` could rank records of ``record_type``: False only
        when the in-process index it ranks from has never held one (the SQLite store's index,
        or PostgreSQL's cache of the scope's user); True where SQL ranks."""
        if self._core.vector_dim is None:
            return False
        if self._core.dialect.native_vector_search:
            with self.users.lock:
                user = scope.exact.get("user") if scope.exact else None
                index = self.users.cached_index(user)
        else:
            index = self._keeper.index
        return index is None or index.holds_type(record_type)

    def branch(
        self,
        qvec: NDArray[np.float32],
        k: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
        *,
        parallel: bool = True,
        loaded: Loaded | None = None,
        check_later: bool = False,
    ) -> Callable[[], Hits]:
        """Vector hits, to collect later: with ``parallel`` and a large in-process index the
        scan runs on the store's branch thread meanwhile (a hybrid search's keyword query
        runs here; numpy and SQLite both release the GIL). The database is read here first
        (catch-up, filter mask), so that thread reads none; collecting runs here too. A
        ranking in SQL (PostgreSQL, a user not cached) runs there too, on a connection of its
        own, where :meth:`_beside` allows.

        An unscoped search's metadata filter is a mask over every row, evaluated in SQL and
        cached until the next write. A scoped search without that mask ranks its scope's
        best ``FILTER_CHECK_PER_RESULT * k`` records and checks the filter on those alone: a
        mask costs a JSON evaluation per record of the scope and a pass over the whole store
        (about 50 ms for one user's 10,000 records at 1M), and live applications write
        between searches, which drops it. Too few passing, more are ranked, as many as the
        share passing says are needed (at most ``FILTER_CHECK_MAX``); then the mask answers
        (and is kept).

        Given ``loaded``, an engine that ranks in SQL reads the records of the hits in the
        ranking statement and puts them there (one round trip instead of two).
        ``check_later``: see ``UserVectors.for_user`` (the caller then settles the check)."""
        if self._core.vector_dim is None:
            return lambda: []
        if self._core.dialect.native_vector_search:
            cached = None
            if scope.as_of is None:  # as_of: ranked in SQL, its conditions there
                # The cache's reads go to the primary (its watermark is the primary's).
                with self.users.lock, self._core.dialect.primary_reads():
                    user = scope.exact.get("user") if scope.exact else None
                    cached = self.users.for_user(user, check_later=check_later)
            if cached is None:
                job = partial(self.sql_hits, qvec, k, types, scope, flt, valid_only, loaded)
                if parallel and loaded is None:
                    collect = self._beside(job)
                    if collect is not None:
                        return collect
                hits = job()
                return lambda: hits
            index = cached
            ranks = locked(self.users.lock, index.search)
        else:
            index = self._keeper.ensure()
            ranks = index.search
        # as_of: the rows of records not true then masked out (``schema/_validity``).
        then = None
        if scope.as_of is not None:
            exact = scope_sql(self._core.dialect, scope)
            then = index.exclusion_mask(excluded_rids(self._core.dialect, scope.as_of, exact))
        search = partial(
            ranks,
            qvec,
            record_types=types,
            exact=scope.exact,
            prefer=scope.prefer,
            valid_only=valid_only,
            now=time.time(),
            allowed=then,
        )
        if flt is None:
            return self._run(partial(search, k), len(index), parallel)
        key = (json.dumps(flt, sort_keys=True), tuple(types), tuple(scope.exact.items()))
        allowed = index.cached_filter_mask(key)

        def mask() -> NDArray[np.bool_]:
            kept = index.filter_mask(key, lambda: self._filter_rids(types, scope, flt))
            return kept if then is None else kept & then

        if allowed is not None or not scope.exact:
            allowed = mask() if allowed is None or then is not None else allowed
            return self._run(partial(search, k, allowed=allowed), len(index), parallel)
        fetch = max(FILTER_CHECK_PER_RESULT * k, 128)
        ranked = self._run(partial(search, fetch), len(index), parallel)

        def checked() -> builtins.list[tuple[int, float]]:
            nonlocal fetch
            hits = ranked()
            looked_at: set[int] = set()
            passing: set[int] = set()
            kept: builtins.list[tuple[int, float]] = []
            seen, batch = 0, max(2 * k, 32)
            while True:
                # Hits come best first, so the first k that pass are the answer: the filter
                # is checked on more of them, batch by batch, until k pass. (A wider ranking
                # may order equal distances differently: any not yet checked are checked.)
                while seen < len(hits):
                    upto = min(len(hits), seen + batch)
                    todo = [rid for rid, _ in hits[:upto] if rid not in looked_at]
                    passing |= self._passing_filter(todo, flt)
                    looked_at.update(todo)
                    seen = upto
                    kept = [(rid, dist) for rid, dist in hits[:seen] if rid in passing][:k]
                    if len(kept) >= k:
                        return kept
                    batch = more_to_read(k - len(kept), max(len(passing), 1) / seen)
                if len(hits) < fetch:  # every record of the scope was ranked
                    return kept
                if fetch >= FILTER_CHECK_MAX:
                    return search(k, allowed=mask())
                # Rank as many more as the share passing so far says are needed, twice over.
                share = max(len(passing), 1) / len(hits)
                fetch = min(FILTER_CHECK_MAX, max(4 * fetch, math.ceil(2 * k / share)))
                hits = search(fetch)

        return checked

    def neighbours(
        self,
        qvec: NDArray[np.float32],
        rids: builtins.list[int],
        before: int,
        after: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]] | None:
        """The thread neighbours of ``rids`` that the search could return, read from the
        in-process index that ranked it (``VectorIndex.thread_neighbours``), or None where
        SQL reads them: a metadata filter or ``as_of`` (conditions the index holds only as
        masks), or no in-process index holding the scope (PostgreSQL, a user not cached)."""
        find = partial(
            _thread_neighbours,
            qvec=qvec,
            rids=rids,
            before=before,
            after=after,
            types=types,
            scope=scope,
            valid_only=valid_only,
            seq_of=self._seq_of,
        )
        return self._on_index(scope, flt, find)

    def scan_rows(
        self,
        qvec: NDArray[np.float32],
        hits: Sequence[tuple[int, float]],
        steps: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> ScanRows | None:
        """The scope's rows as the vector search that answered ``hits`` saw them, with their
        thread neighbours (``VectorIndex.scan_rows``), or None (then :meth:`neighbours`)."""
        find = partial(
            _scan_rows,
            qvec=qvec,
            hits=hits,
            steps=steps,
            types=types,
            scope=scope,
            valid_only=valid_only,
            seq_of=self._seq_of,
        )
        return self._on_index(scope, flt, find)

    def conditions(
        self,
        rids: NDArray[np.int64] | builtins.list[int],
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64]] | None:
        """Whether the search could return each of ``rids``, with their preference
        penalties, as the in-process index that ranks the search holds them
        (``VectorIndex.record_conditions``), or None where SQL must check them (as
        :meth:`neighbours`; or a record with no vector)."""
        check = partial(
            _record_conditions, rids=rids, types=types, scope=scope, valid_only=valid_only
        )
        return self._on_index(scope, flt, check, not_while_scanning=True)

    def _on_index(
        self,
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        use: Callable[[VectorIndex], _T | None],
        not_while_scanning: bool = False,
    ) -> _T | None:
        """``use`` on the in-process index that ranks the search (SQLite: the store's;
        PostgreSQL: the user's cached rows, under the cache's lock), or None where there is
        none or it cannot tell: a metadata filter or ``as_of`` (conditions it holds only as
        masks), no vectors. ``not_while_scanning``: None for a SQLite index large enough
        that its scan may be running on the branch thread meanwhile."""
        if flt is not None or scope.as_of is not None or self._core.vector_dim is None:
            return None
        if not self._core.dialect.native_vector_search:
            index = self._keeper.index
            if index is None or (not_while_scanning and len(index) >= PARALLEL_BRANCH_ROWS):
                return None
            return use(index)
        with self.users.lock, self._core.dialect.primary_reads():
            cached = self.users.cached_index(scope.exact.get("user") if scope.exact else None)
            return None if cached is None else use(cached)

    def _seq_of(self, rids: builtins.list[int]) -> dict[int, int | None]:
        """The thread positions (``seq_no``) of ``rids``."""
        d = self._core.dialect
        out: dict[int, int | None] = {}
        for start in range(0, len(rids), 500):
            listed, ids = d.id_list(rids[start : start + 500])
            rows = d.execute(
                f"SELECT r.rid, r.seq_no FROM {listed} {d.tables.records} r ON r.rid = j.value",
                [ids],
            )
            out.update((int(rid), None if seq is None else int(seq)) for rid, seq in rows)
        return out

    def _run(
        self, job: Callable[[], builtins.list[tuple[int, float]]], rows: int, parallel: bool
    ) -> Callable[[], Hits]:
        """``job`` run now, or on the branch thread when ``parallel`` and ``rows`` is large."""
        if not parallel or rows < PARALLEL_BRANCH_ROWS:
            hits = job()
            return lambda: hits
        return self._submit(job)

    def _beside(
        self, job: Callable[[], builtins.list[tuple[int, float]]]
    ) -> Callable[[], Hits] | None:
        """A ranking in SQL run on the branch thread, on a connection of its own, while this
        thread sends the keyword branch's statement (a hybrid search's first of a user: two
        statements of about 2.7 ms each at 1,000 chunks); None (run it here) inside a
        transaction or an end user's scope, or while the branch thread is busy (searches from
        many threads: each ranks on its own)."""
        if self._closed or not self._core.dialect.reads_beside():
            return None
        pool = self._branch_pool()  # first: in a forked child it makes ``_idle`` again
        idle = self._idle  # the one taken is the one given back, whatever replaces it
        if not idle.acquire(blocking=False):
            return None
        try:
            future = pool.submit(contextvars.copy_context().run, job)
        except BaseException:
            idle.release()
            raise
        future.add_done_callback(lambda _: idle.release())
        return future.result

    def _submit(self, job: Callable[[], builtins.list[tuple[int, float]]]) -> Callable[[], Hits]:
        """``job`` run on the branch thread; its hits collected by the callable returned."""
        # In the caller's context: an end-user scope (core._shared._end_user) and event listeners
        # follow the job onto the branch thread.
        return self._branch_pool().submit(contextvars.copy_context().run, job).result

    def _branch_pool(self) -> ThreadPoolExecutor:
        """The branch thread's executor (made on first use, and again in a forked child)."""
        if self.pool is None or self._pool_pid != os.getpid():  # none, or forked
            self.pool = ThreadPoolExecutor(1, thread_name_prefix="oam-vector-branch")
            self._pool_pid = os.getpid()
            self._idle = threading.BoundedSemaphore(1)
        return self.pool

    def _passing_filter(self, rids: builtins.list[int], flt: dict[str, Any]) -> set[int]:
        """Those of ``rids`` whose record's metadata passes ``flt``."""
        if not rids:
            return set()
        d = self._core.dialect
        fsql, fparams = d.compile_filter(flt, "r.metadata")
        ids, ids_param = d.id_list(rids)
        rows = d.execute(
            f"SELECT r.rid FROM {ids} {d.tables.records} r ON r.rid = j.value WHERE {fsql}",
            [ids_param, *fparams],
        )
        return {int(row[0]) for row in rows}

    def sql_hits(
        self,
        qvec: NDArray[np.float32],
        k: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
        loaded: Loaded | None = None,
    ) -> builtins.list[tuple[int, float]]:
        """Vector ranking inside an engine with native vector search (pgvector).

        A user-scoped search ranks the user's chunks in their covering index
        (:meth:`_user_sql`); another scoped search, or one with preferences, ranks its
        candidates exactly, through the scope indexes. An unscoped one asks the approximate
        index (with the chunks not in it yet, see ``_postgres_ann``) for more candidates than
        it needs and filters them, widening until ``k`` distinct records remain; a filter
        that keeps too few of them turns it exact. Given ``loaded``, each statement also
        reads its rows' records, and those of the hits returned are put there.
        """
        d = self._core.dialect
        conds, params = search_conditions(d, types, scope, flt, valid_only)
        if "user" in scope.exact:
            return self._user_sql(qvec, scope, types, " AND ".join(conds), params, k, loaded)
        conds.append("c.vector IS NOT NULL")
        qparam = d.vector_to_db(qvec / float(np.linalg.norm(qvec)))
        dist = d.cosine_distance_sql("c.vector")
        penalty = preference_penalties(d, scope)
        order = f"{dist} + {' + '.join(penalty)}" if penalty else dist
        order_params = [qparam, *preference_params(scope)]
        where = " AND ".join(conds)
        if penalty or scope.exact or not d.ranks_approximately:
            return self._exact_sql(order, order_params, where, params, k, loaded)
        t = d.tables
        # The graph's best 2k rows (ef_search stays at least _postgres_ann.MIN_EF, so the same
        # candidates): fewer rows joined to their chunks and records than 4k. A metadata
        # filter starts one widening further: most keep too few of 2k for a first round.
        n = max(2 * k, 20) * (FILTERED_FIRST_WIDER if flt else 1)
        while True:
            record_cols = self._record_cols(loaded, n)
            sql = (
                f"WITH {d.ann_candidates_sql()} SELECT c.rid, h.dist,"
                f" (SELECT MAX(dist) FROM g), (SELECT COUNT(*) FROM g){record_cols}"
                f" FROM h JOIN {t.chunks} c ON c.cid = h.cid JOIN {t.records} r ON r.rid = c.rid"
                f" WHERE {where} ORDER BY h.dist LIMIT ?"
            )
            rows = d.execute_vector_query(sql, [qparam, qparam, n, qparam, *params, n])
            if not rows:
                bound = -math.inf
            elif int(rows[0][3]) < n:
                bound = math.inf  # the graph gave all it had: every candidate is final
            else:  # a graph row not read is farther than the farthest read
                bound = float(rows[0][2])
            best = _best_per_record([row[:2] for row in rows if float(row[1]) <= bound])
            if len(best) >= k or (bound == math.inf and len(rows) < n):
                return _keep_records(rows, 4, best[:k], loaded)
            if n >= NATIVE_ANN_FETCH_MAX:
                # The filter keeps too little of what the index returns: rank exactly.
                return self._exact_sql(order, order_params, where, params, k, loaded)
            n *= 4

    def _user_sql(
        self,
        qvec: NDArray[np.float32],
        scope: ScopeSpec,
        types: builtins.list[str],
        where: str,
        params: builtins.list[Any],
        k: int,
        loaded: Loaded | None,
    ) -> builtins.list[tuple[int, float]]:
        """A user's best chunks by distance, read from the chunks' covering index on
        (user, type) alone; every condition (and preference penalty) is then applied to
        those chunks' records (without preferences, to the best k records' alone, and to
        all when one of those fails), and more are ranked until no chunk left unread could
        enter the answer: it is the answer of ranking every row that passes."""
        d = self._core.dialect
        t = d.tables
        qparam = d.vector_to_db(qvec / float(np.linalg.norm(qvec)))
        cond, user_params = same_as("c.user_id", scope.exact["user"])
        shard, shard_params = d.user_shard("c", scope.exact["user"])
        on_shard, on_shard_params = d.user_shard("r", scope.exact["user"])
        cond, user_params = cond + shard, user_params + shard_params
        penalty = preference_penalties(d, scope)
        pparams = preference_params(scope)
        n = max(4 * k, 40)
        # Without preferences, the records of the best k alone are read; where one of them
        # fails its conditions (common: an expired or INVALID record, a filter, an exact
        # agent or thread), the same statement reads every row's record (``a``, whose
        # uncorrelated EXISTS the server tests once), so the chunks are ranked once.
        best_only = not penalty
        while True:
            record_cols = self._record_cols(loaded, n)
            ranked = (
                f"WITH g AS (SELECT c.rid, {d.cosine_distance_sql('c.vector')} AS dist"
                f" FROM {t.chunks} c WHERE {cond} AND {chunk_types_sql('c.record_type', types)}"
                " AND c.vector IS NOT NULL ORDER BY dist, c.rid LIMIT ?)"
            )
            if best_only:  # flag: -1 not read (outside the best k), NULL failed, 0 passed
                flag = "CASE WHEN r.rid IS NULL THEN NULL ELSE 0.0 END"
                wide = d.execute(
                    f"{ranked}, t AS MATERIALIZED (SELECT b.rid AS top_rid, {flag} AS flag"
                    f"{record_cols} FROM (SELECT rid FROM g GROUP BY rid ORDER BY MIN(dist),"
                    f" rid LIMIT ?) b LEFT JOIN {t.records} r ON r.rid = b.rid{on_shard}"
                    f" AND {where}), a AS MATERIALIZED (SELECT u.rid AS all_rid, {flag} AS"
                    f" aflag{record_cols} FROM (SELECT DISTINCT rid FROM g) u LEFT JOIN"
                    f" {t.records} r ON r.rid = u.rid{on_shard} AND {where}"
                    " WHERE EXISTS (SELECT 1 FROM t WHERE t.flag IS NULL))"
                    " SELECT g.rid, g.dist, CASE WHEN t.top_rid IS NULL THEN -1.0 ELSE t.flag"
                    " END, t.*, a.* FROM g LEFT JOIN t ON t.top_rid = g.rid"
                    " LEFT JOIN a ON a.all_rid = g.rid ORDER BY g.dist, g.rid",
                    [qparam, *user_params, *types, n, k, *(on_shard_params + params) * 2],
                )
                half = (len(wide[0]) - 3) // 2 if wide else 0  # t's columns, then a's
                if any(row[2] is None for row in wide):  # one of the best failed: a's flags
                    rows = [(r[0], r[1], *r[4 + half :]) for r in wide]
                    rows_checked = [row for row in rows if row[2] is not None]
                else:  # the best k records all pass: the first k of every passing record
                    rows = [(r[0], r[1], r[2], *r[5 : 3 + half]) for r in wide]
                    rows_checked = [row for row in rows if float(row[2]) == 0.0]
            else:
                rows = d.execute(
                    f"{ranked} SELECT g.rid, g.dist, CASE WHEN r.rid IS NULL THEN NULL"
                    f" ELSE {' + '.join(['0.0', *penalty])} END{record_cols} FROM g"
                    f" LEFT JOIN {t.records} r"
                    f" ON r.rid = g.rid{on_shard} AND {where} ORDER BY g.dist, g.rid",
                    [qparam, *user_params, *types, n, *pparams, *on_shard_params, *params],
                )
                rows_checked = [row for row in rows if row[2] is not None]
            scored = sorted(
                ((int(row[0]), float(row[1]) + float(row[2])) for row in rows_checked),
                key=lambda hit: (hit[1], hit[0]),
            )
            best = _best_per_record(scored)
            if len(rows) < n:  # every chunk of the user's types was read
                return _keep_records(rows, 3, best[:k], loaded)
            # A chunk not read is at least as far as the last one read (and then after it in
            # (distance, rid) order); penalties only add, so with none the first k are final,
            # and with some, a k-th result strictly nearer than that chunk is.
            if len(best) >= k and (not penalty or best[k - 1][1] < float(rows[-1][1])):
                return _keep_records(rows, 3, best[:k], loaded)
            if n >= NATIVE_USER_FETCH_MAX:
                order = d.cosine_distance_sql("c.vector")
                order = f"{order} + {' + '.join(penalty)}" if penalty else order
                where += " AND c.vector IS NOT NULL"
                return self._exact_sql(order, [qparam, *pparams], where, params, k, loaded)
            n *= 4

    def _record_cols(self, loaded: Loaded | None, rows: int) -> str:
        """The record columns to add to a ranking statement's select list (after a comma)
        that reads at most ``rows`` rows: none without ``loaded``, or for a wide round."""
        if loaded is None or rows > RECORDS_WITH_RANKING_MAX:
            return ""
        return f", {self._core.record_cols}"

    def _exact_sql(
        self,
        order: str,
        order_params: builtins.list[Any],
        where: str,
        params: builtins.list[Any],
        k: int,
        loaded: Loaded | None,
    ) -> builtins.list[tuple[int, float]]:
        """Every candidate ranked exactly: the best rows by distance alone (the sort keeps
        no vector, nor record columns: those are read for the rows kept), widened until
        they hold ``k`` distinct records."""
        d = self._core.dialect
        t = d.tables
        n = max(2 * k, 20)
        while True:
            sql = (
                f"SELECT c.rid, {order} AS dist FROM {t.chunks} c JOIN {t.records} r"
                f" ON r.rid = c.rid{d.joined('r', 'c')} WHERE {where} ORDER BY dist, c.rid"
                " LIMIT ?"
            )
            if self._record_cols(loaded, n):
                sql = (
                    f"WITH b AS ({sql}) SELECT b.rid, b.dist, {self._core.record_cols}"
                    f" FROM b JOIN {t.records} r ON r.rid = b.rid ORDER BY b.dist, b.rid"
                )
            rows = d.execute(sql, [*order_params, *params, n])
            best = _best_per_record([row[:2] for row in rows])
            if len(best) >= k or len(rows) < n:
                return _keep_records(rows, 2, best[:k], loaded)
            n *= 4


def _thread_neighbours(
    index: VectorIndex,
    *,
    qvec: NDArray[np.float32],
    rids: builtins.list[int],
    before: int,
    after: int,
    types: builtins.list[str],
    scope: ScopeSpec,
    valid_only: bool,
    seq_of: Callable[[builtins.list[int]], dict[int, int | None]],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    return index.thread_neighbours(
        qvec,
        rids,
        before,
        after,
        record_types=types,
        exact=scope.exact,
        prefer=scope.prefer,
        valid_only=valid_only,
        now=time.time(),
        seq_of=seq_of,
    )


def _scan_rows(
    index: VectorIndex,
    *,
    qvec: NDArray[np.float32],
    hits: Sequence[tuple[int, float]],
    steps: int,
    types: builtins.list[str],
    scope: ScopeSpec,
    valid_only: bool,
    seq_of: Callable[[builtins.list[int]], dict[int, int | None]],
) -> ScanRows | None:
    return index.scan_rows(
        qvec,
        hits,
        steps,
        record_types=types,
        exact=scope.exact,
        prefer=scope.prefer,
        valid_only=valid_only,
        seq_of=seq_of,
    )


def _record_conditions(
    index: VectorIndex,
    *,
    rids: NDArray[np.int64] | builtins.list[int],
    types: builtins.list[str],
    scope: ScopeSpec,
    valid_only: bool,
) -> tuple[NDArray[np.bool_], NDArray[np.float64]] | None:
    return index.record_conditions(
        rids,
        record_types=types,
        exact=scope.exact,
        prefer=scope.prefer,
        valid_only=valid_only,
        now=time.time(),
    )


def _keep_records(
    rows: builtins.list[tuple[Any, ...]],
    offset: int,
    hits: builtins.list[tuple[int, float]],
    loaded: Loaded | None,
) -> builtins.list[tuple[int, float]]:
    """``hits``, after putting in ``loaded`` (when given) the records of theirs that
    ``rows`` hold from column ``offset`` on (``COLS``; NULL where the record was not
    joined; none where the statement read no record columns)."""
    if loaded is not None and rows and len(rows[0]) > offset:
        wanted = {rid for rid, _ in hits}
        for row in rows:
            rid = int(row[0])
            if rid in wanted and rid not in loaded and row[offset] is not None:
                loaded[rid] = to_record(row[offset:])
    return hits


def _best_per_record(rows: builtins.list[tuple[Any, ...]]) -> builtins.list[tuple[int, float]]:
    """``(rid, distance)`` rows best first: each record's best, in that order."""
    best: dict[int, float] = {}
    for rid, distance in rows:
        best.setdefault(int(rid), float(distance))
    return sorted(best.items(), key=lambda kv: (kv[1], kv[0]))

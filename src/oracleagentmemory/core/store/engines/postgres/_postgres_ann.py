"""PostgreSQL: the approximate vector index, kept up to date behind the writes.

pgvector's HNSW index costs milliseconds of server CPU for every vector inserted into it;
inside each write that was most of the write. Here the graph lives on a side table,
``<prefix>_ann (cid, vector)``, and the chunks written since wait in
``<prefix>_ann_queue (cid)``. A background indexer moves queued chunks into the graph in
batches, each batch ONE transaction that deletes them from the queue and inserts them into
the graph, so in any snapshot a committed chunk with a vector is in exactly one of the two.

A search that uses the graph (unscoped, no preference) ranks the graph's best candidates
and every queued chunk exactly, in one statement (:func:`candidates_sql`), and keeps only
results no farther than the farthest graph candidate it read (a graph row it did not read is
farther): no committed row is missed, whatever the indexer's lag. Scoped searches rank
their candidates exactly (through the scope indexes) and never read the graph.

Both tables reference the chunk rows with ``ON DELETE CASCADE``: a deleted chunk leaves
both with it, in its own transaction. A chunk whose vector changes in place (re-embedding)
is queued again (:func:`requeue_all_sql`).

One batch runs at a time across every process on the database (a transaction-scoped
advisory lock taken with ``pg_try_advisory_xact_lock``); each store wakes its own indexer
after writing ``WAKE_ROWS`` vectors, ``WAKE_AFTER_S`` after its last unindexed write, and
when it opens a store whose queue is not empty. The background indexer always works in
batches, so searches keep a partial graph meanwhile; while its store's writes keep coming it
yields to them (small batches, a quarter of its time) until the queue holds ``LAG_ROWS``.
:meth:`Indexer.drain` (after a bulk load) indexes a queue longer than ``BULK_ROWS`` and than
the graph at once instead: the rows are moved without the graph, which is then built by one
``CREATE INDEX CONCURRENTLY`` (searches rank the side table exactly until it is ready).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from oracleagentmemory.core._shared._end_user import running_as

log = logging.getLogger(__name__)

BATCH_ROWS = 1000
"""Queued chunks one indexer transaction moves into the graph."""
WAKE_ROWS = 256
"""Vectors a store writes before it wakes its indexer."""
WAKE_AFTER_S = 2.0
"""Seconds after a store's last write that its indexer runs anyway (fewer rows queued)."""
YIELD_ROWS = 200
"""Queued chunks one batch moves while the store's writes keep coming."""
YIELD_SHARE = 0.25
"""While writes keep coming, the share of its time the indexer spends in batches (it waits
three times a batch's duration after it): the graph's inserts cost about a millisecond of
server CPU per vector, more than the write itself, so a writer-heavy burst is indexed
mostly after it, as autovacuum's cost delay does for its own work."""
BUSY_S = 1.0
"""Writes are "still coming" when the store wrote within this many seconds."""
LAG_ROWS = 50_000
"""A queue this long is indexed at full speed, writes or not: unscoped searches rank the
queue exactly, so the lag is bounded."""
BULK_ROWS = 20_000
"""A queue at least this long (and longer than the graph) is indexed by one graph build."""
BUILD_MEMORY = "1GB"
"""``maintenance_work_mem`` for a graph build: pgvector builds in memory when it fits."""


MIN_EF = 64
"""``hnsw.ef_search`` on a graph of up to 100,000 rows (see ``ef_search_sql``): at 100,000
chunks recall@10 was 0.955 with pgvector's default 40, 0.973 with 64 and 0.985 with 100 (the
last 1.8 ms slower), on the corpus of bench postgres."""
EF_1M = 200
"""``hnsw.ef_search`` on a graph of 1,000,000 rows or more: at 64, recall@10 was 0.930 on
the 1M corpus of bench postgres (its table of breadths gives the rest)."""


def ef_search_sql(ann: str, limit: int) -> tuple[str, list[Any]]:
    """The statement (``%s`` placeholders) that sets ``hnsw.ef_search`` for this transaction,
    and returns it: at least ``limit``, ``MIN_EF`` on a graph (table ``ann``) of up to
    100,000 rows, growing with the log of its rows (the table's estimate,
    ``pg_class.reltuples``) to ``EF_1M`` at 1,000,000, as the embedded graph's breadth grows
    (``_ann_index``); 1,000 at most."""
    rows = (
        "GREATEST(COALESCE((SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)),"
        " 0), 1)::float8"
    )
    scale = f"LEAST(1.0, GREATEST(0.0, LOG({rows} / 100000.0)))"
    ef = f"ROUND(%s::float8 + %s::float8 * {scale})::int"
    return (
        f"SELECT set_config('hnsw.ef_search', LEAST(1000, GREATEST(%s::int, {ef}))::text, true)",
        [limit, MIN_EF, EF_1M - MIN_EF, ann],
    )


def candidates_sql(ann: str, queue: str, chunks: str, distance: Callable[[str], str]) -> str:
    """Two CTEs: ``g``, the graph's ``?`` best ``(cid, dist)``, and ``h``, those and every
    queued chunk with a vector, ranked exactly. ``distance(column)`` is the SQL of the
    distance between ``column`` and one ``?`` query vector; the parameters are ``[query,
    query, limit, query]``.

    A graph row not among ``g`` is farther than ``g``'s farthest, so of the candidates only
    those no farther than that are final: queued rows beyond it may be passed by graph rows
    not read yet (the caller reads more of the graph, or ranks exactly)."""
    graph, queued = distance("a.vector"), distance("qc.vector")
    return (
        f"g AS MATERIALIZED (SELECT a.cid, {graph} AS dist FROM {ann} a ORDER BY {graph}"
        " LIMIT ?),"
        f" h AS (SELECT cid, dist FROM g UNION ALL SELECT q.cid, {queued} FROM {queue} q"
        f" JOIN {chunks} qc ON qc.cid = q.cid WHERE qc.vector IS NOT NULL)"
    )


def requeue_all_sql(ann: str, queue: str, chunks: str) -> list[str]:
    """Statements that put every chunk back in the queue: its vectors change in place, in
    this transaction, after these run (those still without one are dropped from the queue
    when their batch runs)."""
    return [
        f"DELETE FROM {ann}",
        f"INSERT INTO {queue} (cid) SELECT cid FROM {chunks} ON CONFLICT (cid) DO NOTHING",
    ]


class Indexer:
    """The background thread of one store that moves queued chunks into the graph.

    ``run_batch(limit, wait=False)`` moves at most ``limit`` queued chunks in one
    transaction and returns how many it moved (0: queue empty, or another indexer's batch
    is running and ``wait`` is false); ``bulk(wait=False)`` indexes the whole queue at once
    when it is long, returning whether it did.
    """

    def __init__(
        self,
        run_batch: Callable[..., int],
        bulk: Callable[..., bool],
        backlog: Callable[[], int] | None = None,
    ) -> None:
        self._run_batch = run_batch
        self._bulk = bulk
        self._backlog = backlog
        """The queue's length now (None: never yield to writers)."""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pending = 0
        self._who: dict[str | None, None] = {}
        """The end users whose writes are queued (under row security each batch moves the
        rows its user may index; None: the connection's own role)."""
        self._last_write = 0.0
        self._thread: threading.Thread | None = None
        self.errors = 0

    def wrote(self, vectors: int, who: str | None = None) -> None:
        """This store committed ``vectors`` new queued chunks (as end user ``who``)."""
        if vectors <= 0 or self._stop.is_set():
            return
        with self._lock:
            self._pending += vectors
            self._who[who] = None
            self._last_write = time.monotonic()
            self._start()
            if self._pending >= WAKE_ROWS:
                self._wake.set()

    def kick(self, who: str | None = None) -> None:
        """Index what is queued now (a store opened on a non-empty queue, as ``who``)."""
        if self._stop.is_set():
            return
        with self._lock:
            self._who[who] = None
            self._start()
            self._wake.set()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=_loop, args=(weakref.ref(self),), name="oam-ann-indexer", daemon=True
            )
            self._thread.start()

    def drain(self) -> None:
        """Index every chunk queued now, in this thread (waiting for another indexer's batch
        rather than skipping it: a batch running when a load ends must not turn the graph
        build into batches)."""
        if self._bulk(wait=True):
            return
        while self._run_batch(BATCH_ROWS, wait=True) > 0:
            pass

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)

    def _step(self) -> bool:
        """One wake-up's work; False once stopped."""
        self._wake.wait(timeout=WAKE_AFTER_S)
        if self._stop.is_set():
            return False
        with self._lock:
            due = self._wake.is_set() or (
                self._pending and time.monotonic() - self._last_write >= WAKE_AFTER_S
            )
            if not due:
                return True
            self._wake.clear()
            self._pending = 0
            whos, self._who = list(self._who) or [None], {}
        try:
            for who in whos:
                with running_as(who):
                    self._work()
        except Exception as exc:  # the next wake-up retries; the queue keeps every row meanwhile
            self.errors += 1
            log.warning(
                "approximate-index batch failed: %s: %s",
                type(exc).__name__,
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            self._stop.wait(1.0)
        return True

    def _work(self) -> None:
        """Batches until the queue is short: a full batch means more may be queued. While
        this store's writes keep coming and the queue is shorter than ``LAG_ROWS``, small
        batches spaced out to ``YIELD_SHARE`` of the time."""
        while not self._stop.is_set():
            busy = self._backlog is not None and time.monotonic() - self._last_write < BUSY_S
            limit = YIELD_ROWS if busy else BATCH_ROWS
            started = time.monotonic()
            if self._run_batch(limit) < limit:
                return
            if busy and self._backlog is not None and self._backlog() < LAG_ROWS:
                took = time.monotonic() - started
                self._stop.wait(took * (1 - YIELD_SHARE) / YIELD_SHARE)


def _loop(ref: weakref.ref[Indexer]) -> None:
    """The indexer thread: holds its store's indexer weakly, so a store never closed still
    goes away (the thread then ends)."""
    while True:
        indexer = ref()
        if indexer is None or not indexer._step():
            return
        del indexer


def bulk_statements(ann: str, queue: str, chunks: str, index: str) -> tuple[list[str], str]:
    """(One transaction's statements, then the graph build) for :meth:`Indexer.drain`'s bulk
    case: the graph dropped, the queue moved into the table, then the graph built once."""
    move = [
        f"DROP INDEX IF EXISTS {index}",
        f"INSERT INTO {ann} (cid, vector) SELECT c.cid, c.vector FROM {queue} q"
        f" JOIN {chunks} c ON c.cid = q.cid WHERE c.vector IS NOT NULL"
        " ON CONFLICT (cid) DO UPDATE SET vector = excluded.vector",
        f"DELETE FROM {queue}",
    ]
    # CONCURRENTLY: writes (deletes cascading into the table) go on during the build.
    build = (
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {index.rsplit('.', 1)[-1]} ON {ann}"
        " USING hnsw (vector vector_cosine_ops)"
    )
    return move, build


def batch_sql(ann: str, queue: str, chunks: str) -> str:
    """One batch: at most ``?`` queued chunks moved into the graph."""
    return (
        f"WITH q AS (DELETE FROM {queue} WHERE cid IN (SELECT cid FROM {queue} ORDER BY cid"
        " LIMIT ? FOR UPDATE SKIP LOCKED) RETURNING cid),"
        f" m AS (INSERT INTO {ann} (cid, vector) SELECT c.cid, c.vector FROM {chunks} c"
        " JOIN q ON q.cid = c.cid WHERE c.vector IS NOT NULL"
        " ON CONFLICT (cid) DO UPDATE SET vector = excluded.vector RETURNING 1)"
        " SELECT (SELECT COUNT(*) FROM q), (SELECT COUNT(*) FROM m)"
    )

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

The same thread keeps the planner's statistics fresh (issue #53): once a store's commits
(with, at open, the records changed since their last ``ANALYZE``, ``n_mod_since_analyze``)
have touched ``ANALYZE_MIN_ROWS`` records and ``ANALYZE_SHARE`` of the records table (its
``reltuples``, as of this store's last ``ANALYZE``), it runs ``ANALYZE`` on the records,
chunks and keyword rows, in a transaction of its own that waits at most ``ANALYZE_LOCK_WAIT``
for the table locks (another process's or autovacuum's ``ANALYZE`` holds them: this one is
skipped and tried again later). A bulk load is thus planned with its own size, not with
the statistics of the empty table it started from, whatever autovacuum's timing; statistics
due when the store closes run in its ``close``.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg

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
ANALYZE_MIN_ROWS = 1000
"""Records a store's commits touch (added, changed, deleted) before it may run ``ANALYZE``."""
ANALYZE_SHARE = 0.2
"""...and the share of the records table (its size at this store's last ``ANALYZE``) they
must reach: autovacuum's ``autovacuum_analyze_scale_factor`` is 0.1, after up to a minute's
nap; 0.2 at once halves the passes of a load that grows a table tenfold (25 against 47)."""
ANALYZE_LOCK_WAIT = "200ms"
"""``lock_timeout`` of the statistics transaction."""


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
        analyze: Callable[[bool], float | None] | None = None,
    ) -> None:
        self._run_batch = run_batch
        self._bulk = bulk
        self._backlog = backlog
        """The queue's length now (None: never yield to writers)."""
        self._analyze = analyze
        """``analyze(run)``: with ``run``, ``ANALYZE`` the store's tables; the records
        table's ``reltuples`` after (None: skipped, locks taken elsewhere)."""
        self._changed = 0
        """Records this store's commits touched since its last ``ANALYZE``."""
        self._table_rows: float | None = None
        """The records table's size at this store's last ``ANALYZE`` (None: not asked)."""
        self.analyzed = 0
        """``ANALYZE`` passes this store ran."""
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

    def wrote(self, vectors: int, who: str | None = None, changed: int = 0) -> None:
        """This store committed ``vectors`` new queued chunks (as end user ``who``), in
        writes that touched ``changed`` records."""
        if changed > 0 and self._analyze is not None and not self._stop.is_set():
            with self._lock:
                self._changed += changed
                if self._changed >= ANALYZE_MIN_ROWS:
                    self._start()
                    if vectors <= 0:
                        self._wake.set()
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
        """End the thread; statistics that are due run first, here (a load that closes its
        store at once is planned with its own size)."""
        if not self._stop.is_set():
            try:
                self._statistics()
            except Exception as exc:  # the next store's open counts the changes again
                log.warning("ANALYZE at close failed: %s: %s", type(exc).__name__, exc)
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
            self._statistics()
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

    def _statistics(self) -> None:
        """``ANALYZE`` when this store's commits changed the tables enough (see the module
        docstring); as the connection's own role, never an end user."""
        with self._lock:
            changed = self._changed
        if self._analyze is None or changed < ANALYZE_MIN_ROWS or self._stop.is_set():
            return
        if self._table_rows is None:
            self._table_rows = self._analyze(False)
        if changed < ANALYZE_SHARE * (self._table_rows or 0.0):
            return
        rows = self._analyze(True)
        if rows is None:  # another ANALYZE holds the tables: the next wake-up tries again
            return
        with self._lock:
            self._changed -= changed
        self._table_rows = rows
        self.analyzed += 1

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


def analyze(conn: Any, tables: list[str], run: bool) -> float | None:
    """With ``run``, ``ANALYZE`` those of ``tables`` that exist (the first: the records) in
    one transaction on ``conn``; None when their locks are not free within
    ``ANALYZE_LOCK_WAIT`` (a role that does not own them gets PostgreSQL's warning and skips
    them). Then the first table's ``reltuples`` (0 before any)."""
    if run:
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{ANALYZE_LOCK_WAIT}'")
                found = conn.execute(
                    "SELECT t FROM unnest(%s::text[]) t WHERE to_regclass(t) IS NOT NULL",
                    [tables],
                ).fetchall()
                conn.execute(f"ANALYZE {', '.join(str(row[0]) for row in found)}")
        except psycopg.errors.LockNotAvailable:
            return None
    row = conn.execute(
        "SELECT GREATEST(reltuples, 0) FROM pg_class WHERE oid = %s::regclass", [tables[0]]
    ).fetchone()
    return float(row[0]) if row else 0.0


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

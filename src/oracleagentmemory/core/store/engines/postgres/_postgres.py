"""The PostgreSQL dialect: psycopg 3, json metadata, tsvector + GIN, pgvector + HNSW.

A ``postgresql://`` URL opens a pool the store owns; a caller's ``ConnectionPool`` serves
concurrent callers; a caller's ``psycopg.Connection`` names the database (the store opens its
own pool to it; the caller may close theirs whenever it likes). Writers run concurrently: ids
come from sequences, a thread's ``seq_no`` from its high-water-mark row locked to the commit
(writers of one thread take turns), a clash on a record id is the UNIQUE key's. Ordinary
writes (inserts, updates, deletes, extraction bookkeeping) and opening a current schema take
the store's advisory lock shared and lock the rows or keys they change; store-wide work
(creating or migrating the schema, re-embedding) takes it exclusively. A write transaction
is pipelined: one round trip returns what it must read before inserting. The approximate
vector index is kept behind the writes (``_postgres_ann``).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

try:  # the [postgres] extra
    import psycopg
    import psycopg.adapt
    import psycopg_pool  # noqa: F401 - the extra's other half (pools)
    from psycopg import pq
except ImportError as exc:  # the sibling modules below import psycopg too
    raise ImportError(
        "PostgreSQL support needs the postgres extra: pip install 'recallwell[postgres]'"
    ) from exc

from oracleagentmemory.core._shared._end_user import current_end_user
from oracleagentmemory.core.store._dialect import (
    Dialect,
    KeywordRow,
    LocalScores,
    ReadOnlyStoreError,
    Tables,
    chunked,
)
from oracleagentmemory.core.store.engines.postgres import (
    _postgres_ann as ann,
    _postgres_changes as changes,
    _postgres_insert as one_statement,
    _postgres_keyword as keyword_rows,
    _postgres_replica as replicas,
    _postgres_words as words,
)
from oracleagentmemory.core.store.engines.postgres._postgres_connect import (
    connect_checked as connect_checked,
)
from oracleagentmemory.core.store.engines.postgres._postgres_errors import (
    RETRYABLE,
    as_clash,
    lock_timed_out,
    missing_role,
    refused_by_database,
)
from oracleagentmemory.core.store.engines.postgres._postgres_vectors import (
    PgVector,
    vectors_from_send,
    vectors_from_text,
)
from oracleagentmemory.core.store.engines.postgres.citus import _layout as citus
from oracleagentmemory.core.store.search._hybrid import KEYWORD_SPAN

T = TypeVar("T")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

_ROWS = pq.ExecStatus.TUPLES_OK  # a query's result (rows, or none)
_PIPELINE = psycopg.Pipeline.is_supported()
"""Pipeline mode needs libpq 14+ (psycopg-binary's); without it a statement a round trip."""
ROWS_PER_STATEMENT_PARAMS = 30_000
"""Parameters of one multi-row INSERT (PostgreSQL takes at most 65,535)."""
_SET_ROLE = "SELECT set_config('role', %s, true)"
"""``SET LOCAL ROLE`` with a bound name: the end user of this transaction only."""


def _as_end_user(conn: psycopg.Connection[Any]) -> None:
    """Inside a transaction: run the rest of it as the end user of the current scope, if
    any (``core._shared._end_user``); PostgreSQL refuses a role the login role may not set."""
    who = current_end_user()
    if who is not None:
        if who == "none":  # would be RESET ROLE: the login role's own rows, unchecked
            raise PermissionError("'none' is not an end user's role")
        try:
            conn.execute(_SET_ROLE, [who])
        except psycopg.errors.InvalidParameterValue as exc:  # no role of that name
            raise missing_role(exc) from exc


def check_identifier(value: str, name: str) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ValueError(
            f"{name} must be an unquoted SQL identifier (a letter or underscore, then letters, "
            f"digits or underscores, at most 63 characters); got {value!r}"
        )
    return value.lower()


_SHARED_LOCK = "SELECT pg_advisory_xact_lock_shared(%s)"
# Store-wide work (migrations, re-embedding) waits its turn: idle_in_transaction_timeout
# bounds it. So does opening a store, under the shared lock when its schema is current.
_EXCLUSIVE_LOCK = ("WITH patient AS MATERIALIZED (SELECT set_config('lock_timeout', '0', true))"
                   " SELECT pg_advisory_xact_lock(%s) FROM patient")  # fmt: skip
_PATIENT_SHARED_LOCK = _EXCLUSIVE_LOCK.replace(
    "pg_advisory_xact_lock(", "pg_advisory_xact_lock_shared("
)


class PostgresDialect(Dialect):
    """PostgreSQL engine for one store."""

    IS = "IS NOT DISTINCT FROM"
    IS_NOT = "IS DISTINCT FROM"
    FOR_WRITE = " FOR UPDATE OF r"
    NOW_S = "extract(epoch FROM clock_timestamp())::float8"
    native_vector_search = True
    concurrent_writers = True
    keyword_span = KEYWORD_SPAN  # FTS5's BM25 units, as on SQLite (see _postgres_words)
    layouts = (citus.CITUS_LAYOUT,)

    def __init__(
        self, connection: Any, prefix: str, schema: str | None = None, read_connection: Any = None
    ) -> None:
        self._pool, self._let_go = replicas.open_pool(connection, self)
        self.replica: replicas.ReadReplica | None = None
        try:
            self.read_only = replicas.in_recovery(self._pool)  # a standby: reads only
            if read_connection is not None:
                if self.read_only:
                    raise ValueError("read_connection: connection is a standby already")
                self.replica = replicas.ReadReplica(read_connection)
        except BaseException:
            self._let_go()
            raise
        self.schema = schema
        self.tables = Tables(prefix.lower(), schema)
        self._prefix = prefix.lower()
        self._local = threading.local()
        digest = hashlib.blake2b(f"{schema}.{self._prefix}".encode(), digest_size=8).digest()
        self._lock_key = int.from_bytes(digest, "big", signed=True)
        self._scope_key = int.from_bytes(digest[:4], "big", signed=True)
        digest = hashlib.blake2b(f"{schema}.{self._prefix}.ann".encode(), digest_size=8).digest()
        self._ann_key = int.from_bytes(digest, "big", signed=True)
        qualify = f"{schema}." if schema else ""
        self.rid_seq = f"{qualify}{self._prefix}_rid_seq"
        self.cid_seq = f"{qualify}{self._prefix}_cid_seq"
        self.ann_index = f"{qualify}{self._prefix}_ann_hnsw"
        self.indexer = ann.Indexer(
            self._ann_batch, self._ann_bulk, self.ann_backlog, self._analyze_tables
        )
        self.words = words.Words(self._prefix)
        self.inserts = one_statement.Inserts()
        self.change_log = changes.ChangeLog(
            self.tables.changes, self.tables.meta, self.execute_nowait
        )

    def lock(self) -> AbstractContextManager[Any]:
        # A pool serves concurrent callers (the store's own, or the caller's).
        return _NoLock()

    def _fmt(self, sql: str) -> str:
        t = self.tables
        return sql.format(
            meta=t.meta,
            records=t.records,
            chunks=t.chunks,
            blobs=t.blobs,
            relations=t.relations,
            seq=t.seq,
            owners=t.owners,
            changes=t.changes,
            sources=t.sources,
            pending=t.pending,
            ann=t.ann,
            ann_queue=t.ann_queue,
            kw=t.kw,
            kw_totals=t.kw_totals,
            history=t.history,
            rid_seq=self.rid_seq,
            cid_seq=self.cid_seq,
            s=f"{self.schema}." if self.schema else "",
            p=self._prefix,
        )

    @staticmethod
    def _q(sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        bound = getattr(self._local, "conn", None)
        if bound is not None:
            yield bound
            return
        try:
            if current_end_user() is None:
                with self._reading().connection() as conn:
                    yield conn
                return
            with self.snapshot():  # one statement as an end user: its own transaction
                yield self._local.conn
        except psycopg.errors.InsufficientPrivilege as exc:
            raise refused_by_database(exc) from exc
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            raise ReadOnlyStoreError() from exc

    def _reading(self) -> Any:
        """The pool a statement outside a transaction reads from: the standby inside a
        routed read sent there (``_postgres_replica``), else the primary."""
        route = replicas.ROUTE.get()
        if route is None or route.dialect is not self or route.replica is None:
            return self._pool
        route.used = True
        return route.replica.pool

    def note_commit(self, conn: psycopg.Connection[Any]) -> None:
        """After an autocommit write on ``conn``: where it ended, for the read replica."""
        if self.replica is not None:
            row = conn.execute(replicas.LSN_AFTER_COMMIT).fetchone()
            self.replica.wrote(row[0] if row else None)

    def routed_read(self, read: Callable[[], T]) -> T:
        inside = getattr(self._local, "conn", None) is not None  # a transaction's reads
        return replicas.routed(self, None if inside else self.replica, read)

    @contextmanager
    def reads_as_of_now(self) -> Iterator[replicas.Need | None]:
        replica = self.replica
        if replica is None:
            yield None
            return
        need = replicas.Need(replica, replica.written)
        token = replicas.NEED.set(need)
        try:
            yield need
        finally:
            replicas.NEED.reset(token)

    @contextmanager
    def primary_reads(self) -> Iterator[None]:
        token = replicas.ROUTE.set(replicas.Route(self, None))
        try:
            yield
        finally:
            replicas.ROUTE.reset(token)

    def check_end_user(self) -> None:
        current_end_user()  # RuntimeError for a scope that has ended

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            # In a pipeline, the errors of earlier statements sent without waiting are read
            # here too: a clash on a record id is the ValueError a write reports.
            try:
                cur = conn.execute(self._q(sql), list(params))
                pipeline = getattr(self._local, "pipeline", None)
                if pipeline is not None:
                    pipeline.sync()  # this statement's result is read now
            except psycopg.errors.UniqueViolation as exc:
                raise as_clash(exc) from exc
            result = cur.pgresult  # (``description`` builds an object per column)
            rows = result is not None and (result.nfields or result.status == _ROWS)
            return cur.fetchall() if rows else []

    def execute_all(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        if not _PIPELINE or getattr(self._local, "conn", None) is not None:
            return super().execute_all(statements)  # one by one, inside the transaction
        with self._conn() as conn:
            with conn.pipeline():
                cursors = [conn.execute(self._q(sql), list(params)) for sql, params in statements]
            return [cur.fetchall() for cur in cursors]

    def settle(self) -> None:
        pipeline = getattr(self._local, "pipeline", None)
        if pipeline is not None:
            # The statements after a failed one come back aborted: their errors are the
            # failure the caller is handling.
            with suppress(psycopg.Error):
                pipeline.sync()

    def execute_nowait(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._conn() as conn:
            try:  # as in execute
                conn.execute(self._q(sql), list(params))
            except psycopg.errors.UniqueViolation as exc:
                raise as_clash(exc) from exc

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(self._q(sql), [list(r) for r in rows])

    def id_head_sql(self, records: int, chunks: int) -> tuple[list[str], list[Any]]:
        return [
            f"(SELECT array_agg(nextval('{self.rid_seq}')) FROM generate_series(1, ?::int))",
            f"(SELECT array_agg(nextval('{self.cid_seq}')) FROM generate_series(1, ?::int))",
        ], [records, chunks]

    def ids_from_head(
        self, row: Sequence[Any], records: int, chunks: int
    ) -> tuple[list[int], list[int]]:
        return [int(v) for v in row[0] or ()], [int(v) for v in row[1] or ()]

    def insert_at_once(self, *args: Any, **kwargs: Any) -> Any:
        if self.read_only:
            raise ReadOnlyStoreError()
        return one_statement.insert_at_once(self, *args, **kwargs)

    def insert_rows(
        self, table: str, columns: str, rows: Sequence[Sequence[Any]], batch_size: int
    ) -> None:
        width = columns.count(",") + 1
        per = max(1, min(batch_size, ROWS_PER_STATEMENT_PARAMS // width))
        one = f"({','.join('?' * width)})"
        for part in chunked(rows, per):
            self.execute_nowait(
                f"INSERT INTO {table} ({columns}) VALUES {','.join([one] * len(part))}",
                [v for row in part for v in row],
            )

    def insert_chunks(
        self,
        rows: Sequence[Sequence[Any]],
        keyword: Sequence[KeywordRow] | None,
        batch_size: int,
    ) -> None:
        # One statement per part: the chunks (each copying its record's user and type, the
        # record written earlier in this write), the approximate index's queue (chunks with a
        # vector) and the keyword rows (see _postgres_words).
        t = self.tables
        one = "(?::bigint, ?::bigint, ?::int, ?::text, ?::vector, ?::tsvector, ?::int)"
        per = max(1, min(batch_size, ROWS_PER_STATEMENT_PARAMS // 7))
        queued = indexed = tokens = 0
        scope = {row[0]: (row[4], row[5], row[6]) for row in keyword or ()}
        for part in chunked(rows, per):
            params: list[Any] = []
            for cid, rid, index, text, vector in part:
                tsv, length = (None, None)
                if cid in scope:
                    tsv, length = self.words.row(text, scope[cid])
                params += [cid, rid, index, text, vector, tsv, length]
                queued += vector is not None
                if length is not None:
                    indexed, tokens = indexed + 1, tokens + length
            self.execute_nowait(
                f"WITH v (cid, rid, i, text, vector, tsv, len) AS (VALUES"
                f" {','.join([one] * len(part))}),"
                f" c AS (INSERT INTO {t.chunks} (cid, rid, chunk_index, chunk_text, vector,"
                " user_id, record_type) SELECT v.cid, v.rid, v.i, v.text, v.vector, r.user_id,"
                f" r.record_type FROM v JOIN {t.records} r ON r.rid = v.rid"
                " RETURNING cid, vector, user_id),"
                f" q AS (INSERT INTO {t.ann_queue} (cid) SELECT cid FROM c"
                " WHERE vector IS NOT NULL)"
                f" INSERT INTO {t.kw} (cid, rid, user_id, tsv, tsv_len) SELECT v.cid, v.rid,"
                " c.user_id, v.tsv, v.len FROM v JOIN c ON c.cid = v.cid WHERE v.tsv IS NOT NULL",
                params,
            )
        if self._hand_totals:
            self._move_totals(indexed, tokens)
        self._local.queued = getattr(self._local, "queued", 0) + queued

    def transaction(self, shared: bool = False) -> AbstractContextManager[None]:
        """A write under the store's advisory lock: ``shared`` for ordinary writes, which
        lock what they change (record rows, seq marks, pending rows, :meth:`lock_scope`
        keys); exclusive only for store-wide ones (migrations, re-embedding, ...; see
        docs/scaling.md). ``lock_timeout`` bounds every wait (``session_settings``) but the
        exclusive lock's."""
        return self._write(_SHARED_LOCK if shared else _EXCLUSIVE_LOCK)

    def opening(self) -> AbstractContextManager[None]:
        """The store lock in shared mode, waited for however long store-wide work holds it
        (a migration another node runs); ordinary writes do not hold it up."""
        return self._write(_PATIENT_SHARED_LOCK)

    @contextmanager
    def _write(self, take: str) -> Iterator[None]:
        if self.read_only:
            raise ReadOnlyStoreError()
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        self._local.queued = 0
        self.change_log.begin()
        try:
            with self._bound(take, [self._lock_key]):
                try:
                    yield
                except BaseException:
                    self.change_log.end(committing=False)
                    raise
                changed = self.change_log.touched()
                self.change_log.end(committing=True)  # the log row goes out with the commit
        except psycopg.errors.UniqueViolation as exc:
            raise as_clash(exc) from exc
        except psycopg.errors.InsufficientPrivilege as exc:
            raise refused_by_database(exc) from exc
        except RETRYABLE as exc:  # lock_timeout, deadlock, serialization: nothing written
            raise lock_timed_out(exc) from exc
        queued, self._local.queued = self._local.queued, 0
        self.indexer.wrote(queued, current_end_user(), changed)

    def reads_beside(self) -> bool:
        return getattr(self._local, "conn", None) is None and current_end_user() is None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self._bound():
            yield

    @contextmanager
    def _bound(self, first: str | None = None, params: Sequence[Any] = ()) -> Iterator[None]:
        """A pooled connection in one pipelined transaction, bound to this thread for the
        statements inside: ``first`` (a lock) runs first, then the end user's role is set
        (``_as_end_user``); both go out with the first statement, so an end user without
        a role is reported (PermissionError) by whichever statement reads a result first.
        A write (``first`` given) with a read replica notes where its commit ended."""
        lsn = None
        try:
            with (
                (self._pool if first is not None else self._reading()).connection() as conn,
                conn.pipeline() if _PIPELINE else nullcontext() as pipeline,
            ):
                with conn.transaction():
                    if first is not None:
                        conn.execute(first, list(params))
                    _as_end_user(conn)
                    self._local.conn, self._local.pipeline = conn, pipeline
                    try:
                        yield
                    finally:
                        self._local.conn = self._local.pipeline = None
                if first is not None and self.replica is not None:
                    lsn = conn.execute(replicas.LSN_AFTER_COMMIT)  # after the COMMIT
            if lsn is not None and self.replica is not None:
                row = lsn.fetchone()
                self.replica.wrote(row[0] if row else None)
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            raise ReadOnlyStoreError() from exc
        except psycopg.errors.InvalidParameterValue as exc:
            raise missing_role(exc) from exc
        except psycopg.errors.InsufficientPrivilege as exc:  # a read, e.g. one search
            raise refused_by_database(exc) from exc

    def lock_scope(self, key: str) -> None:
        # The two-int4 key space is apart from the store lock's one-bigint key.
        self.execute("SELECT pg_advisory_xact_lock(?::int4, hashtext(?))", [self._scope_key, key])

    def chunks_leaving(self, chunk_ids: Sequence[int]) -> None:
        for table in (self.tables.ann_queue, self.tables.ann) if chunk_ids else ():
            self.execute(f"DELETE FROM {table} WHERE cid = ANY(?)", [list(chunk_ids)])

    def note_changed(self, rids: Sequence[int] | None) -> None:
        self.change_log.note(rids)
        if rids is None:  # vectors change in place: every chunk goes back in the queue
            for stmt in ann.requeue_all_sql(
                self.tables.ann, self.tables.ann_queue, self.tables.chunks
            ):
                self.execute(stmt)

    # ------------------------------------------------------------ the approximate index

    def _ann_batch(self, limit: int, wait: bool = False) -> int:
        """One indexer transaction (see ``_postgres_ann``); 0 when another runs (with
        ``wait``: after waiting for it)."""
        t = self.tables
        with self._pool.connection() as conn, conn.transaction():
            _as_end_user(conn)  # under row security: the rows this user may index
            if not self._ann_locks(conn, wait):
                return 0
            row = conn.execute(
                self._q(ann.batch_sql(t.ann, t.ann_queue, t.chunks)), [limit]
            ).fetchone()
        return int(row[0]) if row else 0

    def _ann_locks(self, conn: psycopg.Connection[Any], wait: bool = False) -> bool:
        """Inside an indexer transaction: the indexer's lock (False: another indexer runs;
        with ``wait``, waited for), then the store's in shared mode, as a plain insert takes
        it. Writes that delete or replace chunks take that one exclusively, so they never
        wait on a batch's queue rows while it waits on their chunk rows (a deadlock)."""
        if wait:  # behind another indexer's batch or graph build, however long it takes
            conn.execute("SET LOCAL lock_timeout = 0")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [self._ann_key])
        else:
            got = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", [self._ann_key])
            row = got.fetchone()
            if not row or not row[0]:
                return False
        conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", [self._lock_key])
        return True

    def _ann_bulk(self, wait: bool = False) -> bool:
        """Index a long queue with one graph build; False when it is not long enough (or
        another indexer's batch runs and ``wait`` is false)."""
        t = self.tables
        with self._pool.connection() as conn:
            with conn.transaction():
                _as_end_user(conn)
                if not self._owns(conn, t.ann) or not self._ann_locks(conn, wait):
                    return False  # only the owner rebuilds the graph
                counts = conn.execute(
                    f"SELECT (SELECT COUNT(*) FROM {t.ann_queue}), (SELECT COUNT(*) FROM {t.ann})"
                ).fetchone()
                assert counts is not None
                if counts[0] < ann.BULK_ROWS or counts[0] <= counts[1]:
                    return False
                move, build = ann.bulk_statements(t.ann, t.ann_queue, t.chunks, self.ann_index)
                for stmt in move:
                    conn.execute(stmt)
            conn.execute(f"SET maintenance_work_mem = '{ann.BUILD_MEMORY}'")
            try:
                conn.execute(build)
            finally:
                conn.execute("RESET maintenance_work_mem")
        return True

    def _analyze_tables(self, run: bool) -> float | None:
        """For the indexer's statistics: see :func:`_postgres_ann.analyze`."""
        t = self.tables
        with self._pool.connection() as conn:
            return ann.analyze(conn, [t.records, t.chunks, t.kw], run)

    @staticmethod
    def _owns(conn: psycopg.Connection[Any], table: str) -> bool:
        """Whether the current role may act as ``table``'s owner."""
        row = conn.execute(
            "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = %s::regclass",
            [table],
        ).fetchone()
        return bool(row and row[0])

    def note_schema_version(self, version: int) -> None:
        self._version = version
        self.change_log.enabled = version >= 12

    @property
    def _hand_totals(self) -> bool:
        """Whether writes move the keyword totals themselves (a schema older than 11, opened
        without upgrading); from 11 on the keyword rows' triggers do."""
        return getattr(self, "_version", 11) < 11

    def _qualified(self, *names: str) -> list[str]:
        """This store's objects named with their schema (the current one when none is set)."""
        schema = self.schema or str(self.execute("SELECT current_schema()")[0][0])
        return [f"{schema}.{name.rsplit('.', 1)[-1]}" for name in names]

    def opened(self) -> None:
        if self.read_only:  # a standby: the primary's indexer fills the graph
            return
        # Chunks another process (or a crash) left in the queue are indexed without waiting
        # for this store's own writes. A schema older than 8 (NO_CHECK) has no queue. The
        # records changed since their last ANALYZE (by any process: a load that closed
        # before its statistics ran) count as this store's own (``_postgres_ann``).
        queued = (
            f"EXISTS (SELECT 1 FROM {self.tables.ann_queue})"
            if getattr(self, "_version", 0) >= 8
            else "false"
        )
        row = self.execute(
            f"SELECT {queued}, (SELECT n_mod_since_analyze FROM pg_stat_all_tables"
            " WHERE relid = to_regclass(?))",
            [self.tables.records],
        )[0]
        if row[0]:
            self.indexer.kick(current_end_user())
        self.indexer.wrote(0, None, int(row[1] or 0))

    def ann_backlog(self) -> int:
        """Chunks written but not yet in the approximate index."""
        return int(self.execute(f"SELECT COUNT(*) FROM {self.tables.ann_queue}")[0][0])

    def ann_catch_up(self) -> None:
        """Index everything queued now, in this thread (benchmarks, tests, after a load)."""
        self.indexer.drain()

    def managed_objects(self) -> list[str]:
        names = {t.rsplit(".", 1)[-1]: t for t in self.tables.all() if not t.endswith("_fts")}
        rows = self.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = COALESCE(?, current_schema()) AND table_name = ANY(?)",
            [self.schema, list(names)],
        )
        return sorted(names[name] for (name,) in rows)

    deletes_leave_bytes = True

    def vacuum(self) -> list[str]:
        # VACUUM FULL writes each table (its TOAST table and indexes too) to new files and
        # drops the old ones: no dead row stays in a page (a plain VACUUM leaves the bytes of
        # the rows it frees in place). ANALYZE replaces the statistics sampled from them.
        tables = self.managed_objects()
        if tables:
            with self._conn() as conn:
                conn.execute(f"VACUUM (FULL, ANALYZE) {', '.join(tables)}")
        return tables

    def managed_sequences(self) -> list[str]:
        """This store's id sequences that exist."""
        rows = self.execute(
            "SELECT sequence_name FROM information_schema.sequences"
            " WHERE sequence_schema = COALESCE(?, current_schema()) AND sequence_name = ANY(?)",
            [self.schema, [f"{self._prefix}_rid_seq", f"{self._prefix}_cid_seq"]],
        )
        qualify = f"{self.schema}." if self.schema else ""
        return sorted(f"{qualify}{name}" for (name,) in rows)

    def migrate(self, from_version: int, to_version: int) -> None:
        from oracleagentmemory.core.store.engines.postgres._postgres_migrate import migrate

        migrate(self, from_version, to_version)

    def _has_index(self, name: str) -> bool:
        sql, params = self._index_probe(name)
        return bool(self.execute(f"SELECT {sql}", params)[0][0])

    def _index_probe(self, name: str) -> tuple[str, list[Any]]:
        # One catalog lookup by oid (to_regclass), not a scan of the pg_indexes view: writes
        # of a store without the keyword index ask this each time (StoreCore.keyword_on_write).
        return (
            "EXISTS (SELECT 1 FROM pg_class WHERE relkind = 'i' AND oid = to_regclass("
            "quote_ident(COALESCE(?, current_schema())) || '.' || quote_ident(?)))",
            [self.schema, name],
        )

    def new_layout(self) -> str | None:
        return citus.new_layout(self.execute)

    def lay_out(self, layout: str) -> None:
        citus.lay_out(self, layout)

    def use_layout(self, layout: str | None) -> None:
        super().use_layout(layout)
        citus.adopt(self, layout)  # the Citus statements from now on

    def drop_all(self) -> None:
        for name in (*self.tables.all(), citus.record_ids_table(self.tables)):
            if not name.endswith("_fts"):
                self.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
        self.execute(f"DROP SEQUENCE IF EXISTS {self.rid_seq}, {self.cid_seq}")
        # The functions of the keyword totals' triggers and of row security (core.deepsec).
        t = self.tables
        self.execute(
            f"DROP FUNCTION IF EXISTS {t.kw_totals_move}(), {t.kw_documents}(text[]),"
            f" {t.thread_open_to}(text, text)"
        )

    def enable_vectors(self, dim: int) -> None:
        t = self.tables
        self.execute(f"ALTER TABLE {t.chunks} ALTER COLUMN vector TYPE vector({int(dim)})")
        self._enable_ann(dim)

    def _enable_ann(self, dim: int) -> None:
        """The approximate index's side table typed for ``dim`` dimensions, with its graph
        (pgvector's HNSW serves only typed columns)."""
        t = self.tables
        self.execute(f"ALTER TABLE {t.ann} ALTER COLUMN vector TYPE vector({int(dim)})")
        self.execute(
            f"CREATE INDEX IF NOT EXISTS {self._prefix}_ann_hnsw ON {t.ann}"
            " USING hnsw (vector vector_cosine_ops)"
        )

    def resize_vectors(self, dim: int) -> None:
        self.execute(f"DELETE FROM {self.tables.ann}")
        self.execute(f"DROP INDEX IF EXISTS {self.ann_index}")
        self.enable_vectors(dim)

    def has_keyword_index(self) -> bool:
        return self._has_index(f"{self._prefix}_kw_tsv")

    def keyword_index_probe_sql(self) -> tuple[str, list[Any]] | None:
        return self._index_probe(f"{self._prefix}_kw_tsv")

    def create_keyword_index(self, rebuild: bool = True) -> None:
        self.execute(
            f"CREATE INDEX IF NOT EXISTS {self._prefix}_kw_tsv ON {self.tables.kw} USING gin (tsv)"
        )
        if rebuild:
            self.keyword_index_rebuild()

    def keyword_index_add(self, rows: Sequence[KeywordRow]) -> None:
        keyword_rows.add(self, rows)

    def _move_totals(self, rows: int, tokens: int) -> None:
        keyword_rows.move_totals(self, rows, tokens)

    def keyword_index_remove(self, chunk_ids: Sequence[int]) -> None:
        keyword_rows.remove(self, chunk_ids)

    def keyword_index_rebuild(self) -> None:
        keyword_rows.rebuild(self)

    def keyword_scores(
        self,
        terms: list[str],
        exact: Mapping[str, str | None],
        local: LocalScores | None = None,
    ) -> Sequence[tuple[int, float]] | None:
        # FTS5's BM25 (see _postgres_words), with the statistics of what the caller may see.
        return keyword_rows.keyword_scores(self, terms, exact, local)

    def keyword_hits_sql(
        self, terms: list[str], exact: Mapping[str, str | None]
    ) -> tuple[str, list[Any]]:
        raise NotImplementedError("PostgreSQL ranks keyword queries itself (keyword_scores)")

    def id_list(self, ids: Sequence[int]) -> tuple[str, Any]:
        return "unnest(?::bigint[]) AS j (value) JOIN", list(ids)

    def neighbour_rows_sql(self, rids: Sequence[int], before: int, after: int) -> tuple[str, Any]:
        # The planner reorders joins and, before a table's statistics are gathered, started
        # from a thread's messages and probed the hits by thread for each (O(n^2): 220 ms on
        # a 600-message thread). LATERAL subqueries with OFFSET 0 are never pulled up: each
        # listed record by key, then its neighbours through the thread index, then each
        # neighbour's record by key.
        t = self.tables
        sql = (
            "FROM (SELECT DISTINCT n.rid FROM unnest(?::bigint[]) AS j (value)"
            f" CROSS JOIN LATERAL (SELECT thread_id, seq_no FROM {t.records}"
            " WHERE rid = j.value OFFSET 0) h CROSS JOIN LATERAL (SELECT m.rid"
            f" FROM {t.records} m WHERE m.thread_id = h.thread_id AND m.family = 'message'"
            " AND m.seq_no BETWEEN h.seq_no - ? AND h.seq_no + ? OFFSET 0) n) nb"
            f" CROSS JOIN LATERAL (SELECT * FROM {t.records} k WHERE k.rid = nb.rid OFFSET 0) r"
            f" JOIN {t.chunks} c ON c.rid = r.rid WHERE TRUE"
        )
        return sql, [list(rids), before, after]

    def compile_filter(self, flt: dict[str, Any], column: str) -> tuple[str, list[Any]]:
        from oracleagentmemory.core.store.engines.postgres._filters_postgres import (
            compile_postgres_filter,
        )

        return compile_postgres_filter(flt, column, getattr(self, "_version", None))

    def json_as_text(self, column: str) -> str:
        # psycopg would decode json with the recursive json module; text is decoded by the
        # store, which also copes with values deeper than Python's recursion limit.
        return f"{column}::text AS {column.rsplit('.', 1)[-1]}"

    def vector_to_db(self, vector: NDArray[np.float32]) -> Any:
        return PgVector(np.asarray(vector, dtype=np.float32))

    def vector_read_sql(self, column: str) -> str:
        # pgvector's binary form (the type's send function) as bytea: 90 us a 384-dimension
        # row less to parse than its text, and the server does not print the floats.
        return f"vector_send({column})"

    def vectors_from_db(self, blobs: Sequence[Any], dim: int) -> NDArray[np.float32]:
        if blobs and not isinstance(blobs[0], str):
            return vectors_from_send(blobs, dim)
        return vectors_from_text(blobs, dim)

    def cosine_distance_sql(self, column: str) -> str:
        return f"({column} <=> ?::vector)"

    def execute_vector_query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        # The graph scan must look at least as far as the candidates asked for (pgvector
        # 0.6 returns at most ef_search rows), and further on a larger graph (see
        # ``ef_search_sql``). The setting is the transaction's own (a pooler in transaction
        # mode may give the next transaction another server connection).
        ef_sql, ef_params = self.ef_search_sql(int(params[-1]))
        with self._conn() as conn:
            if getattr(self._local, "conn", None) is not None:  # inside a transaction
                conn.execute(ef_sql, ef_params)
                return conn.execute(self._q(sql), list(params)).fetchall()
            # BEGIN, the setting, the query and COMMIT go out together (one round trip).
            with conn.pipeline() if _PIPELINE else nullcontext(), conn.transaction():
                conn.execute(ef_sql, ef_params)
                cur = conn.execute(self._q(sql), list(params))
            return cur.fetchall()

    def ef_search_sql(self, limit: int) -> tuple[str, list[Any]]:
        """See :func:`_postgres_ann.ef_search_sql`."""
        return ann.ef_search_sql(self.tables.ann, limit)

    def ann_candidates_sql(self) -> str:
        """See :func:`_postgres_ann.candidates_sql`."""
        t = self.tables
        return ann.candidates_sql(t.ann, t.ann_queue, t.chunks, self.cosine_distance_sql)

    def close(self) -> None:
        self.indexer.stop()
        if self.replica is not None:
            self.replica.close()
        self._let_go()  # the store's own pool closed, or the shared one released (once)


class _NoLock(nullcontext[None]):
    """A reentrant no-op lock for pool mode."""

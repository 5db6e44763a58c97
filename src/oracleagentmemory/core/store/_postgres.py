"""The PostgreSQL dialect: psycopg 3, jsonb metadata, tsvector + GIN, pgvector + HNSW.

A ``postgresql://`` URL opens a connection pool owned by the store; a caller's
``psycopg_pool.ConnectionPool`` serves concurrent callers; a caller's ``psycopg.Connection``
names the database, and the store opens its own pool to it (the caller may close theirs
whenever it likes). Every write transaction takes a
transaction-scoped advisory lock for the store, so writers (threads or processes) queue
instead of racing on ids and ``seq_no``.
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store._dialect import Dialect, KeywordRow, Tables

try:  # the [postgres] extra
    import psycopg
    import psycopg_pool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "PostgreSQL support needs the postgres extra: pip install 'oracleagentmemory[postgres]'"
    ) from exc

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
TEXT_SEARCH_CONFIG = "english"
"""PostgreSQL text-search configuration: English stemming and stop words."""

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {records} (
            rid BIGINT PRIMARY KEY,
            family TEXT NOT NULL,
            record_type TEXT NOT NULL,
            id TEXT NOT NULL,
            content TEXT,
            role TEXT,
            seq_no BIGINT,
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            event_ts TEXT,
            created_at TEXT NOT NULL,
            metadata JSONB,
            status TEXT NOT NULL DEFAULT 'valid',
            expires_at DOUBLE PRECISION,
            extra JSONB,
            UNIQUE (family, id)
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_records_type ON {records} (record_type, rid)",
        "CREATE INDEX IF NOT EXISTS {p}_records_thread ON {records} (thread_id, family, seq_no)",
        "CREATE INDEX IF NOT EXISTS {p}_records_user ON {records} (user_id, family)",
        "CREATE INDEX IF NOT EXISTS {p}_records_agent ON {records} (agent_id, family)",
        "CREATE INDEX IF NOT EXISTS {p}_records_expiry ON {records} (expires_at)"
        " WHERE expires_at IS NOT NULL",
        """CREATE TABLE IF NOT EXISTS {chunks} (
            cid BIGINT PRIMARY KEY,
            rid BIGINT NOT NULL,
            chunk_index INTEGER NOT NULL,
            chunk_text TEXT,
            vector vector,
            tsv tsvector
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_chunks_rid ON {chunks} (rid)",
    ],
    2: [
        "CREATE TABLE IF NOT EXISTS {blobs} (rid BIGINT PRIMARY KEY, data BYTEA NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {relations} (
            id TEXT PRIMARY KEY,
            source_record_id TEXT NOT NULL,
            source_record_type TEXT NOT NULL,
            target_record_id TEXT NOT NULL,
            target_record_type TEXT NOT NULL,
            relation_type TEXT NOT NULL,
            opposite_relation_type TEXT NOT NULL,
            timestamp TEXT,
            metadata JSONB,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_relations_source"
        " ON {relations} (source_record_type, source_record_id)",
        "CREATE INDEX IF NOT EXISTS {p}_relations_target"
        " ON {relations} (target_record_type, target_record_id)",
    ],
    3: [
        """CREATE TABLE IF NOT EXISTS {sources} (
            rid BIGINT NOT NULL,
            message_id TEXT NOT NULL,
            PRIMARY KEY (rid, message_id)
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_sources_message ON {sources} (message_id)",
        """CREATE TABLE IF NOT EXISTS {pending} (
            id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL,
            payload TEXT NOT NULL,
            owner TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )""",
    ],
    4: [
        "ALTER TABLE {records} ADD COLUMN IF NOT EXISTS ttl_days INTEGER",
        "CREATE TABLE IF NOT EXISTS {seq} (thread_key TEXT PRIMARY KEY, last_seq BIGINT NOT NULL)",
        "INSERT INTO {seq} (thread_key, last_seq) SELECT COALESCE(thread_id, ''), MAX(seq_no)"
        " FROM {records} WHERE family = 'message' GROUP BY COALESCE(thread_id, '')"
        " ON CONFLICT (thread_key) DO NOTHING",
    ],
    5: [],  # SQLite's user-word table is made with the keyword index
    6: [],  # ... and keyed by record in SQLite
    # The owner of every thread id (see _threads): the thread row's user where there is one,
    # else the user of the first record naming the thread.
    7: [
        "CREATE TABLE IF NOT EXISTS {owners} (thread_id TEXT PRIMARY KEY, user_id TEXT,"
        " agent_id TEXT)",
        "CREATE INDEX IF NOT EXISTS {p}_thread_owners_user ON {owners} (user_id)",
        "INSERT INTO {owners} (thread_id, user_id, agent_id) SELECT t.id, t.user_id, t.agent_id"
        " FROM {records} t WHERE t.family = 'thread'"
        " ON CONFLICT (thread_id) DO NOTHING",
        "INSERT INTO {owners} (thread_id, user_id, agent_id) SELECT r.thread_id, r.user_id,"
        " r.agent_id FROM {records} r WHERE r.rid IN (SELECT MIN(rid) FROM {records}"
        " WHERE thread_id IS NOT NULL GROUP BY thread_id)"
        " ON CONFLICT (thread_id) DO NOTHING",
    ],
}


def check_identifier(value: str, name: str) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ValueError(
            f"{name} must be an unquoted SQL identifier (a letter or underscore, then letters, "
            f"digits or underscores, at most 63 characters); got {value!r}"
        )
    return value.lower()


_SHARED: dict[tuple[str, str | None], list[Any]] = {}
"""Pools the stores of this process opened for callers' connections, by database and
search_path: ``[pool, stores using it]``. A web app that builds a client on a new connection
for every request shares one pool instead of opening one per request."""
_SHARED_LOCK = threading.Lock()


def _shared_pool_like(conn: psycopg.Connection[Any]) -> tuple[Any, tuple[str, str | None]]:
    """A pool of the stores' own to the database ``conn`` is connected to, as its user and
    with its current ``search_path`` (shared with other stores of this process on the same
    database), and the key to release it with."""
    info = conn.info
    conninfo = psycopg.conninfo.make_conninfo(info.dsn, password=info.password or None)
    idle = info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    row = conn.execute("SELECT current_setting('search_path')").fetchone()
    search_path = str(row[0]) if row else None
    if idle and not conn.autocommit:
        conn.rollback()  # leave the caller's connection as it was: outside a transaction
    key = (conninfo, search_path)
    with _SHARED_LOCK:
        entry = _SHARED.get(key)
        if entry is None or entry[0].closed:

            def configure(pooled: psycopg.Connection[Any]) -> None:
                if search_path:
                    pooled.execute("SELECT set_config('search_path', %s, false)", [search_path])

            pool = psycopg_pool.ConnectionPool(
                conninfo, min_size=1, max_size=8, kwargs={"autocommit": True},
                configure=configure, open=True,
            )
            entry = _SHARED[key] = [pool, 0]
        entry[1] += 1
        return entry[0], key


def _release_shared(key: tuple[str, str | None]) -> None:
    """One store stopped using a shared pool; the last one closes it."""
    with _SHARED_LOCK:
        entry = _SHARED.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _SHARED[key]
            pool = entry[0]
        else:
            return
    pool.close()


class PostgresDialect(Dialect):
    """PostgreSQL engine for one store."""

    IS = "IS NOT DISTINCT FROM"
    IS_NOT = "IS DISTINCT FROM"
    native_vector_search = True

    def __init__(self, connection: Any, prefix: str, schema: str | None = None) -> None:
        self._owned = False
        self._release: weakref.finalize[Any, Any] | None = None
        if isinstance(connection, str):
            if not connection.startswith(("postgresql://", "postgres://")):
                raise ValueError("connection must be a postgresql:// URL")
            self._pool: Any = psycopg_pool.ConnectionPool(
                connection, min_size=1, max_size=8, kwargs={"autocommit": True}, open=True
            )
            self._owned = True
        elif isinstance(connection, psycopg_pool.ConnectionPool):
            self._pool = connection
        elif isinstance(connection, psycopg.Connection):
            # The caller may close its connection once its own work is done (after a web
            # request, say): the store uses a pool of its own to the same database, with the
            # same search_path, and never touches the caller's connection again.
            self._pool, key = _shared_pool_like(connection)
            self._release = weakref.finalize(self, _release_shared, key)
        else:
            raise TypeError(
                "connection must be a postgresql:// URL, a psycopg Connection or a "
                "psycopg_pool.ConnectionPool"
            )
        self.schema = schema
        self.tables = Tables(prefix.lower(), schema)
        self._prefix = prefix.lower()
        self._local = threading.local()
        digest = hashlib.blake2b(f"{schema}.{self._prefix}".encode(), digest_size=8).digest()
        self._lock_key = int.from_bytes(digest, "big", signed=True)

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
            sources=t.sources,
            pending=t.pending,
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
        with self._pool.connection() as conn:
            yield conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            cur = conn.execute(self._q(sql), list(params))
            return cur.fetchall() if cur.description else []

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(self._q(sql), [list(r) for r in rows])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [self._lock_key])
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self._pool.connection() as conn, conn.transaction():
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    def managed_objects(self) -> list[str]:
        names = {t.rsplit(".", 1)[-1]: t for t in self.tables.all() if not t.endswith("_fts")}
        rows = self.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = COALESCE(?, current_schema()) AND table_name = ANY(?)",
            [self.schema, list(names)],
        )
        return sorted(names[name] for (name,) in rows)

    def migrate(self, from_version: int, to_version: int) -> None:
        if from_version == 0 and self.schema:
            exists = self.execute("SELECT 1 FROM pg_namespace WHERE nspname = ?", [self.schema])
            if not exists:  # IF NOT EXISTS would still need CREATE on the database
                self.execute(f"CREATE SCHEMA {self.schema}")
        for version in range(from_version + 1, to_version + 1):
            for stmt in _MIGRATIONS[version]:
                self.execute(self._fmt(stmt))

    def drop_all(self) -> None:
        for name in self.tables.all():
            if not name.endswith("_fts"):
                self.execute(f"DROP TABLE IF EXISTS {name} CASCADE")

    def enable_vectors(self, dim: int) -> None:
        t = self.tables
        self.execute(f"ALTER TABLE {t.chunks} ALTER COLUMN vector TYPE vector({int(dim)})")
        # HNSW keeps unfiltered search sub-linear; scoped queries are served exactly through
        # the scope indexes when the planner finds that cheaper.
        self.execute(
            f"CREATE INDEX IF NOT EXISTS {self._prefix}_chunks_hnsw ON {t.chunks}"
            " USING hnsw (vector vector_cosine_ops)"
        )

    def resize_vectors(self, dim: int) -> None:
        index = f"{self._prefix}_chunks_hnsw"
        self.execute(f"DROP INDEX IF EXISTS {f'{self.schema}.{index}' if self.schema else index}")
        self.enable_vectors(dim)

    def has_keyword_index(self) -> bool:
        rows = self.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = COALESCE(?, current_schema())"
            " AND indexname = ?",
            [self.schema, f"{self._prefix}_chunks_tsv"],
        )
        return bool(rows)

    def create_keyword_index(self) -> None:
        self.execute(
            f"CREATE INDEX IF NOT EXISTS {self._prefix}_chunks_tsv ON {self.tables.chunks}"
            " USING gin (tsv)"
        )
        self.keyword_index_rebuild()

    def keyword_index_add(self, rows: Sequence[KeywordRow]) -> None:
        if rows:
            self.execute(
                f"UPDATE {self.tables.chunks} SET tsv = to_tsvector('{TEXT_SEARCH_CONFIG}',"
                " chunk_text) WHERE cid = ANY(?)",
                [[row[0] for row in rows]],
            )

    def keyword_index_remove(self, chunk_ids: Sequence[int]) -> None:
        """Nothing to do: the index lives in the chunk rows the store deletes."""

    def keyword_index_rebuild(self) -> None:
        self.execute(
            f"UPDATE {self.tables.chunks} SET tsv = CASE WHEN chunk_text IS NULL OR"
            f" chunk_text = '' THEN NULL ELSE to_tsvector('{TEXT_SEARCH_CONFIG}', chunk_text) END"
        )

    def keyword_hits_sql(
        self, terms: list[str], exact: Mapping[str, str | None]
    ) -> tuple[str, list[Any]]:
        # The planner combines the GIN index with the scope indexes by itself.
        query = " | ".join("'" + t.replace("'", "") + "'" for t in terms)
        sql = (
            f"SELECT c.cid, ts_rank_cd(c.tsv, q) AS score FROM {self.tables.chunks} c,"
            f" to_tsquery('{TEXT_SEARCH_CONFIG}', ?) q WHERE c.tsv @@ q"
        )
        return sql, [query]

    def compile_filter(self, flt: dict[str, Any], column: str) -> tuple[str, list[Any]]:
        from oracleagentmemory.core.store._filters_postgres import compile_postgres_filter

        return compile_postgres_filter(flt, column)

    def json_as_text(self, column: str) -> str:
        # psycopg would decode jsonb with the recursive json module; text is decoded by the
        # store, which also copes with values deeper than Python's recursion limit.
        return f"{column}::text AS {column.rsplit('.', 1)[-1]}"

    def vector_to_db(self, vector: NDArray[np.float32]) -> Any:
        return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"

    def vectors_from_db(self, blobs: Sequence[Any], dim: int) -> NDArray[np.float32]:
        rows = [np.array(str(b).strip("[]").split(","), dtype=np.float32) for b in blobs]
        return np.stack(rows) if rows else np.empty((0, dim), dtype=np.float32)

    def cosine_distance_sql(self, column: str) -> str:
        return f"({column} <=> ?::vector)"

    def execute_vector_query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        limit = int(params[-1])
        with self._conn() as conn, conn.transaction():
            # Let the HNSW scan look at least as far as the candidates we ask for.
            conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(100, 2 * limit))}")
            cur = conn.execute(self._q(sql), list(params))
            return cur.fetchall()

    def close(self) -> None:
        if self._owned:
            self._pool.close()
        elif self._release is not None:
            self._release()  # once: the finalizer then does nothing


class _NoLock(nullcontext[None]):
    """A reentrant no-op lock for pool mode."""

"""The SQLite dialect: stdlib ``sqlite3``, JSON1 for metadata, FTS5 for keyword search."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from oracleagentmemory.core.store._dialect import Dialect, KeywordRow, Tables
from oracleagentmemory.core.store._keyword import exact_scope_tokens, scope_tokens

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {records} (
            rid INTEGER PRIMARY KEY,
            family TEXT NOT NULL,
            record_type TEXT NOT NULL,
            id TEXT NOT NULL,
            content TEXT,
            role TEXT,
            seq_no INTEGER,
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            event_ts TEXT,
            created_at TEXT NOT NULL,
            metadata TEXT,
            status TEXT NOT NULL DEFAULT 'valid',
            expires_at REAL,
            extra TEXT,
            UNIQUE (family, id)
        )""",
        "CREATE INDEX IF NOT EXISTS {records}_type ON {records} (record_type, rid)",
        "CREATE INDEX IF NOT EXISTS {records}_thread ON {records} (thread_id, family, seq_no)",
        "CREATE INDEX IF NOT EXISTS {records}_user ON {records} (user_id, family)",
        "CREATE INDEX IF NOT EXISTS {records}_agent ON {records} (agent_id, family)",
        "CREATE INDEX IF NOT EXISTS {records}_expiry ON {records} (expires_at)"
        " WHERE expires_at IS NOT NULL",
        """CREATE TABLE IF NOT EXISTS {chunks} (
            cid INTEGER PRIMARY KEY,
            rid INTEGER NOT NULL,
            chunk_index INTEGER NOT NULL,
            chunk_text TEXT,
            vector BLOB
        )""",
        "CREATE INDEX IF NOT EXISTS {chunks}_rid ON {chunks} (rid)",
    ],
    2: [
        # Image bytes live apart from records so listing never drags them along.
        "CREATE TABLE IF NOT EXISTS {blobs} (rid INTEGER PRIMARY KEY, data BLOB NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {relations} (
            id TEXT PRIMARY KEY,
            source_record_id TEXT NOT NULL,
            source_record_type TEXT NOT NULL,
            target_record_id TEXT NOT NULL,
            target_record_type TEXT NOT NULL,
            relation_type TEXT NOT NULL,
            opposite_relation_type TEXT NOT NULL,
            timestamp TEXT,
            metadata TEXT,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS {relations}_source"
        " ON {relations} (source_record_type, source_record_id)",
        "CREATE INDEX IF NOT EXISTS {relations}_target"
        " ON {relations} (target_record_type, target_record_id)",
    ],
    3: [
        # Provenance of extracted memories (rid of the memory, id of a source message).
        """CREATE TABLE IF NOT EXISTS {sources} (
            rid INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            PRIMARY KEY (rid, message_id)
        )""",
        "CREATE INDEX IF NOT EXISTS {sources}_message ON {sources} (message_id)",
        # Accepted extraction work, written with the messages it covers.
        """CREATE TABLE IF NOT EXISTS {pending} (
            id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL,
            payload TEXT NOT NULL,
            owner TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )""",
    ],
}


def open_sqlite(connection: Any) -> tuple[sqlite3.Connection, bool]:
    """Return (connection, owned). Accepts a path, ``sqlite:///path``, ``:memory:`` or a
    ``sqlite3.Connection`` (used as is, in autocommit mode; the caller keeps ownership)."""
    if isinstance(connection, sqlite3.Connection):
        connection.isolation_level = None
        return connection, False
    if isinstance(connection, os.PathLike):
        connection = os.fspath(connection)
    if not isinstance(connection, str) or not connection:
        raise TypeError(
            "connection must be a file path, 'sqlite:///path', ':memory:' or a sqlite3.Connection"
        )
    if connection.startswith("sqlite:///"):
        connection = connection[len("sqlite:///") :] or ":memory:"
    if connection != ":memory:":
        Path(connection).expanduser().parent.mkdir(parents=True, exist_ok=True)
        connection = str(Path(connection).expanduser())
    conn = sqlite3.connect(connection, timeout=30.0, isolation_level=None, check_same_thread=False)
    return conn, True


class SQLiteDialect(Dialect):
    """SQLite engine for one store; every call is serialised by the store's lock."""

    def __init__(self, connection: Any, prefix: str) -> None:
        self.conn, self._owned = open_sqlite(connection)
        self.tables = Tables(prefix)
        self._lock = threading.RLock()
        if self._owned:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA busy_timeout=30000")
        self._data_version = self._read_data_version()
        self._missed_foreign_write = False
        self.conn.create_function("oam_scope_tokens", 3, scope_tokens, deterministic=True)

    def _fmt(self, sql: str) -> str:
        t = self.tables
        return sql.format(
            meta=t.meta,
            records=t.records,
            chunks=t.chunks,
            fts=t.fts,
            blobs=t.blobs,
            relations=t.relations,
            sources=t.sources,
            pending=t.pending,
        )

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        # BEGIN IMMEDIATE takes the write lock up front: concurrent writers (threads or
        # processes) queue here instead of failing mid-transaction, so seq_no allocation
        # (read max, then insert) cannot interleave.
        self.conn.execute("BEGIN IMMEDIATE")
        # Another connection may have committed after the store last looked; remember it
        # before our own commit moves data_version on, or that write would go unnoticed.
        if self._read_data_version() != self._data_version:
            self._missed_foreign_write = True
        changes = self.conn.total_changes
        try:
            yield
            if self.conn.total_changes != changes:  # only real writes move the state stamp
                self._bump_generation()
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self._data_version = self._read_data_version()

    def _bump_generation(self) -> None:
        """Count committed writes, so an index snapshot can tell whether it is current."""
        with contextlib.suppress(sqlite3.OperationalError):  # no managed schema (yet)
            self.conn.execute(
                self._fmt(
                    "UPDATE {meta} SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
                )
            )

    def state_stamp(self) -> str | None:
        try:
            rows = dict(
                self.conn.execute(
                    self._fmt(
                        "SELECT key, value FROM {meta} WHERE key IN ('instance', 'generation')"
                    )
                ).fetchall()
            )
        except sqlite3.OperationalError:
            return None
        if len(rows) != 2:
            return None
        return f"{rows['instance']}:{rows['generation']}"

    def index_snapshot_dir(self) -> Path | None:
        rows = self.conn.execute("PRAGMA database_list").fetchall()
        main = next((r[2] for r in rows if r[1] == "main"), "")
        if not main:  # an in-memory or temporary database
            return None
        return Path(main + "-oam-index") / self.tables.prefix

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def _read_data_version(self) -> int:
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def changed_externally(self) -> bool:
        current = self._read_data_version()
        changed = current != self._data_version or self._missed_foreign_write
        self._data_version = current
        self._missed_foreign_write = False
        return changed

    def managed_objects(self) -> list[str]:
        names = set(self.tables.all())
        rows = self.execute("SELECT name FROM sqlite_master WHERE type IN ('table')")
        return sorted(name for (name,) in rows if name in names)

    def migrate(self, from_version: int, to_version: int) -> None:
        for version in range(from_version + 1, to_version + 1):
            for stmt in _MIGRATIONS[version]:
                self.conn.execute(self._fmt(stmt))

    def drop_all(self) -> None:
        for name in self.tables.all():
            self.conn.execute(f'DROP TABLE IF EXISTS "{name}"')

    def has_keyword_index(self) -> bool:
        if self.tables.fts not in self.managed_objects():
            return False
        columns = [r[1] for r in self.execute(f"PRAGMA table_info({self.tables.fts})")]
        return "scope" in columns  # an index without scope tokens is rebuilt

    def create_keyword_index(self) -> None:
        # A regular (content-holding) FTS5 table keyed by chunk id: deletes by rowid stay
        # safe even for rows that MANUAL sync mode never indexed. The scope column holds one
        # token per scope value (see _keyword.scope_token), so the engine itself narrows a
        # scoped query.
        self.conn.execute(self._fmt("DROP TABLE IF EXISTS {fts}"))
        self.conn.execute(
            self._fmt(
                "CREATE VIRTUAL TABLE {fts} USING fts5("
                "chunk_text, scope, tokenize='porter unicode61 remove_diacritics 2')"
            )
        )
        self.keyword_index_rebuild()

    def keyword_index_add(self, rows: Sequence[KeywordRow]) -> None:
        if rows:
            self.conn.executemany(
                self._fmt("INSERT INTO {fts} (rowid, chunk_text, scope) VALUES (?, ?, ?)"),
                [(cid, text, scope_tokens(u, a, t)) for cid, text, u, a, t in rows],
            )

    def keyword_index_remove(self, chunk_ids: Sequence[int]) -> None:
        if chunk_ids:
            self.conn.executemany(
                self._fmt("DELETE FROM {fts} WHERE rowid = ?"), [(c,) for c in chunk_ids]
            )

    def keyword_index_rebuild(self) -> None:
        self.conn.execute(self._fmt("DELETE FROM {fts}"))
        self.conn.execute(
            self._fmt(
                "INSERT INTO {fts} (rowid, chunk_text, scope) SELECT c.cid, c.chunk_text,"
                " oam_scope_tokens(r.user_id, r.agent_id, r.thread_id) FROM {chunks} c"
                " JOIN {records} r ON r.rid = c.rid"
                " WHERE c.chunk_text IS NOT NULL AND c.chunk_text != ''"
            )
        )

    def keyword_hits_sql(
        self, terms: list[str], exact: Mapping[str, str | None]
    ) -> tuple[str, list[Any]]:
        words = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        match = f"chunk_text : ({words})"
        for token in exact_scope_tokens(exact):
            match += f' AND scope : "{token}"'
        # bm25() is lower-is-better (negative); negate it so higher = better everywhere.
        # The scope column gets weight 0: it filters, it does not rank.
        sql = self._fmt(
            "SELECT rowid AS cid, -bm25({fts}, 1.0, 0.0) AS score FROM {fts} WHERE {fts} MATCH ?"
        )
        return sql, [match]

    def compile_filter(self, flt: dict[str, Any], column: str) -> tuple[str, list[Any]]:
        from oracleagentmemory.core.store._filters_sqlite import compile_sqlite_filter

        return compile_sqlite_filter(flt, column)

    def close(self) -> None:
        if self._owned:
            self.conn.close()

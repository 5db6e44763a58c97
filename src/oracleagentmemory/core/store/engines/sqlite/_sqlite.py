"""The SQLite dialect: stdlib ``sqlite3``, JSON1 for metadata, FTS5 for keyword search."""

from __future__ import annotations

import itertools
import logging
import os
import re
import sqlite3
import struct
import threading
from collections.abc import Iterator, Mapping, Sequence, Set as AbstractSet
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from oracleagentmemory.core.store._dialect import Dialect, KeywordRow, LocalScores, Tables
from oracleagentmemory.core.store._files import (
    PRIVATE_FILE,
    create_database_file,
    open_lock_file,
    side_file_mode,
)
from oracleagentmemory.core.store.engines.sqlite._sqlite_schema import MIGRATIONS
from oracleagentmemory.core.store.engines.sqlite._sqlite_words import TOKENIZE, UserWords
from oracleagentmemory.core.store.search._hybrid import KEYWORD_SPAN
from oracleagentmemory.core.store.search._keyword import exact_scope_tokens, scope_tokens

try:  # POSIX: writers queue on a lock file instead of SQLite's sleeping busy handler
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("oracleagentmemory")

EVERYTHING = 2**62
"""A logged range (0, EVERYTHING) means every row changed: readers rebuild."""
LOG_KEEP_GENERATIONS = 100_000
"""Committed writes the change log remembers; a process further behind rebuilds its index."""
LOG_PRUNE_EVERY = 1_000
CHECKPOINT_EVERY = 64
"""Commits of one connection between its passive WAL checkpoints."""
WAL_GROWTH_BYTES = 16 * 2**20
"""WAL growth (large transactions) that triggers a checkpoint sooner."""
MMAP_BYTES = 2**40
"""Memory-map size asked for; SQLite lowers it to its compile-time maximum."""
WAL_RESTART_BYTES = 64 * 2**20
"""A WAL larger than this is rewound (a RESTART checkpoint) after the next commit."""


def rid_ranges(rids: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted rids folded into inclusive (first, last) runs."""
    out: list[tuple[int, int]] = []
    for rid in sorted(set(rids)):
        if out and rid == out[-1][1] + 1:
            out[-1] = (out[-1][0], rid)
        else:
            out.append((rid, rid))
    return out


def database_file(conn: sqlite3.Connection) -> str:
    """The file of a connection's main database ('' for an in-memory or temporary one)."""
    for _seq, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file or "")
    return ""


def open_sqlite(connection: Any) -> tuple[sqlite3.Connection, bool]:
    """Return (connection, owned). Accepts a path, ``sqlite:///path``, ``:memory:`` or a
    ``sqlite3.Connection``.

    A caller's connection names a database; the caller keeps it, and may close it whenever
    its own work is done (after a web request, say). So the store opens its own connection to
    the same file and never touches the caller's again. Only an in-memory database, which no
    second connection can reach, is used through the caller's connection (switched to
    autocommit; see :attr:`SQLiteDialect.borrowed`)."""
    if isinstance(connection, sqlite3.Connection):
        path = database_file(connection)
        if not path:
            connection.isolation_level = None
            return connection, False
        connection = path
    if isinstance(connection, os.PathLike):
        connection = os.fspath(connection)
    if not isinstance(connection, str) or not connection:
        raise TypeError(
            "connection must be a file path, 'sqlite:///path', ':memory:' or a sqlite3.Connection"
        )
    if connection.startswith("sqlite:///"):
        connection = connection[len("sqlite:///") :] or ":memory:"
    if connection != ":memory:":
        connection = str(Path(connection).expanduser())
        if Path(connection).is_dir():
            raise sqlite3.OperationalError(
                f"cannot open SQLite database {connection!r}: it is a folder"
            )
        try:  # created 0600 (its folders 0700) before SQLite opens it: see _files
            create_database_file(connection)
        except OSError as exc:
            raise sqlite3.OperationalError(
                f"cannot open SQLite database {connection!r}: cannot create it or its folder "
                f"({exc.strerror or exc})"
            ) from exc
    try:
        conn = sqlite3.connect(
            connection, timeout=30.0, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        message = f"cannot open SQLite database {connection!r}: {exc}"
        raise sqlite3.OperationalError(message) from exc
    return conn, True


def sqlite_file(connection: Any) -> Path | None:
    """The database file a path-like connection names (None: in memory, or a connection)."""
    if isinstance(connection, os.PathLike):
        connection = os.fspath(connection)
    if not isinstance(connection, str) or not connection:
        return None
    if connection.startswith("sqlite:///"):
        connection = connection[len("sqlite:///") :]
    if connection in ("", ":memory:") or connection.startswith("file:"):
        return None
    return Path(connection).expanduser()


def require_database_file(connection: Any) -> None:
    """Refuse to open a store on a file that does not exist, before anything is created:
    a store that must exist (``REQUIRE_EXISTING``) never leaves an empty file behind."""
    path = sqlite_file(connection)
    if path is not None and not path.exists():
        from oracleagentmemory.core.store.schema._schema import SchemaError

        raise SchemaError(
            f"no SQLite database file at {str(path)!r}; open it with "
            "schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to create one"
        )


class SQLiteDialect(Dialect):
    """SQLite engine for one store; every call is serialised by the store's lock."""

    keyword_span = KEYWORD_SPAN  # FTS5 BM25 units (see _hybrid.KEYWORD_SPAN)

    def __init__(self, connection: Any, prefix: str) -> None:
        self.conn, self._owned = open_sqlite(connection)
        self.borrowed = not self._owned
        self.tables = Tables(prefix)
        self._lock = threading.RLock()
        if self._owned:
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.DatabaseError as exc:  # e.g. "file is not a database"
                name = database_file(self.conn)
                self.conn.close()
                raise sqlite3.DatabaseError(f"cannot open SQLite database {name!r}: {exc}") from exc
            self.conn.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints run after the write lock is released (see transaction()), not
            # inside the commit that happens to cross the threshold.
            self.conn.execute("PRAGMA wal_autocheckpoint=0")
            self.conn.execute(f"PRAGMA journal_size_limit={64 * 2**20}")
            # Reads go through a memory map (SQLite caps it at its build's limit, 2 GiB by
            # default): a search that touches a few hundred scattered rows of a large file
            # costs no read() call per page.
            self.conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        self.conn.execute("PRAGMA busy_timeout=30000")
        # Deleted content is overwritten with zeros in the file, not left on free pages
        # (every attached database, the temporary one included; see docs/guides/forgetting).
        self.conn.execute("PRAGMA secure_delete=ON")
        self._data_version = self._read_data_version()
        self._missed_foreign_write = False
        self._commits = 0
        self._wal_mark = 0
        self._wal_file: str | None = None
        self._lock_file: int | bool | None = False  # False: not opened yet
        self._shared_key: Any = False  # False: not looked up yet
        self._change_log: bool | None = None
        self._keyword_index_known: tuple[int, bool] | None = None
        """(schema cookie, whether the keyword index exists) when last asked."""
        self.tx_base_generation: int | None = None
        self.committed_generation: int | None = None
        self._tx_rids: list[int] = []
        self._tx_everything = False
        tx_state = (
            "SELECT (SELECT data_version FROM pragma_data_version()),"
            " (SELECT value FROM {meta} WHERE key = 'generation'), "
        )
        self._sql = {  # formatted once: a write runs each of these
            "log_gen": self._fmt("SELECT MAX(gen) FROM {changes}"),
            "set_gen": self._fmt("UPDATE {meta} SET value = ? WHERE key = 'generation'"),
            "log": self._fmt("INSERT INTO {changes} (gen, rids) VALUES (?, ?)"),
            # (data_version, meta generation, newest logged generation or NULL)
            "tx_state": self._fmt(tx_state + "NULL"),
            "tx_state_log": self._fmt(tx_state + "(SELECT MAX(gen) FROM {changes})"),
        }
        self.conn.create_function("oam_scope_tokens", 3, scope_tokens, deterministic=True)
        """(search, ``data_version``) as the search's catch-up of the vector index read it."""
        self.words = UserWords(
            self.conn, self.tables, self.database_file(), version=self.data_version_now
        )

    def _fmt(self, sql: str) -> str:
        t = self.tables
        return sql.format(
            meta=t.meta,
            records=t.records,
            chunks=t.chunks,
            fts=t.fts,
            blobs=t.blobs,
            relations=t.relations,
            seq=t.seq,
            owners=t.owners,
            changes=t.changes,
            sources=t.sources,
            pending=t.pending,
            words_fts=t.words_fts,
            history=t.history,
        )

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    @contextmanager
    def transaction(self, shared: bool = False) -> Iterator[None]:
        # Writers (threads or processes) queue on the lock file, then BEGIN IMMEDIATE takes
        # SQLite's write lock up front, so seq_no allocation (read max, then insert) cannot
        # interleave. The kernel wakes the next waiter at once, where SQLite's busy handler
        # would sleep and poll (which caps many writers at a few hundred commits a second).
        self.check_end_user()  # SQLite has no roles: refused inside an end-user scope
        fd = self._lock_fd()
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # _writer_lock(), inlined on this per-write path
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            # Another connection may have committed since the store last looked: remember
            # it, or that write would go unnoticed once this store's own commit is known.
            version, self.tx_base_generation = self._read_tx_state()
            if version != self._data_version:
                self._missed_foreign_write = True
            self._tx_rids = []
            self._tx_everything = False
            changes = self.conn.total_changes
            committed = self.tx_base_generation
            self._writing = True
            try:
                yield
                if self.conn.total_changes != changes and committed is not None:
                    committed += 1  # only real writes move the generation
                    self._log_commit(committed)
            except BaseException:
                self.conn.execute("ROLLBACK")
                self._keyword_index_known = None  # the cookie read inside may be undone
                raise
            finally:
                self._writing = False
            self.conn.execute("COMMIT")
        finally:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
        self.committed_generation = committed
        # A connection's own commits leave its data_version as it was, so the value read
        # under the write lock is the one after this commit; reading it again now could
        # swallow a commit another process made since the lock was released.
        self._data_version = version
        self._checkpoint_now_and_then()

    def _checkpoint_now_and_then(self) -> None:
        """Move the WAL into the database every CHECKPOINT_EVERY commits, or sooner when it
        grew by WAL_GROWTH_BYTES: a PASSIVE checkpoint, after the write lock is released,
        copies what it can without blocking writers or readers (SQLite's own automatic
        checkpoint would run inside a commit and stall every other writer meanwhile)."""
        if not self._owned:
            return  # a caller's connection keeps SQLite's automatic checkpoints
        self._commits += 1
        if self._wal_file is None:
            main = self.database_file()
            self._wal_file = f"{main}-wal" if main else ""
        try:
            size = os.stat(self._wal_file).st_size if self._wal_file else 0
        except OSError:
            size = 0
        if self._commits % CHECKPOINT_EVERY == 0 or size > self._wal_mark + WAL_GROWTH_BYTES:
            self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._wal_mark = size
        if size > WAL_RESTART_BYTES:
            # Readers of other processes keep using the WAL, so passive checkpoints alone
            # never get to start it over and it grows without bound. A RESTART waits for
            # those readers (short transactions) and rewinds it; taken under the writers'
            # lock file, it runs when little is left to copy and no writer waits long.
            with self._writer_lock():
                self.conn.execute("PRAGMA wal_checkpoint(RESTART)")
            self._wal_mark = 0

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        fd = self._lock_fd()
        if fd is None:
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def shared_writes_key(self) -> Any:
        # A file this store opened: writes are the same on any connection to it (a caller's
        # connection keeps its own, as may an in-memory database).
        if self._shared_key is False:
            self._shared_key = None
            if self._owned and self._lock_fd() is not None:
                path = self.database_file()
                self._shared_key = None if path is None else ("sqlite", os.path.realpath(path))
        return self._shared_key

    def _lock_fd(self) -> int | None:
        """The lock file beside the database (None: in memory, read-only, or no fcntl)."""
        if self._lock_file is False:
            path = self.database_file()
            self._lock_file = None
            if path is not None and fcntl is not None:
                try:
                    self._lock_file = open_lock_file(path + "-oam-lock", path)
                except OSError:
                    self._lock_file = None
        return self._lock_file

    def note_changed(self, rids: Sequence[int] | None) -> None:
        """Record rids this transaction wrote (None: every row, e.g. re-embedded vectors)."""
        if rids is None:
            self._tx_everything = True
        else:
            self._tx_rids.extend(rids)

    def _log_commit(self, generation: int) -> None:
        """Record the new generation: one change-log row with the rid ranges this
        transaction touched (stores without a log move the meta row instead)."""
        if not self._has_change_log():
            self.conn.execute(self._sql["set_gen"], (str(generation),))
            return
        ranges = [(0, EVERYTHING)] if self._tx_everything else rid_ranges(self._tx_rids)
        packed = struct.pack(f"<{2 * len(ranges)}q", *itertools.chain.from_iterable(ranges))
        self.conn.execute(self._sql["log"], (generation, packed))
        if generation % LOG_PRUNE_EVERY == 0 and generation > LOG_KEEP_GENERATIONS:
            self.conn.execute(
                self._fmt("DELETE FROM {changes} WHERE gen <= ?"),
                (generation - LOG_KEEP_GENERATIONS,),
            )

    def _has_change_log(self) -> bool:
        if self._change_log is None:
            self._change_log = self.tables.changes in self.managed_objects()
        return self._change_log

    def _read_tx_state(self) -> tuple[int, int | None]:
        """(data_version, committed generation) in one statement, inside a write."""
        log = self._change_log  # unknown (None) until the schema has been seen
        try:
            row = self.conn.execute(self._sql["tx_state_log" if log else "tx_state"]).fetchone()
        except sqlite3.OperationalError:  # no managed schema (yet)
            return self._read_data_version(), None
        version, value, logged = row
        if value is None:
            return int(version), None
        generation = int(value)
        if log is None and self._has_change_log():  # first write: the log was not known
            logged = self.conn.execute(self._sql["log_gen"]).fetchone()[0]
        return int(version), max(generation, int(logged or 0))

    def read_state(self) -> tuple[str, int, int] | None:
        """(instance, generation, log floor) of the committed state, or None; the log holds
        every generation above the floor."""
        try:
            meta = dict(
                self.conn.execute(
                    self._fmt(
                        "SELECT key, value FROM {meta} WHERE key IN ('instance', 'generation')"
                    )
                ).fetchall()
            )
        except sqlite3.OperationalError:
            return None
        if "instance" not in meta or "generation" not in meta:
            return None
        generation = int(meta["generation"])
        floor = generation
        if self._has_change_log():
            # Two subqueries: SQLite answers a lone MIN or MAX from the rowid B-tree at once,
            # but scans the whole table for both in one SELECT.
            low, high = self.conn.execute(
                self._fmt(
                    "SELECT (SELECT MIN(gen) FROM {changes}), (SELECT MAX(gen) FROM {changes})"
                )
            ).fetchone()
            if high is not None and int(high) > generation:
                generation, floor = int(high), max(floor, int(low) - 1)
        return meta["instance"], generation, floor

    def changes_since(
        self, generation: int, upto: int, skip: AbstractSet[int] = frozenset()
    ) -> list[tuple[int, int]] | None:
        """The rid ranges written in generations (generation, upto] except those in ``skip``,
        or None when the log cannot tell (it lacks them, or a write touched everything)."""
        if not self._has_change_log():
            return None
        ranges: list[tuple[int, int]] = []
        for gen, packed in self.conn.execute(
            self._fmt("SELECT gen, rids FROM {changes} WHERE gen > ? AND gen <= ?"),
            (generation, upto),
        ).fetchall():
            pairs = np.frombuffer(packed, dtype="<i8").reshape(-1, 2).tolist()
            if any(lo <= 0 for lo, _ in pairs):
                return None
            if gen not in skip:
                ranges += [(lo, hi) for lo, hi in pairs]
        return ranges

    def state_stamp(self) -> str | None:
        state = self.read_state()
        return None if state is None else f"{state[0]}:{state[1]}"

    def database_file(self) -> str | None:
        """The main database file, or None for an in-memory or temporary database."""
        rows = self.conn.execute("PRAGMA database_list").fetchall()
        main = next((r[2] for r in rows if r[1] == "main"), "")
        return main or None

    def index_snapshot_dir(self) -> Path | None:
        main = self.database_file()
        if main is None:  # an in-memory or temporary database
            return None
        return Path(main + "-oam-index") / self.tables.prefix.lower()

    def side_file_mode(self) -> int:
        main = self.database_file()
        return PRIVATE_FILE if main is None else side_file_mode(main)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        self.check_end_user()  # SQLite has no roles: refused inside an end-user scope
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

    def data_version_now(self) -> int:
        """``PRAGMA data_version``, read now: the keyword counts are keyed by the state
        their own statements read (a search runs outside a transaction, so a commit may land
        between its vector branch and its keyword branch)."""
        return self._read_data_version()

    def changed_externally(self) -> bool:
        current = self._read_data_version()
        changed = current != self._data_version or self._missed_foreign_write
        self._data_version = current
        self._missed_foreign_write = False
        return changed

    def managed_objects(self) -> list[str]:
        # SQLite names are case-insensitive: "Tenant_meta" is the table "tenant_meta".
        names = {name.lower(): name for name in self.tables.all()}
        rows = self.execute("SELECT name FROM sqlite_master WHERE type IN ('table')")
        return sorted(names[name.lower()] for (name,) in rows if name.lower() in names)

    def migrate(self, from_version: int, to_version: int) -> None:
        for version in range(from_version + 1, to_version + 1):
            for stmt in MIGRATIONS[version]:
                sql = self._fmt(stmt)
                added = re.fullmatch(r"ALTER TABLE (\S+) ADD COLUMN (\w+) .*", sql, re.DOTALL)
                if added and added.group(2) in {
                    row[1] for row in self.conn.execute(f"PRAGMA table_info({added.group(1)})")
                }:
                    continue  # SQLite has no ADD COLUMN IF NOT EXISTS
                self.conn.execute(sql)
        self.words.forget()

    def drop_all(self) -> None:
        for name in self.tables.all():
            self.conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        self.words.forget()

    def has_keyword_index(self) -> bool:
        # Asked by every write of a store without one: the answer is kept until the schema
        # cookie moves (any process creating or dropping a table moves it).
        cookie = int(self.conn.execute("PRAGMA schema_version").fetchone()[0])
        known = self._keyword_index_known
        if known is not None and known[0] == cookie:
            return known[1]
        exists = self.tables.fts in self.managed_objects()
        if exists:
            columns = [r[1] for r in self.execute(f"PRAGMA table_info({self.tables.fts})")]
            exists = "scope" in columns  # an index without scope tokens is rebuilt
        self._keyword_index_known = (cookie, exists)
        return exists

    def create_keyword_index(self) -> None:
        self._keyword_index_known = None
        # A regular (content-holding) FTS5 table keyed by chunk id: deletes by rowid stay
        # safe even for rows that MANUAL sync mode never indexed. The scope column holds one
        # token per scope value (see _keyword.scope_token), so the engine itself narrows a
        # scoped query. Beside it, the user-word table (see _sqlite_words).
        self.conn.execute(self._fmt("DROP TABLE IF EXISTS {fts}"))
        self.conn.execute(
            self._fmt(
                f"CREATE VIRTUAL TABLE {{fts}} USING fts5(chunk_text, scope, tokenize='{TOKENIZE}')"
            )
        )
        self.words.create()
        self.keyword_index_rebuild()

    def complete_keyword_index(self) -> None:
        if not self.words.exists():  # stores made before the user-word table
            self.words.create()
            self.words.rebuild()

    def keyword_index_complete(self) -> bool:
        return self.words.exists()

    def keyword_index_add(self, rows: Sequence[KeywordRow]) -> None:
        if rows:
            self.conn.executemany(
                self._fmt("INSERT INTO {fts} (rowid, chunk_text, scope) VALUES (?, ?, ?)"),
                [(cid, text, scope_tokens(u, a, t)) for cid, _, _, text, u, a, t in rows],
            )
            self.words.add(rows)

    def keyword_index_remove(self, chunk_ids: Sequence[int]) -> None:
        if chunk_ids:
            self.conn.executemany(
                self._fmt("DELETE FROM {fts} WHERE rowid = ?"), [(c,) for c in chunk_ids]
            )
            self.words.remove(chunk_ids)

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
        self.words.rebuild()

    keyword_hits_scoped = True

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

    def note_schema_version(self, version: int) -> None:
        self.words.legacy = version < 6

    def keyword_scores(
        self,
        terms: list[str],
        exact: Mapping[str, str | None],
        local: LocalScores | None = None,  # SQLite's scores come from FTS5 in process already
    ) -> Sequence[tuple[int, float]] | None:
        # A user-scoped query reads that user's postings only, and ranks with the statistics
        # of that user's rows (see _sqlite_words): nothing another user writes moves its
        # scores. Other exact scopes are applied by the store's join. Inside a write (FTS5
        # holds its newest rows in memory) or for a phrase, the user's matches in the main
        # table are scored in process. Unscoped, agent- or thread-only: FTS5's bm25().
        if "user" not in exact:
            return None
        user = exact["user"]
        got = None if self._writing else self.words.scores(terms, user)
        return self.words.scoped_scores(terms, user) if got is None else got

    def compile_filter(self, flt: dict[str, Any], column: str) -> tuple[str, list[Any]]:
        from oracleagentmemory.core.store.engines.sqlite._filters_sqlite import (
            compile_sqlite_filter,
        )

        return compile_sqlite_filter(flt, column)

    def forget_inside(self) -> None:
        # An FTS5 delete only adds a delete marker (the term again) in a new segment: the
        # old segments keep the term until merged. 'optimize' merges each index into one
        # segment, and secure_delete zeroes the pages the old ones held.
        for table in (self.tables.fts, self.tables.words_fts):
            if table in self.managed_objects():
                bare = table.rsplit(".", 1)[-1]
                self.conn.execute(f"INSERT INTO {table} ({bare}) VALUES ('optimize')")

    def forget_after(self) -> None:
        # The WAL still holds the pages as they were before the delete: copied into the
        # database (whose copy is the zeroed one) and the file truncated to nothing. Readers
        # of other processes are waited for (busy_timeout); a still-busy WAL is logged.
        if str(self.conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            return
        with self._writer_lock():
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        self._wal_mark = 0
        if busy:
            log.warning(
                "the WAL of %s could not be truncated after a delete (busy)", self.database_file()
            )

    def vacuum(self) -> list[str]:
        self.conn.execute("VACUUM")
        self.forget_after()
        return [self.database_file() or ":memory:"]

    def close(self) -> None:
        if isinstance(self._lock_file, int) and not isinstance(self._lock_file, bool):
            os.close(self._lock_file)
        self._lock_file = None
        if self._owned:
            self.conn.close()

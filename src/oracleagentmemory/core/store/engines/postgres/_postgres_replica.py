"""PostgreSQL read replicas: the pools a store opens, where a read goes, read-your-writes.

A store given ``read_connection`` (a hot standby of its primary: same forms as
``connection``) sends its routed reads (``Dialect.routed_read``: searches, gets, lists) to
the standby once the standby's replay has reached the last commit this store made
(read-your-writes, per store, so per client that opened it); else to the primary. After
every write transaction the dialect notes the primary's WAL insert position
(``pg_current_wal_insert_lsn()``, asked after the COMMIT on the same connection: the commit
record is inserted by then, flushed or not). A read compares it with the standby's replay
position, cached: the standby is asked (``pg_last_wal_replay_lsn()``) only while it is
behind what this store wrote, at most every ``RECHECK_S``. A standby that cannot be
reached, or a read it cancels (a recovery conflict), sends that read to the primary; a
standby that could not be reached is left alone for ``DOWN_S``.

Reads that need less than the store's last commit say so (:class:`Need`, set by
``Dialect.reads_as_of_now``): an extraction job's reads need what its store had committed
when the job began (its messages, the results of the jobs before it), so the standby serves
them while the client's later writes are still replaying; writes the job makes in its own
context raise what it needs.

Writes, and reads inside a write transaction, stay on the primary (the transaction's
connection is bound); so do reads pinned with ``Dialect.primary_reads`` (the in-process
user cache: its watermark is the primary's, see ``search/_user_vectors``). The same
transaction setup (the end user's role, ``_as_end_user``) runs on either server.

A store opened on a standby itself (``pg_is_in_recovery()``) is read-only:
:func:`in_recovery` tells the dialect, which then refuses every write with
:class:`~oracleagentmemory.core.store._dialect.ReadOnlyStoreError`.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg
import psycopg_pool

from oracleagentmemory.core.store.engines.postgres._postgres_connect import (
    _release_shared,
    _shared_pool_like,
    check_reachable,
    session_settings,
)

T = TypeVar("T")
log = logging.getLogger("oracleagentmemory.store")

RECHECK_S = 0.005
"""While the standby is behind this store's last commit, how often a read asks it again
(reads in between go to the primary without asking)."""
DOWN_S = 5.0
"""How long a standby that could not be reached is left alone (reads go to the primary)."""
LSN_AFTER_COMMIT = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"
REPLAYED = "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint"


def open_pool(
    connection: Any, owner: object, what: str = "connection"
) -> tuple[Any, Callable[[], None]]:
    """A pool for ``connection`` (a ``postgresql://`` URL: a pool of the store's own; a
    ``psycopg_pool.ConnectionPool``: that one; a ``psycopg.Connection``: a pool shared with
    this process's other stores on its database, role and search_path) and how to let go
    of it when the store closes (once; a shared pool is also released when ``owner`` is
    collected)."""
    if isinstance(connection, str):
        if not connection.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"{what} must be a postgresql:// URL")
        check_reachable(connection)
        pool = psycopg_pool.ConnectionPool(
            connection,
            min_size=1,
            max_size=8,
            kwargs={"autocommit": True, **session_settings(connection)},  # lock/idle timeouts
            open=True,
        )
        close = weakref.finalize(owner, pool.close)
        close.atexit = False  # background work may still use it while the interpreter exits
        return pool, close
    if isinstance(connection, psycopg_pool.ConnectionPool):
        return connection, lambda: None
    if isinstance(connection, psycopg.Connection):
        # The caller may close its connection once its own work is done (after a web
        # request, say): the store uses a pool of its own to the same database, with the
        # same search_path, and never touches the caller's connection again.
        pool, key = _shared_pool_like(connection)
        return pool, weakref.finalize(owner, _release_shared, key)
    raise TypeError(
        f"{what} must be a postgresql:// URL, a psycopg Connection or a psycopg_pool.ConnectionPool"
    )


def in_recovery(pool: Any) -> bool:
    """Whether the server behind ``pool`` is a standby (``pg_is_in_recovery()``)."""
    with pool.connection() as conn:
        row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    return bool(row and row[0])


class Route:
    """Where the statements of one routed read go: ``replica`` (None: the primary), and
    whether any of them went there."""

    __slots__ = ("dialect", "replica", "used")

    def __init__(self, dialect: object, replica: ReadReplica | None) -> None:
        self.dialect = dialect
        self.replica = replica
        self.used = False


ROUTE: ContextVar[Route | None] = ContextVar("oam_read_route", default=None)
"""The routed read this context is in (``Dialect.routed_read``), if any."""


class Need:
    """The WAL position the routed reads of one context need of ``replica`` (instead of
    the store's last commit) while ``active``."""

    __slots__ = ("active", "lsn", "replica")

    def __init__(self, replica: ReadReplica, lsn: int) -> None:
        self.replica = replica
        self.lsn = lsn
        self.active = True

    def done(self) -> None:
        """From now on this context's reads need the store's last commit again."""
        self.active = False


NEED: ContextVar[Need | None] = ContextVar("oam_read_need", default=None)
"""What this context's routed reads need (``Dialect.reads_as_of_now``), if set."""


class WriteMark:
    """The WAL position after the last commit of the stores sharing it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.written = 0

    def note(self, lsn: int) -> None:
        with self._lock:
            self.written = max(self.written, lsn)


class ReadReplica:
    """A store's standby: its pool, the store's last commit, the standby's replay position
    as last seen, and how many routed reads each server served."""

    def __init__(self, connection: Any) -> None:
        self.pool, self._release = open_pool(connection, self, "read_connection")
        try:
            standby = in_recovery(self.pool)
        except BaseException:
            self._release()
            raise
        if not standby:
            self._release()
            raise ValueError(
                "read_connection must be a hot standby (read replica) of the primary: "
                "pg_is_in_recovery() is false there"
            )
        self._lock = threading.Lock()
        self.mark = WriteMark()
        """The WAL position after this store's last commit; stores that make one session
        (a server's clients of one process) share one (:meth:`share_writes`)."""
        self.replayed = 0
        """The standby's replay position when last asked."""
        self._asked_at = float("-inf")
        self._down_until = 0.0
        self.served = {"replica": 0, "primary": 0}
        """Routed reads each server answered (a read that failed over counts once)."""

    @property
    def written(self) -> int:
        """The WAL position after this store's last commit (bytes from 0/0; 0: none yet)."""
        return self.mark.written

    def wrote(self, lsn: Any) -> None:
        """A commit of this store ended at ``lsn`` (see :data:`LSN_AFTER_COMMIT`); reads of
        the committing context that need less (:data:`NEED`) now need it too."""
        if lsn is not None:
            self.mark.note(int(lsn))
            need = NEED.get()
            if need is not None and need.replica is self:
                need.lsn = max(need.lsn, int(lsn))

    def share_writes(self, other: ReadReplica) -> None:
        """Read this store's writes as ``other``'s too, and the other way round (one mark)."""
        self.mark = other.mark

    def caught_up(self, need: int | None = None) -> bool:
        """Whether a read may go to the standby now: it has replayed ``need`` (default:
        this store's last commit; asked at most every ``RECHECK_S`` while it is behind)."""
        now = time.monotonic()
        if now < self._down_until:
            return False
        target = self.written if need is None else need
        if target <= self.replayed:
            return True
        with self._lock:
            if now - self._asked_at < RECHECK_S:
                return target <= self.replayed
            self._asked_at = now
        try:
            with self.pool.connection(timeout=2.0) as conn:
                row = conn.execute(REPLAYED).fetchone()
        except psycopg.OperationalError as exc:
            self.failed(exc, down=True)
            return False
        with self._lock:
            if row and row[0] is not None:
                self.replayed = max(self.replayed, int(row[0]))
            return target <= self.replayed

    def failed(self, exc: BaseException, *, down: bool) -> None:
        """A read on the standby failed (``down``: it could not be reached)."""
        if down:
            self._down_until = time.monotonic() + DOWN_S
        log.warning("read replica: %s; reading from the primary", str(exc).split("\n")[0])

    def count(self, on_replica: bool) -> None:
        with self._lock:
            self.served["replica" if on_replica else "primary"] += 1

    def close(self) -> None:
        self._release()


def routed(dialect: object, replica: ReadReplica | None, read: Callable[[], T]) -> T:
    """``read`` with its statements sent to ``replica`` when it has caught up (see the
    module docstring), else to the primary; a read the standby fails runs again on the
    primary. ``replica`` None (none, or inside a transaction): the primary, uncounted."""
    if replica is None or ROUTE.get() is not None:  # inside a routed read: that one's route
        return read()
    need = NEED.get()
    if not replica.caught_up(
        need.lsn if need and need.active and need.replica is replica else None
    ):
        replica.count(False)
        return read()
    route = Route(dialect, replica)
    token = ROUTE.set(route)
    try:
        result = read()
    except psycopg.OperationalError as exc:  # the standby: gone, or a recovery conflict
        if not route.used:
            raise
        replica.failed(exc, down=unreachable(exc))
        route.replica = None
        result = read()  # on the primary
    finally:
        ROUTE.reset(token)
    replica.count(route.used and route.replica is not None)
    return result


def unreachable(exc: BaseException) -> bool:
    """Whether a failed read on the standby means it cannot be reached (not a conflict
    with recovery, which cancels one statement)."""
    return not isinstance(exc, psycopg.errors.TransactionRollback | psycopg.errors.QueryCanceled)

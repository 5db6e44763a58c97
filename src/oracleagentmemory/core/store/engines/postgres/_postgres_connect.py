"""PostgreSQL connections: the pools stores share for callers' connections, and opening a
connection that fails fast, in one line, when the server cannot be reached."""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import psycopg_pool

_SHARED: dict[tuple[str, str | None, str | None], list[Any]] = {}
"""Pools the stores of this process opened for callers' connections, by database,
search_path and role set: ``[pool, stores using it]``. A web app that builds a client on a
new connection for every request shares one pool instead of opening one per request."""
_SHARED_LOCK = threading.Lock()


def _shared_pool_like(
    conn: psycopg.Connection[Any],
) -> tuple[Any, tuple[str, str | None, str | None]]:
    """A pool of the stores' own to the database ``conn`` is connected to, as its user, with
    its current ``search_path`` and the role set on it (``SET ROLE``: an end user's, which
    row security then applies to), shared with other stores of this process on the same
    database, and the key to release it with."""
    info = conn.info
    conninfo = psycopg.conninfo.make_conninfo(info.dsn, password=info.password or None)
    idle = info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    row = conn.execute(
        "SELECT current_setting('search_path'), current_user, session_user"
    ).fetchone()
    search_path = str(row[0]) if row else None
    role = str(row[1]) if row and row[1] != row[2] else None
    if idle and not conn.autocommit:
        conn.rollback()  # leave the caller's connection as it was: outside a transaction
    key = (conninfo, search_path, role)
    with _SHARED_LOCK:
        entry = _SHARED.get(key)
        if entry is None or entry[0].closed:

            def configure(pooled: psycopg.Connection[Any]) -> None:
                if search_path:
                    pooled.execute("SELECT set_config('search_path', %s, false)", [search_path])
                if role:
                    pooled.execute("SELECT set_config('role', %s, false)", [role])

            pool = psycopg_pool.ConnectionPool(
                conninfo,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True},
                configure=configure,
                open=True,
            )
            entry = _SHARED[key] = [pool, 0]
        entry[1] += 1
        return entry[0], key


CONNECT_TIMEOUT_S = 10
"""How long opening a store waits for an unreachable server (unless the URL sets
``connect_timeout``)."""


def check_reachable(url: str) -> None:
    """Connect once before a pool is made, so an unreachable server fails in one clear
    :class:`ConnectionError` instead of a pool retrying in the background until its 30 s
    timeout."""
    connect_checked(url).close()


def connect_checked(url: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """A connection to ``url`` within :data:`CONNECT_TIMEOUT_S` (unless the URL sets
    ``connect_timeout``), or one :class:`ConnectionError` naming the host and the reason,
    never the password."""
    if "connect_timeout" not in url:
        kwargs.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    try:
        return psycopg.connect(url, **kwargs)
    except psycopg.Error as exc:
        parts = urlsplit(url)
        socket_dir = parse_qs(parts.query).get("host", [""])[0]
        host = parts.hostname or socket_dir or "localhost"
        where = f"{host}:{parts.port or 5432}{parts.path}"
        reason = " ".join(str(exc).split("\n")[0].split())
        raise ConnectionError(f"cannot connect to PostgreSQL at {where}: {reason}") from None


def _release_shared(key: tuple[str, str | None, str | None]) -> None:
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

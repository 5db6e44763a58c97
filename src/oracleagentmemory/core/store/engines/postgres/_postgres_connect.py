"""PostgreSQL connections: the pools stores share for callers' connections, and opening a
connection that fails fast, in one line, when the server cannot be reached."""

from __future__ import annotations

import os
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
                kwargs={"autocommit": True, **session_settings(conninfo)},
                configure=configure,
                open=True,
            )
            entry = _SHARED[key] = [pool, 0]
        entry[1] += 1
        return entry[0], key


LOCK_TIMEOUT_S = 5.0
"""How long a statement on the store's connections waits for a lock (row or advisory)
before it fails (``lock_timeout``; env ``OAM_PG_LOCK_TIMEOUT_SECONDS``, 0: forever)."""
IDLE_IN_TRANSACTION_TIMEOUT_S = 60.0
"""How long the server keeps a transaction open on a connection that sends nothing (a
frozen or half-dead client) before it ends the session and releases its locks
(``idle_in_transaction_session_timeout``; env ``OAM_PG_IDLE_TX_TIMEOUT_SECONDS``)."""
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
"""TCP keepalives: a peer gone without a word is noticed within about a minute."""


def _seconds(env: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(env, "") or default))
    except ValueError:
        return default


def session_settings(conninfo: str) -> dict[str, Any]:
    """The libpq parameters the connections a store opens get (keyword arguments of
    ``psycopg.connect``): :data:`LOCK_TIMEOUT_S`, :data:`IDLE_IN_TRANSACTION_TIMEOUT_S`
    and :data:`KEEPALIVES`, each only where ``conninfo`` (the URL) does not set it already,
    so a caller's explicit choice wins. A caller's own pool is used as configured."""
    try:
        given = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.Error:
        return {}
    out: dict[str, Any] = {k: v for k, v in KEEPALIVES.items() if k not in given}
    options = str(given.get("options") or "")
    extra = []
    for name, env, default in (
        ("lock_timeout", "OAM_PG_LOCK_TIMEOUT_SECONDS", LOCK_TIMEOUT_S),
        (
            "idle_in_transaction_session_timeout",
            "OAM_PG_IDLE_TX_TIMEOUT_SECONDS",
            IDLE_IN_TRANSACTION_TIMEOUT_S,
        ),
    ):
        if name not in options:
            extra.append(f"-c {name}={int(_seconds(env, default) * 1000)}")
    if extra:
        out["options"] = " ".join([options, *extra]).strip()
    return out


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

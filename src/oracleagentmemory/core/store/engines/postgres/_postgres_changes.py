"""PostgreSQL's change log: the records each committed write touched, for in-process caches.

A process that keeps some users' vectors in memory (``_user_vectors``) must see every write
any process commits. Writers do not take turns, so there is no generation to count: each
write transaction adds one row ``(xid, rids)`` (its transaction id, the records it touched;
NULL rids: every record, e.g. re-embedded vectors) in the same pipeline as its other
statements, no extra round trip. A reader that knows the snapshot its cache reflects asks,
in one statement, for the rows of transactions that snapshot did not see (those that began
after it or were running when it was taken) and for the snapshot of now: those rows are
exactly what was committed in between, whatever the commit order.

Writers prune rows older than ``KEEP_XIDS`` transactions now and then, and raise a floor in
the meta table: a cache older than the floor cannot tell what it missed and is rebuilt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from oracleagentmemory.core._shared._end_user import current_end_user

KEEP_XIDS = 200_000
"""Transactions (of the whole database) a change row is kept for."""
PRUNE_EVERY = 256
"""A process's logged commits between two of its prunes."""
FLOOR_KEY = "changes_floor"
"""Meta key: rows of transactions below this id may have been pruned."""


def grants_sql(
    execute: Callable[..., list[Any]], schema: str | None, tables: Any, version: int = 12
) -> list[str]:
    """GRANTs of a table a migration adds to the roles (other than the owner) granted the
    records, so a store shared before it keeps working: the change log (migration 12;
    readers read it, writers also add to it) or the memories' history (migration 15; the
    privileges each role has on the records)."""
    table, kinds = (
        (tables.changes, ("SELECT", "INSERT"))
        if version == 12
        else (tables.history, ("SELECT", "INSERT", "UPDATE", "DELETE"))
    )
    rows = execute(
        "SELECT grantee, privilege_type FROM information_schema.role_table_grants"
        " WHERE table_schema = COALESCE(?, current_schema()) AND table_name = ?"
        f" AND privilege_type IN ({', '.join(repr(k) for k in kinds)})"
        " AND grantee <> current_user",
        [schema, tables.records.rsplit(".", 1)[-1]],
    )
    out = []
    for role, privilege in rows:
        quoted = '"' + str(role).replace('"', '""') + '"'
        out.append(f"GRANT {privilege} ON {table} TO {quoted}")
    return out


def prune_sql(changes: str, meta: str) -> str:
    """Delete rows older than ``KEEP_XIDS`` transactions; raise the floor if any went."""
    return (
        "WITH b AS (SELECT GREATEST(pg_current_xact_id()::text::bigint - "
        f"{KEEP_XIDS}, 0) AS b), gone AS (DELETE FROM {changes}"
        " WHERE xid < (SELECT b FROM b)::text::xid8 RETURNING 1)"
        f" INSERT INTO {meta} (key, value) SELECT '{FLOOR_KEY}', b::text FROM b"
        " WHERE EXISTS (SELECT 1 FROM gone)"
        f" ON CONFLICT (key) DO UPDATE SET value = GREATEST({meta}.value::bigint,"
        " EXCLUDED.value::bigint)::text"
    )


def now_sql(meta: str) -> str:
    """``(snapshot, instance, floor)``: now's snapshot, the store's instance id (a store
    dropped and made again under the same name has another) and the floor."""
    return (
        f"SELECT pg_current_snapshot()::text, (SELECT value FROM {meta} WHERE key ="
        f" 'instance'), (SELECT value FROM {meta} WHERE key = '{FLOOR_KEY}')"
    )


_UNSEEN = (
    "({alias}.xid >= pg_snapshot_xmax(?::pg_snapshot)"
    " OR {alias}.xid = ANY(ARRAY(SELECT pg_snapshot_xip(?::pg_snapshot))))"
)
"""Transactions a snapshot (the two ``?``) did not see: those that began after it, and those
running when it was taken; as two index ranges (the transactions between its xmin and xmax
that it saw are never read: while a long transaction holds xmin back, they are many)."""


def since_sql(changes: str, meta: str) -> str:
    """:func:`now_sql`'s items, then the rows of transactions a snapshot (the two ``?``)
    did not see: ``(rids, everything)``; one row, NULLs there, when there are none."""
    return (
        f"SELECT n.*, c.rids, c.xid IS NOT NULL AND c.rids IS NULL FROM ({now_sql(meta)}) n"
        f" LEFT JOIN {changes} c ON {_UNSEEN.format(alias='c')}"
    )


def changed_where(changes: str) -> str:
    """A ``WHERE`` fragment (on chunks ``c``): the chunks of records written by transactions a
    snapshot (the two ``?``) did not see, of the users in an array (the third ``?``)."""
    return (
        f" AND c.rid IN (SELECT unnest(x.rids) FROM {changes} x"
        f" WHERE {_UNSEEN.format(alias='x')}) AND c.user_id = ANY(?::text[])"
    )


def snapshot_xmin(snapshot: str) -> int:
    """The lowest transaction id a ``pg_snapshot`` text (``xmin:xmax:xip,...``) may not see."""
    return int(snapshot.split(":", 1)[0])


class ChangeLog:
    """Collects what one write transaction touches (per thread) and logs it before commit."""

    def __init__(self, changes: str, meta: str, send: Callable[[str, Sequence[Any]], None]):
        self._insert = f"INSERT INTO {changes} (rids) VALUES (?::bigint[])"
        self._prune = prune_sql(changes, meta)
        self._send = send
        """Sends a statement without waiting for its result (in the write's pipeline)."""
        self._local = threading.local()
        self._logged = 0
        self.enabled = True
        """False for a schema older than 12 (opened without upgrading): no log to write."""

    # What a reader of the log asks (``search._user_vectors`` reaches them through the
    # dialect's ``change_log``, so the engine-neutral cache names no engine).
    since_sql = staticmethod(since_sql)
    changed_where = staticmethod(changed_where)
    now_sql = staticmethod(now_sql)
    snapshot_xmin = staticmethod(snapshot_xmin)

    def begin(self) -> None:
        self._local.rids = []
        self._local.everything = False
        self._local.open = True

    def note(self, rids: Sequence[int] | None) -> None:
        """Records a write touched (None: every record). Writes note inside their transaction
        (``keeper.write``), so the row commits with them; outside one it is logged at once."""
        if not getattr(self._local, "open", False):
            self._write(None if rids is None else list(rids))
            return
        if rids is None:
            self._local.everything = True
        else:
            self._local.rids.extend(rids)

    def touched(self) -> int:
        """Inside a write transaction: how many records it touched so far (every record:
        ``10**9``)."""
        if not getattr(self._local, "open", False):
            return 0
        return 10**9 if self._local.everything else len(self._local.rids)

    def end(self, committing: bool) -> None:
        """Inside the transaction, before its commit: log what it touched."""
        if not getattr(self._local, "open", False):
            return
        self._local.open = False
        if committing and (self._local.everything or self._local.rids):
            self._write(None if self._local.everything else self._local.rids)
        self._local.rids = []

    def _write(self, rids: list[int] | None) -> None:
        if not self.enabled:
            return
        self._send(self._insert, [None if rids is None else sorted(set(rids))])
        self.counted()

    def counted(self) -> None:
        """A row was logged (here, or by a statement of the write's own): now and then the
        log is pruned."""
        self._logged += 1
        # Pruning deletes and updates the meta row: the login role's work, not an end user's.
        if self._logged % PRUNE_EVERY == 0 and current_end_user() is None:
            self._send(self._prune, [])

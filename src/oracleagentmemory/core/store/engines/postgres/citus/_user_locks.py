"""Per-user write locks on the Citus layout (issue #50; docs/scaling.md, section 3).

On one node, ordinary writes take the store's advisory lock SHARED and order themselves with
row locks (``FOR UPDATE OF r``). Citus takes row locks only in a statement routed to one
shard, so on the layout an ordinary write takes, beside the store lock in shared mode, a
transaction-level advisory lock per user it touches, on the coordinator: keyed by the store
and the user (``''`` for rows without one), taken in one order (the key's) when a write
names its users up front. Writes of different users run beside each other; writes of one
user (so of one record) take turns. Store-wide work still takes the store lock
exclusively, which holds every user's lock at once.

A write names its users before it writes (:meth:`UserLocks.lock_users`: the records it
inserts, the records it links by id) or lets a locking read find them
(:meth:`UserLocks.locked_where`: the users of the rows a ``WHERE`` selects, locked, then the
selection confined to the users it holds, so a row whose user it does not hold is as if it
were not there yet). A write statement in a shared write that named no users is a
programming error (``RuntimeError``), so no write path runs unordered.

Advisory locks are per node: every write must go through the coordinator (the store checks
that it is connected to it when it opens, ``check_coordinator``).

Citus's own executor locks are turned off for the store's shared writes
(``citus.all_modifications_commutative``, set for the transaction): by default a multi-shard
UPDATE/DELETE (one that does not name ``shard_user``) takes a lock on every shard that two
such statements cannot share, held to the commit, outside the users' order, so two writes
of one user or of two users could wait on each other in a circle. Every row a shared write
changes belongs to a user it holds, so those locks order nothing the users' locks do not.
A write to a reference table (a copy on every node, where Citus's locks keep the copies
alike) runs with them on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from oracleagentmemory.core.store._dialect import TooManyUsers, chunked
from oracleagentmemory.core.store.engines.postgres._postgres import PostgresDialect
from oracleagentmemory.core.store.engines.postgres.citus._layout import (
    SHARD_COLUMN,
    record_ids_table,
    reference_tables,
)

_MODIFIES = re.compile(
    r"\s*(?:INSERT|UPDATE|DELETE)\b|\s*WITH\b.*\b(?:INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b",
    re.IGNORECASE | re.DOTALL,
)
"""A statement that changes rows (a plain one, or one with a data-changing CTE)."""
COMMUTATIVE = "citus.all_modifications_commutative"
"""Citus's setting: every modification takes its shard locks in a mode that never conflicts
with another modification's (Citus's ``distributed_execution_locks.c``)."""
MAX_USERS = 48
"""The most users one shared write locks one by one, well under PostgreSQL's lock table
(``max_locks_per_transaction``, 64 a connection by default, shared by all sessions): the
expiry purge goes in rounds of this many users; a write that names more up front takes the
store lock exclusively; one that finds more as it goes is refused (``TooManyUsers``)."""
ROUNDS = 3
"""How often :meth:`UserLocks.lock_where` looks again for users that appeared meanwhile."""


class UserLocks(PostgresDialect):
    """The per-user write locks of :class:`~._dialect_citus.CitusUserDialect` (its base)."""

    @property
    def users_a_shared_write(self) -> int | None:  # type: ignore[override]
        return MAX_USERS  # read when called: a test lowers the module's constant

    @contextmanager
    def _user_write(self, shared: bool, outer: Any, *, named: bool = False) -> Iterator[None]:
        """``outer`` (the store lock's transaction) with the users' lock book kept: a shared
        write starts holding no user (``named``: it may write rows of no user before it
        names any); an exclusive one holds them all."""
        if getattr(self._local, "conn", None) is not None:  # nested: the outer write's
            with outer:
                yield
            return
        self._local.held = set() if shared else None
        self._local.named = named or not shared
        try:
            with outer:
                if shared:
                    self._commutative(True)
                yield
        finally:
            self._local.held, self._local.named = None, True

    def _commutative(self, on: bool) -> None:
        """Citus's executor locks off (``on``) or back on, to the end of the transaction."""
        self.execute_nowait(f"SELECT set_config('{COMMUTATIVE}', ?, true)", ["on" if on else "off"])

    @contextmanager
    def _checked(self, sql: str) -> Iterator[None]:
        """A statement of this write: refused if it changes rows before the write named its
        users (:meth:`check_named`); run with Citus's locks on if it changes a reference
        table inside a shared write."""
        self.check_named(sql)
        reference = self._held() is not None and self._changes_reference(sql)
        if reference:
            self._commutative(False)
        yield  # a failed statement leaves the transaction failed: nothing to set back
        if reference:
            self._commutative(True)

    def _changes_reference(self, sql: str) -> bool:
        names = "|".join(re.escape(t) for t in reference_tables(self.tables))
        return bool(
            re.match(rf"\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:{names})\b", sql, re.I)
        )

    def _held(self) -> set[str] | None:
        """The users this write holds; None outside a shared write (an exclusive write holds
        them all)."""
        return getattr(self._local, "held", None)

    def lock_users(
        self,
        users: Iterable[str | None],
        records: Sequence[tuple[str, str]] = (),
        *,
        wait: bool = True,
    ) -> set[str]:
        """Inside a write: lock ``users`` and the users of ``records`` (family, id), in the
        keys' order; ``wait=False`` takes only those free now. Returns the users held."""
        held = self._held()
        if held is None:
            return {u or "" for u in users}
        self._local.named = True
        wanted = {u or "" for u in users}
        if records:
            wanted |= self._users_of_records(records)
        new = sorted(wanted - held)
        if new and wait and len(held) + len(new) > MAX_USERS:
            raise TooManyUsers(
                f"a write on the Citus layout may lock at most {MAX_USERS} users one by one"
                f" (this one touches {len(held) + len(new)}): nothing was written; write"
                " fewer users at once"
            )
        if new and not wait:
            new = new[: max(0, MAX_USERS - len(held))]  # the rest: the next round's
        if new:
            take = (
                "pg_advisory_xact_lock(?::int4, s.k)::text IS NOT NULL"  # returns void
                if wait
                else "pg_try_advisory_xact_lock(?::int4, s.k)"
            )
            # The subquery is sorted (OFFSET 0 keeps it apart): the locks are taken in the
            # keys' order, so two writes naming several users cannot wait on each other.
            for user, got in self.execute(
                f"SELECT s.u, {take} FROM (SELECT u,"
                " hashtext('user:' || u) AS k FROM unnest(?::text[]) AS u ORDER BY 2, 1"
                " OFFSET 0) s",
                [self._scope_key, new],
            ):
                if got:
                    held.add(str(user))
        return held & wanted if not wait else wanted

    def lock_linked(self, where: str, params: Sequence[Any], *, wait: bool = True) -> None:
        if self._held() is None:
            return
        t = self.tables
        rows = self.execute(
            f"SELECT r.{SHARD_COLUMN}, r.id FROM {t.records} r WHERE {where}", params
        )
        users, ids = {str(r[0]) for r in rows}, sorted({str(r[1]) for r in rows})
        ends: list[str] = []
        for part in chunked(ids, 500):
            ends += [
                str(r[0])
                for r in self.execute(
                    f"SELECT target_record_id FROM {t.relations} WHERE source_record_id = ANY(?)"
                    f" UNION SELECT source_record_id FROM {t.relations}"
                    " WHERE target_record_id = ANY(?)",
                    [part, part],
                )
            ]
        others = sorted(set(ends) - set(ids))
        for part in chunked(others, 500):
            users |= {
                str(r[0])
                for r in self.execute(
                    f"SELECT DISTINCT {SHARD_COLUMN} FROM {t.records} WHERE id = ANY(?)", [part]
                )
            }
        self.lock_users(users, wait=wait)

    def rounds(
        self, table: str, alias: str, where: str, params: Sequence[Any]
    ) -> Iterator[tuple[str, list[Any]]]:
        last: str | None = None
        while True:
            start: list[Any]
            after, start = (
                ("", []) if last is None else (f" AND {alias}.{SHARD_COLUMN} > ?", [last])
            )
            users = [
                str(r[0])
                for r in self.execute(
                    f"SELECT DISTINCT {alias}.{SHARD_COLUMN} FROM {table} {alias}"
                    f" WHERE ({where}){after} ORDER BY 1 LIMIT ?",
                    [*params, *start, MAX_USERS],
                )
            ]
            if not users:
                return
            yield f"({where}) AND {alias}.{SHARD_COLUMN} = ANY(?::text[])", [*params, users]
            last = users[-1]

    def _users_of_records(self, records: Sequence[tuple[str, str]]) -> set[str]:
        """The users holding these record ids (``record_ids``: one shard an id)."""
        table = record_ids_table(self.tables)
        rows = self.execute(
            f"SELECT {SHARD_COLUMN} FROM {table} WHERE (family, id) IN"
            f" ({','.join(['(?, ?)'] * len(records))})",
            [v for pair in records for v in pair],
        )
        return {str(r[0]) for r in rows}

    def lock_where(
        self, table: str, alias: str, where: str, params: Sequence[Any], *, wait: bool = True
    ) -> set[str] | None:
        """Inside a write: lock the users of the rows of ``table`` (as ``alias``) that
        ``where`` selects, looking again for users that appeared meanwhile; the users held
        (None: all of them, an exclusive write)."""
        held = self._held()
        if held is None:
            return None
        self._local.named = True
        for _ in range(ROUNDS):
            users = {
                str(r[0])
                for r in self.execute(
                    f"SELECT DISTINCT {alias}.{SHARD_COLUMN} FROM {table} {alias} WHERE {where}",
                    params,
                )
            }
            if users <= held:
                break
            self.lock_users(users, wait=wait)
            if not wait:
                break
        return held

    def locked_where(
        self,
        table: str,
        alias: str,
        where: str,
        params: Sequence[Any],
        *,
        wait: bool = True,
    ) -> tuple[str, list[Any]]:
        """:meth:`lock_where`, and ``where`` confined to the users held (the rows of a user
        this write does not hold are left alone, as rows another write adds after it)."""
        held = self.lock_where(table, alias, where, params, wait=wait)
        if held is None:
            return where, list(params)
        return f"({where}) AND {alias}.{SHARD_COLUMN} = ANY(?::text[])", [*params, sorted(held)]

    def check_named(self, sql: str) -> None:
        """A write statement in a shared write that named no users is refused."""
        if (
            getattr(self._local, "held", None) is not None
            and not self._local.named
            and _MODIFIES.match(sql)
        ):
            raise RuntimeError(
                "a write on the Citus layout changed rows before naming its users"
                f" (lock_users / locked_where): {sql[:120]!r}"
            )

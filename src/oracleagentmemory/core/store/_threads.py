"""Thread ownership: every thread id belongs to one user, from the first write that names it.

A thread id is claimed by the first record written with it, whichever API wrote it: a thread
row (``create_thread``), a message, a memory, an image or a summary. The claim records that
record's user and agent. A later write naming the thread for another user is refused with
:class:`ThreadOwnershipError` inside the write's transaction, so none of that write lands.
A user-less record (``user_id=None``: only a caller of the Python API or an admin key can
write one) may join any thread, as a thread-scoped record independent of users. Reads,
deletes and cascades that go through a thread id only touch user-less rows and rows of the
owner's user (:meth:`ThreadOwners.confine`).

Claims live in ``<prefix>_thread_owners`` (schema version 7). ``delete_thread`` and the user
and agent cascades release them, so the id can be used again. Stores made before version 7
are migrated: each thread id is owned by its thread row's user, or by the user of the first
record that names it when it has no thread row. A thread id that several users wrote before
the upgrade stays with that owner. The other users keep their rows, and reach them through
their own scoped reads (``list``/``search`` with their ``user_id``), never through the
thread. :meth:`ThreadOwners.conflicts` lists such ids; the upgrade logs them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oracleagentmemory.core.store._dialect import Dialect, chunked

if TYPE_CHECKING:
    from oracleagentmemory.core.store.schema._rows import PlannedRecord

log = logging.getLogger("oracleagentmemory.store")

CONFLICTS_SHOWN = 20
"""How many conflicting thread ids a migration names in its log line."""


class ThreadOwnershipError(ValueError):
    """A write named a thread id that belongs to another user (nothing of it was written)."""


@dataclass(frozen=True)
class Claim:
    """What one write asks of a thread id.

    ``user_id``: the user its rows need the thread to belong to; ``exact``: False when every
    row is user-less (not a thread row), which may join any thread. ``thread_row``: the
    write holds the thread's own row, whose agent then becomes the owner's agent.
    """

    user_id: str | None
    agent_id: str | None
    exact: bool
    thread_row: bool


def claims_of(planned: Iterable[PlannedRecord]) -> dict[str, Claim]:
    """The thread ids a batch names, with the user each must belong to.

    ThreadOwnershipError when one batch writes rows of two users into one thread, or a
    thread row and rows of another user.
    """
    rows: dict[str, list[PlannedRecord]] = {}
    for p in planned:
        if p.thread_id is not None:
            rows.setdefault(p.thread_id, []).append(p)
    claims: dict[str, Claim] = {}
    for tid, records in rows.items():
        head = next((p for p in records if p.family == "thread"), None)
        users = {p.user_id for p in records if p.user_id is not None}
        if head is not None:
            users -= {head.user_id}
            if users:
                raise ThreadOwnershipError(
                    f"thread_ids: thread {tid!r} belongs to user {head.user_id!r}; this write "
                    f"also gives it records of user {sorted(users)[0]!r}"
                )
            claims[tid] = Claim(head.user_id, head.agent_id, True, True)
        elif len(users) > 1:
            a, b = sorted(users)[:2]
            raise ThreadOwnershipError(
                f"thread_ids: one thread holds the records of one user; this write gives "
                f"thread {tid!r} records of user {a!r} and of user {b!r}"
            )
        else:
            first = next((p for p in records if p.user_id is not None), records[0])
            claims[tid] = Claim(first.user_id, first.agent_id, bool(users), False)
    return claims


def refused(thread_id: str) -> ThreadOwnershipError:
    """The error for a write into another user's thread (it does not name the owner)."""
    return ThreadOwnershipError(
        f"thread_id {thread_id!r} belongs to another user: a thread holds the records of one "
        "user only (use another thread id)"
    )


def decode_head(user: str | None, agent: str | None) -> tuple[str | None, str | None] | None:
    """The owner read by :meth:`ThreadOwners.head_sql` (ids are never empty strings)."""
    if user is None:
        return None
    return (user or None, agent or None)


class ThreadOwners:
    """The claims table of one store, used inside the store's transactions."""

    def __init__(self, dialect: Dialect) -> None:
        self._d = dialect
        self.enabled = True
        """False on a store older than version 7 opened without upgrading (NO_CHECK): it has
        no claims table, and writes are not checked."""

    @property
    def table(self) -> str:
        return self._d.tables.owners

    def head_sql(self, thread_id: str) -> tuple[str, list[Any]]:
        """Select-list SQL (two columns: the owner's user and agent, each ``''`` for None;
        NULL when unclaimed) for folding one thread's claim check into another query;
        :func:`decode_head` reads them back."""
        t = self.table
        sql = (
            f"(SELECT COALESCE(user_id, '') FROM {t} WHERE thread_id = ?),"
            f" (SELECT COALESCE(agent_id, '') FROM {t} WHERE thread_id = ?)"
        )
        return sql, [thread_id, thread_id]

    def claim(
        self,
        claims: dict[str, Claim],
        known: dict[str, tuple[str | None, str | None] | None] | None = None,
        *,
        retry: bool = True,
    ) -> None:
        """Inside a write: refuse claims on other users' threads, record new ones.

        ``known``: owners already read in this transaction for some of these ids ((user,
        agent), or None for an unclaimed id); the others are read here.
        """
        if not self.enabled or not claims:
            return
        known = known or {}
        owners = {tid: owner for tid, owner in known.items() if owner is not None}
        missing = [tid for tid in claims if tid not in known]
        for part in chunked(missing, 500):
            marks = ",".join("?" * len(part))
            for tid, user, agent in self._d.execute(
                f"SELECT thread_id, user_id, agent_id FROM {self.table}"
                f" WHERE thread_id IN ({marks})",
                list(part),
            ):
                owners[str(tid)] = (user, agent)
        new: list[tuple[str, str | None, str | None]] = []
        moved: list[tuple[str | None, str]] = []
        for tid, want in claims.items():
            owner = owners.get(tid)
            if owner is None:
                new.append((tid, want.user_id, want.agent_id))
            elif want.exact and owner[0] != want.user_id:
                raise refused(tid)
            elif want.thread_row and owner[1] != want.agent_id:
                moved.append((want.agent_id, tid))  # the thread row names the thread's agent
        if new and self._d.concurrent_writers:
            self._claim_concurrently(new, claims, retry)
        elif new:  # writers are serialised: no other claim lands between the read and this
            self._d.executemany(
                f"INSERT INTO {self.table} (thread_id, user_id, agent_id) VALUES (?, ?, ?)", new
            )
        if moved:
            self._d.executemany(f"UPDATE {self.table} SET agent_id = ? WHERE thread_id = ?", moved)

    def _claim_concurrently(
        self,
        new: list[tuple[str, str | None, str | None]],
        claims: dict[str, Claim],
        retry: bool,
    ) -> None:
        """Record new claims while other writers run: an id another writer claimed since it
        was read (its insert waits for that writer's commit, then does nothing) is checked
        against that owner instead. An id claimed but still unseen on that second read is
        another user's, hidden by row security: refused."""
        new.sort()  # every writer takes the claims' row locks in one order
        marks = ",".join(["(?, ?, ?)"] * len(new))
        got = self._d.execute(
            f"INSERT INTO {self.table} (thread_id, user_id, agent_id) VALUES {marks}"
            " ON CONFLICT (thread_id) DO NOTHING RETURNING thread_id",
            [v for row in new for v in row],
        )
        lost = {row[0] for row in new} - {str(r[0]) for r in got}
        if lost and not retry:
            raise refused(min(lost))
        if lost:
            self.claim({tid: claims[tid] for tid in lost}, {}, retry=False)

    def owner(self, thread_id: str) -> tuple[str | None, str | None] | None:
        """(user, agent) owning ``thread_id``, or None when no write has claimed it."""
        if not self.enabled:
            return None
        rows = self._d.execute(
            f"SELECT user_id, agent_id FROM {self.table} WHERE thread_id = ?", [thread_id]
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def confine(self, alias: str = "r") -> str:
        """A condition true for the rows of ``alias`` that a read or delete through their
        thread may touch: user-less rows, and rows of the thread owner's user."""
        if not self.enabled:
            return "1 = 1"
        return (
            f"NOT EXISTS (SELECT 1 FROM {self.table} o WHERE o.thread_id = {alias}.thread_id"
            f" AND {alias}.user_id IS NOT NULL AND o.user_id {self._d.IS_NOT} {alias}.user_id)"
        )

    def release(self, thread_ids: Sequence[str]) -> None:
        """Inside a write: forget the claims on ``thread_ids`` (their threads were deleted)."""
        if self.enabled and thread_ids:
            self._d.executemany(
                f"DELETE FROM {self.table} WHERE thread_id = ?", [(t,) for t in thread_ids]
            )

    def owned_by(self, user_id: str) -> list[str]:
        """Thread ids owned by ``user_id``."""
        if not self.enabled:
            return []
        rows = self._d.execute(f"SELECT thread_id FROM {self.table} WHERE user_id = ?", [user_id])
        return [str(r[0]) for r in rows]

    def conflicts(self) -> list[str]:
        """Thread ids holding rows of users other than their owner (written before version 7),
        sorted."""
        if not self.enabled:
            return []
        t = self._d.tables
        rows = self._d.execute(
            f"SELECT DISTINCT r.thread_id FROM {t.records} r JOIN {self.table} o"
            f" ON o.thread_id = r.thread_id"
            f" WHERE r.user_id IS NOT NULL AND r.user_id {self._d.IS_NOT} o.user_id"
        )
        return sorted(str(r[0]) for r in rows)

    def report_conflicts(self) -> list[str]:
        """After a migration: log the thread ids several users wrote (see the module doc)."""
        found = self.conflicts()
        if found:
            shown = ", ".join(repr(t) for t in found[:CONFLICTS_SHOWN])
            rest = len(found) - CONFLICTS_SHOWN
            more = f" and {rest} more" if rest > 0 else ""
            log.warning(
                "%d thread id(s) hold rows of several users: %s%s. Each stays with its owner "
                "(its thread row's user, else its first writer); the other users' rows are "
                "reachable only through their own user-scoped reads",
                len(found),
                shown,
                more,
            )
        return found

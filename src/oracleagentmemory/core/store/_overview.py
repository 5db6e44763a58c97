"""Counts and pages for browsing a store (the ``/ui`` memory browser): the users that own
records, with their counts; a user's memories filtered and paged; a user's threads and a
thread's messages paged; totals by family.

Every page is one ``LIMIT``/``OFFSET`` query beside one ``COUNT(*)`` of the same condition,
read through the records table's indexes: ``(user_id, family)`` for a user's rows,
``(thread_id, family, seq_no)`` for a thread's. The list of users is a loose index scan of
``(user_id, family)`` (one index seek per distinct user, not a pass over every record).
Expired rows are left out as every read does, except from the list of users: a user whose
every record expired is listed, with zero counts, until those rows are purged.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES, MessageRecord, Record, ThreadRecord
from oracleagentmemory.core.store._dialect import chunked
from oracleagentmemory.core.store._limits import check_id
from oracleagentmemory.core.store._reads import to_record
from oracleagentmemory.core.store._store_core import NOT_EXPIRED, StoreCore, check_lookup
from oracleagentmemory.core.store.schema._planning import (
    FAMILY,
    PROFILE_TYPES,
    check_scope_id,
    family_of,
)
from oracleagentmemory.core.store.search._search_sql import same_as

MAX_PAGE_ROWS: Final = 1000
"""The most rows one page may ask for."""
MAX_OFFSET: Final = 10_000_000
"""The deepest offset a page may start at."""
STATUSES: Final = ("valid", "invalid")
COUNTED_FAMILIES: Final = ("thread", "message", "memory", "image")


@dataclass(frozen=True)
class UserCounts:
    """What one user owns: thread rows, messages, memories (all memory types), images, and
    whether a user profile exists."""

    user_id: str
    threads: int = 0
    messages: int = 0
    memories: int = 0
    images: int = 0
    has_profile: bool = False


@dataclass(frozen=True)
class ThreadSummary:
    """A thread row with its message count and its newest message's creation time."""

    thread: ThreadRecord
    messages: int
    last_message_at: str | None


@dataclass(frozen=True)
class Page:
    """One page of a list: its items and the size of the whole filtered list."""

    items: builtins.list[Any]
    total: int
    offset: int
    limit: int


def check_window(limit: Any, offset: Any) -> tuple[int, int]:
    """``limit`` (1..MAX_PAGE_ROWS) and ``offset`` (0..MAX_OFFSET); ValueError naming the
    one out of range, TypeError for a non-int."""
    for name, value, low, high in (
        ("limit", limit, 1, MAX_PAGE_ROWS),
        ("offset", offset, 0, MAX_OFFSET),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not low <= value <= high:
            raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return limit, offset


def check_day(value: Any, name: str) -> str | None:
    """A ``YYYY-MM-DD`` day (None passes); ValueError naming ``name`` otherwise."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a YYYY-MM-DD string or None")
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ValueError(f"{name} must be a day as YYYY-MM-DD, got {value[:40]!r}") from None


class Overview:
    """The browsing reads of one store (each under the store lock, like every read)."""

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    def _run(self, sql: str, params: Sequence[Any]) -> builtins.list[tuple[Any, ...]]:
        core = self._core
        with core.lock:
            core.check_open()
            return core.dialect.execute(sql, builtins.list(params))

    # ------------------------------------------------------------------ users

    def _users_sql(self, bounded: bool) -> str:
        """Every distinct user id in order, by a loose scan of the ``(user_id, family)``
        index; ``bounded``: the walk stops after as many ids as its first parameter."""
        r = self._core.dialect.tables.records
        stop = " AND u.n < ?" if bounded else ""
        return (
            f"WITH RECURSIVE u(v, n) AS (SELECT MIN(user_id), 1 FROM {r}"
            f" UNION ALL SELECT (SELECT MIN(user_id) FROM {r} WHERE user_id > u.v), u.n + 1"
            f" FROM u WHERE u.v IS NOT NULL{stop})"
        )

    def users(self, *, limit: int, offset: int = 0) -> Page:
        """A page of the users that own records (any family, a profile included), by id,
        with their counts (:class:`UserCounts`)."""
        limit, offset = check_window(limit, offset)
        ids = [
            str(row[0])
            for row in self._run(
                f"{self._users_sql(True)} SELECT v FROM u WHERE v IS NOT NULL ORDER BY v"
                " LIMIT ? OFFSET ?",
                [offset + limit, limit, offset],
            )
        ]
        counts = self.user_counts(ids)
        return Page([counts[u] for u in ids], self.count_users(), offset, limit)

    def user_counts(self, user_ids: Sequence[str]) -> dict[str, UserCounts]:
        """Counts for each of ``user_ids`` (a user without records gets zeros)."""
        if isinstance(user_ids, str):
            raise TypeError("user_ids must be a list of user ids")
        ids = [check_id(u, "user_ids") for u in dict.fromkeys(user_ids)]
        found: dict[str, dict[str, int]] = {u: {} for u in ids}
        d = self._core.dialect
        families = ",".join("?" * len(COUNTED_FAMILIES))
        for part in chunked(ids, 500):
            marks = ",".join("?" * len(part))
            rows = self._run(
                f"SELECT r.user_id, r.family, COUNT(*) FROM {d.tables.records} r"
                f" WHERE r.user_id IN ({marks}) AND r.family IN ({families},'user_profile')"
                f" AND {NOT_EXPIRED} GROUP BY r.user_id, r.family",
                [*part, *COUNTED_FAMILIES, time.time()],
            )
            for user, family, n in rows:
                found[str(user)][str(family)] = int(n)
        return {
            u: UserCounts(
                u,
                threads=c.get("thread", 0),
                messages=c.get("message", 0),
                memories=c.get("memory", 0),
                images=c.get("image", 0),
                has_profile=c.get("user_profile", 0) > 0,
            )
            for u, c in found.items()
        }

    def count_users(self) -> int:
        """How many distinct users own records."""
        sql = f"{self._users_sql(False)} SELECT COUNT(*) FROM u WHERE v IS NOT NULL"
        return int(self._run(sql, [])[0][0])

    def family_counts(self) -> dict[str, int]:
        """Unexpired records of the whole store, by family (families with rows only).

        All rows are counted from the ``(record_type, rid)`` index alone; the expired ones,
        found through the expiry index, are then taken off (a table scan would read every
        row for its expiry)."""
        d = self._core.dialect
        r = d.tables.records
        held = self._run(f"SELECT record_type, COUNT(*) FROM {r} GROUP BY record_type", [])
        gone = dict(
            self._run(
                f"SELECT record_type, COUNT(*) FROM {r} WHERE expires_at IS NOT NULL"
                " AND expires_at <= ? GROUP BY record_type",
                [time.time()],
            )
        )
        out: dict[str, int] = {}
        for rtype, n in held:
            family = FAMILY.get(str(rtype), str(rtype))
            left = int(n) - int(gone.get(rtype, 0))
            if left:
                out[family] = out.get(family, 0) + left
        return out

    def memory_type_counts(self, user_id: str) -> dict[tuple[str, str], int]:
        """A user's unexpired memories by (record type, status)."""
        check_lookup(user_id, "user_id")
        d = self._core.dialect
        rows = self._run(
            f"SELECT r.record_type, r.status, COUNT(*) FROM {d.tables.records} r"
            f" WHERE r.user_id = ? AND r.family = 'memory' AND {NOT_EXPIRED}"
            " GROUP BY r.record_type, r.status",
            [user_id, time.time()],
        )
        return {(str(t), str(s)): int(n) for t, s, n in rows}

    def agents_of(self, user_id: str, *, limit: int = 100) -> builtins.list[str]:
        """The agent ids on a user's threads and memories, by id (at most ``limit``)."""
        check_lookup(user_id, "user_id")
        check_window(limit, 0)
        d = self._core.dialect
        rows = self._run(
            f"SELECT DISTINCT r.agent_id FROM {d.tables.records} r WHERE r.user_id = ?"
            " AND r.family IN ('thread', 'memory') AND r.agent_id IS NOT NULL"
            " ORDER BY r.agent_id LIMIT ?",
            [user_id, limit],
        )
        return [str(r[0]) for r in rows]

    # ------------------------------------------------------------------ memories

    def memories(
        self,
        *,
        user_id: str | None,
        limit: int,
        offset: int = 0,
        record_types: Sequence[str] | None = None,
        status: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        newest_first: bool = True,
    ) -> Page:
        """A page of a user's memories (``user_id=None``: the memories of no user; every
        memory type unless ``record_types``), newest first unless ``newest_first=False``.

        ``status``: valid / invalid. ``since`` / ``until``: days (``YYYY-MM-DD``, both
        included) that the record's shown timestamp falls on: the timestamp it was given,
        else the time it was stored, read as written (no time-zone shift).
        """
        limit, offset = check_window(limit, offset)
        if user_id is None:
            conds = ["r.user_id IS NULL", "r.family = 'memory'", NOT_EXPIRED]
            params: builtins.list[Any] = [time.time()]
        else:
            conds = ["r.user_id = ?", "r.family = 'memory'", NOT_EXPIRED]
            params = [check_lookup(user_id, "user_id"), time.time()]
        if record_types is not None:
            if isinstance(record_types, str) or not record_types:
                raise TypeError("record_types must be a non-empty list of memory types")
            for t in record_types:
                if t not in MEMORY_RECORD_TYPES:
                    raise ValueError(
                        f"record_types: {t!r} is not a memory type"
                        f" ({', '.join(MEMORY_RECORD_TYPES)})"
                    )
            conds.append(f"r.record_type IN ({','.join('?' * len(record_types))})")
            params += record_types
        if status is not None:
            if status not in STATUSES:
                raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
            conds.append("r.status = ?")
            params.append(status)
        for col, value in (("agent_id", agent_id), ("thread_id", thread_id)):
            if value is not None:
                conds.append(f"r.{col} = ?")
                params.append(check_lookup(value, col))
        shown_day = "SUBSTR(COALESCE(r.event_ts, r.created_at), 1, 10)"
        for name, value, op in (("since", since, ">="), ("until", until, "<=")):
            day = check_day(value, name)
            if day is not None:
                conds.append(f"{shown_day} {op} ?")
                params.append(day)
        return self._page(conds, params, "r.rid", newest_first, limit, offset)

    def _page(
        self,
        conds: builtins.list[str],
        params: builtins.list[Any],
        order: str,
        descending: bool,
        limit: int,
        offset: int,
    ) -> Page:
        core = self._core
        where = " AND ".join(conds)
        t = core.dialect.tables.records
        direction = "DESC" if descending else "ASC"
        with core.lock:
            core.check_open()
            rows = core.dialect.execute(
                f"SELECT {core.cols} FROM {t} r WHERE {where} ORDER BY {order} {direction}"
                " LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
            total = int(
                core.dialect.execute(f"SELECT COUNT(*) FROM {t} r WHERE {where}", params)[0][0]
            )
        return Page([to_record(r) for r in rows], total, offset, limit)

    # ------------------------------------------------------------------ any family

    def records(
        self,
        record_types: Sequence[str],
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = False,
        user_id: Any = NOT_SET_MARKER,
        agent_id: Any = NOT_SET_MARKER,
        thread_id: Any = NOT_SET_MARKER,
        ids: Sequence[str] | None = None,
        agents_of_users: Sequence[str] | None = None,
    ) -> Page:
        """A page of the unexpired records of ``record_types`` (of one family), in the order
        ``list()`` gives (insertion, oldest first unless ``newest_first``), with the size of
        the whole list counted in SQL: the page is what the database hands back.

        Scope filters as ``list()``: omitted = any, None = unscoped only (ignored for
        profiles). ``ids``: only these record ids. ``agents_of_users``: only the records
        (agent profiles) whose id is the agent of an unexpired thread of one of these users.
        """
        limit, offset = check_window(limit, offset)
        where = self._record_conds(record_types, user_id, agent_id, thread_id, ids, agents_of_users)
        if where is None:
            return Page([], 0, offset, limit)
        conds, params = where
        return self._page(conds, params, "r.rid", newest_first, limit, offset)

    def count(
        self,
        record_types: Sequence[str],
        *,
        user_id: Any = NOT_SET_MARKER,
        agent_id: Any = NOT_SET_MARKER,
        thread_id: Any = NOT_SET_MARKER,
        ids: Sequence[str] | None = None,
    ) -> int:
        """How many unexpired records :meth:`records` would list (one ``COUNT(*)``)."""
        where = self._record_conds(record_types, user_id, agent_id, thread_id, ids, None)
        if where is None:
            return 0
        conds, params = where
        t = self._core.dialect.tables.records
        return int(
            self._run(f"SELECT COUNT(*) FROM {t} r WHERE {' AND '.join(conds)}", params)[0][0]
        )

    def count_links(self) -> int:
        """Every typed link of the store (one ``COUNT(*)``)."""
        rel = self._core.dialect.tables.relations
        return int(self._run(f"SELECT COUNT(*) FROM {rel}", [])[0][0])

    def count_users_with(self, families: Sequence[str]) -> int:
        """How many distinct users own unexpired records of ``families``."""
        if isinstance(families, str) or not families:
            raise TypeError("families must be a non-empty list of record families")
        for f in families:
            if f not in FAMILY.values():
                raise ValueError(f"families: {f!r} is not a record family")
        t = self._core.dialect.tables.records
        return int(
            self._run(
                f"SELECT COUNT(DISTINCT r.user_id) FROM {t} r WHERE r.user_id IS NOT NULL"
                f" AND r.family IN ({','.join('?' * len(families))}) AND {NOT_EXPIRED}",
                [*families, time.time()],
            )[0][0]
        )

    def _record_conds(
        self,
        record_types: Sequence[str],
        user_id: Any,
        agent_id: Any,
        thread_id: Any,
        ids: Sequence[str] | None,
        agents_of_users: Sequence[str] | None,
    ) -> tuple[builtins.list[str], builtins.list[Any]] | None:
        """The conditions of :meth:`records` (None: an empty id list, so nothing matches)."""
        if isinstance(record_types, str) or not record_types:
            raise TypeError("record_types must be a non-empty list of record type names")
        families = {family_of(t) for t in record_types}
        if len(families) != 1:
            raise ValueError("record_types must all be of one family")
        now = time.time()
        conds = [
            "r.family = ?",
            f"r.record_type IN ({','.join('?' * len(record_types))})",
            NOT_EXPIRED,
        ]
        params: builtins.list[Any] = [families.pop(), *record_types, now]
        if not all(t in PROFILE_TYPES for t in record_types):
            for col, value in (
                ("user_id", user_id),
                ("agent_id", agent_id),
                ("thread_id", thread_id),
            ):
                if value is not NOT_SET_MARKER:
                    cond, more = same_as(f"r.{col}", check_scope_id(value, col))
                    conds.append(cond)
                    params += more
        for name, given in (("ids", ids), ("agents_of_users", agents_of_users)):
            if given is None:
                continue
            if isinstance(given, str):
                raise TypeError(f"{name} must be a list of ids")
            wanted = [check_lookup(v, name) for v in dict.fromkeys(given)]
            if not wanted:
                return None
            marks = ",".join("?" * len(wanted))
            params += wanted
            if name == "ids":
                conds.append(f"r.id IN ({marks})")
            else:
                conds.append(
                    f"r.id IN (SELECT t.agent_id FROM {self._core.dialect.tables.records} t"
                    f" WHERE t.user_id IN ({marks}) AND t.family = 'thread'"
                    " AND t.agent_id IS NOT NULL"
                    " AND (t.expires_at IS NULL OR t.expires_at > ?))"
                )
                params.append(now)
        return conds, params

    def link_counts(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """How many typed links touch each of ``memory_ids`` (either end); ids without
        links are left out."""
        ids = [check_lookup(m, "memory_ids") for m in dict.fromkeys(memory_ids)]
        rel = self._core.dialect.tables.relations
        types = ",".join("?" * len(MEMORY_RECORD_TYPES))
        out: dict[str, int] = {}
        for part in chunked(ids, 400):
            marks = ",".join("?" * len(part))
            for end in ("source", "target"):
                for mid, n in self._run(
                    f"SELECT {end}_record_id, COUNT(*) FROM {rel}"
                    f" WHERE {end}_record_type IN ({types}) AND {end}_record_id IN ({marks})"
                    f" GROUP BY {end}_record_id",
                    [*MEMORY_RECORD_TYPES, *part],
                ):
                    out[str(mid)] = out.get(str(mid), 0) + int(n)
        return out

    def source_counts(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """How many provenance rows (source messages and images) each extracted memory of
        ``memory_ids`` has; memories without provenance are left out."""
        ids = [check_lookup(m, "memory_ids") for m in dict.fromkeys(memory_ids)]
        t = self._core.dialect.tables
        out: dict[str, int] = {}
        for part in chunked(ids, 500):
            marks = ",".join("?" * len(part))
            for mid, n in self._run(
                f"SELECT r.id, COUNT(*) FROM {t.records} r JOIN {t.sources} s ON s.rid = r.rid"
                f"{self._core.dialect.joined('s', 'r')} WHERE r.family = 'memory'"
                f" AND r.id IN ({marks}) GROUP BY r.id",
                part,
            ):
                out[str(mid)] = int(n)
        return out

    # ------------------------------------------------------------------ threads

    def threads(
        self, *, user_id: str, limit: int, offset: int = 0, newest_first: bool = True
    ) -> Page:
        """A page of a user's thread rows (:class:`ThreadSummary` items), newest first
        unless ``newest_first=False``."""
        limit, offset = check_window(limit, offset)
        check_lookup(user_id, "user_id")
        page = self._page(
            ["r.user_id = ?", "r.family = 'thread'", NOT_EXPIRED],
            [user_id, time.time()],
            "r.rid",
            newest_first,
            limit,
            offset,
        )
        stats = self._message_stats([t.id for t in page.items])
        items = [ThreadSummary(t, *stats.get(t.id, (0, None))) for t in page.items]
        return Page(items, page.total, offset, limit)

    def _message_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, str | None]]:
        core = self._core
        out: dict[str, tuple[int, str | None]] = {}
        for part in chunked(builtins.list(thread_ids), 500):
            marks = ",".join("?" * len(part))
            rows = self._run(
                f"SELECT r.thread_id, COUNT(*), MAX(r.created_at) FROM"
                f" {core.dialect.tables.records} r WHERE r.thread_id IN ({marks})"
                f" AND r.family = 'message' AND {NOT_EXPIRED} AND {core.owners.confine()}"
                " GROUP BY r.thread_id",
                [*part, time.time()],
            )
            for tid, n, last in rows:
                out[str(tid)] = (int(n), None if last is None else str(last))
        return out

    def thread_messages(
        self, thread_id: str, *, limit: int, offset: int = 0, newest_first: bool = False
    ) -> Page:
        """A page of a thread's messages by ``seq_no`` (oldest first unless
        ``newest_first``); only the rows a read through the thread may touch (its owner's
        and user-less ones)."""
        limit, offset = check_window(limit, offset)
        check_lookup(thread_id, "thread_id")
        conds, params = self._thread_conds(thread_id)
        return self._page(conds, params, "r.seq_no", newest_first, limit, offset)

    def message_position(self, thread_id: str, seq_no: int, *, newest_first: bool = False) -> int:
        """How many of the thread's messages come before ``seq_no`` in that order (the
        offset of the page that shows it starts at or below this)."""
        check_lookup(thread_id, "thread_id")
        if isinstance(seq_no, bool) or not isinstance(seq_no, int):
            raise TypeError("seq_no must be an int")
        conds, params = self._thread_conds(thread_id)
        conds.append("r.seq_no > ?" if newest_first else "r.seq_no < ?")
        params.append(seq_no)
        t = self._core.dialect.tables.records
        return int(
            self._run(f"SELECT COUNT(*) FROM {t} r WHERE {' AND '.join(conds)}", params)[0][0]
        )

    def _thread_conds(self, thread_id: str) -> tuple[builtins.list[str], builtins.list[Any]]:
        """The rows ``owners.confine()`` lets a read through the thread touch (user-less
        ones and its owner's), with the owner read once: the per-row lookup of ``confine``
        made counting a long thread several times slower than its page."""
        conds = ["r.thread_id = ?", "r.family = 'message'", NOT_EXPIRED]
        params: builtins.list[Any] = [thread_id, time.time()]
        core = self._core
        with core.lock:
            core.check_open()
            owner = core.owners.owner(thread_id)
        if owner is not None:
            cond, more = same_as("r.user_id", owner[0])
            conds.append(f"(r.user_id IS NULL OR {cond})")
            params += more
        return conds, params

    def messages_by_id(self, message_ids: Sequence[str]) -> dict[str, MessageRecord]:
        """The unexpired messages of ``message_ids`` (unknown ids are left out)."""
        core = self._core
        out: dict[str, MessageRecord] = {}
        ids = [check_lookup(m, "message_ids") for m in dict.fromkeys(message_ids)]
        for part in chunked(ids, 500):
            marks = ",".join("?" * len(part))
            for row in self._run(
                f"SELECT {core.cols} FROM {core.dialect.tables.records} r"
                f" WHERE r.family = 'message' AND r.id IN ({marks}) AND {NOT_EXPIRED}",
                [*part, time.time()],
            ):
                record: Record = to_record(row)
                if isinstance(record, MessageRecord):
                    out[record.id] = record
        return out

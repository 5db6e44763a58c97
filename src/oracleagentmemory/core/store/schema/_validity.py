"""When a record was true: ``valid_from`` and ``valid_until`` on ``<prefix>_records``.

Both are epoch seconds (schema 16). A record becomes true at its event time (``timestamp``),
else at its creation; a memory extracted from messages at its newest source message's time
(set by :func:`from_sources` in the extraction's transaction). It stays true until it is
superseded (a ``supersedes`` link pointing at it: until its successor became true, never
before it became true itself) or invalidated (status INVALID: until that change); made VALID
again it is true from then on, open-ended. Deleted records are gone.

A search ``as_of`` a time ranks the records true then, whatever their status now
(:func:`as_of_sql` in SQL; the in-process index masks out :func:`excluded_rids`, the rows
that became true later or stopped being true by then: few for a recent time).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core.store._dialect import Dialect, chunked
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store._time import parse_timestamp
from oracleagentmemory.core.store.schema._planning import family_of
from oracleagentmemory.core.store.schema._rows import PlannedRecord


def check_as_of(value: Any) -> float | None:
    """``as_of`` (a datetime, naive = UTC; None: now, no time travel) as epoch seconds."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise TypeError(f"as_of must be a datetime or None, got {type(value).__name__}")
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def valid_from_of(p: PlannedRecord, created: datetime) -> float:
    """When a new record became true: its event time, else its creation."""
    if p.event_ts:
        return parse_timestamp(p.event_ts, "timestamp").timestamp()
    return created.timestamp()


def born_invalid(d: Dialect, planned: Sequence[PlannedRecord], rids: Sequence[int]) -> None:
    """Inside an insert: records written INVALID were never true (an empty window, so no
    ``as_of`` returns them; made VALID later they are true from then on)."""
    dead = [rid for p, rid in zip(planned, rids, strict=True) if p.status is RecordStatus.INVALID]
    if not d.keeps_validity or not dead:
        return
    for part in chunked(dead, 500):
        d.execute(
            f"UPDATE {d.tables.records} SET valid_until = valid_from"
            f" WHERE rid IN ({','.join('?' * len(part))})",
            list(part),
        )


def as_of_sql(as_of: float) -> tuple[str, builtins.list[Any]]:
    """The condition (over records ``r``) of a record true at ``as_of``."""
    return (
        "(r.valid_from IS NULL OR r.valid_from <= ?)"
        " AND (r.valid_until IS NULL OR r.valid_until > ?)",
        [as_of, as_of],
    )


def excluded_rids(
    d: Dialect, as_of: float, scope: tuple[builtins.list[str], builtins.list[Any]] | None = None
) -> NDArray[np.int64]:
    """Records not true at ``as_of``, sorted and distinct. Unscoped: each half through its
    index (both small for a recent time); ``scope`` (conditions over records ``r`` and their
    parameters, an exact scope's): among the scope's rows, through its index."""
    t = d.tables
    if scope is not None and scope[0]:
        conds, params = scope
        rows = d.execute(
            f"SELECT r.rid FROM {t.records} r WHERE {' AND '.join(conds)}"
            " AND (r.valid_from > ? OR r.valid_until <= ?)",
            [*params, as_of, as_of],
        )
    else:
        rows = d.execute(
            f"SELECT rid FROM {t.records} WHERE valid_from > ?"
            f" UNION ALL SELECT rid FROM {t.records} WHERE valid_until <= ?",
            [as_of, as_of],
        )
    return np.unique(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))


def end_validity(d: Dialect, where: str, params: Sequence[Any], until: float) -> None:
    """Inside a write: the records ``r`` matching ``where`` still true stop being true at
    ``until`` (not before they became true)."""
    if not d.keeps_validity:
        return
    d.execute(
        f"UPDATE {d.tables.records} SET valid_until = CASE WHEN valid_from > ? THEN valid_from"
        f" ELSE ? END WHERE valid_until IS NULL AND rid IN (SELECT r.rid FROM"
        f" {d.tables.records} r WHERE {where})",
        [until, until, *params],
    )


def reopen_validity(d: Dialect, rid: int, since: float) -> None:
    """Inside a write: record ``rid``, made VALID again, is true from ``since`` on."""
    if not d.keeps_validity:
        return
    d.execute(
        f"UPDATE {d.tables.records} SET valid_from = ?, valid_until = NULL"
        " WHERE rid = ? AND valid_until IS NOT NULL",
        [since, rid],
    )
    # ... unless a memory still supersedes it: then it ends when that one became true.
    found = d.execute(f"SELECT id, record_type FROM {d.tables.records} WHERE rid = ?", [rid])
    reconsider(d, [(str(i), str(t)) for i, t in found])


def supersede(d: Dialect, old_id: str, old_type: str, new_id: str, new_type: str) -> None:
    """Inside a write: memory ``old_id`` stops being true when ``new_id`` became true."""
    if not d.keeps_validity:
        return
    t = d.tables
    r = t.records  # Citus: its user's lock (another user's, maybe), the UPDATE confined to it
    a = r.rsplit(".", 1)[-1]  # the target's own name (a schema's table too)
    old, params = d.locked_where(
        r, a, f"{a}.id = ? AND {a}.record_type = ? AND {a}.family = 'memory'", [old_id, old_type]
    )
    d.execute(
        f"UPDATE {r} SET valid_until = CASE WHEN valid_from > n.since THEN valid_from"
        f" ELSE n.since END FROM (SELECT valid_from AS since FROM {r} WHERE id = ?"
        " AND record_type = ? AND family = 'memory') n"
        f" WHERE {old} AND valid_until IS NULL AND n.since IS NOT NULL",
        [new_id, new_type, *params],
    )


_SUPERSEDED_BY = "('superseded_by', 'is_superseded_by')"


def superseded_by(d: Dialect, ends: Sequence[tuple[str, str]]) -> builtins.list[tuple[str, str]]:
    """Inside a write, before links go: the memories (id, type) that the records ``ends``
    (id, type) supersede through a link."""
    t = d.tables
    wanted = set(ends)
    found: builtins.list[tuple[str, str]] = []
    for part in chunked(sorted({rid for rid, _ in wanted}), 500):
        marks = ",".join("?" * len(part))
        rows = d.execute(
            f"SELECT source_record_id, source_record_type, target_record_id, target_record_type"
            f" FROM {t.relations} WHERE relation_type = 'supersedes' AND source_record_id IN"
            f" ({marks}) UNION ALL SELECT target_record_id, target_record_type,"
            f" source_record_id, source_record_type FROM {t.relations}"
            f" WHERE relation_type IN {_SUPERSEDED_BY} AND target_record_id IN ({marks})",
            [*part, *part],
        )
        found += [(str(c), str(e)) for a, b, c, e in rows if (a, b) in wanted]
    return found


def _reconsider_apart(d: Dialect, memories: Sequence[tuple[str, str]]) -> None:
    """:func:`reconsider` on a distributed layout, where a link and the memories at its ends
    may sit on different users' shards: the superseding ends read first, then their start,
    then the memory's end set, each its own statement. The memories' users are locked first
    (in place of the row locks :func:`reconsider` takes on one node)."""
    t = d.tables
    ids = sorted({memory_id for memory_id, _ in memories})
    mine, mine_params = d.locked_where(
        t.records, "r", "r.family = 'memory' AND r.id = ANY(?)", [ids]
    )
    for memory_id, memory_type in sorted(set(memories)):
        ends = d.execute(
            f"SELECT source_record_id, source_record_type FROM {t.relations}"
            " WHERE relation_type = 'supersedes' AND target_record_id = ?"
            " AND target_record_type = ? UNION ALL SELECT target_record_id, target_record_type"
            f" FROM {t.relations} WHERE relation_type IN {_SUPERSEDED_BY}"
            " AND source_record_id = ? AND source_record_type = ?",
            [memory_id, memory_type, memory_id, memory_type],
        )
        first = None
        if ends:
            found = d.execute(
                f"SELECT MIN(valid_from) FROM {t.records} WHERE family = 'memory' AND ("
                + " OR ".join(["(id = ? AND record_type = ?)"] * len(ends))
                + ")",
                [v for end in ends for v in end],
            )
            first = found[0][0] if found else None
        d.execute(  # confined to the users held (a row re-made by another user: left)
            f"UPDATE {t.records} r SET valid_until = CASE WHEN ? < r.valid_from THEN"
            " r.valid_from ELSE ? END WHERE r.status = 'valid' AND r.id = ?"
            f" AND r.record_type = ? AND {mine}",
            [first, first, memory_id, memory_type, *mine_params],
        )


def reconsider(d: Dialect, memories: Sequence[tuple[str, str]]) -> None:
    """Inside a write, after supersedes links went: each VALID memory of ``memories`` (id,
    type) ends when the first memory still superseding it became true, or never."""
    if not d.keeps_validity or not memories:
        return
    t = d.tables
    r = t.records
    if d.layout is not None:
        _reconsider_apart(d, memories)
        return
    wanted = sorted(set(memories))
    if d.FOR_WRITE:
        # Concurrent writers: lock the memories first (in one order), so the update below
        # reads the links in a snapshot taken after any writer adding a link to them (it
        # locks the memory too) has committed; re-checked under the row lock alone it would
        # read the links as they were when this statement began.
        for part in chunked(wanted, 250):
            d.execute(
                f"SELECT r.rid FROM {r} r WHERE r.family = 'memory' AND (r.id, r.record_type)"
                f" IN ({','.join(['(?, ?)'] * len(part))}) ORDER BY r.rid{d.FOR_WRITE}",
                [v for pair in part for v in pair],
            )
    first = (
        f"SELECT MIN(n.valid_from) FROM {t.relations} l JOIN {r} n ON n.family = 'memory' AND"
        f" ((l.relation_type = 'supersedes' AND n.id = l.source_record_id"
        f" AND n.record_type = l.source_record_type AND l.target_record_id = {r}.id"
        f" AND l.target_record_type = {r}.record_type) OR (l.relation_type IN {_SUPERSEDED_BY}"
        f" AND n.id = l.target_record_id AND n.record_type = l.target_record_type"
        f" AND l.source_record_id = {r}.id AND l.source_record_type = {r}.record_type))"
    )
    d.executemany(
        f"UPDATE {r} SET valid_until = CASE WHEN ({first}) < valid_from THEN valid_from"
        f" ELSE ({first}) END WHERE family = 'memory' AND status = 'valid' AND id = ?"
        " AND record_type = ?",
        wanted,
    )


def from_sources(d: Dialect, rids: Sequence[int]) -> None:
    """Inside an extraction's write: the memories ``rids`` became true when their newest
    source message did."""
    if not d.keeps_validity or not rids:
        return
    t = d.tables
    marks = ",".join("?" * len(rids))
    if d.layout is not None:  # distributed: read on the memories' shards, then set
        newest = d.execute(
            f"SELECT s.rid, MAX(m.valid_from) FROM {t.sources} s JOIN {t.records} m"
            f" ON m.family = 'message' AND m.id = s.message_id{d.joined('m', 's')}"
            f" WHERE s.rid IN ({marks}) GROUP BY s.rid",
            list(rids),
        )
        d.executemany(
            f"UPDATE {t.records} SET valid_from = ? WHERE rid = ?",
            [(at, rid) for rid, at in newest if at is not None],
        )
        return
    d.execute(
        f"UPDATE {t.records} SET valid_from = COALESCE((SELECT MAX(m.valid_from)"
        f" FROM {t.sources} s JOIN {t.records} m ON m.family = 'message' AND m.id ="
        f" s.message_id WHERE s.rid = {t.records}.rid), valid_from) WHERE rid IN ({marks})",
        list(rids),
    )


def restore_validity(core: StoreCore, windows: Sequence[tuple[str, str, str, str | None]]) -> int:
    """Set ``(record_type, id, valid_from, valid_until)`` (ISO-8601) on those records, in one
    transaction (an import carrying its source's validity); returns how many were found."""
    rows = []
    for rtype, rid, since, until in windows:
        family = family_of(rtype, "record_type")
        start = parse_timestamp(since, "valid_from").timestamp()
        end = None if until is None else parse_timestamp(until, "valid_until").timestamp()
        rows.append((start, end, family, rid, rtype))
    d = core.dialect
    with core.lock:
        core.check_open()
        if not d.keeps_validity or not rows:
            return 0
        with d.transaction():
            d.executemany(
                f"UPDATE {d.tables.records} SET valid_from = ?, valid_until = ?"
                " WHERE family = ? AND id = ? AND record_type = ?",
                rows,
            )
    return len(rows)

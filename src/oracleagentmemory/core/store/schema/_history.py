"""A memory's history: one row per version of a memory-like record, in ``<prefix>_history``.

Every change to a memory (``family = 'memory'``: memory, fact, preference, guideline) adds a
version in the transaction of the change itself, so both land or neither: its creation
(``Writer.insert``, or PostgreSQL's one-statement insert), an update of its content,
metadata, timestamp or TTL or of its status (``Updater``), a ``supersedes`` link pointing at
it (``Links.insert``, or a link changed into one), new source messages merged into it by
extraction (a duplicate found: ``merged``, with all its sources) and its deletion
(``Deleter.delete_where``: one delete, a user's or a thread's cascade, a message's cascade,
the retention purge). A version holds what the row held right after the change, the fields
it changed, when, and who (``core._shared._actor``); versions of one memory are numbered
1, 2, ... under the primary key ``(memory_id, version)``, a deleted id created again going
on from its tombstone.

Deleting a memory erases the content, metadata and sources of its earlier versions and adds
one ``deleted`` version without them (the tombstone: id, time, who), so a deleted memory's
text is gone from the history too. Messages, profiles, threads and images have no history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from oracleagentmemory.apis.records import MemoryVersion
from oracleagentmemory.core.store._dialect import Dialect, chunked
from oracleagentmemory.core.store._jsontext import load_json_column
from oracleagentmemory.core.store._store_core import StoreCore, check_lookup
from oracleagentmemory.core.store._time import iso, utcnow
from oracleagentmemory.core.store.schema._rows import PlannedRecord

COLUMNS = (
    "memory_id, version, change, at, actor, record_type, user_id, agent_id, content, metadata,"
    " status, changed, sources, related_id"
)
CREATED_FIELDS = "content,metadata,status"
"""What a creation sets (``MemoryVersion.changed`` of version 1)."""
SUPERSEDES = frozenset({"supersedes"})
"""Relation types whose target is superseded by their source."""
SUPERSEDED_BY = frozenset({"superseded_by", "is_superseded_by"})
"""Relation types whose source is superseded by their target."""


def _next_version(t: Any, id_sql: str) -> str:
    """SQL for the next version number of the memory ``id_sql`` names."""
    latest = f"SELECT MAX(x.version) FROM {t.history} x WHERE x.memory_id = {id_sql}"
    return f"COALESCE(({latest}), 0) + 1"


def sources_text(ids: Sequence[str]) -> str | None:
    return json.dumps(list(ids)) if ids else None


def add_created(d: Dialect, planned: Sequence[PlannedRecord], at: str) -> None:
    """Inside a write: version ``created`` of each new memory among ``planned``. Fresh ids
    start at version 1 (one multi-row insert); an id given by the caller goes on after its
    earlier life's tombstone, if it had one."""
    if not d.keeps_history:
        return
    memories = [p for p in planned if p.family == "memory"]
    if not memories:
        return
    t = d.tables

    def row(p: PlannedRecord) -> tuple[Any, ...]:
        return (
            at,
            p.actor,
            p.record_type,
            p.user_id,
            p.agent_id,
            p.content,
            p.metadata_json,
            p.status.value,
            CREATED_FIELDS,
            sources_text(p.sources),
        )

    fresh = [(p.id, 1, "created", *row(p), None) for p in memories if p.generated_id]
    if fresh:
        d.insert_rows(t.history, COLUMNS, fresh, 256)
    given = [(p.id, p.id, *row(p)) for p in memories if not p.generated_id]
    if given and d.layout is not None:  # distributed: no subquery inside an INSERT
        ids = [g[0] for g in given]
        top = dict(
            d.execute(
                f"SELECT memory_id, MAX(version) FROM {t.history} WHERE memory_id IN"
                f" ({','.join('?' * len(ids))}) GROUP BY memory_id",
                ids,
            )
        )
        rows = [(g[0], int(top.get(g[0]) or 0) + 1, "created", *g[2:], None) for g in given]
        d.insert_rows(t.history, COLUMNS, rows, 256)
    elif given:
        d.executemany(
            f"INSERT INTO {t.history} ({COLUMNS}) VALUES (?, {_next_version(t, '?')}, 'created',"
            " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            given,
        )


def add_versions(
    d: Dialect,
    where: str,
    params: Sequence[Any],
    change: str,
    actor: str | None,
    changed: Sequence[str] = (),
    *,
    related_id: str | None = None,
    tombstone: bool = False,
    at: str | None = None,
    sources: str | None = None,
) -> None:
    """Inside a write: a version ``change`` of each memory record ``r`` matching ``where``,
    copied from its row as it is now (``tombstone``: without content or metadata)."""
    if not d.keeps_history:
        return
    t = d.tables
    # Citus: the memories' users locked (numbered one writer at a time, as by FOR_WRITE).
    where, params = d.locked_where(t.records, "r", f"r.family = 'memory' AND ({where})", params)
    content, metadata = ("NULL", "NULL") if tombstone else ("r.content", "r.metadata")
    shard, version, source = "", _next_version(t, "r.id"), f"{t.records} r"
    if d.layout is not None:  # distributed: the versions so far joined on the user's shard
        shard, version = "shard_user, ", "COALESCE(x.top, 0) + 1"
        source += (
            f" LEFT JOIN (SELECT shard_user, memory_id, MAX(version) AS top FROM {t.history}"
            " GROUP BY shard_user, memory_id) x ON x.memory_id = r.id"
            " AND x.shard_user = r.shard_user"
        )
    d.execute(
        f"INSERT INTO {t.history} ({shard}{COLUMNS}) SELECT {shard and 'r.' + shard}r.id,"
        f" {version}, ?, ?, ?,"
        f" r.record_type, r.user_id, r.agent_id, {content}, {metadata}, r.status, ?, ?, ?"
        # Locked (PostgreSQL): versions of one memory are numbered one writer at a time.
        f" FROM {source} WHERE r.family = 'memory' AND ({where}){d.FOR_WRITE}",
        [
            change,
            at or iso(utcnow()),
            actor,
            ",".join(changed) or None,
            sources,
            related_id,
            *params,
        ],
    )


def erase_and_bury(d: Dialect, rids: Sequence[int], actor: str | None) -> None:
    """Inside a delete, before the records go: the memories among ``rids`` lose the content,
    metadata and sources of every version, and get their tombstone."""
    if not d.keeps_history or not rids:
        return
    t = d.tables
    marks = ",".join("?" * len(rids))
    d.execute(
        f"UPDATE {t.history} SET content = NULL, metadata = NULL, sources = NULL"
        f" WHERE memory_id IN (SELECT id FROM {t.records} WHERE rid IN ({marks})"
        " AND family = 'memory')",
        list(rids),
    )
    add_versions(d, f"r.rid IN ({marks})", list(rids), "deleted", actor, tombstone=True)


def read_history(core: StoreCore, memory_id: str) -> list[MemoryVersion]:
    """The versions of ``memory_id``, oldest first (empty: none, or an old schema)."""
    check_lookup(memory_id, "memory_id")
    d = core.dialect
    cols = d.select_list(COLUMNS, ("metadata",))
    with core.lock:
        core.check_open()
        if not d.keeps_history:
            return []
        rows = d.execute(
            f"SELECT {cols} FROM {d.tables.history} WHERE memory_id = ? ORDER BY version",
            [memory_id],
        )
    return [version_of(row) for row in rows]


def version_of(row: Sequence[Any]) -> MemoryVersion:
    """A history row (``COLUMNS`` order, metadata as text) as a :class:`MemoryVersion`."""
    (
        memory_id,
        version,
        change,
        at,
        actor,
        record_type,
        user_id,
        agent_id,
        content,
        metadata,
        status,
        changed,
        sources,
        related_id,
    ) = row
    when = datetime.fromisoformat(at)
    return MemoryVersion(
        version=int(version),
        memory_id=str(memory_id),
        change=change,
        at=when if when.tzinfo is not None else when.replace(tzinfo=UTC),
        actor=actor,
        content=content,
        metadata=load_json_column(metadata),
        memory_type=record_type,
        status=status,
        user_id=user_id,
        agent_id=agent_id,
        changed=tuple(changed.split(",")) if changed else (),
        source_message_ids=tuple(json.loads(sources)) if sources else (),
        superseded_by=related_id,
    )


def restore_history(core: StoreCore, versions: Sequence[MemoryVersion]) -> int:
    """Replace the history of the memories ``versions`` name with exactly those versions,
    in one transaction (an import carrying its source's history); returns how many."""
    d = core.dialect
    rows = [
        (
            v.memory_id,
            v.version,
            v.change,
            iso(v.at),
            v.actor,
            v.memory_type,
            v.user_id,
            v.agent_id,
            v.content,
            None if v.metadata is None else json.dumps(v.metadata),
            None if v.status is None else v.status.value,
            ",".join(v.changed) or None,
            sources_text(v.source_message_ids),
            v.superseded_by,
        )
        for v in versions
    ]
    ids = list(dict.fromkeys(v.memory_id for v in versions))
    with core.lock:
        core.check_open()
        if not d.keeps_history or not rows:
            return 0
        with d.transaction():
            for part in chunked(ids, 500):
                marks = ",".join("?" * len(part))
                d.execute(f"DELETE FROM {d.tables.history} WHERE memory_id IN ({marks})", part)
            d.insert_rows(d.tables.history, COLUMNS, rows, 256)
    return len(rows)

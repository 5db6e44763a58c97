"""Typed links between stored records: the relations part of the SQL store.

One orientation is stored per endpoint pair; ``opposite_relation_type`` names the relation
seen from the target. The built-in memory link types have fixed opposites. Today both
endpoints must be memory-like records, as in the reference.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES, Record, RecordStatus
from oracleagentmemory.apis.relations import MEMORY_LINK_TYPES, MemoryLink, RecordRelation
from oracleagentmemory.core._shared._actor import current_actor
from oracleagentmemory.core._shared._end_user import current_end_user
from oracleagentmemory.core.store._jsontext import load_json_column
from oracleagentmemory.core.store._limits import MAX_ID_CHARS, MAX_LIST_ROWS, check_text
from oracleagentmemory.core.store._reads import Reader
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store._time import iso, parse_timestamp, stored_time, utcnow
from oracleagentmemory.core.store.schema._history import SUPERSEDED_BY, SUPERSEDES, add_versions
from oracleagentmemory.core.store.schema._planning import (
    FAMILY,
    broadcast,
    check_metadata,
    check_positive_int,
    family_of,
    new_id,
)
from oracleagentmemory.core.store.schema._validity import as_of_sql, reconsider, supersede
from oracleagentmemory.core.store.search._filters import validate_metadata_filter
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper

_REL_COLS = (
    "id, source_record_id, source_record_type, target_record_id, target_record_type,"
    " relation_type, opposite_relation_type, timestamp, metadata, created_at"
)


_json = load_json_column


def relation_from_row(row: Sequence[Any]) -> RecordRelation:
    (rid, src, src_type, tgt, tgt_type, rel, opp, ts, meta, created) = row
    cls = (
        MemoryLink
        if src_type in MEMORY_RECORD_TYPES
        and tgt_type in MEMORY_RECORD_TYPES
        and rel in MEMORY_LINK_TYPES
        else RecordRelation
    )
    return cls(rid, src, src_type, tgt, tgt_type, rel, opp, ts, _json(meta), stored_time(created))


def _check_type_name(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"{name} is longer than {MAX_ID_CHARS} characters")
    return check_text(value, name)


def _as_list(value: Any, name: str) -> builtins.list[Any]:
    """A string, or a list of them, as a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return value
    raise TypeError(f"{name} must be a string or a list of strings, got {type(value).__name__}")


def _opposite(relation_type: str, opposite: Any, name: str) -> str:
    fixed = MEMORY_LINK_TYPES.get(relation_type)
    if fixed is not None:
        if opposite not in (NOT_SET_MARKER, None, fixed):
            raise ValueError(
                f"{name}: {relation_type!r} is a built-in link type whose opposite is "
                f"{fixed!r}, not {opposite!r}"
            )
        return fixed
    if opposite in (NOT_SET_MARKER, None):
        return relation_type  # a custom relation reads the same both ways unless told
    return _check_type_name(opposite, name)


def _kept_opposite(was: str, was_opposite: str, relation_type: str) -> str:
    """The opposite a relation keeps when its type becomes the custom ``relation_type``
    with the opposite omitted: the stored one, unless it was only derived (a built-in
    type's fixed inverse, or a custom type's own name), then the new type's own name."""
    derived = was in MEMORY_LINK_TYPES or was_opposite == was
    return relation_type if derived else was_opposite


@dataclasses.dataclass(frozen=True)
class PlannedRelation:
    """One validated relation row (in ``_REL_COLS`` order) and its cross-user opt-in."""

    values: tuple[Any, ...]
    allow_cross_user: bool


def link_ends(row: PlannedRelation) -> tuple[tuple[str, str], tuple[str, str]]:
    """A planned link's two ends as (family, id): their users are the link's to lock."""
    _, src, src_type, tgt, tgt_type = row.values[:5]
    return (FAMILY[src_type], src), (FAMILY[tgt_type], tgt)


def plan_relations(
    source_record_ids: Any,
    source_record_types: Any,
    target_record_ids: Any,
    target_record_types: Any,
    relation_types: Any,
    opposite_relation_types: Any = NOT_SET_MARKER,
    relation_ids: Any = NOT_SET_MARKER,
    timestamps: Any = NOT_SET_MARKER,
    metadata: Any = NOT_SET_MARKER,
    allow_cross_user: Any = False,
) -> builtins.list[PlannedRelation]:
    """Validate ``add_relations`` arguments into rows, before any I/O."""
    if not isinstance(allow_cross_user, bool):
        raise TypeError("allow_cross_user must be a bool")
    sources = _as_list(source_record_ids, "source_record_ids")
    n = len(sources)
    align = "source_record_ids"
    if n == 0:
        return []
    src_types = broadcast("source_record_types", source_record_types, n, None, aligned_with=align)
    targets = broadcast("target_record_ids", target_record_ids, n, None, aligned_with=align)
    tgt_types = broadcast("target_record_types", target_record_types, n, None, aligned_with=align)
    rel_types = broadcast("relation_types", relation_types, n, None, aligned_with=align)
    opposites = broadcast(
        "opposite_relation_types", opposite_relation_types, n, NOT_SET_MARKER, aligned_with=align
    )
    ids = broadcast("relation_ids", relation_ids, n, None, aligned_with=align)
    stamps = broadcast("timestamps", timestamps, n, None, aligned_with=align)
    metas = broadcast("metadata", metadata, n, None, aligned_with=align)
    rows = []
    pairs: set[frozenset[tuple[str, str]]] = set()
    seen_ids: set[str] = set()
    created = iso(utcnow())
    for i in range(n):
        for value, name in (
            (sources[i], "source_record_ids"),
            (targets[i], "target_record_ids"),
        ):
            _check_type_name(value, name)
        for value, name in (
            (src_types[i], "source_record_types"),
            (tgt_types[i], "target_record_types"),
        ):
            if not isinstance(value, str) or value not in MEMORY_RECORD_TYPES:
                raise ValueError(
                    f"{name}: links join memory-like records "
                    f"({', '.join(MEMORY_RECORD_TYPES)}), not {value!r}"
                )
        rel = _check_type_name(rel_types[i], "relation_types")
        opp = _opposite(rel, opposites[i], "opposite_relation_types")
        if (sources[i], src_types[i]) == (targets[i], tgt_types[i]):
            raise ValueError("target_record_ids: a record cannot be linked to itself")
        pair = frozenset({(src_types[i], sources[i]), (tgt_types[i], targets[i])})
        if pair in pairs:
            raise ValueError("relation_types: one endpoint pair can hold one relation only")
        pairs.add(pair)
        rid = ids[i] if ids[i] is not None else new_id()
        if not isinstance(rid, str) or not rid:
            raise TypeError("relation_ids must be non-empty strings or None")
        _check_type_name(rid, "relation_ids")
        if rid in seen_ids:
            raise ValueError(f"relation_ids: {rid!r} appears twice in one call")
        seen_ids.add(rid)
        if stamps[i] is not None:
            parse_timestamp(stamps[i], "timestamps")
        meta_json = check_metadata(metas[i])
        values = (
            rid,
            sources[i],
            src_types[i],
            targets[i],
            tgt_types[i],
            rel,
            opp,
            stamps[i],
            meta_json,
            created,
        )
        rows.append(PlannedRelation(values, allow_cross_user))
    return rows


class Links:
    """The relations part: typed links between records, and following them from search."""

    def __init__(self, core: StoreCore, keeper: IndexKeeper, reader: Reader) -> None:
        self._core = core
        self._keeper = keeper
        self._reader = reader
        self._cols = core.dialect.select_list(_REL_COLS, ("metadata",))

    def add_relations(
        self,
        source_record_ids: str | builtins.list[str],
        source_record_types: str | builtins.list[str],
        target_record_ids: str | builtins.list[str],
        target_record_types: str | builtins.list[str],
        relation_types: str | builtins.list[str],
        opposite_relation_types: Any = NOT_SET_MARKER,
        relation_ids: Any = NOT_SET_MARKER,
        timestamps: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
        allow_cross_user: bool = False,
    ) -> builtins.list[str]:
        rows = plan_relations(
            source_record_ids,
            source_record_types,
            target_record_ids,
            target_record_types,
            relation_types,
            opposite_relation_types,
            relation_ids,
            timestamps,
            metadata,
            allow_cross_user,
        )
        if not rows:
            return []
        core = self._core
        actor = current_actor()
        with core.lock:
            core.check_open()
            # Locks: see insert(); more users than a shared write may lock: store-wide.
            self._keeper.shared_else_store_wide(lambda: self.insert(rows, actor))
        return [row.values[0] for row in rows]

    def insert(self, rows: Sequence[PlannedRelation], actor: str | None = None) -> None:
        """Inside a write: check the endpoints and clashes, then insert ``rows``; a memory a
        ``supersedes`` link points at gets a ``superseded`` version by ``actor``.

        Locks (no store-wide one): each endpoint's row ``FOR KEY SHARE`` (a delete of it
        waits, an update of the target's history too; not under row security, where only
        rows the user may change could be locked) and the endpoint pair's scope key (one
        relation per pair among concurrent writers)."""
        d = self._core.dialect
        t = d.tables
        hold = " FOR KEY SHARE OF r" if d.FOR_WRITE and current_end_user() is None else ""
        # Without row locks (Citus): the ends' users, locked in one go.
        d.lock_users((), [end for row in rows for end in link_ends(row)])
        sources_users: list[str | None] = []
        for row in rows:
            rel_id, src, src_type, tgt, tgt_type = row.values[:5]
            users = []
            for rid, rtype in ((src, src_type), (tgt, tgt_type)):
                where, params = d.locked_where(
                    t.records,
                    "r",
                    "family = ? AND id = ? AND record_type = ?",
                    [FAMILY[rtype], rid, rtype],
                )
                found = d.execute(f"SELECT user_id FROM {t.records} r WHERE {where}{hold}", params)
                if not found:
                    raise ValueError(f"no {rtype} record with id {rid!r} to link")
                users.append(found[0][0])
            sources_users.append(users[0])
            if users[0] != users[1] and not row.allow_cross_user:
                raise ValueError(
                    f"{src_type} {src!r} belongs to user {users[0]!r} and {tgt_type} {tgt!r} "
                    f"to user {users[1]!r}: links across users need an explicit opt-in "
                    "(allow_cross_user=True)"
                )
            d.lock_scope("link:" + "|".join(sorted((f"{src_type}:{src}", f"{tgt_type}:{tgt}"))))
            if d.execute(f"SELECT 1 FROM {t.relations} WHERE id = ?", [rel_id]):
                raise ValueError(f"relation_ids: {rel_id!r} already exists")
            clash = d.execute(
                f"SELECT id FROM {t.relations} WHERE (source_record_type = ? AND"
                " source_record_id = ? AND target_record_type = ? AND target_record_id = ?)"
                " OR (source_record_type = ? AND source_record_id = ? AND"
                " target_record_type = ? AND target_record_id = ?)",
                [src_type, src, tgt_type, tgt, tgt_type, tgt, src_type, src],
            )
            if clash:
                raise ValueError(
                    f"these records are already linked by relation {clash[0][0]!r}; one "
                    "endpoint pair holds one relation (update it instead)"
                )
        columns, values, _ = d.placed(
            _REL_COLS, [row.values for row in rows], users=sources_users
        )  # a link lives on its source's user's shard (a distributed layout)
        d.executemany(
            f"INSERT INTO {t.relations} ({columns}) VALUES"
            f" ({','.join('?' * (columns.count(',') + 1))})",
            values,
        )
        for row in rows:
            src, src_type, tgt, tgt_type, rel = row.values[1:6]
            if rel in SUPERSEDED_BY:
                src, src_type, tgt, tgt_type = tgt, tgt_type, src, src_type
            elif rel not in SUPERSEDES:
                continue
            _superseded(d, src, src_type, tgt, tgt_type, actor)

    def _relation_conditions(self, **given: Any) -> tuple[builtins.list[str], builtins.list[Any]]:
        conds, params = [], []
        column = {"relation_id": "id"}
        for name, value in given.items():
            if value is NOT_SET_MARKER:
                continue
            _check_type_name(value, name)
            conds.append(f"{column.get(name, name)} = ?")
            params.append(value)
        return conds, params

    def get_relation(
        self,
        source_record_id: Any = NOT_SET_MARKER,
        source_record_type: Any = NOT_SET_MARKER,
        target_record_id: Any = NOT_SET_MARKER,
        target_record_type: Any = NOT_SET_MARKER,
        relation_type: Any = NOT_SET_MARKER,
        relation_id: Any = NOT_SET_MARKER,
    ) -> RecordRelation | None:
        endpoints = (
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
        )
        if relation_id is NOT_SET_MARKER and NOT_SET_MARKER in endpoints:
            raise ValueError(
                "give relation_id, or all of source_record_id, source_record_type, "
                "target_record_id, target_record_type and relation_type"
            )
        found = self.list_relations(
            relation_type=relation_type,
            source_record_id=source_record_id,
            source_record_type=source_record_type,
            target_record_id=target_record_id,
            target_record_type=target_record_type,
            relation_id=relation_id,
            limit=1,
        )
        return found[0] if found else None

    def list_relations(
        self,
        relation_type: Any = NOT_SET_MARKER,
        source_record_id: Any = NOT_SET_MARKER,
        source_record_type: Any = NOT_SET_MARKER,
        target_record_id: Any = NOT_SET_MARKER,
        target_record_type: Any = NOT_SET_MARKER,
        limit: Any = NOT_SET_MARKER,
        metadata_filter: Any = NOT_SET_MARKER,
        relation_id: Any = NOT_SET_MARKER,
    ) -> builtins.list[RecordRelation]:
        conds, params = self._relation_conditions(
            relation_type=relation_type,
            source_record_id=source_record_id,
            source_record_type=source_record_type,
            target_record_id=target_record_id,
            target_record_type=target_record_type,
            relation_id=relation_id,
        )
        if metadata_filter is None:
            conds.append("metadata IS NULL")
        elif metadata_filter is not NOT_SET_MARKER:
            fsql, fparams = self._core.dialect.compile_filter(
                validate_metadata_filter(metadata_filter), "metadata"
            )
            conds.append(fsql)
            params.extend(fparams)
        if limit is NOT_SET_MARKER:
            limit = MAX_LIST_LIMIT
        elif limit is not None:
            check_positive_int(limit, "limit", maximum=MAX_LIST_ROWS)
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        sql = f"SELECT {self._cols} FROM {self._core.dialect.tables.relations}{where}"
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY created_at DESC, id DESC LIMIT ?) w"
            params.append(limit)
        sql += " ORDER BY created_at, id"
        with self._core.lock:
            self._core.check_open()
            rows = self._core.dialect.execute(sql, params)
        return [relation_from_row(r) for r in rows]

    def update_relations(
        self,
        relation_ids: str | builtins.list[str],
        relation_types: Any = NOT_SET_MARKER,
        opposite_relation_types: Any = NOT_SET_MARKER,
        timestamps: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
    ) -> builtins.list[str]:
        ids = _as_list(relation_ids, "relation_ids")
        n = len(ids)
        align = "relation_ids"
        rels = broadcast("relation_types", relation_types, n, NOT_SET_MARKER, aligned_with=align)
        opps = broadcast(
            "opposite_relation_types",
            opposite_relation_types,
            n,
            NOT_SET_MARKER,
            aligned_with=align,
        )
        stamps = broadcast("timestamps", timestamps, n, NOT_SET_MARKER, aligned_with=align)
        metas = broadcast("metadata", metadata, n, NOT_SET_MARKER, aligned_with=align)
        for rid in ids:
            _check_type_name(rid, "relation_ids")
        with self._core.lock:  # the relation rows' locks; too many users: store-wide
            return self._keeper.shared_else_store_wide(
                lambda: self._update(ids, rels, opps, stamps, metas)
            )

    def _update(
        self,
        ids: builtins.list[str],
        rels: builtins.list[Any],
        opps: builtins.list[Any],
        stamps: builtins.list[Any],
        metas: builtins.list[Any],
    ) -> builtins.list[str]:
        """Inside a write: :meth:`update_relations`'s changes; the ids changed."""
        d = self._core.dialect
        t = d.tables
        updated: builtins.list[str] = []
        supersedes: builtins.list[tuple[str, str, str, str]] = []
        no_longer: builtins.list[tuple[str, str]] = []
        if ids:  # Citus: their users, in one go
            d.lock_where(t.relations, "r", f"r.id IN ({','.join('?' * len(ids))})", ids)
        for i, rid in enumerate(ids):
            where, params = d.locked_where(t.relations, "r", "r.id = ?", [rid])
            current = d.execute(
                f"SELECT relation_type, opposite_relation_type, source_record_id,"
                f" source_record_type, target_record_id, target_record_type"
                f" FROM {t.relations} r WHERE {where}{d.FOR_WRITE}",
                params,
            )
            if not current:
                continue
            sets, params = [], []
            if rels[i] is not NOT_SET_MARKER or opps[i] is not NOT_SET_MARKER:
                rel = (
                    current[0][0]
                    if rels[i] is NOT_SET_MARKER
                    else _check_type_name(rels[i], "relation_types")
                )
                opp = opps[i]
                if opp is NOT_SET_MARKER and rel not in MEMORY_LINK_TYPES:
                    opp = _kept_opposite(current[0][0], current[0][1], rel)
                sets += ["relation_type = ?", "opposite_relation_type = ?"]
                params += [rel, _opposite(rel, opp, "opposite_relation_types")]
                # When the superseded end changes (a link into or out of supersedes, or
                # turned around), the old end is reconsidered and the new one superseded.
                was, ends = current[0][0], current[0][2:6]
                before, after = _old_ends([(was, *ends)]), _old_ends([(rel, *ends)])
                if before != after:
                    no_longer += before
                    if rel in SUPERSEDES:
                        supersedes.append(ends)
                    elif rel in SUPERSEDED_BY:
                        supersedes.append((*ends[2:], *ends[:2]))
            if stamps[i] is not NOT_SET_MARKER:
                if stamps[i] is not None:
                    parse_timestamp(stamps[i], "timestamps")
                sets.append("timestamp = ?")
                params.append(stamps[i])
            if metas[i] is not NOT_SET_MARKER:
                sets.append("metadata = ?")
                params.append(check_metadata(metas[i]))
            if not sets:
                raise ValueError("update_relations needs at least one field to change")
            d.execute(f"UPDATE {t.relations} SET {', '.join(sets)} WHERE id = ?", [*params, rid])
            updated.append(rid)
        # A link turned into ``supersedes``: its target's version and validity, as insert;
        # one that no longer is: its old end is true again unless another still is.
        for src, src_type, tgt, tgt_type in supersedes:
            _superseded(d, src, src_type, tgt, tgt_type, current_actor())
        reconsider(d, no_longer)
        return updated

    def delete_relations(self, relation_ids: str | builtins.list[str]) -> int:
        ids = _as_list(relation_ids, "relation_ids")
        for rid in ids:
            _check_type_name(rid, "relation_ids")
        if not ids:
            return 0
        d = self._core.dialect
        marks = ",".join("?" * len(ids))

        def delete() -> int:
            d.lock_where(d.tables.relations, "r", f"r.id IN ({marks})", ids)  # Citus: users
            found = d.execute(
                f"SELECT relation_type, source_record_id, source_record_type,"
                f" target_record_id, target_record_type FROM {d.tables.relations}"
                f" WHERE id IN ({marks})",
                ids,
            )
            d.execute(f"DELETE FROM {d.tables.relations} WHERE id IN ({marks})", ids)
            reconsider(d, _old_ends(found))
            return len(found)

        with self._core.lock:  # the relation rows' locks; too many users: store-wide
            return self._keeper.shared_else_store_wide(delete)

    def expand_links(
        self,
        records: Sequence[Record],
        num_hops: int,
        max_linked_results: int,
        include_invalid: bool,
        exact_scope: Mapping[str, str | None] | None = None,
        as_of: float | None = None,
    ) -> builtins.list[Record]:
        if num_hops <= 0 or max_linked_results <= 0 or not records:
            return builtins.list(records)
        children: dict[int, builtins.list[tuple[RecordRelation, Record]]] = {}
        self._walk_links(
            records,
            num_hops,
            max_linked_results,
            include_invalid,
            children,
            exact_scope or {},
            as_of,
        )

        def attach(node: Record) -> Record:
            links = children.get(id(node))
            if not links:
                return node
            return dataclasses.replace(
                node, linked_results=tuple((rel, attach(child)) for rel, child in links)
            )

        return [attach(record) for record in records]

    def _walk_links(
        self,
        records: Sequence[Record],
        num_hops: int,
        max_linked_results: int,
        include_invalid: bool,
        children: dict[int, builtins.list[tuple[RecordRelation, Record]]],
        scope: Mapping[str, str | None],
        as_of: float | None = None,
    ) -> None:
        """Breadth-first walk that fills ``children`` (keyed by ``id()`` of the node);
        ``as_of`` (epoch seconds): only records true then are linked."""
        d = self._core.dialect
        budget = max_linked_results
        for record in records:
            seen = {(record.record_type, record.id)}
            frontier: builtins.list[Record] = [record]
            for _ in range(num_hops):
                if not frontier:
                    break  # nothing left to expand: the remaining hops would find nothing
                next_frontier: builtins.list[Record] = []
                for node in frontier:
                    if budget <= 0:
                        return
                    rows = d.execute(
                        f"SELECT {self._cols} FROM {d.tables.relations} WHERE"
                        " (source_record_type = ? AND source_record_id = ?) OR"
                        " (target_record_type = ? AND target_record_id = ?)"
                        " ORDER BY created_at, id",
                        [node.record_type, node.id, node.record_type, node.id],
                    )
                    links = []
                    for row in rows:
                        rel = relation_from_row(row)
                        outward = (rel.source_record_type, rel.source_record_id) == (
                            node.record_type,
                            node.id,
                        )
                        other = (
                            (rel.target_record_type, rel.target_record_id)
                            if outward
                            else (rel.source_record_type, rel.source_record_id)
                        )
                        if other in seen:
                            continue
                        linked = self._reader.get(other[0], other[1], NOT_SET_MARKER)
                        if (
                            linked is None
                            or (not include_invalid and linked.status is RecordStatus.INVALID)
                            or any(
                                getattr(linked, f"{dim}_id", None) != value
                                for dim, value in scope.items()
                            )
                            or (as_of is not None and not self._true_at(linked, as_of))
                        ):
                            continue
                        seen.add(other)
                        links.append((rel, linked))
                        next_frontier.append(linked)
                        budget -= 1
                        if budget <= 0:
                            break
                    children[id(node)] = links
                frontier = next_frontier

    def _true_at(self, record: Record, as_of: float) -> bool:
        """Whether ``record`` was true at ``as_of`` (``schema/_validity``)."""
        d = self._core.dialect
        cond, params = as_of_sql(as_of)
        return bool(
            d.execute(
                f"SELECT 1 FROM {d.tables.records} r WHERE r.family = ? AND r.id = ?"
                f" AND r.record_type = ? AND {cond}",
                [family_of(record.record_type), record.id, record.record_type, *params],
            )
        )


def _old_ends(links: Sequence[Sequence[Any]]) -> builtins.list[tuple[str, str]]:
    """The superseded ends (id, type) of links given as (type, source id, source type,
    target id, target type)."""
    out: builtins.list[tuple[str, str]] = []
    for rel, src, src_type, tgt, tgt_type in links:
        if rel in SUPERSEDES:
            out.append((str(tgt), str(tgt_type)))
        elif rel in SUPERSEDED_BY:
            out.append((str(src), str(src_type)))
    return out


def _superseded(
    d: Any, src: str, src_type: str, tgt: str, tgt_type: str, actor: str | None
) -> None:
    """Inside a write: memory ``tgt``, superseded by ``src``, gets its ``superseded``
    version and stops being true when ``src`` became true (``schema/_validity``)."""
    if tgt_type not in MEMORY_RECORD_TYPES:
        return
    where = "r.id = ? AND r.record_type = ?"
    add_versions(d, where, [tgt, tgt_type], "superseded", actor, related_id=src)
    supersede(d, tgt, tgt_type, src, src_type)

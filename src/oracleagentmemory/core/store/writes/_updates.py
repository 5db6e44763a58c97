"""Updating one record in place: fields, retrieval rows, expiry and status.

Page 000's rules: omitted arguments leave a field unchanged, ``None`` clears it; new text
or ``index_text`` replaces the record's retrieval rows (embedded again unless vectors are
given), an embedding-only update keeps the rows' text. Everything from reading the row to
writing it is one transaction, and the in-process index is refreshed after the commit. An
update sets the record's ``updated_at``; a memory's adds a version to its history
(``schema/_history``) in the same transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core._shared._actor import current_actor
from oracleagentmemory.core.store._dialect import KeywordRow
from oracleagentmemory.core.store._limits import MAX_TTL_DAYS, check_text
from oracleagentmemory.core.store._store_core import StoreCore, check_lookup
from oracleagentmemory.core.store._time import (
    check_anchor,
    check_ttl_days,
    expiry,
    iso,
    parse_timestamp,
    resolve_ttl_days,
    utcnow,
)
from oracleagentmemory.core.store.schema._history import add_versions
from oracleagentmemory.core.store.schema._planning import (
    EXPIRING_FAMILIES,
    PROFILE_TYPES,
    SEARCHABLE_FAMILIES,
    check_dims,
    check_metadata,
    check_status,
    family_of,
    split_vectors,
)
from oracleagentmemory.core.store.schema._rows import (
    KEYWORD_ROW_INDEX,
    ChunkRow,
    RetrievalPlan,
    caller_chunk_list,
    plan_retrieval,
)
from oracleagentmemory.core.store.schema._validity import end_validity, reopen_validity
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper


class Updater:
    """The updates part."""

    def __init__(self, core: StoreCore, keeper: IndexKeeper) -> None:
        self._core = core
        self._keeper = keeper

    def update(
        self,
        record_type: str,
        record_id: str,
        *,
        content: Any,
        index_text: Any,
        embedding: Any,
        metadata: Any,
        timestamp: Any,
        ttl_days: Any,
        ttl_anchor: Any,
        status: Any,
        text: Any,
    ) -> int:
        family = family_of(record_type)
        check_lookup(record_id, "record_id")
        if content is not NOT_SET_MARKER and text is not NOT_SET_MARKER:
            raise ValueError("give either text or content, not both")
        if text is NOT_SET_MARKER:
            text = content
        given = [
            a is not NOT_SET_MARKER
            for a in (
                text,
                index_text,
                embedding,
                metadata,
                timestamp,
                ttl_days,
                ttl_anchor,
                status,
            )
        ]
        if not any(given):
            raise ValueError("update needs at least one field to change")
        if text is not NOT_SET_MARKER and text is not None:
            if not isinstance(text, str):
                raise TypeError("text must be a string or None")
            check_text(text, "text")
        if text is None:
            if family in PROFILE_TYPES:
                raise ValueError(f"text: {record_type} records do not support text=None")
            if index_text not in (NOT_SET_MARKER, None) or embedding not in (NOT_SET_MARKER, None):
                raise ValueError(
                    "text=None clears the stored and retrieval text, so it cannot be combined "
                    "with index_text or embedding values"
                )
        vectors = None
        if embedding is not NOT_SET_MARKER and embedding is not None:
            if self._core.vector_dim is None:
                raise ValueError(
                    "embedding: this store has no local vector storage; give index_text instead"
                )
            vectors = split_vectors(embedding, "embedding")
            check_dims({int(v.shape[0]) for v in vectors[1]}, self._core.vector_dim, "embedding")
            if index_text is None and vectors[0] != "empty":
                raise ValueError(
                    "index_text=None clears the retrieval rows, so explicit embeddings are not "
                    "allowed in the same call"
                )
        caller_chunks: builtins.list[str] | None = None
        if isinstance(index_text, builtins.list | tuple):
            caller_chunks = caller_chunk_list(builtins.list(index_text), "index_text")
        elif index_text not in (NOT_SET_MARKER, None):
            if not isinstance(index_text, str):
                raise TypeError("index_text must be a string, a list of strings or None")
            check_text(index_text, "index_text")
        meta_json = NOT_SET_MARKER if metadata is NOT_SET_MARKER else check_metadata(metadata)
        if timestamp is not NOT_SET_MARKER and timestamp is not None:
            parse_timestamp(timestamp, "timestamp")
        if ttl_days is not NOT_SET_MARKER:
            check_ttl_days(ttl_days)
        anchor = (
            TimeToLiveAnchor.CREATED_AT
            if ttl_anchor is NOT_SET_MARKER
            else check_anchor(ttl_anchor)
        )
        new_status = None if status is NOT_SET_MARKER else check_status(status, "status")

        core = self._core
        with core.lock:
            core.check_open()
            d = core.dialect
            t = d.tables
            # One transaction from reading the row to writing it: another process cannot
            # delete or change the record in between (the row lock of FOR_WRITE: no
            # store-wide lock, so other users' writes run beside it).
            with self._keeper.write(shared=True):
                where, found_params = d.locked_where(  # Citus: the record's user's lock
                    t.records,
                    "r",
                    "family = ? AND id = ? AND record_type = ?",
                    [family, record_id, record_type],
                )
                found = d.execute(
                    f"SELECT {core.cols} FROM {t.records} r WHERE {where}{d.FOR_WRITE}",
                    found_params,
                )
                if not found:
                    return 0
                row = found[0]
                rid = int(row[0])
                old_event_ts, created_at = row[10], row[11]
                plan: RetrievalPlan | None = None
                if family in SEARCHABLE_FAMILIES:
                    plan = self._plan_rows(rid, text, index_text, caller_chunks, embedding, vectors)
                    if plan is not None and plan.needs_vectors:
                        core.fill_vectors([plan])
                sets: builtins.list[str] = []
                params: builtins.list[Any] = []
                if text is not NOT_SET_MARKER:
                    sets.append("content = ?")
                    params.append(text)
                if meta_json is not NOT_SET_MARKER:
                    sets.append("metadata = ?")
                    params.append(meta_json)
                event_ts = old_event_ts
                if timestamp is not NOT_SET_MARKER:
                    sets.append("event_ts = ?")
                    params.append(timestamp)
                    event_ts = timestamp
                    if d.keeps_validity:  # true from its new event time (schema/_validity)
                        sets.append("valid_from = ?")
                        since = timestamp or created_at
                        params.append(parse_timestamp(since, "timestamp").timestamp())
                if (
                    ttl_days is not NOT_SET_MARKER or ttl_anchor is not NOT_SET_MARKER
                ) and family in EXPIRING_FAMILIES:
                    if (
                        ttl_days is not NOT_SET_MARKER
                        or core.retention.default_ttl_days is not None
                    ):
                        days = resolve_ttl_days(ttl_days, core.retention)
                    else:  # ttl_anchor alone, no schema default: re-anchor the record's own TTL
                        days = self._stored_ttl_days(rid, row)
                    sets += ["expires_at = ?", "ttl_days = ?"]
                    params += [
                        expiry(
                            days, anchor, datetime.fromisoformat(created_at), event_ts, "timestamp"
                        ),
                        days,
                    ]
                if new_status is not None:
                    sets.append("status = ?")
                    params.append(new_status.value)
                now = iso(utcnow())
                if d.keeps_history:
                    sets.append("updated_at = ?")
                    params.append(now)
                if sets:
                    d.execute(
                        f"UPDATE {t.records} SET {', '.join(sets)} WHERE rid = ?", [*params, rid]
                    )
                if new_status is not None and new_status.value != row[13]:
                    if new_status is RecordStatus.INVALID:  # true until now (schema/_validity)
                        end_validity(d, "r.rid = ?", [rid], utcnow().timestamp())
                    else:
                        reopen_validity(d, rid, utcnow().timestamp())
                if family == "memory":
                    given_fields = (
                        ("content", text is not NOT_SET_MARKER),
                        ("metadata", meta_json is not NOT_SET_MARKER),
                        ("timestamp", timestamp is not NOT_SET_MARKER),
                        ("ttl", ttl_days is not NOT_SET_MARKER or ttl_anchor is not NOT_SET_MARKER),
                        ("status", new_status is not None),
                        (
                            "retrieval",
                            index_text is not NOT_SET_MARKER or embedding is not NOT_SET_MARKER,
                        ),
                    )
                    changed = [name for name, yes in given_fields if yes]
                    kind = "status" if changed == ["status"] else "updated"
                    add_versions(d, "r.rid = ?", [rid], kind, current_actor(), changed, at=now)
                if plan is not None:
                    self._replace_chunks(rid, plan, (row[8], row[9], row[7]))
                d.note_changed([rid])
            self._keeper.refresh([rid])
        return 1

    def _stored_ttl_days(self, rid: int, row: Sequence[Any]) -> int | None:
        """The TTL, in days, a record was given (None: it never expires).

        Rows written before schema 3 kept only their expiry: the TTL is recovered from it and
        the anchor it fits (creation time, else the event timestamp).
        """
        d = self._core.dialect
        stored = d.execute(f"SELECT ttl_days FROM {d.tables.records} WHERE rid = ?", [rid])
        if stored and stored[0][0] is not None:
            return int(stored[0][0])
        expires_at = row[14]
        if expires_at is None:
            return None
        bases = [datetime.fromisoformat(row[11]).timestamp()]
        if row[10]:
            bases.append(parse_timestamp(row[10]).timestamp())
        for base in bases:
            days = (float(expires_at) - base) / 86400
            if abs(days - round(days)) < 1e-4 and round(days) >= 1:
                return round(days)
        return min(MAX_TTL_DAYS, max(1, round((float(expires_at) - bases[0]) / 86400)))

    def _plan_rows(
        self,
        rid: int,
        text: Any,
        index_text: Any,
        caller_chunks: builtins.list[str] | None,
        embedding: Any,
        vectors: tuple[str, builtins.list[NDArray[np.float32]]] | None,
    ) -> RetrievalPlan | None:
        """New retrieval rows for an update, or None to keep the current ones."""
        if text is NOT_SET_MARKER and index_text is NOT_SET_MARKER:
            if embedding is NOT_SET_MARKER:
                return None
            # Embedding-only update: reuse the record's existing chunk text rows (and its
            # keyword-only row, which has no vector).
            texts, keyword = stored_texts(self._core, rid)
            if vectors is None:  # embedding=None: keep the text rows, drop their vectors
                return RetrievalPlan([ChunkRow(tx) for tx in texts], keyword_text=keyword)
            kind, vecs = vectors
            if kind == "empty":
                if texts:
                    raise ValueError(
                        "embedding: an empty payload is allowed only for a record without "
                        "retrieval rows"
                    )
                return RetrievalPlan([])
            if len(vecs) == 1 and len(texts) > 1 and one_shared_vector(self._core, rid):
                # Rows cut from a text given one vector (too long for one row, or written
                # before such a text became one row) each hold it: each takes the new one.
                vecs = vecs * len(texts)
            if len(vecs) != max(1, len(texts)):
                raise ValueError(
                    f"embedding: {len(vecs)} vector(s) for {len(texts)} existing retrieval "
                    "rows; an embedding-only update must match them"
                )
            return RetrievalPlan(
                [ChunkRow(tx, v) for tx, v in zip(texts or [None], vecs, strict=True)],
                keyword_text=keyword,
            )
        if text is None or index_text is None:
            return RetrievalPlan([])  # cleared (conflicting payloads were rejected earlier)
        source = text if index_text is NOT_SET_MARKER else index_text
        return plan_retrieval(
            source=None if caller_chunks is not None else source,
            caller_chunks=caller_chunks,
            vectors=vectors,
            chunker=self._core.chunker,
            has_vectors=self._core.vector_dim is not None,
            explicit_none=embedding is None,
            name="embedding",
        )

    def _replace_chunks(
        self, rid: int, plan: RetrievalPlan, scope: tuple[str | None, str | None, str | None]
    ) -> None:
        replace_chunks(self._core, rid, plan, scope)


def stored_texts(core: StoreCore, rid: int) -> tuple[builtins.list[Any], str | None]:
    """A record's retrieval rows' texts, in order, and its keyword-only row's (or None)."""
    texts, keyword = [], None
    for index, tx in core.dialect.execute(
        f"SELECT chunk_index, chunk_text FROM {core.dialect.tables.chunks}"
        " WHERE rid = ? ORDER BY chunk_index",
        [rid],
    ):
        if index == KEYWORD_ROW_INDEX:
            keyword = tx
        else:
            texts.append(tx)
    return texts, keyword


def one_shared_vector(core: StoreCore, rid: int) -> bool:
    """Whether every retrieval row of a record (its keyword-only row aside) holds one and
    the same vector: rows cut from a text that was given one vector."""
    d = core.dialect
    blobs = [
        blob
        for (blob,) in d.execute(
            f"SELECT {d.vector_read_sql('vector')} FROM {d.tables.chunks}"
            f" WHERE rid = ? AND chunk_index <> {KEYWORD_ROW_INDEX}",
            [rid],
        )
    ]
    if not blobs or None in blobs or core.vector_dim is None:
        return False
    vectors = d.vectors_from_db(blobs, core.vector_dim)
    return bool((vectors == vectors[0]).all())


def replace_chunks(
    core: StoreCore,
    rid: int,
    plan: RetrievalPlan,
    scope: tuple[str | None, str | None, str | None],
) -> None:
    """Inside a write: swap a record's retrieval rows; ``scope`` is its (user, agent, thread)."""
    d = core.dialect
    t = d.tables
    old = [r[0] for r in d.execute(f"SELECT cid FROM {t.chunks} WHERE rid = ?", [rid])]
    if core.keyword_on_write:
        d.keyword_index_remove(old)
    d.chunks_leaving(old)
    d.execute(f"DELETE FROM {t.chunks} WHERE rid = ?", [rid])
    stored = plan.stored()
    cids = d.new_chunk_ids(len(stored))
    rows: builtins.list[tuple[Any, ...]] = []
    fts: builtins.list[KeywordRow] = []
    for (i, text, vector), cid in zip(stored, cids, strict=True):
        rows.append((cid, rid, i, text, None if vector is None else d.vector_to_db(vector)))
        if text:
            fts.append((cid, rid, i, text, *scope))
    d.insert_chunks(rows, fts if core.keyword_on_write else None, max(len(rows), 1))

"""Reading records back: rows to :class:`~oracleagentmemory.apis.records.Record` values.

``get``, ``list`` and a thread's messages, all under the store lock and all blind to
expired rows (purged later, see ``_retention``). Image bytes (the blob table) are read only
when asked for.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT
from oracleagentmemory.apis.records import (
    ImageRecord,
    MessageRecord,
    Record,
    RecordStatus,
    build_record,
)
from oracleagentmemory.core.store._dialect import Dialect, chunked
from oracleagentmemory.core.store._jsontext import load_json_column as _json
from oracleagentmemory.core.store._limits import MAX_LIST_ROWS, MAX_SEQ_NO
from oracleagentmemory.core.store._store_core import NOT_EXPIRED, StoreCore, check_lookup
from oracleagentmemory.core.store._time import stored_time
from oracleagentmemory.core.store.schema._message_parts import parts_from_extra
from oracleagentmemory.core.store.schema._planning import (
    PROFILE_TYPES,
    check_positive_int,
    check_scope_id,
    family_of,
)
from oracleagentmemory.core.store.search._filters import validate_metadata_filter
from oracleagentmemory.core.store.search._search_sql import same_as


@functools.lru_cache(maxsize=1 << 16)
def _epoch_iso(value: float | None) -> str | None:
    """Epoch seconds as the store prints its own times (``stored_time``: UTC, no offset);
    remembered, as every memory a search returns converts three of them."""
    if value is None:
        return None
    return datetime.fromtimestamp(float(value), UTC).replace(tzinfo=None).isoformat()


_updated_iso = functools.lru_cache(maxsize=1 << 16)(stored_time)
"""``stored_time`` of memories' ``updated_at``, remembered as :func:`_epoch_iso`."""


def to_record(row: Sequence[Any]) -> Record:
    """A record value from a row of ``COLS`` (and ``TIMES``, when the row has them)."""
    times = row[16:19]
    (
        _rid,
        family,
        rtype,
        rid,
        content,
        role,
        seq_no,
        thread_id,
        user_id,
        agent_id,
        event_ts,
        created_at,
        metadata,
        status,
        _exp,
        extra,
    ) = row[:16]
    kwargs: dict[str, Any] = {}
    if family == "thread":
        ext = _json(extra) or {}
        kwargs = {
            "runtime_config": ext.get("runtime_config"),
            "runtime_state": ext.get("runtime_state"),
        }
    elif family == "image":
        ext = _json(extra) or {}
        kwargs = {"mime_type": ext["mime_type"], "message_id": ext.get("message_id")}
    elif family == "thread_summary":
        ext = _json(extra) or {}
        content = ext.get("content")
        kwargs = {"_covered_through_seq_no": int(ext.get("covered_through_seq_no", 0))}
    elif family == "message" and extra:
        content = parts_from_extra(extra) or content
    elif family == "memory" and times:
        updated, since, until = times
        kwargs = {
            "updated_at": _updated_iso(updated),
            "valid_from": _epoch_iso(since),
            "valid_until": _epoch_iso(until),
        }
    return build_record(
        rtype,
        rid,
        content=content,
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        role=role,
        seq_no=seq_no,
        timestamp=event_ts or stored_time(created_at),
        metadata=_json(metadata),
        status=RecordStatus(status),
        **kwargs,
    )


def attach_bytes(
    dialect: Dialect, images: Sequence[ImageRecord], rids: Sequence[int]
) -> builtins.list[ImageRecord]:
    """Copies of ``images`` (their rids ``rids``) with their bytes loaded."""
    blobs: dict[int, bytes] = {}
    for part in chunked(builtins.list(rids), 500):
        marks = ",".join("?" * len(part))
        for rid, data in dialect.execute(
            f"SELECT rid, data FROM {dialect.tables.blobs} WHERE rid IN ({marks})", part
        ):
            blobs[int(rid)] = bytes(data)
    return [
        dataclasses.replace(image, bytes=blobs.get(rid))
        for image, rid in zip(images, rids, strict=True)
    ]


class Reader:
    """The reads part: one record, a filtered list, a thread's messages, rows by rid."""

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    def get(self, record_type: str, record_id: str, include_bytes: Any) -> Record | None:
        core = self._core
        family = family_of(record_type)
        check_lookup(record_id, "record_id")
        with core.lock:
            core.check_open()
            rows = core.dialect.execute(
                f"SELECT {core.cols} FROM {core.dialect.tables.records} r"
                f" WHERE family = ? AND id = ? AND record_type = ? AND {NOT_EXPIRED}",
                [family, record_id, record_type, time.time()],
            )
        if not rows:
            return None
        record = to_record(rows[0])
        if include_bytes is True and isinstance(record, ImageRecord):
            return attach_bytes(core.dialect, [record], [int(rows[0][0])])[0]
        return record

    def get_many(self, record_type: str, record_ids: Sequence[str]) -> dict[str, Record]:
        """The records of ``record_ids`` that exist and have not expired, by id: one query
        (per 500 ids) for what :meth:`get` answers one id at a time."""
        core = self._core
        family = family_of(record_type)
        if isinstance(record_ids, str):
            raise TypeError("record_ids must be a list of ids, not one string")
        ids = builtins.list(dict.fromkeys(check_lookup(i, "record_ids") for i in record_ids))
        out: dict[str, Record] = {}
        with core.lock:
            core.check_open()
            for part in chunked(ids, 500):
                marks = ",".join("?" * len(part))
                rows = core.dialect.execute(
                    f"SELECT {core.cols} FROM {core.dialect.tables.records} r WHERE family = ?"
                    f" AND id IN ({marks}) AND record_type = ? AND {NOT_EXPIRED}",
                    [family, *part, record_type, time.time()],
                )
                for row in rows:
                    record = to_record(row)
                    out[record.id] = record
        return out

    def list_records(
        self,
        record_types: Sequence[str],
        *,
        limit: Any,
        thread_id: Any,
        user_id: Any,
        agent_id: Any,
        metadata_filter: Any,
        record_id: Any,
        include_bytes: Any,
    ) -> builtins.list[Record]:
        core = self._core
        d = core.dialect
        if isinstance(record_types, str) or not record_types:
            raise TypeError("record_types must be a non-empty list of record type names")
        for rtype in record_types:
            family_of(rtype)
        if limit is NOT_SET_MARKER:
            limit = MAX_LIST_LIMIT
        elif limit is not None:
            check_positive_int(limit, "limit", maximum=MAX_LIST_ROWS)
        marks = ",".join("?" * len(record_types))
        conds = [f"r.record_type IN ({marks})", NOT_EXPIRED]
        params: builtins.list[Any] = [*record_types, time.time()]
        if not all(t in PROFILE_TYPES for t in record_types):
            scoped = (("thread_id", thread_id), ("user_id", user_id), ("agent_id", agent_id))
            for col, value in scoped:
                if value is not NOT_SET_MARKER:
                    cond, more = same_as(f"r.{col}", check_scope_id(value, col))
                    conds.append(cond)
                    params += more
        if record_id is not NOT_SET_MARKER:
            check_lookup(record_id, "record_id")
            conds.append("r.id = ?")
            params.append(record_id)
        if metadata_filter is None:
            conds.append("r.metadata IS NULL")
        elif metadata_filter is not NOT_SET_MARKER:
            flt = validate_metadata_filter(metadata_filter)
            sql, fparams = d.compile_filter(flt, "r.metadata")
            conds.append(sql)
            params.extend(fparams)
        sql = f"SELECT {core.cols} FROM {d.tables.records} r WHERE {' AND '.join(conds)}"
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY r.rid DESC LIMIT ?) w ORDER BY rid"
            params.append(limit)
        else:
            sql += " ORDER BY r.rid"
        with core.lock:
            core.check_open()
            rows = d.execute(sql, params)
            records = [to_record(r) for r in rows]
            if include_bytes not in (NOT_SET_MARKER, None, False):
                wanted = None if include_bytes is True else set(include_bytes)
                at = [
                    i
                    for i, rec in enumerate(records)
                    if isinstance(rec, ImageRecord) and (wanted is None or rec.id in wanted)
                ]
                loaded = attach_bytes(
                    d, [cast(ImageRecord, records[i]) for i in at], [int(rows[i][0]) for i in at]
                )
                for i, image in zip(at, loaded, strict=True):
                    records[i] = image
        return records

    def list_thread_messages(
        self,
        thread_id: str,
        last_n: int | None,
        range_start_seq_no: int | None,
        range_end_seq_no: int | None,
    ) -> builtins.list[MessageRecord]:
        core = self._core
        check_lookup(thread_id, "thread_id")
        conds = ["r.family = 'message'", "r.thread_id = ?", NOT_EXPIRED, core.owners.confine()]
        params: builtins.list[Any] = [thread_id, time.time()]
        for name, value, op in (
            ("range_start_seq_no", range_start_seq_no, ">="),
            ("range_end_seq_no", range_end_seq_no, "<="),
        ):
            if value is not None:
                check_positive_int(value, name, minimum=0, maximum=MAX_SEQ_NO)
                conds.append(f"r.seq_no {op} ?")
                params.append(value)
        sql = f"SELECT {core.cols} FROM {core.dialect.tables.records} r WHERE {' AND '.join(conds)}"
        if last_n is not None:
            check_positive_int(last_n, "last_n", minimum=0, maximum=MAX_LIST_ROWS)
            sql = f"SELECT * FROM ({sql} ORDER BY r.seq_no DESC LIMIT ?) w ORDER BY seq_no"
            params.append(last_n)
        else:
            sql += " ORDER BY r.seq_no"
        with core.lock:
            core.check_open()
            rows = core.dialect.execute(sql, params)
        return [to_record(r) for r in rows]  # type: ignore[misc]

    def load(self, rids: Sequence[int]) -> dict[int, Record]:
        """The unexpired records of ``rids``, by rid (under the caller's lock)."""
        return self.load_after((), rids)[1]

    def load_after(
        self, before: Sequence[tuple[str, builtins.list[Any]]], rids: Sequence[int]
    ) -> tuple[builtins.list[builtins.list[tuple[Any, ...]]], dict[int, Record]]:
        """:meth:`load`, with ``before`` (statements and their parameters) sent first in the
        same round trip: their rows, and the records."""
        core = self._core
        d = core.dialect
        out: dict[int, Record] = {}
        first: builtins.list[builtins.list[tuple[Any, ...]]] = []
        now = time.time()
        parts = builtins.list(chunked(builtins.list(rids), 500))
        if before and not parts:
            first = d.execute_all(before)
        for part in parts:
            marks = ",".join("?" * len(part))
            load = (
                f"SELECT {core.cols} FROM {d.tables.records} r"
                f" WHERE r.rid IN ({marks}) AND {NOT_EXPIRED}",
                [*part, now],
            )
            if before:
                *first, rows = d.execute_all([*before, load])
                before = ()
            else:
                rows = d.execute(*load)
            for row in rows:
                out[int(row[0])] = to_record(row)
        return first, out

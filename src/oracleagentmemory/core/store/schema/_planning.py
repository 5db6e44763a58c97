"""Write planning: turn ``add()`` / ``update()`` arguments into rows, before any I/O.

Everything here validates and raises ValueError / TypeError naming the argument, so a bad
batch fails before the first row is written. Engines only execute the plan.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES, RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core.store._limits import (
    CheckedJson,
    check_id,
    check_int,
    check_text,
    dumps_checked,
)
from oracleagentmemory.core.store._time import (
    check_anchor,
    check_ttl_days,
    parse_timestamp,
    resolve_ttl_days,
)
from oracleagentmemory.core.store.schema._message_parts import is_parts, plan_message_parts
from oracleagentmemory.core.store.schema._rows import (
    PlannedRecord,
    RetrievalPlan,
    Vector,
    WriteContext,
    caller_chunk_list,
    check_chunk_text,
    dumps_json,
    plan_retrieval,
)

FAMILY: Final[dict[str, str]] = {
    "message": "message",
    **{t: "memory" for t in MEMORY_RECORD_TYPES},
    "user_profile": "user_profile",
    "agent_profile": "agent_profile",
    "thread": "thread",
    "image": "image",
    "thread_summary": "thread_summary",
}
"""Record type -> the table family it lives in (memory-like types share one id space)."""

ADDABLE_TYPES: Final = ("message", *MEMORY_RECORD_TYPES, "user_profile", "agent_profile", "thread")
SEARCHABLE_FAMILIES: Final = ("message", "memory", "user_profile", "agent_profile", "image")
EXPIRING_FAMILIES: Final = ("message", "memory", "image")
PROFILE_TYPES: Final = ("user_profile", "agent_profile")
DEFAULT_SEARCH_TYPES: Final = ("message", *MEMORY_RECORD_TYPES, "user_profile", "agent_profile")


def family_of(record_type: Any, name: str = "record_type") -> str:
    if not isinstance(record_type, str):
        raise TypeError(f"{name} must be a string, got {type(record_type).__name__}")
    try:
        return FAMILY[record_type]
    except KeyError:
        raise ValueError(
            f"{name} {record_type!r} is not supported; expected one of {sorted(FAMILY)}"
        ) from None


def check_metadata(value: Any, name: str = "metadata") -> str | None:
    """Validate a metadata mapping; returns its JSON text (None stays None)."""
    if value is None:
        return None
    if type(value) is CheckedJson:  # its text was checked where it was made
        return value.json
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict or None, got {type(value).__name__}")
    return dumps_checked(value, name)


def check_scope_id(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be an empty string (use None for 'not scoped')")
    return check_id(value, name)


def check_status(value: Any, name: str = "statuses") -> RecordStatus:
    try:
        return RecordStatus(value)
    except ValueError:
        raise ValueError(f"{name} must be a RecordStatus, got {value!r}") from None


def broadcast(
    name: str,
    value: Any,
    n: int,
    default: Any,
    *,
    list_only: bool = False,
    aligned_with: str = "contents",
) -> list[Any]:
    """Spread a scalar over ``n`` records, or check that a list has ``n`` entries."""
    if value is NOT_SET_MARKER:
        return [default] * n
    if isinstance(value, list | tuple) or (list_only and isinstance(value, np.ndarray)):
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries but {aligned_with} has {n}")
        return list(value)
    if list_only:
        raise TypeError(f"{name} must be a list aligned with contents")
    return [value] * n


def new_id() -> str:
    """A random (version 4) UUID string, formatted without ``uuid.UUID``'s overhead."""
    h = bytearray(os.urandom(16))
    h[6] = (h[6] & 0x0F) | 0x40
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


# ---------------------------------------------------------------------------- vectors


def as_vector(value: Any, name: str) -> Vector:
    """One finite, non-zero, 1-D vector, L2-normalised in float64 and returned as float32.

    Normalising before narrowing keeps huge components (1e20) from overflowing and tiny ones
    (1e-30) from underflowing to a zero vector: only the direction matters to cosine distance.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{name} must be a sequence of numbers") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    row: Vector = normalise_rows(arr[None, :], name)[0]
    return row


def normalise_rows(mat: NDArray[np.float64], name: str) -> Vector:
    """Rows as unit float32 vectors; ValueError naming the row when one is non-finite or zero.

    Each row is first scaled by its largest magnitude, so its norm is computed without
    overflow or underflow whatever the scale of its components.
    """
    mat = np.asarray(mat, dtype=np.float64)
    # The largest magnitude is inf or nan exactly when a row holds a non-finite number.
    scale: NDArray[np.float64] = np.abs(mat).max(axis=1, initial=0.0)
    bad = ~(np.isfinite(scale) & (scale > 0.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = name if mat.shape[0] == 1 else f"{name}[{i}]"
        if not np.isfinite(scale[i]):
            raise ValueError(f"{where} must contain only finite numbers")
        raise ValueError(f"{where} must not be the zero vector (cosine distance is undefined)")
    return _unit_rows(mat, scale)


def _unit_rows(mat: NDArray[np.float64], scale: NDArray[np.float64]) -> Vector:
    """Rows divided by their largest magnitude ``scale`` (finite, positive), then by their
    norm, as float32."""
    unit = mat / scale[:, None]
    # What np.linalg.norm(unit, axis=1) computes, without its dispatch overhead.
    unit /= np.sqrt(np.add.reduce(unit * unit, axis=1, keepdims=True))
    out: Vector = unit.astype(np.float32)
    return out


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float | np.number) and not isinstance(x, bool)


def split_vectors(entry: Any, name: str) -> tuple[str, list[Vector]]:
    """Classify a per-record embedding payload: ('single'|'multi'|'empty', vectors)."""
    if isinstance(entry, np.ndarray):
        if entry.ndim == 1:
            return "single", [as_vector(entry, name)]
        if entry.ndim == 2:
            if entry.shape[0] == 0:
                return "empty", []
            return "multi", [as_vector(row, f"{name}[{i}]") for i, row in enumerate(entry)]
        raise ValueError(f"{name} must be a vector or a list of vectors, got shape {entry.shape}")
    if not isinstance(entry, Sequence) or isinstance(entry, str | bytes):
        raise TypeError(f"{name} must be a vector or a list of vectors")
    if len(entry) == 0:
        return "empty", []
    if _is_number(entry[0]):
        return "single", [as_vector(entry, name)]
    return "multi", [as_vector(v, f"{name}[{i}]") for i, v in enumerate(entry)]


@dataclass(slots=True)
class MessageBatch(PendingRecordBatch):
    """A thread's messages as the store writes them: ``keyword_texts`` (one per message,
    or None) become their keyword-only rows (:attr:`RetrievalPlan.keyword_text`);
    ``late_vectors`` (one per message) marks those whose given vector came from late
    chunking (``extra``'s ``LATE_KEY``: a delete re-derives only those, ``_deletes``)."""

    keyword_texts: list[str | None] | None = None
    late_vectors: list[bool] | None = None


LATE_KEY = "late"
"""A message record's ``extra`` key: its vector came from late chunking (shaped by its
neighbours, ``core/embedders/_late_chunking.py``)."""


def marked_late(extra: Any) -> bool:
    """Whether a record's ``extra`` (JSON text, or the object it holds) carries
    :data:`LATE_KEY`: its vector came from late chunking."""
    if isinstance(extra, str) and LATE_KEY not in extra:
        return False  # most records: no parse
    if isinstance(extra, str | bytes):
        try:
            extra = json.loads(extra)
        except ValueError:
            return False
    return isinstance(extra, dict) and bool(extra.get(LATE_KEY))


def plan_batch(
    batch: PendingRecordBatch, ctx: WriteContext, dims: set[int], *, internal: bool = False
) -> list[PlannedRecord]:
    """Validate one batch and plan its records. ``dims`` collects explicit vector sizes."""
    contents = batch.contents
    if contents is NOT_SET_MARKER:
        raise TypeError("contents is required")
    if isinstance(contents, str | bytes) or not isinstance(contents, Sequence):
        raise TypeError("contents must be a list of strings (or None entries)")
    n = len(contents)
    record_type = batch.record_type
    if record_type is NOT_SET_MARKER:
        raise TypeError("record_type is required")
    family = family_of(record_type)
    if record_type not in ADDABLE_TYPES and not (internal and record_type == "image"):
        raise ValueError(f"record_type {record_type!r} cannot be added with add()")
    if n == 0:
        return []

    record_ids = batch.record_ids
    if isinstance(record_ids, str) and n != 1:
        raise ValueError(f"record_ids is a single string but contents has {n} entries")
    ids = broadcast("record_ids", record_ids, n, None)
    thread_ids = broadcast("thread_ids", batch.thread_ids, n, None)
    user_ids = broadcast("user_ids", batch.user_ids, n, None)
    agent_ids = broadcast("agent_ids", batch.agent_ids, n, None)
    roles = broadcast("roles", batch.roles, n, None)
    timestamps = broadcast("timestamps", batch.timestamps, n, None)
    metadatas = broadcast("metadata", batch.metadata, n, None)
    ttls = broadcast("ttl_days", batch.ttl_days, n, NOT_SET_MARKER)
    anchors = broadcast("ttl_anchor", batch.ttl_anchor, n, TimeToLiveAnchor.CREATED_AT)
    statuses = broadcast("statuses", batch.statuses, n, RecordStatus.VALID)
    index_texts = batch.index_texts
    index_list = (
        [None] * n
        if index_texts is NOT_SET_MARKER or index_texts is None
        else broadcast("index_texts", index_texts, n, None, list_only=True)
    )
    embeddings = batch.embeddings
    emb_list = (
        [None] * n
        if embeddings is NOT_SET_MARKER or embeddings is None
        else broadcast("embeddings", embeddings, n, None, list_only=True)
    )

    keyword_texts = batch.keyword_texts if isinstance(batch, MessageBatch) else None
    if keyword_texts is not None:
        if len(keyword_texts) != n:
            raise ValueError(f"keyword_texts has {len(keyword_texts)} entries but contents has {n}")
        for i, text in enumerate(keyword_texts):  # an import file's text, say
            if text is not None:
                check_chunk_text(text, f"keyword_texts[{i}]")
    late_vectors = batch.late_vectors if isinstance(batch, MessageBatch) else None
    if late_vectors is not None and len(late_vectors) != n:
        raise ValueError(f"late_vectors has {len(late_vectors)} entries but contents has {n}")
    fast_vectors: Vector | None = None
    if ctx.has_vectors:
        if isinstance(embeddings, np.ndarray) and embeddings.ndim == 2:
            fast_vectors = _checked_matrix(embeddings)  # one vector per record, as rows
        else:
            fast_vectors = _stack_single_vectors(emb_list)
    meta_cache: dict[int, str | None] = {}
    planned: list[PlannedRecord] = []
    for i in range(n):
        rid = ids[i]
        generated = rid is None
        if generated:
            rid = new_id()
        elif not isinstance(rid, str) or not rid:
            raise TypeError(f"record_ids[{i}] must be a non-empty string or None")
        else:
            check_id(rid, f"record_ids[{i}]")
        meta_value = metadatas[i]
        # The same dict broadcast to every record is serialised once.
        key = id(meta_value)
        if key in meta_cache and meta_value is metadatas[0]:
            meta_json = meta_cache[key]
        else:
            meta_json = check_metadata(meta_value, f"metadata[{i}]" if n > 1 else "metadata")
            if i == 0:
                meta_cache[key] = meta_json
        content = contents[i]
        if content is None and isinstance(meta_value, dict):
            fallback = meta_value.get("content")
            content = fallback if isinstance(fallback, str) else None
        parts = None
        if (
            family == "message"
            and content is not None
            and not isinstance(content, str)
            and is_parts(content)
        ):
            parts, content = content, None
        if content is not None:
            if not isinstance(content, str):
                raise TypeError(
                    f"contents[{i}] must be a string or None, got {type(content).__name__}"
                )
            check_text(content, f"contents[{i}]")
        if family in PROFILE_TYPES and content is None:
            raise ValueError(f"contents[{i}]: {record_type} records need information text")
        ts = timestamps[i]
        if ts is not None:
            parse_timestamp(ts, f"timestamps[{i}]")
        role = roles[i] if family == "message" else None
        if role is not None:
            if not isinstance(role, str):
                raise TypeError(f"roles[{i}] must be a string or None")
            check_text(role, f"roles[{i}]")
        scope = [
            check_scope_id(thread_ids[i], "thread_ids"),
            check_scope_id(user_ids[i], "user_ids"),
            check_scope_id(agent_ids[i], "agent_ids"),
        ]
        if family == "user_profile":
            scope = [None, rid, None]
        elif family == "agent_profile":
            scope = [None, None, rid]
        elif family == "thread":
            scope[0] = rid
        anchor = check_anchor(anchors[i], "ttl_anchor")
        ttl: int | None = None
        if family in EXPIRING_FAMILIES:
            raw = ttls[i]
            if raw is not NOT_SET_MARKER:
                check_ttl_days(raw, "ttl_days")
            ttl = resolve_ttl_days(raw, ctx.retention)
            if ttl is not None and anchor is TimeToLiveAnchor.TIMESTAMP and ts is None:
                raise ValueError(
                    f"timestamps[{i}]: ttl_anchor=TimeToLiveAnchor.TIMESTAMP needs a concrete "
                    "ISO-8601 timestamp for every record"
                )
        status = check_status(statuses[i])
        extra_json: str | None = None
        attachments: list[PlannedRecord] = []
        if parts is not None:
            content, extra_json, attachments = plan_message_parts(
                parts,
                where=f"contents[{i}]",
                message_id=rid,
                thread_id=scope[0],
                user_id=scope[1],
                agent_id=scope[2],
                event_ts=ts,
                ttl_days=ttl,
                ttl_anchor=anchor,
                ctx=ctx,
            )
        elif late_vectors is not None and late_vectors[i]:
            extra_json = dumps_json({LATE_KEY: 1}, LATE_KEY)

        # Retrieval rows.
        entry = index_list[i]
        caller_chunks: list[str] | None = None
        source: str | None = content
        if isinstance(entry, list | tuple):
            caller_chunks = caller_chunk_list(list(entry), f"index_texts[{i}]")
        elif isinstance(entry, str):
            source = check_text(entry, f"index_texts[{i}]")
        elif entry is not None:
            raise TypeError(f"index_texts[{i}] must be a string, a list of strings or None")
        vec_entry = emb_list[i]
        vectors = None
        if vec_entry is not None:
            if not ctx.has_vectors:
                raise ValueError(
                    "embeddings: this store has no local vector storage (it was opened "
                    "without vector_dim or an embedder); give index_texts instead"
                )
            if fast_vectors is not None:
                vectors = ("single", [fast_vectors[i]])
            else:
                vectors = split_vectors(vec_entry, f"embeddings[{i}]")
            for v in vectors[1]:
                dims.add(int(v.shape[0]))
        if family == "thread":
            if vectors is not None:
                raise ValueError("embeddings: thread records have no retrieval rows")
            retrieval = RetrievalPlan([])
        else:
            retrieval = plan_retrieval(
                source=source,
                caller_chunks=caller_chunks,
                vectors=vectors,
                chunker=ctx.chunker,
                has_vectors=ctx.has_vectors,
                name=f"embeddings[{i}]",
            )
            if keyword_texts is not None and retrieval.rows:
                retrieval.keyword_text = keyword_texts[i]
        planned.append(
            PlannedRecord(
                family=family,
                record_type=record_type,
                id=rid,
                content=content,
                role=role,
                thread_id=scope[0],
                user_id=scope[1],
                agent_id=scope[2],
                event_ts=ts,
                metadata_json=meta_json,
                status=status,
                ttl_days=ttl,
                ttl_anchor=anchor,
                retrieval=retrieval,
                extra_json=extra_json,
                generated_id=generated,
                attachments=attachments,
            )
        )
    return planned


def with_attachments(planned: list[PlannedRecord]) -> list[PlannedRecord]:
    """Planned records followed each by its attachments, in write order."""
    if not any(p.attachments for p in planned):
        return planned
    return [r for p in planned for r in (p, *p.attachments)]


def _stack_single_vectors(entries: list[Any]) -> Vector | None:
    """All entries as one validated matrix when each is one flat vector of the same size.

    The common bulk-load shape (one precomputed vector per record) is then checked with a
    few array operations instead of one per record; other shapes return None and are
    checked record by record.
    """
    if not entries or entries[0] is None:
        return None
    first = entries[0]
    if isinstance(first, np.ndarray):
        if first.ndim != 1:
            return None
        if len(entries) == 1:  # one record: a view of its vector, not a list to inspect
            return _checked_matrix(first[None, :])
    elif not (isinstance(first, list | tuple) and first and _is_number(first[0])):
        return None
    return _checked_matrix(entries)


def _checked_matrix(value: Any) -> Vector | None:
    try:
        mat = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    if mat.ndim != 2 or mat.shape[1] == 0:
        return None
    if mat.shape[0] == 1:
        # One vector (a single-record write): the checks on a Python float and the arithmetic
        # of _unit_rows (the same result) in half its array operations.
        row = mat[0]
        top = float(np.abs(row).max())
        if not (math.isfinite(top) and top > 0.0):
            return None
        unit = row / top
        unit /= math.sqrt(float(np.add.reduce(unit * unit)))
        one: Vector = unit.astype(np.float32)[None, :]
        return one
    # The largest magnitude of a row is inf or nan exactly when the row holds a non-finite
    # number, and 0 exactly when it is the zero vector: one pass checks both.
    scale: NDArray[np.float64] = np.abs(mat).max(axis=1)
    if not (np.isfinite(scale).all() and scale.all()):
        return None  # let the per-record checks name the offending entry
    return _unit_rows(mat, scale)


def check_dims(dims: set[int], vector_dim: int | None, name: str = "embeddings") -> None:
    """All explicit vectors of one call share the store's dimension."""
    if len(dims) > 1:
        raise ValueError(f"{name}: vectors of different dimensions in one call: {sorted(dims)}")
    if dims and vector_dim is not None and next(iter(dims)) != vector_dim:
        raise ValueError(
            f"{name}: vectors have dimension {next(iter(dims))} but the store's is {vector_dim}"
        )


def check_unique_ids(planned: list[PlannedRecord]) -> None:
    seen: set[tuple[str, str]] = set()
    for rec in with_attachments(planned):
        key = (rec.family, rec.id)
        if key in seen:
            raise ValueError(f"record_ids: {rec.id!r} appears twice in one call")
        seen.add(key)


def check_positive_int(value: Any, name: str, minimum: int = 1, maximum: int = 2**63 - 1) -> int:
    """An int in ``[minimum, maximum]`` (see ``_limits`` for the documented ranges)."""
    return check_int(value, name, minimum, maximum)

"""Facts about stored records that the client API does not return: each record's expiry
and its retrieval chunks (text and, optionally, vector). Export needs them to reproduce a
store exactly; the memory browser shows the expiry.

These are read from the store's persisted tables (``<id>_records``, ``<id>_chunks``), whose
layout is versioned by the store's migrations; a schema version this module does not know is
refused with a clear error rather than misread.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from oracleagentmemory.admin.db import DEFAULT_STORE_ID, Database
from oracleagentmemory.core.store.schema._history import COLUMNS as HISTORY_COLUMNS
from oracleagentmemory.core.store.schema._planning import marked_late
from oracleagentmemory.core.store.schema._rows import KEYWORD_ROW_INDEX

KNOWN_SCHEMA_VERSIONS = frozenset(range(2, 19))
"""Version 3 added the provenance and pending-work tables; version 4 a nullable
``records.ttl_days``, the seq_no high-water marks and the change log; version 5 (SQLite) the
user-word table of keyword search, keyed by record from version 6; version 7 the thread
owners; version 8 (PostgreSQL) id sequences and the approximate-index tables; 9-12
(PostgreSQL) chunk scope columns, keyword side tables, their totals and the change log; 13
(PostgreSQL) the keyword rows' user index and 14 (the pending work's lease); 15 the
memories' history (read by :meth:`StoreRows.history`) and ``records.updated_at``; 16 each
record's ``valid_from`` / ``valid_until`` (read with its facts); 17 (PostgreSQL) the
keyword rows' user index holding their lengths; 18 (PostgreSQL) metadata as ``json``
text with a ``jsonb`` copy for filters. The columns read here are unchanged."""


@dataclass(frozen=True)
class Chunk:
    text: str | None
    vector: bytes | None  # little-endian float32


@dataclass(frozen=True)
class RowFacts:
    expires_at: str | None  # ISO-8601 UTC
    chunks: tuple[Chunk, ...]
    keyword_text: str | None = None  # the keyword-only row's text (a message's wider window)
    valid_from: str | None = None  # ISO-8601 UTC (schema 16; None before)
    valid_until: str | None = None
    late: bool = False  # a message whose vector came from late chunking (``extra``'s mark)


def _epoch_iso(value: float | None) -> str | None:
    if value is None:
        return None
    return datetime.fromtimestamp(float(value), UTC).isoformat()


def encode_vector(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").copy()


class StoreRows:
    """Reads record facts of one store through its own connection."""

    def __init__(self, db: Database, store_id: str | None) -> None:
        self._db = db
        sid = store_id or DEFAULT_STORE_ID
        rows = db.execute(
            f"SELECT value FROM {db.qualify(sid + '_meta')} WHERE key = 'schema_version'"
        )
        version = int(rows[0][0]) if rows else None
        if version not in KNOWN_SCHEMA_VERSIONS:
            raise RuntimeError(
                f"store {sid!r} has schema version {version}; this tool reads versions "
                f"{sorted(KNOWN_SCHEMA_VERSIONS)} (upgrade oracleagentmemory, or run "
                "`oam upgrade-memory-store`)"
            )
        self._records = db.qualify(sid + "_records")
        self._history = db.qualify(sid + "_history") if (version or 0) >= 15 else None
        self._validity = "r.valid_from, r.valid_until" if (version or 0) >= 16 else "NULL, NULL"
        self._chunks = db.qualify(sid + "_chunks")

    def expiries(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        """``(record_type, id)`` -> expiry (ISO-8601) for the given records."""
        wanted = list(keys)
        out: dict[tuple[str, str], str | None] = {}
        for start in range(0, len(wanted), 400):
            part = wanted[start : start + 400]
            ids = sorted({i for _, i in part})
            marks = ",".join("?" * len(ids))
            for rtype, rid, exp in self._db.execute(
                f"SELECT record_type, id, expires_at FROM {self._records} WHERE id IN ({marks})",
                ids,
            ):
                out[(str(rtype), str(rid))] = _epoch_iso(exp)
        return {k: out.get(k) for k in wanted}

    def facts(
        self, keys: Sequence[tuple[str, str]], *, with_vectors: bool
    ) -> dict[tuple[str, str], RowFacts]:
        """Expiry and retrieval chunks (in order) of the given ``(record_type, id)`` records."""
        out: dict[tuple[str, str], RowFacts] = {}
        vec = "c.vector" if with_vectors else "NULL"
        extra = "r.extra::text" if self._db.postgres else "r.extra"
        for start in range(0, len(keys), 400):
            part = keys[start : start + 400]
            ids = sorted({i for _, i in part})
            marks = ",".join("?" * len(ids))
            # Records, then their chunks: two reads, no join (a store distributed by user on
            # Citus cannot join its tables on ``rid`` alone).
            records = self._db.execute(
                f"SELECT r.rid, r.record_type, r.id, r.expires_at, {self._validity},"
                f" {extra} FROM {self._records} r WHERE r.id IN ({marks}) ORDER BY r.rid",
                ids,
            )
            chunks_of: dict[Any, list[tuple[Any, ...]]] = {}
            rids = [rec[0] for rec in records]
            for at in range(0, len(rids), 400):
                some = rids[at : at + 400]
                for chunk in self._db.execute(
                    f"SELECT c.rid, c.chunk_index, c.chunk_text, {vec} FROM {self._chunks} c"
                    f" WHERE c.rid IN ({','.join('?' * len(some))}) ORDER BY c.rid, c.chunk_index",
                    some,
                ):
                    chunks_of.setdefault(chunk[0], []).append(chunk[1:])
            late = {(str(r[1]), str(r[2])) for r in records if marked_late(r[6])}
            rows = [
                (rtype, rid, exp, *chunk, since, until)
                for rowid, rtype, rid, exp, since, until, _ in records
                for chunk in chunks_of.get(rowid, [(None, None, None)])
            ]
            grouped: dict[tuple[str, str], tuple[str | None, list[Chunk]]] = {}
            keyword: dict[tuple[str, str], str | None] = {}
            valid: dict[tuple[str, str], tuple[str | None, str | None]] = {}
            for rtype, rid, exp, cidx, text, vector, since, until in rows:
                key = (str(rtype), str(rid))
                entry = grouped.setdefault(key, (_epoch_iso(exp), []))
                valid[key] = (_epoch_iso(since), _epoch_iso(until))
                if cidx == KEYWORD_ROW_INDEX:
                    keyword[key] = text
                elif cidx is not None:
                    entry[1].append(Chunk(text, _vector_bytes(vector)))
            for key, (exp, chunks) in grouped.items():
                out[key] = RowFacts(
                    exp, tuple(chunks), keyword.get(key), *valid[key], late=key in late
                )
        return out

    def history(self) -> list[tuple[Any, ...]]:
        """Every version of every memory (schema 15; none before), by memory and version,
        in ``schema/_history.COLUMNS`` order with the metadata as text."""
        if self._history is None:
            return []
        meta = "metadata::text" if self._db.postgres else "metadata"
        cols = HISTORY_COLUMNS.replace("metadata", meta)
        return self._db.execute(f"SELECT {cols} FROM {self._history} ORDER BY memory_id, version")


def _vector_bytes(value: object) -> bytes | None:
    """A stored vector as little-endian float32 bytes (SQLite blob or pgvector text)."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    text = str(value).strip("[]")
    arr = np.array([float(x) for x in text.split(",")] if text else [], dtype="<f4")
    return arr.tobytes()

"""Portable export and import of a whole store as JSON Lines.

One JSON object per line, in the store's insertion order, so an import lists records in the
same order: a ``header``, then ``record`` lines (every record type: profiles, threads,
messages, memories, images with their bytes in base64), then ``link`` lines, then ``history``
lines (every version of every memory, deleted ones' tombstones too; absent from older
exports, which still import), then an ``end`` line with the counts (a truncated file is
refused). Each record carries its expiry, when it was true (``valid_from`` /
``valid_until``, restored as they were) and its retrieval chunks; ``--vectors`` adds each
chunk's vector (little-endian float32, base64), so an import needs no embedding and the
vectors are bit-identical. Without vectors the import
embeds again, exactly as the original writes did (the bundled model is deterministic).

Known limits: a record's expiry is re-created as whole days after its timestamp
(``TimeToLiveAnchor.TIMESTAMP``); one whose original expiry was not a whole number of days
after its timestamp expires up to a day later, and the import reports how many. Message
``seq_no`` gaps (messages deleted mid-thread) close up on import. Relation ``created_at`` is
the import time (``timestamp`` and everything else are kept).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from oracleagentmemory.admin.connect import Target
from oracleagentmemory.admin.db import Database
from oracleagentmemory.admin.storerows import StoreRows, decode_vector, encode_vector
from oracleagentmemory.apis import (
    ImageRecord,
    MessageRecord,
    PendingRecordBatch,
    Record,
    ThreadRecord,
    TimeToLiveAnchor,
)
from oracleagentmemory.apis.records import MemoryVersion
from oracleagentmemory.core.store.schema._history import version_of
from oracleagentmemory.core.store.schema._planning import MessageBatch

FORMAT = "oracleagentmemory-export"
VERSION = 1
RECORD_TYPES = (
    "user_profile",
    "agent_profile",
    "thread",
    "message",
    "memory",
    "guideline",
    "fact",
    "preference",
    "image",
    "thread_summary",
)
_RELATION_FIELDS = (
    "id",
    "source_record_id",
    "source_record_type",
    "target_record_id",
    "target_record_type",
    "relation_type",
    "opposite_relation_type",
    "timestamp",
    "metadata",
)
Progress = Callable[[int], None]


def is_export(path: Path) -> bool:
    """Whether the file at ``path`` starts as an export of ours (its header line)."""
    with path.open(encoding="utf-8") as fh:
        first = fh.readline()
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(head, dict) and head.get("format") == FORMAT


class ImportFileError(ValueError):
    """The file is not a valid export (nothing has been written)."""


def _noop(_: int) -> None:
    return None


def _status(record: Record) -> str:
    status = record.status
    return str(getattr(status, "value", status))


def record_line(
    record: Record,
    expires_at: str | None,
    chunks: list[Any] | None,
    vectors: bool,
    keyword_text: str | None = None,
    validity: tuple[str | None, str | None] = (None, None),
    late: bool = False,
) -> dict[str, Any]:
    """The export line of one record (``validity``: when it became true and stopped
    being so, ISO-8601; left out when unknown; ``late``: a message's late-chunked vector,
    marked with the vectors so a restored store's deletes re-derive it too)."""
    line: dict[str, Any] = {
        "kind": "record",
        "record_type": record.record_type,
        "id": record.id,
        "content": record.content,
        "timestamp": record.timestamp,
        "metadata": record.metadata,
        "status": _status(record),
        "expires_at": expires_at,
    }
    for name in ("thread_id", "user_id", "agent_id"):
        if hasattr(record, name):
            line[name] = getattr(record, name)
    if isinstance(record, MessageRecord):
        line["role"] = record.role
        line["seq_no"] = record.seq_no
    if isinstance(record, ThreadRecord):
        line["runtime_config"] = record.runtime_config
        line["runtime_state"] = record.runtime_state
    if isinstance(record, ImageRecord):
        line["mime_type"] = str(getattr(record.mime_type, "value", record.mime_type))
        line["message_id"] = record.message_id
        line["image_b64"] = base64.b64encode(record.bytes or b"").decode("ascii")
    if chunks is not None and not isinstance(record, ThreadRecord | ImageRecord):
        line["index_texts"] = [c.text or "" for c in chunks]
        if vectors:
            line["vectors"] = [
                None if c.vector is None else encode_vector(c.vector) for c in chunks
            ]
            if late:
                line["late_vector"] = True
        if keyword_text is not None:  # a message's keyword-only row (never a vector)
            line["keyword_text"] = keyword_text
    if validity[0] is not None:
        line["valid_from"], line["valid_until"] = validity
    return line


def export_store(
    client: Any,
    target: Target,
    out: IO[str],
    *,
    vectors: bool = False,
    progress: Progress = _noop,
) -> dict[str, int]:
    """Write the whole store behind ``client`` to ``out``; returns counts per line kind."""
    store = client.store
    records = store.list_records(list(RECORD_TYPES), limit=None)
    embedder = getattr(store, "embedder", None)
    header = {
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "exported_at": datetime.now(UTC).isoformat(),
        "memory_store_id": target.memory_store_id,
        "embedder": getattr(embedder, "model_identity", None),
        "vectors": vectors,
    }
    id_secret = getattr(store, "id_secret", None)
    if callable(id_secret):  # ids derived from it (LangGraph items) stay findable on import
        header["id_secret"] = id_secret().hex()
    out.write(json.dumps(header) + "\n")
    counts = {"record": 0, "link": 0}
    with Database(target) as db:
        rows = StoreRows(db, target.memory_store_id)
        for start in range(0, len(records), 500):
            part = records[start : start + 500]
            keys = [(r.record_type, r.id) for r in part]
            facts = rows.facts(keys, with_vectors=vectors)
            for record in part:
                if isinstance(record, ImageRecord):
                    full = store.get("image", record.id, include_bytes=True)
                    record = full if full is not None else record
                fact = facts.get((record.record_type, record.id))
                line = record_line(
                    record,
                    fact.expires_at if fact else None,
                    list(fact.chunks) if fact else None,
                    vectors,
                    fact.keyword_text if fact else None,
                    (fact.valid_from, fact.valid_until) if fact else (None, None),
                    fact.late if fact else False,
                )
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                counts["record"] += 1
            progress(len(part))
    for rel in store.list_relations(limit=None):
        line = {"kind": "link", **{f: getattr(rel, f) for f in _RELATION_FIELDS}}
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        counts["link"] += 1
    with Database(target) as db:
        versions = [version_of(row) for row in StoreRows(db, target.memory_store_id).history()]
    for version in versions:
        out.write(json.dumps(history_line(version), ensure_ascii=False) + "\n")
    if versions:
        counts["history"] = len(versions)
    out.write(json.dumps({"kind": "end", "counts": counts}) + "\n")
    return counts


# ---------------------------------------------------------------------------- import


@dataclass
class ImportReport:
    records: int = 0
    links: int = 0
    skipped_expired: int = 0
    rounded_expiries: int = 0
    versions: int = 0
    by_type: dict[str, int] = field(default_factory=dict)


def read_export(
    lines: Iterator[str],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Parse and check a whole export before anything is written."""
    header: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    history: list[MemoryVersion] = []
    end: dict[str, Any] | None = None
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ImportFileError(f"line {n}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or "kind" not in obj:
            raise ImportFileError(f"line {n}: expected an object with a 'kind'")
        if end is not None:
            raise ImportFileError(f"line {n}: data after the 'end' line")
        kind = obj["kind"]
        if n == 1 or header is None:
            if kind != "header" or obj.get("format") != FORMAT:
                raise ImportFileError(f"line {n}: not an {FORMAT} file (no header)")
            if obj.get("version") != VERSION:
                raise ImportFileError(
                    f"line {n}: export version {obj.get('version')!r} is not {VERSION}"
                )
            header = obj
        elif kind == "record":
            _check_record(obj, n)
            records.append(obj)
        elif kind == "link":
            missing = [f for f in _RELATION_FIELDS if f not in obj]
            if missing:
                raise ImportFileError(f"line {n}: link without {missing}")
            links.append(obj)
        elif kind == "history":
            history.append(version_from_line(obj, n))
        elif kind == "end":
            end = obj
        else:
            raise ImportFileError(f"line {n}: unknown kind {kind!r}")
    if header is None:
        raise ImportFileError("empty file: no header")
    if end is None:
        raise ImportFileError("the file is truncated: no 'end' line")
    counts = end.get("counts") or {}
    if (
        counts.get("record") != len(records)
        or counts.get("link") != len(links)
        or counts.get("history", 0) != len(history)
    ):
        raise ImportFileError(
            f"the 'end' line counts {counts} do not match the file "
            f"({len(records)} records, {len(links)} links, {len(history)} versions)"
        )
    header["history"] = history  # not a header field: handed to import_store
    return header, records, links


def history_line(v: MemoryVersion) -> dict[str, Any]:
    """The export line of one version of a memory."""
    return {
        "kind": "history",
        "memory_id": v.memory_id,
        "version": v.version,
        "change": v.change,
        "at": v.at.isoformat(),
        "actor": v.actor,
        "memory_type": v.memory_type,
        "user_id": v.user_id,
        "agent_id": v.agent_id,
        "content": v.content,
        "metadata": v.metadata,
        "status": None if v.status is None else v.status.value,
        "changed": list(v.changed),
        "source_message_ids": list(v.source_message_ids),
        "superseded_by": v.superseded_by,
    }


def version_from_line(obj: dict[str, Any], n: int) -> MemoryVersion:
    """A ``history`` line as a version (ImportFileError for a malformed one)."""
    try:
        if not isinstance(obj["memory_id"], str) or not obj["memory_id"]:
            raise ValueError("memory_id")
        if obj["change"] not in ("created", "updated", "status", "superseded", "merged", "deleted"):
            raise ValueError(f"change {obj['change']!r}")
        at = datetime.fromisoformat(obj["at"])
        return MemoryVersion(
            version=int(obj["version"]),
            memory_id=obj["memory_id"],
            change=obj["change"],
            at=at if at.tzinfo else at.replace(tzinfo=UTC),
            actor=obj.get("actor"),
            content=obj.get("content"),
            metadata=obj.get("metadata"),
            memory_type=obj.get("memory_type"),
            status=obj.get("status"),
            user_id=obj.get("user_id"),
            agent_id=obj.get("agent_id"),
            changed=tuple(obj.get("changed") or ()),
            source_message_ids=tuple(obj.get("source_message_ids") or ()),
            superseded_by=obj.get("superseded_by"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ImportFileError(f"line {n}: malformed history line ({exc})") from None


def _check_record(obj: dict[str, Any], n: int) -> None:
    rtype = obj.get("record_type")
    if rtype not in RECORD_TYPES:
        raise ImportFileError(f"line {n}: unknown record_type {rtype!r}")
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        raise ImportFileError(f"line {n}: record without an id")
    if rtype == "image" and not isinstance(obj.get("image_b64"), str):
        raise ImportFileError(f"line {n}: image without image_b64")
    if "index_texts" in obj and not isinstance(obj["index_texts"], list):
        raise ImportFileError(f"line {n}: index_texts must be a list")
    if "keyword_text" in obj and (rtype != "message" or not isinstance(obj["keyword_text"], str)):
        raise ImportFileError(f"line {n}: keyword_text must be a message's string")
    if "late_vector" in obj and (rtype != "message" or not isinstance(obj["late_vector"], bool)):
        raise ImportFileError(f"line {n}: late_vector must be a message's true or false")
    for name in ("valid_from", "valid_until"):
        value = obj.get(name)
        if value is None:
            continue
        try:
            datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise ImportFileError(f"line {n}: {name} is not an ISO-8601 time") from None


def ttl_for(timestamp: str | None, expires_at: str | None, now: datetime) -> int | str | None:
    """Whole days after ``timestamp`` that reach ``expires_at`` (rounded up), None for no
    expiry, or ``"expired"``."""
    if expires_at is None:
        return None
    exp = datetime.fromisoformat(expires_at)
    if exp <= now:
        return "expired"
    base = datetime.fromisoformat(timestamp) if timestamp else now
    if base.tzinfo is None:
        base = base.replace(tzinfo=UTC)
    return max(1, math.ceil((exp - base).total_seconds() / 86400 - 1e-9))


class _Writer:
    """Writes parsed lines through the store API, remembering what it wrote so a failure
    part-way can remove it again."""

    def __init__(self, client: Any, header: dict[str, Any]) -> None:
        self.client = client
        self.store = client.store
        self.vectors = bool(header.get("vectors"))
        self.embedder = getattr(self.store, "embedder", None)
        self.written: list[tuple[str, str]] = []
        self.link_ids: list[str] = []
        self.pending: list[tuple[PendingRecordBatch, tuple[str, str]]] = []
        self.thread_config: list[tuple[str, Any, Any]] = []
        self.report = ImportReport()
        self.now = datetime.now(UTC)

    def _ttl(self, line: dict[str, Any]) -> int | str | None:
        ttl = ttl_for(line.get("timestamp"), line.get("expires_at"), self.now)
        if isinstance(ttl, int) and line.get("timestamp"):
            base = datetime.fromisoformat(line["timestamp"])
            if base.tzinfo is None:
                base = base.replace(tzinfo=UTC)
            exact = (datetime.fromisoformat(line["expires_at"]) - base).total_seconds()
            if abs(exact - ttl * 86400) > 1e-3:
                self.report.rounded_expiries += 1
        return ttl

    def _embeddings(self, line: dict[str, Any], texts: list[str]) -> Any:
        if self.vectors and line.get("vectors") is not None:
            vecs = line["vectors"]
            if any(v is None for v in vecs):
                return None
            return [[decode_vector(v) for v in vecs]]
        # As thread.add_messages writes them: the store embeds each retrieval text (a
        # message's text is the message with the turn it answers).
        return NOT_GIVEN

    def add(self, line: dict[str, Any]) -> None:
        rtype = line["record_type"]
        ttl = self._ttl(line)
        if ttl == "expired":
            self.report.skipped_expired += 1
            return
        self.report.by_type[rtype] = self.report.by_type.get(rtype, 0) + 1
        self.report.records += 1
        if rtype == "image":
            self.flush()
            self.store.add_image(
                base64.b64decode(line["image_b64"]),
                mime_type=line["mime_type"],
                description=line.get("content"),
                image_id=line["id"],
                user_id=line.get("user_id"),
                agent_id=line.get("agent_id"),
                thread_id=line.get("thread_id"),
                message_id=line.get("message_id"),
                metadata=line.get("metadata"),
                timestamp=line.get("timestamp"),
                ttl_days=ttl,
                ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
            )
            self.written.append(("image", line["id"]))
            if line.get("status", "valid") != "valid":
                self.store.update("image", line["id"], status=line["status"])
            return
        kwargs: dict[str, Any] = {
            "contents": [line.get("content")],
            "record_type": rtype,
            "record_ids": [line["id"]],
            "timestamps": [line.get("timestamp")],
            "metadata": [line.get("metadata")],
            "statuses": [line.get("status", "valid")],
            "ttl_days": [ttl],
            "ttl_anchor": TimeToLiveAnchor.TIMESTAMP,
        }
        if rtype == "thread":  # its settings are written once the row exists (flush)
            self.thread_config.append(
                (line["id"], line.get("runtime_config"), line.get("runtime_state"))
            )
        if rtype not in ("user_profile", "agent_profile"):
            kwargs.update(
                thread_ids=[line.get("thread_id")],
                user_ids=[line.get("user_id")],
                agent_ids=[line.get("agent_id")],
            )
        if rtype == "message":
            kwargs["roles"] = [line.get("role")]
        if "index_texts" in line:
            texts = [str(t) for t in line["index_texts"]]
            kwargs["index_texts"] = [texts]
            emb = self._embeddings(line, texts)
            if emb is not NOT_GIVEN:
                kwargs["embeddings"] = emb
        # A late-chunked vector restored as it was keeps its mark (its deletes' reach).
        late = bool(line.get("late_vector")) and "embeddings" in kwargs
        batch = (
            MessageBatch(
                **kwargs,
                keyword_texts=[line["keyword_text"]] if "keyword_text" in line else None,
                late_vectors=[True] if late else None,
            )
            if "index_texts" in line and ("keyword_text" in line or late)
            else PendingRecordBatch(**kwargs)
        )
        self.pending.append((batch, (rtype, line["id"])))
        if len(self.pending) >= 500:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        self.store.add_batches([b for b, _ in self.pending])
        self.written.extend(k for _, k in self.pending)
        self.pending = []
        for thread_id, config, state in self.thread_config:
            if config is not None or state is not None:
                self.store.update_thread_record(
                    thread_id, runtime_config=config, runtime_state=state
                )
        self.thread_config = []

    def links(self, links: list[dict[str, Any]]) -> None:
        # One call per link, in the exported order: relations list by creation time.
        for ln in links:
            ids = self.store.add_relations(
                ln["source_record_id"],
                ln["source_record_type"],
                ln["target_record_id"],
                ln["target_record_type"],
                ln["relation_type"],
                opposite_relation_types=ln["opposite_relation_type"],
                relation_ids=ln["id"],
                timestamps=ln["timestamp"],
                metadata=ln["metadata"],
            )
            self.link_ids.extend(ids)
        self.report.links = len(self.link_ids)

    def undo(self) -> None:
        """Remove what this import wrote (a failure part-way leaves the store as it was)."""
        if self.link_ids:
            self.store.delete_relations(self.link_ids)
        for rtype, rid in reversed(self.written):
            if rtype == "thread":
                self.store.delete_thread(rid)
            else:
                self.store.delete(rtype, rid)


NOT_GIVEN: Any = object()


def import_store(client: Any, lines: Iterator[str], *, progress: Progress = _noop) -> ImportReport:
    """Read a whole export, check it, then write it into the store behind ``client``.

    Nothing is written when the file is invalid; a failure while writing (an id that already
    exists, say) removes what this import had written and re-raises.
    """
    header, records, links = read_export(lines)
    writer = _Writer(client, header)
    if writer.vectors:
        mine = getattr(writer.embedder, "model_identity", None)
        if header.get("embedder") and mine is not None and mine != header["embedder"]:
            raise ImportFileError(
                f"the export's vectors come from model {header['embedder']!r} but this store "
                f"embeds with {mine!r}; export again without --vectors to re-embed"
            )
    secret, adopt = header.get("id_secret"), getattr(client.store, "adopt_id_secret", None)
    if secret is not None and callable(adopt):  # an empty store takes the source's
        try:
            adopt(bytes.fromhex(secret))
        except (TypeError, ValueError):
            raise ImportFileError("line 1: id_secret is not 32 bytes in hex") from None
    try:
        for i, line in enumerate(records, start=1):
            writer.add(line)
            if i % 200 == 0:
                progress(200)
        writer.flush()
        progress(len(records) % 200)
        writer.links(links)
        restore = getattr(client.store, "restore_history", None)
        if header["history"] and callable(restore):  # the source's versions, as they were
            writer.report.versions = restore(header["history"])
        windows = [
            (r["record_type"], r["id"], r["valid_from"], r.get("valid_until"))
            for r in records
            if r.get("valid_from") is not None
        ]
        restore = getattr(client.store, "restore_validity", None)
        if windows and callable(restore):  # when each was true, as in the source
            restore(windows)
    except BaseException:
        writer.undo()
        raise
    return writer.report

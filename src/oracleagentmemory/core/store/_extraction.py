"""Memory-extraction bookkeeping in the SQL store: pending work, provenance, thread summaries.

Three small things the extraction layer needs to be crash-safe and auditable, each written in
the same transaction as the records it belongs to:

- **Pending work** (table ``<prefix>_pending``): a row per accepted extraction job, inserted
  with the messages that make it due and deleted with the memories it produced. Rows left
  behind by a process that died are found and resumed by the next client with an LLM.
- **Provenance** (table ``<prefix>_sources``): ``(memory rid, source message id)`` rows for
  every extracted memory; deleted with the memory (``Deleter.delete_where``).
- **Thread summaries**: one ``thread_summary`` record per thread (id = thread id) whose
  ``extra`` holds the LLM summary, its topics and the last ``seq_no`` it covers.

The extraction progress pointer (``through_seq_no``: the last message already handed to
extraction) lives in the thread row's ``runtime_state``, as the reference keeps its counters.
"""

from __future__ import annotations

import builtins
import json
import os
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core.store._dialect import chunked
from oracleagentmemory.core.store._limits import check_int, check_text
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store._time import iso, utcnow
from oracleagentmemory.core.store.schema._planning import new_id
from oracleagentmemory.core.store.schema._rows import PlannedRecord, RetrievalPlan, dumps_json
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper
from oracleagentmemory.core.store.writes._deletes import Deleter
from oracleagentmemory.core.store.writes._writes import Writer

EXTRACTION_STATE_KEY = "memory_extraction"
"""Key of the extraction progress in a thread row's ``runtime_state``."""


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _check_texts(**values: Any) -> None:
    """Ids and texts of the bookkeeping calls: strings (or lists of strings) without NUL or
    lone surrogates, checked before anything is written (None passes)."""
    for name, value in values.items():
        items = value if isinstance(value, list | tuple) else [value]
        for item in items:
            if item is None:
                continue
            if not isinstance(item, str):
                raise TypeError(f"{name} must be a string, got {type(item).__name__}")
            check_text(item, name)


def process_owner() -> str:
    """This process, as recorded in ``owner`` of pending work: ``host:pid:start``."""
    return f"{socket.gethostname()}:{os.getpid()}:{_PROCESS_START}"


_PROCESS_START = f"{time.time():.6f}"


def owner_is_alive(owner: str | None) -> bool:
    """Whether the process that owns a pending row may still run it.

    A row of this very process is alive; one of another process on this host is alive while
    that pid exists; rows of other hosts are presumed alive (resume them from that host).
    """
    if not owner:
        return False
    if owner == process_owner():
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname():
        return True
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False  # an earlier incarnation with our pid (pid reuse): dead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class PendingWork:
    """One accepted extraction job as stored: its thread, payload and owning process."""

    id: str
    thread_id: str
    payload: dict[str, Any]
    owner: str | None
    attempts: int
    created_at: str


@dataclass(frozen=True)
class SummaryWrite:
    """A thread summary to store: text, topics and the last message ``seq_no`` it covers."""

    thread_id: str
    user_id: str | None
    agent_id: str | None
    summary: str
    topics: tuple[str, ...]
    covered_through_seq_no: int


class _ThreadGone(Exception):
    """The thread of an extraction job was deleted while the job ran (rolls it back)."""


class ExtractionBook:
    """The extraction bookkeeping part of the SQL store (see the module docstring)."""

    def __init__(
        self, core: StoreCore, keeper: IndexKeeper, writer: Writer, deleter: Deleter
    ) -> None:
        self._core = core
        self._keeper = keeper
        self._writer = writer
        self._deleter = deleter

    # ------------------------------------------------------------------ helpers (in a txn)

    def _max_seq(self, thread_id: str) -> int:
        t = self._core.dialect.tables
        return int(
            self._core.dialect.execute(
                f"SELECT COALESCE(MAX(seq_no), 0) FROM {t.records} r"
                f" WHERE family = 'message' AND thread_id = ? AND {self._core.owners.confine()}",
                [thread_id],
            )[0][0]
        )

    def _count_after(self, thread_id: str, after_seq: int) -> int:
        t = self._core.dialect.tables
        return int(
            self._core.dialect.execute(
                f"SELECT COUNT(*) FROM {t.records} r WHERE family = 'message' AND thread_id = ?"
                f" AND seq_no > ? AND {self._core.owners.confine()}",
                [thread_id, after_seq],
            )[0][0]
        )

    def _summary_covered(self, thread_id: str) -> int:
        t = self._core.dialect.tables
        rows = self._core.dialect.execute(
            f"SELECT extra FROM {t.records} WHERE family = 'thread_summary' AND id = ?",
            [thread_id],
        )
        if not rows:
            return 0
        return int((_json(rows[0][0]) or {}).get("covered_through_seq_no", 0))

    def _insert_pending(
        self, thread_id: str, payload: dict[str, Any], owner: str, work_id: str | None = None
    ) -> PendingWork:
        work = PendingWork(work_id or new_id(), thread_id, payload, owner, 0, iso(utcnow()))
        self._core.dialect.execute(
            f"INSERT INTO {self._core.dialect.tables.pending}"
            " (id, thread_id, payload, owner, attempts, created_at) VALUES (?, ?, ?, ?, 0, ?)",
            [work.id, thread_id, dumps_json(payload, "payload"), owner, work.created_at],
        )
        return work

    # ------------------------------------------------------------------ writes

    def add_messages_with_work(
        self,
        batch: PendingRecordBatch,
        *,
        thread_id: str,
        extract_every: int | None,
        summarize_every: int | None,
        payload: dict[str, Any],
        owner: str,
        work_id: str | None,
        store_kwargs: dict[str, Any],
    ) -> tuple[builtins.list[str], PendingWork | None]:
        _check_texts(thread_id=thread_id, owner=owner)
        if not isinstance(thread_id, str):
            raise TypeError("thread_id must be a string")
        dumps_json(payload, "payload")  # refused here, before any write
        require_thread = store_kwargs.pop("require_thread", None)  # see Writer.write_planned
        planned, batch_size = self._writer.plan_batches([batch], store_kwargs)
        if not planned:
            return [], None
        t = self._core.dialect.tables

        def bookkeeping() -> PendingWork | None:
            rows = self._core.dialect.execute(
                f"SELECT extra FROM {t.records} WHERE family = 'thread' AND id = ?", [thread_id]
            )
            if not rows or (extract_every is None and summarize_every is None):
                return None
            extra = _json(rows[0][0]) or {}
            state = dict(extra.get("runtime_state") or {})
            progress = dict(state.get(EXTRACTION_STATE_KEY) or {})
            newest = self._max_seq(thread_id)
            pointer = progress.get("through_seq_no")
            if not isinstance(pointer, int):
                pointer = newest - len(planned)
            extract_due = extract_every is not None and (
                extract_every <= 0 or self._count_after(thread_id, pointer) >= extract_every
            )
            summarize_due = summarize_every is not None and (
                summarize_every <= 0
                or self._count_after(thread_id, self._summary_covered(thread_id)) >= summarize_every
            )
            work = None
            if extract_due or summarize_due:
                work = self._insert_pending(
                    thread_id,
                    {
                        **payload,
                        "from_seq_no": pointer,
                        "through_seq_no": newest,
                        "extract": extract_due,
                        "summarize": summarize_due,
                    },
                    owner,
                    work_id,
                )
            new_pointer = newest if extract_due else pointer
            if progress.get("through_seq_no") != new_pointer and extract_every is not None:
                progress["through_seq_no"] = new_pointer
                state[EXTRACTION_STATE_KEY] = progress
                extra["runtime_state"] = state
                self._core.dialect.execute(
                    f"UPDATE {t.records} SET extra = ? WHERE family = 'thread' AND id = ?",
                    [dumps_json(extra, "runtime_state"), thread_id],
                )
            return work

        # Every planned row is a message of ``thread_id``, so the insert holds that thread's
        # mark row: the bookkeeping (this thread's rows alone) may run beside other writes.
        beside = all(p.family == "message" and p.thread_id == thread_id for p in planned)
        work = self._writer.write_planned(
            planned, batch_size, bookkeeping, require_thread=require_thread, beside_others=beside
        )
        return [p.id for p in planned], work

    def commit_extraction(
        self,
        batches: builtins.list[PendingRecordBatch],
        *,
        sources: Sequence[Sequence[str]] = (),
        merged_sources: Mapping[str, Sequence[str]] | None = None,
        summary: SummaryWrite | None = None,
        done_work_id: str | None = None,
        thread_id: str | None = None,
    ) -> builtins.list[str]:
        _check_texts(thread_id=thread_id, done_work_id=done_work_id)
        for i, ids in enumerate(sources):
            _check_texts(**{f"sources[{i}]": builtins.list(ids)})
        if merged_sources is not None:
            if not isinstance(merged_sources, Mapping):
                raise TypeError("merged_sources must be a mapping of memory id to message ids")
            for memory_id, ids in merged_sources.items():
                _check_texts(merged_sources=memory_id)
                _check_texts(merged_sources=builtins.list(ids))
        if summary is not None:
            if not isinstance(summary, SummaryWrite):
                raise TypeError("summary must be a SummaryWrite")
            _check_texts(
                thread_id=summary.thread_id,
                user_id=summary.user_id,
                agent_id=summary.agent_id,
                summary=summary.summary,
                topics=builtins.list(summary.topics),
            )
            if summary.thread_id is None:
                raise TypeError("summary.thread_id must be a string")
            if isinstance(summary.covered_through_seq_no, bool) or not isinstance(
                summary.covered_through_seq_no, int
            ):
                raise TypeError("summary.covered_through_seq_no must be an int")
            check_int(
                summary.covered_through_seq_no, "summary.covered_through_seq_no", 0, 2**63 - 1
            )
        planned, batch_size = self._writer.plan_batches(batches, {})
        if sources and len(sources) != len(planned):
            raise ValueError(f"sources has {len(sources)} entries for {len(planned)} records")
        d = self._core.dialect
        t = d.tables

        def bookkeeping() -> None:
            if thread_id is not None and not d.execute(
                f"SELECT 1 FROM {t.records} WHERE family = 'thread' AND id = ?", [thread_id]
            ):
                raise _ThreadGone
            rows: builtins.list[tuple[int, str]] = []
            if sources:
                rid_of = self._rids_of_memories([p.id for p in planned])
                for p, ids in zip(planned, sources, strict=True):
                    rows.extend((rid_of[p.id], m) for m in dict.fromkeys(ids))
            if merged_sources:
                rid_of = self._rids_of_memories(builtins.list(merged_sources))
                for memory_id, ids in merged_sources.items():
                    if memory_id not in rid_of:
                        continue  # deleted meanwhile: nothing to merge into
                    have = {
                        r[0]
                        for r in d.execute(
                            f"SELECT message_id FROM {t.sources} WHERE rid = ?",
                            [rid_of[memory_id]],
                        )
                    }
                    rows.extend((rid_of[memory_id], m) for m in dict.fromkeys(ids) if m not in have)
            if rows:
                d.executemany(f"INSERT INTO {t.sources} (rid, message_id) VALUES (?, ?)", rows)
            if summary is not None:
                self._put_summary(summary)
            if done_work_id is not None:
                d.execute(f"DELETE FROM {t.pending} WHERE id = ?", [done_work_id])

        try:
            self._writer.write_planned(planned, batch_size, bookkeeping)
        except _ThreadGone:
            if done_work_id is not None:
                self.finish_pending_work(done_work_id)
            return []
        return [p.id for p in planned]

    def _rids_of_memories(self, memory_ids: builtins.list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for part in chunked(memory_ids, 500):
            marks = ",".join("?" * len(part))
            for rid, mid in self._core.dialect.execute(
                f"SELECT rid, id FROM {self._core.dialect.tables.records}"
                f" WHERE family = 'memory' AND id IN ({marks})",
                builtins.list(part),
            ):
                out[mid] = int(rid)
        return out

    def _put_summary(self, summary: SummaryWrite) -> None:
        if summary.covered_through_seq_no < self._summary_covered(summary.thread_id):
            return  # a newer summary is already stored
        t = self._core.dialect.tables
        self._core.dialect.execute(
            f"DELETE FROM {t.records} WHERE family = 'thread_summary' AND id = ?",
            [summary.thread_id],
        )
        extra = {
            "content": {"summary": summary.summary, "topics": builtins.list(summary.topics)},
            "covered_through_seq_no": summary.covered_through_seq_no,
        }
        record = PlannedRecord(
            family="thread_summary",
            record_type="thread_summary",
            id=summary.thread_id,
            content=None,
            role=None,
            thread_id=summary.thread_id,
            user_id=summary.user_id,
            agent_id=summary.agent_id,
            event_ts=None,
            metadata_json=None,
            status=RecordStatus.VALID,
            ttl_days=None,
            ttl_anchor=TimeToLiveAnchor.CREATED_AT,
            retrieval=RetrievalPlan([]),
            extra_json=dumps_json(extra, "summary"),
        )
        self._writer.insert([record], 1)

    # ------------------------------------------------------------------ provenance

    def memory_sources(self, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        if isinstance(memory_ids, str) or not isinstance(memory_ids, Sequence):
            raise TypeError("memory_ids must be a list of memory ids")
        ids = [m for m in dict.fromkeys(memory_ids) if isinstance(m, str)]
        _check_texts(memory_ids=ids)
        out: dict[str, builtins.list[str]] = {}
        t = self._core.dialect.tables
        with self._core.lock:
            self._core.check_open()
            for part in chunked(ids, 500):
                marks = ",".join("?" * len(part))
                for mid, message_id in self._core.dialect.execute(
                    f"SELECT r.id, s.message_id FROM {t.sources} s JOIN {t.records} r"
                    f" ON r.rid = s.rid WHERE r.family = 'memory' AND r.id IN ({marks})"
                    " ORDER BY r.id, s.message_id",
                    builtins.list(part),
                ):
                    out.setdefault(mid, []).append(message_id)
        return {k: tuple(v) for k, v in out.items()}

    def delete_message_cascade(self, thread_id: str, message_id: str) -> tuple[int, int]:
        _check_texts(thread_id=thread_id, message_id=message_id)
        d = self._core.dialect
        t = d.tables
        only = (
            f"r.family = 'memory' AND r.rid IN (SELECT s.rid FROM {t.sources} s"
            " WHERE s.message_id = ? AND NOT EXISTS (SELECT 1 FROM"
            f" {t.sources} o WHERE o.rid = s.rid AND o.message_id <> ?))"
        )
        with self._core.lock:
            self._core.check_open()
            self._keeper.sync()
            with self._keeper.write():
                in_thread = (
                    f"r.family = 'message' AND r.id = ? AND r.thread_id = ?"
                    f" AND {self._core.owners.confine()}"
                )
                found = d.execute(
                    f"SELECT rid FROM {t.records} r WHERE {in_thread}", [message_id, thread_id]
                )
                if not found:
                    return 0, 0
                memories = self._deleter.delete_where(only, [message_id, message_id])
                messages = self._deleter.delete_where(in_thread, [message_id, thread_id])
                d.execute(f"DELETE FROM {t.sources} WHERE message_id = ?", [message_id])
            self._keeper.remove([*memories, *messages])
        return len(messages), len(memories)

    # ------------------------------------------------------------------ pending work

    def list_pending_work(self) -> builtins.list[PendingWork]:
        with self._core.lock:
            self._core.check_open()
            rows = self._core.dialect.execute(
                "SELECT id, thread_id, payload, owner, attempts, created_at FROM"
                f" {self._core.dialect.tables.pending} ORDER BY created_at, id"
            )
        return [PendingWork(r[0], r[1], _json(r[2]) or {}, r[3], int(r[4]), r[5]) for r in rows]

    def claim_pending_work(self, work_id: str, expected_owner: str | None, owner: str) -> bool:
        _check_texts(work_id=work_id, expected_owner=expected_owner, owner=owner)
        t = self._core.dialect.tables
        with self._core.lock:
            self._core.check_open()
            with self._core.dialect.transaction():
                rows = self._core.dialect.execute(
                    f"SELECT owner FROM {t.pending} WHERE id = ?", [work_id]
                )
                if not rows or rows[0][0] != expected_owner:
                    return False
                self._core.dialect.execute(
                    f"UPDATE {t.pending} SET owner = ? WHERE id = ?", [owner, work_id]
                )
        return True

    def retry_pending_work(self, work_id: str) -> int:
        _check_texts(work_id=work_id)
        t = self._core.dialect.tables
        with self._core.lock:
            self._core.check_open()
            with self._core.dialect.transaction():
                self._core.dialect.execute(
                    f"UPDATE {t.pending} SET attempts = attempts + 1 WHERE id = ?", [work_id]
                )
                rows = self._core.dialect.execute(
                    f"SELECT attempts FROM {t.pending} WHERE id = ?", [work_id]
                )
        return int(rows[0][0]) if rows else 0

    def finish_pending_work(self, work_id: str) -> None:
        _check_texts(work_id=work_id)
        with self._core.lock:
            self._core.check_open()
            with self._core.dialect.transaction():
                self._core.dialect.execute(
                    f"DELETE FROM {self._core.dialect.tables.pending} WHERE id = ?", [work_id]
                )

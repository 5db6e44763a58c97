"""Memory-extraction bookkeeping in the SQL store: pending work, provenance, thread summaries.

Three small things the extraction layer needs to be crash-safe and auditable, each written in
the same transaction as the records it belongs to:

- **Pending work** (table ``<prefix>_pending``): a row per accepted extraction job, inserted
  with the messages that make it due and deleted with the memories it produced. A row is
  held by a lease its process renews (``_leases``); once that runs out (the process died or
  froze) any running node with an LLM client takes the job over, and only the lease holder
  may write the job's result (the fence in :meth:`ExtractionBook.commit_extraction`).
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import RecordStatus, ThreadSummaryRecord
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core._shared._actor import current_actor
from oracleagentmemory.core.store._dialect import chunked
from oracleagentmemory.core.store._leases import (
    LeaseLost,
    lease_seconds,
    owner_is_alive,
    process_owner,
)
from oracleagentmemory.core.store._limits import check_int, check_text
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store._time import iso, utcnow
from oracleagentmemory.core.store.schema._history import add_versions, sources_text
from oracleagentmemory.core.store.schema._planning import new_id
from oracleagentmemory.core.store.schema._rows import PlannedRecord, RetrievalPlan, dumps_json
from oracleagentmemory.core.store.schema._validity import from_sources
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


__all__ = [
    "LeaseLost",
    "PendingWork",
    "SummaryWrite",
    "owner_is_alive",
    "process_owner",
    "summary_of",
    "topics_of",
]


@dataclass(frozen=True)
class PendingWork:
    """One accepted extraction job as stored: its thread, payload and owning process;
    ``lease_expired``: whether its owner's lease had run out when it was read (database
    time)."""

    id: str
    thread_id: str
    payload: dict[str, Any]
    owner: str | None
    attempts: int
    created_at: str
    lease_expired: bool = False


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
        d = self._core.dialect
        params = [work.id, thread_id, dumps_json(payload, "payload"), owner, work.created_at]
        if d.leased_work:
            user = None
            if d.layout is not None:  # a distributed layout: on the thread's user's shard
                found = d.execute(
                    f"SELECT user_id FROM {d.tables.owners} WHERE thread_id = ?", [thread_id]
                )
                user = found[0][0] if found else None
            columns, [placed], _ = d.placed(
                "id, thread_id, payload, owner", [params[:4]], users=[user]
            )
            d.execute(
                f"INSERT INTO {d.tables.pending} ({columns}, attempts, created_at, lease_until)"
                f" VALUES ({','.join('?' * len(placed))}, 0, ?, {d.NOW_S} + ?)",
                [*placed, work.created_at, lease_seconds()],
            )
        else:
            d.execute(
                f"INSERT INTO {d.tables.pending}"
                " (id, thread_id, payload, owner, attempts, created_at) VALUES (?, ?, ?, ?, 0, ?)",
                params,
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
            d = self._core.dialect
            where, params = d.locked_where(
                t.records, "r", "family = 'thread' AND id = ?", [thread_id]
            )
            rows = d.execute(  # locked: a thread update waits (its extra)
                f"SELECT extra FROM {t.records} r WHERE {where}{d.FOR_WRITE}", params
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
        lease_owner: str | None = None,
    ) -> builtins.list[str]:
        _check_texts(thread_id=thread_id, done_work_id=done_work_id, lease_owner=lease_owner)
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
        for p, ids in zip(planned, sources, strict=False):  # for their first versions
            p.sources = tuple(dict.fromkeys(ids))
        d = self._core.dialect
        t = d.tables
        actor = current_actor()  # read here: the write may run on another writer's thread

        def bookkeeping() -> None:
            # The fence: the job's row goes with its result only while ``lease_owner`` still
            # holds it (the row lock taken here makes a concurrent claim wait, then miss); a
            # node that lost its lease (frozen past it, or the job already finished by the
            # node that took it over) writes nothing. Citus: the thread's and the summary's
            # users locked before the fence, so no lock is taken after a statement changed
            # rows (the records' users, if any, were locked with the job's records).
            d.lock_users(
                [summary.user_id] if summary is not None else [],
                [("thread", thread_id)] if thread_id is not None else [],
            )
            if (
                done_work_id is not None
                and lease_owner is not None
                and not d.execute(
                    f"DELETE FROM {t.pending} WHERE id = ? AND owner = ? RETURNING id",
                    [done_work_id, lease_owner],
                )
            ):
                raise LeaseLost(done_work_id)
            if thread_id is not None:  # locked: a delete waits, or wins
                where, params = d.locked_where(
                    t.records, "r", "family = 'thread' AND id = ?", [thread_id]
                )
                if not d.execute(f"SELECT 1 FROM {t.records} r WHERE {where}{d.FOR_WRITE}", params):
                    raise _ThreadGone
            rows: builtins.list[tuple[int, str]] = []
            new_rids: builtins.list[int] = []
            if sources:
                rid_of = self._rids_of_memories([p.id for p in planned])
                new_rids = builtins.list(rid_of.values())
                for p, ids in zip(planned, sources, strict=True):
                    rows.extend((rid_of[p.id], m) for m in dict.fromkeys(ids))
            merged: builtins.list[tuple[int, builtins.list[str]]] = []
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
                    more = [m for m in dict.fromkeys(ids) if m not in have]
                    rows.extend((rid_of[memory_id], m) for m in more)
                    if more:
                        merged.append((rid_of[memory_id], sorted(have | set(more))))
            if rows:
                columns, values, key = d.placed("rid, message_id", rows, rid_at=0)
                d.executemany(
                    f"INSERT INTO {t.sources} ({columns}) VALUES"
                    f" ({','.join('?' * (columns.count(',') + 1))})"
                    f" ON CONFLICT ({key}rid, message_id) DO NOTHING",
                    values,
                )
            from_sources(d, new_rids)  # true since their newest message (schema/_validity)
            for rid, all_sources in merged:  # a duplicate found: the memory's ``merged`` version
                add_versions(
                    d,
                    "r.rid = ?",
                    [rid],
                    "merged",
                    actor,
                    ("sources",),
                    sources=sources_text(all_sources),
                )
            if summary is not None:
                self._put_summary(summary)
            if done_work_id is not None and lease_owner is None:
                d.execute(f"DELETE FROM {t.pending} WHERE id = ?", [done_work_id])

        try:
            # Beside other writes: new rows, the pending row (the fence), the thread's
            # summary under its scope lock, provenance rows inserted once (ON CONFLICT).
            self._writer.write_planned(planned, batch_size, bookkeeping, beside_others=True)
        except _ThreadGone:
            if done_work_id is not None:
                self.finish_pending_work(done_work_id, lease_owner)
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
        # Read, compare and replace the thread's summary as one step among concurrent jobs.
        self._core.dialect.lock_users([summary.user_id])  # Citus: before its row goes
        self._core.dialect.lock_scope(f"summary:{summary.thread_id}")
        if summary.covered_through_seq_no < self._summary_covered(summary.thread_id):
            return  # a newer summary is already stored
        t = self._core.dialect.tables
        self._core.dialect.execute(
            f"DELETE FROM {t.records} WHERE family = 'thread_summary' AND id = ?",
            [summary.thread_id],
        )
        self._core.dialect.ids_leaving([(summary.thread_id, "thread_summary")])
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
                    f" ON r.rid = s.rid{self._core.dialect.joined('r', 's')}"
                    f" WHERE r.family = 'memory' AND r.id IN ({marks})"
                    " ORDER BY r.id, s.message_id",
                    builtins.list(part),
                ):
                    out.setdefault(mid, []).append(message_id)
        return {k: tuple(v) for k, v in out.items()}

    def delete_message_cascade(self, thread_id: str, message_id: str) -> tuple[int, int]:
        _check_texts(thread_id=thread_id, message_id=message_id)
        d = self._core.dialect
        t = d.tables
        # The memories this message is the last existing source of (sources deleted before
        # without cascade do not keep a memory alive).
        only = (
            f"r.family = 'memory' AND r.rid IN (SELECT s.rid FROM {t.sources} s"
            " WHERE s.message_id = ? AND NOT EXISTS (SELECT 1 FROM"
            f" {t.sources} o JOIN {t.records} m ON m.family = 'message' AND m.id = o.message_id"
            f"{d.joined('m', 'o')} WHERE o.rid = s.rid{d.joined('o', 's')}"
            " AND o.message_id <> ?))"
        )
        with self._core.lock:
            self._core.check_open()
            self._keeper.sync()

            def cascade() -> tuple[Any, Any, int, int] | None:
                """The deletes, in one write (run again store-wide past the users a
                shared write may lock)."""
                in_thread = (
                    f"r.family = 'message' AND r.id = ? AND r.thread_id = ?"
                    f" AND {self._core.owners.confine()}"
                )
                found = d.execute(
                    f"SELECT seq_no FROM {t.records} r WHERE {in_thread}", [message_id, thread_id]
                )
                if not found:
                    return None
                memories = self._deleter.delete_where(only, [message_id, message_id])
                gone: builtins.list[tuple[Any, ...]] = []
                parts: builtins.list[int] = []
                messages = self._deleter.delete_where(
                    in_thread, [message_id, thread_id], messages=gone, parts=parts
                )
                d.execute(f"DELETE FROM {t.sources} WHERE message_id = ?", [message_id])
                # A summary that read this message goes (the thread's next summarisation
                # writes one from the messages left; docs/guides/forgetting.md).
                summaries: builtins.list[int] = []
                if (found[0][0] or 0) <= self._summary_covered(thread_id):
                    confine = self._core.owners.confine()
                    summaries = self._deleter.delete_where(
                        f"r.family = 'thread_summary' AND r.id = ? AND {confine}", [thread_id]
                    )
                rewindowed = self._deleter.unwindow(gone)
                rids = [*memories, *messages, *parts, *summaries]
                self._deleter.forget_inside(rids)
                return rids, rewindowed, len(messages), len(memories)

            done = self._keeper.shared_else_store_wide(cascade)  # row locks (delete_where)
            if done is None:
                return 0, 0
            rids, rewindowed, n_messages, n_memories = done
            self._deleter.forget_after(rids, rewindowed)
        return n_messages, n_memories

    # ------------------------------------------------------------------ pending work

    def list_pending_work(self, claimable_by: str | None = None) -> builtins.list[PendingWork]:
        d = self._core.dialect
        expired = f"(lease_until IS NULL OR lease_until < {d.NOW_S})" if d.leased_work else "1 = 1"
        _check_texts(claimable_by=claimable_by)
        where, params = "", []
        if claimable_by is not None and d.leased_work:  # a poll: what it may take
            where, params = f" WHERE owner = ? OR {expired}", [claimable_by]
        with self._core.lock:
            self._core.check_open()
            rows = d.execute(
                f"SELECT id, thread_id, payload, owner, attempts, created_at, {expired} FROM"
                f" {d.tables.pending}{where} ORDER BY created_at, id",
                params,
            )
        return [
            PendingWork(r[0], r[1], _json(r[2]) or {}, r[3], int(r[4]), r[5], bool(r[6]))
            for r in rows
        ]

    def claim_pending_work(
        self, work_id: str, expected_owner: str | None, owner: str, *, only_expired: bool = False
    ) -> bool:
        """Take ``work_id`` over from ``expected_owner`` (one compare-and-set: of several
        claimers one wins), with a fresh lease; ``only_expired``: only once that owner's
        lease has run out (database time)."""
        _check_texts(work_id=work_id, expected_owner=expected_owner, owner=owner)
        d = self._core.dialect
        lease = ""
        params: builtins.list[Any] = [owner, work_id, expected_owner]
        if d.leased_work:
            lease = f", lease_until = {d.NOW_S} + ?"
            params.insert(1, lease_seconds())
        expiry = ""
        if only_expired and d.leased_work:
            expiry = f" AND (lease_until IS NULL OR lease_until < {d.NOW_S})"
        with self._core.lock:
            self._core.check_open()
            with d.transaction(shared=True):  # the pending row alone (its row lock)
                d.lock_users(())  # no user's: one statement on one row
                rows = d.execute(
                    f"UPDATE {d.tables.pending} SET owner = ?{lease} WHERE id = ?"
                    f" AND owner {d.IS} ?{expiry} RETURNING id",
                    params,
                )
        return bool(rows)

    def renew_leases(self, owner: str, work_ids: Sequence[str]) -> int:
        """Extend the leases ``owner`` still holds on ``work_ids`` by a lease from now
        (database time); returns how many it holds. A job taken over meanwhile is not
        touched: its new owner keeps it."""
        d = self._core.dialect
        ids = [w for w in work_ids if isinstance(w, str)]
        if not ids or not d.leased_work:
            return 0
        _check_texts(owner=owner, work_ids=ids)
        renewed = 0
        with self._core.lock:
            self._core.check_open()
            for part in chunked(ids, 500):
                marks = ",".join("?" * len(part))
                with d.transaction(shared=True):
                    d.lock_users(())  # no user's: one statement on the rows it renews
                    renewed += len(
                        d.execute(
                            f"UPDATE {d.tables.pending} SET lease_until = {d.NOW_S} + ?"
                            f" WHERE owner = ? AND id IN ({marks}) RETURNING id",
                            [lease_seconds(), owner, *part],
                        )
                    )
        return renewed

    def retry_pending_work(self, work_id: str, owner: str | None = None) -> int:
        """One more failed attempt (only while ``owner``, when given, holds the job)."""
        _check_texts(work_id=work_id, owner=owner)
        d = self._core.dialect
        mine = "" if owner is None else " AND owner = ?"
        with self._core.lock:
            self._core.check_open()
            with d.transaction(shared=True):
                d.lock_users(())  # no user's: one statement on one row
                d.execute(
                    f"UPDATE {d.tables.pending} SET attempts = attempts + 1 WHERE id = ?{mine}",
                    [work_id] if owner is None else [work_id, owner],
                )
                rows = d.execute(f"SELECT attempts FROM {d.tables.pending} WHERE id = ?", [work_id])
        return int(rows[0][0]) if rows else 0

    def finish_pending_work(self, work_id: str, owner: str | None = None) -> None:
        """Forget a job (only while ``owner``, when given, holds it)."""
        _check_texts(work_id=work_id, owner=owner)
        d = self._core.dialect
        mine = "" if owner is None else " AND owner = ?"
        with self._core.lock:
            self._core.check_open()
            with d.transaction(shared=True):
                d.lock_users(())  # no user's: one statement on one row
                d.execute(
                    f"DELETE FROM {d.tables.pending} WHERE id = ?{mine}",
                    [work_id] if owner is None else [work_id, owner],
                )


def summary_of(record: Any) -> tuple[str, int]:
    """A stored thread summary record's text and the last seq_no it covers ("", 0: none)."""
    if not isinstance(record, ThreadSummaryRecord) or not isinstance(record.content, dict):
        return "", 0
    text = record.content.get("summary")
    return (text if isinstance(text, str) else ""), int(record._covered_through_seq_no)


def topics_of(record: Any) -> tuple[str, ...]:
    """A stored thread summary record's topics."""
    if not isinstance(record, ThreadSummaryRecord) or not isinstance(record.content, dict):
        return ()
    topics = record.content.get("topics")
    if not isinstance(topics, list):
        return ()
    return tuple(t for t in topics if isinstance(t, str))


class ExtractionMethods:
    """The store's extraction bookkeeping methods, one-line hand-offs to its
    :class:`ExtractionBook` (a base of ``SQLMemoryStore``)."""

    _extraction: ExtractionBook

    def add_messages_with_work(
        self,
        batch: PendingRecordBatch,
        *,
        thread_id: str,
        extract_every: int | None,
        summarize_every: int | None,
        payload: dict[str, Any],
        owner: str,
        work_id: str | None = None,
        **store_kwargs: Any,
    ) -> tuple[builtins.list[str], PendingWork | None]:
        """Add a thread's messages and, in the same transaction, record the extraction job
        they make due; returns the message ids and the job (None when nothing is due).

        ``extract_every`` / ``summarize_every``: None = off; <= 0 = a job for every call;
        N > 0 = due once N messages are past the extraction pointer / the stored summary.
        A due extraction covers the messages after the pointer (which then moves to the
        newest message); the pointer starts at the thread's last message before this call,
        so turning extraction on never reprocesses history. ``work_id``: the id to give the
        job (generated when omitted).
        """
        return self._extraction.add_messages_with_work(
            batch,
            thread_id=thread_id,
            extract_every=extract_every,
            summarize_every=summarize_every,
            payload=payload,
            owner=owner,
            work_id=work_id,
            store_kwargs=store_kwargs,
        )

    def commit_extraction(
        self,
        batches: builtins.list[PendingRecordBatch],
        *,
        sources: Sequence[Sequence[str]] = (),
        merged_sources: Mapping[str, Sequence[str]] | None = None,
        summary: SummaryWrite | None = None,
        done_work_id: str | None = None,
        thread_id: str | None = None,
        lease_owner: str | None = None,
    ) -> builtins.list[str]:
        """Write what one extraction job produced, all in one transaction; returns the new
        memory ids (none when ``thread_id`` is given and that thread no longer exists: then
        nothing is written but the job is finished).

        ``sources[i]``: the source message ids of the i-th new record. ``merged_sources``:
        more source ids for existing memories (a duplicate found before insert). ``summary``
        replaces the thread's stored summary unless that one already covers more messages.
        ``done_work_id``: the pending-work row this job finishes; with ``lease_owner``, only
        while that owner still holds it (else nothing is written: ``LeaseLost``).
        """
        return self._extraction.commit_extraction(
            batches,
            sources=sources,
            merged_sources=merged_sources,
            summary=summary,
            done_work_id=done_work_id,
            thread_id=thread_id,
            lease_owner=lease_owner,
        )

    def save_thread_summary(self, summary: SummaryWrite) -> None:
        """Store a thread's summary (kept when the stored one covers more messages)."""
        self._extraction.commit_extraction([], summary=summary)

    def memory_sources(self, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Source message ids of extracted memories, by memory id (memories without
        provenance are left out)."""
        return self._extraction.memory_sources(memory_ids)

    def delete_message_cascade(self, thread_id: str, message_id: str) -> tuple[int, int]:
        """Delete a message of ``thread_id`` and the memories derived only from it, in one
        transaction; returns (messages deleted, memories deleted).

        Memories derived from it and from other messages stay, and lose it from their
        provenance (so deleting the last remaining source later removes them).
        """
        return self._extraction.delete_message_cascade(thread_id, message_id)

    def list_pending_work(self, claimable_by: str | None = None) -> builtins.list[PendingWork]:
        """Every stored pending extraction job, oldest first (``claimable_by``: only those
        whose lease ran out, and that owner's own)."""
        return self._extraction.list_pending_work(claimable_by)

    def claim_pending_work(
        self, work_id: str, expected_owner: str | None, owner: str, *, only_expired: bool = False
    ) -> bool:
        """Take over a pending job if it is still owned by ``expected_owner`` (with
        ``only_expired``: and that owner's lease ran out), with a fresh lease."""
        return self._extraction.claim_pending_work(
            work_id, expected_owner, owner, only_expired=only_expired
        )

    def renew_pending_leases(self, owner: str, work_ids: Sequence[str]) -> int:
        """Extend ``owner``'s leases on those of ``work_ids`` it still holds; how many."""
        return self._extraction.renew_leases(owner, work_ids)

    def retry_pending_work(self, work_id: str, owner: str | None = None) -> int:
        """Count one failed attempt of a pending job (it stays for the next client); returns
        the attempts so far (``owner``: only while it holds the job)."""
        return self._extraction.retry_pending_work(work_id, owner)

    def finish_pending_work(self, work_id: str, owner: str | None = None) -> None:
        """Forget a pending job (done, dropped or abandoned; ``owner``: only while it holds
        the job)."""
        self._extraction.finish_pending_work(work_id, owner)

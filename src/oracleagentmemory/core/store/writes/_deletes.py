"""Deleting records: one record, a thread, an actor's cascade; always in one transaction.

A record goes with everything hanging off it: its chunks and keyword rows, image bytes,
provenance rows, the links touching it, and (for a thread) its ``seq_no`` high-water mark
and owner. A memory's history keeps only a tombstone (``schema/_history``). Thread-scoped
cascades take the thread owner's rows only (see ``_threads``). A delete forgets: the engine's
other copies of the rows (full-text segments, SQLite's WAL) and the vector index's snapshot
go with them (``docs/guides/forgetting.md``).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from oracleagentmemory.apis.message import ImageContent
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core._shared._actor import current_actor
from oracleagentmemory.core.store._dialect import chunked
from oracleagentmemory.core.store._store_core import SCOPED_FAMILIES, StoreCore, check_lookup
from oracleagentmemory.core.store.schema._history import erase_and_bury
from oracleagentmemory.core.store.schema._message_parts import parts_from_extra
from oracleagentmemory.core.store.schema._planning import PROFILE_TYPES, family_of, marked_late
from oracleagentmemory.core.store.schema._rows import (
    ChunkRow,
    RetrievalPlan,
    plan_retrieval,
)
from oracleagentmemory.core.store.schema._validity import reconsider, superseded_by
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper
from oracleagentmemory.core.store.writes._updates import replace_chunks, stored_texts


class Deleter:
    """The deletes part."""

    def __init__(self, core: StoreCore, keeper: IndexKeeper) -> None:
        self._core = core
        self._keeper = keeper

    @property
    def dialect(self) -> Any:
        """The store's dialect (the retention part splits its purge by it)."""
        return self._core.dialect

    def delete_where(
        self,
        where: str,
        params: Sequence[Any],
        skip_locked: bool = False,
        messages: builtins.list[tuple[Any, ...]] | None = None,
        parts: builtins.list[int] | None = None,
    ) -> builtins.list[int]:
        """Inside a write: delete matching records (``r``) with their chunks, keyword rows,
        blobs, provenance and relations; returns their rids. ``skip_locked``: leave the
        rows another transaction holds (housekeeping that must not wait). ``messages``
        gathers the deleted messages' (thread id, seq_no, content) for :meth:`unwindow`;
        ``parts`` the rids of their image parts (records of their own, deleted with them)."""
        core = self._core
        d = core.dialect
        t = d.tables
        skip = " SKIP LOCKED" if skip_locked and d.FOR_WRITE else ""
        # Citus: the rows' users and their links' other ends' locked in one call (those
        # free now, when skipping), then the statement confined to the users held.
        d.lock_linked(where, params, wait=not skip_locked)
        where, params = d.locked_where(t.records, "r", where, params, wait=not skip_locked)
        rows = d.execute(  # the rows locked in one order: concurrent deletes never cross
            f"SELECT rid, record_type, id, thread_id, seq_no,"
            f" CASE WHEN family = 'message' THEN content END,"
            f" CASE WHEN family = 'message' THEN extra END, family FROM {t.records} r"
            f" WHERE {where}"
            f" ORDER BY rid{d.FOR_WRITE}{skip}",
            params,
        )
        if not rows:
            return []
        if messages is not None:
            messages += [r[3:6] for r in rows if r[1] == "message" and r[3] is not None]
        rids = [int(r[0]) for r in rows]
        d.note_changed(rids)
        d.ids_leaving([(str(r[2]), str(r[7])) for r in rows])
        # A memory leaves its tombstone, and no content, in its history (schema/_history).
        memories = [int(r[0]) for r in rows if r[1] in MEMORY_RECORD_TYPES]
        for part in chunked(memories, 500):
            erase_and_bury(d, part, current_actor())
        for part in chunked(rids, 500):
            marks = ",".join("?" * len(part))
            cids = [
                r[0] for r in d.execute(f"SELECT cid FROM {t.chunks} WHERE rid IN ({marks})", part)
            ]
            if core.keyword_on_write:
                d.keyword_index_remove(cids)
            d.chunks_leaving(cids)
            d.execute(f"DELETE FROM {t.chunks} WHERE rid IN ({marks})", part)
            d.execute(f"DELETE FROM {t.blobs} WHERE rid IN ({marks})", part)
            d.execute(f"DELETE FROM {t.sources} WHERE rid IN ({marks})", part)
            d.execute(f"DELETE FROM {t.records} WHERE rid IN ({marks})", part)
        # Memories these superseded are true again from when nothing else supersedes them.
        olds = superseded_by(d, [(r[2], r[1]) for r in rows if r[1] in MEMORY_RECORD_TYPES])
        d.executemany(
            f"DELETE FROM {t.relations} WHERE (source_record_type = ? AND source_record_id = ?)"
            " OR (target_record_type = ? AND target_record_id = ?)",
            [(r[1], r[2], r[1], r[2]) for r in rows],
        )
        reconsider(d, olds)
        # A deleted thread takes its seq_no high-water mark along (a new thread may reuse the id),
        # and its extraction jobs not run yet (a job running now loses its lease's row).
        threads = [(r[2],) for r in rows if r[1] == "thread"]
        d.executemany(f"DELETE FROM {t.seq} WHERE thread_key = ?", threads)
        d.executemany(f"DELETE FROM {t.pending} WHERE thread_id = ?", threads)
        # A message's image parts are image records of their own: they go with it (only
        # those made for this message: an id the message names may since belong to another
        # image, even another user's).
        named = {
            (part.id, r[2])
            for r in rows
            if r[1] == "message" and r[6]
            for part in parts_from_extra(r[6]) or ()
            if isinstance(part, ImageContent)
        }
        for part in chunked(sorted(named), 500):
            marks = ",".join("?" * len(part))
            found = d.execute(
                f"SELECT id, {d.json_as_text('r.extra')} FROM {t.records} r"
                f" WHERE r.family = 'image' AND r.id IN ({marks})",
                [image_id for image_id, _ in part],
            )
            mine = [
                image_id for image_id, extra in found if (image_id, _message_of(extra)) in named
            ]
            if not mine:
                continue
            marks = ",".join("?" * len(mine))
            gone = self.delete_where(f"r.family = 'image' AND r.id IN ({marks})", mine, skip_locked)
            if parts is not None:
                parts += gone
        return rids

    def unwindow(self, messages: Sequence[tuple[Any, ...]]) -> builtins.list[int]:
        """Inside a delete, after the rows went: a short message is indexed with the one or
        two before it (``retrieval_windows``), so the next two messages left after each
        deleted one, where their retrieval rows hold its text, are indexed from their own
        text alone (re-embedded). Returns their rids (for :meth:`forget_after`)."""
        core = self._core
        d = core.dialect
        t = d.tables
        done: dict[int, None] = {}
        after_sql = (
            f"SELECT rid, content, user_id, agent_id, thread_id FROM {t.records} r"
            f" WHERE family = 'message' AND thread_id = ? AND seq_no > ?"
            f" AND {core.owners.confine()} ORDER BY seq_no LIMIT ?"
        )
        by_thread: dict[str, builtins.list[tuple[int, str | None]]] = {}
        for thread_id, seq_no, content in messages:
            by_thread.setdefault(thread_id, []).append((seq_no or 0, content))
        found: builtins.list[tuple[Any, ...]] = []
        left: dict[str, builtins.list[tuple[int, str | None]]] = {}
        for thread_id, gone in by_thread.items():
            # One question a thread first: a deleted thread (or user) has no message left.
            if not d.execute(after_sql, [thread_id, -1, 1]):
                continue
            left[thread_id] = gone
            for seq_no, content in gone:
                found += [(*row, content) for row in d.execute(after_sql, [thread_id, seq_no, 2])]
        for rid, own, user_id, agent_id, thread, content in found:
            texts = [
                r[0] or ""
                for r in d.execute(f"SELECT chunk_text FROM {t.chunks} WHERE rid = ?", [rid])
            ]
            if rid in done or (content and not any(content in x for x in texts)):
                continue
            plan = plan_retrieval(
                source=own or None,
                caller_chunks=None,
                vectors=None,
                chunker=core.chunker,
                has_vectors=core.vector_dim is not None,
            )
            core.fill_vectors([plan])
            replace_chunks(core, int(rid), plan, (user_id, agent_id, thread))
            done[int(rid)] = None
        reach = getattr(core.embedder, "late_reach", 0)
        if isinstance(reach, int) and reach > 0:
            self._relate(left, done, reach)
        if done:
            d.note_changed(builtins.list(done))
        return builtins.list(done)

    def _relate(
        self,
        by_thread: dict[str, builtins.list[tuple[int, str | None]]],
        done: dict[int, None],
        reach: int,
    ) -> None:
        """Inside :meth:`unwindow`, where the store's embedder late-chunks (its ``late_reach``,
        ``core/embedders/_late_chunking.REACH``): a vector written by late chunking holds
        every message of its segment, up to ``reach`` messages before or after its own, so
        the late-chunked messages (``extra``'s ``LATE_KEY``) left that close to a deleted one
        (not re-indexed already) get their vectors again from their own rows' texts (the
        window without the deleted message, as a message written alone has it); other
        vectors (pair windows, caller-given) never held it and stay. Adds their rids to
        ``done``."""
        core = self._core
        d = core.dialect
        t = d.tables
        confine = core.owners.confine()

        def near(op: str, order: str) -> str:
            return (
                f"SELECT rid, user_id, agent_id, thread_id, {d.json_as_text('r.extra')}"
                f" FROM {t.records} r"
                f" WHERE family = 'message' AND thread_id = ? AND seq_no {op} ?"
                f" AND {confine} ORDER BY seq_no {order} LIMIT ?"
            )

        found: dict[int, tuple[Any, ...]] = {}
        for thread_id, gone in by_thread.items():  # threads with messages left
            for seq_no, _ in gone:
                for op, order in ((">", "ASC"), ("<", "DESC")):
                    for row in d.execute(near(op, order), [thread_id, seq_no, reach]):
                        if marked_late(row[4]):  # only a late-chunked vector holds its segment
                            found.setdefault(int(row[0]), tuple(row[1:4]))
        for rid, scope in found.items():
            if rid in done:
                continue
            texts, keyword = stored_texts(core, rid)
            plan = RetrievalPlan(
                [ChunkRow(text) for text in texts],
                keyword_text=keyword,
                needs_vectors=core.vector_dim is not None and bool(texts),
            )
            core.fill_vectors([plan])
            replace_chunks(core, rid, plan, (scope[0], scope[1], scope[2]))
            done[rid] = None

    def forget_inside(self, rids: Sequence[int]) -> None:
        """Inside a delete, after :meth:`delete_where`: when anything went, the engine's other
        copies of it go too (full-text segments), and snapshots of earlier states are void."""
        if rids:
            self._core.dialect.forget_inside()
            self._keeper.mark_forgotten()

    def forget_after(self, rids: Sequence[int], rewindowed: Sequence[int] = ()) -> None:
        """After the delete committed: the in-process index drops the rows (and re-reads
        the ``rewindowed`` ones), the engine its old pages (SQLite's WAL), the index
        snapshot its files."""
        self._keeper.remove(rids)
        self._keeper.refresh(builtins.list(rewindowed))
        if rids:
            self._core.dialect.forget_after()
            self._keeper.drop_snapshot()

    def run(
        self,
        steps: builtins.list[tuple[str, Sequence[Any]]],
        forget_threads: Sequence[str] = (),
        forget_owned: Callable[[], builtins.list[str]] | None = None,
        skip_locked: bool = False,
    ) -> builtins.list[builtins.list[int]]:
        """Run delete steps in one transaction; ``forget_threads`` (and the ids
        ``forget_owned`` finds before the steps run) lose their seq_no mark and owner."""
        core = self._core
        with core.lock:
            core.check_open()
            # The records' rows are locked (delete_where), the seq marks and owners by their
            # rows: no store-wide lock, other users' writes run beside. A delete touching
            # more users than a shared write may lock (Citus) runs again store-wide; a
            # housekeeping pass (skip_locked) does not: it leaves what it cannot lock.
            run = partial(self._steps, steps, forget_threads, forget_owned, skip_locked)
            if skip_locked:
                with self._keeper.write(shared=True):
                    results, rids, rewindowed = run()
            else:
                results, rids, rewindowed = self._keeper.shared_else_store_wide(run)
            if skip_locked:
                self._keeper.remove(rids)
            else:
                self.forget_after(rids, rewindowed)
        return results

    def _steps(
        self,
        steps: builtins.list[tuple[str, Sequence[Any]]],
        forget_threads: Sequence[str],
        forget_owned: Callable[[], builtins.list[str]] | None,
        skip_locked: bool,
    ) -> tuple[builtins.list[builtins.list[int]], builtins.list[int], builtins.list[int]]:
        """:meth:`run`'s statements, inside its write: the results, all rids, rewindowed."""
        d = self._core.dialect
        forget = [*forget_threads, *(forget_owned() if forget_owned else [])]
        messages: builtins.list[tuple[Any, ...]] = []
        parts: builtins.list[int] = []
        results = [self.delete_where(w, p, skip_locked, messages, parts) for w, p in steps]
        rewindowed = [] if skip_locked else self.unwindow(messages)
        for thread_id in forget_threads:
            d.execute(f"DELETE FROM {d.tables.seq} WHERE thread_key = ?", [thread_id])
            d.execute(f"DELETE FROM {d.tables.pending} WHERE thread_id = ?", [thread_id])
        self._core.owners.release(forget)
        rids = [*(rid for part in results for rid in part), *parts]
        if not skip_locked:  # housekeeping (expiry) is no forget: no extra cost
            self.forget_inside(rids)
        return results, rids, builtins.list(rewindowed)

    def delete(self, record_type: str, record_id: str, cascade: bool) -> int:
        family = family_of(record_type)
        check_lookup(record_id, "record_id")
        if not isinstance(cascade, bool):
            raise TypeError("cascade must be a bool")
        owners = self._core.owners
        target = (
            "r.family = ? AND r.id = ? AND r.record_type = ?",
            [family, record_id, record_type],
        )
        steps: builtins.list[tuple[str, Sequence[Any]]] = [target]
        forget: Callable[[], builtins.list[str]] | None = None
        if cascade and family in PROFILE_TYPES:
            col = "user_id" if family == "user_profile" else "agent_id"
            t = self._core.dialect.tables
            owned = f"SELECT id FROM {t.records} WHERE family = 'thread' AND {col} = ?"
            steps += [
                # The actor's threads, with the rows of their owner in them.
                (
                    f"r.family IN {SCOPED_FAMILIES} AND r.thread_id IN ({owned})"
                    f" AND {owners.confine()}",
                    [record_id],
                ),
                ("r.family = 'thread' AND r." + col + " = ?", [record_id]),
                (
                    f"r.family IN {SCOPED_FAMILIES} AND r.{col} = ?",
                    [record_id],
                ),
            ]
            if col == "user_id":  # every thread id the user owns is free again
                forget = partial(owners.owned_by, record_id)
            else:
                forget = partial(self._thread_ids_where, f"{col} = ?", [record_id])
        elif cascade and family == "thread":
            return self.delete_thread(record_id)
        return len(self.run(steps, forget_owned=forget)[0])

    def delete_thread(self, thread_id: str) -> int:
        check_lookup(thread_id, "thread_id")
        results = self.run(
            [
                ("r.family = 'thread' AND r.id = ?", [thread_id]),
                (
                    f"r.family IN {SCOPED_FAMILIES} AND r.thread_id = ?"
                    f" AND {self._core.owners.confine()}",
                    [thread_id],
                ),
            ],
            forget_threads=[thread_id],
        )
        return len(results[0])

    def delete_thread_messages(self, thread_id: str) -> int:
        check_lookup(thread_id, "thread_id")
        step = (
            f"r.family = 'message' AND r.thread_id = ? AND {self._core.owners.confine()}",
            [thread_id],
        )
        return len(self.run([step])[0])

    def _thread_ids_where(self, where: str, params: Sequence[Any]) -> builtins.list[str]:
        d = self._core.dialect
        rows = d.execute(
            f"SELECT id FROM {d.tables.records} WHERE family = 'thread' AND {where}", params
        )
        return [str(r[0]) for r in rows]


def _message_of(extra: Any) -> str | None:
    """The message an image record was made for (its ``extra``'s ``message_id``)."""
    try:
        value = json.loads(extra) if isinstance(extra, str | bytes) else extra
    except ValueError:
        return None
    found = value.get("message_id") if isinstance(value, dict) else None
    return found if isinstance(found, str) else None

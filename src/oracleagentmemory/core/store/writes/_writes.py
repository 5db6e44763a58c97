"""Writing new records: planning hand-off, group commit, the insert itself, thread rows.

A write is planned first (``_planning``: every argument checked, vectors embedded) with no
lock held; then queued. Writers of one process share transactions: whoever takes the lock
writes the whole queue (``_group_commit``), each job under its own savepoint, so one job's
error fails that job alone. The insert asks what it must know (id clashes, the top rid and
cid, the thread's owner and ``seq_no`` mark) in one statement, then writes the record,
chunk, keyword and blob rows; the in-process index learns the rows after the commit. On an
engine with concurrent writers a plain insert of no message, claiming no thread, may be
written by one statement instead (``Dialect.insert_at_once``).
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core._shared._actor import current_actor
from oracleagentmemory.core._shared._end_user import current_end_user, running_as
from oracleagentmemory.core.store._dialect import KeywordRow, chunked
from oracleagentmemory.core.store._jsontext import load_json_column as _json
from oracleagentmemory.core.store._limits import MAX_BATCH_SIZE
from oracleagentmemory.core.store._relations import (
    Links,
    PlannedRelation,
    link_ends,
    plan_relations,
)
from oracleagentmemory.core.store._store_core import COLS, StoreCore, check_lookup
from oracleagentmemory.core.store._threads import claims_of, decode_head
from oracleagentmemory.core.store._time import expiry, iso, utcnow
from oracleagentmemory.core.store.schema._history import add_created, sources_text
from oracleagentmemory.core.store.schema._planning import (
    check_dims,
    check_metadata,
    check_positive_int,
    check_unique_ids,
    plan_batch,
    with_attachments,
)
from oracleagentmemory.core.store.schema._rows import PlannedRecord, dumps_json
from oracleagentmemory.core.store.schema._validity import born_invalid, valid_from_of
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper, index_rows_of
from oracleagentmemory.core.store.vectors._vector_index import IndexRow
from oracleagentmemory.core.store.writes._group_commit import JobQueue, WriteJob, shared_queue
from oracleagentmemory.core.store.writes._retention import Retention


class Writer:
    """The writes part: new records (with relations) through one group-committed queue."""

    def __init__(
        self, core: StoreCore, keeper: IndexKeeper, links: Links, retention: Retention
    ) -> None:
        self._core = core
        self._keeper = keeper
        self._links = links
        self._retention = retention
        self.jobs = JobQueue()
        self._plain = JobQueue()
        """(Concurrent writers) plain inserts waiting for the next group."""
        self._combine = threading.Lock()

    def add_with_relations(
        self,
        batches: builtins.list[PendingRecordBatch],
        relations: Sequence[Mapping[str, Any]],
        store_kwargs: dict[str, Any],
    ) -> tuple[builtins.list[str], builtins.list[str]]:
        require_thread = store_kwargs.pop("require_thread", None)
        planned, batch_size = self.plan_batches(batches, store_kwargs)
        if isinstance(relations, Mapping) or not isinstance(relations, builtins.list | tuple):
            raise TypeError("relations must be a list of mappings of add_relations arguments")
        links: builtins.list[PlannedRelation] = []
        for i, spec in enumerate(relations):
            if not isinstance(spec, Mapping):
                raise TypeError(f"relations[{i}] must be a mapping of add_relations arguments")
            links.extend(plan_relations(**spec))
        if not planned and not links:
            return [], []
        self.write_planned(planned, batch_size, links=links, require_thread=require_thread)
        return [p.id for p in planned], [str(link.values[0]) for link in links]

    def plan_batches(
        self, batches: Any, store_kwargs: dict[str, Any]
    ) -> tuple[builtins.list[PlannedRecord], int]:
        """Validate and plan ``add_batches`` arguments (no I/O); vectors are filled in."""
        batch_size = store_kwargs.pop("batch_size", 256)
        check_positive_int(batch_size, "batch_size", maximum=MAX_BATCH_SIZE)
        if store_kwargs:
            raise TypeError(f"unexpected store option(s): {sorted(store_kwargs)}")
        if not isinstance(batches, builtins.list | tuple):
            raise TypeError("batches must be a list of PendingRecordBatch")
        ctx = self._core.write_context()
        dims: set[int] = set()
        planned: builtins.list[PlannedRecord] = []
        for i, batch in enumerate(batches):
            if not isinstance(batch, PendingRecordBatch):
                raise TypeError(f"batches[{i}] must be a PendingRecordBatch")
            planned.extend(plan_batch(batch, ctx, dims))
        check_dims(dims, self._core.vector_dim)
        check_unique_ids(planned)
        if planned:
            self._core.fill_vectors(p.retrieval for p in with_attachments(planned))
        return planned, batch_size

    def write_planned(
        self,
        planned: builtins.list[PlannedRecord],
        batch_size: int,
        also: Callable[[], Any] | None = None,
        *,
        links: builtins.list[PlannedRelation] | None = None,
        require_thread: str | None = None,
        beside_others: bool = False,
    ) -> Any:
        """Insert planned records (and relations) in one transaction; ``also`` runs inside
        that transaction after the insert (its result is returned), so its writes land with
        the records. ``require_thread``: KeyError, and nothing written, unless that thread
        row exists. Concurrent writers of this process share transactions (group commit),
        except on an engine whose writers run at once: there each write is its own
        transaction, beside the others when it is a plain insert (or ``beside_others``)."""
        if require_thread is not None:
            check_lookup(require_thread, "require_thread")
        self._core.dialect.check_end_user()
        actor = current_actor()  # the caller's, before another thread may write the job
        for p in planned:
            if p.actor is None:
                p.actor = actor
        job = WriteJob(
            planned,
            links or [],
            batch_size,
            require_thread,
            also,
            beside_others,
            who=current_end_user(),
            actor=actor,
        )
        if self._core.dialect.concurrent_writers:
            if also is None and not job.links and require_thread is None:
                self._run_grouped(job)
            else:
                self._run_alone(job)
            if job.error is not None:
                raise job.error
            return job.result
        combine, queue = self._queue()
        job.owner = self
        queue.put(job)
        # Writers of this process queue here (reads do not): whoever gets in writes the
        # whole queue. With a connection pool the store lock is a no-op, so this lock is
        # what lets PostgreSQL writers share a transaction too.
        with combine, self._core.lock:
            if not job.done.is_set():
                self.run_jobs(queue)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    def _queue(self) -> tuple[threading.Lock, JobQueue]:
        """This store's write queue: the one every store of this process on the same
        database file with the same keyword-index setting shares, when the engine has one
        (SQLite on a file the store opened), else its own."""
        key = self._core.dialect.shared_writes_key()
        if key is None:
            return self._combine, self.jobs
        return shared_queue((key, self._core.sync))

    def run_jobs(self, queue: JobQueue | None = None) -> None:
        """Write the queued jobs in one transaction (see ``_group_commit``); under the lock.

        From a shared queue: every job but another store's with follow-up statements (they
        run on their own store's connection); only this store's own jobs once it is closed,
        so another store's job never fails for it."""
        if queue is None:
            queue = self.jobs
        closed = self._core.closed
        jobs = queue.take(lambda j: j.owner is self or (j.also is None and not closed))
        if not jobs:
            return
        try:
            self._core.check_open()
            with self._keeper.write():
                if len(jobs) == 1:
                    self._apply(jobs[0])
                else:
                    self._apply_group(jobs)
            for job in jobs:
                self._keeper.add(job.index_rows)
        except BaseException as exc:  # the whole group failed: every job reports it
            for job in jobs:
                if job.error is None:
                    job.error = exc
                job.index_rows = []
            if not isinstance(exc, Exception):
                raise
        finally:
            for job in jobs:
                job.done.set()
        self._retention.after_write()

    def _apply_group(self, jobs: builtins.list[WriteJob]) -> None:
        """Inside a write: several jobs, each under its own savepoint, so one job's error
        fails that job alone. The plain inserts among them (no thread check, links or
        follow-up) go first as ONE insert, written again job by job if it fails."""
        plain = [j for j in jobs if j.also is None and not j.links and j.require_thread is None]
        alone = jobs
        if len(plain) > 1:
            merged = WriteJob(
                [p for j in plain for p in j.planned], [], max(j.batch_size for j in plain), None
            )
            if self._in_savepoint(merged, "oam_group"):
                plain[0].index_rows = merged.index_rows
                alone = [j for j in jobs if j not in plain]
        for i, job in enumerate(alone):
            self._in_savepoint(job, f"oam_job_{i}")

    def _in_savepoint(self, job: WriteJob, name: str) -> bool:
        """``job`` under a savepoint; on failure its writes are undone and it keeps the
        error. Whether it succeeded."""
        d = self._core.dialect
        d.execute(f"SAVEPOINT {name}")
        try:
            self._apply(job)
            # Read back here: an error of a statement sent without waiting (a pipelined
            # insert) is this job's, not the group's.
            d.execute(f"RELEASE {name}")
        except Exception as exc:
            d.settle()
            d.execute(f"ROLLBACK TO {name}")
            d.execute(f"RELEASE {name}")
            job.error, job.index_rows = exc, []
        return job.error is None

    def _run_grouped(self, job: WriteJob) -> None:
        """A plain insert on an engine with concurrent writers: this process's plain inserts
        queue while its previous group commits, and the next group is ONE transaction of
        all their rows (fewer statements and commits per write; other processes' groups
        run beside it). A group that fails is written again job by job, so each job gets
        its own answer and none lands twice."""
        self._plain.put(job)
        with self._combine:
            if not job.done.is_set():
                jobs = self._plain.take_all()
                by_user: dict[str | None, builtins.list[WriteJob]] = {}
                for one in jobs:
                    by_user.setdefault(one.who, []).append(one)
                try:
                    for who, same in by_user.items():
                        with running_as(who):  # one transaction as one end user
                            if len(same) == 1:
                                self._run_alone(same[0])
                            else:
                                self._run_group(same)
                finally:
                    for one in jobs:
                        one.done.set()
        job.done.wait()

    def _run_group(self, jobs: builtins.list[WriteJob]) -> None:
        group = WriteJob(
            [p for one in jobs for p in one.planned], [], max(j.batch_size for j in jobs), None
        )
        self._run_alone(group)
        if group.error is None:
            return
        for one in jobs:
            self._run_alone(one)

    def _run_alone(self, job: WriteJob) -> None:
        """One job in its own transaction (engines with concurrent writers)."""
        self._core.check_open()
        try:
            if not self._insert_at_once(job):
                if self._shared(job):  # its links' ends may be more users: then store-wide
                    self._keeper.shared_else_store_wide(lambda: self._apply(job))
                else:
                    with self._keeper.write(shared=False):
                        self._apply(job)
            self._keeper.add(job.index_rows)
        except Exception as exc:
            job.error = exc
        self._retention.after_write()

    def _shared(self, job: WriteJob) -> bool:
        """Whether ``job`` runs beside other writers: not when its ``also`` needs the store
        to itself, nor when it names more users than a shared write may lock one by one
        (Citus: ``Dialect.users_a_shared_write``; then the store lock, exclusively)."""
        limit = self._core.dialect.users_a_shared_write
        if limit is not None and len({p.user_id for p in with_attachments(job.planned)}) > limit:
            return False
        return job.also is None or job.beside_others

    def _insert_at_once(self, job: WriteJob) -> bool:
        """A plain insert of no message, claiming no thread and holding no bytes, as one
        statement where the engine has one (``Dialect.insert_at_once``); whether it was
        written so."""
        if job.also is not None or job.links or job.require_thread is not None:
            return False
        planned = with_attachments(job.planned)
        if not planned or any(
            p.thread_id is not None
            or p.family == "message"
            or p.blob is not None
            or p.status is RecordStatus.INVALID
            for p in planned
        ):  # a thread to claim, a seq_no to take (messages without a thread share one), bytes,
            # a validity window to close in the same transaction (``born_invalid``)
            return False
        core = self._core
        d = core.dialect
        now = utcnow()
        created = iso(now)
        records: builtins.list[tuple[Any, ...]] = []
        chunks: builtins.list[tuple[int, int, str | None, Any, tuple[Any, Any, Any]]] = []
        expiries: builtins.list[float | None] = []
        for o, p in enumerate(planned):
            expires_at = expiry(p.ttl_days, p.ttl_anchor, now, p.event_ts)
            expiries.append(expires_at)
            records.append(
                (
                    *_record_row(p, None, None, created, expires_at)[1:],
                    p.actor,
                    sources_text(p.sources),
                    valid_from_of(p, now),
                )
            )
            scope = (p.user_id, p.agent_id, p.thread_id)
            for i, text, vector in p.retrieval.stored():
                vec = None if vector is None else d.vector_to_db(vector)
                chunks.append((o, i, text, vec, scope))
        probe = core.keyword_probe() is not None
        keyword = not probe and core.keyword_on_write_given(None)
        done = d.insert_at_once(records, chunks, keyword=keyword, probe=probe)
        if done is None:
            return False
        rids, appeared = done
        if appeared:  # another client added the keyword index: this store indexes too
            with self._keeper.write():
                core.keyword_on_write_given(True)
        job.index_rows = [
            row
            for p, rid, expires_at in zip(planned, rids, expiries, strict=True)
            for row in index_rows_of(rid, p, expires_at)
        ]
        return True

    def _apply(self, job: WriteJob) -> None:
        """Inside a write: one job's thread check, rows, links and follow-up work. The users
        it writes for (its records', its links' ends') are named first, in one go."""
        self._core.dialect.lock_users(
            (p.user_id for p in with_attachments(job.planned)),
            [end for link in job.links for end in link_ends(link)],
        )
        self.require_thread(job.require_thread)
        if job.planned:
            job.index_rows = self.insert(job.planned, job.batch_size)
        if job.links:
            self._links.insert(job.links, job.actor)
        if job.also is not None:
            job.result = job.also()

    def require_thread(self, thread_id: str | None) -> None:
        """Inside a write: KeyError unless the thread row ``thread_id`` exists."""
        if thread_id is None:
            return
        d = self._core.dialect
        if not d.execute(
            f"SELECT 1 FROM {d.tables.records} WHERE family = 'thread' AND id = ?", [thread_id]
        ):
            raise KeyError(
                f"no thread with id {thread_id!r}: it was deleted, so this handle cannot write"
            )

    def insert(
        self, planned: builtins.list[PlannedRecord], batch_size: int
    ) -> builtins.list[IndexRow]:
        """Inside a write: insert planned records with their retrieval rows; returns their
        index rows (applied to the in-process index after the commit)."""
        core = self._core
        d = core.dialect
        t = d.tables
        now = utcnow()
        created = iso(now)
        planned = with_attachments(planned)
        d.lock_users(p.user_id for p in planned)  # held already when named by the job
        by_family: dict[str, builtins.list[str]] = {}
        for p in planned:
            if not p.generated_id:  # fresh UUIDs cannot clash; the UNIQUE key backs that up
                by_family.setdefault(p.family, []).append(p.id)
        clash_sql = f"SELECT id FROM {d.ids_table()} WHERE family = ? AND id IN ({{}}) LIMIT 1"
        checks = [(family, part) for family, ids in by_family.items() for part in chunked(ids, 500)]
        n_chunks = sum(p.retrieval.row_count for p in planned)
        # The usual write (one id list, at most one thread of messages) asks everything it
        # must know before inserting in ONE statement: the id clash, the new rids and cids,
        # and the thread's seq_no high-water mark.
        head, head_params = d.id_head_sql(len(planned), n_chunks)
        cte, cte_params = "", builtins.list[Any]()
        clash_in_head = len(checks) == 1
        clash_at = len(head)
        if clash_in_head:
            family, part = checks.pop()
            head.append(f"({clash_sql.format(','.join('?' * len(part)))})")
            head_params += [family, *part]
        for family, part in checks:
            clash = d.execute(clash_sql.format(",".join("?" * len(part))), [family, *part])
            if clash:
                raise ValueError(f"record_ids: {clash[0][0]!r} already exists")
        # Every thread id named must be unclaimed or this user's (see _threads); one thread's
        # owner is read in the same statement.
        claims = claims_of(planned)
        owner_at = None  # a column position (the owner item is two columns)
        if len(claims) == 1 and core.owners.enabled:
            (claimed,) = claims
            owner_sql, owner_params = core.owners.head_sql(claimed)
            owner_at = len(head)
            head.append(owner_sql)
            head_params += owner_params
        per_thread: dict[str | None, int] = {}
        for p in planned:
            if p.family == "message":
                per_thread[p.thread_id] = per_thread.get(p.thread_id, 0) + 1
        seq_at = len(head) + (owner_at is not None)
        if d.concurrent_writers and per_thread:
            # Each thread's high-water mark moves past the new messages in this statement:
            # its row stays locked to the commit, so writers of one thread take turns and
            # commit their messages in seq_no order.
            if d.layout is None:
                cte, cte_params, seq_sql = self._reserve_seq_sql(per_thread)
                head.append(seq_sql)
            else:  # distributed: the marks move in a statement of their own
                head.append("?::json")
                head_params.append(self._reserve_seq_apart(per_thread))
        elif len(per_thread) == 1:
            (thread,) = per_thread
            seq_sql, seq_params = self._last_seq_sql(thread)
            head.append(seq_sql)
            head_params += seq_params
        # Whether another client added the keyword index meanwhile, in the same statement
        # (see StoreCore.keyword_probe): the last column.
        probe = core.keyword_probe()
        if probe is not None:
            head.append(probe[0])
            head_params += probe[1]
        top = d.execute(f"{cte}SELECT {', '.join(head)}", [*cte_params, *head_params])[0]
        keyword = core.keyword_on_write_given(None if probe is None else bool(top[-1]))
        rids, cids = d.ids_from_head(top, len(planned), n_chunks)
        if clash_in_head and top[clash_at] is not None:
            raise ValueError(f"record_ids: {top[clash_at]!r} already exists")
        known = {} if owner_at is None else {claimed: decode_head(*top[owner_at : owner_at + 2])}
        core.owners.claim(claims, known)
        next_seq: dict[str | None, int] = {}
        if d.concurrent_writers and per_thread:
            for key, last in top[seq_at]:
                thread = None if key == "" else str(key)
                next_seq[thread] = int(last) - per_thread[thread] + 1
        elif len(per_thread) == 1:
            mark, most = top[seq_at : seq_at + 2]
            next_seq[thread] = max(int(most), int(mark or 0)) + 1
        rec_rows: builtins.list[tuple[Any, ...]] = []
        validity = d.keeps_validity
        chunk_rows: builtins.list[tuple[Any, ...]] = []
        fts_rows: builtins.list[KeywordRow] = []
        index_rows: builtins.list[IndexRow] = []
        blob_rows: builtins.list[tuple[int, bytes]] = []
        next_cid = iter(cids)
        for p, rid in zip(planned, rids, strict=True):
            if p.blob is not None:
                blob_rows.append((rid, p.blob))
            seq_no = None
            if p.family == "message":
                if p.thread_id not in next_seq:
                    next_seq[p.thread_id] = self._last_seq_no(p.thread_id) + 1
                seq_no = next_seq[p.thread_id]
                next_seq[p.thread_id] += 1
            expires_at = expiry(p.ttl_days, p.ttl_anchor, now, p.event_ts)
            row = _record_row(p, rid, seq_no, created, expires_at)
            rec_rows.append((*row, valid_from_of(p, now)) if validity else row)
            for i, text, vector in p.retrieval.stored():
                cid = next(next_cid)
                vec = None if vector is None else d.vector_to_db(vector)
                chunk_rows.append((cid, rid, i, text, vec))
                if text:
                    fts_rows.append((cid, rid, i, text, p.user_id, p.agent_id, p.thread_id))
            index_rows.extend(index_rows_of(rid, p, expires_at))
        columns = f"{COLS}, ttl_days, valid_from" if validity else f"{COLS}, ttl_days"
        d.insert_rows(t.records, columns, rec_rows, batch_size)
        born_invalid(d, planned, rids)
        add_created(d, planned, created)
        if next_seq and not d.concurrent_writers:
            # The high-water marks move with the messages, in the same transaction.
            d.executemany(
                f"INSERT INTO {t.seq} (thread_key, last_seq) VALUES (?, ?) ON CONFLICT"
                " (thread_key) DO UPDATE SET last_seq = excluded.last_seq",
                [(thread or "", top - 1) for thread, top in next_seq.items()],
            )
        d.insert_chunks(chunk_rows, fts_rows if keyword else None, batch_size)
        if blob_rows:
            d.insert_rows(t.blobs, "rid, data", blob_rows, batch_size)
        d.note_changed([r[0] for r in rec_rows])
        return index_rows

    def _reserve_seq_sql(
        self, per_thread: dict[str | None, int]
    ) -> tuple[str, builtins.list[Any], str]:
        """(A CTE moving each thread's high-water mark past its new messages, its
        parameters, a select-list item of ``[thread_key, new mark]`` pairs)."""
        t = self._core.dialect.tables
        keys = sorted((thread or "", n) for thread, n in per_thread.items())
        cte = (
            f"WITH s AS (INSERT INTO {t.seq} (thread_key, last_seq) VALUES"
            f" {','.join(['(?, ?)'] * len(keys))} ON CONFLICT (thread_key) DO UPDATE"
            f" SET last_seq = {t.seq}.last_seq + excluded.last_seq"
            " RETURNING thread_key, last_seq) "
        )
        item = "(SELECT json_agg(json_build_array(thread_key, last_seq)) FROM s)"
        return cte, [v for pair in keys for v in pair], item

    def _reserve_seq_apart(self, per_thread: dict[str | None, int]) -> str:
        """:meth:`_reserve_seq_sql` on a distributed layout: each mark on a shard chosen by
        its thread (one mark a thread, whoever writes to it: its messages may come from its
        user and from no user), moved now; the new marks as JSON ``[[thread_key, mark],
        ...]``."""
        d = self._core.dialect
        keys = sorted((thread or "", thread or "", n) for thread, n in per_thread.items())
        t = d.tables
        moved = d.execute(
            f"INSERT INTO {t.seq} (shard_user, thread_key, last_seq) VALUES"
            f" {','.join(['(?, ?, ?)'] * len(keys))} ON CONFLICT (shard_user, thread_key)"
            f" DO UPDATE SET last_seq = {t.seq}.last_seq + excluded.last_seq"
            " RETURNING thread_key, last_seq",
            [v for row in keys for v in row],
        )
        return json.dumps([[str(k), int(v)] for k, v in moved])

    def _last_seq_no(self, thread_id: str | None) -> int:
        """The highest seq_no ever handed out in a thread (0 for none), inside a write.

        The high-water mark survives deleting or expiring the newest messages, so a seq_no
        is never reused; the records are consulted too, for rows written without one.
        """
        sql, params = self._last_seq_sql(thread_id)
        mark, top = self._core.dialect.execute(f"SELECT {sql}", params)[0]
        return max(int(top), int(mark or 0))

    def _last_seq_sql(self, thread_id: str | None) -> tuple[str, builtins.list[Any]]:
        """Select-list SQL (two columns: the high-water mark, the top seq_no) and its
        parameters for :meth:`_last_seq_no`."""
        t = self._core.dialect.tables
        # "= ?" (not the null-safe operator) lets every engine use the thread index.
        same, params = (
            ("thread_id IS NULL", []) if thread_id is None else ("thread_id = ?", [thread_id])
        )
        sql = (
            f"(SELECT last_seq FROM {t.seq} WHERE thread_key = ?),"
            f" (SELECT COALESCE(MAX(seq_no), 0) FROM {t.records}"
            f" WHERE {same} AND family = 'message')"
        )
        return sql, [thread_id or "", *params]

    def create_thread_record(
        self,
        thread_id: str,
        user_id: str | None,
        agent_id: str | None,
        metadata: dict[str, Any] | None,
        runtime_config: dict[str, Any] | None,
    ) -> str:
        core = self._core
        extra = dumps_json({"runtime_config": runtime_config}, "runtime_config")
        batch = PendingRecordBatch(
            contents=[None],
            record_type="thread",
            record_ids=thread_id,
            user_ids=user_id,
            agent_ids=agent_id,
            metadata=metadata,
        )
        planned = plan_batch(batch, core.write_context(vectors=False), set())
        planned[0].extra_json = extra
        with core.lock:
            core.check_open()
            with self._keeper.write(shared=True):  # an insert: the UNIQUE key, the owners
                self.insert(planned, 1)
        return thread_id

    def update_thread_record(
        self, thread_id: str, metadata: Any, runtime_config: Any, runtime_state: Any
    ) -> int:
        check_lookup(thread_id, "thread_id")
        meta_json = NOT_SET_MARKER if metadata is NOT_SET_MARKER else check_metadata(metadata)
        core = self._core
        d = core.dialect
        t = d.tables
        with core.lock:
            core.check_open()
            with self._keeper.write(shared=True):  # the thread row's lock (FOR_WRITE)
                where, found_params = d.locked_where(
                    t.records, "r", "family = 'thread' AND id = ?", [thread_id]
                )
                rows = d.execute(
                    f"SELECT {d.json_as_text('extra')} FROM {t.records} r"
                    f" WHERE {where}{d.FOR_WRITE}",
                    found_params,
                )
                if not rows:
                    return 0
                extra = _json(rows[0][0]) or {}
                if runtime_config is not NOT_SET_MARKER:
                    extra["runtime_config"] = runtime_config
                if runtime_state is not NOT_SET_MARKER:
                    extra["runtime_state"] = runtime_state
                sets: builtins.list[str] = ["extra = ?"]
                params: builtins.list[Any] = [dumps_json(extra, "runtime_config")]
                if meta_json is not NOT_SET_MARKER:
                    sets.append("metadata = ?")
                    params.append(meta_json)
                d.execute(
                    f"UPDATE {t.records} SET {', '.join(sets)} WHERE family = 'thread' AND id = ?",
                    [*params, thread_id],
                )
        return 1


def _record_row(
    p: PlannedRecord, rid: int | None, seq_no: int | None, created: str, expires_at: float | None
) -> tuple[Any, ...]:
    """A record's row, in ``COLS, ttl_days`` order."""
    return (
        rid,
        p.family,
        p.record_type,
        p.id,
        p.content,
        p.role,
        seq_no,
        p.thread_id,
        p.user_id,
        p.agent_id,
        p.event_ts,
        created,
        p.metadata_json,
        p.status.value,
        expires_at,
        p.extra_json,
        p.ttl_days,
    )

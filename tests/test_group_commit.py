"""Group commit: concurrent adds of one process share transactions (SQLite; on PostgreSQL each
add is its own transaction, beside the others), and a failing add in a group fails alone."""

from __future__ import annotations

import threading
from typing import Any

import pytest


def test_concurrent_adds_share_transactions_and_fail_alone(store: Any, backend: str) -> None:
    store.add(["taken"], record_type="message", record_ids="taken", thread_ids="other")
    dialect = store._dialect
    original = dialect.transaction
    opened: list[int] = []

    def counted(shared: bool = False) -> Any:
        opened.append(1)
        return original(shared)

    dialect.transaction = counted
    results: dict[str, Any] = {}
    barrier = threading.Barrier(8)

    def writer(t: int) -> None:
        barrier.wait()
        for i in range(25):
            rid = "taken" if (t == 3 and i == 10) else f"t{t}-{i}"
            try:
                store.add(
                    [f"text {rid}"],
                    record_type="message",
                    record_ids=rid,
                    thread_ids="shared",
                    roles="user",
                )
                results[f"{t}-{i}"] = rid
            except ValueError as exc:
                results[f"{t}-{i}"] = exc

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dialect.transaction = original
    errors = [v for v in results.values() if isinstance(v, Exception)]
    assert len(errors) == 1 and "already exists" in str(errors[0])
    stored = store.list_thread_messages("shared")
    assert len(stored) == 199
    assert sorted(m.seq_no for m in stored) == list(range(1, 200))  # no gap, no repeat
    assert {m.id for m in stored} == {v for v in results.values() if isinstance(v, str)}
    if backend == "sqlite":  # one lock: threads that queue up meanwhile share a commit
        assert len(opened) < 200
    assert store.get("message", "taken").thread_id == "other"


def test_a_closed_store_refuses_queued_writes(make_store: Any) -> None:
    store = make_store()
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.add(["x"], record_type="memory")


@pytest.mark.parametrize("strategy", ["VECTOR", "HYBRID"])
def test_a_failing_job_in_a_group_is_rolled_back_alone(make_store: Any, strategy: str) -> None:
    """A clash surfaces where the job's statements are read back (on PostgreSQL after the
    pipelined inserts), and only that job fails, whatever the strategy."""
    from oracleagentmemory.apis.batch import PendingRecordBatch
    from oracleagentmemory.core.store.schema._planning import plan_batch
    from oracleagentmemory.core.store.schema._rows import WriteContext
    from oracleagentmemory.core.store.writes._group_commit import WriteJob

    from ._dump import dump_store

    store = make_store(search_strategy=strategy)
    store.create_thread_record("t", user_id=None, agent_id=None, metadata=None, runtime_config={})
    ctx = WriteContext(store.vector_dim, True, store._core.chunker, store.memory_retention_config)

    def job(rid: str, thread: str | None = None) -> WriteJob:
        batch = PendingRecordBatch(contents=[rid], record_type="memory", record_ids=rid)
        planned = plan_batch(batch, ctx, set())
        store._core.fill_vectors(p.retrieval for p in planned)
        return WriteJob(planned, [], 256, thread)

    before = dump_store(store)
    jobs = [job("a"), job("b", "deleted-thread"), job("a"), job("c", "t")]
    for j in jobs:
        store._writes.jobs.put(j)
    with store._lock:
        store._writes.run_jobs()
    assert [j.done.is_set() for j in jobs] == [True] * 4
    assert [type(j.error).__name__ for j in jobs] == [
        "NoneType",
        "KeyError",
        "ValueError",
        "NoneType",
    ]
    assert {r.id for r in store.list("memory")} == {"a", "c"}
    assert dump_store(store) != before
    assert [r.id for r, _ in store.search("c", 1)] == ["c"]  # the index got the successes


def _sqlite_only(backend: str) -> None:
    if backend != "sqlite":
        pytest.skip("one write queue per database file is SQLite's (PostgreSQL writes at once)")


def test_stores_on_one_file_share_a_write_queue(make_store: Any, backend: str) -> None:
    """A client per thread (or per request) on one SQLite file: their writers share
    transactions as one store's do, every write lands once, in seq_no order, and each
    store's searches see every store's writes."""
    _sqlite_only(backend)
    stores = [make_store() for _ in range(4)]
    opened: list[int] = []
    for s in stores:
        original = s._dialect.transaction

        def counted(shared: bool = False, original: Any = original) -> Any:
            opened.append(1)
            return original(shared)

        s._dialect.transaction = counted
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def writer(t: int) -> None:
        s = stores[t % 4]
        barrier.wait()
        try:
            for i in range(25):
                s.add(
                    [f"text w{t}x{i}"],
                    record_type="message",
                    record_ids=f"t{t}-{i}",
                    thread_ids="shared",
                    roles="user",
                )
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []
    for s in stores:
        stored = s.list_thread_messages("shared")
        assert sorted(m.seq_no for m in stored) == list(range(1, 201))
        assert {m.id for m in stored} == {f"t{t}-{i}" for t in range(8) for i in range(25)}
        assert [r.id for r, _ in s.search("text w5x7", 1)] == ["t5-7"]
    assert len(opened) < 200  # stores of one process on one file share commits


def _job(store: Any, rid: str, also: Any = None) -> Any:
    from oracleagentmemory.apis.batch import PendingRecordBatch
    from oracleagentmemory.core.store.schema._planning import plan_batch
    from oracleagentmemory.core.store.schema._rows import WriteContext
    from oracleagentmemory.core.store.writes._group_commit import WriteJob

    ctx = WriteContext(store.vector_dim, True, store._core.chunker, store.memory_retention_config)
    planned = plan_batch(
        PendingRecordBatch(contents=[rid], record_type="memory", record_ids=rid), ctx, set()
    )
    store._core.fill_vectors(p.retrieval for p in planned)
    job = WriteJob(planned, [], 256, None, also)
    job.owner = store._writes
    return job


def test_a_shared_queue_leaves_what_its_leader_must_not_run(make_store: Any, backend: str) -> None:
    """Another store's job with follow-up statements runs on that store's connection, and a
    closed store leads only its own jobs (which fail), never another store's."""
    _sqlite_only(backend)
    a, b = make_store(), make_store()
    combine, queue = a._writes._queue()
    assert b._writes._queue() == (combine, queue)
    ran_on: list[Any] = []
    with_also = _job(b, "b-also", also=lambda: ran_on.append(b))
    plain_b, plain_a = _job(b, "b-plain"), _job(a, "a-plain")
    for job in (with_also, plain_b, plain_a):
        queue.put(job)
    with a._lock:
        a._writes.run_jobs(queue)
    assert plain_b.done.is_set() and plain_a.done.is_set() and not with_also.done.is_set()
    assert plain_b.error is None and plain_a.error is None and ran_on == []
    with b._lock:
        b._writes.run_jobs(queue)
    assert with_also.done.is_set() and with_also.error is None and ran_on == [b]
    assert {r.id for r in b.list("memory")} == {"b-also", "b-plain", "a-plain"}

    mine, theirs = _job(a, "a-late"), _job(b, "b-late")
    a.close()
    queue.put(mine)
    queue.put(theirs)
    a._writes.run_jobs(queue)
    assert isinstance(mine.error, RuntimeError) and not theirs.done.is_set()
    with b._lock:
        b._writes.run_jobs(queue)
    assert theirs.error is None and b.get("memory", "b-late") is not None

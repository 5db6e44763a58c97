"""PostgreSQL: writers run at once, and the approximate index is kept behind the writes.

Ids come from sequences, a thread's seq_no from its locked mark row, and an id clash from the
UNIQUE key; chunks queue for the approximate index and a search ranks the queue exactly, so
no committed row is missed while the index lags (``_postgres_ann``)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg
import pytest

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION
from oracleagentmemory.core.store._threads import ThreadOwnershipError

from ._embedders import HashingEmbedder

pytestmark = pytest.mark.skipif(
    "postgres" not in os.environ.get("OAM_TEST_BACKENDS", "sqlite,postgres"),
    reason="OAM_TEST_BACKENDS excludes postgres",
)

DIM = 16


def _store(url: str, **kwargs: Any) -> PostgresMemoryStore:
    return PostgresMemoryStore(
        HashingEmbedder(DIM), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, **kwargs
    )


def _unit(n: int, seed: int) -> list[np.ndarray]:
    m = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return list(m / np.linalg.norm(m, axis=1, keepdims=True))


def _together(n: int, job: Callable[[int], Any]) -> list[Any]:
    """Run ``job(0..n-1)`` on n threads released at once; their results or exceptions."""
    barrier = threading.Barrier(n)
    out: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = job(i)
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


def test_two_stores_adding_one_id_at_once_store_it_once(pg_url: Callable[[str], str]) -> None:
    url = pg_url("clash")
    stores = [_store(url), _store(url)]
    try:
        for round_ in range(5):
            got = _together(
                2,
                lambda i, r=round_: stores[i].add(
                    [f"from {i}"], record_type="memory", record_ids=f"same-{r}"
                ),
            )
            errors = [g for g in got if isinstance(g, Exception)]
            assert len(errors) == 1, got
            assert isinstance(errors[0], ValueError)
            assert f"same-{round_}" in str(errors[0]) and "already exists" in str(errors[0])
        assert len(stores[0].list("memory")) == 5
    finally:
        for s in stores:
            s.close()


def test_first_writes_of_two_users_into_one_thread_give_it_one_owner(
    pg_url: Callable[[str], str],
) -> None:
    url = pg_url("claims")
    stores = [_store(url), _store(url)]
    try:
        for round_ in range(5):
            tid = f"thread-{round_}"
            got = _together(
                2,
                lambda i, t=tid: stores[i].add(
                    [f"hello from {i}"],
                    record_type="message",
                    thread_ids=t,
                    user_ids=f"user{i}",
                    roles="user",
                ),
            )
            refused = [g for g in got if isinstance(g, ThreadOwnershipError)]
            assert len(refused) == 1, got
            winner = 0 if not isinstance(got[0], Exception) else 1
            messages = stores[0].list_thread_messages(tid)
            assert [m.user_id for m in messages] == [f"user{winner}"]
            assert [m.seq_no for m in messages] == [1]
    finally:
        for s in stores:
            s.close()


def test_writers_of_one_thread_take_turns_and_others_do_not_wait(
    pg_url: Callable[[str], str],
) -> None:
    """16 threads over 4 stores: every message of the shared thread gets a distinct seq_no
    1..M in commit order, and each writer's own messages keep their order."""
    url = pg_url("turns")
    stores = [_store(url) for _ in range(4)]
    try:

        def job(i: int) -> list[str]:
            store = stores[i % 4]
            ids = []
            for j in range(15):
                rid = f"w{i}-{j}"
                if j % 3 == 0:
                    store.add([rid], record_type="memory", record_ids=rid, user_ids=f"u{i}")
                else:
                    store.add(
                        [rid], record_type="message", record_ids=rid, thread_ids="shared",
                        roles="user", user_ids="u-shared",
                    )  # fmt: skip
                    ids.append(rid)
            return ids

        got = _together(16, job)
        assert not [g for g in got if isinstance(g, Exception)], got
        messages = stores[0].list_thread_messages("shared")
        assert sorted(m.seq_no for m in messages) == list(range(1, len(messages) + 1))
        assert len(messages) == sum(len(g) for g in got)
        by_id = {m.id: m.seq_no for m in messages}
        for ids in got:  # one writer's messages: in the order it wrote them
            seqs = [by_id[rid] for rid in ids]
            assert seqs == sorted(seqs)
        assert len(stores[0].list("memory")) == 16 * 5
    finally:
        for s in stores:
            s.close()


def test_an_unscoped_search_finds_rows_the_index_has_not_taken_yet(
    pg_url: Callable[[str], str],
) -> None:
    store = _store(pg_url("lag"))
    d = store._dialect
    d.indexer.stop()  # the index lags as far as it can: nothing is moved into it
    try:
        vecs = _unit(300, 1)
        store.add(
            [f"r{i}" for i in range(300)],
            record_type="memory",
            record_ids=[f"r{i}" for i in range(300)],
            embeddings=vecs,
        )
        assert d.ann_backlog() == 300
        for i in (0, 150, 299):
            hits = store.search(None, 3, query_vector=vecs[i].tolist())
            assert hits[0][0].id == f"r{i}"
        d.ann_catch_up()
        assert d.ann_backlog() == 0
        rows = d.execute(f"SELECT COUNT(*) FROM {d.tables.ann}")
        assert int(rows[0][0]) == 300
        for i in (0, 150, 299):  # now through the graph
            assert store.search(None, 3, query_vector=vecs[i].tolist())[0][0].id == f"r{i}"
        # Deleting a record takes its vector out of the graph in the same transaction.
        store.delete("memory", "r150")
        assert int(d.execute(f"SELECT COUNT(*) FROM {d.tables.ann}")[0][0]) == 299
        assert store.search(None, 1, query_vector=vecs[150].tolist())[0][0].id != "r150"
        # A record whose text changes gets new chunks: queued again, and found.
        store.update("memory", "r0", content="a new text")
        assert d.ann_backlog() == 1
        assert store.search("a new text", 1)[0][0].id == "r0"
    finally:
        store.close()


def test_the_indexer_catches_up_behind_the_writes(pg_url: Callable[[str], str]) -> None:
    from oracleagentmemory.core.store.engines.postgres import _postgres_ann

    store = _store(pg_url("behind"))
    d = store._dialect
    try:
        vecs = _unit(_postgres_ann.WAKE_ROWS + 10, 2)
        store.add([f"r{i}" for i in range(len(vecs))], record_type="memory", embeddings=vecs)
        deadline = threading.Event()
        for _ in range(100):  # woken by the write; at most a few seconds here
            if d.ann_backlog() == 0:
                break
            deadline.wait(0.1)
        assert d.ann_backlog() == 0
        assert d.indexer.errors == 0
    finally:
        store.close()


def test_a_large_queue_is_indexed_by_one_graph_build(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oracleagentmemory.core.store.engines.postgres import _postgres_ann

    monkeypatch.setattr(_postgres_ann, "BULK_ROWS", 200)
    store = _store(pg_url("bulk"))
    d = store._dialect
    d.indexer.stop()
    try:
        vecs = _unit(500, 3)
        store.add([f"r{i}" for i in range(500)], record_type="memory", embeddings=vecs)
        d.ann_catch_up()
        assert d.ann_backlog() == 0
        index = d.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE '%_ann_hnsw'")
        assert index
        hits = store.search(None, 1, query_vector=vecs[42].tolist())
        assert hits[0][1] == pytest.approx(0.0, abs=1e-5)
    finally:
        store.close()


def test_a_load_drained_while_a_batch_runs_still_builds_one_graph(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catch-up after a load waits for a running indexer batch (another process's, here
    a held lock) instead of falling back to batches of 1,000 graph inserts."""
    from oracleagentmemory.core.store.engines.postgres import _postgres_ann

    monkeypatch.setattr(_postgres_ann, "BULK_ROWS", 200)
    url = pg_url("bulk-wait")
    store = _store(url)
    d = store._dialect
    d.indexer.stop()
    batches: list[int] = []
    run_batch = d._ann_batch

    def counted(*args: Any, **kwargs: Any) -> int:
        batches.append(1)
        return run_batch(*args, **kwargs)

    monkeypatch.setattr(d.indexer, "_run_batch", counted)
    try:
        store.add([f"r{i}" for i in range(500)], record_type="memory", embeddings=_unit(500, 4))
        with psycopg.connect(url) as other:  # another indexer's batch holds the lock
            other.execute("SELECT pg_advisory_xact_lock(%s)", [d._ann_key])
            released = threading.Timer(0.5, other.rollback)
            released.start()
            d.ann_catch_up()
            released.join()
        assert d.ann_backlog() == 0 and batches == []
        assert d.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE '%_ann_hnsw'")
    finally:
        store.close()


def test_reembedding_requeues_every_vector(pg_url: Callable[[str], str]) -> None:
    store = _store(pg_url("reembed"))
    d = store._dialect
    d.indexer.stop()
    try:
        store.add([f"text number {i}" for i in range(50)], record_type="memory")
        d.ann_catch_up()
        assert d.ann_backlog() == 0
        store.reembed(HashingEmbedder(DIM + 8))
        assert d.ann_backlog() == 50
        assert int(d.execute(f"SELECT COUNT(*) FROM {d.tables.ann}")[0][0]) == 0
        d.ann_catch_up()
        hits = store.search("text number 7", 3)  # the new vectors, through the graph
        assert "text number 7" in [r.content for r, _ in hits]
        assert hits[0][1] == pytest.approx(0.0, abs=1e-5)
    finally:
        store.close()


def test_a_version_7_store_upgrades_to_sequences_and_the_side_index(
    pg_url: Callable[[str], str],
) -> None:
    url = pg_url("upgrade")
    store = _store(url)
    d = store._dialect
    t = d.tables
    store.add(["one", "two", "three"], record_type="memory", record_ids=["a", "b", "c"])
    store.close()
    # Back to what version 7 had: no sequences, no side tables, HNSW on the chunks.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {t.ann_queue}, {t.ann}")
        conn.execute(f"DROP SEQUENCE {d.rid_seq}, {d.cid_seq}")
        conn.execute(
            f"CREATE INDEX oam_chunks_hnsw ON {t.chunks} USING hnsw (vector vector_cosine_ops)"
        )
        conn.execute(f"UPDATE {t.meta} SET value = '7' WHERE key = 'schema_version'")
    store = _store(url)
    d = store._dialect
    d.indexer.stop()
    try:
        version = d.execute(f"SELECT value FROM {t.meta} WHERE key = 'schema_version'")
        assert version == [(str(SCHEMA_VERSION),)]
        assert not d.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'oam_chunks_hnsw'")
        d.ann_catch_up()  # the migration queued the three (and opening started on them)
        assert d.ann_backlog() == 0
        assert int(d.execute(f"SELECT COUNT(*) FROM {t.ann}")[0][0]) == 3
        store.add(["four"], record_type="memory", record_ids="d")
        rids = [r[0] for r in d.execute(f"SELECT rid FROM {t.records} ORDER BY rid")]
        assert len(set(rids)) == 4 and rids[-1] > max(rids[:-1])
        d.ann_catch_up()
        assert store.search("four", 1)[0][0].id == "d"
    finally:
        store.close()


def test_writes_work_without_pipeline_mode(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A libpq older than 14 has no pipeline mode: every statement is then its own round
    trip, with the same results."""
    from oracleagentmemory.core.store.engines.postgres import _postgres

    monkeypatch.setattr(_postgres, "_PIPELINE", False)
    store = _store(pg_url("nopipe"))
    try:
        store.add(["one", "two"], record_type="memory", record_ids=["a", "b"])
        store.add(["hi"], record_type="message", thread_ids="t", roles="user")
        with pytest.raises(ValueError, match="'a' already exists"):
            store.add(["again"], record_type="memory", record_ids="a")
        assert store.search("two", 1)[0][0].id == "b"
        assert [m.seq_no for m in store.list_thread_messages("t")] == [1]
    finally:
        store.close()


def test_a_store_opened_on_a_queue_indexes_it(pg_url: Callable[[str], str]) -> None:
    """Chunks another store left unindexed (it closed, or crashed) are taken up by the next
    store that opens, without waiting for writes of its own."""
    url = pg_url("leftover")
    first = _store(url)
    first._dialect.indexer.stop()
    first.add([f"r{i}" for i in range(40)], record_type="memory", embeddings=_unit(40, 4))
    first.close()
    second = _store(url)
    try:
        d = second._dialect
        for _ in range(100):
            if d.ann_backlog() == 0:
                break
            threading.Event().wait(0.1)
        assert d.ann_backlog() == 0
        assert int(d.execute(f"SELECT COUNT(*) FROM {d.tables.ann}")[0][0]) == 40
    finally:
        second.close()

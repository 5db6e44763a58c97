"""PostgreSQL: a plain insert is ONE statement (``_postgres_insert``), writing exactly what
the pipelined transaction writes; and the approximate index's indexer yields to writes that
keep coming (``_postgres_ann``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.engines.postgres import _postgres_ann as ann
from oracleagentmemory.core.store.engines.postgres._postgres import PostgresDialect

from ._embedders import HashingEmbedder
from ._pg_helpers import needs_postgres

DIM = 16


def _store(url: str, strategy: str = "HYBRID") -> PostgresMemoryStore:
    return PostgresMemoryStore(
        HashingEmbedder(DIM),
        url,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy[strategy],
    )


@contextmanager
def _statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement any connection of this process sends meanwhile, and BEGIN/COMMIT of
    psycopg's transaction blocks; not the approximate index's own thread (it analyzes and
    drains in the background, whenever its clock says: not a write's statements)."""
    sent: list[str] = []
    execute = psycopg.Connection.execute
    transaction = psycopg.Connection.transaction

    def mine() -> bool:
        return threading.current_thread().name != "oam-ann-indexer"

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if mine():
            sent.append(str(query))
        return execute(self, query, *args, **kwargs)

    @contextmanager
    def block(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if mine():
            sent.append("BEGIN")
        with transaction(self, *args, **kwargs) as tx:
            yield tx

    with monkeypatch.context() as m:
        m.setattr(psycopg.Connection, "execute", counted)
        m.setattr(psycopg.Connection, "transaction", block)
        yield sent


def _rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """What the store's tables hold, by record id (no rid or cid: those differ by path)."""
    with psycopg.connect(url) as conn:
        return {
            "records": conn.execute(
                "SELECT family, record_type, id, content, role, seq_no, thread_id, user_id,"
                " agent_id, event_ts, metadata, status, expires_at IS NULL, extra, ttl_days"
                " FROM oam_records ORDER BY id"
            ).fetchall(),
            "chunks": conn.execute(
                "SELECT r.id, c.chunk_index, c.chunk_text, c.vector::text, c.user_id,"
                " c.record_type FROM oam_chunks c JOIN oam_records r ON r.rid = c.rid"
                " ORDER BY r.id, c.chunk_index"
            ).fetchall(),
            "kw": conn.execute(
                "SELECT r.id, c.chunk_index, k.user_id, k.tsv::text, k.tsv_len FROM oam_kw k"
                " JOIN oam_chunks c ON c.cid = k.cid JOIN oam_records r ON r.rid = k.rid"
                " ORDER BY r.id, c.chunk_index"
            ).fetchall(),
            "queued": conn.execute(
                "SELECT r.id, c.chunk_index FROM oam_ann_queue q JOIN oam_chunks c"
                " ON c.cid = q.cid JOIN oam_records r ON r.rid = c.rid ORDER BY 1, 2"
            ).fetchall(),
            "logged": conn.execute(
                "SELECT array_agg(r.id ORDER BY r.id) FROM oam_changes l,"
                " unnest(l.rids) AS x(rid) JOIN oam_records r ON r.rid = x.rid GROUP BY l.xid"
                " ORDER BY 1"
            ).fetchall(),
        }


def _write_everything(store: PostgresMemoryStore) -> None:
    store.add(
        ["Alice drinks green tea every morning."],
        record_type="memory",
        record_ids="m1",
        user_ids="alice",
        agent_ids="bot",
        metadata={"k": [1, 2]},
    )
    store.add(
        ["a fact", "another with a retention"],
        record_type="fact",
        record_ids=["f1", "f2"],
        user_ids="bob",
        ttl_days=[None, 3],
    )
    store.add(
        [" ".join(f"word{i}" for i in range(600))],
        record_type="memory",
        record_ids="long",
        user_ids="carol",
    )  # cut into several chunks
    store.add(
        ["caller chunks"],
        record_type="memory",
        record_ids="cc",
        index_texts=[["first part", "second part"]],
    )
    store.add(["no vector"], record_type="guideline", record_ids="g1", embeddings=[None])


@needs_postgres
@pytest.mark.parametrize("strategy", ["HYBRID", "VECTOR"])
def test_a_plain_add_is_one_statement_outside_a_transaction_block(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    store = _store(pg_url("one"), strategy)
    try:
        store.add(["warm up"], record_type="memory", user_ids="u")
        with _statements(monkeypatch) as sent:
            store.add(["one write"], record_type="memory", user_ids="u")
        assert len(sent) == 1, sent
        assert sent[0].startswith("WITH lk AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared")
        assert [r.content for r in store.list("memory", user_id="u")] == ["warm up", "one write"]
    finally:
        store.close()


@needs_postgres
def test_one_statement_writes_what_the_transaction_writes(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, steps = _store(pg_url("fast")), _store(pg_url("steps"))
    try:
        _write_everything(fast)
        with monkeypatch.context() as m:
            m.setattr(PostgresDialect, "insert_at_once", lambda *a, **k: None)
            with _statements(monkeypatch) as sent:
                _write_everything(steps)
            assert "BEGIN" in sent  # the other path did run
        a, b = _rows(pg_url("fast")), _rows(pg_url("steps"))
        assert a["records"] == b["records"] and len(a["records"]) == 6
        assert a["chunks"] == b["chunks"] and len(a["chunks"]) > 6
        assert a["kw"] == b["kw"] and a["kw"]
        assert a["queued"] == b["queued"] and a["queued"]
        assert a["logged"] == b["logged"] and len(a["logged"]) == 5
    finally:
        fast.close()
        steps.close()


@needs_postgres
def test_a_clash_writes_nothing_and_names_the_id(pg_url: Callable[[str], str]) -> None:
    store = _store(pg_url("clash"))
    try:
        store.add(["first"], record_type="memory", record_ids="taken")
        with pytest.raises(ValueError, match="record_ids: 'taken' already exists"):
            store.add(["a", "b", "c"], record_type="memory", record_ids=["n1", "n2", "taken"])
        assert [r.id for r in store.list("memory")] == ["taken"]
        rows = _rows(pg_url("clash"))
        assert len(rows["chunks"]) == 1 and len(rows["logged"]) == 1
    finally:
        store.close()


@needs_postgres
def test_rids_follow_the_order_of_the_write(pg_url: Callable[[str], str]) -> None:
    store = _store(pg_url("order"))
    try:
        ids = [f"r{i:02d}" for i in range(40)][::-1]
        store.add([f"text {i}" for i in ids], record_type="memory", record_ids=ids)
        with psycopg.connect(pg_url("order")) as conn:
            got = [r[0] for r in conn.execute("SELECT id FROM oam_records ORDER BY rid")]
        assert got == ids
    finally:
        store.close()


@needs_postgres
def test_concurrent_plain_adds_all_land_once(pg_url: Callable[[str], str]) -> None:
    """Four stores x four threads of single adds (merged into groups per process): every
    write lands once, each with its chunk, queue row and change-log entry."""
    url = pg_url("many")
    stores = [_store(url) for _ in range(4)]
    errors: list[BaseException] = []

    def writer(s: PostgresMemoryStore, tag: str) -> None:
        try:
            for i in range(30):
                s.add(
                    [f"{tag} {i}"],
                    record_type="memory",
                    record_ids=f"{tag}-{i}",
                    user_ids=f"u{i % 3}",
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(s, f"s{n}t{t}"))
        for n, s in enumerate(stores)
        for t in range(4)
    ]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        rows = _rows(url)
        assert len(rows["records"]) == len({r[2] for r in rows["records"]}) == 480
        assert len(rows["chunks"]) == 480
        logged = [i for group in rows["logged"] for i in group[0]]
        assert sorted(logged) == sorted(r[2] for r in rows["records"])
    finally:
        for s in stores:
            s.close()


# ---------------------------------------------------------------- the indexer's yielding


class _Queue:
    """A queue of ``n`` chunks whose batches take ``per_row`` seconds a row."""

    def __init__(self, n: int, per_row: float = 0.0) -> None:
        self.n = n
        self.per_row = per_row
        self.batches: list[tuple[float, int]] = []

    def batch(self, limit: int, wait: bool = False) -> int:
        moved = min(limit, self.n)
        time.sleep(moved * self.per_row)
        self.n -= moved
        self.batches.append((time.monotonic(), limit))
        return moved

    def backlog(self) -> int:
        return self.n


def _run(queue: _Queue, writing: bool) -> None:
    indexer = ann.Indexer(queue.batch, lambda: False, queue.backlog)
    if writing:
        indexer._last_write = time.monotonic()
    indexer._work()


def test_the_indexer_yields_while_writes_keep_coming(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "YIELD_ROWS", 10)
    queue = _Queue(35, per_row=0.002)  # a batch takes 20 ms, then 60 ms of waiting
    _run(queue, writing=True)
    assert [limit for _, limit in queue.batches] == [10, 10, 10, 10]
    gaps = [b[0] - a[0] for a, b in zip(queue.batches, queue.batches[1:], strict=False)]
    assert min(gaps) >= 0.07  # its own 20 ms, then three times that


def test_the_indexer_runs_at_full_speed_past_the_lag_or_without_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ann, "YIELD_ROWS", 10)
    monkeypatch.setattr(ann, "LAG_ROWS", 30)
    behind = _Queue(60, per_row=0.002)
    started = time.monotonic()
    _run(behind, writing=True)
    # Small batches while writes come, but no waiting until the queue is shorter than the lag.
    assert [limit for _, limit in behind.batches] == [10] * 7
    assert behind.batches[3][0] - started < 0.15
    quiet = _Queue(2500)
    _run(quiet, writing=False)
    assert [limit for _, limit in quiet.batches] == [ann.BATCH_ROWS] * 3

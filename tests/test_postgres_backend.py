"""PostgreSQL-only behaviour: pools, raw connections, schema owners, parity with SQLite, and a
multi-process soak through a connection pool."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import psycopg_pool
import pytest

from oracleagentmemory.core import (
    OracleAgentMemory,
    PostgresMemoryStore,
    SchemaPolicy,
    SQLiteMemoryStore,
)

from ._embedders import HashingEmbedder

pytestmark = pytest.mark.skipif(
    "postgres" not in os.environ.get("OAM_TEST_BACKENDS", "sqlite,postgres"),
    reason="OAM_TEST_BACKENDS excludes postgres",
)

SOAK_SECONDS = float(os.environ.get("OAM_SOAK_SECONDS", "30"))


def _user_url(url: str, user: str) -> str:
    return url.replace("postgresql://postgres:@", f"postgresql://{user}:@", 1)


def test_pool_and_raw_connection(pg_url: Callable[[str], str]) -> None:
    url = pg_url("db")
    with psycopg_pool.ConnectionPool(url, min_size=1, max_size=4, open=True) as pool:
        store = PostgresMemoryStore(HashingEmbedder(), pool, schema_policy="create_if_necessary")
        store.add(["pooled pizza"], record_type="memory", record_ids="p")
        store.close()  # the caller's pool stays open
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    raw = psycopg.connect(url)
    store = PostgresMemoryStore(HashingEmbedder(), raw)  # REQUIRE_EXISTING: schema exists
    assert [r.id for r, _ in store.search("pizza", 1)] == ["p"]
    store.close()
    assert not raw.closed  # a caller's connection is not closed by the store
    raw.close()


def test_client_accepts_url_pool_and_connection(pg_url: Callable[[str], str]) -> None:
    url = pg_url("db")
    with pytest.raises(Exception, match="CREATE_IF_NECESSARY"):
        OracleAgentMemory(connection=url, embedder=HashingEmbedder())  # server: REQUIRE_EXISTING
    with OracleAgentMemory(
        connection=url, embedder=HashingEmbedder(), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    ) as client:
        thread = client.create_thread(thread_id="t", user_id="u")
        thread.add_messages([{"role": "user", "content": "hello from a URL"}])
    with (
        psycopg_pool.ConnectionPool(url, open=True) as pool,
        OracleAgentMemory(connection=pool, embedder=HashingEmbedder()) as client,
    ):
        assert [m.content for m in client.get_thread("t").get_messages()] == ["hello from a URL"]
    with (
        psycopg.connect(url) as raw,
        OracleAgentMemory(connection=raw, embedder=HashingEmbedder()) as client,
    ):
        assert client.list_threads(user_id="u")[0].thread_id == "t"


def test_failing_batch_leaves_no_row(pg_url: Callable[[str], str]) -> None:
    store = PostgresMemoryStore(
        HashingEmbedder(), pg_url("db"), schema_policy="create_if_necessary"
    )
    store.add(["existing"], record_type="memory", record_ids="dup")
    with pytest.raises(ValueError, match="dup"):
        store.add(["a", "b", "c"], record_type="memory", record_ids=["x", "y", "dup"])
    assert [r.id for r in store.list("memory")] == ["dup"]
    rows = store._dialect.execute(f"SELECT count(*) FROM {store._dialect.tables.chunks}")
    assert rows == [(1,)]
    store.close()


def test_schema_owner_gives_an_application_role_read_write_access(
    pg_server: Any, pg_url: Callable[[str], str]
) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner, app, schema = f"mem_owner_{suffix}", f"mem_app_{suffix}", f"mem_{suffix}"
    pg_server.psql(
        f"CREATE ROLE {owner} LOGIN; CREATE ROLE {app} LOGIN;"
        f" CREATE SCHEMA {schema} AUTHORIZATION {owner};"
    )
    base = pg_url("db")
    owner_store = PostgresMemoryStore(
        HashingEmbedder(),
        _user_url(base, owner),
        schema_owner=schema,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )
    owner_store.add(["owned pizza note"], record_type="memory", record_ids="m1", user_ids="u")
    owner_store.grant_access(app)
    owner_store.close()

    app_store = PostgresMemoryStore(HashingEmbedder(), _user_url(base, app), schema_owner=schema)
    assert app_store.get("memory", "m1") is not None
    app_store.add(["app pizza note"], record_type="memory", record_ids="m2", user_ids="u")
    found = app_store.search("pizza", 5, user_id="u", exact_user_match=True)
    assert {r.id for r, _ in found} == {"m1", "m2"}
    assert app_store.delete("memory", "m1") == 1
    app_store.close()
    with pytest.raises(PermissionError, match="must be owner"):
        PostgresMemoryStore(
            HashingEmbedder(),
            _user_url(base, app),
            schema_owner=schema,
            schema_policy=SchemaPolicy.RECREATE,
        )


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(12, dim))
    vecs = centers[rng.integers(0, 12, size=n)] + 0.35 * rng.normal(size=(n, dim))
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


def test_vector_results_match_sqlite(pg_url: Callable[[str], str], tmp_path: Path) -> None:
    """Same data, same queries: the same top-k ids (and distances) on both engines.

    Scoped queries are exact on both. Unscoped ones may use PostgreSQL's HNSW index, whose
    recall is documented as >= 0.95 at these settings; at this size it returns the exact set.
    """
    n, dim = 600, 32
    vecs = _clustered(n, dim, seed=7)
    ids = [f"m{i}" for i in range(n)]
    users = [f"u{i % 6}" for i in range(n)]
    stores = [
        SQLiteMemoryStore(
            None, str(tmp_path / "p.db"), vector_dim=dim, schema_policy="create_if_necessary"
        ),
        PostgresMemoryStore(
            None, pg_url("db"), vector_dim=dim, schema_policy="create_if_necessary"
        ),
    ]
    for store in stores:
        store.add(
            [f"note {i}" for i in range(n)],
            record_type="memory",
            record_ids=ids,
            user_ids=users,
            embeddings=list(vecs),
        )
    queries = _clustered(20, dim, seed=99)
    overlap = []
    for q in queries:
        scoped = [
            s.search(None, 10, query_vector=q.tolist(), user_id="u3", exact_user_match=True)
            for s in stores
        ]
        assert [r.id for r, _ in scoped[0]] == [r.id for r, _ in scoped[1]]
        np.testing.assert_allclose([d for _, d in scoped[0]], [d for _, d in scoped[1]], atol=1e-5)
        broad = [s.search(None, 10, query_vector=q.tolist()) for s in stores]
        exact = {r.id for r, _ in broad[0]}
        overlap.append(len(exact & {r.id for r, _ in broad[1]}) / 10)
    assert float(np.mean(overlap)) >= 0.95
    for store in stores:
        store.close()


_TEXT = (
    "alpha beta gamma delta coffee tea running runner runs ran jumps jumping river rivers"
    " mountain walk walking walked notes meeting meetings budget plan planning Zürich café"
)
_WORDS = _TEXT.split()


def test_keyword_and_hybrid_results_match_sqlite(
    pg_url: Callable[[str], str], tmp_path: Path
) -> None:
    """The same BM25, with the same statistics, on both engines: the same ids, in the same
    order, at the same distances, for KEYWORD and HYBRID searches, scoped or not, after
    deletes and updates too (the statistics move with them)."""
    from oracleagentmemory.core.dbsearch import SearchStrategy

    rng = np.random.default_rng(5)
    n, dim = 400, 24
    texts = [
        " ".join(rng.choice(_WORDS, size=int(rng.integers(2, 12)))) + f" item{i % 37}"
        for i in range(n)
    ]
    texts[7] = "running running running, ran and runs!"
    vecs = _clustered(n, dim, seed=3)
    stores = [
        SQLiteMemoryStore(
            HashingEmbedder(dim), str(tmp_path / "k.db"), schema_policy="create_if_necessary",
            search_strategy=SearchStrategy.HYBRID,
        ),
        PostgresMemoryStore(
            HashingEmbedder(dim), pg_url("kw"), schema_policy="create_if_necessary",
            search_strategy=SearchStrategy.HYBRID,
        ),
    ]  # fmt: skip
    for store in stores:
        store.add(
            texts,
            record_type="memory",
            record_ids=[f"m{i}" for i in range(n)],
            user_ids=[None if i % 10 == 0 else f"u{i % 4}" for i in range(n)],
            embeddings=list(vecs),
        )
        store.delete("memory", "m11")
        store.update("memory", "m12", content="coffee coffee mountain river item5")

    def same(**kwargs: Any) -> None:
        got = [s.search(**kwargs) for s in stores]
        assert [r.id for r, _ in got[0]] == [r.id for r, _ in got[1]], kwargs
        np.testing.assert_allclose(
            [d for _, d in got[0]], [d for _, d in got[1]], atol=1e-6, err_msg=str(kwargs)
        )

    keyword = [
        SQLiteMemoryStore(
            HashingEmbedder(dim), str(tmp_path / "k.db"), search_strategy=SearchStrategy.KEYWORD
        ),
        PostgresMemoryStore(
            HashingEmbedder(dim), pg_url("kw"), search_strategy=SearchStrategy.KEYWORD
        ),
    ]
    queries = ["coffee running", "rivers mountain walk", "café Zürich", "item5 budget", "runs"]
    for q in queries:
        for scope in ({}, {"user_id": "u1", "exact_user_match": True}, {"user_id": None}):
            same(query=q, k=10, **scope)
            got = [s.search(q, 10, **scope) for s in keyword]
            assert [r.id for r, _ in got[0]] == [r.id for r, _ in got[1]], (q, scope)
            np.testing.assert_allclose([d for _, d in got[0]], [d for _, d in got[1]], atol=1e-6)
    # Stemmed as SQLite stems: "running" and "runs" are "run" (m7 holds four of them).
    assert "m7" in [r.id for r, _ in keyword[1].search("run", 5)]
    for store in [*stores, *keyword]:
        store.close()


def _soak_worker(url: str, seconds: float, worker: int, out: Any) -> None:
    from oracleagentmemory.core import OracleAgentMemory, PostgresMemoryStore
    from tests._embedders import HashingEmbedder

    written: list[tuple[str, str]] = []
    errors: list[str] = []
    lock = threading.Lock()
    with psycopg_pool.ConnectionPool(url, min_size=2, max_size=8, open=True) as pool:
        store = PostgresMemoryStore(HashingEmbedder(), pool)
        client = OracleAgentMemory(store=store)
        deadline = time.monotonic() + seconds

        def loop(n: int) -> None:
            thread = client.get_thread(f"shared{n % 3}")
            i = 0
            while time.monotonic() < deadline:
                try:
                    mid = f"w{worker}-{n}-{i}"
                    thread.add_messages(
                        [{"role": "user", "content": f"note {i} from {mid}", "id": mid}]
                    )
                    with lock:
                        written.append((thread.thread_id, mid))
                    thread.search(f"note {i}", max_results=3)
                    i += 1
                except Exception as exc:  # reported to the parent, which fails the test
                    with lock:
                        errors.append(repr(exc))
                    return

        threads = [threading.Thread(target=loop, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client.close()
        store.close()
    out.put((written, errors))


def test_soak_two_processes_eight_threads_through_a_pool(pg_url: Callable[[str], str]) -> None:
    url = pg_url("db")
    with OracleAgentMemory(
        connection=url, embedder=HashingEmbedder(), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    ) as client:
        for n in range(3):
            client.create_thread(thread_id=f"shared{n}", user_id="u", agent_id="a")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_soak_worker, args=(url, SOAK_SECONDS, w, out)) for w in range(2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=SOAK_SECONDS + 120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    errors = [e for _, errs in results for e in errs]
    assert errors == []
    written = [w for ws, _ in results for w in ws]
    assert len(written) > 100  # the soak really ran
    store = PostgresMemoryStore(HashingEmbedder(), url)
    total = 0
    for n in range(3):
        messages = store.list_thread_messages(f"shared{n}")
        seq = [m.seq_no for m in messages]
        assert seq == list(range(1, len(seq) + 1))  # unique, increasing, no gap
        expected = {mid for tid, mid in written if tid == f"shared{n}"}
        assert {m.id for m in messages} == expected  # no lost write
        total += len(messages)
    assert total == len(written)
    store.close()

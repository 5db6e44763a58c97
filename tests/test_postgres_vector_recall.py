"""PostgreSQL + pgvector: a scoped or filtered vector query keeps its recall. pgvector's HNSW
index filters after its search, so a selective scope would lose results; the store ranks
scoped queries and small filtered candidate sets exactly, and turns exact when the index
cannot supply k records."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy
from oracleagentmemory.core.store.search import _vector_branch

from ._embedders import HashingEmbedder

pytestmark = pytest.mark.skipif(
    "postgres" not in os.environ.get("OAM_TEST_BACKENDS", "sqlite,postgres"),
    reason="OAM_TEST_BACKENDS excludes postgres",
)

DIM = 32
N = 3000
USERS = 30


def _vectors(n: int, seed: int) -> np.ndarray:
    centers = np.random.default_rng(0).standard_normal((16, DIM))
    rng = np.random.default_rng(seed)
    x = centers[rng.integers(0, 16, n)] + 0.4 * rng.standard_normal((n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def seeded(pg_server: Any) -> tuple[PostgresMemoryStore, np.ndarray]:
    server = pg_server
    server.psql("CREATE SCHEMA IF NOT EXISTS vecrecall;")
    url = f"{server.get_uri()}&options=-csearch_path%3Dvecrecall%2Cpublic"
    store = PostgresMemoryStore(
        HashingEmbedder(DIM), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    vecs = _vectors(N, 1)
    store.add(
        [f"record {i}" for i in range(N)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(N)],
        user_ids=[f"u{i % USERS}" for i in range(N)],
        metadata=[{"even": i % 2 == 0} for i in range(N)],
        embeddings=list(vecs),
    )
    store._dialect.ann_catch_up()  # every vector in the graph
    store._dialect.execute("ANALYZE")
    yield store, vecs
    store.close()


def _recall(store: PostgresMemoryStore, vecs: np.ndarray, keep: np.ndarray, **kwargs: Any) -> float:
    out = []
    for q in _vectors(25, 9):
        hits = store.search(None, 10, query_vector=q.tolist(), **kwargs)
        got = {int(r.id[1:]) for r, _ in hits}
        assert all(keep[i] for i in got)  # never a result outside the scope or filter
        sims = vecs @ q
        sims[~keep] = -np.inf
        truth = set(np.argsort(-sims)[:10].tolist())
        out.append(len(got & truth) / 10)
    return float(np.mean(out))


def _scoped(store: Any, vecs: np.ndarray) -> list[float]:
    users = np.arange(N) % USERS
    even = np.arange(N) % 2 == 0
    return [
        _recall(store, vecs, users == 3, user_id="u3", exact_user_match=True),
        _recall(
            store,
            vecs,
            even & (users == 4),
            user_id="u4",
            exact_user_match=True,
            metadata_filter={"even": True},
        ),
        _recall(store, vecs, even, metadata_filter={"even": True}),
        _recall(store, vecs, np.ones(N, dtype=bool)),
    ]


def _prefer_the_index(store: PostgresMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the planner use the HNSW index whenever the query allows it (as it does on large
    tables), with the store's own ef_search."""
    d = store._dialect
    original: Callable[..., Any] = type(d).execute_vector_query

    def through_index(sql: str, params: Any) -> Any:
        with d._conn() as conn, conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            return original(d, sql, params)

    monkeypatch.setattr(d, "execute_vector_query", through_index)


def test_scoped_and_filtered_queries_keep_recall(
    seeded: tuple[PostgresMemoryStore, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vecs = seeded
    assert min(_scoped(store, vecs)) >= 0.95
    _prefer_the_index(store, monkeypatch)
    recalls = _scoped(store, vecs)
    assert min(recalls) >= 0.95, recalls


def test_the_index_alone_loses_filtered_results(
    seeded: tuple[PostgresMemoryStore, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What widening and the exact fallback fix: a filter keeping 1/30 of the rows, through
    one round of the HNSW index alone, loses results; with them, none."""
    store, vecs = seeded
    users = np.arange(N) % USERS
    d = store._dialect
    d.execute(
        f"UPDATE {d.tables.records} SET metadata = jsonb_set(metadata::jsonb, '{{u3}}', 'true')"
        " WHERE user_id = 'u3'"
    )
    try:
        _prefer_the_index(store, monkeypatch)
        assert _recall(store, vecs, users == 3, metadata_filter={"u3": True}) >= 0.95
        monkeypatch.setattr(_vector_branch, "NATIVE_ANN_FETCH_MAX", 40)  # one round
        monkeypatch.setattr(_vector_branch.VectorBranch, "_exact_sql", lambda *a: [])
        few = _recall(store, vecs, users == 3, metadata_filter={"u3": True})
        assert few < 0.95
    finally:
        d.execute(f"UPDATE {d.tables.records} SET metadata = metadata::jsonb - 'u3'")


@pytest.mark.parametrize("batches", [1, 2])
def test_a_graph_half_built_keeps_recall(pg_url: Callable[[str], str], batches: int) -> None:
    """Rows split between the graph and the queue of chunks not in it yet: a result from the
    queue farther than the farthest graph row read is not final (a graph row not read may be
    nearer), so a selective filter still finds the true nearest rows."""
    store = PostgresMemoryStore(
        HashingEmbedder(DIM), pg_url("half"), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    d = store._dialect
    d.indexer.stop()
    try:
        vecs = _vectors(N, 1)
        store.add(
            [f"record {i}" for i in range(N)],
            record_type="memory",
            record_ids=[f"m{i}" for i in range(N)],
            user_ids=[f"u{i % USERS}" for i in range(N)],
            metadata=[{"rare": i % USERS == 3} for i in range(N)],
            embeddings=list(vecs),
        )
        for _ in range(batches):
            d._ann_batch(1000)
        assert d.ann_backlog() == N - 1000 * batches
        users = np.arange(N) % USERS
        assert _recall(store, vecs, users == 3, metadata_filter={"rare": True}) >= 0.95
        assert _recall(store, vecs, np.ones(N, dtype=bool)) >= 0.95
    finally:
        store.close()


def test_graph_breadth_grows_with_the_graph(
    seeded: tuple[PostgresMemoryStore, np.ndarray],
) -> None:
    """``hnsw.ef_search``: the floor on a graph of up to 100,000 rows, the 1M breadth from
    1,000,000 rows, log-interpolated between, and never under the rows a search asks for
    (the graph's size as the planner's estimate says, here set by hand)."""
    from oracleagentmemory.core.store.engines.postgres import _postgres_ann

    store, _ = seeded
    d = store._dialect
    lo, hi = _postgres_ann.MIN_EF, _postgres_ann.EF_1M

    def ef(rows: float, limit: int) -> int:
        with d._conn() as conn, conn.transaction(force_rollback=True):  # the estimate stays
            conn.execute(
                "UPDATE pg_class SET reltuples = %s WHERE oid = to_regclass(%s)",
                [rows, d.tables.ann],
            )
            sql, params = d.ef_search_sql(limit)
            value = conn.execute(sql, params).fetchone()[0]
            assert conn.execute("SHOW hnsw.ef_search").fetchone()[0] == value
        return int(value)

    assert ef(-1, 20) == ef(N, 20) == ef(100_000, 20) == lo
    assert ef(1_000_000, 20) == ef(50_000_000, 20) == hi
    assert lo < ef(316_228, 20) == round(lo + (hi - lo) * 0.5) < hi
    assert ef(N, 500) == 500 and ef(1_000_000, 5000) == 1000

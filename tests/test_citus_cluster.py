"""The Citus cluster the distributed store will run on (issue #50): a coordinator and two
workers, tables distributed by ``user_id`` with shards on both workers, reference tables on
every node, pgvector on distributed tables, and single-shard router plans for one user."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from tools.citus_cluster import CitusCluster

pytestmark = pytest.mark.slow

Conn = psycopg.Connection[Any]


@pytest.fixture
def coordinator(citus_cluster: CitusCluster) -> Iterator[Conn]:
    """An autocommit connection to the coordinator, in a schema of its own for this test."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(citus_cluster.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path = {schema}, public")
        yield conn
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_two_active_workers(citus_cluster: CitusCluster) -> None:
    with psycopg.connect(citus_cluster.dsn) as conn:
        rows = conn.execute(
            "SELECT node_name, node_port FROM citus_get_active_worker_nodes() ORDER BY node_port"
        ).fetchall()
        extensions = conn.execute(
            "SELECT extname FROM pg_extension WHERE extname IN ('citus', 'vector') ORDER BY 1"
        ).fetchall()
    assert rows == sorted(("127.0.0.1", w.port) for w in citus_cluster.workers)
    assert extensions == [("citus",), ("vector",)]
    for dsn in citus_cluster.worker_dsns:
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT count(*) FROM pg_extension WHERE extname IN ('citus', 'vector')"
            ).fetchone() == (2,)


def test_distributed_table_has_shards_on_both_workers(
    citus_cluster: CitusCluster, coordinator: Conn
) -> None:
    coordinator.execute(
        "CREATE TABLE t (user_id text NOT NULL, id bigint NOT NULL, body text,"
        " PRIMARY KEY (user_id, id))"
    )
    coordinator.execute("SELECT create_distributed_table('t', 'user_id')")
    with coordinator.cursor() as cur:
        cur.executemany(
            "INSERT INTO t VALUES (%s, %s, %s)",
            [(f"user-{i % 50}", i, f"body {i}") for i in range(500)],
        )
    ports = {
        row[0]
        for row in coordinator.execute(
            "SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = 't'::regclass"
        )
    }
    assert ports == {w.port for w in citus_cluster.workers}
    per_node = coordinator.execute(
        "SELECT nodeport, count(*) FROM citus_shards WHERE table_name = 't'::regclass"
        " GROUP BY nodeport"
    ).fetchall()
    assert all(count > 0 for _, count in per_node)
    assert coordinator.execute("SELECT count(*), count(DISTINCT user_id) FROM t").fetchone() == (
        500,
        50,
    )


def test_reference_table_is_on_every_node(citus_cluster: CitusCluster, coordinator: Conn) -> None:
    coordinator.execute("CREATE TABLE registry (key text PRIMARY KEY, value text)")
    coordinator.execute("SELECT create_reference_table('registry')")
    coordinator.execute("INSERT INTO registry VALUES ('schema_version', '1'), ('model', 'm')")
    shard = coordinator.execute(
        "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'registry'::regclass"
    ).fetchone()
    assert shard is not None
    placements = {
        row[0]
        for row in coordinator.execute(
            "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = %s", [shard[0]]
        )
    }
    nodes = citus_cluster.nodes
    assert placements == {node.port for node in nodes}
    schema = coordinator.execute("SELECT current_schema()").fetchone()
    assert schema is not None
    for node in nodes:  # the shard itself, read on each node without going through Citus
        with psycopg.connect(node.dsn(), autocommit=True) as conn:
            conn.execute("SET citus.override_table_visibility = off")
            rows = conn.execute(
                f"SELECT key, value FROM {schema[0]}.registry_{shard[0]} ORDER BY key"
            ).fetchall()
        assert rows == [("model", "m"), ("schema_version", "1")], node.port


def test_vector_search_on_distributed_table(
    coordinator: Conn,
) -> None:
    coordinator.execute(
        "CREATE TABLE docs (user_id text NOT NULL, id bigint NOT NULL,"
        " embedding vector(3) NOT NULL, PRIMARY KEY (user_id, id))"
    )
    coordinator.execute("SELECT create_distributed_table('docs', 'user_id')")
    rows = [
        (f"user-{u}", u * 10 + k, f"[{1 + u}, {k}, {u * k % 3}]")
        for u in range(8)
        for k in range(5)
    ]
    with coordinator.cursor() as cur:
        cur.executemany("INSERT INTO docs VALUES (%s, %s, %s)", rows)
    coordinator.execute("CREATE INDEX docs_hnsw ON docs USING hnsw (embedding vector_cosine_ops)")
    query = "[1, 0, 0]"
    expected = sorted(rows, key=lambda r: (_cosine_distance(r[2], query), r[1]))
    # Across every shard: each shard's top rows, merged on the coordinator.
    got = coordinator.execute(
        "SELECT id FROM docs ORDER BY embedding <=> %s::vector, id LIMIT 5", [query]
    ).fetchall()
    assert [r[0] for r in got] == [r[1] for r in expected[:5]]
    # One user's rows: a single-shard query.
    one_user = [r for r in expected if r[0] == "user-3"]
    got = coordinator.execute(
        "SELECT id, embedding <=> %s::vector FROM docs WHERE user_id = %s"
        " ORDER BY embedding <=> %s::vector, id LIMIT 3",
        [query, "user-3", query],
    ).fetchall()
    assert [r[0] for r in got] == [r[1] for r in one_user[:3]]
    assert got[0][1] == pytest.approx(_cosine_distance(one_user[0][2], query), abs=1e-6)


def _cosine_distance(a: str, b: str) -> float:
    x = [float(v) for v in a.strip("[]").split(",")]
    y = [float(v) for v in b.strip("[]").split(",")]
    dot = sum(p * q for p, q in zip(x, y, strict=True))
    nx = math.sqrt(sum(p * p for p in x))
    ny = math.sqrt(sum(q * q for q in y))
    return 1.0 - dot / (nx * ny)


def test_one_user_query_is_a_single_task_router_plan(
    coordinator: Conn,
) -> None:
    coordinator.execute(
        "CREATE TABLE memories (user_id text NOT NULL, id bigint NOT NULL, content text,"
        " PRIMARY KEY (user_id, id))"
    )
    coordinator.execute("SELECT create_distributed_table('memories', 'user_id')")
    coordinator.execute("INSERT INTO memories VALUES ('alice', 1, 'a'), ('bob', 2, 'b')")

    coordinator.execute(
        "PREPARE one_user(text) AS SELECT id, content FROM memories WHERE user_id = $1"
    )
    plan = _explain(coordinator, "EXPLAIN EXECUTE one_user('alice')")
    assert "Custom Scan (Citus Adaptive)" in plan
    assert "Task Count: 1" in plan, plan
    # psycopg binds %s as $1 on the server: the same plan for a parameterized query.
    plan = _explain(
        coordinator, "EXPLAIN SELECT id, content FROM memories WHERE user_id = %s", ["bob"]
    )
    assert "Task Count: 1" in plan, plan
    # Without the distribution column every shard is scanned.
    plan = _explain(coordinator, "EXPLAIN SELECT id FROM memories WHERE content = 'a'")
    assert "Task Count: 1" not in plan
    shards = coordinator.execute("SHOW citus.shard_count").fetchone()
    assert shards is not None and int(shards[0]) == 4  # the test cluster's (tools/citus_cluster)
    assert "Task Count: 4" in plan, plan


def _explain(conn: Conn, sql: str, params: list[str] | None = None) -> str:
    return "\n".join(str(row[0]) for row in conn.execute(sql, params).fetchall())

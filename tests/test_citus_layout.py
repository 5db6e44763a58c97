"""The store's tables distributed by user on a real Citus cluster (issue #50, part 1): a
new store's schema in the Citus layout has every user table hash-distributed by
``shard_user`` and co-located with the records, shards on both workers, the tables without a
user as reference tables, record ids unique store-wide, and one user's rows read, joined and
deleted by single-shard router plans."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from tools.citus_cluster import CitusCluster

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy
from oracleagentmemory.core.store.engines.postgres._postgres import PostgresDialect
from oracleagentmemory.core.store.engines.postgres.citus import _layout as layout
from oracleagentmemory.core.store.schema._schema import SchemaError

from ._embedders import HashingEmbedder

pytestmark = pytest.mark.slow

Conn = psycopg.Connection[Any]


@pytest.fixture
def distributed(citus_cluster: CitusCluster) -> Iterator[tuple[PostgresDialect, Conn]]:
    """A store schema created in the Citus layout in a fresh schema of the coordinator, and
    an autocommit connection whose search path is that schema."""
    schema = f"c_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(citus_cluster.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        dialect = PostgresDialect(citus_cluster.dsn, "oam", schema)
        try:
            layout.create_distributed(dialect)
            conn.execute(f"SET search_path = {schema}, public")
            yield dialect, conn
        finally:
            dialect.close()
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _partitions(conn: Conn, schema: str) -> dict[str, tuple[str, str | None, int]]:
    """Each table of ``schema`` Citus knows: (kind, distribution column, colocation id)."""
    rows = conn.execute(
        "SELECT t.relname, p.partmethod, column_to_column_name(p.logicalrelid, p.partkey),"
        " p.colocationid FROM pg_dist_partition p JOIN pg_class t ON t.oid = p.logicalrelid"
        " WHERE t.relnamespace = %s::regnamespace",
        [schema],
    ).fetchall()
    return {str(name): (str(kind), column, int(group)) for name, kind, column, group in rows}


def _explain(conn: Conn, sql: str, params: list[Any]) -> str:
    return "\n".join(str(row[0]) for row in conn.execute(f"EXPLAIN {sql}", params).fetchall())


def test_every_user_table_is_distributed_by_user_and_colocated(
    citus_cluster: CitusCluster, distributed: tuple[PostgresDialect, Conn]
) -> None:
    dialect, conn = distributed
    schema = dialect.schema
    assert schema is not None
    t = dialect.tables
    parts = _partitions(conn, schema)
    bare = {name.rsplit(".", 1)[-1]: name for name in (*layout.user_tables(t), *t.all())}
    user_tables = {table.rsplit(".", 1)[-1] for table in layout.user_tables(t)}
    assert user_tables == {
        "oam_records", "oam_chunks", "oam_ann", "oam_ann_queue", "oam_kw", "oam_blobs",
        "oam_sources", "oam_history", "oam_relations", "oam_pending", "oam_seq",
        "oam_kw_totals",
    }  # fmt: skip
    groups = {parts[name][2] for name in user_tables}
    assert len(groups) == 1  # co-located: one user's rows of every table on one shard
    for name in user_tables:
        assert parts[name][:2] == ("h", "shard_user"), name
    for name in ("oam_meta", "oam_thread_owners"):
        assert parts[name][0] == "n", name  # reference tables: a copy on every node
    ids = layout.record_ids_table(t).rsplit(".", 1)[-1]
    assert parts[ids][:2] == ("h", "id")
    # Every table of the store Citus knows (the change log is gone: per-node xids).
    assert set(parts) == user_tables | {"oam_meta", "oam_thread_owners", ids}
    assert "oam_changes" not in set(parts) and "oam_changes" in bare
    assert conn.execute("SELECT to_regclass('oam_changes')").fetchone() == (None,)
    # The shards of every user table sit on both workers.
    for name in user_tables:
        ports = {
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = %s::regclass",
                [name],
            )
        }
        assert ports == {w.port for w in citus_cluster.workers}, name
    # Every key carries the distribution column, and the side tables cascade from chunks.
    keys = conn.execute(
        "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE connamespace = %s::regnamespace AND contype IN ('p', 'u', 'f')"
        " AND conrelid IN (SELECT logicalrelid FROM pg_dist_partition)",  # not the shards
        [schema],
    ).fetchall()
    for table, definition in keys:
        if table.endswith(("oam_meta", "oam_thread_owners", ids)):
            continue
        assert "shard_user" in definition, (table, definition)
    cascades = [d for table, d in keys if "FOREIGN KEY" in d]
    assert len(cascades) == 3 and all("ON DELETE CASCADE" in d for d in cascades)
    # No statement trigger is left (Citus cannot run one on a distributed table).
    assert conn.execute(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'oam_kw'::regclass AND NOT tgisinternal"
    ).fetchone() == (0,)
    assert conn.execute(
        "SELECT value FROM oam_meta WHERE key = %s", [layout.LAYOUT_KEY]
    ).fetchone() == (layout.CITUS_LAYOUT,)


def test_one_users_rows_are_single_shard_and_ids_unique_store_wide(
    distributed: tuple[PostgresDialect, Conn],
) -> None:
    _, conn = distributed
    users = [f"user-{i}" for i in range(40)] + [""]  # '' holds the rows without a user
    with conn.transaction(), conn.cursor() as cur:
        for n, user in enumerate(users):
            cur.execute(
                "INSERT INTO oam_records (shard_user, rid, family, record_type, id, user_id,"
                " created_at) VALUES (%s, %s, 'memory', 'memory', %s, %s, 'now')",
                [user, n, f"m{n}", user or None],
            )
            cur.execute(
                "INSERT INTO oam_chunks (shard_user, cid, rid, chunk_index, chunk_text, user_id)"
                " VALUES (%s, %s, %s, 0, %s, %s)",
                [user, n, n, f"text {n}", user or None],
            )
            cur.execute(
                "INSERT INTO oam_kw (shard_user, cid, rid, user_id, tsv, tsv_len)"
                " VALUES (%s, %s, %s, %s, to_tsvector('simple', %s), 2)",
                [user, n, n, user or None, f"text {n}"],
            )
            cur.execute(
                "INSERT INTO oam_record_ids (id, family, shard_user) VALUES (%s, 'memory', %s)",
                [f"m{n}", user],
            )
    # Shards of both workers hold rows.
    nodes = conn.execute(
        "SELECT count(DISTINCT s.nodeport) FROM citus_shards s"
        " WHERE s.table_name = 'oam_records'::regclass AND s.shard_size > 0"
    ).fetchone()
    assert nodes is not None and nodes[0] == 2
    one_user_plans = [
        # a user's search: chunks joined to their records on the user and the rid
        (
            "SELECT r.id, c.chunk_text FROM oam_chunks c JOIN oam_records r"
            " ON r.shard_user = c.shard_user AND r.rid = c.rid"
            " WHERE c.shard_user = %s AND c.user_id = %s",
            ["user-7", "user-7"],
        ),
        # a user's keyword rows with their records
        (
            "SELECT k.cid FROM oam_kw k JOIN oam_records r ON r.shard_user = k.shard_user"
            " AND r.rid = k.rid WHERE k.shard_user = %s AND k.tsv @@ 'text'::tsquery",
            ["user-7"],
        ),
        # a user's write and delete (the chunks' side rows cascade on the same shard)
        (
            "INSERT INTO oam_records (shard_user, rid, family, record_type, id, created_at)"
            " VALUES (%s, 1000, 'memory', 'memory', 'x', 'now')",
            ["user-7"],
        ),
        ("DELETE FROM oam_chunks WHERE shard_user = %s AND rid = %s", ["user-7", 7]),
        ("SELECT id FROM oam_records WHERE shard_user = %s FOR UPDATE", ["user-7"]),
    ]
    for sql, params in one_user_plans:
        plan = _explain(conn, sql, params)
        assert "Task Count: 1" in plan, (sql, plan)
    everyone = _explain(conn, "SELECT count(*) FROM oam_records WHERE user_id IS NULL", [])
    assert "Task Count: 1" not in everyone  # without the user: every shard
    # A user's delete cascades to the keyword rows of their chunks, and only theirs.
    conn.execute("DELETE FROM oam_chunks WHERE shard_user = %s AND rid = %s", ["user-7", 7])
    assert conn.execute("SELECT count(*) FROM oam_kw").fetchone() == (len(users) - 1,)
    # Record ids are unique across users (the id's shard, not the user's, decides).
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute(
            "INSERT INTO oam_record_ids (id, family, shard_user) VALUES ('m3', 'memory', 'b')"
        )
    # A key without the user is refused: a row without one cannot be placed.
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="partition column value"):
        conn.execute(
            "INSERT INTO oam_records (rid, family, record_type, id, created_at)"
            " VALUES (2000, 'memory', 'memory', 'y', 'now')"
        )


def test_layout_needs_the_citus_extension(pg_server: Any) -> None:
    schema = f"c_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE SCHEMA {schema};")
    dialect = PostgresDialect(pg_server.get_uri(), "oam", schema)
    try:
        with pytest.raises(ValueError, match="citus"):
            layout.create_distributed(dialect)
        assert not dialect.managed_objects()  # nothing was created
    finally:
        dialect.close()


def test_a_store_opens_the_distributed_layout_and_works_on_it(
    citus_cluster: CitusCluster, distributed: tuple[PostgresDialect, Conn]
) -> None:
    """A store opens a schema ``create_distributed`` made, and its rows land on the shards
    of their users (a store in the layout reads and writes it: docs/scaling.md)."""
    dialect, conn = distributed
    url = f"{citus_cluster.dsn}?options=-csearch_path%3D{dialect.schema}%2Cpublic"
    store = PostgresMemoryStore(
        HashingEmbedder(), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )  # adds the vector column's dimension (ALTER TABLE on the distributed chunks)
    try:
        [rid] = store.add(["kept on the shard of u1"], "memory", user_ids="u1")
        [other] = store.add(["kept on the shard of u2"], "memory", user_ids="u2")
        hits = store.search("shard of u1", 3, user_id="u1", exact_user_match=True)
        assert [record.id for record, _ in hits] == [rid]
        with pytest.raises(ValueError, match="already exists"):  # ids unique across users
            store.add(["again"], "memory", user_ids="u1", record_ids=other)
        assert conn.execute(
            "SELECT shard_user, user_id FROM oam_records ORDER BY shard_user"
        ).fetchall() == [("u1", "u1"), ("u2", "u2")]
        assert store.delete("memory", rid) == 1
        [again] = store.add(["its id is free again"], "memory", user_ids="u2", record_ids=rid)
        assert again == rid
    finally:
        store.close()
    assert conn.execute("SELECT count(*) FROM oam_record_ids").fetchone() == (2,)


def _statements(dialect: Any) -> list[tuple[str, list[Any]]]:
    """Every statement ``dialect`` sends from now on (its SQL with ``%s``, its parameters)."""
    sent: list[tuple[str, list[Any]]] = []
    for name in ("execute", "execute_nowait"):
        run = getattr(dialect, name)

        def record(sql: str, params: Any = (), _run: Any = run) -> Any:
            sent.append((dialect._q(sql), list(params)))
            return _run(sql, params)

        setattr(dialect, name, record)
    return sent


def _tasks(conn: Conn, sql: str, params: list[Any]) -> list[int]:
    """The task count of each distributed step of the plan of ``sql`` (none: no shard)."""
    plan = "\n".join(str(row[0]) for row in conn.execute(f"EXPLAIN {sql}", params).fetchall())
    return [int(part.split()[0]) for part in plan.split("Task Count: ")[1:]]


def test_a_store_created_on_a_coordinator_distributes_itself(
    citus_cluster: CitusCluster,
) -> None:
    """PostgresMemoryStore creating its tables on a Citus coordinator distributes them by
    user (the ``citus`` extension decides); one user's search and write are planned as
    single-shard statements (``EXPLAIN``), and the shards sit on both workers."""
    schema = f"c_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(citus_cluster.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path = {schema}, public")
        url = f"{citus_cluster.dsn}?options=-csearch_path%3D{schema}%2Cpublic"
        store = PostgresMemoryStore(
            HashingEmbedder(), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
        )
        try:
            parts = _partitions(conn, schema)
            assert parts["oam_records"][:2] == ("h", "shard_user")
            assert conn.execute(
                "SELECT value FROM oam_meta WHERE key = %s", [layout.LAYOUT_KEY]
            ).fetchone() == (layout.CITUS_LAYOUT,)
            for n in range(20):
                store.add([f"memory {n} of its user"], "memory", user_ids=f"user-{n}")
            nodes = conn.execute(
                "SELECT count(DISTINCT nodeport) FROM citus_shards"
                " WHERE table_name = 'oam_records'::regclass AND shard_size > 0"
            ).fetchone()
            assert nodes == (2,)
            dialect = store._dialect  # type: ignore[attr-defined]
            for strategy, run in (
                ("write", lambda: store.add(["one more"], "memory", user_ids="user-3")),
                (
                    "search",
                    lambda: store.search("memory of", 3, user_id="user-3", exact_user_match=True),
                ),
            ):
                sent = _statements(dialect)
                run()
                del dialect.execute, dialect.execute_nowait  # the class's methods again
                planned = [(sql, _tasks(conn, sql, params)) for sql, params in sent]
                distributed = [(sql, tasks) for sql, tasks in planned if tasks]
                assert distributed, strategy
                for sql, tasks in distributed:
                    assert set(tasks) == {1}, (strategy, sql, tasks)
            dialect.ann_catch_up()  # no approximate index to catch up (benchmarks call it)
        finally:
            store.close()
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_row_security_is_refused_on_the_distributed_layout(
    citus_cluster: CitusCluster, distributed: tuple[PostgresDialect, Conn]
) -> None:
    from oracleagentmemory.core import deepsec as ds

    dialect, conn = distributed
    assert dialect.schema is not None
    before = conn.execute("SELECT count(*) FROM pg_policy").fetchone()
    with pytest.raises(NotImplementedError, match=r"'citus:user' layout.*single PostgreSQL node"):
        ds.add_deep_data_security_policies(
            citus_cluster.dsn, dialect.schema, "oam", [ds.UserOwnRowsDeepDataSecurityPolicy()]
        )
    assert conn.execute("SELECT count(*) FROM pg_policy").fetchone() == before


def test_a_layout_no_engine_serves_is_refused_on_one_node(pg_server: Any) -> None:
    schema = f"c_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE SCHEMA {schema};")
    url = f"{pg_server.get_uri()}&options=-csearch_path%3D{schema}%2Cpublic"
    store = PostgresMemoryStore(
        HashingEmbedder(), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    store.close()
    pg_server.psql(f"INSERT INTO {schema}.oam_meta VALUES ('layout', 'citus:user');")
    with pytest.raises(SchemaError, match=r"'citus:user' layout.*no citus extension"):
        PostgresMemoryStore(HashingEmbedder(), url)
    with pytest.raises(SchemaError, match=r"'citus:user' layout.*no citus extension"):
        PostgresMemoryStore(HashingEmbedder(), url, schema_policy=SchemaPolicy.RECREATE)
    assert "oam_records" in pg_server.psql(
        f"SELECT tablename FROM pg_tables WHERE schemaname = '{schema}';"
    )


def test_what_the_store_statements_must_meet_on_the_layout(
    distributed: tuple[PostgresDialect, Conn],
) -> None:
    """The rules the store's statements must follow on this layout (docs/scaling.md), shown
    on the real cluster: each refused form, and the form that runs on one shard."""
    _, conn = distributed

    def tasks(sql: str) -> int:
        plan = _explain(conn, sql, [])
        return int(plan.split("Task Count: ", 1)[1].split()[0])

    # A routed statement runs on a worker, where the coordinator's sequences do not exist:
    # ids come from a statement of their own, or from an INSERT ... VALUES (Citus calls
    # nextval there on the coordinator).
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute(
            "SELECT (SELECT array_agg(nextval('oam_rid_seq')) FROM generate_series(1, 2)),"
            " (SELECT count(*) FROM oam_records WHERE shard_user = 'u' AND id = 'x')"
        )
    conn.execute(
        "INSERT INTO oam_records (shard_user, rid, family, record_type, id, created_at)"
        " VALUES ('u', nextval('oam_rid_seq'), 'memory', 'memory', 'x', 'now')"
    )
    # A join must carry the user (an equality on it, or both sides filtered by it).
    join = "SELECT r.id FROM oam_chunks c JOIN oam_records r ON r.rid = c.rid"
    with pytest.raises(psycopg.errors.InternalError, match="repartitioning"):
        conn.execute(f"{join} WHERE c.shard_user = 'u'")
    assert tasks(f"{join} AND r.shard_user = c.shard_user WHERE c.shard_user = 'u'") == 1
    assert tasks(f"{join} WHERE c.shard_user = 'u' AND r.shard_user = 'u'") == 1
    # FOR UPDATE must name the user.
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="FOR UPDATE"):
        conn.execute("SELECT id FROM oam_records WHERE id = 'x' FOR UPDATE")
    assert tasks("SELECT id FROM oam_records WHERE shard_user = 'u' FOR UPDATE") == 1
    # A user's scope with the rows without a user reads two shards: the user's and ''.
    shard = "SELECT get_shard_id_for_distribution_column('oam_kw', %s::text)"
    apart = next(
        user
        for user in (f"u{n}" for n in range(100))
        if conn.execute(shard, [user]).fetchone() != conn.execute(shard, [""]).fetchone()
    )
    assert tasks(f"SELECT cid FROM oam_kw WHERE shard_user IN ('{apart}', '')") == 2


def test_a_read_replica_is_refused_on_the_distributed_layout() -> None:
    """A standby of the coordinator holds no shard: a distributed store refuses one, naming
    the argument, before its statements change (the dialect stands in for a store opened
    with ``read_connection=``)."""

    class Opened:
        replica = object()  # what ``read_connection=`` leaves on the dialect

        def execute(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
            raise AssertionError("nothing is asked of the database first")

    with pytest.raises(ValueError, match="read_connection"):
        layout.adopt(Opened(), layout.CITUS_LAYOUT)


def test_a_store_in_the_layout_is_refused_on_a_worker(
    citus_cluster: CitusCluster, distributed: tuple[PostgresDialect, Conn]
) -> None:
    """Its writes lock their users with advisory locks on the coordinator, which hold on
    one node only: opened through a worker (where Citus shows the distributed tables too),
    a store in the layout is refused, naming the coordinator (docs/scaling.md)."""
    dialect, _ = distributed
    worker = citus_cluster.worker_dsns[0]
    url = f"{worker}?options=-csearch_path%3D{dialect.schema}%2Cpublic"
    with pytest.raises(ValueError, match="connect through the coordinator"):
        PostgresMemoryStore(HashingEmbedder(), url, schema_policy=SchemaPolicy.REQUIRE_EXISTING)


def test_a_write_that_names_no_users_is_refused_on_the_layout(
    citus_cluster: CitusCluster, distributed: tuple[PostgresDialect, Conn]
) -> None:
    """On the layout an ordinary write orders itself by its users' locks: a statement that
    changes rows before the write named its users is a programming error, refused before it
    runs, so no write path goes unordered (docs/scaling.md, *Write locking*)."""
    dialect, conn = distributed
    url = f"{citus_cluster.dsn}?options=-csearch_path%3D{dialect.schema}%2Cpublic"
    store = PostgresMemoryStore(
        HashingEmbedder(), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    try:
        store.add(["u1's note"], "memory", user_ids="u1", record_ids="n1")
        d = store._dialect
        delete = f"DELETE FROM {d.tables.records} WHERE family = 'memory' AND id = ?"
        refused = pytest.raises(RuntimeError, match="before naming its users")
        with refused, d.transaction(shared=True):
            d.execute(delete, ["n1"])
        with d.transaction(shared=True):
            assert d.lock_users([], [("memory", "n1")]) == {"u1"}  # found by its id
            d.execute(delete, ["n1"])
        with d.transaction():  # the store's lock held exclusively stands for every user's
            d.execute(delete, ["n1"])
    finally:
        store.close()
    assert conn.execute("SELECT count(*) FROM oam_records").fetchone() == (0,)

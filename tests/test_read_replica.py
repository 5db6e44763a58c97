"""Read replicas (issue #50): a client given ``read_connection`` (a real streaming hot
standby, ``tests/conftest_cluster.pg_standby``) reads its own writes and sends its searches
to the standby once its replay has caught up; a store opened on the standby itself reads
and refuses every write; ``oam serve --read-dsn`` serves from the standby."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tools.pg_standby import current_lsn

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.core import OracleAgentMemory, SearchStrategy
from oracleagentmemory.core.store._dialect import ReadOnlyStoreError
from oracleagentmemory.core.store.engines.postgres._postgres_store import PostgresMemoryStore
from oracleagentmemory.core.store.schema._schema import SchemaError

from ._embedders import HashingEmbedder
from .conftest_cluster import Replication

pytestmark = pytest.mark.slow

_IDS = itertools.count()


def _store_id() -> str:
    return f"rr{next(_IDS)}_{uuid.uuid4().hex[:6]}"


def _sql(dsn: str, sql: str) -> Any:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def _served(client: Any) -> dict[str, int]:
    replica = client.store._dialect.replica
    assert replica is not None
    return dict(replica.served)


@pytest.fixture
def client(pg_standby: Replication) -> Iterator[Any]:
    mem = OracleAgentMemory(
        connection=pg_standby.primary_dsn,
        read_connection=pg_standby.standby_dsn,
        embedder=HashingEmbedder(),
        schema_policy="create_if_necessary",
        memory_store_id=_store_id(),
    )
    yield mem
    mem.close()


@pytest.fixture
def paused(pg_standby: Replication) -> Iterator[None]:
    """The standby's replay paused (it still receives WAL, applies none of it)."""
    pg_standby.catch_up()
    _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_pause()")
    try:
        yield
    finally:
        _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_resume()")


def _contents(results: list[Any]) -> list[str]:
    return [r.record.content for r in results]


def test_reads_own_write_from_primary_while_the_standby_lags(
    client: Any, pg_standby: Replication, paused: None
) -> None:
    before = _served(client)
    client.add_memory("Alice is allergic to peanuts.", user_id="alice")
    found = client.search("peanut allergy", user_id="alice")
    assert "Alice is allergic to peanuts." in _contents(found)
    memories = client.list_memories(user_id="alice")
    assert [m.content for m in memories] == ["Alice is allergic to peanuts."]
    after = _served(client)
    assert after["replica"] == before["replica"]  # the standby is behind: none went there
    assert after["primary"] >= before["primary"] + 2
    # The standby really is behind: it does not have the memory yet.
    table = f"{client.store._dialect.tables.records}"
    assert _sql(pg_standby.standby_dsn, f"SELECT count(*) FROM {table}") == 0


def test_searches_go_to_the_standby_once_it_caught_up(client: Any, pg_standby: Replication) -> None:
    client.add_memory("Bob prefers window seats.", user_id="bob")
    lsn = current_lsn(pg_standby.primary_dsn)
    pg_standby.standby.wait_for_replay(lsn)
    time.sleep(0.01)  # past the cached replay check
    before = _served(client)
    for _ in range(5):
        found = client.search("window seat", user_id="bob")
        assert _contents(found)[0] == "Bob prefers window seats."
    after = _served(client)
    assert after["replica"] == before["replica"] + 5
    assert after["primary"] == before["primary"]


def test_write_then_read_switches_back_after_catch_up(client: Any, pg_standby: Replication) -> None:
    """Paused: the write is read from the primary; resumed and replayed: from the standby,
    and the standby's answer holds the write."""
    pg_standby.catch_up()
    _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_pause()")
    try:
        thread = client.create_thread(user_id="carol")
        thread.add_messages([{"role": "user", "content": "I moved to Lisbon last week."}])
        start = _served(client)
        assert "I moved to Lisbon last week." in _contents(
            client.search("Lisbon", user_id="carol", record_types=["message"])
        )
        assert _served(client)["replica"] == start["replica"]
    finally:
        _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_resume()")
    pg_standby.catch_up()
    time.sleep(0.01)
    start = _served(client)
    assert "I moved to Lisbon last week." in _contents(
        client.search("Lisbon", user_id="carol", record_types=["message"])
    )
    assert [m.content for m in thread.get_messages()] == ["I moved to Lisbon last week."]
    assert _served(client)["replica"] >= start["replica"] + 2


def test_writes_stay_on_the_primary(client: Any, pg_standby: Replication) -> None:
    pg_standby.catch_up()
    time.sleep(0.01)
    memory_id = client.add_memory("Dana speaks Portuguese.", user_id="dana")
    client.update_memory(memory_id, content="Dana speaks Portuguese and Spanish.")
    table = client.store._dialect.tables.records
    # The primary has the update at once; reads see it (served wherever caught up).
    assert (
        _sql(pg_standby.primary_dsn, f"SELECT count(*) FROM {table} WHERE content LIKE '%Spanish%'")
        == 1
    )
    found = client.search("Portuguese", user_id="dana")
    assert _contents(found)[0] == "Dana speaks Portuguese and Spanish."
    assert client.delete_memory(memory_id) == 1
    assert client.search("Portuguese", user_id="dana") == []


def test_read_connection_must_be_a_standby(pg_standby: Replication) -> None:
    with pytest.raises(ValueError, match="hot standby"):
        PostgresMemoryStore(
            HashingEmbedder(),
            pg_standby.primary_dsn,
            schema_policy="create_if_necessary",
            memory_store_id=_store_id(),
            read_connection=pg_standby.primary_dsn,
        )


def test_read_connection_needs_postgres(tmp_path: Path, pg_standby: Replication) -> None:
    with pytest.raises(ValueError, match="read replicas need PostgreSQL"):
        OracleAgentMemory(
            connection=str(tmp_path / "m.db"),
            read_connection=pg_standby.standby_dsn,
            embedder=HashingEmbedder(),
        )


def test_read_connection_with_a_given_store_is_refused(
    client: Any, pg_standby: Replication
) -> None:
    with pytest.raises(ValueError, match="read_connection"):
        OracleAgentMemory(store=client.store, read_connection=pg_standby.standby_dsn)


# ------------------------------------------------------------ a store opened on the standby


@pytest.fixture
def on_standby(pg_standby: Replication) -> Iterator[tuple[Any, Any]]:
    """(primary store with data, the same store opened on the standby)."""
    store_id = _store_id()
    primary = PostgresMemoryStore(
        HashingEmbedder(),
        pg_standby.primary_dsn,
        schema_policy="create_if_necessary",
        memory_store_id=store_id,
        search_strategy=SearchStrategy.HYBRID,
    )
    primary.add(
        ["Erin likes jazz.", "Erin lives in Oslo."],
        record_type="memory",
        user_ids="erin",
        record_ids=["m1", "m2"],
    )
    primary.add(["Old news."], record_type="memory", user_ids="erin", record_ids="gone", ttl_days=1)
    primary._dialect.execute(  # expired, not purged yet
        f"UPDATE {primary._dialect.tables.records} SET expires_at = 1 WHERE id = 'gone'"
    )
    pg_standby.catch_up()
    standby = PostgresMemoryStore(
        HashingEmbedder(),
        pg_standby.standby_dsn,
        schema_policy="create_if_necessary",  # no DDL happens there all the same
        memory_store_id=store_id,
        search_strategy=SearchStrategy.HYBRID,
    )
    yield primary, standby
    standby.close()
    primary.close()


def test_store_on_standby_reads(on_standby: tuple[Any, Any]) -> None:
    primary, standby = on_standby
    assert standby._dialect.read_only
    hits = standby.search("jazz", 5, user_id="erin", exact_user_match=True)
    assert hits[0][0].id == "m1"
    assert standby.get("memory", "m1").content == "Erin likes jazz."
    assert standby.get("memory", "gone") is None  # expired: filtered, though not purged
    assert [r.id for r in standby.list("memory", user_id="erin")] == ["m1", "m2"]
    assert standby.id_secret() == primary.id_secret()
    # The expired row is still there: opening on the standby purged nothing.
    table = standby._dialect.tables.records
    assert standby._dialect.execute(f"SELECT count(*) FROM {table}")[0][0] == 3


def test_store_on_standby_refuses_every_write(on_standby: tuple[Any, Any]) -> None:
    _, standby = on_standby
    writes = {
        "add": lambda: standby.add(["x"], record_type="memory", user_ids="erin"),
        "add_batches": lambda: standby.add_batches(
            [PendingRecordBatch(record_type="memory", contents=["y"], user_ids=["erin"])]
        ),
        "update": lambda: standby.update("memory", "m1", content="changed"),
        "delete": lambda: standby.delete("memory", "m1"),
        "delete_thread": lambda: standby.delete_thread("t1"),
        "purge_expired": standby.purge_expired,
        "add_relations": lambda: standby.add_relations("m1", "memory", "m2", "memory", "supports"),
        "create_thread": lambda: standby.create_thread_record(
            "t2", user_id="erin", agent_id=None, metadata=None, runtime_config=None
        ),
        "add_image": lambda: standby.add_image(
            b"\x89PNG\r\n\x1a\n" + b"0" * 32, mime_type="image/png", description="a pixel"
        ),
        "add_user": lambda: standby.add_user("frank", "Frank"),
    }
    for name, write in writes.items():
        with pytest.raises(ReadOnlyStoreError, match="read-only: this store is open on a standby"):
            write()
        assert isinstance(ReadOnlyStoreError(), PermissionError), name
    assert standby.get("memory", "m1").content == "Erin likes jazz."


def test_missing_store_on_standby_is_a_clear_error(pg_standby: Replication) -> None:
    with pytest.raises(SchemaError, match="open on a standby"):
        PostgresMemoryStore(
            HashingEmbedder(),
            pg_standby.standby_dsn,
            schema_policy="create_if_necessary",
            memory_store_id=_store_id(),
        )


# ------------------------------------------------------------ oam serve --read-dsn


def test_oam_serve_read_dsn(tmp_path: Path, pg_standby: Replication) -> None:
    import httpx

    from ._servers import new_key, running_server

    store_id = "oam"  # the keys' store (``new_key``); no other test here uses it
    args = ["--search-strategy", "keyword", "--embedder", "none"]
    with running_server(
        pg_standby.primary_dsn,
        *args,
        "--read-dsn",
        pg_standby.standby_dsn,
        log=tmp_path / "serve.log",
    ) as base:
        key = new_key(pg_standby.primary_dsn, "gina")
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as api:
            made = api.post(
                "/v1/memories", json={"content": "Gina plays chess.", "user_id": "gina"}
            )
            assert made.status_code in (200, 201), made.text
            found = api.post("/v1/search", json={"query": "chess", "user_id": "gina"})
            assert found.status_code == 200, found.text
            assert [r["record"]["content"] for r in found.json()["results"]] == [
                "Gina plays chess."
            ]
    # The standby got no schema of its own making: the tables came by replication.
    pg_standby.catch_up()
    assert _sql(pg_standby.standby_dsn, f"SELECT to_regclass('{store_id}_meta') IS NOT NULL")


# ------------------------------------------------------------ row security on the standby


def test_end_user_row_security_applies_on_the_standby(pg_standby: Replication) -> None:
    """An end user's search routed to the standby runs as their role there too: the
    database's row security answers, as on the primary."""
    import re

    from oracleagentmemory.core import deepsec as ds

    owner, alice, bob, app, schema = "rr_owner", "rr_alice", "rr_bob", "rr_app", "rr_sec"

    def as_role(dsn: str, role: str) -> str:
        return re.sub(r"//[^:@/]*(:[^@]*)?@", f"//{role}@", dsn, count=1)

    with psycopg.connect(pg_standby.primary_dsn, autocommit=True) as conn:
        for stmt in (
            f"CREATE ROLE {owner} LOGIN CREATEROLE",
            f"CREATE SCHEMA {schema} AUTHORIZATION {owner}",
            f"CREATE ROLE {alice} LOGIN",
            f"CREATE ROLE {bob} LOGIN",
            f"CREATE ROLE {app} LOGIN",
            f"GRANT {alice}, {bob} TO {app} WITH INHERIT FALSE, SET TRUE",
        ):
            conn.execute(stmt)
    store_id = _store_id()
    seeded = PostgresMemoryStore(
        HashingEmbedder(),
        as_role(pg_standby.primary_dsn, owner),
        schema_owner=schema,
        memory_store_id=store_id,
        schema_policy="create_if_necessary",
    )
    for user in (alice, bob):
        seeded.add(
            [f"{user} likes green tea"],
            record_type="memory",
            user_ids=user,
            record_ids=f"{user}-m1",
        )
    policies: list[Any] = [ds.UserOwnRowsDeepDataSecurityPolicy()]
    with psycopg.connect(as_role(pg_standby.primary_dsn, owner), autocommit=True) as admin:
        ds.add_deep_data_security_policies(admin, schema, store_id, policies)
        ds.grant_agent_memory_policies(
            admin,
            store_id,
            schema,
            [ds.LocalEndUserPrincipal(alice), ds.LocalEndUserPrincipal(bob)],
            policies,
        )
    pg_standby.catch_up()
    with ds.OracleMemoryEndUserSecurityContext(alice):
        service = PostgresMemoryStore(
            HashingEmbedder(),
            as_role(pg_standby.primary_dsn, app),
            schema_owner=schema,
            memory_store_id=store_id,
            read_connection=as_role(pg_standby.standby_dsn, app),
        )
    pg_standby.catch_up()  # past the open's own commit (the store's last write)
    time.sleep(0.01)  # past the store's cached answer of the standby's position
    try:
        replica: Any = getattr(service._dialect, "replica", None)
        for user, other in ((alice, bob), (bob, alice)):
            with ds.OracleMemoryEndUserSecurityContext(user):
                before = replica.served["replica"]
                found = {r.id for r, _ in service.search("green tea", 10)}
                listed = {r.id for r in service.list("memory")}
                assert replica.served["replica"] == before + 2  # both read on the standby
            assert found == listed == {f"{user}-m1"}, (user, other)
        with pytest.raises(PermissionError):  # no end user: the service role reads nothing
            service.list("memory")
    finally:
        service.close()
        seeded.close()


def test_clients_sharing_writes_read_each_others(pg_standby: Replication) -> None:
    """A server's clients of one process (one per search strategy) share their last write:
    a search through one sees a write through the other while the standby lags."""
    from oracleagentmemory.admin.connect import share_writes

    store_id = _store_id()
    opened = [
        OracleAgentMemory(
            connection=pg_standby.primary_dsn,
            read_connection=pg_standby.standby_dsn,
            embedder=None if strategy is SearchStrategy.KEYWORD else HashingEmbedder(),
            schema_policy="create_if_necessary",
            memory_store_id=store_id,
            search_strategy=strategy,
        )
        for strategy in (SearchStrategy.HYBRID, SearchStrategy.KEYWORD)
    ]
    writer, searcher = opened
    try:
        share_writes(searcher, writer)
        pg_standby.catch_up()
        time.sleep(0.01)
        assert searcher.search("stamps", user_id="hana") == []
        assert _served(searcher) == {"replica": 1, "primary": 0}  # caught up: the standby
        _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_pause()")
        try:
            writer.add_memory("Hana collects stamps.", user_id="hana")
            found = searcher.search("stamps", user_id="hana")
            assert _contents(found) == ["Hana collects stamps."]
            assert _served(searcher) == {"replica": 1, "primary": 1}
        finally:
            _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_resume()")
    finally:
        for mem in opened:
            mem.close()


def test_reads_that_decide_a_write_go_to_the_primary(client: Any, pg_standby: Replication) -> None:
    """A memory another client wrote a moment ago (the standby has not replayed it) is
    found by this client's update, link and delete: the read that decides a write reads
    where writes go, never the replica's older copy."""
    other = OracleAgentMemory(
        connection=pg_standby.primary_dsn,
        embedder=HashingEmbedder(),
        schema_policy="require_existing",
        memory_store_id=client.store._core.store_id,
    )
    try:
        pg_standby.catch_up()
        time.sleep(0.01)
        assert client.search("postcards", user_id="ivo") == []  # the client is caught up
        _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_pause()")
        try:
            first = other.add_memory("Ivo collects postcards.", user_id="ivo")
            second = other.add_memory("Ivo sends postcards.", user_id="ivo")
            # The standby lacks both; a routed read would not find them.
            assert client.store._dialect.replica is not None
            client.update_memory(first, content="Ivo collects old postcards.")
            client.add_memory(
                "Ivo trades postcards.",
                user_id="ivo",
                memory_id_to_link=second,
                link_type="supports",
            )
            assert client.delete_memory(second) == 1
        finally:
            _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_resume()")
        got = other.store.get("memory", first)
        assert got is not None and got.content == "Ivo collects old postcards."
        assert other.store.get("memory", second) is None
    finally:
        other.close()


def _pause_replay(standby_dsn: str) -> None:
    _sql(standby_dsn, "SELECT pg_wal_replay_pause()")
    deadline = time.monotonic() + 10
    while _sql(standby_dsn, "SELECT pg_get_wal_replay_pause_state()") != "paused":
        assert time.monotonic() < deadline, "the standby's replay did not pause"
        time.sleep(0.01)


def test_extraction_reads_on_the_standby_as_of_the_job(pg_standby: Replication) -> None:
    """A background extraction job's reads (dedup and link candidates) need what the client
    had committed when the job began (its messages): the standby serves them although the
    client wrote more since, which it has not replayed; the job's memories are written on
    the primary."""
    from oracleagentmemory.core import MemoryExtractionConfig, MemoryExtractionMode

    from ._fake_model import fake_model
    from ._llm_double import ScriptedLlm

    model = fake_model()
    seen: dict[str, Any] = {}

    def answer(call: Any) -> Any:
        if not seen:  # the job's first LLM call: its input was read, its searches follow
            pg_standby.catch_up()  # the standby has the job's messages...
            _pause_replay(pg_standby.standby_dsn)
            other = threading.Thread(  # ...and not what the client writes after them
                target=lambda: seen.update(later=mem.add_memory("Zoe sings.", user_id="zoe"))
            )
            other.start()
            other.join(30)
            seen["at_pause"] = _served(mem)
        return model(call)

    mem = OracleAgentMemory(
        connection=pg_standby.primary_dsn,
        read_connection=pg_standby.standby_dsn,
        embedder=HashingEmbedder(),
        llm=ScriptedLlm(respond=answer),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False
        ),
        schema_policy="create_if_necessary",
        memory_store_id=_store_id(),
    )
    table = mem.store._dialect.tables.records
    erin = f"SELECT count(*) FROM {table} WHERE family = 'memory' AND user_id = 'erin'"
    try:
        try:
            thread = mem.create_thread(user_id="erin")
            thread.add_messages([{"role": "user", "content": "I keep bees in Porto."}])
            mem.wait_for_memory_extraction(timeout=60)
            assert "later" in seen, "the job never asked the model"
            after = _served(mem)
            # The job's searches after the pause went to the standby ...
            assert after["replica"] > seen["at_pause"]["replica"], (seen["at_pause"], after)
            # ... which was behind the client's last write all along, while the job's
            # memory went to the primary.
            zoe = f"SELECT count(*) FROM {table} WHERE id = '{seen['later']}'"
            assert _sql(pg_standby.standby_dsn, zoe) == 0
            assert _sql(pg_standby.primary_dsn, erin) == 1
            assert _sql(pg_standby.standby_dsn, erin) == 0
        finally:
            _sql(pg_standby.standby_dsn, "SELECT pg_wal_replay_resume()")
        pg_standby.catch_up()
        assert [m.content for m in mem.list_memories(user_id="erin")] == ["I keep bees in Porto."]
    finally:
        mem.close()

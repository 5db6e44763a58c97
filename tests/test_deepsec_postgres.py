"""Row security on PostgreSQL (``core.deepsec``): a real server, an owner role, two end users'
login roles, a group role and a pooled service role.

The owner (``dds_owner``, CREATEROLE) owns the schema and the store's tables; end users
connect as ``dds_alice`` / ``dds_bob`` (deployment: each user its own role, ``schema_owner=``)
or through the service role ``dds_app``, which may ``SET ROLE`` to them without inheriting
their privileges (deployment: a pool, ``OracleMemoryEndUserSecurityContext`` per call).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from oracleagentmemory.core import (
    OracleAgentMemory,
    PostgresMemoryStore,
    SchemaPolicy,
    SearchStrategy,
    deepsec as ds,
)
from oracleagentmemory.core.extractors import MemoryExtractionConfig, MemoryExtractionMode

from ._embedders import HashingEmbedder
from ._fake_model import fake_model
from ._images import PNG
from ._llm_double import ScriptedLlm

OWN = ds.UserOwnRowsDeepDataSecurityPolicy()
GLOBAL = ds.GlobalMemoriesDeepDataSecurityPolicy()
ALICE, BOB, APP, OWNER, TEAM, CAROL = (
    "dds_alice",
    "dds_bob",
    "dds_app",
    "dds_owner",
    "dds_team",
    "dds_carol",
)
SCHEMA = "dds"
_ids = itertools.count()


@pytest.fixture(scope="module")
def roles(pg_server: Any) -> Callable[[str], str]:
    """``url(role)``: the server's URL, connecting as ``role``; the roles made once."""
    for stmt in (
        f"CREATE ROLE {OWNER} LOGIN CREATEROLE",
        f"CREATE SCHEMA {SCHEMA} AUTHORIZATION {OWNER}",
        f"CREATE ROLE {ALICE} LOGIN",
        f"CREATE ROLE {BOB} LOGIN",
        f"CREATE ROLE {CAROL} LOGIN",
        f"CREATE ROLE {APP} LOGIN",
        f"GRANT {ALICE}, {BOB}, {CAROL} TO {APP} WITH INHERIT FALSE, SET TRUE",
    ):
        pg_server.psql(stmt + ";")
    uri = pg_server.get_uri()
    return lambda role: re.sub(r"//[^:@/]*(:[^@]*)?@", f"//{role}@", uri, count=1)


@pytest.fixture
def store_id() -> str:
    return f"m{next(_ids)}"


@pytest.fixture
def opened(roles: Callable[[str], str], store_id: str) -> Iterator[Callable[..., Any]]:
    """``opened(role, **kw)``: a store on the test's store id, connected as ``role``."""
    made: list[Any] = []

    def open_as(role: str, **kw: Any) -> Any:
        kw.setdefault("schema_policy", SchemaPolicy.REQUIRE_EXISTING)
        store = PostgresMemoryStore(
            HashingEmbedder(), roles(role), schema_owner=SCHEMA, memory_store_id=store_id, **kw
        )
        made.append(store)
        return store

    yield open_as
    for store in made:
        store.close()


@pytest.fixture
def admin(roles: Callable[[str], str]) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(roles(OWNER), autocommit=True) as conn:
        yield conn


@pytest.fixture
def seeded(opened: Callable[..., Any], admin: Any, store_id: str) -> Any:
    """The owner's store: two users' memories (linked), messages, an image, a global
    memory; both policies added and granted to both users."""
    owner = opened(
        OWNER, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, search_strategy=SearchStrategy.HYBRID
    )
    for user in (ALICE, BOB):
        owner.add(
            [f"{user} likes green tea", f"{user} lives in Lisbon"],
            record_type="memory",
            record_ids=[f"{user}-m1", f"{user}-m2"],
            user_ids=user,
        )
        owner.add(
            [f"{user} says hello"],
            record_type="message",
            thread_ids=f"{user}-t",
            user_ids=user,
            roles="user",
            record_ids=f"{user}-msg",
        )
        owner.add_relations(f"{user}-m1", "memory", f"{user}-m2", "memory", "related_to")
        owner.add_image(
            PNG,
            mime_type="image/png",
            description=f"{user}'s cat",
            image_id=f"{user}-img",
            user_id=user,
        )
    owner.add(["the office serves green tea"], record_type="memory", record_ids="g-1")
    ds.add_deep_data_security_policies(admin, SCHEMA, store_id, [OWN, GLOBAL])
    ds.grant_agent_memory_policies(
        admin,
        store_id,
        SCHEMA,
        [ds.LocalEndUserPrincipal(ALICE), ds.LocalEndUserPrincipal(BOB)],
        [OWN, GLOBAL],
    )
    owner._dialect.ann_catch_up()
    return owner


def _ids_of(results: Any) -> set[str]:
    return {(r[0] if isinstance(r, tuple) else r).id for r in results}


# ------------------------------------------------------------------ hand-written SQL


def test_an_end_user_cannot_read_update_or_delete_another_users_rows_in_sql(
    seeded: Any, roles: Callable[[str], str], store_id: str
) -> None:
    t = f"{SCHEMA}.{store_id}"
    with psycopg.connect(roles(OWNER), autocommit=True) as conn:  # what Bob has, by key
        bob_rids = [
            r[0] for r in conn.execute(f"SELECT rid FROM {t}_records WHERE user_id = %s", [BOB])
        ]
        bob_cids = [
            r[0] for r in conn.execute(f"SELECT cid FROM {t}_chunks WHERE user_id = %s", [BOB])
        ]
        before = _bobs_rows(conn, t, bob_rids, bob_cids)
    assert [k for k, v in before.items() if not v] == []  # every table holds some of Bob's
    with psycopg.connect(roles(ALICE), autocommit=True) as conn:
        users = {r[0] for r in conn.execute(f"SELECT user_id FROM {t}_records")}
        assert users == {ALICE, None}
        seen = _bobs_rows(conn, t, bob_rids, bob_cids)
        assert not any(seen.values()), seen  # Alice reads none of them, by any key
        for table, (column, where, params) in _bob_keys(bob_rids, bob_cids).items():
            for verb in (f"UPDATE {t}_{table} SET {column} = {column}", f"DELETE FROM {t}_{table}"):
                # None is touched: none matches, or the verb is not granted at all.
                with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
                    assert conn.execute(f"{verb} WHERE {where}", params).rowcount == 0, verb
        rels = conn.execute(f"SELECT source_record_id FROM {t}_relations")
        assert {r[0] for r in rels} == {f"{ALICE}-m1"}
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                f"INSERT INTO {t}_records (rid, family, record_type, id, user_id,"
                f" created_at) VALUES (999999, 'memory', 'memory', 'x', '{BOB}', 'now')"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # ownership never changes
            conn.execute(f"UPDATE {t}_records SET user_id = '{BOB}'")
    with psycopg.connect(roles(OWNER), autocommit=True) as conn:
        assert _bobs_rows(conn, t, bob_rids, bob_cids) == before
    assert seeded.get("memory", "g-1").content == "the office serves green tea"


def _bob_keys(rids: list[int], cids: list[int]) -> dict[str, tuple[str, str, list[Any]]]:
    """Table -> (a column to rewrite, a condition naming Bob's rows, its parameters)."""
    by_rid = ("rid = ANY(%s)", [rids])
    by_cid = ("cid = ANY(%s)", [cids])
    return {
        "records": ("content", *by_rid),
        "chunks": ("chunk_text", *by_cid),
        "kw": ("tsv_len", *by_cid),
        "blobs": ("data", *by_rid),
        "relations": ("metadata", "source_record_id = %s", [f"{BOB}-m1"]),
        "thread_owners": ("agent_id", "thread_id = %s", [f"{BOB}-t"]),
        "ann": ("vector", *by_cid),
        "ann_queue": ("cid", *by_cid),
    }


def _bobs_rows(conn: Any, t: str, rids: list[int], cids: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table, (_column, where, params) in _bob_keys(rids, cids).items():
        rows = conn.execute(f"SELECT * FROM {t}_{table} WHERE {where}", params).fetchall()
        out[table] = sorted(map(str, rows))
    queued = out.pop("ann_queue")
    out["ann"] = out["ann"] + queued  # a chunk is in one of the two
    return out


def test_global_memories_are_readable_by_both_and_writable_by_neither(
    seeded: Any, roles: Callable[[str], str], store_id: str
) -> None:
    table = f"{SCHEMA}.{store_id}_records"
    for user in (ALICE, BOB):
        with psycopg.connect(roles(user), autocommit=True) as conn:
            assert conn.execute(f"SELECT content FROM {table} WHERE id = 'g-1'").fetchall() == [
                ("the office serves green tea",)
            ]
            assert conn.execute(f"UPDATE {table} SET content = 'x' WHERE id = 'g-1'").rowcount == 0
            assert conn.execute(f"DELETE FROM {table} WHERE id = 'g-1'").rowcount == 0
        store = PostgresMemoryStore(
            HashingEmbedder(), roles(user), schema_owner=SCHEMA, memory_store_id=store_id
        )
        try:
            assert "g-1" in _ids_of(store.search("green tea", 10, user_id=user))
            with pytest.raises(PermissionError, match="row-level security"):
                store.add(["a new global memory"], record_type="memory")
            assert store.delete("memory", "g-1") == 0
        finally:
            store.close()
    assert seeded.get("memory", "g-1").content == "the office serves green tea"


# ------------------------------------------------------------------ the store as an end user


def test_an_end_users_own_store_works_and_sees_only_their_rows(
    seeded: Any, opened: Callable[..., Any]
) -> None:
    alice = opened(ALICE)
    found = _ids_of(alice.search("green tea", 10))
    assert {f"{ALICE}-m1", "g-1"} <= found
    assert found <= {f"{ALICE}-m1", f"{ALICE}-m2", f"{ALICE}-msg", f"{ALICE}-img", "g-1"}
    assert {r.id for r in alice.list("memory")} == {f"{ALICE}-m1", f"{ALICE}-m2", "g-1"}
    assert alice.get("memory", f"{BOB}-m1") is None
    assert alice.delete("memory", f"{BOB}-m1") == 0
    alice.add(["alice adds one"], record_type="memory", user_ids=ALICE, record_ids="a-new")
    alice.update("memory", "a-new", content="alice changed it")
    assert alice.get("memory", "a-new").content == "alice changed it"
    with pytest.raises(PermissionError, match="row-level security"):
        alice.add(["as bob"], record_type="memory", user_ids=BOB)
    # Bob's thread is his: the database refuses to move its seq_no mark for Alice.
    with pytest.raises(PermissionError, match="row-level security policy for table"):
        alice.add(
            ["into bob's thread"],
            record_type="message",
            thread_ids=f"{BOB}-t",
            user_ids=ALICE,
            roles="user",
        )
    assert {r.id for r in alice.list_relations()} == {
        r.id for r in seeded.list_relations(source_record_id=f"{ALICE}-m1")
    }
    assert alice.get("image", f"{ALICE}-img") is not None
    assert alice.get("image", f"{BOB}-img") is None
    assert seeded.get("memory", f"{BOB}-m1") is not None


def test_revoking_takes_effect_on_the_next_statement(
    seeded: Any, opened: Callable[..., Any], admin: Any, store_id: str
) -> None:
    alice = opened(ALICE)
    assert f"{ALICE}-m1" in {r.id for r in alice.list("memory")}
    ds.revoke_agent_memory_policies(
        admin, store_id, SCHEMA, [ds.LocalEndUserPrincipal(ALICE)], [OWN]
    )
    assert {r.id for r in alice.list("memory")} == {"g-1"}  # global only, at once
    ds.revoke_agent_memory_policies(
        admin, store_id, SCHEMA, [ds.LocalEndUserPrincipal(ALICE)], [GLOBAL]
    )
    with pytest.raises(PermissionError, match="permission denied"):
        alice.list("memory")
    assert ds.list_agent_memory_granted_policies(admin, store_id, SCHEMA) == [
        (ds.LocalEndUserPrincipal(BOB), [OWN, GLOBAL])
    ]


# ------------------------------------------------------------------ the pooled service role


def test_a_pooled_service_role_never_carries_one_users_rows_into_anothers_call(
    seeded: Any, opened: Callable[..., Any]
) -> None:
    with ds.OracleMemoryEndUserSecurityContext(ALICE):
        service = opened(APP)  # the open itself runs as Alice
    seen: dict[str, set[str]] = {ALICE: set(), BOB: set()}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for j in range(25):
                user = (ALICE, BOB)[(i + j) % 2]
                with ds.OracleMemoryEndUserSecurityContext(user):
                    got = _ids_of(service.search("green tea lives Lisbon", 10))
                    got |= {r.id for r in service.list("memory")}
                    if j % 5 == 0:
                        service.add(
                            [f"note {i}.{j}"],
                            record_type="memory",
                            user_ids=user,
                            record_ids=f"{user}-n{i}.{j}",
                        )
                seen[user] |= got
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for user, other in ((ALICE, BOB), (BOB, ALICE)):
        assert seen[user] and not {i for i in seen[user] if i.startswith(other)}, user
    # With no end user, the service role itself may read nothing.
    with pytest.raises(PermissionError, match="permission denied"):
        service.list("memory")
    # Each thread wrote 5 notes, 20 of the 40 as Alice.
    notes = [r for r in seeded.list("memory", user_id=ALICE) if r.id.startswith(f"{ALICE}-n")]
    assert len(notes) == 20


def test_a_role_the_service_may_not_set_is_refused(
    seeded: Any, opened: Callable[..., Any], pg_server: Any
) -> None:
    pg_server.psql("CREATE ROLE dds_mallory LOGIN;")
    with ds.OracleMemoryEndUserSecurityContext(ALICE):
        service = opened(APP)
    with ds.OracleMemoryEndUserSecurityContext("dds_mallory"), pytest.raises(PermissionError):
        service.list("memory")


def test_the_context_follows_awaits_and_ends_with_its_block(
    seeded: Any, opened: Callable[..., Any]
) -> None:
    with ds.OracleMemoryEndUserSecurityContext(ALICE):
        service = opened(APP)

    async def main() -> tuple[set[str], BaseException | None]:
        ctx = ds.OracleMemoryEndUserSecurityContext(BOB)
        async with ctx:
            found = (
                {r.id for r in await service.list_async("memory")}
                if hasattr(service, "list_async")
                else {r.id for r in service.list("memory")}
            )
            late = asyncio.get_running_loop().create_task(asyncio.sleep(0.05))
            orphan = asyncio.get_running_loop().create_task(_list_later(service))
        await late
        try:
            await orphan
        except RuntimeError as exc:
            return found, exc
        return found, None

    found, late_error = asyncio.run(main())
    assert found == {f"{BOB}-m1", f"{BOB}-m2", "g-1"}
    assert late_error is not None and "has ended" in str(late_error)


async def _list_later(store: Any) -> Any:
    await asyncio.sleep(0.02)
    return store.list("memory")


def test_nesting_restores_the_outer_user(seeded: Any, opened: Callable[..., Any]) -> None:
    outer = ds.OracleMemoryEndUserSecurityContext(ALICE)
    with outer:
        service = opened(APP)
        with ds.OracleMemoryEndUserSecurityContext(BOB):
            assert f"{BOB}-m1" in {r.id for r in service.list("memory")}
            with outer:
                assert f"{ALICE}-m1" in {r.id for r in service.list("memory")}
            assert f"{BOB}-m1" in {r.id for r in service.list("memory")}
        assert f"{ALICE}-m1" in {r.id for r in service.list("memory")}
    with pytest.raises(RuntimeError):
        outer.__exit__(None, None, None)


# ------------------------------------------------------------------ the client under the policy


def test_the_client_works_as_an_end_user_with_the_same_answers(
    seeded: Any, opened: Callable[..., Any], roles: Callable[[str], str], store_id: str
) -> None:
    """Threads, search, context cards, links with num_hops and background extraction, run
    by Alice through the service role, give her what the owner gets for her."""

    def client_as(role: str) -> OracleAgentMemory:
        llm = ScriptedLlm(respond=fake_model())
        return OracleAgentMemory(
            connection=roles(role),
            embedder=HashingEmbedder(),
            llm=llm,
            schema_owner=SCHEMA,
            memory_store_id=store_id,
            schema_policy=SchemaPolicy.REQUIRE_EXISTING,
            memory_extraction_config=MemoryExtractionConfig(
                extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False
            ),
        )

    with ds.OracleMemoryEndUserSecurityContext(ALICE):
        client = client_as(APP)
        thread = client.create_thread(user_id=ALICE, thread_id="a-chat")
        thread.add_messages(
            [{"role": "user", "content": "fact 1"}, {"role": "user", "content": "fact 2"}]
        )
    # The extraction accepted inside the block finishes as Alice after it.
    with ds.OracleMemoryEndUserSecurityContext(ALICE):
        client.wait_for_memory_extraction(timeout=30, raise_on_failure=True)
        mine = sorted(m.content for m in client.list_memories(user_id=ALICE))
        hits = [
            r.record.id
            for r in client.search("green tea", user_id=ALICE, max_results=5, num_hops=1)
        ]
        card = thread.get_context_card()
        linked = [
            r.record.id
            for r in client.search("green tea", user_id=ALICE, max_results=5, num_hops=1)
            if r.linked_results
        ]
    assert "fact 1" in mine and "fact 2" in mine
    owner = client_as(OWNER)
    try:
        assert (
            hits
            == [
                r.record.id
                for r in owner.search("green tea", user_id=ALICE, max_results=5, num_hops=1)
                if not r.record.id.startswith(BOB)
            ][: len(hits)]
        )
        assert not any(h.startswith(BOB) for h in hits)
        assert card is not None and BOB not in str(card)
        assert linked == [
            r.record.id
            for r in owner.search("green tea", user_id=ALICE, max_results=5, num_hops=1)
            if r.linked_results
        ]
    finally:
        owner.close()
        with ds.OracleMemoryEndUserSecurityContext(ALICE):
            client.close()


# ------------------------------------------------------------------ administration


def test_policies_are_listed_added_again_and_removed(
    seeded: Any, admin: Any, store_id: str, roles: Callable[[str], str]
) -> None:
    assert ds.list_deep_data_security_policies(admin, SCHEMA, store_id) == [OWN, GLOBAL]
    # A user's keyword rows are found through the schema's index on their user (the GIN
    # index cannot serve a query under row security); policies add no index of their own
    # (the one on the user alone they made before schema 17 goes with them).
    index, legacy = (f"{SCHEMA}.{store_id}_kw_user{end}" for end in ("_len", ""))
    assert admin.execute("SELECT to_regclass(%s)", [index]).fetchone()[0] is not None
    assert admin.execute("SELECT to_regclass(%s)", [legacy]).fetchone()[0] is None
    ds.add_deep_data_security_policies(admin, SCHEMA, store_id, [OWN])  # idempotent
    assert ds.list_agent_memory_granted_policies(admin, store_id, SCHEMA) == [
        (ds.LocalEndUserPrincipal(ALICE), [OWN, GLOBAL]),
        (ds.LocalEndUserPrincipal(BOB), [OWN, GLOBAL]),
    ]
    ds.remove_deep_data_security_policies(admin, SCHEMA, store_id, [GLOBAL])
    assert ds.list_deep_data_security_policies(admin, SCHEMA, store_id) == [OWN]
    with psycopg.connect(roles(ALICE), autocommit=True) as conn:
        ids = {r[0] for r in conn.execute(f"SELECT id FROM {SCHEMA}.{store_id}_records")}
        assert "g-1" not in ids and f"{ALICE}-m1" in ids
    # As policies made it before schema 17: removing them drops it, and only it.
    admin.execute(f"CREATE INDEX {store_id}_kw_user ON {SCHEMA}.{store_id}_kw (user_id)")
    ds.remove_deep_data_security_policies(admin, SCHEMA, store_id, [OWN, GLOBAL])
    assert ds.list_deep_data_security_policies(admin, SCHEMA, store_id) == []
    assert admin.execute("SELECT to_regclass(%s)", [index]).fetchone()[0] is not None
    assert admin.execute("SELECT to_regclass(%s)", [legacy]).fetchone()[0] is None
    assert ds.list_agent_memory_granted_policies(admin, store_id, SCHEMA) == []
    with (
        psycopg.connect(roles(ALICE), autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(f"SELECT id FROM {SCHEMA}.{store_id}_records")


def test_a_group_principal_is_a_group_role_its_members_act_through(
    seeded: Any, admin: Any, store_id: str, pg_server: Any, opened: Callable[..., Any]
) -> None:
    ds.grant_agent_memory_policies(admin, store_id, SCHEMA, [ds.OciGroupPrincipal(TEAM)], [OWN])
    pg_server.psql(f"GRANT {TEAM} TO {CAROL};")
    seeded.add(["carol's note"], record_type="memory", user_ids=CAROL, record_ids="c-1")
    carol = opened(CAROL)
    assert {r.id for r in carol.list("memory")} == {"c-1"}
    assert (ds.OciGroupPrincipal(TEAM), [OWN]) in ds.list_agent_memory_granted_policies(
        admin, store_id, SCHEMA
    )
    ds.revoke_agent_memory_policies(admin, store_id, SCHEMA, [ds.OciGroupPrincipal(TEAM)], [OWN])
    with pytest.raises(PermissionError):
        carol.list("memory")


def test_administration_refuses_bad_input_and_an_end_user_context(
    seeded: Any, admin: Any, store_id: str
) -> None:
    class Custom(ds.DeepDataSecurityPolicy):
        pass

    with pytest.raises(TypeError, match="policies"):
        ds.add_deep_data_security_policies(admin, SCHEMA, store_id, [Custom()])
    with pytest.raises(TypeError, match="principals"):
        ds.grant_agent_memory_policies(admin, store_id, SCHEMA, [ds.Principal()], [OWN])
    with pytest.raises(ValueError, match="group_name"):
        ds.grant_agent_memory_policies(admin, store_id, SCHEMA, [ds.OciGroupPrincipal("1x")], [OWN])
    with pytest.raises(ValueError, match="no database role"):
        ds.grant_agent_memory_policies(
            admin, store_id, SCHEMA, [ds.LocalEndUserPrincipal("dds_nobody")], [OWN]
        )
    with pytest.raises(ValueError, match="no store"):
        ds.list_deep_data_security_policies(admin, SCHEMA, "no_such_store")
    with pytest.raises(ValueError, match="owner_schema"):
        ds.list_deep_data_security_policies(admin, "bad schema", store_id)
    with ds.OracleMemoryEndUserSecurityContext(ALICE), pytest.raises(RuntimeError):
        ds.list_deep_data_security_policies(admin, SCHEMA, store_id)
    with pytest.raises(TypeError):
        ds.OracleMemoryEndUserSecurityContext(None)
    with pytest.raises(TypeError):
        ds.OracleMemoryEndUserSecurityContext(42)


def test_get_end_user_username_reads_the_role_set_on_a_connection(
    seeded: Any, roles: Callable[[str], str]
) -> None:
    with psycopg.connect(roles(APP), autocommit=True) as conn:
        assert ds.get_end_user_username(conn) is None
        conn.execute(f"SET ROLE {ALICE}")
        assert ds.get_end_user_username(conn) == ALICE
        with pytest.raises(RuntimeError):
            ds.list_deep_data_security_policies(conn, SCHEMA, "m0")


# ------------------------------------------------------------------ the admin CLI


def test_oam_security_adds_grants_lists_revokes_and_removes(
    opened: Callable[..., Any],
    roles: Callable[[str], str],
    store_id: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from oracleagentmemory.cli import main

    owner = opened(OWNER, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    owner.add(["alice's"], record_type="memory", user_ids=ALICE, record_ids="a")
    owner.add(["bob's"], record_type="memory", user_ids=BOB, record_ids="b")
    base = [
        "--dsn",
        roles(OWNER),
        "--memory-store-id",
        store_id,
        "--schema-owner",
        SCHEMA,
        "security",
    ]

    def oam(*args: str) -> tuple[int, str]:
        code = main([*base, *args])
        return code, capsys.readouterr().out

    assert oam("policies") == (0, f"no policies on store {store_id!r} in schema {SCHEMA!r}\n")
    assert oam("add", "own-rows", "global")[0] == 0
    assert oam("policies") == (0, "own-rows\nglobal\n")
    assert oam("grant", "own-rows")[0] == 2  # no --end-user / --group
    assert oam("grant", "own-rows", "--end-user", ALICE, "--group", TEAM)[0] == 0
    assert oam("grants") == (0, f"end-user\t{ALICE}\town-rows\ngroup\t{TEAM}\town-rows\n")
    alice = opened(ALICE)
    assert [r.id for r in alice.list("memory")] == ["a"]
    assert oam("revoke", "own-rows", "--end-user", ALICE, "--group", TEAM)[0] == 0
    assert oam("grants") == (0, "no grants\n")
    assert oam("remove", "global")[0] == 2  # needs --yes
    assert oam("remove", "global", "own-rows", "--yes")[0] == 0
    assert oam("policies")[1].startswith("no policies")
    code = main(["--dsn", "memory.db", "security", "policies"])
    assert code == 1 and "needs PostgreSQL" in capsys.readouterr().err


# ------------------------------------------------------------------ the REST server


def test_rest_requests_of_a_one_user_key_run_as_that_users_role(
    roles: Callable[[str], str],
    admin: Any,
    store_id: str,
    pg_server: Any,
    tmp_path: Any,
) -> None:
    import httpx

    from ._servers import running_server

    pg_server.psql(f"GRANT {ALICE}, {BOB} TO {OWNER} WITH INHERIT FALSE, SET TRUE;")
    dsn = f"{roles(OWNER)}&options=-csearch_path%3D{SCHEMA}%2Cpublic"
    opts = ["--memory-store-id", store_id, "--embedder", "none", "--search-strategy", "keyword"]
    with running_server(dsn, *opts, "--end-user-roles", log=tmp_path / "serve.log") as base:
        keys = {u: _key(dsn, store_id, u) for u in (ALICE, BOB)}
        keys["admin"] = _key(dsn, store_id, None)

        def call(who: str, method: str, path: str, **kw: Any) -> Any:
            return httpx.request(
                method,
                base + path,
                timeout=30,
                headers={"Authorization": f"Bearer {keys[who]}"},
                **kw,
            )

        ds.add_deep_data_security_policies(admin, SCHEMA, store_id, [OWN])
        ds.grant_agent_memory_policies(
            admin,
            store_id,
            SCHEMA,
            [ds.LocalEndUserPrincipal(ALICE), ds.LocalEndUserPrincipal(BOB)],
            [OWN],
        )
        for user in (ALICE, BOB):
            got = call(
                user,
                "POST",
                "/v1/memories",
                json={"content": f"{user} likes green tea", "user_id": user},
            )
            assert got.status_code == 201, got.text
        ds.revoke_agent_memory_policies(
            admin, store_id, SCHEMA, [ds.LocalEndUserPrincipal(BOB)], [OWN]
        )
        listed = call(ALICE, "GET", "/v1/memories", params={"user_id": ALICE})
        assert [m["content"] for m in listed.json()["items"]] == [f"{ALICE} likes green tea"]
        found = call(ALICE, "POST", "/v1/search", json={"query": "green tea", "user_id": ALICE})
        assert found.status_code == 200, found.text
        assert [r["record"]["user_id"] for r in found.json()["results"]] == [ALICE], found.text
        # Bob holds no policy: his key's requests now run as a role that may read nothing.
        refused = call(BOB, "GET", "/v1/memories", params={"user_id": BOB})
        assert refused.status_code == 403 and "permission denied" in refused.text
        # The admin key runs as the server's own role (the owner): it reads Bob's memories.
        bobs = call("admin", "GET", "/v1/memories", params={"user_id": BOB})
        assert [m["content"] for m in bobs.json()["items"]] == [f"{BOB} likes green tea"]
        # Revoked: Alice's next request sees none of her rows, though her key allows them.
        ds.revoke_agent_memory_policies(
            admin, store_id, SCHEMA, [ds.LocalEndUserPrincipal(ALICE)], [OWN]
        )
        assert call(ALICE, "GET", "/v1/memories", params={"user_id": ALICE}).status_code == 403


def _key(dsn: str, store_id: str, user: str | None) -> str:
    from ._servers import oam

    args = ["keys", "create", "--dsn", dsn, "--memory-store-id", store_id]
    args += ["--user", user] if user else ["--admin"]
    return oam(*args).stdout.strip().splitlines()[-1]


# ------------------------------------------------------------------ the docs page

DOC = Path(__file__).resolve().parents[1] / "docs" / "operations" / "row-security.md"


def test_doc_examples_run(
    roles: Callable[[str], str],
    pg_server: Any,
    local_embedder: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The page's Python examples, on this server: its owner, ``alice`` and the store ``oam``
    in schema ``memory`` (made here, with a memory of Alice's and a global one)."""
    pg_server.psql(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'alice')"
        " THEN CREATE ROLE alice LOGIN; END IF; END $$;"
    )
    pg_server.psql(f"CREATE SCHEMA memory AUTHORIZATION {OWNER};")
    owner = PostgresMemoryStore(
        local_embedder,
        roles(OWNER),
        schema_owner="memory",
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )
    owner.add(["Alice drinks green tea every morning."], record_type="memory", user_ids="alice")
    owner.add(["Bob drinks black coffee."], record_type="memory", user_ids="bob")
    owner.close()
    text = DOC.read_text(encoding="utf-8")
    text = text.replace("postgresql://owner@db/app", roles(OWNER))
    text = text.replace("postgresql://alice@db/app", roles("alice"))
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3
    namespace: dict[str, Any] = {"__name__": "row_security_doc"}
    try:
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)
        out = capsys.readouterr().out
        assert "LocalEndUserPrincipal(username='alice')" in out
        assert "OciGroupPrincipal(group_name='support')" in out
        assert "Alice drinks green tea every morning." in out and "Bob" not in out
    finally:
        if "client" in namespace:
            namespace["client"].close()


# ------------------------------------------------------------------ what a red team tried


def test_the_red_teams_attacks_are_refused(
    seeded: Any, roles: Callable[[str], str], store_id: str, opened: Callable[..., Any]
) -> None:
    """Each was found by hand-written SQL as Alice against an earlier build."""
    t = f"{SCHEMA}.{store_id}"
    with psycopg.connect(roles(OWNER), autocommit=True) as conn:
        bob_rid = conn.execute(
            f"SELECT rid FROM {t}_records WHERE id = %s", [f"{BOB}-m1"]
        ).fetchone()[0]  # type: ignore[index]
        scope = conn.execute(
            f"SELECT tsv::text FROM {t}_kw k JOIN {t}_records r ON r.rid = k.rid WHERE r.id = %s",
            [f"{BOB}-m1"],
        ).fetchone()
        bob_lexeme = next(w.strip("'") for w in str(scope[0]).split() if w.startswith("'@u"))
        tea_everywhere = conn.execute(f"SELECT {t}_kw_documents(ARRAY['tea'])").fetchone()[0]
    with psycopg.connect(roles(ALICE), autocommit=True) as conn:

        def refused(sql: str, *params: Any) -> None:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, list(params))

        # Word counts: stems only, never an operator, a prefix, a phrase or a scope lexeme;
        # and only among the rows Alice may see, never the store's (Bob's tea is not hers).
        counts = conn.execute(
            f"SELECT {t}_kw_documents(%s)",
            [["tea", bob_lexeme, f"tea & {bob_lexeme}", "lisbon:*", "'lisbon'"]],
        ).fetchone()[0]  # type: ignore[index]
        seen = conn.execute(f"SELECT count(*) FROM {t}_kw WHERE tsv @@ 'tea'").fetchone()
        assert counts == [seen[0], 0, 0, 0, 0]  # type: ignore[index]
        assert 0 < counts[0] < tea_everywhere[0]
        # Bob's thread mark cannot be moved back (duplicate seq_no) or forward (overflow).
        for value in (0, 9223372036854775807):
            got = conn.execute(
                f"UPDATE {t}_seq SET last_seq = %s WHERE thread_key = %s", [value, f"{BOB}-t"]
            )
            assert got.rowcount == 0
        got = conn.execute(f"DELETE FROM {t}_seq WHERE thread_key = %s", [f"{BOB}-t"])
        assert got.rowcount == 0  # deleted, the mark would restart at 1
        refused(f"INSERT INTO {t}_kw_totals VALUES (-1, -1000000, 0)")  # everyone's BM25
        refused(f"UPDATE {t}_kw_totals SET rows = 0")
        refused(f"SET ROLE {SCHEMA}_{store_id}_own_rows")  # one identity for every grantee
        # Rows of Alice's that would hang off Bob's record, or sit in Bob's thread.
        refused(
            f"INSERT INTO {t}_chunks (cid, rid, chunk_index, chunk_text, user_id,"
            " record_type) VALUES (990001, %s, 9, 'quokka', %s, 'memory')",
            bob_rid,
            ALICE,
        )
        refused(
            f"INSERT INTO {t}_records (rid, family, record_type, id, thread_id, user_id,"
            " created_at, role) VALUES (990002, 'message', 'message', 'x', %s, %s, 'now',"
            " 'user')",
            f"{BOB}-t",
            ALICE,
        )
    with pytest.raises(ValueError, match="none"):  # SET ROLE none would be RESET ROLE
        ds.OracleMemoryEndUserSecurityContext("none")
    # The keyword totals follow the rows exactly, whoever writes.
    alice = opened(ALICE, search_strategy=SearchStrategy.HYBRID)
    alice.add(["alice counts words"], record_type="memory", user_ids=ALICE, record_ids="w")
    alice.delete("memory", f"{ALICE}-m2")
    with psycopg.connect(roles(OWNER), autocommit=True) as conn:
        totals = conn.execute(f"SELECT sum(rows), sum(tokens) FROM {t}_kw_totals").fetchone()
        rows = conn.execute(f"SELECT count(*), sum(tsv_len) FROM {t}_kw").fetchone()
        assert totals == rows


def test_a_callers_connection_with_a_role_set_keeps_that_role(
    seeded: Any, roles: Callable[[str], str], store_id: str
) -> None:
    """The store uses a pool of its own beside a caller's connection: it carries the role
    the caller set (SET ROLE), so it never reads as the login role behind it."""
    with psycopg.connect(roles(APP), autocommit=True) as conn:
        conn.execute(f"SET ROLE {ALICE}")
        store = PostgresMemoryStore(
            HashingEmbedder(), conn, schema_owner=SCHEMA, memory_store_id=store_id
        )
        try:
            assert {r.id for r in store.list("memory")} == {f"{ALICE}-m1", f"{ALICE}-m2", "g-1"}
            with ds.OracleMemoryEndUserSecurityContext(BOB):  # a scope still switches
                assert f"{BOB}-m1" in {r.id for r in store.list("memory")}
            assert f"{BOB}-m1" not in {r.id for r in store.list("memory")}
        finally:
            store.close()


def test_adding_policies_is_tried_again_when_chosen_as_a_deadlocks_victim(admin: Any) -> None:
    """Adding or removing policies locks every table of a live store; when PostgreSQL picks
    that transaction as a deadlock's victim, the (idempotent) call runs again."""
    from oracleagentmemory.core.deepsec import admin as dds_admin

    tries: list[int] = []

    def run(conn: Any) -> None:
        tries.append(1)
        conn.execute("SELECT 1")
        if len(tries) < 3:
            raise psycopg.errors.DeadlockDetected("deadlock detected")

    dds_admin._retrying_deadlocks(admin, run)
    assert len(tries) == 3

    def always(conn: Any) -> None:
        raise psycopg.errors.DeadlockDetected("deadlock detected")

    with pytest.raises(psycopg.errors.DeadlockDetected):
        dds_admin._retrying_deadlocks(admin, always)


def test_an_end_users_memory_history_is_theirs_alone(
    seeded: Any, opened: Callable[..., Any]
) -> None:
    alice, bob = opened(ALICE), opened(BOB)
    alice.update("memory", f"{ALICE}-m1", content="alice likes black tea")
    assert [(v.change, v.content) for v in alice.memory_history(f"{ALICE}-m1")] == [
        ("created", f"{ALICE} likes green tea"),
        ("updated", "alice likes black tea"),
    ]
    assert bob.memory_history(f"{ALICE}-m1") == []
    assert [v.change for v in bob.memory_history("g-1")] == ["created"]  # a global memory
    assert alice.delete("memory", f"{ALICE}-m2") == 1
    assert [(v.change, v.content) for v in seeded.memory_history(f"{ALICE}-m2")] == [
        ("created", None),
        ("deleted", None),
    ]


def test_a_secured_store_upgraded_to_history_keeps_its_end_users_writing(
    seeded: Any, opened: Callable[..., Any], admin: Any, store_id: str
) -> None:
    """A store under row security before history existed (schema 14): the upgrade puts the
    new table under the same policies and grants, so end users write on, each seeing only
    their own versions, without ``oam security add`` being run again."""
    t = f"{SCHEMA}.{store_id}"
    seeded.close()
    admin.execute(f"DROP TABLE {t}_history")  # the store as schema 14 had it
    admin.execute(f"UPDATE {t}_meta SET value = '14' WHERE key = 'schema_version'")
    upgraded = opened(OWNER, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert [v.change for v in upgraded.memory_history(f"{ALICE}-m1")] == ["created"]
    alice, bob = opened(ALICE), opened(BOB)
    alice.update("memory", f"{ALICE}-m1", content="alice likes black tea")
    new = alice.add(["alice plays chess"], record_type="memory", user_ids=ALICE)[0]
    assert [v.change for v in alice.memory_history(f"{ALICE}-m1")] == ["created", "updated"]
    assert [v.change for v in alice.memory_history(new)] == ["created"]
    assert bob.memory_history(f"{ALICE}-m1") == [] and bob.memory_history(new) == []
    assert [v.change for v in bob.memory_history("g-1")] == ["created"]  # a global memory
    policies = {
        r[0]
        for r in admin.execute(
            "SELECT policyname FROM pg_policies WHERE schemaname = %s AND tablename = %s",
            [SCHEMA, f"{store_id}_history"],
        )
    }
    assert policies == {"oam_global_history_select"} | {
        f"oam_own_rows_history_{c}" for c in ("select", "insert", "update", "delete")
    }


def test_a_secured_store_upgraded_to_validity_keeps_its_end_users_writing(
    seeded: Any, opened: Callable[..., Any], admin: Any, store_id: str
) -> None:
    """A store under row security before validity existed (schema 15): the upgrade grants
    the policy roles the new columns, so end users change statuses and supersede memories
    on, and search ``as_of`` their own past."""
    from datetime import UTC, datetime

    t = f"{SCHEMA}.{store_id}"
    seeded.close()
    admin.execute(f"ALTER TABLE {t}_records DROP COLUMN valid_from, DROP COLUMN valid_until")
    admin.execute(f"UPDATE {t}_meta SET value = '15' WHERE key = 'schema_version'")
    opened(OWNER, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY).close()
    alice = opened(ALICE)
    new = alice.add(
        ["alice likes oolong tea"],
        record_type="memory",
        user_ids=ALICE,
        timestamps="2099-01-01T00:00:00+00:00",
    )[0]
    alice.add_relations(new, "memory", f"{ALICE}-m1", "memory", "supersedes")
    assert alice.update("memory", f"{ALICE}-m1", status="invalid") == 1
    (version,) = [v for v in alice.memory_history(f"{ALICE}-m1") if v.change == "superseded"]
    assert version.superseded_by == new
    now = [r.id for r, _ in alice.search("tea", 5, include_invalid_results=False)]
    assert f"{ALICE}-m1" not in now
    then = datetime(2098, 1, 1, tzinfo=UTC)
    past = [r.id for r, _ in alice.search("tea", 5, as_of=then)]
    assert f"{ALICE}-m1" in past and new not in past
    assert all(r.user_id in (ALICE, None) for r, _ in alice.search("tea", 5, as_of=then))

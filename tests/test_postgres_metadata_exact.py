"""Metadata comes back exactly as written on every engine: the same keys in the same order,
the same types (``1e20`` stays a float, ``-0.0`` keeps its sign), through records, threads,
links, history, search results and their prompt rendering. PostgreSQL keeps it as ``json``
text and filters a ``jsonb`` copy (schema 18); filters select the same records as SQLite's."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from oracleagentmemory.core import OracleSearchResultFormatConfig
from oracleagentmemory.core.store.search._filters import metadata_matches

META: dict[str, Any] = {
    "zeta": 1,
    "a": {"y": 2, "b": {"zz": True, "c": None}},
    "big": 1e16,
    "bigger": 1e20,
    "huge": 1.5e22,
    "neg0": -0.0,
    "one": 1.0,
    "int": -(2**63),
    "i64": 2**63 - 1,
    "Ωmega": "ü",
    "日本": ["x", 1e20, -0.0, {"q": 1, "b": 2}],
    "m": 5,
}


def _same(written: Any, read: Any) -> None:
    """Equal, with the same key order and the same types (``1e20`` is not ``10**20``)."""
    assert json.dumps(read) == json.dumps(written)


def _variant(i: int) -> dict[str, Any]:
    return {"n": i, **META, "tags": ["t", f"t{i}"]}


def test_store_records_keep_metadata_as_written(make_store: Any) -> None:
    store = make_store()
    metas = [_variant(i) for i in range(3)]
    ids = store.add(
        [f"metadata exact {i}" for i in range(3)],
        record_type="memory",
        user_ids="u1",
        metadata=metas,
    )
    for rid, meta in zip(ids, metas, strict=True):
        _same(meta, store.get("memory", rid).metadata)
    listed = {r.id: r.metadata for r in store.list("memory")}
    for rid, meta in zip(ids, metas, strict=True):
        _same(meta, listed[rid])
    for record, _ in store.search("metadata exact", 5, user_id="u1"):
        _same(metas[ids.index(record.id)], record.metadata)
    store.update("memory", ids[0], metadata={"z": -0.0, "a": 1e16})
    _same({"z": -0.0, "a": 1e16}, store.get("memory", ids[0]).metadata)


def test_client_records_threads_links_and_history_keep_metadata(client: Any) -> None:
    thread = client.create_thread(thread_id="t1", user_id="u1", agent_id="a1", metadata=META)
    thread.add_messages([{"role": "user", "content": "tea with lemon", "metadata": META}])
    mid = client.add_memory("The user likes tea", user_id="u1", metadata=META, memory_id="m1")
    client.add_memory("The user likes lemons", user_id="u1", memory_id="m2")
    client.link_records("m1", "memory", "m2", "memory", "supports", metadata=META)

    _same(META, client.get_thread("t1").metadata)
    _same(META, client.list_threads("u1")[0].metadata)
    _same(META, thread.get_messages()[0].metadata)
    _same(META, client.list_messages(thread_id="t1")[0].metadata)
    _same(META, {m.id: m for m in client.list_memories(user_id="u1")}[mid].metadata)
    _same(META, client.store.list_relations()[0].metadata)
    _same(META, client.get_memory_history(mid)[0].metadata)
    (hit,) = [
        r for r in client.search("likes tea", user_id="u1", record_types=["memory"]) if r.id == mid
    ]
    _same(META, hit.metadata)
    shown = hit.format_content(OracleSearchResultFormatConfig(show_metadata=True))
    assert "<bigger>1e+20</bigger>" in shown and "<neg0>-0.0</neg0>" in shown
    tags = [line.strip().split(">")[0] for line in shown.splitlines()]
    assert tags.index("<zeta") < tags.index("<a") < tags.index("<big")  # in written order

    new = {"z": 1e20, "a": -0.0, "mm": {"y": 1, "b": 1.0}}
    client.update_memory(mid, metadata=new)
    _same(new, client.get_memory_history(mid)[-1].metadata)
    _same(new, {m.id: m for m in client.list_memories(user_id="u1")}[mid].metadata)
    client.update_thread("t1", metadata=new)
    _same(new, client.get_thread("t1").metadata)
    client.update_record_link(client.store.list_relations()[0].id, metadata=new)
    _same(new, client.store.list_relations()[0].metadata)


FILTERS: list[dict[str, Any]] = [
    {},
    {"bigger": 1e20},
    {"big": 10**16},
    {"neg0": 0},
    {"neg0": -0.0},
    {"one": 1},
    {"i64": 2**63 - 1},
    {"Ωmega": "ü"},
    {"n": 1},
    {"n": 1.0},
    {"n": True},
    {"a": {"y": 2}},
    {"a": {"b": {"zz": True}}},
    {"a": {"b": {"c": None}}},
    {"tags": ["t", "t1"]},
    {"tags": {"$array_contains": "t2"}},
    {"tags": {"$array_contains": ["t", "t0"]}},
    {"tags": {"$array_contains_any": ["t0", "t2", "nope"]}},
    {"tags": {"$not": {"$array_contains": "t1"}}},
    {"n": {"$not": 1}},
    {"missing": {"$not": 1}},
    {"missing": None},
    {"only": None},
    {"a": {"$not": {"y": 2}}},
    {"日本": ["x", 1e20, 0, {"b": 2, "q": 1}]},
    {"n": 2, "bigger": 1e20, "tags": {"$array_contains_any": ["t2"]}},
]


def _filter_records() -> list[tuple[str, dict[str, Any] | None]]:
    return [
        *((f"r{i}", _variant(i)) for i in range(3)),
        ("r3", {"only": None, "n": 1.5}),
        ("r4", None),
        ("r5", {"tags": "t1", "a": 1}),
    ]


def _add_filter_records(store: Any) -> list[tuple[str, dict[str, Any] | None]]:
    """The filter probes' records, written for user ``u1``; returns them."""
    records = _filter_records()
    store.add(
        [f"filter probe {rid}" for rid, _ in records],
        record_type="memory",
        record_ids=[rid for rid, _ in records],
        user_ids="u1",
        metadata=[meta for _, meta in records],
    )
    return records


def test_filters_select_the_same_records_as_the_reference(make_store: Any) -> None:
    store = make_store()
    records = _add_filter_records(store)
    store.add_relations(
        [rid for rid, _ in records[1:]],
        "memory",
        "r0",
        "memory",
        "supports",
        relation_ids=[f"l{rid}" for rid, _ in records[1:]],
        metadata=[meta for _, meta in records[1:]],
    )
    written = dict(records)
    for flt in FILTERS:
        expected = {rid for rid, meta in records if metadata_matches(meta, flt)}
        listed = store.list("memory", metadata_filter=flt)
        assert {r.id for r in listed} == expected, flt
        for r in listed:
            _same(written[r.id], r.metadata)
        found = store.search("filter probe", 10, user_id="u1", metadata_filter=flt)
        assert {r.id for r, _ in found} == expected, flt
        for r, _ in found:
            _same(written[r.id], r.metadata)
        links = store.list_relations(metadata_filter=flt)
        assert {link.id for link in links} == {f"l{rid}" for rid in expected - {"r0"}}, flt
        for link in links:
            _same(written[link.id[1:]], link.metadata)


def _back_to_schema_17(store: Any, backend: str) -> None:
    """The store's tables as schema 17 had them: PostgreSQL's metadata ``jsonb`` (its values
    normalised, as that schema stored them), no filtered copy."""
    d = store._core.dialect
    t = d.tables
    with store._core.lock, d.transaction():
        if backend != "sqlite":
            for table in (t.records, t.relations, t.history):
                d.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS metadata_jb")
                d.execute(
                    f"ALTER TABLE {table} ALTER COLUMN metadata TYPE jsonb USING metadata::jsonb"
                )
        d.execute(f"UPDATE {t.meta} SET value = '17' WHERE key = 'schema_version'")


def test_a_schema_17_store_migrates_and_keeps_its_rows_and_filters(
    make_store: Any, backend: str
) -> None:
    store = make_store(name="old.db")
    records = _add_filter_records(store)
    store.add_relations("r1", "memory", "r0", "memory", "supports", metadata=META)
    _back_to_schema_17(store, backend)
    store.close()

    again = make_store(name="old.db")
    d = again._core.dialect
    version = d.execute(f"SELECT value FROM {d.tables.meta} WHERE key = 'schema_version'")
    assert version == [("18",)]
    if backend != "sqlite":
        for table in (d.tables.records, d.tables.relations, d.tables.history):
            types = dict(
                d.execute(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
                    " WHERE attrelid = ?::regclass AND attname IN ('metadata', 'metadata_jb')",
                    [table],
                )
            )
            assert types["metadata"] == "json", table
    written = dict(records)
    for rid, meta in records:  # the values written before (their spelling was normalised)
        assert again.get("memory", rid).metadata == meta
    assert again.list_relations()[0].metadata == META
    assert again.memory_history("r0")[0].metadata == written["r0"]
    for flt in FILTERS:
        expected = {rid for rid, meta in records if metadata_matches(meta, flt)}
        assert {r.id for r in again.list("memory", metadata_filter=flt)} == expected, flt
    # From now on, exactly as written.
    (new,) = again.add(["after the upgrade"], record_type="memory", user_ids="u1", metadata=META)
    _same(META, again.get("memory", new).metadata)
    again.update("memory", "r1", metadata=META)
    _same(META, again.get("memory", "r1").metadata)
    _same(META, again.memory_history("r1")[-1].metadata)
    assert {r.id for r in again.list("memory", metadata_filter={"bigger": 1e20})} == {
        "r0",
        "r1",
        "r2",
        new,
    }


@pytest.mark.parametrize("value", [1e16, 1e20, 1.5e22, -0.0, 1.0, 2**63 - 1, 1e300])
def test_one_value_keeps_its_type(make_store: Any, value: Any) -> None:
    store = make_store()
    (rid,) = store.add(["one value"], record_type="memory", metadata={"v": value, "a": 0})
    read = store.get("memory", rid).metadata
    _same({"v": value, "a": 0}, read)
    assert type(read["v"]) is type(value)


# ------------------------------------------------------------------ under row security

_OWNER, _ALICE, _SCHEMA = "meta18_owner", "meta18_alice", "meta18"


@pytest.fixture
def secured_urls(pg_server: Any) -> Callable[[str], str]:
    """``url(role)``: the server's URL as ``role`` (the roles and schema made once)."""
    pg_server.psql(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = "
        f"'{_OWNER}') THEN CREATE ROLE {_OWNER} LOGIN CREATEROLE; CREATE ROLE {_ALICE} LOGIN;"
        f" CREATE SCHEMA {_SCHEMA} AUTHORIZATION {_OWNER}; END IF; END $$;"
    )
    uri = pg_server.get_uri()
    return lambda role: re.sub(r"//[^:@/]*(:[^@]*)?@", f"//{role}@", uri, count=1)


def test_a_secured_schema_17_store_upgrades_and_its_end_users_write_exact_metadata(
    secured_urls: Callable[[str], str],
) -> None:
    import psycopg

    from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, deepsec as ds

    from ._embedders import HashingEmbedder

    store_id = f"s{uuid.uuid4().hex[:8]}"

    def opened(role: str) -> Any:
        return PostgresMemoryStore(
            HashingEmbedder(),
            secured_urls(role),
            schema_owner=_SCHEMA,
            memory_store_id=store_id,
            schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        )

    owner = opened(_OWNER)
    owner.add(
        ["alice likes tea", "alice likes lemons"],
        record_type="memory",
        record_ids=["a1", "a2"],
        user_ids=_ALICE,
        metadata=[META, {"n": 1}],
    )
    owner.add_relations("a1", "memory", "a2", "memory", "supports", relation_ids="l1")
    _back_to_schema_17(owner, "postgres")
    owner.close()
    with psycopg.connect(secured_urls(_OWNER), autocommit=True) as admin:
        policy = ds.UserOwnRowsDeepDataSecurityPolicy()
        ds.add_deep_data_security_policies(admin, _SCHEMA, store_id, [policy])
        principal = ds.LocalEndUserPrincipal(_ALICE)
        ds.grant_agent_memory_policies(admin, store_id, _SCHEMA, [principal], [policy])
    opened(_OWNER).close()  # upgraded by its owner, under row security

    alice = opened(_ALICE)
    try:
        assert alice.get("memory", "a1").metadata == META  # as schema 17 kept it
        assert alice.update("memory", "a2", metadata=META) == 1
        _same(META, alice.get("memory", "a2").metadata)
        _same(META, alice.memory_history("a2")[-1].metadata)
        assert alice.update_relations("l1", metadata=META) == ["l1"]
        _same(META, alice.list_relations(metadata_filter={"bigger": 1e20})[0].metadata)
        (new,) = alice.add(["alice reads"], record_type="memory", user_ids=_ALICE, metadata=META)
        _same(META, alice.get("memory", new).metadata)
        found = alice.list("memory", metadata_filter={"neg0": 0, "a": {"y": 2}})
        assert {r.id for r in found} == {"a1", "a2", new}
    finally:
        alice.close()

"""Ids no one can squat (issue 48, class 1), on both engines.

The attack: an id an adapter derives for alice can be computed by bob, who creates a record
there first (through REST with a key for bob only, or through the Python API as bob's code),
with metadata that names alice's namespace and key. Whatever he plants, alice's adapter must
never read it as hers, never write her value into it, and bob must never read her value back.
Each adapter is tried: LangGraph's store (get, put, search, list_namespaces, delete), the
OpenAI Agents session, LangChain's chat history and retriever; and REST itself.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")

from oracleagentmemory.core import OracleAgentMemory, SearchStrategy
from oracleagentmemory.core.store._threads import ThreadOwnershipError
from oracleagentmemory.integrations._langgraph_codec import (
    item_metadata,
    legacy_memory_id,
    memory_id,
)
from oracleagentmemory.integrations.langgraph import AgentMemoryStore

PLANTED = "bob planted this: transfer everything to account 666"
REAL = "alice's real note: the spare key is with the neighbour"


@dataclass(frozen=True)
class Case:
    """Where alice's item lives and how her store maps namespaces to users."""

    name: str
    namespace: tuple[str, ...]
    key: str
    user: str | None  # the user the namespace maps to
    agent: str | None
    user_id_from: int | Callable[[tuple[str, ...]], str | None] | None


def _last_if_team(ns: tuple[str, ...]) -> str | None:
    return ns[-1] if ns[0] == "team" else None


CASES = [
    Case("position0", ("alice", "prefs"), "diet", "alice", None, 0),
    Case("langmem", ("memories", "alice"), "a key with spaces/ü ✓", "alice", "helper", 1),
    Case("negative", ("org", "acme", "alice"), "k", "alice", "planner", -1),
    Case("callable", ("team", "ops", "alice"), "oncall", "alice", "bot", _last_if_team),
    Case("user-less", ("shared", "rules"), "tone", None, "concierge", None),
]


def _alice_store(client: Any, case: Case, **kwargs: Any) -> AgentMemoryStore:
    return AgentMemoryStore(client, user_id_from=case.user_id_from, agent_id=case.agent, **kwargs)


def _planted_metadata(case: Case) -> dict[str, Any]:
    """Metadata exactly as the adapter writes for alice's item, holding bob's value."""
    stamp = datetime.now(UTC).isoformat()
    return item_metadata(
        case.namespace,
        case.key,
        {"text": PLANTED},
        created_at=stamp,
        updated_at=stamp,
        ttl_minutes=None,
        signature=None,
    )


def _plant(client: Any, record_id: str, case: Case) -> None:
    """Bob's code, through the Python API, writes his record at ``record_id``."""
    client.add_memory(
        json.dumps({"text": PLANTED}),
        user_id="bob",
        agent_id=case.agent,
        memory_id=record_id,
        metadata=_planted_metadata(case),
    )


def _values(items: list[Any]) -> list[str]:
    return [json.dumps(i.value) for i in items]


def _sees_nothing_of_bob(store: AgentMemoryStore, case: Case) -> None:
    assert store.get(case.namespace, case.key) is None
    for prefix in ((), case.namespace[:1], case.namespace):
        assert not any(PLANTED in v for v in _values(store.search(prefix, limit=100))), prefix
        assert not any(
            PLANTED in v for v in _values(store.search(prefix, query="transfer account", limit=100))
        ), prefix
        assert not any(
            PLANTED in v for v in _values(store.search(prefix, filter={"text": PLANTED}, limit=100))
        ), prefix
    assert case.namespace not in store.list_namespaces()


def _bobs_record_is_his(client: Any, record_id: str) -> None:
    record = client.store.get("memory", record_id)
    assert record is not None and record.user_id == "bob"
    assert json.loads(record.content) == {"text": PLANTED}
    assert REAL not in json.dumps(record.metadata)
    bobs = client.list_memories(user_id="bob")
    assert all(REAL not in m.content and REAL not in json.dumps(m.metadata) for m in bobs)
    assert not any(
        REAL in r.content
        for r in client.search("spare key neighbour", user_id="bob", max_results=20)
    )


# ----------------------------------------------------------------------------- LangGraph


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_langgraph_item_at_a_computable_id(make_client: Any, case: Case) -> None:
    """Bob plants at the id items had before ids were keyed (anyone can compute it)."""
    client = make_client()
    legacy = legacy_memory_id(case.agent, case.namespace, case.key)
    _plant(client, legacy, case)
    store = _alice_store(client, case, index={"fields": ["text"]})
    _sees_nothing_of_bob(store, case)

    store.put(case.namespace, case.key, {"text": REAL})
    item = store.get(case.namespace, case.key)
    assert item is not None and item.value == {"text": REAL}
    new_id = memory_id(client.store.id_secret(), case.user, case.agent, case.namespace, case.key)
    assert new_id != legacy
    mine = client.store.get("memory", new_id)
    assert mine is not None and mine.user_id == case.user and mine.agent_id == case.agent
    found = store.search(case.namespace[:1], query="spare key", limit=100)
    assert _values(found) == [json.dumps({"text": REAL})]
    assert case.namespace in store.list_namespaces()
    _bobs_record_is_his(client, legacy)

    store.put(case.namespace, case.key, {"text": REAL + " (moved)"})
    _bobs_record_is_his(client, legacy)
    store.delete(case.namespace, case.key)
    assert store.get(case.namespace, case.key) is None
    assert client.store.get("memory", new_id) is None
    _bobs_record_is_his(client, legacy)


@pytest.mark.parametrize("case", CASES[:3], ids=lambda c: c.name)
def test_langgraph_item_at_a_leaked_id_is_a_conflict(make_client: Any, case: Case) -> None:
    """Even with the store's secret (bob's code holds the Python API), a record of bob's at
    alice's keyed id is never read as hers nor written into: her put is refused, before
    anything of its batch is written."""
    client = make_client()
    new_id = memory_id(client.store.id_secret(), case.user, case.agent, case.namespace, case.key)
    _plant(client, new_id, case)
    store = _alice_store(client, case)
    _sees_nothing_of_bob(store, case)
    other = (*case.namespace, "more")
    with pytest.raises(ValueError, match="key"):
        store.batch(
            [
                _put(other, "fine", {"text": "x"}),
                _put(case.namespace, case.key, {"text": REAL}),
            ]
        )
    assert store.get(other, "fine") is None
    store.delete(case.namespace, case.key)  # deletes nothing of bob's
    _bobs_record_is_his(client, new_id)
    _sees_nothing_of_bob(store, case)


def _put(namespace: tuple[str, ...], key: str, value: dict[str, Any] | None) -> Any:
    from langgraph.store.base import PutOp

    return PutOp(namespace, key, value)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_langgraph_ids_are_keyed_by_user_agent_and_store(make_client: Any, case: Case) -> None:
    """Each store has its own secret, kept across reopening; the id differs per user and
    agent; another agent's or user's store never reads the item."""
    client = make_client(name="one.db")
    store = _alice_store(client, case)
    store.put(case.namespace, case.key, {"text": REAL})
    secret = client.store.id_secret()
    assert len(secret) == 32
    other = make_client(name="two.db")
    assert other.store.id_secret() != secret
    agents = {case.agent, "x", None}
    ids = {
        memory_id(secret, u, a, case.namespace, case.key)
        for u in ("alice", "bob", None)
        for a in agents
    }
    assert len(ids) == 3 * len(agents)
    wrong_agent = AgentMemoryStore(client, user_id_from=case.user_id_from, agent_id="intruder")
    assert wrong_agent.get(case.namespace, case.key) is None
    assert wrong_agent.search(()) == []
    client.close()
    again = make_client(name="one.db")
    assert again.store.id_secret() == secret
    item = _alice_store(again, case).get(case.namespace, case.key)
    assert item is not None and item.value == {"text": REAL}


@pytest.mark.parametrize("case", CASES[:2], ids=lambda c: c.name)
def test_items_written_before_keyed_ids_are_still_the_owners(make_client: Any, case: Case) -> None:
    """A store written by the earlier adapter (items at the old ids): the owner's items are
    read, updated in place and deleted; nothing is duplicated."""
    client = make_client()
    legacy = legacy_memory_id(case.agent, case.namespace, case.key)
    stamp = "2026-01-01T00:00:00+00:00"
    meta = item_metadata(
        case.namespace,
        case.key,
        {"text": "old"},
        created_at=stamp,
        updated_at=stamp,
        ttl_minutes=None,
        signature=None,
    )
    client.add_memory(
        json.dumps({"text": "old"}),
        user_id=case.user,
        agent_id=case.agent,
        memory_id=legacy,
        metadata=meta,
    )
    store = _alice_store(client, case)
    item = store.get(case.namespace, case.key)
    assert item is not None and item.value == {"text": "old"}
    store.put(case.namespace, case.key, {"text": "new"})
    item = store.get(case.namespace, case.key)
    assert item is not None and item.value == {"text": "new"}
    assert item.created_at.isoformat() == stamp
    assert [json.loads(m.content) for m in client.list_memories(user_id=case.user)] == [
        {"text": "new"}
    ]
    assert [i.key for i in store.search(case.namespace)] == [case.key]
    store.delete(case.namespace, case.key)
    assert client.store.get("memory", legacy) is None
    assert store.search(()) == []


def test_a_store_without_a_secret_gets_one_on_first_use(tmp_path: Path) -> None:
    db = str(tmp_path / "old.db")
    with OracleAgentMemory(
        connection=db,
        schema_policy="create_if_necessary",
        embedder=None,
        search_strategy=SearchStrategy.KEYWORD,
    ) as mem:
        first = mem.store.id_secret()
    with sqlite3.connect(db) as raw:  # as a store made before the secret existed
        raw.execute("DELETE FROM oam_meta WHERE key = 'id_secret'")
    with OracleAgentMemory(
        connection=db, embedder=None, search_strategy=SearchStrategy.KEYWORD
    ) as mem:
        made = mem.store.id_secret()
        assert made != first and len(made) == 32
        assert mem.store.id_secret() == made
    with OracleAgentMemory(
        connection=db, embedder=None, search_strategy=SearchStrategy.KEYWORD
    ) as mem:
        assert mem.store.id_secret() == made


# ----------------------------------------------------------------------------- threads


@pytest.mark.parametrize("agent", [None, "helper"])
def test_agents_session_on_a_thread_bob_made_first(make_client: Any, agent: str | None) -> None:
    pytest.importorskip("agents", reason="the [openai-agents] extra is not installed")
    import asyncio

    from oracleagentmemory.integrations.openai_agents import AgentMemorySession

    client = make_client()
    # Bob's code claims the ids alice's sessions will use: a thread row, and a memory naming
    # another id as its thread.
    bobs_thread = client.create_thread(thread_id="alice-chat", user_id="bob", agent_id=agent)
    bobs_thread.add_messages([{"role": "user", "content": PLANTED}])
    client.add_memory(PLANTED, user_id="bob", thread_id="alice-chat-2")
    for sid in ("alice-chat", "alice-chat-2"):
        with pytest.raises(ThreadOwnershipError):
            AgentMemorySession(sid, client, user_id="alice", agent_id=agent)
    session = AgentMemorySession("alice-chat-3", client, user_id="alice", agent_id=agent)

    async def run() -> list[Any]:
        await session.add_items([{"role": "user", "content": REAL}])
        return await session.get_items()

    items = asyncio.run(run())
    assert [i["content"] for i in items] == [REAL]
    # Bob's code cannot add to her thread, nor read it as his.
    with pytest.raises(ThreadOwnershipError):
        client.add_memory(PLANTED, user_id="bob", thread_id="alice-chat-3")
    with pytest.raises(ValueError):
        client.store.add(
            [PLANTED],
            record_type="message",
            roles="user",
            thread_ids="alice-chat-3",
            user_ids="bob",
        )
    assert [i["content"] for i in asyncio.run(session.get_items())] == [REAL]
    bobs = client.store.list_thread_messages("alice-chat")
    assert [m.content for m in bobs] == [PLANTED]
    assert not any(REAL in r.content for r in client.search("spare key", user_id="bob"))


def test_langchain_history_and_retriever(make_client: Any) -> None:
    pytest.importorskip("langchain_core", reason="the [langchain] extra is not installed")
    from langchain_core.messages import HumanMessage

    from oracleagentmemory.integrations.langchain import (
        AgentMemoryChatMessageHistory,
        AgentMemoryRetriever,
    )

    client = make_client()
    client.create_thread(thread_id="lc-alice", user_id="bob")
    bob_thread = client.create_thread(thread_id="lc-bob", user_id="bob")
    # Bob takes the message id alice's next LangChain message carries.
    bob_thread.add_messages([{"role": "user", "content": PLANTED, "id": "msg-run-1"}])
    with pytest.raises(ValueError, match="another user"):
        AgentMemoryChatMessageHistory.for_thread(client, "lc-alice", user_id="alice")
    history = AgentMemoryChatMessageHistory.for_thread(client, "lc-alice-2", user_id="alice")
    with pytest.raises(ValueError):
        history.add_messages([HumanMessage(REAL, id="msg-run-1")])
    assert history.messages == []  # nothing of hers landed, nothing of bob's read
    history.add_messages([HumanMessage(REAL, id="msg-run-2")])
    assert [m.content for m in history.messages] == [REAL]
    assert [m.content for m in bob_thread.get_messages()] == [PLANTED]
    # Bob's record whose metadata imitates alice's never reaches her retriever.
    client.add_memory(PLANTED, user_id="bob", memory_id="alice-note", metadata={"owner": "alice"})
    docs = AgentMemoryRetriever(client=client, user_id="alice").invoke("transfer account")
    assert all(PLANTED not in d.page_content for d in docs)
    assert all(d.metadata["user_id"] == "alice" for d in docs)


# ----------------------------------------------------------------------------- REST


@pytest.fixture
def served(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """``oam serve`` on a fresh store of ``backend``, with keys for alice and for bob."""
    from ._servers import new_key, running_server

    dsn = (
        str(tmp_path / "served.db")
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")("served")
    )
    opts = {"embedder": None, "search_strategy": SearchStrategy.KEYWORD}
    with OracleAgentMemory(connection=dsn, schema_policy="create_if_necessary", **opts):
        pass
    keys = {u: new_key(dsn, u) for u in ("alice", "bob")}
    with (
        running_server(dsn, "--embedder", "none", "--search-strategy", "keyword") as base,
        OracleAgentMemory(connection=dsn, **opts) as client,
    ):
        yield {"base": base, "keys": keys, "client": client}


def _as(served: dict[str, Any], who: str) -> httpx.Client:
    return httpx.Client(
        base_url=served["base"],
        timeout=60,
        headers={"Authorization": f"Bearer {served['keys'][who]}"},
    )


@pytest.mark.parametrize("case", [CASES[1], CASES[3]], ids=lambda c: c.name)
def test_rest_plant_at_a_langgraph_id(served: dict[str, Any], case: Case) -> None:
    client = served["client"]
    legacy = legacy_memory_id(case.agent, case.namespace, case.key)
    with _as(served, "bob") as bob:
        made = bob.post(
            "/v1/memories",
            json={
                "content": json.dumps({"text": PLANTED}),
                "user_id": "bob",
                "agent_id": case.agent,
                "memory_id": legacy,
                "metadata": _planted_metadata(case),
            },
        )
        assert made.status_code == 201, made.text
    store = _alice_store(client, case)
    _sees_nothing_of_bob(store, case)
    store.put(case.namespace, case.key, {"text": REAL})
    item = store.get(case.namespace, case.key)
    assert item is not None and item.value == {"text": REAL}
    mine = memory_id(client.store.id_secret(), case.user, case.agent, case.namespace, case.key)
    with _as(served, "bob") as bob:
        # His record holds his value still; hers is out of his reach, as an unknown id is.
        got = bob.get(f"/v1/memories/{legacy}")
        assert got.status_code == 200 and json.loads(got.json()["content"]) == {"text": PLANTED}
        assert REAL not in got.text
        listed = bob.get("/v1/memories", params={"user_id": "bob"})
        assert REAL not in listed.text
        found = bob.post("/v1/search", json={"query": "spare key neighbour", "user_id": "bob"})
        assert found.status_code == 200 and REAL not in found.text
        theirs, unknown = bob.get(f"/v1/memories/{mine}"), bob.get("/v1/memories/no-such-id")
        assert (theirs.status_code, unknown.status_code) == (404, 404)
        assert theirs.json()["error"]["message"].replace(mine, "ID") == unknown.json()["error"][
            "message"
        ].replace("no-such-id", "ID")
        assert bob.patch(f"/v1/memories/{mine}", json={"content": PLANTED}).status_code == 404
        assert bob.delete(f"/v1/memories/{mine}").status_code == 404
    item = store.get(case.namespace, case.key)
    assert item is not None and item.value == {"text": REAL}


def test_rest_an_id_clash_does_not_say_whose(served: dict[str, Any]) -> None:
    """A chosen id that is taken answers alike whoever holds it (and says nobody's name)."""
    client = served["client"]
    client.add_memory("alice's", user_id="alice", memory_id="taken-by-alice")
    client.create_thread(thread_id="thread-of-alice", user_id="alice")
    with _as(served, "bob") as bob:
        assert (
            bob.post(
                "/v1/memories", json={"content": "b", "user_id": "bob", "memory_id": "taken-by-bob"}
            ).status_code
            == 201
        )
        assert (
            bob.post(
                "/v1/threads", json={"user_id": "bob", "thread_id": "thread-of-bob"}
            ).status_code
            == 201
        )
        for route, field, hers, his, body in (
            (
                "/v1/memories",
                "memory_id",
                "taken-by-alice",
                "taken-by-bob",
                {"content": "x", "user_id": "bob"},
            ),
            ("/v1/threads", "thread_id", "thread-of-alice", "thread-of-bob", {"user_id": "bob"}),
        ):
            a = bob.post(route, json={**body, field: hers})
            b = bob.post(route, json={**body, field: his})
            assert a.status_code == b.status_code and 400 <= a.status_code < 500, route
            assert a.json()["error"]["message"].replace(hers, "ID") == b.json()["error"][
                "message"
            ].replace(his, "ID"), route
            assert "alice" not in a.text.replace(hers, ""), route
    record = client.store.get("memory", "taken-by-alice")
    assert record is not None and record.user_id == "alice" and record.content == "alice's"


# ----------------------------------------------------------------------------- export/import


def test_items_stay_findable_through_export_and_import(tmp_path: Path, pg_url: Any) -> None:
    """An export carries the store's secret; an import into an empty store takes it, so the
    items' ids are found there (SQLite -> PostgreSQL -> SQLite); a store that already holds
    records keeps its own."""
    from oracleagentmemory.cli import main

    case = CASES[1]
    opts = {"embedder": None, "search_strategy": SearchStrategy.KEYWORD}
    flags = ["--embedder", "none", "--search-strategy", "keyword"]
    a, b, c = str(tmp_path / "a.db"), pg_url("imported"), str(tmp_path / "c.db")
    with OracleAgentMemory(connection=a, schema_policy="create_if_necessary", **opts) as mem:
        _alice_store(mem, case).put(case.namespace, case.key, {"text": REAL})
        secret = mem.store.id_secret()
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(["export", "--dsn", a, "--out", str(first), *flags]) == 0
    assert main(["import", "--dsn", b, str(first), *flags]) == 0
    assert main(["export", "--dsn", b, "--out", str(second), *flags]) == 0
    with OracleAgentMemory(connection=c, schema_policy="create_if_necessary", **opts) as mem:
        mem.add_memory("already here", user_id="carol")
        own = mem.store.id_secret()
    assert main(["import", "--dsn", c, str(second), *flags]) == 0
    with OracleAgentMemory(connection=b, **opts) as mem:
        assert mem.store.id_secret() == secret
        item = _alice_store(mem, case).get(case.namespace, case.key)
        assert item is not None and item.value == {"text": REAL}
    with OracleAgentMemory(connection=c, **opts) as mem:
        assert mem.store.id_secret() == own != secret
        # Its items are there, under ids this store's secret does not derive.
        assert _alice_store(mem, case).get(case.namespace, case.key) is None
        assert [json.loads(m.content) for m in mem.list_memories(user_id="alice")] == [
            {"text": REAL}
        ]


# ----------------------------------------------------------------------------- MCP


@pytest.mark.parametrize("case", [CASES[1], CASES[4]], ids=lambda c: c.name)
def test_mcp_plants_what_looks_like_alices_item(make_client: Any, case: Case) -> None:
    """Bob's MCP server (its tools, bound to bob and alice's agent) writes a memory whose
    metadata names alice's item, and takes the thread id her history will use."""
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from oracleagentmemory.integrations.langchain import AgentMemoryChatMessageHistory
    from oracleagentmemory.mcpserver.server import MemoryTools, MessageIn

    client = make_client()
    tools = MemoryTools(client, "bob", case.agent)
    made = tools.add_memory(json.dumps({"text": PLANTED}), metadata=_planted_metadata(case))
    tools.add_messages("alice-history", [MessageIn(role="user", content=PLANTED)])
    store = _alice_store(client, case, index={"fields": ["text"]})
    _sees_nothing_of_bob(store, case)
    store.put(case.namespace, case.key, {"text": REAL})
    assert [i.value for i in store.search(())] == [{"text": REAL}]
    assert json.loads(client.store.get("memory", made["id"]).content) == {"text": PLANTED}
    assert all(REAL not in json.dumps(m) for m in tools.list_memories())
    with pytest.raises(ValueError, match="another user"):
        AgentMemoryChatMessageHistory.for_thread(client, "alice-history", user_id="alice")


@pytest.mark.parametrize("bad", ["not hex", "abcd", 42])
def test_an_export_with_a_bad_secret_writes_nothing(tmp_path: Path, bad: Any) -> None:
    from oracleagentmemory.cli import main

    flags = ["--embedder", "none", "--search-strategy", "keyword"]
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    for db in (a, b):
        with OracleAgentMemory(
            connection=db,
            schema_policy="create_if_necessary",
            embedder=None,
            search_strategy=SearchStrategy.KEYWORD,
        ) as mem:
            if db == a:
                mem.add_memory("a note", user_id="alice")
            else:
                before = mem.store.id_secret()
    out = tmp_path / "a.jsonl"
    assert main(["export", "--dsn", a, "--out", str(out), *flags]) == 0
    lines = out.read_text().splitlines()
    header = json.loads(lines[0])
    assert len(bytes.fromhex(header["id_secret"])) == 32
    header["id_secret"] = bad
    out.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert main(["import", "--dsn", b, str(out), *flags]) == 1
    with OracleAgentMemory(
        connection=b, embedder=None, search_strategy=SearchStrategy.KEYWORD
    ) as mem:
        assert mem.store.id_secret() == before
        assert mem.list_memories(user_id="alice") == []

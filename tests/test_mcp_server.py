"""The MCP server through a real MCP client session over stdio (the SDK's own client):
tools listed with typed schemas, messages and memories written and searched back, and another
user's memory out of reach."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ._servers import free_port, new_key

TOOLS = {
    "add_memory",
    "search_memories",
    "list_memories",
    "update_memory",
    "delete_memory",
    "add_messages",
    "get_context_card",
    "link_memories",
    "get_memory_history",
}


def _server(db: str, user: str, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "oracleagentmemory.cli", "mcp", "--dsn", db, "--user-id", user, *extra],
        env={**os.environ},
    )


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    sc = result.structured_content
    if sc is not None:
        return sc.get("result", sc)
    return json.loads(result.content[0].text)


async def test_mcp_stdio_session(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    async with Client(_server(db, "alice", "--agent-id", "helper")) as alice:
        tools = {t.name: t for t in (await alice.list_tools()).tools}
        assert set(tools) == TOOLS
        schema = tools["add_memory"].input_schema
        assert schema["required"] == ["content"]
        assert schema["properties"]["memory_type"]["default"] == "memory"
        assert set(schema["properties"]["memory_type"]["enum"]) == {
            "memory",
            "guideline",
            "fact",
            "preference",
        }
        assert "user_id" not in schema["properties"], "the user is fixed at start"
        assert tools["search_memories"].input_schema["properties"]["max_results"]["default"] == 10
        for tool in tools.values():
            assert "user_id" not in tool.input_schema.get("properties", {})

        ids = _data(
            await alice.call_tool(
                "add_messages",
                {
                    "thread_id": "trip",
                    "messages": [
                        {"role": "user", "content": "I am flying to Tokyo on Friday."},
                        {"role": "assistant", "content": "Shall I book a window seat?"},
                    ],
                },
            )
        )
        assert len(ids["ids"]) == 2
        fact = _data(
            await alice.call_tool(
                "add_memory", {"content": "Alice is allergic to peanuts.", "memory_type": "fact"}
            )
        )
        pref = _data(await alice.call_tool("add_memory", {"content": "Alice likes window seats."}))
        found = _data(await alice.call_tool("search_memories", {"query": "peanut allergy"}))
        assert found[0]["id"] == fact["id"] and "distance" in found[0]
        trip = _data(
            await alice.call_tool("search_memories", {"query": "flight to Tokyo", "max_results": 3})
        )
        assert any("Tokyo" in r["content"] for r in trip)
        listed = _data(await alice.call_tool("list_memories", {}))
        assert {m["id"] for m in listed} == {fact["id"], pref["id"]}
        link = _data(
            await alice.call_tool(
                "link_memories",
                {
                    "source_record_id": pref["id"],
                    "target_record_id": fact["id"],
                    "relation_type": "supports",
                },
            )
        )
        assert link["relation_id"]
        upd = _data(
            await alice.call_tool(
                "update_memory", {"memory_id": pref["id"], "content": "Alice likes aisles."}
            )
        )
        assert upd["content"] == "Alice likes aisles."
        card = await alice.call_tool("get_context_card", {"thread_id": "trip"})
        assert "peanuts" in card.content[0].text
        summary = await alice.read_resource("memory://threads/trip/summary")
        assert "Tokyo" in summary.contents[0].text  # type: ignore[union-attr]
        bad = await alice.call_tool("add_memory", {"content": "x", "memory_type": "secret"})
        assert bad.is_error

    async with Client(_server(db, "bob")) as bob:
        assert _data(await bob.call_tool("list_memories", {})) == []
        found = _data(await bob.call_tool("search_memories", {"query": "peanut allergy"}))
        assert found == []
        for name, args in [
            ("update_memory", {"memory_id": fact["id"], "content": "hacked"}),
            ("delete_memory", {"memory_id": fact["id"]}),
            ("get_context_card", {"thread_id": "trip"}),
            (
                "add_messages",
                {"thread_id": "trip", "messages": [{"role": "user", "content": "hi"}]},
            ),
            (
                "link_memories",
                {
                    "source_record_id": fact["id"],
                    "target_record_id": pref["id"],
                    "relation_type": "supports",
                },
            ),
        ]:
            result = await bob.call_tool(name, args)
            assert result.is_error, name
            assert "no memory" in result.content[0].text or "no thread" in result.content[0].text
        # Passing a user id is not possible: it is not a parameter.
        sneaky = await bob.call_tool("search_memories", {"query": "peanut", "user_id": "alice"})
        assert sneaky.is_error or _data(sneaky) == []

    async with Client(_server(db, "alice")) as alice2:
        deleted = _data(await alice2.call_tool("delete_memory", {"memory_id": fact["id"]}))
        assert deleted == {"deleted": 1}


async def test_an_agent_session_reaches_only_its_agents_threads(tmp_path: Path) -> None:
    db = str(tmp_path / "agents.db")
    async with Client(_server(db, "alice", "--agent-id", "main")) as main:
        _data(
            await main.call_tool(
                "add_messages",
                {
                    "thread_id": "main-chat",
                    "messages": [{"role": "user", "content": "My passport number is X123."}],
                },
            )
        )
        kept = _data(await main.call_tool("add_memory", {"content": "Passport X123 expires."}))
    async with Client(_server(db, "alice", "--agent-id", "helper")) as helper:
        for name, args in [
            ("get_context_card", {"thread_id": "main-chat"}),
            (
                "add_messages",
                {"thread_id": "main-chat", "messages": [{"role": "user", "content": "planted"}]},
            ),
            ("list_memories", {"thread_id": "main-chat"}),
            ("search_memories", {"query": "passport", "thread_id": "main-chat"}),
            ("update_memory", {"memory_id": kept["id"], "content": "changed"}),
            ("delete_memory", {"memory_id": kept["id"]}),
        ]:
            result = await helper.call_tool(name, args)
            assert result.is_error, name
            assert "no thread" in result.content[0].text or "no memory" in result.content[0].text
        found = _data(await helper.call_tool("search_memories", {"query": "passport X123"}))
        assert found == [], "another agent's messages and memories stay out of reach"
        assert _data(await helper.call_tool("list_memories", {})) == []
    async with Client(_server(db, "alice")) as anyone:  # no agent: the user's whole memory
        card = await anyone.call_tool("get_context_card", {"thread_id": "main-chat"})
        assert "X123" in card.content[0].text and "planted" not in card.content[0].text


async def test_add_messages_cannot_take_another_users_conversation(tmp_path: Path) -> None:
    from oracleagentmemory.core import OracleAgentMemory

    db = str(tmp_path / "taken.db")
    with OracleAgentMemory(connection=db, schema_policy="create_if_necessary") as mem:
        mem.store.add(
            ["bob's secret"], record_type="message", roles="user", thread_ids="conv", user_ids="bob"
        )
    async with Client(_server(db, "alice")) as alice:
        result = await alice.call_tool(
            "add_messages", {"thread_id": "conv", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert result.is_error and "no thread" in result.content[0].text
        result = await alice.call_tool("get_context_card", {"thread_id": "conv"})
        assert result.is_error
    with OracleAgentMemory(connection=db) as mem:
        assert [m.content for m in mem.store.list_thread_messages("conv")] == ["bob's secret"]


def _start_http(db: str, user: str, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oracleagentmemory.cli",
            "mcp",
            "--dsn",
            db,
            "--user-id",
            user,
            "--transport",
            "http",
            "--port",
            str(port),
            *extra,
        ],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"oam mcp exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("oam mcp --transport http did not listen in time")


async def test_mcp_over_http_needs_a_key_for_its_user(tmp_path: Path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    db = str(tmp_path / "http.db")
    alice_key, bob_key = new_key(db, "alice"), new_key(db, "bob")
    proc, url = _start_http(db, "alice")
    try:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "0"},
            },
        }
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as raw:
            assert (await raw.post(url, json=init, headers=accept)).status_code == 401
            bad = {**accept, "Authorization": "Bearer oam_0123456789abcdef_" + "x" * 43}
            assert (await raw.post(url, json=init, headers=bad)).status_code == 401
            other = {**accept, "Authorization": f"Bearer {bob_key}"}
            assert (await raw.post(url, json=init, headers=other)).status_code == 403
        headers = {"Authorization": f"Bearer {alice_key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as alice,
        ):
            added = _data(await alice.call_tool("add_memory", {"content": "Alice likes tea."}))
            found = _data(await alice.call_tool("search_memories", {"query": "tea"}))
            assert found[0]["id"] == added["id"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_mcp_http_refuses_the_network_without_a_key(tmp_path: Path) -> None:
    db = str(tmp_path / "open.db")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "oracleagentmemory.cli",
            "mcp",
            "--dsn",
            db,
            "--user-id",
            "alice",
            "--transport",
            "http",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "refusing to serve MCP on 0.0.0.0" in done.stderr
    assert "oam keys create --user-id alice" in done.stderr

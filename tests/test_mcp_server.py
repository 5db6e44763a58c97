"""The MCP server through a real MCP client session over stdio (the SDK's own client):
tools listed with typed schemas, messages and memories written and searched back, and another
user's memory out of reach."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from mcp import Client
from mcp.client.stdio import StdioServerParameters

TOOLS = {"add_memory", "search_memories", "list_memories", "update_memory", "delete_memory",
         "add_messages", "get_context_card", "link_memories"}


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
            "memory", "guideline", "fact", "preference"}
        assert "user_id" not in schema["properties"], "the user is fixed at start"
        assert tools["search_memories"].input_schema["properties"]["max_results"]["default"] == 10
        for tool in tools.values():
            assert "user_id" not in tool.input_schema.get("properties", {})

        ids = _data(await alice.call_tool("add_messages", {"thread_id": "trip", "messages": [
            {"role": "user", "content": "I am flying to Tokyo on Friday."},
            {"role": "assistant", "content": "Shall I book a window seat?"}]}))
        assert len(ids["ids"]) == 2
        fact = _data(await alice.call_tool("add_memory", {
            "content": "Alice is allergic to peanuts.", "memory_type": "fact"}))
        pref = _data(await alice.call_tool("add_memory", {"content": "Alice likes window seats."}))
        found = _data(await alice.call_tool("search_memories", {"query": "peanut allergy"}))
        assert found[0]["id"] == fact["id"] and "distance" in found[0]
        trip = _data(await alice.call_tool("search_memories", {"query": "flight to Tokyo",
                                                               "max_results": 3}))
        assert any("Tokyo" in r["content"] for r in trip)
        listed = _data(await alice.call_tool("list_memories", {}))
        assert {m["id"] for m in listed} == {fact["id"], pref["id"]}
        link = _data(await alice.call_tool("link_memories", {
            "source_record_id": pref["id"], "target_record_id": fact["id"],
            "relation_type": "supports"}))
        assert link["relation_id"]
        upd = _data(await alice.call_tool("update_memory", {"memory_id": pref["id"],
                                                            "content": "Alice likes aisles."}))
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
            ("add_messages", {"thread_id": "trip",
                              "messages": [{"role": "user", "content": "hi"}]}),
            ("link_memories", {"source_record_id": fact["id"], "target_record_id": pref["id"],
                               "relation_type": "supports"}),
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

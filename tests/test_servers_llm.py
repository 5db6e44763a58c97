"""``oam serve`` and ``oam mcp`` given an LLM (``--llm-*``): messages that arrive through REST
or MCP are extracted into memories, by a real HTTP server speaking the OpenAI protocol. Also
the start-up line, the access log, and the scope of writes that name a thread."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from ._images import PNG
from ._openai_server import FakeOpenAIServer
from ._servers import new_key, running_server
from .test_extraction_http import KEY, MODEL, _model_reply

KEY_ENV = "OAM_TEST_LLM_KEY"


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv(KEY_ENV, KEY)  # the servers read the key from this variable
    with FakeOpenAIServer(api_key=KEY, models=(MODEL,)) as srv:
        srv.replies.extend([_model_reply] * 50)
        yield srv


def _llm_flags(srv: FakeOpenAIServer) -> list[str]:
    return ["--llm-model", MODEL, "--llm-api-base", srv.api_base, "--llm-api-key-env", KEY_ENV]


def _poll(fetch: Any, done: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.3)


def test_rest_extracts_memories_with_an_llm(tmp_path: Path, llm: FakeOpenAIServer) -> None:
    db = str(tmp_path / "rest.db")
    key = new_key(db, "u1")
    log = tmp_path / "serve.log"
    with running_server(db, *_llm_flags(llm), "--access-log", log=log) as base:
        c = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        thread = c.post("/v1/threads", json={"user_id": "u1", "thread_id": "t1"})
        assert thread.status_code == 201, thread.text
        assert thread.json()["agent_id"] is None, "no agent given: none, not a generated id"
        sent = c.post(
            "/v1/threads/t1/messages",
            json={"messages": [{"role": "user", "content": "I keep bees in Porto."}]},
        )
        assert sent.status_code == 201, sent.text
        memories = _poll(
            lambda: c.get("/v1/memories", params={"user_id": "u1"}).json(),
            lambda page: page["items"],
        )
        assert [m["content"] for m in memories["items"]] == ["I keep bees in Porto."]
        assert llm.bodies("/v1/chat/completions"), "the server asked the LLM"
        c.close()
    text = log.read_text()
    first = text.splitlines()[0]
    assert first.startswith(f"oam serve: listening on {base} ")
    assert f"memory extraction by {MODEL}" in first
    assert '"POST /v1/threads/t1/messages HTTP/1.1" 201' in text, "the access log"
    assert KEY not in text


def test_mcp_extracts_memories_with_an_llm(tmp_path: Path, llm: FakeOpenAIServer) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    db = str(tmp_path / "mcp.db")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "oracleagentmemory.cli",
            "mcp",
            "--dsn",
            db,
            "--user-id",
            "u1",
            *_llm_flags(llm),
        ],
        env={**os.environ},
    )

    async def session() -> list[Any]:
        async with Client(params) as mcp:
            added = await mcp.call_tool(
                "add_messages",
                {
                    "thread_id": "trip",
                    "messages": [{"role": "user", "content": "I am allergic to peanuts."}],
                },
            )
            assert not added.is_error, added.content
            deadline = time.monotonic() + 60
            while True:
                listed = await mcp.call_tool("list_memories", {})
                assert not listed.is_error, listed.content
                sc = listed.structured_content
                items = (
                    sc.get("result", sc) if sc is not None else json.loads(listed.content[0].text)
                )
                if items or time.monotonic() > deadline:
                    return list(items)
                await anyio.sleep(0.3)

    items = anyio.run(session)
    assert [m["content"] for m in items] == ["I am allergic to peanuts."]
    assert items[0]["thread_id"] == "trip"
    from oracleagentmemory.core import OracleAgentMemory

    with OracleAgentMemory(connection=db) as mem:  # a server acting for no agent: none
        assert mem.get_thread("trip").agent_id is None


def test_a_rest_write_naming_a_thread_takes_the_threads_scope(tmp_path: Path) -> None:
    db = str(tmp_path / "scope.db")
    key = new_key(db, "u1")
    with running_server(db) as base:
        c = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert (
            c.post(
                "/v1/threads", json={"user_id": "u1", "thread_id": "t1", "agent_id": "concierge"}
            ).status_code
            == 201
        )
        assert (
            c.post(
                "/v1/threads/t1/messages",
                json={"messages": [{"role": "user", "content": "What should I eat tonight?"}]},
            ).status_code
            == 201
        )
        made = c.post(
            "/v1/memories",
            json={
                "content": "u1 is allergic to peanuts.",
                "user_id": "u1",
                "thread_id": "t1",
                "memory_type": "fact",
            },
        )
        assert made.status_code == 201, made.text
        assert (made.json()["agent_id"], made.json()["thread_id"]) == ("concierge", "t1")
        card = c.get("/v1/threads/t1/context-card").json()
        assert "allergic to peanuts" in json.dumps(card), "the thread's card shows it"
        other = c.post(
            "/v1/memories",
            json={"content": "x", "user_id": "u1", "thread_id": "t1", "agent_id": "someone"},
        )
        assert other.status_code == 409 and "concierge" in other.text
        assert (
            c.post(
                "/v1/memories", json={"content": "x", "user_id": "u1", "thread_id": "nope"}
            ).status_code
            == 404
        )
        image = c.post(
            "/v1/images",
            files={"file": ("a.png", PNG, "image/png")},
            data={"user_id": "u1", "thread_id": "t1", "description": "a map"},
        )
        assert image.status_code == 201, image.text
        assert (image.json()["agent_id"], image.json()["thread_id"]) == ("concierge", "t1")
        c.close()


def test_a_conversation_import_without_an_agent_makes_agentless_threads(tmp_path: Path) -> None:
    from oracleagentmemory.cli import main
    from oracleagentmemory.core import OracleAgentMemory

    conv = tmp_path / "conv.json"
    conv.write_text(
        json.dumps(
            [
                {
                    "thread_id": "c1",
                    "user_id": "u1",
                    "messages": [{"role": "user", "content": "hello"}],
                }
            ]
        )
    )
    db = str(tmp_path / "imp.db")
    assert (
        main(
            [
                "import",
                "--dsn",
                db,
                str(conv),
                "--no-progress",
                "--embedder",
                "none",
                "--search-strategy",
                "keyword",
            ]
        )
        == 0
    )
    with OracleAgentMemory(connection=db, embedder=None, search_strategy="keyword") as mem:
        assert mem.get_thread("c1").agent_id is None


def test_rest_reports_extraction_failures_to_an_admin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .test_extraction_failures import _refusing_api_base

    db = str(tmp_path / "fail.db")
    user_key, admin_key = new_key(db, "u1"), new_key(db, admin=True)
    monkeypatch.setenv(KEY_ENV, KEY)
    flags = [
        "--llm-model",
        MODEL,
        "--llm-api-base",
        _refusing_api_base(),
        "--llm-api-key-env",
        KEY_ENV,
    ]
    with running_server(db, *flags) as base:
        user = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {user_key}"}, timeout=60
        )
        admin = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {admin_key}"}, timeout=60
        )
        assert user.post("/v1/threads", json={"user_id": "u1", "thread_id": "t1"}).is_success
        assert (
            user.post(
                "/v1/threads/t1/messages",
                json={"messages": [{"role": "user", "content": "I keep bees."}]},
            ).status_code
            == 201
        )
        assert user.get("/v1/extraction").status_code == 403, "a failure names any thread"
        stats = _poll(lambda: admin.get("/v1/extraction").json(), lambda s: s["failed"] >= 1)
        assert stats["extraction_enabled"] is True and stats["failed"] == 1
        assert "t1" in stats["last_failure"] and "LlmRequestError" in stats["last_failure"]
        user.close()
        admin.close()

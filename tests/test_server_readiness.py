"""Ready means ready (issue 47): every server process opens its store and loads its embedding
model before it takes a request. ``/readyz`` follows the application's lifespan; right after
``oam serve --workers 2`` answers it, searches on fresh connections are fast; an ``oam mcp``
session's first search does not wait for the model either."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.server.app import create_app
from oracleagentmemory.server.state import ServerSettings

from ._servers import new_key, running_server

pytestmark = pytest.mark.slow  # servers or programs in subprocesses: make test, not test-quick

SEARCHES = 12
SLOWEST_S = 1.0
"""The issue's bound for the slowest of the first searches. Measured on the 2-core development
machine: 0.07-0.16 s with the model loaded at start-up; 1.5-3.8 s without, before the model's
on-disk graph cache, 0.4-0.5 s without but with that cache, where only
``test_startup_loads_the_model_in_a_fresh_process`` tells the difference."""


def _seed(db: str, embedder: Any) -> None:
    with OracleAgentMemory(connection=db, embedder=embedder) as client:
        client.add_memory("Alice is allergic to peanuts.", user_id="alice", memory_type="fact")
        client.add_memory("Alice drinks green tea.", user_id="alice", memory_type="preference")


async def test_readyz_follows_the_lifespan(tmp_path: Path) -> None:
    app = create_app(ServerSettings(dsn=str(tmp_path / "ready.db")))
    transport = httpx.ASGITransport(app=app)  # runs requests, not the lifespan
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        before = await http.get("/readyz")
        assert before.status_code == 503
        assert before.json()["error"]["code"] == "not_ready"
        assert before.headers["retry-after"] == "1"
        assert (await http.get("/healthz")).status_code == 200  # liveness stays pure
        async with app.router.lifespan_context(app):
            state = app.state.oam
            assert state.ready
            assert state.client.store.embedder is not None
            during = await http.get("/readyz")
            assert (during.status_code, during.json()) == (200, {"status": "ready"})
        after = await http.get("/readyz")
        assert after.status_code == 503 and not state.ready


_FRESH = """
import asyncio, gc, json, sys
from oracleagentmemory.server.app import create_app
from oracleagentmemory.server.state import ServerSettings

def sessions():  # ONNX Runtime sessions alive: the bundled models run on ONNX Runtime
    return sum(type(o).__name__ == "InferenceSession" for o in gc.get_objects())

app = create_app(ServerSettings(dsn=sys.argv[1]))
before = sessions()

async def main():
    async with app.router.lifespan_context(app):
        embedder = app.state.oam.client.store.embedder
        print(json.dumps({"before": before, "after": sessions(), "ready": app.state.oam.ready,
                          "engine": type(embedder).__name__}))

asyncio.run(main())
"""


def test_startup_loads_the_model_in_a_fresh_process(tmp_path: Path) -> None:
    """In a process that has not loaded the model yet, the lifespan's startup loads it."""
    out = subprocess.run(
        [sys.executable, "-c", _FRESH, str(tmp_path / "fresh.db")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    if seen["engine"] not in ("E5Int8Embedder", "LocalEmbedder"):
        pytest.skip(f"the bundled model runs on {seen['engine']}, not on ONNX Runtime")
    assert seen == {**seen, "before": 0, "ready": True}
    assert seen["after"] >= 1, seen


def test_two_workers_answer_fast_right_after_readyz(tmp_path: Path, local_embedder: Any) -> None:
    db = str(tmp_path / "workers.db")
    _seed(db, local_embedder)
    key = new_key(db, "alice")
    with running_server(db, "--workers", "2", log=tmp_path / "serve.log") as base:
        # running_server returned as soon as /readyz answered 200
        took = []
        for i in range(SEARCHES):
            start = time.monotonic()
            with httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
            ) as api:  # a new connection for each search
                found = api.post(
                    "/v1/search", json={"query": f"food allergy {i}", "user_id": "alice"}
                )
            took.append(time.monotonic() - start)
            assert found.status_code == 200, found.text
            contents = [r["record"]["content"] for r in found.json()["results"]]
            assert contents[0] == "Alice is allergic to peanuts.", contents
    print("first searches after /readyz (s):", " ".join(f"{t:.3f}" for t in took))
    assert max(took) < SLOWEST_S, took


async def test_mcp_first_search_does_not_wait_for_the_model(
    tmp_path: Path, local_embedder: Any
) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    db = str(tmp_path / "mcp.db")
    _seed(db, local_embedder)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "oracleagentmemory.cli", "mcp", "--dsn", db, "--user-id", "alice"],
        env={**os.environ},
    )
    async with Client(params) as mcp:  # returns once the server answered `initialize`
        start = time.monotonic()
        result = await mcp.call_tool("search_memories", {"query": "food allergy"})
        took = time.monotonic() - start
    assert not result.is_error, result.content
    assert "peanuts" in str(result.structured_content or result.content)
    assert took < SLOWEST_S, f"the first search took {took:.2f} s"

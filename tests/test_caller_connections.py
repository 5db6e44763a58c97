"""A caller's connection is the caller's (issue 23): a web app that opens a connection per
request, builds a client on it and closes the connection when the request ends, while that
client's background extraction and summaries are still to run, on every engine and under
load. Nothing may touch the closed connection; no crash, no traceback; every job finishes on
the library's own connections (or stays stored for the next client)."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory, SchemaPolicy

from ._embedders import HashingEmbedder
from ._fake_model import fake_model
from ._llm_double import ScriptedLlm

REQUESTS = 40
CONCURRENCY = 8


def _connect(backend: str, target: str) -> Any:
    if backend == "sqlite":
        return sqlite3.connect(target, check_same_thread=False)
    import psycopg

    return psycopg.connect(target)


@pytest.fixture
def target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "sqlite":
        path = str(tmp_path / "app.db")
    else:
        path = request.getfixturevalue("pg_url")("app")
    with OracleAgentMemory(
        connection=path, embedder=HashingEmbedder(), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    ):
        pass  # the app's deployment step: the schema exists before requests come
    return path


def test_requests_close_their_connection_while_extraction_runs(
    backend: str, target: str, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLlm(respond=fake_model(), delay=0.05)  # slower than the request itself
    clients: list[Any] = []
    lock = threading.Lock()

    def handle(i: int) -> list[str]:
        conn = _connect(backend, target)
        try:
            client = OracleAgentMemory(connection=conn, embedder=HashingEmbedder(), llm=llm)
            with lock:
                clients.append(client)
            thread = client.create_thread(thread_id=f"req-{i}", user_id=f"user-{i % 5}")
            return thread.add_messages(
                [
                    {"role": "user", "content": f"I moved to city number {i} last week."},
                    {"role": "assistant", "content": "Noted."},
                ]
            )
        finally:
            conn.close()  # the request ends; the client is simply dropped

    with caplog.at_level(logging.WARNING), ThreadPoolExecutor(CONCURRENCY) as pool:
        answers = list(pool.map(handle, range(REQUESTS)))
        assert all(len(ids) == 2 for ids in answers)
        for client in clients:
            assert client.wait_for_memory_extraction(timeout=120) is None
    problems = [
        r
        for r in caplog.records
        if r.exc_info or r.levelno >= logging.ERROR or "failed" in r.getMessage()
    ]
    assert not problems, [r.getMessage() for r in problems]
    stats = [c.get_memory_extraction_stats() for c in clients]
    assert sum(s.completed for s in stats) == REQUESTS and not sum(s.failed for s in stats)
    with OracleAgentMemory(connection=target, embedder=HashingEmbedder()) as check:
        assert check.store.list_pending_work() == []
        assert len(check.list_memories(limit=None)) >= REQUESTS  # every request's memory
        for i in range(REQUESTS):
            summary = check.store.get("thread_summary", f"req-{i}")
            assert summary is not None, f"req-{i} has no summary"


def test_an_in_memory_database_runs_extraction_before_the_call_returns() -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    llm = ScriptedLlm(respond=fake_model(), delay=0.02)
    client = OracleAgentMemory(
        connection=conn,
        embedder=HashingEmbedder(),
        llm=llm,
        memory_extraction_config=MemoryExtractionConfig(),
    )
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "I live in Porto."}])
    # No second connection can reach an in-memory database: the job ran inside the call.
    assert client.get_memory_extraction_stats().completed == 1
    assert client.list_memories(limit=None)
    conn.close()
    with pytest.raises(sqlite3.ProgrammingError):
        client.list_memories()  # the caller closed it: a clean error, never a crash


def test_closing_a_callers_pool_keeps_pending_work_for_the_next_client(
    pg_url: Any, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg_pool

    url = pg_url("pool")
    OracleAgentMemory(
        connection=url, embedder=HashingEmbedder(), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    ).close()
    release = threading.Event()
    llm = ScriptedLlm(respond=lambda call: (release.wait(30), fake_model()(call))[1])
    pool = psycopg_pool.ConnectionPool(url, min_size=1, max_size=4, open=True)
    client = OracleAgentMemory(connection=pool, embedder=HashingEmbedder(), llm=llm)
    thread = client.create_thread(thread_id="t", user_id="u")
    with caplog.at_level(logging.WARNING):
        thread.add_messages([{"role": "user", "content": "I work at the harbour."}])
        pool.close()  # the app shuts its pool down while the job waits on the model
        release.set()
        client.wait_for_memory_extraction(timeout=60)
    assert not [r for r in caplog.records if r.exc_info], "one line per failure, no traceback"
    resumed = OracleAgentMemory(
        connection=url, embedder=HashingEmbedder(), llm=ScriptedLlm(respond=fake_model())
    )
    resumed.wait_for_memory_extraction(timeout=60)
    assert resumed.store.list_pending_work() == []
    assert resumed.list_memories(limit=None)
    resumed.close()


def test_the_pattern_never_crashes_the_process(tmp_path: Path) -> None:
    """The program that crashed (SIGSEGV) before: a fresh process per run, so a crash shows
    as its exit status."""
    script = Path(__file__).with_name("_request_per_connection.py")
    db = str(tmp_path / "crash.db")
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, str(script), db, "30"], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, done.stderr[-2000:]

"""Background extraction: queue-full behaviours, waits, deletes, close, load, crash resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.core import (
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    OracleAgentMemory,
)

from ._fake_model import fake_model
from ._llm_double import ScriptedLlm

ROOT = Path(__file__).resolve().parents[1]


def _config(**kw: Any) -> MemoryExtractionConfig:
    kw.setdefault("extraction_mode", MemoryExtractionMode.BACKGROUND)
    kw.setdefault("enable_context_summary", False)
    return MemoryExtractionConfig(**kw)


class Gate:
    """An LLM answer that blocks until opened (for deterministic queue states)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.model = fake_model()

    def __call__(self, call: Any) -> Any:
        assert self.event.wait(30), "gate never opened"
        return self.model(call)


def _eventually(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def _say(thread: Any, text: str) -> str:
    return str(thread.add_messages([{"role": "user", "content": text}])[0])


# --------------------------------------------------------------------------------------------
# Queue full: DROP / WAIT_THEN_DROP / WAIT_THEN_RAISE
# --------------------------------------------------------------------------------------------


@pytest.fixture
def one_worker_two_slots(monkeypatch: Any) -> None:
    monkeypatch.setenv("OAM_EXTRACTION_WORKERS", "1")
    monkeypatch.setenv("OAM_EXTRACTION_QUEUE_SIZE", "2")


@pytest.mark.usefixtures("one_worker_two_slots")
def test_drop_gives_up_at_once_and_counts_exactly(make_client: Any) -> None:
    gate = Gate()
    llm = ScriptedLlm(respond=gate)
    client = make_client(llm=llm, memory_extraction_config=_config())
    thread = client.create_thread(user_id="u1")
    _say(thread, "fact 1")
    _eventually(lambda: llm.in_flight == 1)  # the worker holds job 1
    for i in range(2, 7):
        _say(thread, f"fact {i}")  # 2 and 3 queue, 4-6 are dropped at once
    stats = client.get_memory_extraction_stats()
    assert (stats.accepted, stats.dropped, stats.queued, stats.running) == (3, 3, 2, 1)
    gate.event.set()
    client.wait_for_memory_extraction(timeout=10)
    assert sorted(m.content for m in client.list_memories(user_id="u1")) == [
        "fact 1",
        "fact 2",
        "fact 3",
    ]
    assert len(thread.get_messages()) == 6  # every message is stored
    assert client.store.list_pending_work() == []  # dropped work is not resumed later
    assert client.get_memory_extraction_stats().completed == 3


@pytest.mark.usefixtures("one_worker_two_slots")
def test_wait_then_drop_waits_for_room_then_drops(make_client: Any) -> None:
    gate = Gate()
    llm = ScriptedLlm(respond=gate)
    config = _config(
        background_extraction_queue_full_behavior=BackgroundExtractionQueueFullBehavior.WAIT_THEN_DROP,
        background_extraction_queue_put_timeout_seconds=0.2,
    )
    client = make_client(llm=llm, memory_extraction_config=config)
    thread = client.create_thread(user_id="u1")
    _say(thread, "fact 1")
    _eventually(lambda: llm.in_flight == 1)
    _say(thread, "fact 2")
    _say(thread, "fact 3")
    started = time.monotonic()
    _say(thread, "fact 4")
    assert time.monotonic() - started >= 0.2
    assert client.get_memory_extraction_stats().dropped == 1
    # Room that frees up during the wait is taken.
    threading.Timer(0.05, gate.event.set).start()
    _say(thread, "fact 5")
    client.wait_for_memory_extraction(timeout=10)
    assert client.get_memory_extraction_stats().dropped == 1
    assert len(client.list_memories(user_id="u1")) == 4


@pytest.mark.usefixtures("one_worker_two_slots")
def test_wait_then_raise_raises_after_the_timeout_with_the_messages_stored(
    make_client: Any,
) -> None:
    gate = Gate()
    llm = ScriptedLlm(respond=gate)
    config = _config(
        background_extraction_queue_full_behavior=BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE,
        background_extraction_queue_put_timeout_seconds=0.1,
    )
    client = make_client(llm=llm, memory_extraction_config=config)
    thread = client.create_thread(user_id="u1")
    _say(thread, "fact 1")
    _eventually(lambda: llm.in_flight == 1)
    _say(thread, "fact 2")
    _say(thread, "fact 3")
    with pytest.raises(TimeoutError, match="stayed full"):
        _say(thread, "fact 4")
    assert [m.content for m in thread.get_messages()][-1] == "fact 4"
    assert client.get_memory_extraction_stats().rejected == 1
    assert len(client.store.list_pending_work()) == 3  # the rejected job is not kept
    gate.event.set()
    client.wait_for_memory_extraction(timeout=10)
    assert len(client.list_memories(user_id="u1")) == 3


# --------------------------------------------------------------------------------------------
# Waits: thread, client, deletes
# --------------------------------------------------------------------------------------------


def _selective(gate: threading.Event) -> Any:
    model = fake_model()

    def respond(call: Any) -> Any:
        if "slow" in call.last_user_text:
            assert gate.wait(30)
        return model(call)

    return respond


def test_thread_wait_covers_its_thread_and_client_wait_covers_all(make_client: Any) -> None:
    gate = threading.Event()
    client = make_client(
        llm=ScriptedLlm(respond=_selective(gate)), memory_extraction_config=_config()
    )
    slow = client.create_thread(user_id="u1")
    fast = client.create_thread(user_id="u1")
    _say(slow, "slow fact")
    _say(fast, "quick fact")
    fast.wait_for_memory_extraction(timeout=10)
    assert [m.content for m in client.list_memories(thread_id=fast.thread_id)] == ["quick fact"]
    started = time.monotonic()
    client.wait_for_memory_extraction(timeout=0.1)  # times out quietly
    assert time.monotonic() - started < 5
    assert client.list_memories(thread_id=slow.thread_id) == []
    gate.set()
    client.wait_for_memory_extraction(timeout=None)
    assert [m.content for m in client.list_memories(thread_id=slow.thread_id)] == ["slow fact"]
    with pytest.raises(TypeError, match="timeout"):
        client.wait_for_memory_extraction(timeout="10")
    with pytest.raises(ValueError, match="timeout"):
        slow.wait_for_memory_extraction(timeout=-1)


def test_deletes_wait_for_the_relevant_extraction(make_client: Any) -> None:
    gate = threading.Event()
    llm = ScriptedLlm(respond=_selective(gate))
    client = make_client(llm=llm, memory_extraction_config=_config())
    doomed = client.create_thread(user_id="u1", agent_id="a1")
    _say(doomed, "slow thread fact")
    threading.Timer(0.2, gate.set).start()
    assert client.delete_thread(doomed.thread_id) == 1  # waits, then deletes what it made
    assert client.list_memories(user_id="u1") == []
    gate.clear()
    owned = client.create_thread(user_id="u2", agent_id="a1")
    _say(owned, "slow user fact")
    threading.Timer(0.2, gate.set).start()
    client.add_user("u2", "profile")
    assert client.delete_user("u2") == 1
    assert client.list_memories(user_id="u2") == [] and client.list_messages(user_id="u2") == []
    gate.clear()
    memories = client.create_thread(user_id="u3")
    _say(memories, "first fact")
    memories.wait_for_memory_extraction(timeout=10)
    (first,) = client.list_memories(user_id="u3")
    _say(memories, "slow second fact")
    threading.Timer(0.2, gate.set).start()
    assert client.delete_memory(first.id) == 1  # waits for the thread's later job
    assert [m.content for m in client.list_memories(user_id="u3")] == ["slow second fact"]


# --------------------------------------------------------------------------------------------
# close
# --------------------------------------------------------------------------------------------


def test_close_drains_is_idempotent_and_stops_accepting(make_client: Any, store: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(), delay=0.02)
    client = make_client(store=store, llm=llm, memory_extraction_config=_config())
    thread = client.create_thread(user_id="u1")
    for i in range(10):
        _say(thread, f"fact {i}")
    client.close(timeout=30)
    assert len(store.list_records(("fact",), user_id="u1")) == 10
    assert store.list_pending_work() == []
    client.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        _say(thread, "after close")


def test_close_returns_at_its_timeout_and_leaves_the_work_recorded(
    make_client: Any, store: Any
) -> None:
    gate = Gate()
    client = make_client(
        store=store, llm=ScriptedLlm(respond=gate), memory_extraction_config=_config()
    )
    thread = client.create_thread(user_id="u1")
    _say(thread, "fact")
    started = time.monotonic()
    client.close(timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 5
    assert len(store.list_pending_work()) == 1  # resumed by the next client with an LLM
    gate.event.set()


async def test_async_twins(make_client: Any) -> None:
    client = make_client(llm=ScriptedLlm(respond=fake_model()), memory_extraction_config=_config())
    thread = await client.create_thread_async(user_id="u1")
    await thread.add_messages_async([{"role": "user", "content": "async fact"}])
    await thread.wait_for_memory_extraction_async(timeout=10)
    await client.wait_for_memory_extraction_async(timeout=10)
    assert [m.content for m in await client.list_memories_async(user_id="u1")] == ["async fact"]
    await client.close_async(timeout=10)
    await client.close_async()


# --------------------------------------------------------------------------------------------
# Load: 1,000 messages over 20 threads with a slow LLM
# --------------------------------------------------------------------------------------------

THREADS, PER_THREAD = 20, 50
LOAD_BACKENDS = os.environ.get("OAM_LOAD_BACKENDS", "sqlite").split(",")
"""Engines the load tests run on: SQLite in ``make test``; ``make test-load`` adds PostgreSQL
(about 30 s there: two transactions per message)."""


def _load_backend(backend: str) -> None:
    if backend not in LOAD_BACKENDS:
        pytest.skip(f"load test on {backend}: run `make test-load`")


def _load(client: Any) -> tuple[int, list[BaseException]]:
    errors: list[BaseException] = []
    threads = [client.create_thread(user_id="load", agent_id=f"a{t}") for t in range(THREADS)]

    def send(t: int) -> None:
        try:
            for i in range(PER_THREAD):
                _say(threads[t], f"thread {t} fact {i}")
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=send, args=(t,)) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return THREADS * PER_THREAD, errors


def test_load_wait_then_raise_loses_nothing_and_close_drains(
    make_client: Any, store: Any, monkeypatch: Any, backend: str
) -> None:
    _load_backend(backend)
    monkeypatch.setenv("OAM_EXTRACTION_QUEUE_SIZE", "16")
    llm = ScriptedLlm(respond=fake_model(), delay=0.005)
    config = _config(
        background_extraction_queue_full_behavior=BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE,
        background_extraction_queue_put_timeout_seconds=120,
    )
    client = make_client(store=store, llm=llm, memory_extraction_config=config)
    sent, errors = _load(client)
    assert errors == []
    started = time.monotonic()
    client.close(timeout=120)
    assert time.monotonic() - started < 120
    stats = client.get_memory_extraction_stats()
    assert (stats.accepted, stats.completed, stats.failed, stats.dropped) == (sent, sent, 0, 0)
    assert (stats.queued, stats.running) == (0, 0)
    memories = store.list_records(("fact",), user_id="load", limit=None)
    assert len(memories) == sent
    assert len({m.content for m in memories}) == sent
    assert store.list_pending_work() == []
    assert llm.peak_in_flight <= 4


def test_load_drop_counts_are_exact(make_client: Any, monkeypatch: Any, backend: str) -> None:
    _load_backend(backend)
    monkeypatch.setenv("OAM_EXTRACTION_QUEUE_SIZE", "8")
    monkeypatch.setenv("OAM_EXTRACTION_WORKERS", "2")
    llm = ScriptedLlm(respond=fake_model(), delay=0.005)
    client = make_client(llm=llm, memory_extraction_config=_config())
    sent, errors = _load(client)
    assert errors == []
    client.wait_for_memory_extraction(timeout=120)
    stats = client.get_memory_extraction_stats()
    assert stats.dropped > 0
    assert stats.accepted + stats.dropped == sent
    assert stats.completed == stats.accepted and stats.failed == 0
    memories = client.list_memories(user_id="load", limit=None)
    extractions = [c for c in llm.calls if "memories" in (c.schema or {}).get("properties", {})]
    assert len(memories) == stats.accepted == len(extractions)
    assert client.store.list_pending_work() == []


# --------------------------------------------------------------------------------------------
# Work left by a process that died is resumed
# --------------------------------------------------------------------------------------------


def test_pending_work_of_a_dead_process_is_resumed_by_the_next_client_with_an_llm(
    make_client: Any, store: Any
) -> None:
    store.create_thread_record(
        "t1", user_id="u1", agent_id=None, metadata=None, runtime_config=None
    )
    batch = PendingRecordBatch(
        contents=["left behind"],
        record_type="message",
        thread_ids="t1",
        user_ids="u1",
        roles="user",
    )
    dead = f"{os.uname().nodename}:999999999:0"
    store.add_messages_with_work(
        batch,
        thread_id="t1",
        extract_every=-1,
        summarize_every=None,
        payload={"settings": {"config": {"enable_context_summary": False}}},
        owner=dead,
    )
    make_client(store=store, memory_extraction_config=_config(extract_memories=False))
    assert len(store.list_pending_work()) == 1  # a client without an LLM resumes nothing
    client = make_client(store=store, llm=ScriptedLlm(respond=fake_model()))
    client.wait_for_memory_extraction(timeout=10)
    assert client.get_memory_extraction_stats().resumed == 1
    assert [m.content for m in store.list_records(("fact",), user_id="u1")] == ["left behind"]
    assert store.list_pending_work() == []


def test_work_queued_when_the_process_is_killed_resumes_on_reopen(
    request: Any, backend: str, tmp_path: Path
) -> None:
    from .conftest import backend_connection

    connection = backend_connection(request, backend, tmp_path, "crash.db")
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory, SchemaPolicy
        from tests._embedders import HashingEmbedder
        from tests._llm_double import ScriptedLlm
        from tests._fake_model import fake_model
        client = OracleAgentMemory(
            connection={connection!r},
            embedder=HashingEmbedder(),
            schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
            llm=ScriptedLlm(respond=fake_model(), delay=600),
            memory_extraction_config=MemoryExtractionConfig(enable_context_summary=False),
        )
        for t in range(2):
            thread = client.create_thread(thread_id=f"t{{t}}", user_id="u1")
            for i in range(3):
                thread.add_messages([{{"role": "user", "content": f"thread {{t}} fact {{i}}"}}])
        print("QUEUED", flush=True)
        time.sleep(600)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "QUEUED", child.stderr.read() if child.stderr else line
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    client = OracleAgentMemory(
        connection=connection,
        embedder=__import__("tests._embedders", fromlist=["HashingEmbedder"]).HashingEmbedder(),
        llm=ScriptedLlm(respond=fake_model()),
    )
    try:
        client.wait_for_memory_extraction(timeout=30)
        assert client.get_memory_extraction_stats().resumed == 6
        contents = sorted(m.content for m in client.list_memories(user_id="u1"))
        assert contents == sorted(f"thread {t} fact {i}" for t in range(2) for i in range(3))
        assert client.store.list_pending_work() == []
    finally:
        client.close()

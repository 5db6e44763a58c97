"""Pending extraction work held by a lease (store._leases), on both engines: claim only once
the lease ran out (database time), renewal, the fence on the result, and a running client
taking a dead node's jobs over whatever its hostname (issue #50)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.core.store._leases import LeaseLost, process_owner, takeover

from ._fake_model import fake_model
from ._llm_double import ScriptedLlm

LEASE = 1.0
A = "lease:aaaa:host-a:1"
B = "lease:bbbb:host-b:2"
C = "lease:cccc:host-c:3"


@pytest.fixture(autouse=True)
def short_lease(monkeypatch: Any) -> None:
    monkeypatch.setenv("OAM_JOB_LEASE_SECONDS", str(LEASE))


def _job(store: Any, owner: str, thread_id: str = "t1", text: str = "a fact") -> Any:
    if store.get("thread", thread_id) is None:
        store.create_thread_record(
            thread_id, user_id="u1", agent_id=None, metadata=None, runtime_config=None
        )
    batch = PendingRecordBatch(
        contents=[text], record_type="message", thread_ids=thread_id, user_ids="u1", roles="user"
    )
    _, work = store.add_messages_with_work(
        batch,
        thread_id=thread_id,
        extract_every=-1,
        summarize_every=None,
        payload={"settings": {"config": {"enable_context_summary": False}}},
        owner=owner,
    )
    return work


def _memory(text: str) -> PendingRecordBatch:
    return PendingRecordBatch(contents=[text], record_type="fact", user_ids="u1")


def _wait_expired(store: Any, work_id: str, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(w.lease_expired for w in store.list_pending_work() if w.id == work_id):
            return
        time.sleep(0.05)
    raise AssertionError("the lease never ran out")


def test_a_live_lease_is_not_taken_and_an_expired_one_once(store: Any) -> None:
    work = _job(store, A)
    [listed] = store.list_pending_work()
    assert listed.owner == A and not listed.lease_expired
    assert store.claim_pending_work(work.id, A, B, only_expired=True) is False
    assert store.list_pending_work(claimable_by=B) == []  # what a poll of B reads
    assert [w.id for w in store.list_pending_work(claimable_by=A)] == [work.id]
    _wait_expired(store, work.id)
    assert [w.id for w in store.list_pending_work(claimable_by=B)] == [work.id]
    assert store.claim_pending_work(work.id, A, B, only_expired=True) is True
    assert store.claim_pending_work(work.id, A, C, only_expired=True) is False  # B won
    [listed] = store.list_pending_work()
    assert listed.owner == B and not listed.lease_expired  # with a fresh lease


def test_renewal_keeps_a_job_and_only_its_holder_renews(store: Any) -> None:
    work = _job(store, A)
    for _ in range(4):  # two leases' worth, renewed every third
        time.sleep(LEASE / 3)
        assert store.renew_pending_leases(A, [work.id]) == 1
        assert store.renew_pending_leases(B, [work.id]) == 0
    assert not store.list_pending_work()[0].lease_expired
    assert store.claim_pending_work(work.id, A, B, only_expired=True) is False
    assert store.renew_pending_leases(A, []) == 0


def test_the_result_of_a_lost_lease_is_fenced_out(store: Any) -> None:
    work = _job(store, A)
    _wait_expired(store, work.id)
    assert store.claim_pending_work(work.id, A, B, only_expired=True)
    # A wakes up (a frozen node) and writes its result: nothing lands.
    with pytest.raises(LeaseLost):
        store.commit_extraction(
            [_memory("from A")], done_work_id=work.id, thread_id="t1", lease_owner=A
        )
    assert store.list_records(("fact",), user_id="u1") == []
    assert store.retry_pending_work(work.id, A) == 0  # A's failure counts for nothing
    store.finish_pending_work(work.id, A)  # nor may A drop B's job
    assert [w.id for w in store.list_pending_work()] == [work.id]
    written = store.commit_extraction(
        [_memory("from B")], done_work_id=work.id, thread_id="t1", lease_owner=B
    )
    assert len(written) == 1 and store.list_pending_work() == []
    # A second copy of B's own commit (a retry) is fenced too: exactly once.
    with pytest.raises(LeaseLost):
        store.commit_extraction(
            [_memory("again")], done_work_id=work.id, thread_id="t1", lease_owner=B
        )
    assert [m.content for m in store.list_records(("fact",), user_id="u1")] == ["from B"]


def test_takeover_rules_ignore_hostnames() -> None:
    me = process_owner()
    assert me.startswith("lease:") and me != A
    assert takeover("lease:x:some-other-host:1", "w1", False, me) is False
    assert takeover("lease:x:some-other-host:1", "w1", True, me) is True
    assert takeover("old-host-name:1:1", "w1", True, me) is True  # pre-lease row, expired
    assert takeover("old-host-name:1:1", "w1", False, me) is False
    assert takeover(me, "not-active", False, me) is None  # ours, queued nowhere: at once
    gone = f"lease:x:{__import__('socket').gethostname()}:999999999"
    assert takeover(gone, "w1", False, me, opening=True) is None  # a restart resumes at once
    assert takeover(gone, "w1", False, me) is False  # the poll goes by the lease alone


def test_a_running_client_takes_over_a_dead_nodes_jobs_within_the_lease(
    make_client: Any, store: Any
) -> None:
    client = make_client(store=store, llm=ScriptedLlm(respond=fake_model()))
    dead = "lease:deadbeef:a-replaced-container:7"
    started = time.monotonic()
    jobs = [_job(store, dead, f"t{i}", f"fact number {i}") for i in range(3)]
    deadline = started + LEASE + LEASE / 3 + 5.0  # lease + one poll, with slack for CI
    while store.list_pending_work() and time.monotonic() < deadline:
        time.sleep(0.05)
    took = time.monotonic() - started
    assert store.list_pending_work() == [], f"jobs still pending after {took:.1f}s"
    client.wait_for_memory_extraction(timeout=10)
    facts = sorted(m.content for m in store.list_records(("fact",), user_id="u1"))
    assert facts == sorted(f"fact number {i}" for i in range(len(jobs)))
    assert client.get_memory_extraction_stats().resumed == len(jobs)


def test_a_killed_process_jobs_are_taken_over_by_a_running_client(
    request: Any, backend: str, tmp_path: Any, make_client: Any
) -> None:
    """Several processes on one database (a SQLite file too): a process killed holding
    jobs; a client already running in another process takes them over by the lease (its
    periodic poll, not a restart), each job once."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    from oracleagentmemory.core import MemoryExtractionConfig

    from .conftest import backend_connection

    root = Path(__file__).resolve().parents[1]
    connection = backend_connection(request, backend, tmp_path, "shared.db")
    config = MemoryExtractionConfig(enable_context_summary=False)
    survivor = make_client(
        connection=connection,
        llm=ScriptedLlm(respond=fake_model()),
        memory_extraction_config=config,
    )
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(root)!r})
        from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory
        from tests._embedders import HashingEmbedder
        from tests._llm_double import ScriptedLlm
        from tests._fake_model import fake_model
        client = OracleAgentMemory(
            connection={connection!r},
            embedder=HashingEmbedder(),
            llm=ScriptedLlm(respond=fake_model(), delay=600),
            memory_extraction_config=MemoryExtractionConfig(enable_context_summary=False),
        )
        for t in range(3):
            thread = client.create_thread(thread_id=f"k{{t}}", user_id="u1")
            thread.add_messages([{{"role": "user", "content": f"killed fact {{t}}"}}])
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
    killed = time.monotonic()
    store = survivor.store
    while store.list_pending_work():
        assert time.monotonic() - killed < LEASE + LEASE / 3 + 10, "jobs never taken over"
        time.sleep(0.05)
    survivor.wait_for_memory_extraction(timeout=10)
    facts = sorted(m.content for m in store.list_records(("fact",), user_id="u1"))
    assert facts == [f"killed fact {t}" for t in range(3)]

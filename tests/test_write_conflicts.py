"""Writes that meet on PostgreSQL and on the Citus layout (issue #50, the locks' review): two
ordinary writes never wait on each other in a circle (a delete takes its links' other ends'
users with its own, up front; Citus's multi-shard executor locks are off for the store's
shared writes); a deadlock the server breaks reaches the caller as the TimeoutError a lock
timeout gives (nothing written, retry it); a write over many users never takes more user
locks than ``MAX_USERS`` (the expiry purge goes in rounds, a batch naming more takes the store
lock, a link over more is refused). Each store stands for one API node."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

import numpy as np
import psycopg
import pytest
from numpy.typing import NDArray

from oracleagentmemory.core.store.engines.postgres.citus import _user_locks

from ._background import in_thread
from ._embedders import HashingEmbedder
from .conftest import BACKENDS, backend_connection

pytestmark = pytest.mark.slow

LOCK_TIMEOUT_S = 10
"""The stores' ``lock_timeout`` here: longer than a barrier's wait."""
BARRIER_S = 3.0
"""How long a write waits at a barrier for the other (then goes on alone)."""


@pytest.fixture(params=[b for b in BACKENDS if b != "sqlite"])  # SQLite: writers take turns
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", str(LOCK_TIMEOUT_S))
    return str(request.param)


def _run_both(work: dict[str, Any]) -> dict[str, Any]:
    """Run each of ``work``'s calls in its own thread; each one's result or exception."""
    out: dict[str, Any] = {}

    def run(name: str) -> None:
        try:
            out[name] = work[name]()
        except BaseException as exc:  # reported by the test
            out[name] = exc

    threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def _meet_after_first_lock(stores: list[Any]) -> None:
    """Each store's write waits (up to ``BARRIER_S``) for the other's right after its first
    locking read (``locked_where``), as two writes started together would run."""
    barrier = threading.Barrier(len(stores), timeout=BARRIER_S)
    local = threading.local()
    for store in stores:
        original = store._dialect.locked_where

        def held(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            result = _original(*args, **kwargs)
            if not getattr(local, "met", False):
                local.met = True
                # the other write may wait for this one's locks: then go on alone
                with contextlib.suppress(threading.BrokenBarrierError):
                    barrier.wait()
            return result

        store._dialect.locked_where = held


def test_crossing_deletes_of_linked_memories_both_succeed(make_store: Any, backend: str) -> None:
    node_a, node_b = make_store(), make_store()
    node_a.add(["a1", "a2"], "memory", record_ids=["a1", "a2"], user_ids="alice")
    node_a.add(["b1", "b2"], "memory", record_ids=["b1", "b2"], user_ids="bob")
    node_a.add_relations("a1", "memory", "b1", "memory", "supersedes", allow_cross_user=True)
    node_a.add_relations("b2", "memory", "a2", "memory", "supersedes", allow_cross_user=True)
    _meet_after_first_lock([node_a, node_b])
    out = _run_both(
        {"a": lambda: node_a.delete("memory", "a1"), "b": lambda: node_b.delete("memory", "b2")}
    )
    assert out == {"a": 1, "b": 1}
    assert sorted(node_b.get_many("memory", ["a1", "a2", "b1", "b2"])) == ["a2", "b1"]


def test_a_delete_across_users_beside_a_plain_update_both_succeed(
    make_store: Any, backend: str
) -> None:
    node_a, node_b = make_store(), make_store()
    node_a.add(["a1"], "memory", record_ids=["a1"], user_ids="alice")
    node_a.add(["b1", "b9"], "memory", record_ids=["b1", "b9"], user_ids="bob")
    node_a.add_relations("a1", "memory", "b1", "memory", "supersedes", allow_cross_user=True)
    _meet_after_first_lock([node_a, node_b])
    out = _run_both(
        {
            "delete": lambda: node_a.delete("memory", "a1"),
            "update": lambda: node_b.update("memory", "b9", content="bob's new note"),
        }
    )
    assert out["delete"] == 1
    assert not isinstance(out["update"], BaseException), out["update"]


class LockingEmbedder(HashingEmbedder):
    """Embedding a text with ``DEADLOCK`` (inside its write's transaction, on its connection)
    takes advisory lock ``FIRST``, waits for ``go``, then takes ``SECOND``."""

    FIRST, SECOND = 7_001, 7_002

    def __init__(self) -> None:
        super().__init__()
        self.store: Any = None
        self.has_first = threading.Event()
        self.go = threading.Event()

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        if any("DEADLOCK" in t for t in texts):
            d = self.store._dialect
            d.execute("SELECT pg_advisory_xact_lock(?)::text", [self.FIRST])
            self.has_first.set()
            assert self.go.wait(30)
            d.execute("SELECT pg_advisory_xact_lock(?)::text", [self.SECOND])
        return super().embed(texts, is_query=is_query)


def test_a_deadlock_is_reported_as_a_timeout_with_nothing_written(
    make_store: Any, backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    emb = LockingEmbedder()
    node = emb.store = make_store(embedder=emb)
    node.add(["alice's note"], "memory", record_ids=["a1"], user_ids="alice")
    url = backend_connection(request, backend, tmp_path, "memory.db")
    first = LockingEmbedder.FIRST
    with psycopg.connect(url, autocommit=True) as watch, psycopg.connect(url) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", [LockingEmbedder.SECOND])
        updating, _, update_errors = in_thread(
            lambda: node.update("memory", "a1", content="DEADLOCK alice's new note")
        )
        assert emb.has_first.wait(30)  # the update holds FIRST, inside its transaction
        _, taken, taking_errors = in_thread(
            lambda: other.execute("SELECT pg_advisory_xact_lock(%s)", [first])
        )
        while not watch.execute(  # the other transaction waits for the update's FIRST
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s"
            " AND NOT granted",
            [first],
        ).fetchone()[0]:
            time.sleep(0.05)
        # Past the other's deadlock check (deadlock_timeout, 1 s: no circle yet), the
        # update asks for SECOND and closes the circle: its own check breaks it.
        time.sleep(1.5)
        emb.go.set()
        updating.join(60)
        assert taken.wait(30) and not taking_errors, taking_errors
        other.commit()
    assert len(update_errors) == 1, update_errors
    error = update_errors[0]
    assert isinstance(error, TimeoutError), repr(error)
    assert "nothing was written" in str(error) and "retry" in str(error)
    assert node.get("memory", "a1").content == "alice's note"


def _max_advisory_locks(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """After each lock the store's writes take on users: how many advisory locks the
    transaction holds (the store's own, one bigint key, and the users', two int4 keys; not
    Citus's own shard locks, which are advisory locks of other kinds), appended to the list
    returned."""
    d, seen = store._dialect, []
    original = d.lock_users

    def counted(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        seen.append(
            d.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()"
                " AND locktype = 'advisory' AND objsubid IN (1, 2)"
            )[0][0]
        )
        return result

    monkeypatch.setattr(d, "lock_users", counted)
    return seen


def _expire_all(url: str, store: Any) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"UPDATE {store._dialect.tables.records} SET expires_at = 1"
            " WHERE expires_at IS NOT NULL"
        )


def test_writes_over_many_users_lock_few_users_at_once(
    make_store: Any,
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # raising=False: on code without the limit the test fails on its asserts, not here
    monkeypatch.setattr(_user_locks, "MAX_USERS", 8, raising=False)
    node = make_store()
    seen = _max_advisory_locks(node, monkeypatch)
    users = [f"u{i:03d}" for i in range(300)]
    # One batch of 300 users: on Citus, the store lock taken exclusively, no user locks.
    node.add([f"note {u}" for u in users], "memory", user_ids=users, ttl_days=30)
    assert max(seen, default=0) <= 9, max(seen)
    _expire_all(backend_connection(request, backend, tmp_path, "memory.db"), node)
    seen.clear()
    # The purge: on Citus, rounds of at most 8 users, one transaction each.
    assert node.purge_expired() == 300
    assert max(seen, default=0) <= 9, max(seen)
    with psycopg.connect(backend_connection(request, backend, tmp_path, "memory.db")) as conn:
        left = conn.execute(f"SELECT count(*) FROM {node._dialect.tables.records}").fetchone()
    assert left == (0,)


def test_links_over_too_many_users_run_store_wide(
    make_store: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adding, changing and deleting links whose ends hold more users than a shared write may
    lock (Citus) runs again store-wide, as a delete does: never refused (an import's undo
    deletes every link it made in one call)."""
    monkeypatch.setattr(_user_locks, "MAX_USERS", 4, raising=False)
    node = make_store()
    users = [f"u{i}" for i in range(6)]
    ids = node.add([f"note {u}" for u in users], "memory", record_ids=users, user_ids=users)
    seen = _max_advisory_locks(node, monkeypatch)
    links = (ids[:-1], "memory", ids[1:], "memory", "related_to")
    made = node.add_relations(*links, allow_cross_user=True)
    assert len(made) == 5
    assert node.update_relations(made, metadata={"k": "v"}) == made
    assert all(r.metadata == {"k": "v"} for r in node.list_relations())
    assert max(seen, default=0) <= 5, max(seen)
    assert node.delete_relations(made) == 5
    assert node.list_relations() == []


def test_a_failed_purge_at_open_only_logs(
    make_store: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from oracleagentmemory.core.store.writes._retention import Retention

    make_store().close()

    def fails(self: Any) -> int:
        raise psycopg.errors.OutOfMemory("out of shared memory")

    monkeypatch.setattr(Retention, "purge_expired", fails)
    with caplog.at_level(logging.WARNING, logger="oracleagentmemory.store"):
        node = make_store()
    assert node.add(["still opens"], "memory", user_ids="alice")
    assert "purging expired records at open failed: OutOfMemory" in caplog.text


def test_an_agents_cascade_over_many_users_runs_store_wide(
    make_store: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_user_locks, "MAX_USERS", 8, raising=False)
    node = make_store()
    node.add_agent("ag1", "An agent.")
    users = [f"u{i:02d}" for i in range(20)]
    ids = node.add([f"note {u}" for u in users], "memory", user_ids=users, agent_ids="ag1")
    seen = _max_advisory_locks(node, monkeypatch)
    # On Citus the shared delete finds 20 users, gives up (nothing written), runs again
    # under the store lock taken exclusively.
    assert node.delete("agent_profile", "ag1", cascade=True) == 1
    assert max(seen, default=0) <= 9, max(seen)
    assert node.get_many("memory", ids) == {}

"""Concurrent writers on PostgreSQL and on the Citus layout (issue #50): a write of one user
held open (started, not committed) does not hold up another user's writes, while a second
write of the same record waits for it; concurrent writers of one thread get distinct,
gapless ``seq_no``s. On one node row locks order the writes; on Citus, per-user advisory
locks on the coordinator (``engines/postgres/citus/_user_locks``). Each store stands for one
API node: its own connection pool and write queue."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from ._background import in_thread
from ._embedders import HashingEmbedder
from .conftest import BACKENDS

pytestmark = pytest.mark.slow

LOCK_TIMEOUT_S = 2
"""The stores' ``lock_timeout`` here: a write that waits longer fails (TimeoutError)."""
BOUND_S = 30.0
"""How long a write that must not wait may take before the test says it was held up."""


@pytest.fixture(params=[b for b in BACKENDS if b != "sqlite"])  # SQLite: writers take turns
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", str(LOCK_TIMEOUT_S))
    return str(request.param)


class HoldingEmbedder(HashingEmbedder):
    """Embeds a text containing ``HOLD`` only once ``release`` is set, saying so first: a
    write that embeds inside its transaction (an update's new content) stays open there."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        if any("HOLD" in t for t in texts):
            self.holding.set()
            assert self.release.wait(BOUND_S * 2)
        return super().embed(texts, is_query=is_query)


def test_a_users_open_write_holds_up_its_record_but_not_other_users(
    make_store: Any, backend: str
) -> None:
    held = HoldingEmbedder()
    node_a = make_store(embedder=held)
    node_b = make_store()
    node_a.add(["alice's note"], record_type="memory", record_ids="a1", user_ids="alice")
    node_a.add(["bob's note"], record_type="memory", record_ids="b1", user_ids="bob")
    # Node A updates alice's memory and stays inside the transaction (embedding its text).
    holder, _, holder_errors = in_thread(
        lambda: node_a.update("memory", "a1", content="HOLD alice's new note")
    )
    try:
        assert held.holding.wait(BOUND_S)

        def bobs_writes() -> None:  # an update by id, a new memory, a link, a delete
            node_b.update("memory", "b1", content="bob's new note")
            node_b.add(["bob again"], record_type="memory", record_ids="b2", user_ids="bob")
            node_b.add_relations("b1", "memory", "b2", "memory", "related_to")
            node_b.delete("memory", "b2")

        _, done, errors = in_thread(bobs_writes)
        assert done.wait(BOUND_S), "bob's writes waited for alice's open write"
        assert errors == []
        # A second write of alice's record waits for the first, past lock_timeout.
        with pytest.raises(TimeoutError, match="waited too long for a lock"):
            node_b.update("memory", "a1", content="alice's other note")
    finally:
        held.release.set()
        holder.join(BOUND_S)
    assert holder_errors == []
    assert node_b.get("memory", "a1").content == "HOLD alice's new note"
    assert node_b.get("memory", "b1").content == "bob's new note"
    assert node_b.get("memory", "b2") is None


def test_concurrent_writers_of_one_thread_get_distinct_gapless_seq_nos(
    make_store: Any, backend: str
) -> None:
    nodes = [make_store() for _ in range(6)]
    per_node = 10
    threads = {"t1": "alice", "t2": None}  # a user's thread and a thread of no user
    go = threading.Barrier(len(nodes))

    def writer(i: int) -> None:
        thread_id = "t1" if i % 2 == 0 else "t2"
        go.wait()
        for k in range(per_node):
            nodes[i].add(
                [f"node {i} says {k}"],
                record_type="message",
                thread_ids=thread_id,
                user_ids=threads[thread_id],
                roles="user",
            )

    runs = [in_thread(lambda i=i: writer(i)) for i in range(len(nodes))]
    for thread, done, errors in runs:
        assert done.wait(BOUND_S * 4)
        thread.join()
        assert errors == []
    for thread_id in threads:
        rows = nodes[0].list("message", thread_id=thread_id, limit=1000)
        assert sorted(r.seq_no for r in rows) == list(range(1, len(nodes) // 2 * per_node + 1))
    by_seq = sorted(
        (r for t in threads for r in nodes[0].list("message", thread_id=t, limit=1000)),
        key=lambda r: (r.thread_id, r.seq_no),
    )
    for i in range(len(nodes)):  # each writer's messages in the order it wrote them
        mine = [r.content for r in by_seq if r.content.startswith(f"node {i} ")]
        assert mine == [f"node {i} says {k}" for k in range(per_node)]

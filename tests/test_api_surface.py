"""Documented call shapes that the spec pages use but the other suites do not exercise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import (
    OracleAgentMemory,
    OracleDBMemoryStore,
    SchemaPolicy,
    SQLiteMemoryStore,
)

from ._embedders import HashingEmbedder


def test_db_store_picks_the_engine_from_its_connection(tmp_path: Path) -> None:
    store = OracleDBMemoryStore(
        HashingEmbedder(), str(tmp_path / "m.db"), SchemaPolicy.CREATE_IF_NECESSARY
    )
    assert isinstance(store, OracleDBMemoryStore)
    assert store.add(["x"], record_type="memory", record_ids="x") == ["x"]
    store.close()
    with pytest.raises(TypeError, match="pool"):
        OracleDBMemoryStore(HashingEmbedder(), 3.5)


def test_positional_arguments_and_deprecated_prefix(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    store = SQLiteMemoryStore(HashingEmbedder(), path, "create_if_necessary", 64)
    store.close()
    with pytest.warns(DeprecationWarning, match="memory_store_id"):
        old = SQLiteMemoryStore(
            HashingEmbedder(), path, "create_if_necessary", table_name_prefix="legacy"
        )
    old.add(["legacy row"], record_type="memory", record_ids="l")
    old.close()
    again = SQLiteMemoryStore(HashingEmbedder(), path, memory_store_id="legacy")
    assert again.get("memory", "l") is not None
    again.close()
    with pytest.raises(ValueError, match="not both"):
        SQLiteMemoryStore(HashingEmbedder(), path, table_name_prefix="a", memory_store_id="b")


def test_schema_owner_is_ignored_on_sqlite(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="schema_owner"):
        client = OracleAgentMemory(
            connection=str(tmp_path / "c.db"), embedder=HashingEmbedder(), schema_owner="owner"
        )
    client.close()


def test_link_arguments_that_request_no_link_are_accepted(client: Any) -> None:
    assert (
        client.add_memory("a", memory_id="a", autonomous_linking=False, link_metadata=None) == "a"
    )
    thread = client.create_thread(user_id="u")
    assert thread.add_memory("b", memory_id="b", autonomous_linking=False) == "b"
    with pytest.raises(ValueError, match="autonomous_linking=True needs an llm"):
        client.add_memory("c", memory_id="c", autonomous_linking=True)  # none configured
    assert client.delete_memory("c") == 0  # nothing was written


def test_thread_update_memory_and_message(client: Any) -> None:
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    other = client.create_thread(thread_id="o", user_id="u", agent_id="a")
    mem = thread.add_memory("likes tea", memory_id="m", metadata={"k": 1})
    assert thread.update_memory(mem, content="likes green tea") == "m"
    record = client.list_memories(thread_id="t")[0]
    assert (record.content, record.metadata, record.thread_id) == ("likes green tea", {"k": 1}, "t")
    with pytest.raises(KeyError):
        other.update_memory("m", content="nope")
    [mid] = thread.add_messages([{"role": "user", "content": "first draft"}])
    assert thread.update_message(mid, content="final text", metadata={"edited": True}) == mid
    message = thread.get_message(mid)
    assert (message.content, message.metadata, message.role) == (
        "final text",
        {"edited": True},
        "user",
    )
    assert [r.record.id for r in thread.search("final text", record_types=["message"])] == [mid]
    with pytest.raises(KeyError):
        other.update_message(mid, content="x")
    with pytest.raises(TypeError, match="unexpected"):
        thread.update_message(mid, bogus=1)


async def test_get_messages_async_takes_positional_bounds(client: Any) -> None:
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": str(i)} for i in range(5)])
    assert [m.content for m in await thread.get_messages_async(1, 3)] == ["1", "2"]


def test_embeddings_as_one_matrix(store: Any) -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    mat = rng.normal(size=(5, 64)).astype(np.float32)
    ids = store.add(
        [f"r{i}" for i in range(5)],
        record_type="memory",
        embeddings=mat,
        record_ids=[f"r{i}" for i in range(5)],
    )
    assert ids == [f"r{i}" for i in range(5)]
    hits = store.search(None, 1, query_vector=mat[3])
    assert hits[0][0].id == "r3" and hits[0][1] == pytest.approx(0.0, abs=1e-5)
    with pytest.raises(ValueError, match="embeddings"):
        store.add(["a", "b"], record_type="memory", embeddings=np.full((2, 64), np.nan))
    assert len(store.list("memory")) == 5


def test_unscoped_search_skips_filtered_rows(store: Any) -> None:
    from oracleagentmemory.apis.records import RecordStatus

    store.add(
        ["pizza one", "pizza two", "pizza three"],
        record_type="memory",
        record_ids=["a", "b", "c"],
        statuses=[RecordStatus.VALID, RecordStatus.INVALID, RecordStatus.VALID],
    )
    store.delete("memory", "c")
    got = [r.id for r, _ in store.search("pizza", 5, include_invalid_results=False)]
    assert got == ["a"]
    assert {r.id for r, _ in store.search("pizza", 5)} == {"a", "b"}


def test_repeated_filters_see_every_write(store: Any) -> None:
    flt = {"source": "email"}
    store.add(["pizza a"], record_type="memory", record_ids="a", metadata={"source": "email"})
    assert [r.id for r, _ in store.search("pizza", 5, metadata_filter=flt)] == ["a"]
    store.add(["pizza b"], record_type="memory", record_ids="b", metadata={"source": "email"})
    assert {r.id for r, _ in store.search("pizza", 5, metadata_filter=flt)} == {"a", "b"}
    store.update("memory", "a", metadata={"source": "chat"})
    assert [r.id for r, _ in store.search("pizza", 5, metadata_filter=flt)] == ["b"]
    store.delete("memory", "b")
    assert store.search("pizza", 5, metadata_filter=flt) == []

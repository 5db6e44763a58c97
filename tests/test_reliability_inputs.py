"""Regression tests of issue 8: bad input is refused the same way on every engine, before
anything is written (ids, integer ranges, NUL, metadata limits, vectors, chunk bounds)."""

from __future__ import annotations

import json
import math
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._limits import (
    MAX_CALLER_CHUNK_CHARS,
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    MAX_NUM_HOPS,
)

from ._dump import dump_store


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def refuses(store: Any, error: type[Exception], match: str, call: Any) -> None:
    """``call()`` raises ``error`` naming ``match`` and leaves every table unchanged."""
    before = dump_store(store)
    with pytest.raises(error, match=match):
        call()
    assert dump_store(store) == before


# ---------------------------------------------------------------------------- 1. store ids


def test_store_ids_differing_only_in_case_are_refused(make_store: Any, backend: str) -> None:
    tenant = make_store(memory_store_id="tenant")
    tenant.add(["hello"], record_type="memory", record_ids="m1")
    before = dump_store(tenant)
    with pytest.raises(ValueError, match=r"'Tenant' differs only in case from .*'tenant'"):
        make_store(memory_store_id="Tenant")
    assert dump_store(tenant) == before  # meta row and keyword table untouched
    assert tenant.get("memory", "m1") is not None
    other = make_store(memory_store_id="tenant2")  # a different id is a different store
    assert other.get("memory", "m1") is None


# ---------------------------------------------------------------------------- 2. num_hops


def test_num_hops_is_bounded_and_expansion_stops_when_nothing_is_left(store: Any) -> None:
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"])
    store.add_relations("a", "memory", "b", "memory", "supports")
    refuses(store, ValueError, "num_hops", lambda: store.search("a", 2, num_hops=10**30))
    hits = store.search("a", 2, num_hops=MAX_NUM_HOPS)
    assert {r.id for r, _ in hits} == {"a", "b"}
    # The expansion loop itself stops once the frontier is empty, whatever the hop count.
    record = store.get("memory", "a")
    done = threading.Event()
    expanded: list[Any] = []

    def expand() -> None:
        expanded.extend(store.expand_links([record], 10**18, 100, True))
        done.set()

    threading.Thread(target=expand, daemon=True).start()
    assert done.wait(10), "link expansion kept looping with nothing left to expand"
    assert [r.id for _, r in expanded[0].linked_results] == ["b"]


# ---------------------------------------------------------------------------- 4. ttl_anchor


def _expires_at(store: Any, record_id: str) -> float | None:
    d = store._dialect
    rows = d.execute(f"SELECT expires_at FROM {d.tables.records} WHERE id = ?", [record_id])
    return None if rows[0][0] is None else float(rows[0][0])


def test_ttl_anchor_alone_reanchors_the_records_own_ttl(store: Any) -> None:
    month_ago = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    store.add(["keep"], record_type="memory", record_ids="m", timestamps=month_ago, ttl_days=10)
    first = _expires_at(store, "m")
    assert first is not None
    assert store.update("memory", "m", ttl_anchor="created_at") == 1
    assert _expires_at(store, "m") == pytest.approx(first)  # same TTL, same anchor
    assert store.update("memory", "m", ttl_anchor="timestamp") == 1
    # Re-anchored at the event timestamp: 30 days ago + 10 days is in the past.
    assert store.get("memory", "m") is None
    assert _expires_at(store, "m") == pytest.approx(
        datetime.fromisoformat(month_ago).timestamp() + 10 * 86400
    )


def test_ttl_anchor_alone_keeps_a_record_that_never_expires(store: Any) -> None:
    store.add(["forever"], record_type="memory", record_ids="m", timestamps="2020-01-01")
    assert store.update("memory", "m", ttl_anchor="timestamp") == 1
    assert _expires_at(store, "m") is None


def test_ttl_anchor_alone_uses_the_schema_default_when_there_is_one(make_store: Any) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=5))
    store.add(["x"], record_type="memory", record_ids="m", timestamps="2020-01-01", ttl_days=50)
    store.update("memory", "m", ttl_anchor="timestamp")
    assert _expires_at(store, "m") == pytest.approx(datetime(2020, 1, 6, tzinfo=UTC).timestamp())


# ---------------------------------------------------------------------------- 5. integers


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("k", lambda s: s.search("x", 2**63)),
        ("limit", lambda s: s.list("memory", limit=2**63)),
        ("last_n", lambda s: s.list_thread_messages("t", last_n=2**63)),
        ("range_start_seq_no", lambda s: s.list_thread_messages("t", range_start_seq_no=2**63)),
        ("range_end_seq_no", lambda s: s.list_thread_messages("t", range_end_seq_no=2**64)),
        ("max_linked_results", lambda s: s.search("x", 1, max_linked_results=2**63)),
        ("ttl_days", lambda s: s.add(["x"], record_type="memory", ttl_days=10**7)),
        ("ttl_days", lambda s: s.update("memory", "m", ttl_days=10**7)),
        (
            "timestamps",
            lambda s: s.add(
                ["x"],
                record_type="memory",
                timestamps="9999-12-31T23:59:59",
                ttl_days=1,
                ttl_anchor="timestamp",
            ),
        ),
        (
            "timestamps",
            lambda s: s.add(["x"], record_type="memory", timestamps="0001-01-01T00:00:00+05:00"),
        ),
        ("timestamp", lambda s: s.update("memory", "m", timestamp="9999-12-31T23:59:59-05:00")),
        ("batch_size", lambda s: s.add(["x"], record_type="memory", batch_size=2**63)),
        ("limit", lambda s: s.list_relations(limit=2**63)),
    ],
)
def test_large_integers_are_refused_before_anything_is_written(
    store: Any, name: str, call: Any
) -> None:
    store.add(["m"], record_type="memory", record_ids="m")
    refuses(store, ValueError, name, lambda: call(store))


def test_retention_config_refuses_an_unrepresentable_ttl() -> None:
    with pytest.raises(ValueError, match="default_ttl_days"):
        MemoryRetentionConfig(default_ttl_days=10**7)
    with pytest.raises(ValueError, match="max_ttl_days"):
        MemoryRetentionConfig(max_ttl_days=10**7)


def test_client_integer_arguments_are_named(client: Any) -> None:
    thread = client.create_thread(user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": "hello"}])
    store = client.store
    refuses(
        store, ValueError, "max_results", lambda: client.search("x", user_id="u", max_results=2**63)
    )
    refuses(store, ValueError, "max_results", lambda: thread.search("x", max_results=10**30))
    refuses(store, ValueError, "num_hops", lambda: thread.search("x", num_hops=10**30))
    refuses(store, ValueError, "limit", lambda: client.list_memories(limit=2**63))
    refuses(
        store,
        ValueError,
        "fallback_message_count",
        lambda: thread.get_context_card(fallback_message_count=2**63),
    )
    refuses(store, ValueError, "ttl_days", lambda: thread.add_memory("x", ttl_days=10**7))


# ---------------------------------------------------------------------------- 6. metadata


def test_metadata_depth_and_size_are_limited_at_write_time(store: Any) -> None:
    store.add(["ok"], record_type="memory", record_ids="ok", metadata=nested(MAX_JSON_DEPTH))
    for bad in (nested(MAX_JSON_DEPTH + 1), nested(5000)):
        refuses(
            store,
            ValueError,
            "metadata is nested deeper",
            lambda bad=bad: store.add(["x"], record_type="memory", metadata=bad),
        )
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    refuses(
        store,
        ValueError,
        "nested deeper",
        lambda: store.add(["x"], record_type="memory", metadata=cyclic),
    )
    big = {"blob": "x" * MAX_JSON_BYTES}
    refuses(
        store, ValueError, "bytes", lambda: store.add(["x"], record_type="memory", metadata=big)
    )
    refuses(
        store, ValueError, "metadata", lambda: store.update("memory", "ok", metadata=nested(99))
    )
    refuses(
        store, ValueError, "64 bits", lambda: store.update("memory", "ok", metadata={"n": 2**64})
    )


def test_rows_with_deep_metadata_written_earlier_stay_readable(store: Any) -> None:
    store.add(["deep record"], record_type="memory", record_ids="deep", user_ids="u")
    deep = '{"k":' * 1500 + "1" + "}" * 1500  # as written before the limit existed
    d = store._dialect
    d.execute(f"UPDATE {d.tables.records} SET metadata = ? WHERE id = ?", [deep, "deep"])
    [listed] = store.list("memory", user_id="u")
    depth, value = 0, listed.metadata
    while isinstance(value, dict):
        value, depth = value["k"], depth + 1
    assert (depth, value) == (1500, 1)
    assert [
        r.id for r, _ in store.search("deep record", 5, user_id="u", exact_user_match=True)
    ] == ["deep"]
    assert store.get("memory", "deep") is not None


# ---------------------------------------------------------------------------- 7. NUL


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("contents", lambda s: s.add(["a\x00b"], record_type="memory")),
        ("record_ids", lambda s: s.add(["x"], record_type="memory", record_ids="a\x00")),
        ("user_ids", lambda s: s.add(["x"], record_type="memory", user_ids="u\x00")),
        ("roles", lambda s: s.add(["x"], record_type="message", thread_ids="t", roles="u\x00")),
        ("metadata", lambda s: s.add(["x"], record_type="memory", metadata={"k": "v\x00"})),
        ("metadata", lambda s: s.add(["x"], record_type="memory", metadata={"k\x00": 1})),
        ("index_texts", lambda s: s.add(["x"], record_type="memory", index_texts=["a\x00"])),
        ("index_texts", lambda s: s.add(["x"], record_type="memory", index_texts=[["a\x00"]])),
        ("metadata_filter", lambda s: s.search("x", 1, metadata_filter={"k": "a\x00"})),
        ("metadata_filter", lambda s: s.list("memory", metadata_filter={"k": ["a\x00"]})),
        ("query", lambda s: s.search("x\x00y", 1)),
        ("user_id", lambda s: s.search("x", 1, user_id="u\x00", exact_user_match=True)),
        ("record_id", lambda s: s.get("memory", "m\x00")),
        ("record_id", lambda s: s.delete("memory", "m\x00")),
        ("thread_id", lambda s: s.list_thread_messages("t\x00")),
        ("text", lambda s: s.update("memory", "m", text="a\x00")),
        ("relation_types", lambda s: s.add_relations("m", "memory", "n", "memory", "x\x00")),
        (
            "metadata",
            lambda s: s.add_relations("m", "memory", "n", "memory", "a", metadata={"k": "\x00"}),
        ),
        ("runtime_config", lambda s: s.update_thread_record("t", runtime_config={"x": "\x00"})),
    ],
)
def test_nul_is_refused_everywhere_on_every_engine(store: Any, name: str, call: Any) -> None:
    store.add(["m", "n"], record_type="memory", record_ids=["m", "n"])
    store.create_thread_record("t", user_id=None, agent_id=None, metadata=None, runtime_config={})
    refuses(store, ValueError, name, lambda: call(store))


# ---------------------------------------------------------------------------- 8. vectors


def test_vectors_are_normalised_in_float64(store: Any) -> None:
    dim = store.vector_dim
    store.add(["huge"], record_type="memory", record_ids="huge", embeddings=[[1e20] * dim])
    store.add(["tiny"], record_type="memory", record_ids="tiny", embeddings=[[-1e-30] * dim])
    for query, best in (([1.0] * dim, "huge"), ([-1e-30] * dim, "tiny"), ([1e-300] * dim, "huge")):
        hits = store.search(None, 2, query_vector=query)
        assert all(math.isfinite(d) for _, d in hits)
        assert hits[0][0].id == best
        assert hits[0][1] == pytest.approx(0.0, abs=1e-5)
    for bad, match in (
        ([0.0] * dim, "zero vector"),
        ([float("nan")] + [1.0] * (dim - 1), "finite"),
        ([float("inf")] + [1.0] * (dim - 1), "finite"),
    ):
        refuses(
            store,
            ValueError,
            "query_vector",
            lambda bad=bad: store.search(None, 1, query_vector=bad),
        )
        refuses(
            store,
            ValueError,
            match,
            lambda bad=bad: store.add(["x"], record_type="memory", embeddings=[bad]),
        )
    refuses(
        store,
        ValueError,
        "zero vector",
        lambda: store.update("memory", "huge", embedding=np.zeros(dim)),
    )


# ---------------------------------------------------------------------------- 9. chunk sizes


def test_long_text_without_whitespace_is_chunked_on_every_engine(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy=SearchStrategy.KEYWORD)
    text = ",".join(f"tok{i}" for i in range(80_000))  # one "word" of 600 kB, 80k lexemes
    store.add([text], record_type="memory", record_ids="long")
    d = store._dialect
    lengths = [int(n) for (n,) in d.execute(f"SELECT length(chunk_text) FROM {d.tables.chunks}")]
    assert len(lengths) > 1 and max(lengths) <= store._core.chunker.max_chars
    assert [r.id for r, _ in store.search("tok79999", 3)] == ["long"]
    assert store.get("memory", "long").content == text  # stored text unchanged


def test_caller_chunks_are_bounded(store: Any) -> None:
    too_long = "x" * (MAX_CALLER_CHUNK_CHARS + 1)
    refuses(
        store,
        ValueError,
        r"index_texts\[0\]\[1\]",
        lambda: store.add(["x"], record_type="memory", index_texts=[["ok", too_long]]),
    )
    store.add(["x"], record_type="memory", index_texts=[["x" * MAX_CALLER_CHUNK_CHARS]])


# ---------------------------------------------------------------------------- 10. link types


def test_link_records_checks_its_argument_types(client: Any) -> None:
    client.add_memory("a", memory_id="a")
    client.add_memory("b", memory_id="b")
    store = client.store
    for bad in ([], ["a"], None, 1):
        refuses(
            store,
            TypeError,
            "source_record_id",
            lambda bad=bad: client.link_records(bad, "memory", "b", "memory", "supports"),
        )
    refuses(
        store,
        TypeError,
        "relation_id",
        lambda: client.link_records("a", "memory", "b", "memory", "supports", relation_id=["r"]),
    )
    assert client.link_records("a", "memory", "b", "memory", "supports")


def test_relation_json_is_decoded_from_text(store: Any) -> None:
    store.add(["m", "n"], record_type="memory", record_ids=["m", "n"])
    store.add_relations("m", "memory", "n", "memory", "supports", metadata={"why": [1, 2]})
    assert store.list_relations()[0].metadata == {"why": [1, 2]}
    assert json.loads(json.dumps(store.list_relations()[0].metadata)) == {"why": [1, 2]}

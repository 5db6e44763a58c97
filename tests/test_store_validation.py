"""Bad input to the store is rejected up front, with the offending argument named, and nothing
is written.

Every test checks three things: the exception type (ValueError, or TypeError where the argument
has the wrong type), that the message names the argument, and that the store's contents are
exactly what they were before the call.

Readings chosen where spec page 000 is not explicit:
* For wrong-*type* input (bool / str / float ttl_days, non-dict metadata, bare-string contents)
  either ValueError or TypeError is accepted; the argument's name must still be in the message.
* "Several vectors for one record without list index_texts" names either ``embeddings`` or
  ``index_texts`` (the message may blame either side of the mismatch).
* Unparsable timestamps are rejected even without a TIMESTAMP anchor: timestamps are ISO-8601
  event times (the reference stores them in a TIMESTAMP column).
* The REQUIRE_EXISTING start-up failure and the search-strategy/schema mismatch may use any
  exception class; the test pins the message instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis import PendingRecordBatch
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy

from ._embedders import HashingEmbedder

DIM = 64
_SNAPSHOT_TYPES = (
    "message",
    "memory",
    "guideline",
    "fact",
    "preference",
    "user_profile",
    "agent_profile",
)


def basis(i: int, dim: int = DIM) -> list[float]:
    v = [0.0] * dim
    v[i] = 1.0
    return v


def snapshot(store: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Everything observable through list(), per record type."""
    return {
        t: [(r.id, r.content, r.metadata, r.timestamp, r.status) for r in store.list(t, limit=None)]
        for t in _SNAPSHOT_TYPES
    }


@pytest.fixture
def seeded(store: Any) -> Any:
    """A store holding one memory, one message, one user profile and one chunked memory."""
    store.add(
        ["keeper note about violins"],
        record_type="memory",
        record_ids="keep",
        metadata={"source": "seed"},
        timestamps="2025-03-01T10:00:00+00:00",
    )
    store.add(
        ["hello there"],
        record_type="message",
        record_ids="msg-keep",
        thread_ids="t-keep",
        roles="user",
    )
    store.add_user("u-keep", "Likes violins.")
    store.add(
        ["two chunk body"],
        record_type="memory",
        record_ids="two-chunks",
        index_texts=[["first chunk", "second chunk"]],
        embeddings=[[basis(0), basis(1)]],
    )
    return store


def assert_unchanged(store: Any, before: dict[str, list[tuple[Any, ...]]]) -> None:
    assert snapshot(store) == before
    # Search state is untouched too: the seeded texts and vectors still match exactly.
    top = store.search("keeper note about violins", 1, record_types={"memory"})
    assert top[0][0].id == "keep"
    assert top[0][1] < 1e-4
    for i in (0, 1):
        hit = store.search(None, 1, query_vector=basis(i), record_types={"memory"})
        assert hit[0][0].id == "two-chunks"
        assert hit[0][1] < 1e-4


# --------------------------------------------------------------------------------------------
# search()
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, -1])
def test_search_k_below_one(seeded: Any, k: int) -> None:
    before = snapshot(seeded)
    with pytest.raises(ValueError, match=r"\bk\b"):
        seeded.search("violins", k)
    assert_unchanged(seeded, before)


async def test_search_async_k_below_one(seeded: Any) -> None:
    with pytest.raises(ValueError, match=r"\bk\b"):
        await seeded.search_async("violins", 0)


def test_search_both_query_and_query_vector(seeded: Any) -> None:
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="query"):
        seeded.search("violins", 3, query_vector=basis(0))
    assert_unchanged(seeded, before)


def test_search_neither_query_nor_query_vector(seeded: Any) -> None:
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="query"):
        seeded.search(None, 3)
    assert_unchanged(seeded, before)


@pytest.mark.parametrize("blank", ["", "   ", "\n\t "])
def test_search_blank_query(seeded: Any, embedder: HashingEmbedder, blank: str) -> None:
    before = snapshot(seeded)
    embedded = embedder.texts_embedded
    with pytest.raises(ValueError, match="query"):
        seeded.search(blank, 3)
    # Rejected before any embedding work.
    assert embedder.texts_embedded == embedded
    assert_unchanged(seeded, before)


@pytest.mark.parametrize(
    "bad_vector",
    [
        pytest.param([math.nan] + [0.0] * (DIM - 1), id="nan"),
        pytest.param([math.inf] + [0.0] * (DIM - 1), id="inf"),
        pytest.param([-math.inf] + [0.0] * (DIM - 1), id="-inf"),
        pytest.param([], id="empty"),
        pytest.param([basis(0), basis(1)], id="2-D list"),
        pytest.param(np.zeros((2, DIM), dtype=np.float32), id="2-D ndarray"),
        pytest.param(basis(0, DIM - 1), id="wrong dimension"),
        pytest.param(["a"] * DIM, id="non-numeric"),
    ],
)
def test_search_invalid_query_vector(seeded: Any, bad_vector: Any) -> None:
    before = snapshot(seeded)
    with pytest.raises((ValueError, TypeError), match="query_vector"):
        seeded.search(None, 3, query_vector=bad_vector)
    assert_unchanged(seeded, before)


def test_keyword_search_rejects_query_vector(make_store: Any) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD, embedder=None)
    store.add(["kiwi smoothie"], record_type="memory", record_ids="kw")
    with pytest.raises(ValueError, match="query_vector"):
        store.search(None, 3, query_vector=basis(0))
    assert [r.id for r in store.list("memory")] == ["kw"]


@pytest.mark.parametrize(
    "bad_filter",
    [
        pytest.param({"tags": {"$foo": "prod"}}, id="unknown operator"),
        pytest.param({"source": {"$not": {"$bogus": 1}}}, id="unknown operator under $not"),
    ],
)
def test_search_invalid_metadata_filter(seeded: Any, bad_filter: dict[str, Any]) -> None:
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="metadata_filter"):
        seeded.search("violins", 3, metadata_filter=bad_filter)
    assert_unchanged(seeded, before)


def test_list_invalid_metadata_filter(seeded: Any) -> None:
    # Reading: list() shares the filter language of search(), so it rejects the same input.
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="metadata_filter"):
        seeded.list("memory", metadata_filter={"tags": {"$foo": "prod"}})
    assert_unchanged(seeded, before)


def test_vector_search_without_embedder_needs_query_vector(make_store: Any) -> None:
    # VECTOR mode cannot resolve a query embedding without an embedder: a text query is refused,
    # while precomputed vectors keep working.
    store = make_store(embedder=None, vector_dim=DIM)
    assert store.add(
        ["precomputed"], record_type="memory", record_ids="pre", embeddings=[basis(2)]
    ) == ["pre"]
    with pytest.raises(ValueError, match=r"query|embedder"):
        store.search("precomputed", 1)
    hit = store.search(None, 1, query_vector=basis(2))
    assert hit[0][0].id == "pre"


# --------------------------------------------------------------------------------------------
# add()
# --------------------------------------------------------------------------------------------


def _bad_add_cases() -> list[Any]:
    v = basis(5)
    return [
        pytest.param(
            {"contents": ["a", "b"], "record_ids": ["only-one"]},
            ValueError,
            "record_ids",
            id="record_ids length mismatch",
        ),
        pytest.param(
            {"contents": ["a"], "record_ids": ["x", "y"]},
            ValueError,
            "record_ids",
            id="record_ids too long",
        ),
        pytest.param(
            {"contents": ["a", "b"], "index_texts": ["only one"]},
            ValueError,
            "index_texts",
            id="index_texts length mismatch",
        ),
        pytest.param(
            {"contents": ["a", "b"], "embeddings": [v]},
            ValueError,
            "embeddings",
            id="embeddings count mismatch",
        ),
        pytest.param(
            {"contents": ["a"], "embeddings": [basis(0, DIM - 1)]},
            ValueError,
            "embeddings",
            id="wrong embedding dimension",
        ),
        pytest.param(
            {"contents": ["a", "b"], "embeddings": [basis(0), basis(0, DIM + 1)]},
            ValueError,
            "embeddings",
            id="mixed dimensions across records",
        ),
        pytest.param(
            {
                "contents": ["a"],
                "index_texts": [["c1", "c2"]],
                "embeddings": [[basis(0), basis(0, DIM - 1)]],
            },
            ValueError,
            "embeddings",
            id="mixed dimensions across chunks",
        ),
        pytest.param(
            {"contents": ["a"], "embeddings": [[basis(0), basis(1)]]},
            ValueError,
            "embeddings|index_texts",
            id="several vectors without index_texts",
        ),
        pytest.param(
            {
                "contents": ["a"],
                "index_texts": ["one string"],
                "embeddings": [[basis(0), basis(1)]],
            },
            ValueError,
            "embeddings|index_texts",
            id="several vectors with string index_text",
        ),
        pytest.param(
            {
                "contents": ["a"],
                "index_texts": [["c1", "c2"]],
                "embeddings": [[basis(0), basis(1), basis(2)]],
            },
            ValueError,
            "embeddings",
            id="vector count differs from chunk count",
        ),
        pytest.param(
            {"contents": ["a"], "embeddings": [[math.nan] + [0.0] * (DIM - 1)]},
            ValueError,
            "embeddings",
            id="non-finite embedding",
        ),
        pytest.param(
            {"contents": ["a", "b"], "record_ids": ["dup", "dup"]},
            ValueError,
            "record_ids",
            id="duplicate record ids",
        ),
        pytest.param(
            {"contents": ["a"], "ttl_days": 0},
            ValueError,
            "ttl_days",
            id="ttl_days zero",
        ),
        pytest.param(
            {"contents": ["a"], "ttl_days": -3},
            ValueError,
            "ttl_days",
            id="ttl_days negative",
        ),
        pytest.param(
            {"contents": ["a", "b"], "ttl_days": [5, 0]},
            ValueError,
            "ttl_days",
            id="ttl_days zero in list",
        ),
        pytest.param(
            {"contents": ["a"], "ttl_days": 1.5},
            (TypeError, ValueError),
            "ttl_days",
            id="ttl_days float",
        ),
        pytest.param(
            {"contents": ["a"], "ttl_days": "7"},
            (TypeError, ValueError),
            "ttl_days",
            id="ttl_days str",
        ),
        pytest.param(
            {"contents": ["a"], "ttl_days": True},
            (TypeError, ValueError),
            "ttl_days",
            id="ttl_days bool",
        ),
        pytest.param(
            {"contents": ["a"], "ttl_days": 3, "ttl_anchor": TimeToLiveAnchor.TIMESTAMP},
            ValueError,
            "timestamp",
            id="TIMESTAMP anchor without timestamps",
        ),
        pytest.param(
            {
                "contents": ["a", "b"],
                "ttl_days": 3,
                "ttl_anchor": TimeToLiveAnchor.TIMESTAMP,
                "timestamps": ["2026-01-01T00:00:00+00:00", None],
            },
            ValueError,
            "timestamp",
            id="TIMESTAMP anchor with one missing timestamp",
        ),
        pytest.param(
            {
                "contents": ["a"],
                "ttl_days": 3,
                "ttl_anchor": TimeToLiveAnchor.TIMESTAMP,
                "timestamps": "not-a-date",
            },
            ValueError,
            "timestamp",
            id="TIMESTAMP anchor with unparsable timestamp",
        ),
        pytest.param(
            {"contents": ["a"], "timestamps": "yesterday-ish"},
            ValueError,
            "timestamp",
            id="unparsable timestamp",
        ),
        pytest.param(
            {"contents": ["a"], "timestamps": "2026-13-45T99:00:00"},
            ValueError,
            "timestamp",
            id="out-of-range timestamp",
        ),
        pytest.param(
            {"contents": ["a"], "metadata": "source=slack"},
            (TypeError, ValueError),
            "metadata",
            id="metadata str",
        ),
        pytest.param(
            {"contents": ["a"], "metadata": [1, 2]},
            (TypeError, ValueError),
            "metadata",
            id="metadata list of ints",
        ),
        pytest.param(
            {"contents": ["a", "b"], "metadata": [{"ok": 1}, "bad"]},
            (TypeError, ValueError),
            "metadata",
            id="metadata list with non-dict",
        ),
        pytest.param(
            {"contents": ["a", "b"], "metadata": [{"ok": 1}]},
            ValueError,
            "metadata",
            id="metadata list length mismatch",
        ),
        pytest.param(
            {"contents": "a bare string"},
            (TypeError, ValueError),
            "contents",
            id="contents not a list",
        ),
        pytest.param(
            {"contents": ["a", "b"], "thread_ids": ["t1", "t2", "t3"]},
            ValueError,
            "thread_ids",
            id="thread_ids length mismatch",
        ),
        pytest.param(
            {"contents": ["a", "b"], "user_ids": ["u1"]},
            ValueError,
            "user_ids",
            id="user_ids length mismatch",
        ),
        pytest.param(
            {"contents": ["a", "b"], "timestamps": ["2026-01-01T00:00:00+00:00"]},
            ValueError,
            "timestamps",
            id="timestamps length mismatch",
        ),
    ]


@pytest.mark.parametrize(("kwargs", "exc", "name"), _bad_add_cases())
def test_add_rejects_bad_input(seeded: Any, kwargs: dict[str, Any], exc: Any, name: str) -> None:
    before = snapshot(seeded)
    kwargs = {"record_type": "memory", **kwargs}
    with pytest.raises(exc, match=name):
        seeded.add(**kwargs)
    assert_unchanged(seeded, before)


@pytest.mark.parametrize(("kwargs", "exc", "name"), _bad_add_cases()[:6])
async def test_add_async_rejects_bad_input(
    seeded: Any, kwargs: dict[str, Any], exc: Any, name: str
) -> None:
    before = snapshot(seeded)
    with pytest.raises(exc, match=name):
        await seeded.add_async(record_type="memory", **kwargs)
    assert snapshot(seeded) == before


@pytest.mark.parametrize("record_type", ["memo", "MEMORY", "", "profile"])
def test_add_unknown_record_type(seeded: Any, record_type: str) -> None:
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="record_type"):
        seeded.add(["x"], record_type=record_type, record_ids="new")
    assert_unchanged(seeded, before)


def test_add_without_record_type(seeded: Any) -> None:
    before = snapshot(seeded)
    with pytest.raises((TypeError, ValueError), match="record_type"):
        seeded.add(["x"], record_ids="new")
    assert_unchanged(seeded, before)


def test_add_failing_record_writes_nothing(store: Any) -> None:
    # Records 1 and 2 are valid; record 3 has a vector of the wrong dimension.
    with pytest.raises(ValueError, match="embeddings"):
        store.add(
            ["first", "second", "third"],
            record_type="memory",
            record_ids=["r1", "r2", "r3"],
            embeddings=[basis(0), basis(1), basis(2, DIM - 1)],
        )
    assert store.list("memory") == []
    assert store.get("memory", "r1") is None
    assert store.get("memory", "r2") is None
    # The ids are still free: a correct retry succeeds.
    assert store.add(
        ["first", "second", "third"],
        record_type="memory",
        record_ids=["r1", "r2", "r3"],
        embeddings=[basis(0), basis(1), basis(2)],
    ) == ["r1", "r2", "r3"]


def test_add_failing_message_batch_writes_nothing(store: Any) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        store.add(
            ["m1", "m2", "m3"],
            record_type="message",
            thread_ids="t1",
            roles="user",
            timestamps=["2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00", "garbage"],
        )
    assert store.list("message") == []
    assert store.list_thread_messages("t1") == []


def test_add_batches_bad_second_batch_writes_nothing(store: Any) -> None:
    good = PendingRecordBatch(
        texts=["good one", "good two"], record_type="memory", record_ids=["g1", "g2"]
    )
    bad = PendingRecordBatch(
        texts=["bad"], record_type="memory", record_ids="b1", embeddings=[basis(0, DIM + 3)]
    )
    with pytest.raises(ValueError, match="embeddings"):
        store.add_batches([good, bad])
    assert store.list("memory") == []
    assert store.get("memory", "g1") is None


def test_add_batches_bad_record_type_in_second_batch_writes_nothing(store: Any) -> None:
    good = PendingRecordBatch(texts=["good one"], record_type="fact", record_ids="g1")
    bad = PendingRecordBatch(texts=["bad"], record_type="no-such-type", record_ids="b1")
    with pytest.raises(ValueError, match="record_type"):
        store.add_batches([good, bad])
    assert store.list("fact") == []


async def test_add_batches_async_bad_second_batch_writes_nothing(store: Any) -> None:
    good = PendingRecordBatch(texts=["good one"], record_type="memory", record_ids="g1")
    bad = PendingRecordBatch(texts=["bad", "worse"], record_type="memory", record_ids=["b1", "b1"])
    with pytest.raises(ValueError, match="record_ids"):
        await store.add_batches_async([good, bad])
    assert store.list("memory") == []


# --------------------------------------------------------------------------------------------
# update()
# --------------------------------------------------------------------------------------------


def test_update_without_any_update_argument(seeded: Any) -> None:
    # The message cannot name a single culprit here; only the type is pinned.
    before = snapshot(seeded)
    with pytest.raises(ValueError):
        seeded.update("memory", "keep")
    assert_unchanged(seeded, before)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        pytest.param(
            {"text": None, "index_text": "new index"}, "index_text", id="text None + index_text"
        ),
        pytest.param(
            {"text": None, "index_text": ["c1"]}, "index_text", id="text None + list index_text"
        ),
        pytest.param(
            {"text": None, "embedding": basis(3)}, "embedding", id="text None + embedding"
        ),
        pytest.param(
            {"index_text": None, "embedding": basis(3)},
            "index_text|embedding",
            id="index_text None + embedding",
        ),
        pytest.param(
            {"index_text": None, "embedding": [basis(3), basis(4)]},
            "index_text|embedding",
            id="index_text None + several embeddings",
        ),
        pytest.param(
            {"text": "replacement", "embedding": [basis(3), basis(4)]},
            "embedding|index_text",
            id="several vectors with new text",
        ),
        pytest.param(
            {"text": "replacement", "index_text": "one string", "embedding": [basis(3), basis(4)]},
            "embedding|index_text",
            id="several vectors with string index_text",
        ),
        pytest.param(
            {"index_text": ["c1", "c2"], "embedding": [basis(3)] * 3},
            "embedding",
            id="vector count differs from list index_text",
        ),
        pytest.param(
            {"embedding": [basis(3), basis(4)]},
            "embedding",
            id="embedding-only count differs from existing chunks",
        ),
        pytest.param({"embedding": basis(3, DIM - 1)}, "embedding", id="wrong embedding dimension"),
        pytest.param(
            {"embedding": [math.inf] + [0.0] * (DIM - 1)}, "embedding", id="non-finite embedding"
        ),
        pytest.param({"ttl_days": 0}, "ttl_days", id="ttl_days zero"),
        pytest.param({"ttl_days": -1}, "ttl_days", id="ttl_days negative"),
        pytest.param({"timestamp": "not a date"}, "timestamp", id="unparsable timestamp"),
    ],
)
def test_update_rejects_conflicting_or_bad_arguments(
    seeded: Any, kwargs: dict[str, Any], name: str
) -> None:
    # "keep" is a single-chunk memory.
    before = snapshot(seeded)
    with pytest.raises(ValueError, match=name):
        seeded.update("memory", "keep", **kwargs)
    assert_unchanged(seeded, before)


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        pytest.param({"ttl_days": True}, (TypeError, ValueError), "ttl_days", id="ttl_days bool"),
        pytest.param({"ttl_days": "3"}, (TypeError, ValueError), "ttl_days", id="ttl_days str"),
        pytest.param({"metadata": "x=1"}, (TypeError, ValueError), "metadata", id="metadata str"),
    ],
)
def test_update_rejects_wrong_types(
    seeded: Any, kwargs: dict[str, Any], exc: Any, name: str
) -> None:
    before = snapshot(seeded)
    with pytest.raises(exc, match=name):
        seeded.update("memory", "keep", **kwargs)
    assert_unchanged(seeded, before)


def test_update_embedding_only_count_must_match_existing_chunks(seeded: Any) -> None:
    # "two-chunks" has two chunk rows: one or three vectors do not fit them.
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="embedding"):
        seeded.update("memory", "two-chunks", embedding=[basis(7), basis(8), basis(9)])
    assert_unchanged(seeded, before)


def test_update_timestamp_anchor_needs_a_timestamp(seeded: Any) -> None:
    # msg-keep was added without an event timestamp, and none is given now.
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="timestamp"):
        seeded.update("message", "msg-keep", ttl_days=2, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    assert_unchanged(seeded, before)


@pytest.mark.parametrize("profile_type", ["user_profile", "agent_profile"])
def test_update_profile_text_none_rejected(store: Any, profile_type: str) -> None:
    if profile_type == "user_profile":
        store.add_user("p1", "Profile information.")
    else:
        store.add_agent("p1", "Profile information.")
    with pytest.raises(ValueError, match="text"):
        store.update(profile_type, "p1", text=None)
    assert store.get(profile_type, "p1").content == "Profile information."
    assert [r.id for r, _ in store.search("Profile information.", 1)] == ["p1"]


@pytest.mark.parametrize("record_type", ["memo", "", "profile"])
def test_update_unknown_record_type(seeded: Any, record_type: str) -> None:
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="record_type"):
        seeded.update(record_type, "keep", text="changed")
    assert_unchanged(seeded, before)


async def test_update_async_rejects_conflicting_arguments(seeded: Any) -> None:
    before = snapshot(seeded)
    with pytest.raises(ValueError, match="index_text"):
        await seeded.update_async("memory", "keep", text=None, index_text="x")
    assert_unchanged(seeded, before)


# --------------------------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id",
    ["1abc", "9", "ab-c", "with space", "_leading", "a" * 17, ""],
)
def test_invalid_memory_store_id(make_store: Any, bad_id: str) -> None:
    with pytest.raises(ValueError, match="memory_store_id"):
        make_store(memory_store_id=bad_id)


@pytest.mark.parametrize("good_id", ["a", "abc_123", "A" * 16, "x_"])
def test_valid_memory_store_id(make_store: Any, good_id: str) -> None:
    store = make_store(memory_store_id=good_id)
    assert store.add(["ok"], record_type="memory", record_ids="ok") == ["ok"]
    assert store.get("memory", "ok").content == "ok"


def test_auto_sync_rejected_for_keyword_search(make_store: Any) -> None:
    with pytest.raises(ValueError, match=r"search_index_sync|AUTO"):
        make_store(
            search_strategy=SearchStrategy.KEYWORD,
            search_index_sync=SearchIndexSyncMode.AUTO,
            embedder=None,
        )


def test_require_existing_on_empty_database_names_create_if_necessary(make_store: Any) -> None:
    with pytest.raises(Exception, match="CREATE_IF_NECESSARY"):
        make_store(name="never-created.db", schema_policy=SchemaPolicy.REQUIRE_EXISTING)


def test_require_existing_accepts_string_policy(make_store: Any) -> None:
    # SchemaPolicy | str: the string value is accepted and means the same.
    with pytest.raises(Exception, match="CREATE_IF_NECESSARY"):
        make_store(name="never-created-2.db", schema_policy="require_existing")


@pytest.mark.parametrize("bad_dim", [0, -5])
def test_non_positive_vector_dim(make_store: Any, bad_dim: int) -> None:
    with pytest.raises(ValueError, match="vector_dim"):
        make_store(vector_dim=bad_dim)


def test_vector_dim_conflicting_with_embedder(make_store: Any) -> None:
    # The hashing embedder produces 64-d vectors; a 32-d vector column cannot hold them.
    with pytest.raises(ValueError, match=r"vector_dim|dimension"):
        make_store(vector_dim=32)

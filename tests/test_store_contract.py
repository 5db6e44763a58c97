"""Behavioural contract of the store (spec pages 000, 002, 003), run on every backend.

All stores come from ``make_store`` / ``store`` (hashing embedder, dim 64, VECTOR search unless a
test says otherwise). With the hashing embedder, identical texts get identical vectors, so "the
store indexed exactly this text" shows up as a distance of (almost) zero, and unrelated texts sit
far apart (cosine distance around 1).

Readings chosen where the pages leave room (each is repeated next to its test):
* Thread rows are written with ``store.add([None], record_type="thread", record_ids=..., ...)``
  ("thread" is a record type that ``delete`` accepts and that page 003 lists).
* Message ``seq_no`` is a per-thread counter starting at 1 with no gaps when nothing was deleted
  (page 003 allows gaps; we pin the dense form).
* store.search with an explicit scope value and ``exact_*_match=False`` ranks records of that
  scope first when texts tie (page 002 says they *may* rank higher; we require it for exact ties).
* Negated metadata expressions match records with no metadata at all (the field is missing).
* A nested-dict filter value matches recursively: every key of the filter must match, extra
  stored keys are allowed.
* ``$array_contains`` does not match a scalar (non-array) field; page 000 says negated array
  membership matches non-array fields, so the positive form must not.
* KEYWORD search returns only records whose search text matches; a query with no matching term
  returns [].
* HYBRID accepts any embedder here (the reference needs an in-database embedder for it).
* Returned timestamps are ISO-8601; a timestamp without an offset is read as UTC.
"""

from __future__ import annotations

import os
import time
import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis import MAX_LIST_LIMIT, PendingRecordBatch
from oracleagentmemory.apis.records import (
    AgentProfileRecord,
    FactRecord,
    GuidelineRecord,
    MemoryRecord,
    MessageRecord,
    PreferenceRecord,
    Record,
    RecordStatus,
    ThreadRecord,
    UserProfileRecord,
)
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.retention import MemoryRetentionConfig

from ._embedders import HashingEmbedder

DIM = 64
NEAR = 1e-4  # distance of a record whose stored vector equals the query vector
FAR = 0.5  # lower bound for the distance between unrelated texts / orthogonal vectors


def basis(i: int, dim: int = DIM) -> list[float]:
    v = [0.0] * dim
    v[i] = 1.0
    return v


def ids(results: list[tuple[Record, float]]) -> list[str]:
    return [record.id for record, _ in results]


def distances(results: list[tuple[Record, float]]) -> dict[str, float]:
    return {record.id: dist for record, dist in results}


def parse_ts(value: str) -> datetime:
    dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


def days_ago(n: float) -> str:
    return iso(datetime.now(UTC) - timedelta(days=n))


# ============================================================================================
# Write semantics: contents vs index_texts vs embeddings
# ============================================================================================


def test_contents_are_stored_index_texts_are_searched(store: Any) -> None:
    assert store.add(
        ["Stored text"],
        record_type="memory",
        index_texts=["Search this text"],
        record_ids="m",
    ) == ["m"]
    store.add(["zebra crossing"], record_type="memory", record_ids="other")

    hit = store.search("Search this text", 2)
    assert hit[0][0].id == "m"
    assert hit[0][1] < NEAR
    assert hit[0][0].content == "Stored text"
    assert store.get("memory", "m").content == "Stored text"
    # The stored text itself was not indexed.
    assert distances(store.search("Stored text", 2))["m"] > 0.3


def test_list_index_texts_are_caller_chunks(store: Any) -> None:
    store.add(
        ["pizza notes"],
        record_type="memory",
        record_ids="multi",
        index_texts=[["pizza margherita", "pizza marinara", "pizza diavola"]],
    )
    store.add(["pizza quattro stagioni"], record_type="memory", record_ids="single")

    # Every chunk is its own retrieval row, embedded as given ...
    for chunk in ("pizza margherita", "pizza marinara", "pizza diavola"):
        hit = store.search(chunk, 1)
        assert hit[0][0].id == "multi"
        assert hit[0][1] < NEAR
    # ... but search returns each logical record once.
    res = store.search("pizza", 10)
    assert sorted(ids(res)) == ["multi", "single"]
    assert store.get("memory", "multi").content == "pizza notes"


def test_none_index_text_uses_contents(store: Any) -> None:
    store.add(
        ["zebra crossing", "apple pie"],
        record_type="memory",
        record_ids=["z", "a"],
        index_texts=[None, "quantum physics"],
    )
    hit = store.search("zebra crossing", 1)
    assert (hit[0][0].id, hit[0][1] < NEAR) == ("z", True)
    hit = store.search("quantum physics", 1)
    assert (hit[0][0].id, hit[0][1] < NEAR) == ("a", True)
    assert distances(store.search("apple pie", 2))["a"] > FAR


@pytest.mark.parametrize("empty_index", ["", []], ids=["empty string", "empty list"])
def test_empty_index_text_stores_record_but_is_never_found(store: Any, empty_index: Any) -> None:
    store.add(
        ["visible body", "filler text"],
        record_type="memory",
        record_ids=["hidden", "filler"],
        index_texts=[empty_index, None],
    )
    assert store.get("memory", "hidden").content == "visible body"
    assert [r.id for r in store.list("memory")] == ["hidden", "filler"]
    assert ids(store.search("visible body", 10)) == ["filler"]


def test_explicit_empty_content_is_stored_and_not_searchable(store: Any) -> None:
    store.add(["", "filler text"], record_type="memory", record_ids=["blank", "filler"])
    assert store.get("memory", "blank").content == ""
    assert ids(store.search("filler text", 10)) == ["filler"]


def test_empty_content_searchable_through_index_text(store: Any) -> None:
    store.add([""], record_type="memory", record_ids="e", index_texts=["findable phrase"])
    assert store.get("memory", "e").content == ""
    hit = store.search("findable phrase", 1)
    assert hit[0][0].id == "e"
    assert hit[0][1] < NEAR
    assert hit[0][0].content == ""


def test_explicit_embeddings_are_used_without_calling_the_embedder(
    store: Any, embedder: HashingEmbedder
) -> None:
    before = embedder.texts_embedded
    store.add(
        ["alpha text", "beta text"],
        record_type="memory",
        record_ids=["e1", "e2"],
        embeddings=[basis(20), basis(21)],
    )
    assert embedder.texts_embedded == before
    hit = store.search(None, 1, query_vector=basis(21))
    assert hit[0][0].id == "e2"
    assert hit[0][1] < NEAR
    # A query vector is used as is, too.
    assert embedder.texts_embedded == before
    # The text's own vector was not stored: the text is not an exact match.
    assert distances(store.search("alpha text", 2))["e1"] > FAR


def test_explicit_embeddings_as_ndarrays(store: Any, embedder: HashingEmbedder) -> None:
    before = embedder.texts_embedded
    store.add(
        ["one", "two"],
        record_type="memory",
        record_ids=["n1", "n2"],
        index_texts=["one", ["two a", "two b"]],
        embeddings=[
            np.asarray(basis(22), dtype=np.float32),
            np.asarray([basis(23), basis(24)], dtype=np.float32),
        ],
    )
    assert embedder.texts_embedded == before
    for i, rid in ((22, "n1"), (23, "n2"), (24, "n2")):
        hit = store.search(None, 1, query_vector=basis(i))
        assert (hit[0][0].id, hit[0][1] < NEAR) == (rid, True)


def test_one_vector_for_a_long_text(store: Any, embedder: HashingEmbedder) -> None:
    long_text = " ".join(f"word{i}" for i in range(600))
    store.add(["short filler"], record_type="memory", record_ids="filler")
    before = embedder.texts_embedded
    store.add([long_text], record_type="memory", record_ids="long", embeddings=[basis(25)])
    assert embedder.texts_embedded == before
    res = store.search(None, 5, query_vector=basis(25))
    assert ids(res) == ["long", "filler"]
    assert res[0][1] < NEAR
    assert store.get("memory", "long").content == long_text


def test_long_text_without_vectors_is_one_logical_result(store: Any) -> None:
    # However the store splits it, every piece has the direction of the query.
    long_text = " ".join(["pizza margherita"] * 300)
    store.add([long_text, "sunny weather"], record_type="memory", record_ids=["long", "other"])
    res = store.search("pizza margherita", 10)
    assert ids(res) == ["long", "other"]
    assert res[0][1] < NEAR
    assert res[0][0].content == long_text


def test_per_chunk_vectors_with_list_index_texts(store: Any, embedder: HashingEmbedder) -> None:
    before = embedder.texts_embedded
    store.add(
        ["chunked body"],
        record_type="memory",
        record_ids="chunked",
        index_texts=[["first chunk", "second chunk"]],
        embeddings=[[basis(26), basis(27)]],
    )
    store.add(["unrelated"], record_type="memory", record_ids="u", embeddings=[basis(28)])
    assert embedder.texts_embedded == before
    for i in (26, 27):
        res = store.search(None, 5, query_vector=basis(i))
        assert ids(res) == ["chunked", "u"]
        assert res[0][1] < NEAR


def test_scalar_scope_values_are_broadcast(store: Any) -> None:
    out = store.add(
        ["m1", "m2", "m3"],
        record_type="message",
        thread_ids="t",
        user_ids="u",
        agent_ids="a",
        roles="user",
    )
    assert len(out) == 3
    for rid in out:
        rec = store.get("message", rid)
        assert isinstance(rec, MessageRecord)
        assert (rec.thread_id, rec.user_id, rec.agent_id, rec.role) == ("t", "u", "a", "user")
    assert [m.content for m in store.list_thread_messages("t")] == ["m1", "m2", "m3"]


def test_per_record_scope_lists(store: Any) -> None:
    out = store.add(
        ["x", "y"],
        record_type="memory",
        record_ids=["x", "y"],
        user_ids=["u1", None],
        thread_ids=[None, "t2"],
        agent_ids=["a1", "a2"],
    )
    assert out == ["x", "y"]
    x, y = store.get("memory", "x"), store.get("memory", "y")
    assert (x.user_id, x.thread_id, x.agent_id) == ("u1", None, "a1")
    assert (y.user_id, y.thread_id, y.agent_id) == (None, "t2", "a2")


def test_generated_ids_are_unique_strings(store: Any) -> None:
    out = store.add(["a", "b", "c"], record_type="memory")
    assert len(out) == 3
    assert all(isinstance(i, str) and i for i in out)
    assert len(set(out)) == 3
    assert [store.get("memory", i).content for i in out] == ["a", "b", "c"]
    # Another call never reuses an id.
    assert not set(store.add(["d"], record_type="memory")) & set(out)


def test_record_ids_list_with_none_entries(store: Any) -> None:
    out = store.add(["given", "generated"], record_type="memory", record_ids=["given-id", None])
    assert out[0] == "given-id"
    assert isinstance(out[1], str) and out[1] and out[1] != "given-id"
    assert store.get("memory", out[1]).content == "generated"


def test_metadata_content_fallback_when_content_is_none(store: Any) -> None:
    store.add(
        [None],
        record_type="memory",
        record_ids="fb",
        metadata={"content": "from metadata", "k": 1},
    )
    rec = store.get("memory", "fb")
    assert rec.content == "from metadata"
    assert rec.metadata == {"content": "from metadata", "k": 1}
    hit = store.search("from metadata", 1)
    assert hit[0][0].id == "fb"
    assert hit[0][1] < NEAR


def test_explicit_empty_content_is_not_replaced_by_metadata(store: Any) -> None:
    store.add([""], record_type="memory", record_ids="keep-empty", metadata={"content": "x"})
    assert store.get("memory", "keep-empty").content == ""


def test_batch_size_store_kwarg(store: Any) -> None:
    texts = [f"batched text {i}" for i in range(7)]
    out = store.add(texts, record_type="memory", batch_size=2)
    assert len(out) == 7
    assert [r.content for r in store.list("memory")] == texts


def test_add_batches_keeps_order_and_per_batch_fields(store: Any) -> None:
    out = store.add_batches(
        [
            PendingRecordBatch(
                texts=["fact one", "fact two"],
                record_type="fact",
                record_ids=["f1", "f2"],
                user_ids="u1",
            ),
            PendingRecordBatch(
                contents=["hi"],
                record_type="message",
                record_ids="msg",
                thread_ids="t9",
                roles="assistant",
                metadata={"src": "batch"},
            ),
        ]
    )
    assert out == ["f1", "f2", "msg"]
    f1 = store.get("fact", "f1")
    assert isinstance(f1, FactRecord)
    assert f1.user_id == "u1"
    msg = store.get("message", "msg")
    assert (msg.role, msg.thread_id, msg.metadata) == ("assistant", "t9", {"src": "batch"})


# ============================================================================================
# Profiles
# ============================================================================================


def test_add_user_and_agent_return_actor_id(store: Any) -> None:
    assert store.add_user("u1", "Likes hiking.", metadata={"tier": "gold"}) == "u1"
    assert store.add_agent("a1", "Trip planner.") == "a1"
    user = store.get("user_profile", "u1")
    agent = store.get("agent_profile", "a1")
    assert type(user) is UserProfileRecord
    assert (user.id, user.content, user.metadata) == ("u1", "Likes hiking.", {"tier": "gold"})
    assert type(agent) is AgentProfileRecord
    assert (agent.id, agent.content) == ("a1", "Trip planner.")


def test_list_profiles_ignores_scope_filters(store: Any) -> None:
    store.add_user("u1", "First user.")
    store.add_user("u2", "Second user.")
    store.add_agent("a1", "An agent.")
    for kwargs in ({}, {"user_id": None}, {"user_id": "zzz"}, {"thread_id": "t", "agent_id": None}):
        assert [r.id for r in store.list("user_profile", **kwargs)] == ["u1", "u2"], kwargs
        assert [r.id for r in store.list("agent_profile", **kwargs)] == ["a1"], kwargs


def test_profiles_are_searched_under_their_own_scope(store: Any) -> None:
    store.add_user("u1", "Enjoys mountain hiking trips.")
    store.add_user("u2", "Enjoys mountain hiking trips too.")
    store.add_agent("a1", "Mountain hiking trip planner.")
    store.add(["mountain hiking trips"], record_type="memory", user_ids="u1", record_ids="m-u1")
    store.add(["mountain hiking trips"], record_type="memory", user_ids="u2", record_ids="m-u2")
    q = "mountain hiking trips"

    found = set(ids(store.search(q, 20, user_id="u1", exact_user_match=True)))
    assert found == {"u1", "m-u1"}

    found = set(ids(store.search(q, 20)))
    assert found == {"u1", "u2", "a1", "m-u1", "m-u2"}

    # A user profile's user dimension is its own id; an agent profile's user dimension is None.
    profile_types = {"user_profile", "agent_profile"}
    res = store.search(q, 20, user_id=None, exact_user_match=True, record_types=profile_types)
    assert ids(res) == ["a1"]

    res = store.search(q, 20, agent_id="a1", exact_agent_match=True)
    assert ids(res) == ["a1"]

    # Profiles behave as None in the thread dimension.
    res = store.search(q, 20, thread_id="t", exact_thread_match=True)
    assert res == []
    res = store.search(q, 20, thread_id=None, exact_thread_match=True, record_types=profile_types)
    assert set(ids(res)) == {"u1", "u2", "a1"}


# ============================================================================================
# get
# ============================================================================================


@pytest.mark.parametrize(
    ("record_type", "cls"),
    [
        ("memory", MemoryRecord),
        ("guideline", GuidelineRecord),
        ("fact", FactRecord),
        ("preference", PreferenceRecord),
    ],
)
def test_get_returns_most_specific_class(store: Any, record_type: str, cls: type) -> None:
    meta = {"source": "slack", "nested": {"list": [1, "two", None], "flag": True}, "n": 2.5}
    store.add(
        [f"a {record_type}"],
        record_type=record_type,
        record_ids="r",
        thread_ids="t",
        user_ids="u",
        agent_ids="a",
        metadata=meta,
    )
    rec = store.get(record_type, "r")
    assert type(rec) is cls
    assert rec.record_type == record_type
    assert rec.content == f"a {record_type}"
    assert rec.metadata == meta
    assert (rec.thread_id, rec.user_id, rec.agent_id) == ("t", "u", "a")
    assert rec.status is RecordStatus.VALID


def test_get_message_record(store: Any) -> None:
    store.add(["hello"], record_type="message", record_ids="m", thread_ids="t", roles="assistant")
    rec = store.get("message", "m")
    assert type(rec) is MessageRecord
    assert (rec.content, rec.role, rec.thread_id, rec.seq_no) == ("hello", "assistant", "t", 1)


def test_get_thread_record(store: Any) -> None:
    # Reading: thread rows are created through add(record_type="thread").
    assert store.add([None], record_type="thread", record_ids="t1", user_ids="u1") == ["t1"]
    rec = store.get("thread", "t1")
    assert type(rec) is ThreadRecord
    assert (rec.id, rec.user_id) == ("t1", "u1")


def test_get_unknown_id_or_other_type_returns_none(store: Any) -> None:
    store.add(["a memory"], record_type="memory", record_ids="m")
    assert store.get("memory", "nope") is None
    assert store.get("fact", "m") is None
    assert store.get("message", "m") is None
    assert store.get("user_profile", "m") is None


def test_timestamps_explicit_and_default(store: Any) -> None:
    start = datetime.now(UTC) - timedelta(seconds=2)
    store.add(
        ["with ts", "naive ts", "no ts"],
        record_type="memory",
        record_ids=["ts", "naive", "none"],
        timestamps=["2024-05-01T10:00:00+02:00", "2024-05-01T10:00:00", None],
    )
    end = datetime.now(UTC) + timedelta(seconds=2)
    assert parse_ts(store.get("memory", "ts").timestamp) == datetime(2024, 5, 1, 8, tzinfo=UTC)
    assert parse_ts(store.get("memory", "naive").timestamp) == datetime(2024, 5, 1, 10, tzinfo=UTC)
    # Without a caller timestamp, the record shows the time it was added.
    assert start <= parse_ts(store.get("memory", "none").timestamp) <= end


# ============================================================================================
# list
# ============================================================================================


def test_list_default_limit_is_max_list_limit(store: Any) -> None:
    n = MAX_LIST_LIMIT + 1
    rids = [f"bulk-{i:05d}" for i in range(n)]
    # Empty index texts: no retrieval rows, so this stays cheap.
    store.add(
        [f"b{i}" for i in range(n)], record_type="memory", record_ids=rids, index_texts=[""] * n
    )
    default = store.list("memory")
    assert len(default) == MAX_LIST_LIMIT
    assert default[0].id == "bulk-00001"
    assert default[-1].id == rids[-1]
    everything = store.list("memory", limit=None)
    assert [r.id for r in everything] == rids


def test_list_limit_returns_newest_oldest_first(store: Any) -> None:
    for i in range(1, 6):
        store.add([f"note {i}"], record_type="memory", record_ids=f"m{i}")
    assert [r.id for r in store.list("memory", limit=2)] == ["m4", "m5"]
    assert [r.id for r in store.list("memory", limit=1)] == ["m5"]
    assert [r.id for r in store.list("memory", limit=10)] == ["m1", "m2", "m3", "m4", "m5"]
    assert [r.id for r in store.list("memory", limit=None)] == ["m1", "m2", "m3", "m4", "m5"]
    assert [r.id for r in store.list("memory")] == ["m1", "m2", "m3", "m4", "m5"]


@pytest.mark.parametrize(
    ("arg", "column"),
    [("user_id", "user_ids"), ("agent_id", "agent_ids"), ("thread_id", "thread_ids")],
)
def test_list_scope_filter_omitted_none_value(store: Any, arg: str, column: str) -> None:
    store.add(
        ["scoped one", "unscoped", "scoped two"],
        record_type="memory",
        record_ids=["s1", "none", "s2"],
        **{column: ["v1", None, "v2"]},
    )
    assert [r.id for r in store.list("memory")] == ["s1", "none", "s2"]
    assert [r.id for r in store.list("memory", **{arg: None})] == ["none"]
    assert [r.id for r in store.list("memory", **{arg: "v2"})] == ["s2"]
    assert [r.id for r in store.list("memory", **{arg: "missing"})] == []


def test_list_scope_filters_combine(store: Any) -> None:
    store.add(
        ["a", "b", "c"],
        record_type="memory",
        record_ids=["a", "b", "c"],
        user_ids=["u1", "u1", None],  # a thread holds one user's rows (and user-less ones)
        thread_ids=["t1", None, "t1"],
    )
    assert [r.id for r in store.list("memory", user_id="u1", thread_id=None)] == ["b"]
    assert [r.id for r in store.list("memory", user_id="u1", thread_id="t1")] == ["a"]
    assert [r.id for r in store.list("memory", thread_id="t1")] == ["a", "c"]


def test_list_metadata_filter_omitted_none_dict(store: Any) -> None:
    store.add(
        ["no meta", "slack", "email"],
        record_type="memory",
        record_ids=["plain", "slack", "email"],
        metadata=[None, {"source": "slack"}, {"source": "email"}],
    )
    assert [r.id for r in store.list("memory")] == ["plain", "slack", "email"]
    assert [r.id for r in store.list("memory", metadata_filter=None)] == ["plain"]
    assert [r.id for r in store.list("memory", metadata_filter={"source": "slack"})] == ["slack"]


_META = {
    "r1": {
        "source": "slack",
        "tags": ["prod", "urgent"],
        "review": {"status": "open", "owner": "ann"},
        "count": 3,
    },
    "r2": {"source": "email", "tags": ["prod"], "count": 4},
    "r3": {"source": "slack", "tags": "prod"},
    "r4": None,
    "r5": {"review": {"status": "closed"}},
}

_FILTER_CASES = [
    ({"source": "slack"}, {"r1", "r3"}),
    ({"source": "SLACK"}, set()),
    ({"count": 3}, {"r1"}),
    ({"review": {"status": "open"}}, {"r1"}),
    ({"review": {"status": "open", "owner": "bob"}}, set()),
    ({"tags": ["prod", "urgent"]}, {"r1"}),
    ({"tags": ["urgent", "prod"]}, set()),
    ({"tags": ["prod"]}, {"r2"}),
    ({"tags": "prod"}, {"r3"}),
    ({"tags": {"$array_contains": "prod"}}, {"r1", "r2"}),
    ({"tags": {"$array_contains": ["prod", "urgent"]}}, {"r1"}),
    ({"tags": {"$array_contains_any": ["urgent", "nope"]}}, {"r1"}),
    ({"tags": {"$array_contains_any": ["prod"]}}, {"r1", "r2"}),
    ({"source": {"$not": "slack"}}, {"r2", "r4", "r5"}),
    ({"tags": {"$not": {"$array_contains": "prod"}}}, {"r3", "r4", "r5"}),
    ({"review": {"$not": {"status": "open"}}}, {"r2", "r3", "r4", "r5"}),
    ({"source": "slack", "tags": ["prod", "urgent"]}, {"r1"}),
    ({"source": "slack", "review": {"status": "open"}, "tags": ["prod", "urgent"]}, {"r1"}),
    ({"missing": "x"}, set()),
]


@pytest.mark.parametrize("via", ["list", "search"])
@pytest.mark.parametrize(("flt", "expected"), _FILTER_CASES, ids=[str(f) for f, _ in _FILTER_CASES])
def test_metadata_filter_semantics(
    store: Any, via: str, flt: dict[str, Any], expected: set[str]
) -> None:
    names = list(_META)
    store.add(
        [f"note {n}" for n in names],
        record_type="memory",
        record_ids=names,
        metadata=[_META[n] for n in names],
    )
    if via == "list":
        got = {r.id for r in store.list("memory", metadata_filter=flt)}
    else:
        got = set(ids(store.search("note", 20, record_types={"memory"}, metadata_filter=flt)))
    assert got == expected


# ============================================================================================
# list_thread_messages
# ============================================================================================


@pytest.fixture
def threads(store: Any) -> Any:
    """Thread ta holds a1..a5 and thread tb holds b1, b2, written interleaved."""
    store.add(
        ["a1", "a2"],
        record_type="message",
        thread_ids="ta",
        roles=["user", "assistant"],
        record_ids=["a1", "a2"],
    )
    store.add(["b1"], record_type="message", thread_ids="tb", roles="user", record_ids="b1")
    store.add(["a3"], record_type="message", thread_ids="ta", roles="user", record_ids="a3")
    store.add(["b2"], record_type="message", thread_ids="tb", roles="assistant", record_ids="b2")
    store.add(
        ["a4", "a5"],
        record_type="message",
        thread_ids="ta",
        roles="assistant",
        record_ids=["a4", "a5"],
    )
    store.add(["a memory in ta"], record_type="memory", thread_ids="ta", record_ids="mem-ta")
    return store


def test_thread_messages_order_seq_no_role(threads: Any) -> None:
    msgs = threads.list_thread_messages("ta")
    assert [m.id for m in msgs] == ["a1", "a2", "a3", "a4", "a5"]
    assert all(type(m) is MessageRecord for m in msgs)
    assert [m.seq_no for m in msgs] == [1, 2, 3, 4, 5]
    assert [m.role for m in msgs] == ["user", "assistant", "user", "assistant", "assistant"]
    assert {m.thread_id for m in msgs} == {"ta"}
    other = threads.list_thread_messages("tb")
    assert [(m.id, m.seq_no) for m in other] == [("b1", 1), ("b2", 2)]
    assert threads.list_thread_messages("nope") == []


def test_thread_messages_last_n(threads: Any) -> None:
    assert [m.id for m in threads.list_thread_messages("ta", last_n=2)] == ["a4", "a5"]
    assert [m.id for m in threads.list_thread_messages("ta", last_n=1)] == ["a5"]
    assert len(threads.list_thread_messages("ta", last_n=50)) == 5
    assert len(threads.list_thread_messages("ta", last_n=None)) == 5


def test_thread_messages_seq_no_range_is_inclusive(threads: Any) -> None:
    seq = {m.id: m.seq_no for m in threads.list_thread_messages("ta")}
    got = threads.list_thread_messages(
        "ta", range_start_seq_no=seq["a2"], range_end_seq_no=seq["a4"]
    )
    assert [m.id for m in got] == ["a2", "a3", "a4"]
    got = threads.list_thread_messages("ta", range_start_seq_no=seq["a4"])
    assert [m.id for m in got] == ["a4", "a5"]
    got = threads.list_thread_messages("ta", range_end_seq_no=seq["a2"])
    assert [m.id for m in got] == ["a1", "a2"]
    got = threads.list_thread_messages(
        "ta", range_start_seq_no=seq["a3"], range_end_seq_no=seq["a3"]
    )
    assert [m.id for m in got] == ["a3"]


def test_thread_messages_seq_no_continues_after_more_writes(threads: Any) -> None:
    threads.add(["a6"], record_type="message", thread_ids="ta", roles="user", record_ids="a6")
    seqs = [m.seq_no for m in threads.list_thread_messages("ta")]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 6
    assert threads.get("message", "a6").seq_no == max(seqs)


def test_a_threads_seq_no_counts_every_writers_messages(store: Any) -> None:
    """A user's messages and messages without a user in one thread share its counter (on
    Citus the marks were kept per message user: the user-less ones started again at 1)."""
    store.add(["a1", "a2"], record_type="message", thread_ids="mixed", roles="user",
              user_ids="alice", record_ids=["a1", "a2"])  # fmt: skip
    store.add(["n1"], record_type="message", thread_ids="mixed", roles="assistant",
              record_ids="n1")  # fmt: skip
    store.add(["a3"], record_type="message", thread_ids="mixed", roles="user",
              user_ids="alice", record_ids="a3")  # fmt: skip
    seqs = {m.id: m.seq_no for m in store.list_thread_messages("mixed")}
    assert seqs == {"a1": 1, "a2": 2, "n1": 3, "a3": 4}


# ============================================================================================
# update
# ============================================================================================


def test_update_text_reindexes(store: Any) -> None:
    store.add(["zebra crossing"], record_type="memory", record_ids="u")
    store.add(["apple pie"], record_type="memory", record_ids="other")
    assert store.update("memory", "u", text="quantum physics") == 1
    assert store.get("memory", "u").content == "quantum physics"
    hit = store.search("quantum physics", 1)
    assert (hit[0][0].id, hit[0][1] < NEAR) == ("u", True)
    assert distances(store.search("zebra crossing", 2))["u"] > FAR


def test_update_text_reindexes_keyword_store(make_store: Any) -> None:
    kw = make_store(search_strategy=SearchStrategy.KEYWORD, embedder=None)
    kw.add(["Parcel shipped to Lisbon"], record_type="memory", record_ids="p")
    kw.add(["Weather is sunny"], record_type="memory", record_ids="w")
    assert ids(kw.search("Lisbon", 5)) == ["p"]
    assert kw.update("memory", "p", text="Parcel rerouted to Porto") == 1
    assert kw.search("Lisbon", 5) == []
    assert ids(kw.search("Porto", 5)) == ["p"]


def test_update_index_text_keeps_content(store: Any) -> None:
    store.add(["Stored body"], record_type="memory", record_ids="u")
    assert store.update("memory", "u", index_text="kumquat orchard") == 1
    assert store.get("memory", "u").content == "Stored body"
    hit = store.search("kumquat orchard", 1)
    assert (hit[0][0].id, hit[0][1] < NEAR) == ("u", True)
    assert distances(store.search("Stored body", 1))["u"] > FAR
    # A list index_text: caller chunks, one row each, one logical result.
    assert store.update("memory", "u", index_text=["first part", "second part"]) == 1
    for chunk in ("first part", "second part"):
        res = store.search(chunk, 5)
        assert ids(res) == ["u"]
        assert res[0][1] < NEAR


def test_update_embedding_only_reuses_existing_chunks(
    store: Any, embedder: HashingEmbedder
) -> None:
    store.add(
        ["body"],
        record_type="memory",
        record_ids="u",
        index_texts=[["chunk one", "chunk two"]],
    )
    before = embedder.texts_embedded
    assert store.update("memory", "u", embedding=[basis(30), basis(31)]) == 1
    assert embedder.texts_embedded == before
    for i in (30, 31):
        hit = store.search(None, 1, query_vector=basis(i))
        assert (hit[0][0].id, hit[0][1] < NEAR) == ("u", True)
    # The old vectors are gone; the text, and the chunk texts, are unchanged.
    assert distances(store.search("chunk one", 1))["u"] > FAR
    assert store.get("memory", "u").content == "body"


def test_update_single_embedding_only(store: Any, embedder: HashingEmbedder) -> None:
    store.add(["short text"], record_type="memory", record_ids="u")
    before = embedder.texts_embedded
    assert store.update("memory", "u", embedding=np.asarray(basis(32), dtype=np.float32)) == 1
    assert embedder.texts_embedded == before
    hit = store.search(None, 1, query_vector=basis(32))
    assert (hit[0][0].id, hit[0][1] < NEAR) == ("u", True)
    assert store.get("memory", "u").content == "short text"


def test_update_text_with_explicit_vectors(store: Any, embedder: HashingEmbedder) -> None:
    store.add(["old"], record_type="memory", record_ids="u")
    before = embedder.texts_embedded
    assert store.update("memory", "u", text="new long text " * 100, embedding=basis(33)) == 1
    assert (
        store.update(
            "memory",
            "v-missing",
            text="x",
            index_text=["p", "q"],
            embedding=[basis(34), basis(35)],
        )
        == 0
    )
    assert store.update("memory", "u", index_text=["p", "q"], embedding=[basis(34), basis(35)]) == 1
    assert embedder.texts_embedded == before
    assert store.get("memory", "u").content == "new long text " * 100
    for i in (34, 35):
        hit = store.search(None, 1, query_vector=basis(i))
        assert (hit[0][0].id, hit[0][1] < NEAR) == ("u", True)
    assert distances(store.search(None, 1, query_vector=basis(33)))["u"] > FAR


def test_update_embedding_none_clears_vectors(store: Any) -> None:
    store.add(["zebra crossing", "filler text"], record_type="memory", record_ids=["u", "f"])
    assert store.update("memory", "u", embedding=None) == 1
    assert ids(store.search("zebra crossing", 10)) == ["f"]
    assert store.get("memory", "u").content == "zebra crossing"
    # Giving search text again recomputes the vectors.
    assert store.update("memory", "u", index_text="zebra crossing") == 1
    hit = store.search("zebra crossing", 1)
    assert (hit[0][0].id, hit[0][1] < NEAR) == ("u", True)


def test_update_index_text_none_clears_retrieval_rows(store: Any) -> None:
    store.add(["zebra crossing", "filler text"], record_type="memory", record_ids=["u", "f"])
    assert store.update("memory", "u", index_text=None) == 1
    assert store.get("memory", "u").content == "zebra crossing"
    assert ids(store.search("zebra crossing", 10)) == ["f"]
    # With text given too, the text changes and retrieval stays cleared.
    assert store.update("memory", "u", text="new words", index_text=None) == 1
    assert store.get("memory", "u").content == "new words"
    assert ids(store.search("new words", 10)) == ["f"]


@pytest.mark.parametrize("new_text", [None, ""])
def test_update_text_none_or_empty_clears_search(store: Any, new_text: str | None) -> None:
    store.add(["zebra crossing", "filler text"], record_type="memory", record_ids=["u", "f"])
    assert store.update("memory", "u", text=new_text) == 1
    assert store.get("memory", "u").content == new_text
    assert ids(store.search("zebra crossing", 10)) == ["f"]


def test_update_metadata_is_replaced_whole(store: Any) -> None:
    store.add(["m"], record_type="memory", record_ids="u", metadata={"a": 1, "b": {"c": 2}})
    assert store.update("memory", "u", metadata={"z": True}) == 1
    rec = store.get("memory", "u")
    assert rec.metadata == {"z": True}
    assert rec.content == "m"
    assert store.list("memory", metadata_filter={"a": 1}) == []
    assert store.update("memory", "u", metadata=None) == 1
    assert store.get("memory", "u").metadata is None
    assert [r.id for r in store.list("memory", metadata_filter=None)] == ["u"]


def test_update_timestamp_set_and_cleared(store: Any) -> None:
    start = datetime.now(UTC) - timedelta(seconds=2)
    store.add(["m"], record_type="memory", record_ids="u", timestamps="2024-05-01T10:00:00+00:00")
    end = datetime.now(UTC) + timedelta(seconds=2)
    assert parse_ts(store.get("memory", "u").timestamp) == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert store.update("memory", "u", timestamp="2024-06-01T00:00:00+00:00") == 1
    assert parse_ts(store.get("memory", "u").timestamp) == datetime(2024, 6, 1, tzinfo=UTC)
    # Omitted: unchanged.
    assert store.update("memory", "u", metadata={"x": 1}) == 1
    assert parse_ts(store.get("memory", "u").timestamp) == datetime(2024, 6, 1, tzinfo=UTC)
    # None: falls back to the time the record was added.
    assert store.update("memory", "u", timestamp=None) == 1
    assert start <= parse_ts(store.get("memory", "u").timestamp) <= end


def test_update_unknown_id_or_type_returns_zero(store: Any) -> None:
    store.add(["keep me"], record_type="memory", record_ids="m")
    assert store.update("memory", "nope", text="x") == 0
    assert store.update("memory", "nope", metadata={"a": 1}) == 0
    assert store.update("fact", "m", text="x") == 0
    assert store.get("memory", "m").content == "keep me"
    assert store.list("memory", limit=None)[0].id == "m"
    assert len(store.list("memory", limit=None)) == 1


def test_update_message_keeps_seq_no(store: Any) -> None:
    store.add(
        ["one", "two"], record_type="message", thread_ids="t", roles="user", record_ids=["m1", "m2"]
    )
    assert store.update("message", "m2", text="two (edited)") == 1
    msgs = store.list_thread_messages("t")
    assert [(m.id, m.content, m.seq_no) for m in msgs] == [
        ("m1", "one", 1),
        ("m2", "two (edited)", 2),
    ]


def test_update_profile_text(store: Any) -> None:
    store.add_user("u1", "Likes tea.")
    assert store.update("user_profile", "u1", text="Likes coffee now.") == 1
    assert store.get("user_profile", "u1").content == "Likes coffee now."
    assert ids(store.search("Likes coffee now.", 1, record_types={"user_profile"})) == ["u1"]


def test_update_ttl_can_expire_and_revive(store: Any) -> None:
    store.add(["event"], record_type="memory", record_ids="e", timestamps="2000-01-01T00:00:00Z")
    assert store.get("memory", "e") is not None
    assert store.update("memory", "e", ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP) == 1
    assert store.get("memory", "e") is None
    assert store.list("memory") == []
    # Not purged yet: clearing the expiry makes it visible again.
    assert store.update("memory", "e", ttl_days=None) == 1
    assert store.get("memory", "e").content == "event"
    # CREATED_AT (the default anchor) counts from now, so one day keeps it visible.
    assert store.update("memory", "e", ttl_days=1) == 1
    assert store.get("memory", "e") is not None


# ============================================================================================
# delete / delete_thread / cascade
# ============================================================================================


def test_delete_record(store: Any) -> None:
    store.add(["delete me", "keep me"], record_type="memory", record_ids=["d", "k"])
    assert store.delete("fact", "d") == 0
    assert store.get("memory", "d") is not None
    assert store.delete("memory", "d") == 1
    assert store.get("memory", "d") is None
    assert ids(store.search("delete me", 10)) == ["k"]
    assert store.delete("memory", "d") == 0
    assert store.delete("memory", "never") == 0


def _seed_actors(store: Any) -> None:
    store.add_user("u1", "User one likes hiking.")
    store.add_user("u2", "User two likes chess.")
    # Reading: thread rows are written as record_type="thread" with no content.
    store.add([None], record_type="thread", record_ids="t1", user_ids="u1")
    store.add([None], record_type="thread", record_ids="t2", user_ids="u2")
    store.add(
        ["u1 hello", "u1 bye"],
        record_type="message",
        thread_ids="t1",
        user_ids="u1",
        roles="user",
        record_ids=["msg-t1-a", "msg-t1-b"],
    )
    store.add(
        ["u2 hello"],
        record_type="message",
        thread_ids="t2",
        user_ids="u2",
        roles="user",
        record_ids="msg-t2",
    )
    store.add(["thread memory"], record_type="memory", thread_ids="t1", record_ids="mem-t1")
    store.add(["u1 memory"], record_type="memory", user_ids="u1", record_ids="mem-u1")
    store.add(["u1 fact"], record_type="fact", user_ids="u1", record_ids="fact-u1")
    store.add(["u1 guideline"], record_type="guideline", user_ids="u1", record_ids="gl-u1")
    store.add(["u1 preference"], record_type="preference", user_ids="u1", record_ids="pref-u1")
    store.add(
        ["u1 elsewhere"],
        record_type="message",
        thread_ids="t-other",
        user_ids="u1",
        roles="user",
        record_ids="msg-u1-other",
    )
    store.add(["u2 memory"], record_type="memory", user_ids="u2", record_ids="mem-u2")
    store.add(["shared memory"], record_type="memory", record_ids="mem-none")


_U1_OWNED = [
    ("message", "msg-t1-a"),
    ("message", "msg-t1-b"),
    ("memory", "mem-t1"),
    ("memory", "mem-u1"),
    ("fact", "fact-u1"),
    ("guideline", "gl-u1"),
    ("preference", "pref-u1"),
    ("message", "msg-u1-other"),
]
_OTHERS = [
    ("user_profile", "u2"),
    ("message", "msg-t2"),
    ("memory", "mem-u2"),
    ("memory", "mem-none"),
]


def test_delete_user_profile_cascade(store: Any) -> None:
    _seed_actors(store)
    assert store.delete("user_profile", "u1", cascade=True) == 1
    assert store.get("user_profile", "u1") is None
    for rtype, rid in _U1_OWNED:
        assert store.get(rtype, rid) is None, rid
    for rtype, rid in _OTHERS:
        assert store.get(rtype, rid) is not None, rid
    assert store.list_thread_messages("t1") == []
    assert [m.id for m in store.list_thread_messages("t2")] == ["msg-t2"]
    gone = {rid for _, rid in _U1_OWNED} | {"u1"}
    assert not gone & set(ids(store.search("u1 hello memory fact", 50)))
    # The thread row went with the profile; u2's thread is still there.
    assert store.delete_thread("t1") == 0
    assert store.delete_thread("t2") == 1
    # A second cascade finds no profile.
    assert store.delete("user_profile", "u1", cascade=True) == 0


def test_delete_user_profile_without_cascade(store: Any) -> None:
    _seed_actors(store)
    assert store.delete("user_profile", "u1") == 1
    assert store.get("user_profile", "u1") is None
    for rtype, rid in _U1_OWNED:
        assert store.get(rtype, rid) is not None, rid


def test_delete_cascade_runs_when_profile_is_missing(store: Any) -> None:
    _seed_actors(store)
    store.add([None], record_type="thread", record_ids="t3", user_ids="u3")
    store.add(
        ["u3 msg"],
        record_type="message",
        thread_ids="t3",
        user_ids="u3",
        roles="user",
        record_ids="msg-u3",
    )
    store.add(["u3 memory"], record_type="memory", user_ids="u3", record_ids="mem-u3")
    assert store.delete("user_profile", "u3", cascade=True) == 0
    assert store.get("message", "msg-u3") is None
    assert store.get("memory", "mem-u3") is None
    assert store.delete_thread("t3") == 0
    for rtype, rid in _U1_OWNED + _OTHERS:
        assert store.get(rtype, rid) is not None, rid


def test_delete_agent_profile_cascade(store: Any) -> None:
    store.add_agent("a1", "Agent one.")
    store.add_agent("a2", "Agent two.")
    store.add([None], record_type="thread", record_ids="ta1", agent_ids="a1")
    store.add(
        ["in ta1"],
        record_type="message",
        thread_ids="ta1",
        agent_ids="a1",
        roles="assistant",
        record_ids="msg-a1",
    )
    store.add(["a1 memory"], record_type="memory", agent_ids="a1", record_ids="mem-a1")
    store.add(["a2 memory"], record_type="memory", agent_ids="a2", record_ids="mem-a2")
    assert store.delete("agent_profile", "a1", cascade=True) == 1
    assert store.get("agent_profile", "a1") is None
    assert store.get("message", "msg-a1") is None
    assert store.get("memory", "mem-a1") is None
    assert store.get("memory", "mem-a2").content == "a2 memory"
    assert store.get("agent_profile", "a2") is not None


def test_delete_thread_removes_thread_scoped_rows(store: Any) -> None:
    _seed_actors(store)
    assert store.delete_thread("t1") == 1
    assert store.list_thread_messages("t1") == []
    assert store.get("message", "msg-t1-a") is None
    assert store.get("memory", "mem-t1") is None
    assert not {"msg-t1-a", "msg-t1-b", "mem-t1"} & set(ids(store.search("hello memory", 50)))
    # Nothing outside the thread is touched, not even the owner's other records.
    assert store.get("user_profile", "u1") is not None
    assert store.get("memory", "mem-u1") is not None
    assert store.get("message", "msg-u1-other") is not None
    assert [m.id for m in store.list_thread_messages("t2")] == ["msg-t2"]
    assert store.delete_thread("t1") == 0


# ============================================================================================
# search: scope semantics (page 002, store.search column), types, ranking, k
# ============================================================================================


@pytest.fixture
def scoped(store: Any) -> Any:
    text = "scoped pizza note"
    store.add(
        [text],
        record_type="memory",
        record_ids="s-full",
        user_ids="u1",
        agent_ids="a1",
        thread_ids="t1",
    )
    store.add(
        [text],
        record_type="memory",
        record_ids="s-u2",
        user_ids="u2",
        agent_ids="a2",
        thread_ids="t2",
    )
    store.add([text], record_type="memory", record_ids="s-none")
    store.add([text], record_type="memory", record_ids="s-u1", user_ids="u1")
    return store


_ALL_SCOPED = {"s-full", "s-u2", "s-none", "s-u1"}
_SCOPE_CASES = [
    ({}, _ALL_SCOPED),
    ({"user_id": "u1"}, _ALL_SCOPED),
    ({"user_id": None}, _ALL_SCOPED),
    ({"thread_id": "t1"}, _ALL_SCOPED),
    ({"agent_id": "a2", "exact_agent_match": False}, _ALL_SCOPED),
    ({"user_id": "u1", "exact_user_match": True}, {"s-full", "s-u1"}),
    ({"user_id": None, "exact_user_match": True}, {"s-none"}),
    ({"exact_user_match": True}, {"s-none"}),
    ({"user_id": "nobody", "exact_user_match": True}, set()),
    ({"agent_id": "a1", "exact_agent_match": True}, {"s-full"}),
    ({"agent_id": None, "exact_agent_match": True}, {"s-none", "s-u1"}),
    ({"thread_id": "t2", "exact_thread_match": True}, {"s-u2"}),
    ({"thread_id": None, "exact_thread_match": True}, {"s-none", "s-u1"}),
    (
        {"user_id": "u1", "exact_user_match": True, "thread_id": None, "exact_thread_match": True},
        {"s-u1"},
    ),
    (
        {"user_id": "u1", "exact_user_match": True, "agent_id": "a1", "exact_agent_match": True},
        {"s-full"},
    ),
]


@pytest.mark.parametrize(
    ("kwargs", "expected"), _SCOPE_CASES, ids=[str(k) for k, _ in _SCOPE_CASES]
)
def test_search_scope_resolution(scoped: Any, kwargs: dict[str, Any], expected: set[str]) -> None:
    res = scoped.search("scoped pizza note", 10, record_types={"memory"}, **kwargs)
    assert set(ids(res)) == expected
    assert len(res) == len(expected)


@pytest.mark.parametrize(
    ("arg", "column"),
    [("user_id", "user_ids"), ("agent_id", "agent_ids"), ("thread_id", "thread_ids")],
)
def test_search_non_exact_scope_ranks_matching_records_first(
    store: Any, arg: str, column: str
) -> None:
    # Reading: identical texts tie on similarity; the one in the requested scope comes first.
    text = "identical ranking text"
    store.add([text], record_type="memory", record_ids="first", **{column: "x1"})
    store.add([text], record_type="memory", record_ids="second", **{column: "x2"})
    assert ids(store.search(text, 2, **{arg: "x2"})) == ["second", "first"]
    assert ids(store.search(text, 2, **{arg: "x1"})) == ["first", "second"]


def _seed_all_types(store: Any) -> None:
    store.add(
        ["pizza message"],
        record_type="message",
        thread_ids="tp",
        roles="user",
        record_ids="t-message",
    )
    store.add(["pizza memory"], record_type="memory", record_ids="t-memory")
    store.add(["pizza guideline"], record_type="guideline", record_ids="t-guideline")
    store.add(["pizza fact"], record_type="fact", record_ids="t-fact")
    store.add(["pizza preference"], record_type="preference", record_ids="t-preference")
    store.add_user("t-user", "pizza lover")
    store.add_agent("t-agent", "pizza agent")
    store.add(["pizza thread"], record_type="thread", record_ids="t-thread")


def test_search_default_record_types(store: Any) -> None:
    _seed_all_types(store)
    res = store.search("pizza", 50)
    assert {r.record_type for r, _ in res} == {
        "message",
        "memory",
        "guideline",
        "fact",
        "preference",
        "user_profile",
        "agent_profile",
    }
    assert "t-thread" not in ids(res)
    by_id = {r.id: r for r, _ in res}
    assert type(by_id["t-message"]) is MessageRecord
    assert type(by_id["t-preference"]) is PreferenceRecord
    assert type(by_id["t-user"]) is UserProfileRecord


def test_search_record_types_filter(store: Any) -> None:
    _seed_all_types(store)
    res = store.search("pizza", 50, record_types={"fact", "preference"})
    assert sorted(ids(res)) == ["t-fact", "t-preference"]
    res = store.search("pizza", 50, record_types={"message"})
    assert ids(res) == ["t-message"]


def test_search_one_result_per_record_distances_ascending_k_bound(store: Any) -> None:
    store.add(
        ["pizza a", "pizza bianca", "pizza calzone", "pasta", "salad"],
        record_type="memory",
        record_ids=["a", "b", "c", "d", "e"],
        index_texts=[["pizza a", "pizza a again", "pizza a once more"], None, None, None, None],
    )
    res = store.search("pizza a", 10)
    assert sorted(ids(res)) == ["a", "b", "c", "d", "e"]
    dists = [d for _, d in res]
    assert dists == sorted(dists)
    assert res[0][0].id == "a"
    assert all(isinstance(d, float) for d in dists)
    assert len(store.search("pizza a", 2)) == 2
    assert ids(store.search("pizza a", 2)) == ids(res)[:2]
    assert len(store.search("pizza a", 1)) == 1


# ============================================================================================
# TTL and retention
# ============================================================================================


def test_expired_record_is_invisible_and_purged(store: Any) -> None:
    store.add(
        ["ancient event", "ancient chat"],
        record_type="memory",
        record_ids=["old", "old2"],
        timestamps="2000-01-01T00:00:00",
        ttl_days=1,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    )
    store.add(
        ["ancient message"],
        record_type="message",
        thread_ids="t",
        roles="user",
        record_ids="old-msg",
        timestamps="2000-01-01T00:00:00Z",
        ttl_days=[3],
        ttl_anchor=[TimeToLiveAnchor.TIMESTAMP],
    )
    store.add(["fresh event"], record_type="memory", record_ids="fresh", ttl_days=1)
    assert store.get("memory", "old") is None
    assert store.get("message", "old-msg") is None
    assert [r.id for r in store.list("memory")] == ["fresh"]
    assert store.list_thread_messages("t") == []
    assert ids(store.search("ancient event", 10)) == ["fresh"]
    assert store.purge_expired() == 3
    assert store.purge_expired() == 0
    # Physically gone: an expiry update cannot bring them back.
    assert store.update("memory", "old", ttl_days=None) == 0
    assert store.get("memory", "fresh").content == "fresh event"


def test_created_at_anchor_ignores_old_event_time(store: Any) -> None:
    store.add(
        ["old but new"],
        record_type="memory",
        record_ids="c",
        timestamps="2000-01-01T00:00:00Z",
        ttl_days=1,
    )
    store.add(
        ["old but new 2"],
        record_type="memory",
        record_ids="c2",
        timestamps="2000-01-01T00:00:00Z",
        ttl_days=1,
        ttl_anchor=TimeToLiveAnchor.CREATED_AT,
    )
    assert store.get("memory", "c") is not None
    assert store.get("memory", "c2") is not None
    assert store.purge_expired() == 0


def test_ttl_none_never_expires_without_retention(store: Any) -> None:
    store.add(
        ["forever"],
        record_type="memory",
        record_ids="f",
        timestamps="2000-01-01T00:00:00Z",
        ttl_days=None,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    )
    assert store.get("memory", "f") is not None
    assert store.purge_expired() == 0


def test_retention_default_ttl_applies_when_omitted(make_store: Any) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=7))
    anchor = TimeToLiveAnchor.TIMESTAMP
    store.add(
        ["ten days"],
        record_type="memory",
        record_ids="d10",
        timestamps=days_ago(10),
        ttl_anchor=anchor,
    )
    store.add(
        ["three days"],
        record_type="memory",
        record_ids="d3",
        timestamps=days_ago(3),
        ttl_anchor=anchor,
    )
    store.add(
        ["explicit none"],
        record_type="memory",
        record_ids="none",
        timestamps=days_ago(10),
        ttl_anchor=anchor,
        ttl_days=None,
    )
    store.add(
        ["explicit 30"],
        record_type="memory",
        record_ids="d30",
        timestamps=days_ago(10),
        ttl_anchor=anchor,
        ttl_days=30,
    )
    assert store.get("memory", "d10") is None
    assert {r.id for r in store.list("memory")} == {"d3", "none", "d30"}


def test_retention_max_clamps_with_warning(make_store: Any) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=5))
    anchor = TimeToLiveAnchor.TIMESTAMP
    with pytest.warns(UserWarning):
        store.add(
            ["clamped old"],
            record_type="memory",
            record_ids="clamped-old",
            timestamps=days_ago(10),
            ttl_anchor=anchor,
            ttl_days=30,
        )
    with pytest.warns(UserWarning):
        store.add(
            ["clamped new"],
            record_type="memory",
            record_ids="clamped-new",
            timestamps=days_ago(2),
            ttl_anchor=anchor,
            ttl_days=30,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        store.add(
            ["within max"],
            record_type="memory",
            record_ids="within",
            timestamps=days_ago(4),
            ttl_anchor=anchor,
            ttl_days=5,
        )
    assert store.get("memory", "clamped-old") is None
    assert store.get("memory", "clamped-new") is not None
    assert store.get("memory", "within") is not None
    # update() clamps too.
    with pytest.warns(UserWarning):
        assert (
            store.update("memory", "within", ttl_days=90, ttl_anchor=anchor, timestamp=days_ago(6))
            == 1
        )
    assert store.get("memory", "within") is None


def test_retention_ttl_none_uses_max(make_store: Any) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=5))
    anchor = TimeToLiveAnchor.TIMESTAMP
    store.add(
        ["none old"],
        record_type="memory",
        record_ids="old",
        timestamps=days_ago(10),
        ttl_anchor=anchor,
        ttl_days=None,
    )
    store.add(
        ["none new"],
        record_type="memory",
        record_ids="new",
        timestamps=days_ago(2),
        ttl_anchor=anchor,
        ttl_days=None,
    )
    assert store.get("memory", "old") is None
    assert store.get("memory", "new") is not None
    # update(ttl_days=None) also uses the max instead of clearing the expiry.
    assert (
        store.update("memory", "new", ttl_days=None, ttl_anchor=anchor, timestamp=days_ago(6)) == 1
    )
    assert store.get("memory", "new") is None


def _with_tz(tz: str) -> str | None:
    previous = os.environ.get("TZ")
    os.environ["TZ"] = tz
    time.tzset()
    return previous


def _restore_tz(previous: str | None) -> None:
    if previous is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = previous
    time.tzset()


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="needs time.tzset")
def test_naive_timestamps_are_utc(store: Any) -> None:
    fmt = "%Y-%m-%dT%H:%M:%S"
    now = datetime.now(UTC)
    # Read as UTC, this one expires in 3 hours; read as local time in UTC+10 it expired 7 hours
    # ago.
    previous = _with_tz("AEST-10")
    try:
        store.add(
            ["east"],
            record_type="memory",
            record_ids="east",
            timestamps=(now - timedelta(days=1) + timedelta(hours=3)).strftime(fmt),
            ttl_days=1,
            ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
        )
        assert store.get("memory", "east") is not None
    finally:
        _restore_tz(previous)
    # Read as UTC, this one expired 3 hours ago; read as local time in UTC-10 it would live
    # 7 more hours.
    previous = _with_tz("HST10")
    try:
        store.add(
            ["west"],
            record_type="memory",
            record_ids="west",
            timestamps=(now - timedelta(days=1) - timedelta(hours=3)).strftime(fmt),
            ttl_days=1,
            ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
        )
        assert store.get("memory", "west") is None
    finally:
        _restore_tz(previous)
    assert store.get("memory", "east") is not None


# ============================================================================================
# KEYWORD / HYBRID strategies, index sync
# ============================================================================================


def test_keyword_store_works_without_an_embedder(make_store: Any) -> None:
    kw = make_store(search_strategy=SearchStrategy.KEYWORD, embedder=None)
    kw.add(
        ["Order ORD-77812 shipped to Lisbon", "Order ORD-77813 delayed", "weather is sunny"],
        record_type="memory",
        record_ids=["o1", "o2", "w"],
    )
    kw.add_user("u1", "Collects vintage typewriters.")
    res = kw.search("ORD-77812", 3)
    assert res[0][0].id == "o1"
    assert "w" not in ids(res)
    assert ids(kw.search("typewriters", 3)) == ["u1"]
    assert kw.search("xylophone", 3) == []
    dists = [d for _, d in kw.search("order", 3)]
    assert dists == sorted(dists)
    assert len(dists) == 2


def test_keyword_search_uses_index_texts(make_store: Any, embedder: HashingEmbedder) -> None:
    kw = make_store(search_strategy=SearchStrategy.KEYWORD)
    kw.add(["Stored body"], record_type="memory", record_ids="k", index_texts=["kumquat"])
    before = embedder.texts_embedded
    assert ids(kw.search("kumquat", 3)) == ["k"]
    # KEYWORD never embeds the query.
    assert embedder.texts_embedded == before
    assert kw.search("Stored", 3) == []
    assert kw.get("memory", "k").content == "Stored body"


def test_keyword_scope_filters(make_store: Any) -> None:
    kw = make_store(search_strategy=SearchStrategy.KEYWORD, embedder=None)
    kw.add(
        ["kiwi one", "kiwi two"],
        record_type="memory",
        record_ids=["k1", "k2"],
        user_ids=["u1", "u2"],
    )
    assert ids(kw.search("kiwi", 5, user_id="u2", exact_user_match=True)) == ["k2"]
    assert set(ids(kw.search("kiwi", 5))) == {"k1", "k2"}


def test_hybrid_returns_results_from_both_branches(make_store: Any) -> None:
    hy = make_store(search_strategy=SearchStrategy.HYBRID)
    hy.add(
        [
            "photosynthetic",
            "train timetable",
            "invoice total",
            "ticket ZQ-7731 escalated",
            "kayak rental",
            "ticket ZQ-7713 pending",
        ],
        record_type="memory",
        record_ids=["photo", "train", "invoice", "zq", "kayak", "zq-other"],
    )
    # No shared keyword with the query: only the vector branch can rank it first.
    res = hy.search("photosynthesis", 2)
    assert res[0][0].id == "photo"
    # An exact identifier.
    res = hy.search("ZQ-7731", 3)
    assert res[0][0].id == "zq"
    dists = [d for _, d in res]
    assert dists == sorted(dists)
    assert len(set(ids(res))) == len(res) <= 3


def test_manual_sync_defers_keyword_visibility(make_store: Any) -> None:
    st = make_store(
        search_strategy=SearchStrategy.KEYWORD,
        embedder=None,
        search_index_sync=SearchIndexSyncMode.MANUAL,
    )
    st.add(["kiwi smoothie recipe"], record_type="memory", record_ids="k1")
    assert st.get("memory", "k1").content == "kiwi smoothie recipe"
    assert st.search("kiwi", 3) == []
    st.sync_search_index()
    assert ids(st.search("kiwi", 3)) == ["k1"]


def test_on_commit_sync_is_immediate(make_store: Any) -> None:
    st = make_store(
        search_strategy=SearchStrategy.KEYWORD,
        embedder=None,
        search_index_sync=SearchIndexSyncMode.ON_COMMIT,
    )
    st.add(["kiwi smoothie recipe"], record_type="memory", record_ids="k1")
    assert ids(st.search("kiwi", 3)) == ["k1"]


# ============================================================================================
# memory_store_id namespaces, reopening, schema checks
# ============================================================================================


def test_memory_store_ids_are_separate_namespaces(make_store: Any) -> None:
    alpha = make_store(name="shared.db", memory_store_id="alpha")
    beta = make_store(name="shared.db", memory_store_id="beta")
    alpha.add(["alpha secret"], record_type="memory", record_ids="same-id")
    alpha.add_user("u1", "Alpha user.")
    assert beta.get("memory", "same-id") is None
    assert beta.list("memory") == []
    assert beta.list("user_profile") == []
    assert beta.search("alpha secret", 5) == []
    # The same id is free in the other namespace.
    assert beta.add(["beta secret"], record_type="memory", record_ids="same-id") == ["same-id"]
    assert alpha.get("memory", "same-id").content == "alpha secret"
    assert beta.get("memory", "same-id").content == "beta secret"
    res = alpha.search("beta secret", 5, record_types={"memory"})
    assert ids(res) == ["same-id"]
    assert res[0][0].content == "alpha secret"
    default = make_store(name="shared.db")
    assert default.list("memory") == []

    alpha.close()
    reopened = make_store(
        name="shared.db", memory_store_id="alpha", schema_policy=SchemaPolicy.REQUIRE_EXISTING
    )
    assert reopened.get("memory", "same-id").content == "alpha secret"
    assert [r.id for r in reopened.list("user_profile")] == ["u1"]


@pytest.mark.parametrize(
    "policy",
    [SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_EMPTY, SchemaPolicy.CREATE_IF_NECESSARY],
)
def test_reopen_keeps_records_and_search(make_store: Any, policy: SchemaPolicy) -> None:
    first = make_store(name="reopen.db")
    first.add(
        ["hello", "bye"],
        record_type="message",
        thread_ids="t",
        roles="user",
        record_ids=["m1", "m2"],
    )
    first.add(["zebra crossing"], record_type="memory", record_ids="z", metadata={"a": [1]})
    first.add_user("u1", "Likes tea.")
    first.close()

    again = make_store(name="reopen.db", schema_policy=policy)
    assert again.get("memory", "z").metadata == {"a": [1]}
    hit = again.search("zebra crossing", 1)
    assert (hit[0][0].id, hit[0][1] < NEAR) == ("z", True)
    assert [(m.id, m.seq_no) for m in again.list_thread_messages("t")] == [("m1", 1), ("m2", 2)]
    again.add(["again"], record_type="message", thread_ids="t", roles="user", record_ids="m3")
    assert again.get("message", "m3").seq_no == 3
    assert again.get("user_profile", "u1").content == "Likes tea."


def test_recreate_drops_existing_records(make_store: Any) -> None:
    first = make_store(name="recreate.db")
    first.add(["doomed"], record_type="memory", record_ids="d")
    first.close()
    again = make_store(name="recreate.db", schema_policy=SchemaPolicy.RECREATE)
    assert again.list("memory") == []
    assert again.get("memory", "d") is None


class _OtherModel(HashingEmbedder):
    """Same dimension, different model."""

    @property
    def model_identity(self) -> str:
        return "tests.some-other-model"


@pytest.mark.parametrize(
    ("other", "pattern"),
    [
        pytest.param(_OtherModel(), r"(?i)model", id="same dim, other model"),
        pytest.param(HashingEmbedder(dim=32), r"(?i)model|dimension", id="other dim"),
    ],
)
@pytest.mark.parametrize(
    "policy", [SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_NECESSARY]
)
def test_reopen_with_another_model_is_refused(
    make_store: Any, other: HashingEmbedder, pattern: str, policy: SchemaPolicy
) -> None:
    first = make_store(name="model.db")
    first.add(["vectors from model one"], record_type="memory", record_ids="v")
    first.close()
    with pytest.raises(ValueError, match=pattern):
        make_store(name="model.db", embedder=other, schema_policy=policy)
    # The data is still readable with the right model.
    again = make_store(name="model.db", schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert again.get("memory", "v").content == "vectors from model one"


def test_vector_store_on_keyword_only_schema_fails_at_start_up(make_store: Any) -> None:
    kw = make_store(name="kw.db", search_strategy=SearchStrategy.KEYWORD, embedder=None)
    kw.add(["keyword only"], record_type="memory", record_ids="k")
    kw.close()
    with pytest.raises(Exception, match=r"(?i)vector|strategy|keyword|schema"):
        make_store(name="kw.db", schema_policy=SchemaPolicy.REQUIRE_EXISTING)


def test_keyword_store_upgrades_vector_schema_if_necessary(make_store: Any) -> None:
    # Page 000: CREATE_IF_NECESSARY can upgrade a vector schema for keyword search.
    vec = make_store(name="upgrade.db")
    vec.add(["Order ORD-5521 packed"], record_type="memory", record_ids="o")
    vec.close()
    kw = make_store(
        name="upgrade.db",
        search_strategy=SearchStrategy.KEYWORD,
        embedder=None,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )
    assert ids(kw.search("ORD-5521", 3)) == ["o"]


# ============================================================================================
# Record status
# ============================================================================================


def test_invalid_records_are_kept_and_can_be_excluded(store: Any) -> None:
    store.add(
        ["valid pizza", "invalid pizza"],
        record_type="memory",
        record_ids=["ok", "bad"],
        statuses=[RecordStatus.VALID, RecordStatus.INVALID],
    )
    store.add(
        ["also invalid pizza"],
        record_type="fact",
        record_ids="bad-fact",
        statuses=RecordStatus.INVALID,
    )
    assert store.get("memory", "bad").status is RecordStatus.INVALID
    assert store.get("fact", "bad-fact").status is RecordStatus.INVALID
    assert store.get("memory", "ok").status is RecordStatus.VALID
    assert set(ids(store.search("pizza", 10))) == {"ok", "bad", "bad-fact"}
    assert ids(store.search("pizza", 10, include_invalid_results=False)) == ["ok"]
    assert store.update("memory", "ok", status=RecordStatus.INVALID) == 1
    assert store.get("memory", "ok").status is RecordStatus.INVALID
    assert store.search("pizza", 10, include_invalid_results=False) == []

"""``AgentMemoryStore``: LangGraph's ``BaseStore`` contract over both engines.

Listing behaviour is checked against LangGraph's own ``InMemoryStore`` where the two must
agree (namespaces, prefix/suffix/wildcards, max_depth, pagination).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.integrations.langgraph import AgentMemoryStore

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations" / "langgraph.md"


def _store(client: Any, **kwargs: Any) -> AgentMemoryStore:
    kwargs.setdefault("index", {"fields": ["text"]})
    return AgentMemoryStore(client, **kwargs)


# ---------------------------------------------------------------------------- put / get


def test_put_get_round_trips_the_value_exactly(client: Any) -> None:
    store = _store(client)
    value = {
        "text": "héllo ✓",
        "float": 1.0,
        "neg_zero": -0.0,
        "big": 2**62,
        "tiny": 1e-300,
        "huge": 1e300,
        "flag": False,
        "none": None,
        "nested": {"z": [1, 2.5, {"a": None}], "a": "b"},
        "empty": {},
    }
    store.put(("docs", "u1"), "k1", value)
    item = store.get(("docs", "u1"), "k1")
    assert item is not None
    assert item.value == value
    assert list(item.value) == list(value)  # key order kept
    assert list(item.value["nested"]) == ["z", "a"]
    assert type(item.value["float"]) is float and type(item.value["big"]) is int
    assert type(item.value["huge"]) is float and item.value["huge"] == 1e300
    assert str(item.value["neg_zero"]) == "-0.0"
    assert item.key == "k1" and item.namespace == ("docs", "u1")
    assert item.created_at == item.updated_at
    assert item.created_at.tzinfo is not None


def test_put_replaces_value_keeps_created_at(client: Any) -> None:
    store = _store(client)
    store.put(("docs",), "k", {"text": "first", "extra": 1})
    first = store.get(("docs",), "k")
    store.put(("docs",), "k", {"text": "second"})
    second = store.get(("docs",), "k")
    assert first is not None and second is not None
    assert second.value == {"text": "second"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    # One record, not two.
    assert len(store.search(("docs",))) == 1
    assert len(client.store.list("memory")) == 1


def test_delete_and_missing(client: Any) -> None:
    store = _store(client)
    store.put(("docs",), "k", {"text": "x"})
    store.put(("other",), "k", {"text": "y"})
    assert store.get(("docs",), "missing") is None
    assert store.get(("docs", "sub"), "k") is None
    store.delete(("docs",), "k")
    assert store.get(("docs",), "k") is None
    store.delete(("docs",), "k")  # deleting twice is fine
    other = store.get(("other",), "k")
    assert other is not None and other.value == {"text": "y"}


def test_batch_reads_before_writes_and_last_put_wins(client: Any) -> None:
    store = _store(client)
    store.put(("ns",), "a", {"text": "old"})
    results = store.batch(
        [
            GetOp(("ns",), "a"),
            PutOp(("ns",), "a", {"text": "new"}),
            PutOp(("ns",), "b", {"text": "one"}),
            PutOp(("ns",), "b", {"text": "two"}),
            GetOp(("ns",), "b"),
            SearchOp(("ns",)),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is not None and results[0].value == {"text": "old"}
    assert results[1] is None and results[2] is None and results[3] is None
    assert results[4] is None  # not there before the batch
    assert [i.key for i in results[5]] == ["a"]
    assert results[6] == [("ns",)]
    item_a, item_b = store.get(("ns",), "a"), store.get(("ns",), "b")
    assert item_a is not None and item_a.value == {"text": "new"}
    assert item_b is not None and item_b.value == {"text": "two"}


def test_new_items_of_one_batch_are_one_write(client: Any) -> None:
    store = _store(client)
    calls: list[int] = []
    original = client.store.add_batches

    def counting(batches: Any, **kw: Any) -> Any:
        calls.append(sum(len(b.contents) for b in batches))
        return original(batches, **kw)

    client.store.add_batches = counting
    try:
        store.batch([PutOp(("ns",), f"k{i}", {"text": f"item {i}"}) for i in range(5)])
    finally:
        del client.store.add_batches
    assert calls == [5]
    assert sorted(i.key for i in store.search(("ns",), limit=10)) == [f"k{i}" for i in range(5)]


# ---------------------------------------------------------------------------- search


def test_search_by_namespace_prefix(client: Any) -> None:
    store = _store(client)
    store.put(("a",), "1", {"text": "x"})
    store.put(("a", "b"), "2", {"text": "x"})
    store.put(("a", "b", "c"), "3", {"text": "x"})
    store.put(("a", "c"), "4", {"text": "x"})
    store.put(("ab",), "5", {"text": "x"})
    store.put(('q"u\\o', "t"), "6", {"text": "x"})

    def keys(prefix: tuple[str, ...]) -> list[str]:
        return sorted(i.key for i in store.search(prefix, limit=50))

    assert keys(()) == ["1", "2", "3", "4", "5", "6"]
    assert keys(("a",)) == ["1", "2", "3", "4"]
    assert keys(("a", "b")) == ["2", "3"]
    assert keys(("a", "b", "c")) == ["3"]
    assert keys(("a", "b", "c", "d")) == []
    assert keys(("b",)) == []
    assert keys(('q"u\\o',)) == ["6"]


def test_search_without_query_is_newest_first_with_limit_offset(client: Any) -> None:
    store = _store(client)
    for i in range(7):
        store.put(("ns",), f"k{i}", {"text": f"t{i}", "i": i})
    assert [i.key for i in store.search(("ns",), limit=3)] == ["k6", "k5", "k4"]
    assert [i.key for i in store.search(("ns",), limit=3, offset=3)] == ["k3", "k2", "k1"]
    assert [i.key for i in store.search(("ns",), limit=3, offset=6)] == ["k0"]
    assert store.search(("ns",), limit=0) == []
    assert all(i.score is None for i in store.search(("ns",)))
    # Python-side comparison filters page the same way.
    page = store.search(("ns",), filter={"i": {"$gte": 2}}, limit=2, offset=1)
    assert [i.key for i in page] == ["k5", "k4"]


FILTER_ITEMS = {
    "a": {"text": "alpha", "n": 1, "color": "red", "tags": ["x", "y"], "doc": {"lang": "en"}},
    "b": {"text": "beta", "n": 2.5, "color": "blue", "tags": ["x"], "doc": {"lang": "fr"}},
    "c": {"text": "gamma", "n": 10, "color": "red", "flag": True, "doc": {"lang": "en", "v": 2}},
    "d": {"text": "delta", "n": "10", "color": None, "day": "2024-05-01"},
    "e": {"text": "eps", "day": "2024-06-15"},
}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"color": "red"}, "ac"),
        ({"color": {"$eq": "red"}}, "ac"),
        ({"color": {"$ne": "red"}}, "bde"),
        ({"color": None}, "d"),
        ({"n": 1}, "a"),
        ({"n": 1.0}, "a"),
        ({"n": {"$gt": 2}}, "bc"),
        ({"n": {"$gte": 2.5}}, "bc"),
        ({"n": {"$lt": 10}}, "ab"),
        ({"n": {"$lte": 10}}, "abc"),
        ({"n": {"$gt": 1, "$lt": 10}}, "b"),
        ({"day": {"$gte": "2024-06-01"}}, "e"),
        ({"tags": ["x", "y"]}, "a"),
        ({"doc": {"lang": "en"}}, "ac"),
        ({"doc": {"v": {"$gt": 1}}}, "c"),
        ({"doc": {"$eq": {"lang": "en"}}}, "a"),
        ({"doc": {"$ne": {"lang": "en"}}}, "bcde"),
        ({"flag": True}, "c"),
        ({"flag": 1}, ""),
        ({"color": "red", "n": {"$gt": 5}}, "c"),
        ({"missing": {"$ne": 1}}, "abcde"),
        ({"missing": {"$gt": 0}}, ""),
    ],
)
def test_filters(client: Any, flt: dict[str, Any], expected: str) -> None:
    store = _store(client)
    store.batch([PutOp(("f",), k, v) for k, v in FILTER_ITEMS.items()])
    got = "".join(sorted(i.key for i in store.search(("f",), filter=flt, limit=20)))
    assert got == expected
    # The same filter narrows a semantic search too.
    ranked = store.search(("f",), query="alpha beta gamma", filter=flt, limit=20)
    assert "".join(sorted(i.key for i in ranked)) == expected


def test_semantic_search_ranks_by_similarity(client: Any) -> None:
    store = _store(client)
    store.put(("docs",), "py", {"text": "python programming language tutorial"})
    store.put(("docs",), "cook", {"text": "baking sourdough bread at home"})
    store.put(("docs",), "ts", {"text": "typescript compiler options"})
    store.put(("docs",), "hidden", {"text": "python programming language tutorial"}, index=False)
    hits = store.search(("docs",), query="python programming tutorial")
    assert hits[0].key == "py"
    assert "hidden" not in [h.key for h in hits]
    scores = [h.score for h in hits]
    assert all(isinstance(s, float) for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert scores[0] is not None and scores[0] > 0.5
    bread = store.search(("docs",), query="sourdough bread baking", limit=1)
    assert [h.key for h in bread] == ["cook"]
    # limit / offset over the ranking
    all_keys = [h.key for h in store.search(("docs",), query="python programming", limit=10)]
    assert [
        h.key for h in store.search(("docs",), query="python programming", limit=1, offset=1)
    ] == [all_keys[1]]
    # index=False items are still reachable without a query
    assert store.get(("docs",), "hidden") is not None
    assert "hidden" in [i.key for i in store.search(("docs",))]


def test_index_fields_and_per_put_override(client: Any) -> None:
    store = _store(client, index={"fields": ["title", "tags[*]"]})
    store.put(("n",), "a", {"title": "quantum physics lecture", "body": "sourdough bread"})
    store.put(("n",), "b", {"title": "misc", "tags": ["gardening tomatoes", "compost"]})
    store.put(("n",), "c", {"title": "zzz", "body": "sourdough bread recipe"}, index=["body"])
    assert store.search(("n",), query="sourdough bread", limit=1)[0].key == "c"
    assert store.search(("n",), query="quantum physics", limit=1)[0].key == "a"
    assert store.search(("n",), query="gardening tomatoes", limit=1)[0].key == "b"
    assert store.search(("n",), query="compost", limit=1)[0].key == "b"
    # Re-putting with other fields re-indexes.
    store.put(("n",), "a", {"title": "sourdough bread baking class"})
    assert store.search(("n",), query="quantum physics", limit=3)[0].key != "a"
    assert store.search(("n",), query="sourdough bread baking class", limit=1)[0].key == "a"


def test_without_index_a_query_lists_filtered_items(client: Any) -> None:
    store = AgentMemoryStore(client)
    store.put(("n",), "a", {"text": "python"})
    store.put(("n",), "b", {"text": "bread"})
    hits = store.search(("n",), query="python")
    assert sorted(h.key for h in hits) == ["a", "b"]
    assert all(h.score is None for h in hits)


def test_hybrid_strategy_scores_are_similarities(make_client: Any) -> None:
    client = make_client(search_strategy=SearchStrategy.HYBRID)
    store = _store(client)
    store.put(("d",), "a", {"text": "the invoice number is ZX-4411"})
    store.put(("d",), "b", {"text": "weather is sunny in Lisbon"})
    hits = store.search(("d",), query="invoice ZX-4411")
    assert hits[0].key == "a"
    assert hits[0].score is not None and 0.0 <= hits[0].score <= 1.0


# ---------------------------------------------------------------------------- namespaces

NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "u1", "v1"),
    ("users", "u2", "v1"),
    ("users", "u2", "v2"),
]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"prefix": ("a",)},
        {"prefix": ("a", "b")},
        {"prefix": ("a", "b"), "max_depth": 3},
        {"max_depth": 2},
        {"max_depth": 1},
        {"suffix": ("f",)},
        {"suffix": ("v1",)},
        {"prefix": ("a",), "suffix": ("f",)},
        {"prefix": ("*", "b")},
        {"prefix": ("users", "*", "v2")},
        {"suffix": ("*", "f")},
        {"suffix": ("b", "*")},
        {"prefix": ("a", "b", "d", "e", "x")},
        {"prefix": ("zzz",)},
        {"limit": 3},
        {"limit": 3, "offset": 2},
        {"offset": 8},
        {"prefix": ("a",), "max_depth": 2, "limit": 1, "offset": 1},
    ],
)
def test_list_namespaces_matches_in_memory_store(client: Any, kwargs: dict[str, Any]) -> None:
    ours = _store(client, user_id_from=1)
    reference = InMemoryStore()
    ops = [PutOp(ns, "k", {"text": "/".join(ns)}) for ns in NAMESPACES]
    ours.batch(ops)
    reference.batch(ops)
    expected = reference.list_namespaces(**kwargs)
    assert ours.list_namespaces(**kwargs) == expected
    if not kwargs:
        assert expected == sorted(NAMESPACES)


def test_list_namespaces_several_conditions(client: Any) -> None:
    store = _store(client)
    store.batch([PutOp(ns, "k", {"text": "x"}) for ns in NAMESPACES])
    op = ListNamespacesOp(
        match_conditions=(
            MatchCondition("prefix", ("a",)),
            MatchCondition("prefix", ("*", "b")),
            MatchCondition("suffix", ("c",)),
        )
    )
    assert store.batch([op])[0] == [("a", "b", "c")]


# ---------------------------------------------------------------------------- scopes


def test_namespace_maps_to_user_and_agent_scope(client: Any) -> None:
    store = _store(client, user_id_from=1, agent_id="helper")
    store.put(("memories", "alice"), "tea", {"text": "Alice drinks green tea"})
    store.put(("memories", "bob"), "coffee", {"text": "Bob drinks black coffee"})
    store.put(("global",), "rule", {"text": "Be polite"})
    alice = client.list_memories(user_id="alice")
    assert [m.user_id for m in alice] == ["alice"]
    assert alice[0].agent_id == "helper"
    assert json.loads(alice[0].content) == {"text": "Alice drinks green tea"}
    results = client.search("green tea", user_id="alice", max_results=5)
    assert any(json.loads(r.record.content)["text"] == "Alice drinks green tea" for r in results)
    # The namespace too short for position 1 stays unscoped.
    rule = [m for m in client.list_memories(user_id=None) if "polite" in m.content]
    assert len(rule) == 1 and rule[0].user_id is None
    # Searches pinned to a user see that user only; the prefix above spans users.
    assert [i.key for i in store.search(("memories", "alice"), query="drinks")] == ["tea"]
    assert sorted(i.key for i in store.search(("memories",), query="drinks")) == ["coffee", "tea"]
    # Another agent's store does not see these items; one with the same agent does.
    assert AgentMemoryStore(client, agent_id="other").search(()) == []
    assert AgentMemoryStore(client, agent_id="other").list_namespaces() == []
    same = AgentMemoryStore(client, agent_id="helper", user_id_from=1)
    item = same.get(("memories", "alice"), "tea")
    assert item is not None and item.value == {"text": "Alice drinks green tea"}


def test_callable_user_mapping(client: Any) -> None:
    store = AgentMemoryStore(client, user_id_from=lambda ns: ns[-1] if ns[0] == "u" else None)
    store.put(("u", "x", "carol"), "k", {"v": 1})
    store.put(("shared",), "k", {"v": 2})
    assert [m.user_id for m in client.list_memories(user_id="carol")] == ["carol"]
    assert len(client.list_memories(user_id=None)) == 1


# ---------------------------------------------------------------------------- TTL


def test_ttl_expiry_and_refresh_on_read(client: Any) -> None:
    ttl = 0.015  # minutes: 0.9 s
    store = _store(client)
    quiet = _store(client, ttl={"refresh_on_read": False, "default_ttl": ttl})
    assert store.supports_ttl is True
    store.put(("t",), "refreshed", {"text": "kept alive by reads"}, ttl=ttl)
    store.put(("t",), "searched", {"text": "kept alive by searches"}, ttl=ttl)
    store.put(("t",), "idle", {"text": "nobody reads me"}, ttl=ttl)
    quiet.put(("t",), "defaulted", {"text": "default ttl from the config"})
    store.put(("t",), "forever", {"text": "no ttl"})
    time.sleep(0.5)
    assert store.get(("t",), "refreshed") is not None  # refreshes (default)
    assert [i.key for i in store.search(("t",), filter={"text": "kept alive by searches"})] == [
        "searched"
    ]
    assert store.get(("t",), "idle", refresh_ttl=False) is not None
    assert quiet.get(("t",), "defaulted") is not None  # refresh_on_read=False: no refresh
    time.sleep(0.6)  # 1.1 s after the puts, 0.6 s after the refreshes
    assert store.get(("t",), "idle") is None
    assert quiet.get(("t",), "defaulted") is None
    assert store.get(("t",), "refreshed", refresh_ttl=False) is not None
    assert store.get(("t",), "searched", refresh_ttl=False) is not None
    assert sorted(i.key for i in store.search(("t",))) == ["forever", "refreshed", "searched"]
    ranked = store.search(("t",), query="nobody reads me", limit=10)
    assert "idle" not in [i.key for i in ranked]
    # A key put again after it expired is a new item.
    store.put(("t",), "idle", {"text": "back"})
    item = store.get(("t",), "idle")
    assert item is not None and item.value == {"text": "back"}
    assert item.created_at == item.updated_at


def test_expired_namespace_is_not_listed(client: Any) -> None:
    store = _store(client)
    store.put(("gone", "soon"), "k", {"text": "x"}, ttl=0.005)  # 0.3 s
    store.put(("stays",), "k", {"text": "x"})
    assert store.list_namespaces() == [("gone", "soon"), ("stays",)]
    time.sleep(0.4)
    assert store.list_namespaces() == [("stays",)]
    assert store.search(("gone",)) == []


# ---------------------------------------------------------------------------- async


async def test_async_twins(client: Any) -> None:
    store = _store(client)
    await store.aput(("as", "x"), "k1", {"text": "asynchronous python code"})
    await store.aput(("as", "y"), "k2", {"text": "bread"})
    item = await store.aget(("as", "x"), "k1")
    assert item is not None and item.value == {"text": "asynchronous python code"}
    hits = await store.asearch(("as",), query="python code", limit=1)
    assert [h.key for h in hits] == ["k1"]
    assert await store.alist_namespaces(prefix=("as",)) == [("as", "x"), ("as", "y")]
    await store.adelete(("as", "x"), "k1")
    assert await store.aget(("as", "x"), "k1") is None
    results = await store.abatch([GetOp(("as", "y"), "k2"), SearchOp(("as",))])
    assert results[0] is not None and [i.key for i in results[1]] == ["k2"]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda s: s.put(("a.b",), "k", {}), InvalidNamespaceError, "period"),
        (lambda s: s.put(("",), "k", {}), InvalidNamespaceError, "empty"),
        (lambda s: s.put((), "k", {}), InvalidNamespaceError, "empty"),
        (lambda s: s.put(("langgraph",), "k", {}), InvalidNamespaceError, "langgraph"),
        (lambda s: s.batch([PutOp(("a", 1), "k", {})]), InvalidNamespaceError, "strings"),  # type: ignore[arg-type]
        (lambda s: s.batch([GetOp(["a"], "k")]), TypeError, "namespace"),  # type: ignore[arg-type]
        (lambda s: s.batch([PutOp(("a",), 5, {})]), TypeError, "key"),  # type: ignore[arg-type]
        (lambda s: s.put(("a",), "k", ["x"]), TypeError, "value"),  # type: ignore[arg-type]
        (lambda s: s.put(("a",), "k", {"x": {1, 2}}), TypeError, "value"),
        (lambda s: s.put(("a",), "k", {1: "x"}), TypeError, "value"),  # type: ignore[dict-item]
        (lambda s: s.put(("a",), "k", {"x": float("nan")}), ValueError, "value"),
        (lambda s: s.put(("a",), "k", {"x": 2**70}), ValueError, "value"),
        (lambda s: s.put(("a",), "k", {}, ttl=-1), ValueError, "ttl"),
        (lambda s: s.put(("a",), "k", {}, ttl=True), TypeError, "ttl"),
        (lambda s: s.put(("a",), "k", {}, index="text"), TypeError, "index"),  # type: ignore[arg-type]
        (lambda s: s.search(("a",), filter={"x": {"$regex": "a"}}), ValueError, "filter"),
        (lambda s: s.search(("a",), filter={"x": {"$gt": 1, "y": 2}}), ValueError, "filter"),
        (lambda s: s.search(("a",), filter={"$or": []}), ValueError, "filter"),
        (lambda s: s.search(("a",), filter={"x": {"$gt": [1]}}), ValueError, "filter"),
        (lambda s: s.search(("a",), filter={'x"y': 1}), ValueError, "filter"),
        (lambda s: s.search(("a",), filter="x"), TypeError, "filter"),  # type: ignore[arg-type]
        (lambda s: s.search(("a",), limit=-1), ValueError, "limit"),
        (lambda s: s.search(("a",), offset=-2), ValueError, "offset"),
        (lambda s: s.search(("a",), query="x", limit=20_000), ValueError, "limit"),
        (lambda s: s.list_namespaces(max_depth=0), ValueError, "max_depth"),
        (lambda s: s.list_namespaces(prefix=("a.b",)), InvalidNamespaceError, "period"),
        (
            lambda s: s.batch([ListNamespacesOp((MatchCondition("middle", ("a",)),))]),  # type: ignore[arg-type]
            ValueError,
            "match_type",
        ),
    ],
)
def test_bad_input_is_refused(client: Any, call: Any, error: type, words: str) -> None:
    store = _store(client)
    with pytest.raises(error, match=words):
        call(store)
    assert client.store.list("memory") == []


def test_a_bad_op_writes_nothing_of_its_batch(client: Any) -> None:
    store = _store(client)
    with pytest.raises(ValueError, match="value"):
        store.batch(
            [PutOp(("ok",), "good", {"text": "fine"}), PutOp(("ok",), "bad", {"x": float("inf")})]
        )
    assert store.get(("ok",), "good") is None


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"index": {"embed": lambda texts: [[0.0]]}}, ValueError, "embed"),
        ({"index": {"dims": 3}}, ValueError, "dims"),
        ({"index": {"fields": "text"}}, TypeError, "fields"),
        ({"index": {"field": ["text"]}}, ValueError, "unknown"),
        ({"ttl": {"default_ttl": 0}}, ValueError, "ttl"),
        ({"ttl": {"refresh_on_read": "yes"}}, TypeError, "refresh_on_read"),
        ({"user_id_from": "1"}, TypeError, "user_id_from"),
        ({"agent_id": ""}, TypeError, "agent_id"),
    ],
)
def test_bad_configuration_is_refused(
    client: Any, kwargs: dict[str, Any], error: type, words: str
) -> None:
    with pytest.raises(error, match=words):
        AgentMemoryStore(client, **kwargs)


def test_client_must_be_an_agent_memory() -> None:
    with pytest.raises(TypeError, match="client"):
        AgentMemoryStore(object())  # type: ignore[arg-type]


def test_matching_dims_are_accepted(client: Any) -> None:
    store = AgentMemoryStore(client, index={"dims": 64, "fields": ["text"]})
    assert store.index_config == {"dims": 64, "fields": ["text"]}


def test_user_id_from_returning_garbage_is_refused(client: Any) -> None:
    store = AgentMemoryStore(client, user_id_from=lambda ns: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="user_id_from"):
        store.put(("a",), "k", {})
    assert client.store.list("memory") == []


# ---------------------------------------------------------------------------- graphs


class ChatState(TypedDict, total=False):
    user: str
    message: str
    recalled: list[str]
    reply: str


def _memory_graph(store: AgentMemoryStore, model: Any, prompts: list[list[BaseMessage]]) -> Any:
    def remember(state: ChatState, runtime: Runtime[None]) -> ChatState:
        assert runtime.store is not None
        message = state["message"]
        if message.startswith("remember:"):
            runtime.store.put(
                ("memories", state["user"]), str(uuid.uuid4()), {"text": message[9:].strip()}
            )
        return {}

    def respond(state: ChatState) -> ChatState:
        hits = get_store().search(("memories", state["user"]), query=state["message"], limit=2)
        recalled = [h.value["text"] for h in hits]
        prompt: list[BaseMessage] = [
            SystemMessage("Known about the user: " + "; ".join(recalled)),
            HumanMessage(state["message"]),
        ]
        prompts.append(prompt)
        return {"recalled": recalled, "reply": str(model.invoke(prompt).content)}

    builder = StateGraph(ChatState)
    builder.add_node("remember", remember)
    builder.add_node("respond", respond)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "respond")
    builder.add_edge("respond", END)
    return builder.compile(store=store)


def test_compiled_state_graph_stores_and_recalls(client: Any) -> None:
    store = _store(client, user_id_from=1)
    model = GenericFakeChatModel(
        messages=iter([AIMessage("Noted."), AIMessage("You drink green tea."), AIMessage("?")])
    )
    prompts: list[list[BaseMessage]] = []
    graph = _memory_graph(store, model, prompts)
    first = graph.invoke({"user": "alice", "message": "remember: I drink green tea every morning"})
    assert first["reply"] == "Noted."
    second = graph.invoke({"user": "alice", "message": "what tea do I drink in the morning?"})
    assert second["recalled"][0] == "I drink green tea every morning"
    assert second["reply"] == "You drink green tea."
    assert "green tea every morning" in str(prompts[1][0].content)
    other = graph.invoke({"user": "bob", "message": "what tea do I drink?"})
    assert other["recalled"] == []
    # The memory is the client's too, scoped to the user.
    assert [m.user_id for m in client.list_memories(user_id="alice")] == ["alice"]


async def test_compiled_state_graph_async(client: Any) -> None:
    store = _store(client, user_id_from=1)
    model = GenericFakeChatModel(messages=iter([AIMessage("ok"), AIMessage("Lisbon.")]))
    graph = _memory_graph(store, model, [])
    await graph.ainvoke({"user": "u9", "message": "remember: I live in Lisbon"})
    out = await graph.ainvoke({"user": "u9", "message": "where do I live?"})
    assert out["recalled"] == ["I live in Lisbon"] and out["reply"] == "Lisbon."


def test_langmem_tools_over_the_store(client: Any) -> None:
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = AgentMemoryStore(client, index={"fields": ["content"]}, user_id_from=1)
    namespace = ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace=namespace, store=store)
    search = create_search_memory_tool(namespace=namespace, store=store)
    alice = {"configurable": {"langgraph_user_id": "alice"}}
    bob = {"configurable": {"langgraph_user_id": "bob"}}
    created = manage.invoke({"content": "Alice prefers window seats", "action": "create"}, alice)
    seat_id = re.search(r"[0-9a-f-]{36}", created).group(0)  # type: ignore[union-attr]
    manage.invoke({"content": "Alice is vegetarian", "action": "create"}, alice)
    manage.invoke({"content": "Bob prefers aisle seats", "action": "create"}, bob)

    found = json.loads(search.invoke({"query": "window seat preference"}, alice))
    assert found[0]["value"] == {"content": "Alice prefers window seats"}
    assert found[0]["key"] == seat_id
    assert {f["namespace"][1] for f in found} == {"alice"}
    assert found[0]["score"] >= found[-1]["score"]

    manage.invoke(
        {"content": "Alice prefers aisle seats now", "action": "update", "id": seat_id}, alice
    )
    item = store.get(("memories", "alice"), seat_id)
    assert item is not None and item.value == {"content": "Alice prefers aisle seats now"}
    manage.invoke({"action": "delete", "id": seat_id}, alice)
    assert store.get(("memories", "alice"), seat_id) is None
    left = json.loads(search.invoke({"query": "seats"}, alice))
    assert [f["value"]["content"] for f in left] == ["Alice is vegetarian"]
    assert store.list_namespaces(prefix=("memories",)) == [
        ("memories", "alice"),
        ("memories", "bob"),
    ]


def test_langmem_tool_inside_a_graph(client: Any) -> None:
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = AgentMemoryStore(client, index={"fields": ["content"]}, user_id_from=1)
    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"))

    def node(state: ChatState) -> ChatState:
        manage.invoke({"content": state["message"], "action": "create"})
        hits = json.loads(search.invoke({"query": state["message"]}))
        return {"recalled": [h["value"]["content"] for h in hits]}

    builder = StateGraph(ChatState)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    graph = builder.compile(store=store)
    out = graph.invoke(
        {"message": "I play the cello"}, {"configurable": {"langgraph_user_id": "dora"}}
    )
    assert out["recalled"] == ["I play the cello"]
    assert [m.user_id for m in client.list_memories(user_id="dora")] == ["dora"]


# ---------------------------------------------------------------------------- the doc


def test_doc_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert blocks, "the doc has no python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "langgraph_doc"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    assert (tmp_path / "langgraph_memory.db").exists()


def test_missing_langgraph_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)
    monkeypatch.delitem(sys.modules, "oracleagentmemory.integrations.langgraph")
    with pytest.raises(ImportError, match=re.escape('pip install "recallwell[langgraph]"')):
        importlib.import_module("oracleagentmemory.integrations.langgraph")

"""``AgentMemoryStore`` VECTOR search: the unfiltered first ranking and its fallback.

Without a value filter, a VECTOR query search first ranks the user's records without the
namespace-prefix filter and keeps that ranking only when every hit is under the prefix;
otherwise the filtered search runs. Either way the answer is the filtered search's.
"""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.integrations.langgraph import AgentMemoryStore

TEXTS = [
    "python programming language tutorial",
    "python programming guide for beginners",
    "baking sourdough bread at home",
    "typescript compiler options explained",
    "a language tutorial for spanish",
    "programming in rust and python",
]
QUERY = "python programming language tutorial"


@pytest.fixture
def spied(make_client: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Any]]:
    """A VECTOR client and the ``metadata_filter`` of every ``store.search`` call."""
    client = make_client(search_strategy=SearchStrategy.VECTOR)
    filters: list[Any] = []
    original = type(client.store).search

    def search(self: Any, *args: Any, **kwargs: Any) -> Any:
        filters.append(kwargs.get("metadata_filter"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(client.store), "search", search)
    return client, filters


def _ranked(store: AgentMemoryStore, prefix: tuple[str, ...], **kw: Any) -> list[Any]:
    return [(h.key, h.score) for h in store.search(prefix, query=QUERY, **kw)]


def test_all_hits_under_the_prefix_is_one_unfiltered_search(spied: Any) -> None:
    client, filters = spied
    store = AgentMemoryStore(client, index={"fields": ["text"]}, user_id_from=1)
    for i, text in enumerate(TEXTS):
        store.put(("docs", "alice"), f"k{i}", {"text": text, "kind": "doc"})
    filters.clear()
    fast = _ranked(store, ("docs", "alice"), limit=4)
    assert filters == [None]
    # A value filter every item passes takes the filtered path: the same ranking.
    filters.clear()
    filtered = _ranked(store, ("docs", "alice"), limit=4, filter={"kind": "doc"})
    assert filters and all(f is not None for f in filters)
    assert [k for k, _ in fast] == [k for k, _ in filtered]
    assert [s for _, s in fast] == pytest.approx([s for _, s in filtered])
    assert fast[0][0] == "k0"


def test_a_hit_outside_the_prefix_falls_back_to_the_filter(spied: Any) -> None:
    client, filters = spied
    store = AgentMemoryStore(client, index={"fields": ["text"]}, user_id_from=1)
    store.put(("other", "alice"), "best", {"text": QUERY})
    for i, text in enumerate(TEXTS[1:4]):
        store.put(("docs", "alice"), f"k{i}", {"text": text})
    filters.clear()
    hits = _ranked(store, ("docs", "alice"), limit=2)
    assert len(hits) == 2 and hits[0][0] == "k0"  # k0 shares the most words with the query
    assert "best" not in [k for k, _ in hits]
    assert filters[0] is None and filters[1] is not None  # unfiltered, then filtered
    assert [k for k, _ in _ranked(store, ("other", "alice"), limit=5)] == ["best"]
    # The whole user: every item is under ("docs",) or ("other",), no filter needed.
    filters.clear()
    assert len(store.search(("other",), query=QUERY, limit=10)) == 1


def test_a_record_not_written_by_the_adapter_is_never_a_hit(spied: Any) -> None:
    client, filters = spied
    store = AgentMemoryStore(client, index={"fields": ["text"]}, user_id_from=1)
    for i, text in enumerate(TEXTS[1:]):
        store.put(("docs", "alice"), f"k{i}", {"text": text})
    client.add_memory(QUERY, user_id="alice")  # the best match, but no item of any namespace
    filters.clear()
    hits = _ranked(store, ("docs", "alice"), limit=3)
    assert len(hits) == 3 and all(k.startswith("k") for k, _ in hits)
    assert len(filters) == 2


def test_hybrid_always_filters(make_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    client = make_client(search_strategy=SearchStrategy.HYBRID)
    filters: list[Any] = []
    original = type(client.store).search

    def search(self: Any, *args: Any, **kwargs: Any) -> Any:
        filters.append(kwargs.get("metadata_filter"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(client.store), "search", search)
    store = AgentMemoryStore(client, index={"fields": ["text"]}, user_id_from=1)
    for i, text in enumerate(TEXTS):
        store.put(("docs", "alice"), f"k{i}", {"text": text})
    filters.clear()
    assert store.search(("docs", "alice"), query=QUERY, limit=3)
    assert filters and all(f is not None for f in filters)


@pytest.mark.parametrize("ttl", [None, 5.0])
def test_a_put_stores_what_item_metadata_makes(make_client: Any, ttl: float | None) -> None:
    """A put's metadata (built without re-checking the plan's) is ``item_metadata``'s."""
    from oracleagentmemory.integrations._langgraph_codec import META, item_metadata

    client = make_client(search_strategy=SearchStrategy.VECTOR)
    store = AgentMemoryStore(client, index={"fields": ["text"]}, user_id_from=1)
    value = {"text": "naïve café ☕", "nested": {"n": [1, 2.5, None, True]}}
    store.put(("docs", "alice", "é"), "k/1", value, ttl=ttl)
    records = client.store.list("memory", limit=10, user_id="alice")
    assert len(records) == 1
    meta = records[0].metadata
    info = meta[META]
    assert meta == item_metadata(
        ("docs", "alice", "é"),
        "k/1",
        value,
        created_at=info["created_at"],
        updated_at=info["updated_at"],
        ttl_minutes=info["ttl_minutes"],
        signature=info["index_signature"],
    )


def _nested(levels: int) -> dict[str, Any]:
    """A dict ``levels`` containers deep (the top dict counts as one)."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"d": value}
    return value


def test_a_put_is_checked_as_its_metadata_holds_it(make_client: Any) -> None:
    """The value's depth counts from inside the item's metadata and the metadata's size is
    the limit's, so a value that passes alone but not wrapped fails before any write."""
    from oracleagentmemory.core.store._limits import MAX_JSON_BYTES, MAX_JSON_DEPTH
    from oracleagentmemory.integrations._langgraph_codec import META, item_metadata

    client = make_client(search_strategy=SearchStrategy.VECTOR)
    store = AgentMemoryStore(client, user_id_from=1)
    deepest = _nested(MAX_JSON_DEPTH - 1)  # wrapped: MAX_JSON_DEPTH levels, allowed
    store.put(("docs", "alice"), "deep", deepest)
    assert store.get(("docs", "alice"), "deep").value == deepest
    with pytest.raises(ValueError, match="nested deeper"):
        item_metadata(
            ("docs",), "k", _nested(MAX_JSON_DEPTH), created_at="", updated_at="",
            ttl_minutes=None, signature=None,
        )  # fmt: skip
    # The same value in a batch beside a good put: neither lands.
    with pytest.raises(ValueError, match="nested deeper"):
        store.batch(
            [
                _put(("docs", "alice"), "good", {"text": "fine"}),
                _put(("docs", "alice"), "too-deep", _nested(MAX_JSON_DEPTH)),
            ]
        )
    assert store.get(("docs", "alice"), "good") is None
    # Size: a value just under the limit alone, over it once wrapped with long labels.
    labels = tuple("ns" + str(i) * 200 for i in range(5))
    room = MAX_JSON_BYTES - len('{"t":""}')
    with pytest.raises(ValueError, match="bytes of JSON"):
        store.put(("docs", "alice", *labels), "big", {"t": "x" * (room - 10)})
    assert store.get(("docs", "alice", *labels), "big") is None
    records = client.store.list("memory", limit=10, user_id="alice")
    assert sorted(r.metadata[META]["key"] for r in records) == ["deep"]


def _put(namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> Any:
    from langgraph.store.base import PutOp

    return PutOp(namespace, key, value)

"""A client opened before another one added the keyword index (``oam serve`` opens its
vector client first, then a keyword or hybrid one on demand): its later writes still reach
keyword search, and what it wrote in between is re-indexed."""

from __future__ import annotations

from typing import Any


def test_writes_of_an_older_client_reach_a_keyword_index_added_later(
    make_client: Any,
) -> None:
    vector = make_client(memory_store_id="kwlate")
    vector.add_memory("zebra crossings are striped", user_id="u1")
    keyword = make_client(memory_store_id="kwlate", embedder=None, search_strategy="keyword")
    assert [r.content for r in keyword.search("zebra", user_id="u1")] == [
        "zebra crossings are striped"
    ], "the index is built from what exists"
    vector.add_memory("giraffes have long necks", user_id="u1")
    t = vector.create_thread(user_id="u1")
    t.add_messages([{"role": "user", "content": "a walrus sleeps on ice"}])
    assert [r.content for r in keyword.search("giraffes", user_id="u1")] == [
        "giraffes have long necks"
    ]
    assert [r.content for r in keyword.search("walrus", user_id="u1")] == ["a walrus sleeps on ice"]
    (gone,) = vector.list_memories(user_id="u1", limit=None)[1:]
    vector.delete_memory(gone.id)
    assert keyword.search("giraffes", user_id="u1") == []

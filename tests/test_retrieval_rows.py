"""How thread messages are indexed, and how hybrid search fuses its two rankings."""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.core.store.search._keyword import fuse_scores


def test_a_message_is_found_by_words_of_the_turn_it_answers(make_client: Any) -> None:
    client = make_client(search_strategy=SearchStrategy.KEYWORD)
    thread = client.create_thread(user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": "When did you move to Lisbon?"}])
    [answer] = thread.add_messages([{"role": "assistant", "content": "Back in May."}])
    hits = [r.id for r in thread.search("Lisbon move", record_types=["message"])]
    assert answer in hits  # the answer carries the question as its retrieval context
    assert thread.get_message(answer).content == "Back in May."  # stored text unchanged


def test_the_vector_is_that_of_the_window(make_client: Any, embedder: Any) -> None:
    client = make_client()
    thread = client.create_thread(user_id="u", agent_id="a")
    thread.add_messages(
        [
            {"role": "user", "content": "completely unrelated opening words"},
            {"role": "assistant", "content": "zebra crossing near the harbour"},
        ]
    )
    window = "completely unrelated opening words\nzebra crossing near the harbour"
    query = embedder.embed([window])[0]
    record, distance = client.store.search(None, 1, query_vector=query.tolist())[0]
    assert record.content == "zebra crossing near the harbour"  # stored text unchanged
    assert distance == pytest.approx(0.0, abs=1e-5)


def test_caller_given_embeddings_are_kept(make_client: Any, embedder: Any) -> None:
    client = make_client()
    thread = client.create_thread(user_id="u", agent_id="a")
    vectors = embedder.embed(["first text", "zebra crossing near the harbour"])
    thread.add_messages(
        [
            {"role": "user", "content": "completely unrelated opening words"},
            {"role": "assistant", "content": "something else entirely"},
        ],
        embeddings=[v.tolist() for v in vectors],
    )
    record, distance = client.store.search(None, 1, query_vector=vectors[1].tolist())[0]
    assert record.content == "something else entirely"
    assert distance == pytest.approx(0.0, abs=1e-5)


def test_long_messages_keep_the_store_chunking(make_client: Any) -> None:
    client = make_client(search_strategy=SearchStrategy.KEYWORD)
    thread = client.create_thread(user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": "prelude about kayaks"}])
    long_text = " ".join(f"word{i}" for i in range(400))
    [mid] = thread.add_messages([{"role": "user", "content": long_text}])
    assert mid not in [r.id for r in thread.search("kayaks", record_types=["message"])]
    assert mid in [r.id for r in thread.search("word399", record_types=["message"])]


def test_fuse_scores_is_a_convex_combination_of_normalised_scores() -> None:
    vector = [(1, 0.1), (2, 0.3), (3, 0.5)]  # cosine distances
    keyword = [(3, 1 / (1 + 9.0)), (4, 1 / (1 + 1.0))]  # bm25 9 and 1
    fused = dict(fuse_scores(vector, keyword, 10, vector_weight=0.4))
    assert fused[1] == pytest.approx(1 - 0.4 * 1.0)
    assert fused[3] == pytest.approx(1 - (0.4 * 0.0 + 0.6 * 1.0))
    assert fused[4] == pytest.approx(1.0)  # last in keyword, absent from vector
    assert fused[2] == pytest.approx(1 - 0.4 * 0.5)
    ranked = [rid for rid, _ in fuse_scores(vector, keyword, 2, vector_weight=0.4)]
    assert ranked == [3, 1]
    assert fuse_scores([], [], 5) == []


def test_window_text_decides_each_messages_window(make_client: Any, embedder: Any) -> None:
    from oracleagentmemory.core._client.messages._message_batch import window_text
    from oracleagentmemory.core.store.schema._rows import Chunker

    client = make_client()
    words = Chunker.for_tokens(client.store.embedder.max_input_tokens).max_words
    first = " ".join(f"w{i}" for i in range(words - 3))
    second = "zebra crossing harbour"  # first + second: exactly one chunk of words
    third = " ".join(f"v{i}" for i in range(words - 2))  # with second: one word too many
    assert window_text(None, second, words) is None
    assert window_text(first, "", words) is None
    assert window_text(second, third, words) is None
    window = window_text(first, second, words)
    assert window == f"{first}\n{second}"
    thread = client.create_thread(user_id="u", agent_id="a")
    ids = thread.add_messages([{"role": "user", "content": t} for t in (first, second, third)])
    for text, mid in ((window, ids[1]), (third, ids[2])):
        query = embedder.embed([text])[0]
        record, distance = client.store.search(None, 1, query_vector=query.tolist())[0]
        assert record.id == mid
        assert distance == pytest.approx(0.0, abs=1e-5)

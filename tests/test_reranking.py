"""The reranking stage of search (search_config.reranker) and the local bi-encoder re-scorer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis.reranker import (
    IReranker,
    RerankResponse,
    RerankResponseResult,
    rerank_in_thread,
)
from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.core.embedders import BiEncoderReranker
from oracleagentmemory.core.searchconfig import TopKMemorySearchConfig
from tests._embedders import HashingEmbedder

FACTS = [f"note {i}: " + "apples " * (i + 1) for i in range(8)]


class LongestFirst(IReranker):
    """Relevance = document length; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        self.calls.append((query, documents))
        return RerankResponse(
            results=[RerankResponseResult(i, float(len(d))) for i, d in enumerate(documents)]
        )

    rerank_async = rerank_in_thread


class Broken(IReranker):
    def __init__(self, results: list[RerankResponseResult]) -> None:
        self.results = results

    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        return RerankResponse(results=self.results)

    rerank_async = rerank_in_thread


def _client(make_client: Any, reranker: IReranker, candidates: int, name: str = "c.db") -> Any:
    client = make_client(
        name=name,
        search_strategy=SearchStrategy.HYBRID,
        search_config=TopKMemorySearchConfig(reranker=reranker, reranker_max_candidates=candidates),
    )
    thread = client.create_thread(user_id="u", agent_id="a")
    for text in FACTS:
        thread.add_memory(text, memory_type="fact")
    return client


def test_the_reranker_reorders_the_fused_top_candidates(make_client: Any) -> None:
    reranker = LongestFirst()
    client = _client(make_client, reranker, candidates=6)
    results = client.search("apples", user_id="u", max_results=3, record_types=["fact"])
    [(query, documents)] = reranker.calls
    assert query == "apples" and len(documents) == 6  # one batched call over the pool
    assert [r.content for r in results] == sorted(documents, key=len, reverse=True)[:3]


def test_candidates_beyond_the_pool_keep_their_order(make_client: Any) -> None:
    reranker = LongestFirst()
    client = _client(make_client, reranker, candidates=2)
    plain = make_client(search_strategy=SearchStrategy.HYBRID, name="plain.db")
    thread = plain.create_thread(user_id="u", agent_id="a")
    for text in FACTS:
        thread.add_memory(text, memory_type="fact")
    first = [r.content for r in plain.search("apples", user_id="u", max_results=5)]
    got = [r.content for r in client.search("apples", user_id="u", max_results=5)]
    assert sorted(got[:2]) == sorted(first[:2])  # the pool of 2, reordered
    assert got[:2] == sorted(first[:2], key=len, reverse=True)
    assert got[2:] == first[2:]  # the rest untouched


@pytest.mark.parametrize(
    ("results", "error"),
    [
        ([RerankResponseResult(7, 1.0)], "index 7"),
        ([RerankResponseResult(0, 1.0), RerankResponseResult(0, 2.0)], "twice"),
    ],
)
def test_a_malformed_reranker_answer_is_an_error(
    make_client: Any, results: list[RerankResponseResult], error: str
) -> None:
    client = _client(make_client, Broken(results), candidates=4)
    with pytest.raises(ValueError, match=error):
        client.search("apples", user_id="u", max_results=3)


def test_unscored_candidates_follow_the_scored_ones(make_client: Any) -> None:
    client = _client(make_client, Broken([RerankResponseResult(2, 0.5)]), candidates=4)
    unscored = _client(make_client, Broken([]), 4, name="plain.db")
    plain = [r.content for r in unscored.search("apples", user_id="u")]
    got = [r.content for r in client.search("apples", user_id="u", max_results=4)]
    assert got[0] == plain[2] and got[1:] == [plain[0], plain[1], plain[3]]


def test_bi_encoder_reranker_blends_cosine_and_rank() -> None:
    emb = HashingEmbedder()
    docs = ["the cat sat on the mat", "stock markets fell sharply", "a cat on a mat"]
    only_rank = BiEncoderReranker(emb, weight=0.0).rerank("cat mat", docs)
    assert [(r.index, r.relevance_score) for r in only_rank.results] == [
        (0, 1.0),
        (1, 0.5),
        (2, 0.0),
    ]
    only_cos = BiEncoderReranker(emb, weight=1.0).rerank("cat mat", docs)
    q = emb.embed(["cat mat"], is_query=True)[0]
    cos = emb.embed(docs) @ q
    want = (cos - cos.min()) / (cos.max() - cos.min())
    got = {r.index: r.relevance_score for r in only_cos.results}
    np.testing.assert_allclose([got[i] for i in range(3)], want, atol=1e-6)
    assert sorted(r.index for r in only_cos.results) == [0, 1, 2]
    scores = [r.relevance_score for r in only_cos.results]
    assert scores == sorted(scores, reverse=True)  # most relevant first


def test_bi_encoder_reranker_caches_document_vectors() -> None:
    emb = HashingEmbedder()
    reranker = BiEncoderReranker(emb, cache_size=2)
    reranker.rerank("q", ["a b", "c d"])
    assert emb.texts_embedded == 3  # the query and two documents
    reranker.rerank("q", ["a b", "c d"])
    assert emb.texts_embedded == 4  # only the query again
    reranker.rerank("q", ["e f"])
    reranker.rerank("q", ["a b"])  # evicted by the LRU bound of 2
    assert emb.texts_embedded == 8


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"embedder": "minilm"}, TypeError),
        ({"weight": 1.5}, ValueError),
        ({"weight": True}, ValueError),
        ({"cache_size": -1}, ValueError),
    ],
)
def test_bi_encoder_reranker_rejects_bad_arguments(kwargs: dict[str, Any], error: type) -> None:
    kwargs.setdefault("embedder", HashingEmbedder())
    with pytest.raises(error):
        BiEncoderReranker(**kwargs)


def test_bi_encoder_reranker_rejects_bad_documents() -> None:
    reranker = BiEncoderReranker(HashingEmbedder())
    with pytest.raises(TypeError):
        reranker.rerank("q", "not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reranker.rerank("q", ["ok", 3])  # type: ignore[list-item]
    assert reranker.rerank("q", []).results == []


def test_served_reranker_end_to_end_on_a_thread_config(make_client: Any) -> None:
    """``Reranker`` against the local /rerank server, configured on a thread at
    create_thread: one request over the first ``reranker_max_candidates`` candidates,
    results in the server's order, the rest in first-stage order; the kind and fields of
    the config are stored with the thread (the reranker object, like any object, is not)."""
    from oracleagentmemory.core import Reranker

    from ._openai_server import FakeOpenAIServer, rerank_score

    with FakeOpenAIServer(api_key="k", models=("rr",)) as server:
        reranker = Reranker("rr", api_base=server.api_base, api_key="k")
        client = make_client(search_strategy=SearchStrategy.HYBRID)
        thread = client.create_thread(
            thread_id="t",
            user_id="u",
            agent_id="a",
            search_config=TopKMemorySearchConfig(reranker=reranker, reranker_max_candidates=4),
        )
        for text in [*FACTS, "pears and apples and plums"]:
            thread.add_memory(text, memory_type="fact")
        plain = [r.content for r in client.get_thread("t").search("plums apples", max_results=6)]
        got = [r.content for r in thread.search("plums apples", max_results=6)]
        (body,) = server.bodies("/v1/rerank")
        assert body["documents"] == plain[:4]  # the pool, in first-stage order
        assert got[:4] == sorted(plain[:4], key=lambda d: -rerank_score("plums apples", d))
        assert got[4:] == plain[4:6]
        reopened = client.get_thread("t").search("plums apples", max_results=6)
        assert len(server.bodies("/v1/rerank")) == 1  # no reranker object after reopening
        assert [r.content for r in reopened] == plain

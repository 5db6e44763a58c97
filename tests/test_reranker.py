"""``Reranker`` against a real local HTTP server speaking the common ``/rerank`` protocol."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from oracleagentmemory.apis.reranker import IReranker, RerankResponseResult
from oracleagentmemory.core import Reranker
from oracleagentmemory.core.llms._backends import litellm_available
from oracleagentmemory.core.reranker import RerankRequestError, parse_rerank

from ._openai_server import FakeOpenAIServer, Scripted, error_reply, rerank_score

KEY = "sk-rerank"
MODEL = "rerank-model"
DOCS = [
    "the cat sat on the mat",
    "dogs chase cats in the garden",
    "stock prices fell sharply",
    "a cat and a dog are friends",
]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, models=(MODEL,)) as srv:
        yield srv


def make(server: FakeOpenAIServer, **kwargs: Any) -> Reranker:
    kwargs.setdefault("api_key", KEY)
    return Reranker(kwargs.pop("model", MODEL), api_base=server.api_base, **kwargs)


def test_is_an_ireranker(server: FakeOpenAIServer) -> None:
    assert isinstance(make(server), IReranker)


def test_complete_ranking_most_relevant_first(server: FakeOpenAIServer) -> None:
    with make(server) as reranker:
        response = reranker.rerank("cat dog friends", DOCS)
    scores = [rerank_score("cat dog friends", d) for d in DOCS]
    expected = sorted(range(len(DOCS)), key=lambda i: (-scores[i], i))
    assert [r.index for r in response.results] == expected
    assert [r.relevance_score for r in response.results] == [scores[i] for i in expected]
    assert response.results[0].index == 3
    response.check_complete(len(DOCS))
    (body,) = server.bodies("/v1/rerank")
    assert body == {"model": MODEL, "query": "cat dog friends", "documents": DOCS}
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_top_n_and_returned_documents(server: FakeOpenAIServer) -> None:
    reranker = make(server, return_documents=True)
    response = reranker.rerank("cat", DOCS, top_n=2)
    assert len(response.results) == 2
    assert all(r.document == DOCS[r.index] for r in response.results)
    assert server.bodies("/v1/rerank")[0]["top_n"] == 2


def test_async(server: FakeOpenAIServer) -> None:
    async def main() -> list[int]:
        async with make(server) as reranker:
            response = await reranker.rerank_async("stock prices", DOCS)
        return [r.index for r in response.results]

    assert asyncio.run(main())[0] == 2


def test_empty_documents_make_no_request(server: FakeOpenAIServer) -> None:
    assert make(server).rerank("q", []).results == []
    assert server.requests == []


def test_prefixes(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    make(server, model=f"hosted_vllm/{MODEL}").rerank("cat", DOCS)
    assert server.bodies("/v1/rerank")[0]["model"] == MODEL
    monkeypatch.setenv("COHERE_API_KEY", "co-key")
    cohere = Reranker("cohere/rerank-v3.5")
    assert "api.cohere.com/v2" in repr(cohere) and "co-key" not in repr(cohere)
    assert "api.jina.ai" in repr(Reranker("jina_ai/jina-reranker-v2-base-multilingual"))
    with pytest.raises(ValueError, match="needs an api_base"):
        Reranker("bge-reranker-v2-m3")
    with pytest.raises(ValueError, match="needs an api_base"):
        Reranker("infinity/bge-reranker")


@pytest.mark.skipif(litellm_available(), reason="litellm is installed here")
def test_litellm_providers_need_the_extra() -> None:
    with pytest.raises(ImportError, match=r"recallwell\[litellm\]"):
        Reranker("bedrock/amazon.rerank-v1:0")


def test_api_base_may_name_the_endpoint(server: FakeOpenAIServer) -> None:
    reranker = Reranker(MODEL, api_base=server.api_base + "/rerank", api_key=KEY)
    assert len(reranker.rerank("cat", DOCS).results) == len(DOCS)


def test_429_then_success(server: FakeOpenAIServer) -> None:
    server.script.append(error_reply(429, "slow down", **{"Retry-After": "0.2"}))
    start = time.monotonic()
    assert len(make(server).rerank("cat", DOCS).results) == 4
    assert time.monotonic() - start >= 0.19 and len(server.requests) == 2


def test_5xx_retries_exhausted(server: FakeOpenAIServer) -> None:
    server.script.extend(error_reply(500, "boom") for _ in range(2))
    with pytest.raises(RerankRequestError, match="boom") as info:
        make(server, max_retries=1).rerank("cat", DOCS)
    assert info.value.status_code == 500 and len(server.requests) == 2


def test_timeout(server: FakeOpenAIServer) -> None:
    server.latency = 0.5
    with pytest.raises(RerankRequestError, match="timed out"):
        make(server, timeout=0.1, max_retries=0).rerank("cat", DOCS)


def test_http_error_message(server: FakeOpenAIServer) -> None:
    with pytest.raises(RerankRequestError, match="does not exist") as info:
        make(server, model="nope").rerank("cat", DOCS)
    assert info.value.status_code == 404


@pytest.mark.parametrize(
    ("results", "match"),
    [
        ([{"index": 0, "relevance_score": 0.5}], "1 results for 2 documents"),
        ([{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}], "twice"),
        ([{"index": 5, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}], "index"),
        ([{"index": 0, "relevance_score": "hi"}, {"index": 1, "relevance_score": 0.4}], "score"),
        (
            [{"index": 0, "relevance_score": 1, "document": 3}, {"index": 1, "relevance_score": 0}],
            "document",
        ),
    ],
)
def test_malformed_answers(server: FakeOpenAIServer, results: list[Any], match: str) -> None:
    server.script.append(Scripted(200, json.dumps({"results": results}).encode()))
    with pytest.raises(ValueError, match=match):
        make(server).rerank("q", ["a", "b"])


def test_parse_accepts_the_common_shapes() -> None:
    infinity = {"results": [{"index": 1, "relevance_score": 0.9, "document": "b"},
                            {"index": 0, "relevance_score": 0.1, "document": None}]}  # fmt: skip
    jina = {"results": [{"index": 0, "relevance_score": 0.2, "document": {"text": "a"}},
                        {"index": 1, "score": 0.7}]}  # fmt: skip
    assert parse_rerank(infinity, 2, complete=True).results == [
        RerankResponseResult(1, 0.9, "b"),
        RerankResponseResult(0, 0.1, None),
    ]
    assert parse_rerank(jina, 2, complete=True).results == [
        RerankResponseResult(1, 0.7, None),
        RerankResponseResult(0, 0.2, "a"),
    ]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda r: r.rerank(3, ["a"]), TypeError, "query"),
        (lambda r: r.rerank(" ", ["a"]), ValueError, "query"),
        (lambda r: r.rerank("q", "a"), TypeError, "documents"),
        (lambda r: r.rerank("q", ["a", 1]), TypeError, r"documents\[1\]"),
        (lambda r: r.rerank("q", ["a"], top_n=0), ValueError, "top_n"),
        (lambda r: r.rerank("q", ["a"], model="other"), ValueError, "model cannot be passed"),
    ],
)
def test_call_validation(
    server: FakeOpenAIServer, call: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        call(make(server))
    assert server.requests == []


def test_constructor_validation() -> None:
    with pytest.raises(TypeError, match="model"):
        Reranker(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="query"):
        Reranker("m", api_base="http://x", query="q")
    with pytest.raises(ValueError, match="timeout"):
        Reranker("m", api_base="http://x", timeout=0)

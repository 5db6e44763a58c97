"""The litellm route of ``Llm`` and ``Reranker`` (extra ``[litellm]``; skipped without it).

litellm's ``deepseek/`` and ``together_ai/`` providers speak OpenAI-style HTTP to their
``api_base``, so pointing them at the local protocol server drives our litellm backend end to
end (request building, answer parsing, streaming, error mapping) without any network.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from oracleagentmemory.core import Reranker
from oracleagentmemory.core.llms import Llm, LlmRequestError
from oracleagentmemory.core.llms._backends import litellm_available

from ._openai_server import FakeOpenAIServer, error_reply

pytestmark = pytest.mark.skipif(
    not litellm_available(), reason="litellm is not installed (extra [litellm])"
)

KEY = "sk-litellm-test"
MODEL = "chat-model"
CHAT = "/v1/chat/completions"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, models=(MODEL, "rerank-model")) as srv:
        yield srv


def make(server: FakeOpenAIServer, **kwargs: object) -> Llm:
    return Llm(f"deepseek/{MODEL}", api_base=server.api_base, api_key=KEY, **kwargs)


def test_plain_generation_and_usage(server: FakeOpenAIServer) -> None:
    response = make(server, temperature=0.1, max_tokens=20).generate("hello there")
    assert response.text == "echo: hello there"
    assert response.finish_reason == "stop"
    assert response.usage is not None and response.usage.prompt_tokens == 2
    (body,) = server.bodies(CHAT)
    assert body["model"] == MODEL and body["temperature"] == 0.1 and body["max_tokens"] == 20


def test_structured_output(server: FakeOpenAIServer) -> None:
    server.replies.extend(
        ['```json\n{"name": "Ada", "age": "x"}\n```', '{"name": "Ada", "age": 36}']
    )
    response = make(server).generate("who?", response_json_schema=PERSON)
    assert json.loads(response.text) == {"name": "Ada", "age": 36}
    first, repair = server.bodies(CHAT)
    assert first["response_format"]["type"] == "json_schema"
    assert "expected an integer" in repair["messages"][-1]["content"]


def test_streaming_and_async(server: FakeOpenAIServer) -> None:
    server.replies.append("streamed through litellm")
    assert make(server, stream=True).generate("x").text == "streamed through litellm"
    response = asyncio.run(make(server).generate_async("async hello"))
    assert response.text == "echo: async hello"


def test_errors_keep_the_status(server: FakeOpenAIServer) -> None:
    server.script.append(error_reply(401, "bad key"))
    with pytest.raises(LlmRequestError) as info:
        make(server, max_retries=0).generate("x")
    assert info.value.status_code == 401


def test_reranker_through_litellm(server: FakeOpenAIServer) -> None:
    reranker = Reranker("together_ai/rerank-model", api_base=server.api_base, api_key=KEY)
    response = reranker.rerank("cat", ["a dog", "a cat", "a cow"])
    assert response.results[0].index == 1


def test_transient_failures_are_retried(server: FakeOpenAIServer) -> None:
    server.script.append(error_reply(503, "overloaded", **{"Retry-After": "0.1"}))
    assert make(server).generate("again").text == "echo: again"
    assert len(server.bodies(CHAT)) == 2
    server.script.append(error_reply(503, "overloaded"))
    reranker = Reranker("together_ai/rerank-model", api_base=server.api_base, api_key=KEY)
    assert len(reranker.rerank("cat", ["a dog", "a cat"]).results) == 2
    assert len(server.bodies("/v1/rerank")) == 2

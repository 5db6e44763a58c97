"""Extraction through the HTTP ``Llm`` against a real local server speaking the OpenAI protocol:
the schema goes over the wire, the answer comes back through the adapter's fallback chain."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from oracleagentmemory.core import MemoryExtractionConfig, MemoryExtractionMode
from oracleagentmemory.core.llms import Llm

from ._fake_model import fake_model
from ._openai_server import FakeOpenAIServer, response_schema

KEY = "sk-test"
MODEL = "memory-model"


def _model_reply(body: dict[str, Any]) -> str:
    """The fake model, answering the request the adapter sent."""
    call = SimpleNamespace(
        schema=response_schema(body),
        messages=[(m["role"], m["content"]) for m in body["messages"]],
    )
    answer = fake_model()(call)
    return answer if isinstance(answer, str) else json.dumps(answer)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, models=(MODEL,)) as srv:
        yield srv


def _client(make_client: Any, server: FakeOpenAIServer) -> Any:
    llm = Llm(MODEL, api_base=server.api_base, api_key=KEY)
    llm.retry_base_delay = 0.01  # type: ignore[attr-defined]
    return make_client(
        llm=llm,
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE
        ),
    )


@pytest.mark.parametrize("json_schema", ["accept", "reject_500"])
def test_extraction_and_summary_over_http(
    make_client: Any, server: FakeOpenAIServer, json_schema: str
) -> None:
    """``reject_500`` is llama-cpp-python's server: the adapter falls back to json_object."""
    server.json_schema = json_schema
    server.replies.extend([_model_reply] * 8)
    client = _client(make_client, server)
    thread = client.create_thread(user_id="u1")
    (mid,) = thread.add_messages([{"role": "user", "content": "I keep bees in Porto."}])
    (memory,) = client.list_memories(user_id="u1")
    assert memory.content == "I keep bees in Porto."
    (result,) = thread.search("bees", record_types=["fact"])
    assert result.source_message_ids == (mid,)
    assert thread.get_summary().content == "I keep bees in Porto."
    sent = server.bodies("/v1/chat/completions")[0]
    assert "memories" in json.dumps(sent["response_format"])


def test_a_model_that_never_answers_json_fails_nothing(
    make_client: Any, server: FakeOpenAIServer
) -> None:
    server.replies.extend(["I would rather chat about the weather."] * 8)
    client = _client(make_client, server)
    thread = client.create_thread(user_id="u1")
    assert len(thread.add_messages([{"role": "user", "content": "hello"}])) == 1
    assert client.list_memories(user_id="u1") == []
    stats = client.get_memory_extraction_stats()
    assert (stats.completed, stats.failed) == (1, 0)

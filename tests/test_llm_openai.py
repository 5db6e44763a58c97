"""``Llm`` against a real local HTTP server speaking the OpenAI protocol."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.apis.llms.llm import LlmUsage
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, TextContent
from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core import ImageInputLimitConfig
from oracleagentmemory.core.llms import Llm, LlmApiType, LlmOutputError, LlmRequestError
from oracleagentmemory.core.llms._backends import litellm_available
from oracleagentmemory.core.llms._structured import REMINDER
from oracleagentmemory.observability import (
    EventListener,
    LlmGenerationCompletedEvent,
    LlmGenerationStartedEvent,
    register_event_listeners,
)

from ._openai_server import Answer, FakeOpenAIServer, Scripted, error_reply
from ._pki import make_pki, server_tls

KEY = "sk-llm-test"
MODEL = "chat-model"
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
CLOSED = {**PERSON, "additionalProperties": False}

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, models=(MODEL, "Qwen/Qwen2.5-7B-Instruct")) as srv:
        yield srv


def make(server: FakeOpenAIServer, **kwargs: Any) -> Llm:
    kwargs.setdefault("api_key", KEY)
    llm = Llm(kwargs.pop("model", MODEL), api_base=server.api_base, **kwargs)
    llm.retry_base_delay = 0.01
    return llm


@pytest.fixture
def llm(server: FakeOpenAIServer) -> Iterator[Llm]:
    with make(server) as instance:
        yield instance


# -- plain text -------------------------------------------------------------------------------


def test_chat_completion(llm: Llm, server: FakeOpenAIServer) -> None:
    response = llm.generate("hello there")
    assert response.text == "echo: hello there"
    assert response.finish_reason == "stop"
    assert response.usage == LlmUsage(prompt_tokens=2, completion_tokens=3, total_tokens=5)
    (body,) = server.bodies(CHAT)
    assert body == {"model": MODEL, "messages": [{"role": "user", "content": "hello there"}]}
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_prompt_forms(llm: Llm, server: FakeOpenAIServer) -> None:
    llm.generate({"role": "user", "content": "single mapping"})
    llm.generate([Message("system", "be brief"), {"role": "user", "content": "a list"}])
    llm.generate([Message("user", [TextContent("parts"), TextContent("joined")])])
    bodies = server.bodies(CHAT)
    assert bodies[0]["messages"] == [{"role": "user", "content": "single mapping"}]
    assert bodies[1]["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "a list"},
    ]
    assert bodies[2]["messages"] == [{"role": "user", "content": "parts\njoined"}]


def test_responses_api(server: FakeOpenAIServer) -> None:
    with make(server, api_type=LlmApiType.RESPONSES, max_tokens=50, reasoning_effort="low") as llm:
        response = llm.generate([Message("system", "sys"), Message("user", "via responses")])
    assert response.text == "echo: via responses"
    assert response.finish_reason == "stop"
    assert response.usage == LlmUsage(3, 3, 6)
    (body,) = server.bodies(RESPONSES)
    assert body["input"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "via responses"},
    ]
    assert body["max_output_tokens"] == 50 and body["reasoning"] == {"effort": "low"}
    assert body["store"] is False and "messages" not in body


def test_api_type_per_call(llm: Llm, server: FakeOpenAIServer) -> None:
    assert llm.generate("x", api_type="responses").text == "echo: x"
    assert llm.generate("y").text == "echo: y"
    assert [r.path for r in server.requests] == [RESPONSES, CHAT]


def test_sampling_options_and_default_kwargs(server: FakeOpenAIServer) -> None:
    llm = make(server, temperature=0.2, max_tokens=64, reasoning_effort="high", seed=7, top_p=0.5)
    llm.generate("a")
    llm.generate("b", temperature=0.9, seed=None, user="u1")
    first, second = server.bodies(CHAT)
    assert first["temperature"] == 0.2 and first["max_tokens"] == 64
    assert first["reasoning_effort"] == "high"
    assert first["seed"] == 7 and first["top_p"] == 0.5
    assert second["temperature"] == 0.9 and "seed" not in second and second["user"] == "u1"


def test_extra_headers_and_keyless(server: FakeOpenAIServer) -> None:
    server.api_key = None
    llm = make(server, api_key=None, extra_headers={"X-Tenant": "t1"})
    assert llm.generate("hi").text == "echo: hi"
    headers = server.requests[0].headers
    assert headers["x-tenant"] == "t1" and "authorization" not in headers


def test_max_tokens_cut_is_reported(server: FakeOpenAIServer) -> None:
    server.replies.append("one two three four five")
    response = make(server, max_tokens=2).generate("count")
    assert response.text == "one two" and response.finish_reason == "length"


# -- streaming ------------------------------------------------------------------------------


def test_streaming_chat(server: FakeOpenAIServer) -> None:
    server.replies.append("streamed answer in several pieces")
    server.stream_pause = 0.005
    response = make(server, stream=True).generate("go")
    assert response.text == "streamed answer in several pieces"
    assert response.finish_reason == "stop"
    assert response.usage == LlmUsage(1, 5, 6)
    (body,) = server.bodies(CHAT)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streaming_responses(server: FakeOpenAIServer) -> None:
    server.replies.append("responses stream")
    llm = make(server, stream=True, api_type=LlmApiType.RESPONSES)
    response = llm.generate("go")
    assert (response.text, response.finish_reason) == ("responses stream", "stop")
    assert response.usage == LlmUsage(1, 2, 3)


def test_streaming_structured_output(server: FakeOpenAIServer) -> None:
    server.replies.append('{"name": "Ada", "age": 36}')
    response = make(server).generate("who", response_json_schema=PERSON, stream=True)
    assert json.loads(response.text) == {"name": "Ada", "age": 36}


async def test_async_plain_and_streamed(server: FakeOpenAIServer) -> None:
    async with make(server) as llm:
        plain = await llm.generate_async("async hello")
        server.replies.append("async stream")
        streamed = await llm.generate_async("x", stream=True)
    assert plain.text == "echo: async hello"
    assert streamed.text == "async stream" and streamed.usage is not None


# -- structured output -----------------------------------------------------------------------


def test_json_schema_mode(llm: Llm, server: FakeOpenAIServer) -> None:
    server.replies.append('{"name": "Ada", "age": 36}')
    response = llm.generate("who?", response_json_schema=PERSON)
    assert json.loads(response.text) == {"name": "Ada", "age": 36}
    assert response.text == '{"name": "Ada", "age": 36}'
    (body,) = server.bodies(CHAT)
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == PERSON and fmt["json_schema"]["strict"] is False
    assert body["messages"][-1]["content"].endswith(REMINDER)
    assert llm.structured_output_mode == "json_schema"


def test_strict_only_for_closed_schemas(llm: Llm, server: FakeOpenAIServer) -> None:
    server.replies.append('{"name": "Ada", "age": 36}')
    llm.generate("who?", response_json_schema={**CLOSED, "title": "Person card"})
    fmt = server.bodies(CHAT)[0]["response_format"]["json_schema"]
    assert fmt["strict"] is True and fmt["name"] == "Person_card"


def test_reminder_can_be_turned_off(server: FakeOpenAIServer) -> None:
    server.replies.append('{"name": "Ada", "age": 36}')
    make(server, enable_structured_output_reminder=False).generate(
        "who?", response_json_schema=PERSON
    )
    assert server.bodies(CHAT)[0]["messages"] == [{"role": "user", "content": "who?"}]


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"name": "Ada", "age": 36}\n```',
        'Sure! Here it is: {"name": "Ada", "age": 36} Hope that helps.',
        '<think>the user wants JSON</think>{"name": "Ada", "age": 36,}',
    ],
    ids=["fenced", "prose-around", "think-and-trailing-comma"],
)
def test_tolerant_parsing_needs_no_retry(llm: Llm, server: FakeOpenAIServer, reply: str) -> None:
    server.replies.append(reply)
    response = llm.generate("who?", response_json_schema=PERSON)
    assert json.loads(response.text) == {"name": "Ada", "age": 36}
    assert len(server.bodies(CHAT)) == 1


def test_invalid_answer_is_repaired_once(llm: Llm, server: FakeOpenAIServer) -> None:
    server.replies.extend(['{"name": "Ada", "age": "thirty-six"}', '{"name": "Ada", "age": 36}'])
    response = llm.generate("who?", response_json_schema=PERSON)
    assert json.loads(response.text) == {"name": "Ada", "age": 36}
    first, retry = server.bodies(CHAT)
    assert retry["messages"][:-2] == first["messages"]
    assert retry["messages"][-2] == {
        "role": "assistant",
        "content": '{"name": "Ada", "age": "thirty-six"}',
    }
    note = retry["messages"][-1]["content"]
    assert "$.age: expected an integer, got a string" in note
    assert json.dumps(PERSON, separators=(",", ":")) in note
    assert retry["response_format"] == first["response_format"]
    # usage adds up over both requests
    assert response.usage is not None and response.usage.completion_tokens == 4 + 4


def test_repair_that_fails_raises(llm: Llm, server: FakeOpenAIServer) -> None:
    server.replies.extend(["I cannot answer in JSON.", '{"name": 7}'])
    with pytest.raises(LlmOutputError) as info:
        llm.generate("who?", response_json_schema=PERSON)
    assert "after one repair retry" in str(info.value)
    assert info.value.text == '{"name": 7}'
    assert any("missing required property 'age'" in e for e in info.value.errors)
    assert len(server.bodies(CHAT)) == 2


def test_length_is_a_failure_for_structured_output(llm: Llm, server: FakeOpenAIServer) -> None:
    server.replies.append(Answer('{"name": "Ada", "a', "length"))
    with pytest.raises(LlmOutputError, match="cut off") as info:
        llm.generate("who?", response_json_schema=PERSON)
    assert info.value.finish_reason == "length"
    assert len(server.bodies(CHAT)) == 1  # no retry: it would be cut off again


def test_fallback_when_json_schema_gives_500(llm: Llm, server: FakeOpenAIServer) -> None:
    """llama-cpp-python's server: json_schema -> HTTP 500, json_object + schema works."""
    server.json_schema = "reject_500"
    server.replies.extend(['{"name": "Ada", "age": 36}', '{"name": "Bob", "age": 7}'])
    assert json.loads(llm.generate("a", response_json_schema=PERSON).text)["name"] == "Ada"
    first, second = server.bodies(CHAT)
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object", "schema": PERSON}
    assert json.dumps(PERSON, separators=(",", ":")) in second["messages"][-1]["content"]
    assert llm.structured_output_mode == "json_object"
    # the accepted mode is remembered: the next call goes straight to json_object
    assert json.loads(llm.generate("b", response_json_schema=PERSON).text)["name"] == "Bob"
    assert [b["response_format"]["type"] for b in server.bodies(CHAT)] == [
        "json_schema",
        "json_object",
        "json_object",
    ]


def test_fallback_to_prompt_only(llm: Llm, server: FakeOpenAIServer) -> None:
    server.json_schema = "reject_400"
    server.json_object_schema = "reject_400"
    server.replies.append('{"name": "Ada", "age": 36}')
    response = llm.generate([Message("user", "who?")], response_json_schema=PERSON)
    assert json.loads(response.text)["age"] == 36
    bodies = server.bodies(CHAT)
    assert [b.get("response_format", {}).get("type") for b in bodies] == [
        "json_schema",
        "json_object",
        None,
    ]
    prompt = bodies[2]["messages"][-1]["content"]
    assert prompt.startswith("who?") and json.dumps(PERSON, separators=(",", ":")) in prompt
    assert llm.structured_output_mode == "prompt"


def test_server_that_ignores_response_format(llm: Llm, server: FakeOpenAIServer) -> None:
    server.json_schema = "ignore"
    server.replies.extend(
        ["Ada is 36 years old.", 'Here you go:\n```\n{"name": "Ada", "age": 36}\n```']
    )
    assert json.loads(llm.generate("who?", response_json_schema=PERSON).text)["age"] == 36
    assert len(server.bodies(CHAT)) == 2


def test_other_errors_do_not_fall_back(llm: Llm, server: FakeOpenAIServer) -> None:
    server.script.append(error_reply(401, "bad key"))
    with pytest.raises(LlmRequestError) as info:
        llm.generate("who?", response_json_schema=PERSON)
    assert info.value.status_code == 401 and len(server.requests) == 1


def test_structured_output_on_the_responses_api(server: FakeOpenAIServer) -> None:
    server.replies.append('{"name": "Ada", "age": 36}')
    llm = make(server, api_type=LlmApiType.RESPONSES)
    assert json.loads(llm.generate("who?", response_json_schema=CLOSED).text)["name"] == "Ada"
    fmt = server.bodies(RESPONSES)[0]["text"]["format"]
    assert fmt == {"type": "json_schema", "name": "response", "schema": CLOSED, "strict": True}


async def test_async_structured_fallback_and_repair(server: FakeOpenAIServer) -> None:
    server.json_schema = "reject_500"
    server.replies.extend(["no json", '{"name": "Ada", "age": 36}'])
    async with make(server) as llm:
        response = await llm.generate_async("who?", response_json_schema=PERSON)
    assert json.loads(response.text)["age"] == 36
    assert len(server.bodies(CHAT)) == 3


# -- retries and timeouts ---------------------------------------------------------------------


def test_429_then_success_honours_retry_after(llm: Llm, server: FakeOpenAIServer) -> None:
    server.script.append(error_reply(429, "slow down", **{"Retry-After": "1"}))
    start = time.monotonic()
    assert llm.generate("hi").text == "echo: hi"
    assert time.monotonic() - start >= 0.95
    assert len(server.requests) == 2


def test_5xx_retries_exhausted(llm: Llm, server: FakeOpenAIServer) -> None:
    server.script.extend(error_reply(503, "overloaded") for _ in range(3))
    with pytest.raises(LlmRequestError, match="overloaded") as info:
        llm.generate("hi")
    assert info.value.status_code == 503
    assert len(server.requests) == 3  # the first try and max_retries=2 more


def test_retry_count_is_configurable(server: FakeOpenAIServer) -> None:
    server.script.extend(error_reply(502, "bad gateway") for _ in range(5))
    with pytest.raises(LlmRequestError):
        make(server, num_retries=4).generate("hi")
    assert len(server.requests) == 5


def test_timeout_is_retried_then_raised(server: FakeOpenAIServer) -> None:
    server.latency = 0.6
    llm = make(server, timeout=0.15, max_retries=1)
    start = time.monotonic()
    with pytest.raises(LlmRequestError, match="timed out") as info:
        llm.generate("hi")
    assert info.value.status_code is None
    assert time.monotonic() - start < 1.0
    assert len(server.requests) == 2  # the first try and one retry


def test_unreachable_server() -> None:
    llm = Llm(MODEL, api_base="http://127.0.0.1:9/v1", api_key=None, max_retries=0)
    with pytest.raises(LlmRequestError, match="failed: ConnectError"):
        llm.generate("hi")


# -- images ----------------------------------------------------------------------------------


def test_image_parts_sent_as_data_urls(server: FakeOpenAIServer) -> None:
    llm = make(server, supports_vision=True)
    llm.generate(
        [Message("user", [TextContent("what is this?"), ImageContent(PNG, ImageMimeType.PNG)])]
    )
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    (body,) = server.bodies(CHAT)
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    llm.generate(
        [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": url, "detail": "low"}}],
            }
        ],
        api_type="responses",
    )
    assert server.bodies(RESPONSES)[0]["input"][0]["content"] == [
        {"type": "input_image", "image_url": url, "detail": "low"}
    ]


def test_images_refused_without_vision(llm: Llm, server: FakeOpenAIServer) -> None:
    with pytest.raises(ValueError, match="supports_vision=False"):
        llm.generate([Message("user", [ImageContent(PNG, ImageMimeType.PNG)])])
    assert server.requests == []


@pytest.mark.parametrize(
    ("limits", "images", "match"),
    [
        (
            ImageInputLimitConfig(max_images_per_llm_request=1),
            2,
            "max_images_per_llm_request: the request has 2 images, limit 1",
        ),
        (
            ImageInputLimitConfig(max_raw_image_bytes=16),
            1,
            "max_raw_image_bytes: an image has 32 bytes, limit 16",
        ),
        (
            ImageInputLimitConfig(
                max_raw_image_bytes=40, max_total_raw_image_bytes_per_llm_request=50
            ),
            2,
            "max_total_raw_image_bytes_per_llm_request: the request has 64 image bytes, limit 50",
        ),
    ],
)
def test_image_limits_checked_before_any_request(
    server: FakeOpenAIServer, limits: ImageInputLimitConfig, images: int, match: str
) -> None:
    llm = make(server, supports_vision=True, image_input_limit_config=limits)
    parts = [ImageContent(PNG, ImageMimeType.PNG) for _ in range(images)]
    with pytest.raises(ValueError, match=match):
        llm.generate([Message("user", parts)])
    assert server.requests == []


def test_image_limits_per_call(server: FakeOpenAIServer) -> None:
    llm = make(server, supports_vision=True)
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    prompt = [{"role": "user", "content": [{"type": "image_url", "image_url": url}] * 2}]
    with pytest.raises(ValueError, match="max_images_per_llm_request"):
        llm.generate(
            prompt, image_input_limit_config=ImageInputLimitConfig(max_images_per_llm_request=1)
        )
    assert server.requests == []
    assert llm.generate(prompt).text.startswith("echo:")


def test_bad_image_parts(server: FakeOpenAIServer) -> None:
    llm = make(server, supports_vision=True)
    cases = [
        ([Message("user", [ImageContent(None, ImageMimeType.PNG)])], "no bytes"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": "data:image/png;base64,@@"}],
                }
            ],
            "base64",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": "file:///etc/passwd"}],
                }
            ],
            "data: URL",
        ),
        ([{"role": "user", "content": [{"type": "audio"}]}], "unsupported content part type"),
    ]
    for prompt, match in cases:
        with pytest.raises(ValueError, match=match):
            llm.generate(prompt)
    assert server.requests == []


# -- concurrency -------------------------------------------------------------------------------


def test_max_concurrent_requests_bounds_sync_and_async(server: FakeOpenAIServer) -> None:
    server.latency = 0.15
    llm = make(server, max_concurrent_requests=2)

    async def three() -> None:
        await asyncio.gather(*(llm.generate_async(f"a{i}") for i in range(3)))

    threads = [threading.Thread(target=llm.generate, args=(f"s{i}",)) for i in range(3)]
    threads.append(threading.Thread(target=asyncio.run, args=(three(),)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(server.bodies(CHAT)) == 6
    assert server.peak_in_flight == 2


def test_unbounded_by_default(server: FakeOpenAIServer) -> None:
    server.latency = 0.15
    llm = make(server)
    threads = [threading.Thread(target=llm.generate, args=(f"s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert server.peak_in_flight >= 3


# -- routing -------------------------------------------------------------------------------------


def test_openai_compatible_prefix_is_stripped(server: FakeOpenAIServer) -> None:
    make(server, model=f"hosted_vllm/{MODEL}").generate("x")
    make(server, model="Qwen/Qwen2.5-7B-Instruct").generate("y")
    assert [b["model"] for b in server.bodies(CHAT)] == [MODEL, "Qwen/Qwen2.5-7B-Instruct"]


def test_prefix_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert "localhost:11434" in repr(Llm("ollama/qwen2.5"))
    assert "api.openai.com" in repr(Llm("openai/gpt-4o-mini"))
    with pytest.raises(ValueError, match="needs an api_base"):
        Llm("hosted_vllm/some-model")


@pytest.mark.skipif(litellm_available(), reason="litellm is installed here")
@pytest.mark.parametrize("model", ["anthropic/claude-3-5-haiku", "bedrock/x", "vertex_ai/gemini"])
def test_litellm_missing_is_a_clear_error(model: str) -> None:
    with pytest.raises(ImportError, match=r"recallwell\[litellm\]"):
        Llm(model)


def test_litellm_route_refuses_tls_options(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    with pytest.raises(ValueError, match="ca_file applies to OpenAI-compatible endpoints"):
        Llm("anthropic/claude-3-5-haiku", ca_file=str(ca))


# -- validation and errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": ""}, ValueError, "model"),
        ({"model": 3}, TypeError, "model"),
        ({"api_base": "ftp://x"}, ValueError, "api_base"),
        ({"api_type": "completions"}, ValueError, "api_type"),
        ({"stream": "yes"}, TypeError, "stream"),
        ({"temperature": -1}, ValueError, "temperature"),
        ({"temperature": "hot"}, TypeError, "temperature"),
        ({"max_tokens": 0}, ValueError, "max_tokens"),
        ({"supports_vision": 1}, TypeError, "supports_vision"),
        ({"image_input_limit_config": {"max_images_per_llm_request": 1}}, TypeError, "image_input"),
        ({"max_concurrent_requests": 0}, ValueError, "max_concurrent_requests"),
        ({"key_file": "/nonexistent/key.pem"}, ValueError, "key_file"),
        ({"messages": []}, ValueError, "messages"),
        ({"timeout": 0}, ValueError, "timeout"),
        ({"max_retries": -1}, ValueError, "max_retries"),
        ({"extra_headers": {"a": 1}}, TypeError, "extra_headers"),
    ],
)
def test_constructor_validation(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    kwargs = {"model": MODEL, "api_base": "http://127.0.0.1:9/v1", **kwargs}
    with pytest.raises(error, match=match):
        Llm(**kwargs)


def test_call_validation(llm: Llm, server: FakeOpenAIServer) -> None:
    with pytest.raises(TypeError, match="prompt"):
        llm.generate(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty list"):
        llm.generate([])
    with pytest.raises(ValueError, match=r"prompt\[0\].role"):
        llm.generate([{"role": "", "content": "x"}])
    with pytest.raises(TypeError, match="response_json_schema"):
        llm.generate("x", response_json_schema="{}")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="response_json_schema"):
        llm.generate("x", response_json_schema={"$ref": "#/nowhere"})
    with pytest.raises(ValueError, match="response_format"):
        llm.generate("x", response_json_schema=PERSON, response_format={"type": "json_object"})
    with pytest.raises(ValueError, match="input"):
        llm.generate("x", input="y")
    assert server.requests == []


def test_http_errors_carry_the_server_message(llm: Llm, server: FakeOpenAIServer) -> None:
    with pytest.raises(LlmRequestError, match="does not exist") as info:
        make(server, model="missing").generate("x")
    assert info.value.status_code == 404 and "does not exist" in (info.value.server_message or "")
    server.script.append(Scripted(200, b"not json"))
    with pytest.raises(ValueError, match="not JSON"):
        llm.generate("x")


def test_repr_hides_the_key(llm: Llm) -> None:
    assert KEY not in repr(llm) and MODEL in repr(llm)


def test_close_then_reuse_and_async_across_loops(server: FakeOpenAIServer) -> None:
    llm = make(server)
    assert llm.generate("a").text == "echo: a"
    llm.close()
    assert llm.generate("b").text == "echo: b"

    async def once(text: str) -> str:
        out = (await llm.generate_async(text)).text
        await llm.aclose()
        return out

    assert asyncio.run(once("c")) == "echo: c"
    assert asyncio.run(once("d")) == "echo: d"
    llm.close()


def test_tls_with_custom_ca_and_client_cert(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    with FakeOpenAIServer(
        api_key=KEY, models=(MODEL,), ssl_context=server_tls(pki, require_client_cert=True)
    ) as srv:
        files = {
            "ca_file": str(pki / "ca.pem"),
            "cert_file": str(pki / "client.pem"),
            "key_file": str(pki / "client.key"),
        }
        with make(srv, **files) as llm:
            assert llm.generate("over tls").text == "echo: over tls"
        with (
            make(srv, trust_env=False, max_retries=0) as untrusted,
            pytest.raises(LlmRequestError, match="CERTIFICATE_VERIFY_FAILED"),
        ):
            untrusted.generate("x")


# -- observability ------------------------------------------------------------------------------


class Recorder(EventListener):
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)


def test_generation_events(llm: Llm, server: FakeOpenAIServer) -> None:
    recorder = Recorder()
    server.replies.append('{"name": "Ada", "age": 36}')
    with register_event_listeners([recorder]):
        llm.generate("who is she?", response_json_schema=PERSON, temperature=0)
        server.script.append(error_reply(400, "nope"))
        with pytest.raises(LlmRequestError):
            llm.generate("fails")
    started, completed, failed_start, failed = recorder.events
    assert isinstance(started, LlmGenerationStartedEvent)
    assert started.event_name == "llm.generation.started" and started.model == MODEL
    assert started.api_type == "chat_completions"
    assert started.prompt == [{"role": "user", "content": "who is she?"}]
    assert started.response_json_schema == PERSON
    assert started.model_dump()["prompt"] == "[REDACTED]"
    assert isinstance(completed, LlmGenerationCompletedEvent)
    assert completed.success and completed.started_event_id == started.event_id
    assert completed.content == '{"name": "Ada", "age": 36}'
    assert completed.input_tokens and completed.output_tokens == 4
    assert isinstance(failed_start, LlmGenerationStartedEvent)
    assert not failed.success and failed.error_type == "LlmRequestError"


async def test_generation_events_async(server: FakeOpenAIServer) -> None:
    recorder = Recorder()
    with register_event_listeners([recorder]):
        await make(server).generate_async("hi")
    assert [e.event_name for e in recorder.events] == [
        "llm.generation.started",
        "llm.generation.completed",
    ]

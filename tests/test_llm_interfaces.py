"""ILlm / IReranker contracts, their value types, and the scripted ILlm test double."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis import (
    ILlm,
    IReranker,
    LlmResponse,
    RerankResponse,
    RerankResponseResult,
)
from oracleagentmemory.apis.llms.llm import (
    ChatMessageTypedDictT,
    LlmUsage,
    generate_from_async,
    generate_in_thread,
)
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, TextContent
from oracleagentmemory.apis.reranker import rerank_in_thread
from oracleagentmemory.apis.thread import Message

from ._llm_double import LlmCall, ScriptedLlm, Slow

# -- value types -----------------------------------------------------------------------------


def test_llm_response_is_frozen_slotted_with_optional_extras() -> None:
    response = LlmResponse("hi")
    assert (response.text, response.finish_reason, response.usage) == ("hi", None, None)
    assert not hasattr(response, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        response.text = "x"  # type: ignore[misc]
    usage = LlmUsage(prompt_tokens=3, completion_tokens=4, total_tokens=7)
    full = LlmResponse("x", finish_reason="stop", usage=usage)
    assert full.usage == usage
    with pytest.raises(TypeError):
        LlmResponse("x", "stop")  # type: ignore[misc]  # the extras are keyword-only


def test_llm_response_validates() -> None:
    with pytest.raises(TypeError, match="text"):
        LlmResponse(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="usage"):
        LlmResponse("x", usage={"prompt_tokens": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="prompt_tokens"):
        LlmUsage(prompt_tokens=-1)


def test_usage_adds_up() -> None:
    total = LlmUsage(1, 2, 3) + LlmUsage(10, None, 10)
    assert total == LlmUsage(11, 2, 13)
    assert LlmUsage() + LlmUsage() == LlmUsage(None, None, None)


def test_chat_message_typed_dict() -> None:
    message: ChatMessageTypedDictT = {"role": "user", "content": "hi"}
    assert ChatMessageTypedDictT.__required_keys__ == frozenset({"role", "content"})
    assert message["role"] == "user"


def test_rerank_result_shapes() -> None:
    result = RerankResponseResult(np.int64(2), np.float32(0.5))  # type: ignore[arg-type]
    assert (result.index, result.relevance_score, result.document) == (2, 0.5, None)
    assert type(result.index) is int and type(result.relevance_score) is float
    assert RerankResponseResult(0, 1, "doc").relevance_score == 1.0
    with pytest.raises(TypeError, match="index"):
        RerankResponseResult("0", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="index"):
        RerankResponseResult(-1, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        RerankResponseResult(0, float("nan"))
    with pytest.raises(TypeError, match="relevance_score"):
        RerankResponseResult(0, "high")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="document"):
        RerankResponseResult(0, 1.0, 3)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.index = 1  # type: ignore[misc]


def test_rerank_response_shapes() -> None:
    response = RerankResponse((RerankResponseResult(1, 0.9), RerankResponseResult(0, 0.1)))  # type: ignore[arg-type]
    assert isinstance(response.results, list)
    response.check_complete(2)
    with pytest.raises(ValueError, match="exactly once"):
        RerankResponse([RerankResponseResult(0, 1.0), RerankResponseResult(0, 0.5)]).check_complete(
            2
        )
    with pytest.raises(TypeError, match=r"results\[0\]"):
        RerankResponse([0.5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="results"):
        RerankResponse(None)  # type: ignore[arg-type]


# -- which methods an implementation must define (the reference's abstract sets) -------------


class SyncLlm(ILlm):
    def generate(
        self, prompt: Any, *, response_json_schema: dict[str, Any] | None = None, **kwargs: Any
    ) -> LlmResponse:
        return LlmResponse(f"sync:{prompt}:{kwargs}")

    generate_async = generate_in_thread


class AsyncLlm(ILlm):
    async def generate_async(
        self, prompt: Any, *, response_json_schema: dict[str, Any] | None = None, **kwargs: Any
    ) -> LlmResponse:
        await asyncio.sleep(0)
        return LlmResponse(f"async:{prompt}:{response_json_schema}")

    generate = generate_from_async


def test_an_llm_defines_both_methods_as_in_the_reference() -> None:
    assert ILlm.__abstractmethods__ == {"generate", "generate_async"}

    class OnlySync(ILlm):
        def generate(self, prompt: Any, **kwargs: Any) -> LlmResponse:
            return LlmResponse("x")

    class OnlyAsync(ILlm):
        async def generate_async(self, prompt: Any, **kwargs: Any) -> LlmResponse:
            return LlmResponse("x")

    class Nothing(ILlm):
        pass

    with pytest.raises(TypeError, match="generate_async"):
        OnlySync()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="generate"):
        OnlyAsync()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="generate"):
        Nothing()  # type: ignore[abstract]
    with pytest.raises(TypeError):
        ILlm()  # type: ignore[abstract]


def test_the_ready_twins_give_the_other_method() -> None:
    assert SyncLlm().generate("a", t=1).text == "sync:a:{'t': 1}"
    assert asyncio.run(SyncLlm().generate_async("b")).text == "sync:b:{}"
    assert AsyncLlm().generate("c", response_json_schema={}).text == "async:c:{}"
    assert asyncio.run(AsyncLlm().generate_async("d")).text == "async:d:None"


def test_derived_sync_twin_works_inside_a_running_loop() -> None:
    async def main() -> str:
        return AsyncLlm().generate("inside").text  # sync call from async code

    assert asyncio.run(main()) == "async:inside:None"


def test_derived_sync_twin_propagates_errors() -> None:
    class Failing(ILlm):
        async def generate_async(self, prompt: Any, **kwargs: Any) -> LlmResponse:
            raise RuntimeError("model down")

        generate = generate_from_async

    with pytest.raises(RuntimeError, match="model down"):
        Failing().generate("x")


class SyncReranker(IReranker):
    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        order = sorted(range(len(documents)), key=lambda i: -documents[i].count(query))
        return RerankResponse([RerankResponseResult(i, documents[i].count(query)) for i in order])

    rerank_async = rerank_in_thread


class AsyncReranker(IReranker):
    async def rerank_async(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        return RerankResponse([RerankResponseResult(i, -i) for i in range(len(documents))])


def test_a_reranker_defines_rerank_async_as_in_the_reference() -> None:
    assert IReranker.__abstractmethods__ == {"rerank_async"}
    docs = ["a", "aaa", "aa"]
    assert [r.index for r in SyncReranker().rerank("a", docs).results] == [1, 2, 0]
    assert [r.index for r in asyncio.run(SyncReranker().rerank_async("a", docs)).results] == [
        1,
        2,
        0,
    ]
    assert [r.index for r in AsyncReranker().rerank("a", docs).results] == [0, 1, 2]

    class OnlySync(IReranker):
        def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
            return RerankResponse([])

    class Nothing(IReranker):
        pass

    for cls in (OnlySync, Nothing):
        with pytest.raises(TypeError, match="rerank_async"):
            cls()  # type: ignore[abstract]


# -- the scripted double ---------------------------------------------------------------------------


def test_double_answers_in_order_and_records_calls() -> None:
    llm = ScriptedLlm(["one", {"memories": ["x"]}, LlmResponse("three", finish_reason="length")])
    schema = {"type": "object"}
    assert llm.generate("hello").text == "one"
    assert (
        llm.generate(
            [Message("system", "be brief"), {"role": "user", "content": "hi"}],
            response_json_schema=schema,
            temperature=0,
        ).text
        == '{"memories": ["x"]}'
    )
    assert llm.generate({"role": "user", "content": "z"}).finish_reason == "length"
    assert llm.remaining == 0
    first, second, third = llm.calls
    assert first.messages == [("user", "hello")] and first.schema is None
    assert second.messages == [("system", "be brief"), ("user", "hi")]
    assert second.schema == schema and second.kwargs == {"temperature": 0}
    assert second.text == "system: be brief\nuser: hi" and second.last_user_text == "hi"
    assert third.messages == [("user", "z")]
    assert llm.schemas == [None, schema, None]


def test_double_renders_parts_and_images() -> None:
    llm = ScriptedLlm(respond=lambda call: "ok")
    llm.generate([Message("user", [TextContent("look"), ImageContent(b"x", ImageMimeType.PNG)])])
    llm.generate(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "image_url", "image_url": {"url": "u"}},
                ],
            }
        ]
    )
    assert llm.calls[0].text == "user: look\n[image]"
    assert llm.calls[1].text == "user: a\n[image]"


def test_double_respond_callable_sees_the_call() -> None:
    def respond(call: LlmCall) -> Any:
        return {"echo": call.last_user_text, "structured": call.schema is not None}

    llm = ScriptedLlm(respond=respond)
    assert (
        llm.generate("ping", response_json_schema={}).text == '{"echo": "ping", "structured": true}'
    )
    llm.push("queued first")
    assert llm.generate("x").text == "queued first"  # the queue wins while it has items
    assert llm.generate("y").text == '{"echo": "y", "structured": false}'


def test_double_raises_scripted_errors_and_fails_when_empty() -> None:
    llm = ScriptedLlm([TimeoutError("slow model"), lambda call: ValueError(call.text)])
    with pytest.raises(TimeoutError, match="slow model"):
        llm.generate("a")
    with pytest.raises(ValueError, match="user: b"):
        llm.generate("b")
    with pytest.raises(AssertionError, match="no scripted answer left for call #2"):
        llm.generate("c")
    assert len(llm.calls) == 3


def test_double_json_in_prompt() -> None:
    llm = ScriptedLlm(["x"])
    llm.generate('Messages: [{"id": "m1", "text": "hi"}] end')
    assert llm.calls[0].json_in_prompt() == [{"id": "m1", "text": "hi"}]


def test_double_is_slow_when_asked_and_counts_concurrency() -> None:
    llm = ScriptedLlm(respond=lambda call: "done", delay=0.1)
    threads = [threading.Thread(target=llm.generate, args=(f"m{i}",)) for i in range(4)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - start >= 0.1
    assert llm.peak_in_flight >= 2 and llm.in_flight == 0
    assert len(llm.calls) == 4

    slow = ScriptedLlm([Slow(0.15, "late")])
    start = time.monotonic()
    assert slow.generate("x").text == "late"
    assert time.monotonic() - start >= 0.15


def test_double_thread_safe_queue() -> None:
    llm = ScriptedLlm([str(i) for i in range(200)])
    got: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(50):
            text = llm.generate("q").text
            with lock:
                got.append(text)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got, key=int) == [str(i) for i in range(200)]
    assert [c.index for c in llm.calls] == list(range(200))


async def test_double_async() -> None:
    llm = ScriptedLlm(["a", Slow(0.05, "b")], delay=0.0)
    results = await asyncio.gather(llm.generate_async("1"), llm.generate_async("2"))
    assert sorted(r.text for r in results) == ["a", "b"]
    assert all(call.is_async for call in llm.calls)


def test_user_classes_written_for_the_reference_work() -> None:
    from .typing_samples.user_llm import UserLlm, UserReranker

    assert UserLlm().generate("x").text == "hello"
    schema = {"type": "object"}
    assert asyncio.run(UserLlm().generate_async("x", response_json_schema=schema)).text == "{}"
    ranking = UserReranker().rerank("a", ["b", "aa", "a"])  # the derived sync method
    assert [r.index for r in ranking.results] == [1, 2, 0]

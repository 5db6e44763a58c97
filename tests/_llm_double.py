"""A scripted :class:`ILlm` test double for extraction, summary, linking and pruning tests.

Script what the "model" answers, run the code under test, then look at what it was asked::

    llm = ScriptedLlm(['{"memories": []}', {"memories": [{"content": "likes tea"}]}])
    ... code under test calls llm.generate(...) twice ...
    assert "tea" in llm.calls[1].text          # the rendered prompt of the second call
    assert llm.calls[1].schema is not None     # it asked for structured output

Each scripted item answers one call, in order (thread-safe, so background workers may share
one double). An item is:

- ``str``: the response text, returned as is (it may be deliberately malformed JSON);
- ``dict`` / ``list``: JSON-encoded as the response text;
- :class:`LlmResponse`: returned as is (to script ``finish_reason`` or ``usage``);
- an exception instance: raised by that call;
- a callable ``f(call) -> item``: called with the :class:`LlmCall`, its result used as above;
- :class:`Slow`: ``Slow(seconds, item)`` sleeps, then answers with ``item``.

Instead of (or after) a queue, ``respond=f`` answers every call: ``f(call) -> item``. With
neither left, a call fails the test with an AssertionError naming the call. ``delay`` makes
every call slow (a slow LLM for background-queue tests). ``calls`` records every call:
prompt exactly as passed, rendered ``messages``, ``schema`` and ``kwargs``; ``peak_in_flight``
is the most calls that were running at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.apis.llms.llm import ILlm, LlmResponse
from oracleagentmemory.apis.message import ImageContent, TextContent
from oracleagentmemory.apis.thread import Message


@dataclass(frozen=True)
class Slow:
    """Answer with ``item`` after sleeping ``seconds``."""

    seconds: float
    item: Any


@dataclass
class LlmCall:
    """One call to the double, as the code under test made it."""

    index: int
    prompt: Any
    messages: list[tuple[str, str]]
    schema: dict[str, Any] | None
    kwargs: dict[str, Any]
    is_async: bool
    started_at: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        """Every message's text, one per line as ``role: text`` (images read ``[image]``)."""
        return "\n".join(f"{role}: {text}" for role, text in self.messages)

    @property
    def last_user_text(self) -> str:
        """The text of the last user message ('' when there is none)."""
        for role, text in reversed(self.messages):
            if role == "user":
                return text
        return ""

    def json_in_prompt(self) -> Any:
        """The first JSON object or array embedded in the prompt text (for prompts that carry
        data as JSON); raises ValueError when there is none."""
        decoder = json.JSONDecoder()
        text = self.text
        for i, ch in enumerate(text):
            if ch in "[{":
                try:
                    return decoder.raw_decode(text, i)[0]
                except ValueError:
                    continue
        raise ValueError("no JSON value in the prompt")


def _part_text(part: Any) -> str:
    if isinstance(part, TextContent):
        return part.text
    if isinstance(part, ImageContent):
        return "[image]"
    if isinstance(part, Mapping):
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            return str(part.get("text", ""))
        if kind in ("image_url", "input_image", "image"):
            return "[image]"
    return str(part)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(_part_text(part) for part in content)


def render_messages(prompt: Any) -> list[tuple[str, str]]:
    """``(role, text)`` for each message of a prompt in any form ``ILlm.generate`` accepts."""
    if isinstance(prompt, str):
        return [("user", prompt)]
    if isinstance(prompt, Mapping):
        return [(str(prompt.get("role", "")), _content_text(prompt.get("content")))]
    if isinstance(prompt, Message):
        return [(prompt.role, _content_text(prompt.content))]
    if isinstance(prompt, Sequence):
        out: list[tuple[str, str]] = []
        for message in prompt:
            out.extend(render_messages(message))
        return out
    raise TypeError(f"ScriptedLlm cannot render a prompt of type {type(prompt).__name__}")


class ScriptedLlm(ILlm):
    """An :class:`ILlm` whose answers are scripted (see the module docstring)."""

    def __init__(
        self,
        script: Sequence[Any] = (),
        *,
        respond: Callable[[LlmCall], Any] | None = None,
        delay: float = 0.0,
    ) -> None:
        self._queue: deque[Any] = deque(script)
        self.respond = respond
        self.delay = delay
        self.calls: list[LlmCall] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()

    def push(self, *items: Any) -> None:
        """Append answers to the script."""
        with self._lock:
            self._queue.extend(items)

    @property
    def remaining(self) -> int:
        """Scripted answers not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def schemas(self) -> list[dict[str, Any] | None]:
        """The ``response_json_schema`` of each call, in call order."""
        with self._lock:
            return [call.schema for call in self.calls]

    # -- answering ------------------------------------------------------------------------

    def _begin(
        self, prompt: Any, schema: dict[str, Any] | None, kwargs: dict[str, Any], is_async: bool
    ) -> tuple[LlmCall, Any]:
        messages = render_messages(prompt)
        with self._lock:
            call = LlmCall(len(self.calls), prompt, messages, schema, dict(kwargs), is_async)
            self.calls.append(call)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            if self._queue:
                item = self._queue.popleft()
            elif self.respond is not None:
                item = self.respond
            else:
                item = AssertionError(
                    f"ScriptedLlm: no scripted answer left for call #{call.index} "
                    f"(prompt starts {call.text[:80]!r})"
                )
        return call, item

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    @staticmethod
    def _resolve(call: LlmCall, item: Any) -> tuple[float, Any]:
        """Unwrap callables and Slow into (seconds to sleep, final item)."""
        wait = 0.0
        for _ in range(8):
            if isinstance(item, Slow):
                wait += item.seconds
                item = item.item
            elif callable(item) and not isinstance(item, BaseException | type):
                item = item(call)
            else:
                break
        return wait, item

    @staticmethod
    def _finish(item: Any) -> LlmResponse:
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, LlmResponse):
            return item
        if isinstance(item, str):
            return LlmResponse(item, finish_reason="stop")
        if isinstance(item, dict | list):
            return LlmResponse(json.dumps(item), finish_reason="stop")
        raise TypeError(f"ScriptedLlm cannot answer with a {type(item).__name__}")

    def generate(
        self,
        prompt: Any,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        call, item = self._begin(prompt, response_json_schema, kwargs, is_async=False)
        try:
            wait, item = self._resolve(call, item)
            if self.delay + wait > 0:
                time.sleep(self.delay + wait)
            return self._finish(item)
        finally:
            self._end()

    async def generate_async(
        self,
        prompt: Any,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        call, item = self._begin(prompt, response_json_schema, kwargs, is_async=True)
        try:
            wait, item = self._resolve(call, item)
            if self.delay + wait > 0:
                await asyncio.sleep(self.delay + wait)
            return self._finish(item)
        finally:
            self._end()

"""Temporary stand-in for ``tests/_llm_double.ScriptedLlm`` (same API subset) until that double
reaches main; delete this file then and import from ``_llm_double``."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.apis.llms.llm import ILlm, LlmResponse
from oracleagentmemory.apis.thread import Message


@dataclass(frozen=True)
class Slow:
    """Answer with ``item`` after sleeping ``seconds``."""

    seconds: float
    item: Any


@dataclass
class LlmCall:
    """One call to the double."""

    index: int
    prompt: Any
    messages: list[tuple[str, str]]
    schema: dict[str, Any] | None
    kwargs: dict[str, Any]
    started_at: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        return "\n".join(f"{role}: {text}" for role, text in self.messages)

    @property
    def last_user_text(self) -> str:
        for role, text in reversed(self.messages):
            if role == "user":
                return text
        return ""


def render_messages(prompt: Any) -> list[tuple[str, str]]:
    if isinstance(prompt, str):
        return [("user", prompt)]
    if isinstance(prompt, Mapping):
        return [(str(prompt.get("role", "")), str(prompt.get("content") or ""))]
    if isinstance(prompt, Message):
        return [(prompt.role, str(prompt.content))]
    out: list[tuple[str, str]] = []
    for message in prompt:
        out.extend(render_messages(message))
    return out


class ScriptedLlm(ILlm):
    """Scripted answers (str, dict/list as JSON, exceptions, callables, Slow), then
    ``respond``; records every call."""

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
        with self._lock:
            self._queue.extend(items)

    @property
    def schemas(self) -> list[dict[str, Any] | None]:
        with self._lock:
            return [call.schema for call in self.calls]

    def generate(
        self, prompt: Any, *, response_json_schema: dict[str, Any] | None = None, **kwargs: Any
    ) -> LlmResponse:
        with self._lock:
            call = LlmCall(
                len(self.calls), prompt, render_messages(prompt), response_json_schema, kwargs
            )
            self.calls.append(call)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            if self._queue:
                item = self._queue.popleft()
            elif self.respond is not None:
                item = self.respond
            else:
                item = AssertionError(f"ScriptedLlm: no answer left for call #{call.index}")
        try:
            wait = self.delay
            for _ in range(8):
                if isinstance(item, Slow):
                    wait += item.seconds
                    item = item.item
                elif callable(item) and not isinstance(item, BaseException | type):
                    item = item(call)
                else:
                    break
            if wait > 0:
                time.sleep(wait)
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, LlmResponse):
                return item
            if isinstance(item, dict | list):
                return LlmResponse(json.dumps(item))
            return LlmResponse(str(item))
        finally:
            with self._lock:
                self.in_flight -= 1

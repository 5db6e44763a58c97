"""The LLM adapter interface used for memory extraction, summaries, captions and pruning."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypedDict

from oracleagentmemory.apis._twins import run_blocking
from oracleagentmemory.apis.message import JsonSchema as JsonSchema, Message


class ChatMessageTypedDictT(TypedDict):
    """One chat message as a plain dict: ``content`` is text or a list of content-part dicts
    (``{"type": "text", "text": ...}``, ``{"type": "image_url", "image_url": {"url": ...}}``)."""

    role: str
    content: str | list[Mapping[str, Any]] | None


ChatMessageMappingT: TypeAlias = Mapping[str, str | Sequence[Mapping[str, Any]]]
"""A chat message given as any mapping with ``role`` and ``content``."""

ChatMessages: TypeAlias = Sequence[Message | ChatMessageMappingT]
"""A chat transcript: :class:`Message` objects and/or message mappings, oldest first."""

Prompt: TypeAlias = str | ChatMessages | ChatMessageTypedDictT
"""A prompt: plain text (one user message), a chat transcript, or a single chat message."""

LlmPrompt: TypeAlias = Prompt
"""Alias of :data:`Prompt`."""


"""A JSON Schema (draft 2020-12 keywords) as a dict."""


def _count(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class LlmUsage:
    """Tokens one generation consumed, as the provider reported them (``None``: not reported).

    Calls that needed several requests (a repair retry, a structured-output fallback) report
    the sum over all of them.
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            _count(name, getattr(self, name))

    def __add__(self, other: LlmUsage) -> LlmUsage:
        def plus(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return LlmUsage(
            plus(self.prompt_tokens, other.prompt_tokens),
            plus(self.completion_tokens, other.completion_tokens),
            plus(self.total_tokens, other.total_tokens),
        )


@dataclass(frozen=True, slots=True)
class LlmResponse:
    """The text an LLM generated (JSON text when a response schema was requested).

    Beyond the reference's ``text``, two optional keyword-only fields: ``finish_reason`` as the
    provider gave it (``"stop"``, ``"length"``, ...; ``None`` when unknown) and ``usage``
    (token counts, ``None`` when the provider reported none).
    """

    text: str
    finish_reason: str | None = field(default=None, kw_only=True)
    usage: LlmUsage | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"text must be a str, got {type(self.text).__name__}")
        if self.finish_reason is not None and not isinstance(self.finish_reason, str):
            raise TypeError(
                f"finish_reason must be a str or None, got {type(self.finish_reason).__name__}"
            )
        if self.usage is not None and not isinstance(self.usage, LlmUsage):
            raise TypeError(f"usage must be an LlmUsage or None, got {type(self.usage).__name__}")


class ILlm(ABC):
    """Generates text from a prompt; plug in any model by implementing both methods.

    As in the reference, :meth:`generate` and :meth:`generate_async` are both abstract. A
    model with only one kind of code sets the other from a ready twin:
    ``generate_async = generate_in_thread`` (runs :meth:`generate` in a worker thread) or
    ``generate = generate_from_async`` (runs :meth:`generate_async` on its own event loop).
    """

    @abstractmethod
    def generate(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Generate a completion for ``prompt``.

        A string is one user message; a sequence is a chat transcript of :class:`Message`
        objects or ``{"role", "content"}`` mappings (content may hold text and image parts); a
        single mapping is one message. With ``response_json_schema`` the response text is JSON
        valid for that schema. Other keyword arguments are per-call options of the adapter.
        """

    @abstractmethod
    async def generate_async(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Like :meth:`generate`, without blocking the event loop."""


def generate_from_async(
    self: ILlm,
    prompt: Prompt,
    *,
    response_json_schema: dict[str, Any] | None = None,
    **kwargs: Any,
) -> LlmResponse:
    """A ``generate`` that runs :meth:`ILlm.generate_async` to completion."""
    return run_blocking(
        lambda: self.generate_async(prompt, response_json_schema=response_json_schema, **kwargs)
    )


async def generate_in_thread(
    self: ILlm,
    prompt: Prompt,
    *,
    response_json_schema: dict[str, Any] | None = None,
    **kwargs: Any,
) -> LlmResponse:
    """A ``generate_async`` that runs :meth:`ILlm.generate` in a worker thread."""
    return await asyncio.to_thread(
        self.generate, prompt, response_json_schema=response_json_schema, **kwargs
    )


generate_from_async.__name__ = "generate"
generate_in_thread.__name__ = "generate_async"

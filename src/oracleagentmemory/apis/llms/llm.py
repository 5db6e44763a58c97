"""The LLM adapter interface used for memory extraction, summaries and pruning."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypedDict

from oracleagentmemory.apis.message import Message


class ChatMessageTypedDictT(TypedDict):
    """One chat message as a plain dict: text content or a list of content-part dicts."""

    role: str
    content: str | Sequence[Mapping[str, Any]]


LlmPrompt: TypeAlias = (
    str
    | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
    | ChatMessageTypedDictT
)
"""A prompt: plain text, a chat transcript, or a single chat message."""


@dataclass
class LlmResponse:
    """The text an LLM generated (JSON text when a response schema was requested)."""

    text: str


class ILlm(ABC):
    """Generates text from a prompt; implement :meth:`generate` to plug in any model."""

    @abstractmethod
    def generate(
        self,
        prompt: LlmPrompt,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Generate a completion for ``prompt``.

        With ``response_json_schema`` the response text must be JSON valid for that schema.
        """

    async def generate_async(
        self,
        prompt: LlmPrompt,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Generate without blocking the event loop (runs :meth:`generate` in a worker thread).

        Override it when the model has a native async client.
        """
        return await asyncio.to_thread(
            self.generate, prompt, response_json_schema=response_json_schema, **kwargs
        )

"""Prompt copies of oversized messages: shortened by the LLM, never changed in the store.

A message longer than ``max_message_token_length`` tokens is summarised for the prompt by
the LLM; the LLM sees at most ``message_shortening_input_token_limit`` tokens of it (the
start of the message; < 1 = all of it). When the LLM fails or still answers too long, the
copy is cut to the limit. Shortened copies are cached per message id and limit, so a message
that appears in several extraction windows is shortened once per process.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Final

from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.message import ImageContent, TextContent
from oracleagentmemory.apis.thread import Message, message_text
from oracleagentmemory.core._client.search._search import CHARS_PER_TOKEN, estimate_tokens
from oracleagentmemory.core.extractors._parse import clean_text
from oracleagentmemory.core.extractors._prompts import shorten_prompt

log = logging.getLogger("oracleagentmemory.extraction")

CACHE_SIZE: Final = 2048
_WORDS_PER_TOKEN: Final = 0.75


def cut_to_tokens(text: str, tokens: int) -> str:
    """``text`` cut to about ``tokens`` tokens, marked with `` […]`` when cut."""
    chars = max(1, int(tokens * CHARS_PER_TOKEN))
    return text if len(text) <= chars else text[:chars].rstrip() + " […]"


class MessageShortener:
    """Makes prompt copies of messages fit a per-message token limit (thread-safe)."""

    def __init__(self) -> None:
        self._cache: OrderedDict[tuple[str, int, int], str] = OrderedDict()
        self._lock = threading.Lock()
        self.llm_calls = 0

    def shorten(
        self, messages: list[Message], llm: ILlm | None, max_tokens: int, input_limit: int
    ) -> list[Message]:
        """Copies of ``messages`` whose text fits ``max_tokens`` (< 1: unchanged)."""
        if max_tokens < 1:
            return messages
        return [self._one(m, llm, max_tokens, input_limit) for m in messages]

    def _one(
        self, message: Message, llm: ILlm | None, max_tokens: int, input_limit: int
    ) -> Message:
        text = message_text(message.content)
        if estimate_tokens(text) <= max_tokens:
            return message
        key = (message.id or "", max_tokens, input_limit)
        with self._lock:
            cached = self._cache.get(key) if message.id else None
        if cached is None:
            cached = self._shorten_text(text, llm, max_tokens, input_limit)
            if message.id:
                with self._lock:
                    self._cache[key] = cached
                    while len(self._cache) > CACHE_SIZE:
                        self._cache.popitem(last=False)
        content = message.content
        images = (
            [] if isinstance(content, str) else [p for p in content if isinstance(p, ImageContent)]
        )
        return replace(message, content=(TextContent(cached), *images) if images else cached)

    def _shorten_text(self, text: str, llm: ILlm | None, max_tokens: int, input_limit: int) -> str:
        if llm is None:
            return cut_to_tokens(text, max_tokens)
        excerpt = text if input_limit < 1 else cut_to_tokens(text, input_limit)
        words = max(1, int(max_tokens * _WORDS_PER_TOKEN))
        try:
            with self._lock:
                self.llm_calls += 1
            answer = llm.generate(shorten_prompt(excerpt, words))
            short = clean_text(answer.text) if isinstance(answer.text, str) else ""
        except Exception as exc:
            log.warning(
                "shortening a long message failed (%s); its prompt copy is cut",
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            short = ""
        if not short:
            return cut_to_tokens(text, max_tokens)
        return cut_to_tokens(short, max_tokens)

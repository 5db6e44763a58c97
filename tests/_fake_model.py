"""A deterministic stand-in for a language model, for tests that need plausible answers to
every prompt the SDK sends (extraction, summaries, shortening) rather than a script.

Extraction: one memory per new *user* message, its text being the message itself, cited by
its number (or what ``memory_for(text)`` returns: None skips the message). Summaries: the
previous summary plus the new messages' first words. Shortening: the first words of the
message. Use it as ``ScriptedLlm(respond=fake_model())``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

_MESSAGE = re.compile(
    r'<message n="(?P<n>[^"]*)" role="(?P<role>[^"]*)"[^>]*>(?P<content>.*?)</message>',
    re.DOTALL,
)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)


def new_messages(prompt_text: str) -> list[tuple[int, str, str]]:
    """(number, role, text) of each message inside ``<new_messages>`` of a prompt."""
    block = prompt_text.split("<new_messages>", 1)[-1].split("</new_messages>", 1)[0]
    return [
        (int(m["n"]), html.unescape(m["role"]), html.unescape(m["content"]))
        for m in _MESSAGE.finditer(block)
    ]


def previous_summary(prompt_text: str) -> str:
    found = _SUMMARY.search(prompt_text.split("<new_messages>", 1)[0])
    return html.unescape(found.group(1)) if found else ""


def fake_model(
    memory_for: Callable[[str], str | None] = lambda text: text,
    memory_type: str = "fact",
) -> Callable[[Any], Any]:
    """A ``respond`` function for ``ScriptedLlm``."""

    def respond(call: Any) -> Any:
        schema = call.schema or {}
        properties = schema.get("properties", {})
        text = call.messages[-1][1] if call.messages else ""
        if "memories" in properties:
            memories = []
            for number, role, content in new_messages(text):
                memory = memory_for(content) if role == "user" else None
                if memory:
                    memories.append({"type": memory_type, "content": memory, "sources": [number]})
            answer: dict[str, Any] = {"memories": memories}
            if "summary" in properties:
                answer.update(_summary(text))
            return answer
        if "summary" in properties:
            return _summary(text)
        words = re.sub(r"<[^>]+>", " ", text).split()
        return " ".join(words[:20])

    return respond


def _summary(prompt_text: str) -> dict[str, Any]:
    parts = [previous_summary(prompt_text)]
    parts += [" ".join(text.split()[:6]) for _, _, text in new_messages(prompt_text)]
    summary = " | ".join(p for p in parts if p)[-1500:]
    return {"summary": summary or "(empty)", "topics": ["conversation"]}

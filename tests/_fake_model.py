"""A deterministic stand-in for a language model, for tests that need plausible answers to
every prompt the SDK sends (extraction, summaries, shortening) rather than a script.

Extraction: one memory per new *user* message, its text being the message itself, cited by
its number (or what ``memory_for(text)`` returns: None skips the message). Summaries: the
previous summary plus the new messages' first words. Links between memories: "none" for
every candidate (what ``link_for(new, existing)`` returns otherwise). Pruning: every result
kept. Shortening: the first words of the message. Use it as
``ScriptedLlm(respond=fake_model())``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

_ENTRY = re.compile(r"^#(\d+)\n(.*?)(?=^#\d+\n|\Z)", re.DOTALL | re.MULTILINE)
_ROLE = re.compile(r"<role>(.*?)</role>", re.DOTALL)
_CONTENT = re.compile(r"<content>(.*?)</content>", re.DOTALL)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)


def new_messages(prompt_text: str) -> list[tuple[int, str, str]]:
    """(number, role, text) of each message inside ``<new_messages>`` of a prompt (default
    message format: ``#N`` then ``<message>`` with ``<role>`` and ``<content>``)."""
    block = prompt_text.split("<new_messages>", 1)[-1].split("</new_messages>", 1)[0]
    out = []
    for entry in _ENTRY.finditer(block.strip("\n")):
        role = _ROLE.search(entry.group(2))
        content = _CONTENT.search(entry.group(2))
        out.append(
            (
                int(entry.group(1)),
                html.unescape(role.group(1)) if role else "",
                html.unescape(content.group(1)) if content else "",
            )
        )
    return out


def previous_summary(prompt_text: str) -> str:
    found = _SUMMARY.search(prompt_text.split("<new_messages>", 1)[0])
    return html.unescape(found.group(1)) if found else ""


_NEW_MEMORY = re.compile(r"<new_memory[^>]*>(.*?)</new_memory>", re.DOTALL)
_EXISTING = re.compile(r'<memory number="(\d+)"[^>]*>(.*?)</memory>', re.DOTALL)


def link_candidates(prompt_text: str) -> tuple[str, dict[str, str]]:
    """The new memory of a link prompt and its numbered existing memories."""
    new = _NEW_MEMORY.search(prompt_text)
    existing = {n: html.unescape(t) for n, t in _EXISTING.findall(prompt_text)}
    return (html.unescape(new.group(1)) if new else ""), existing


def fake_model(
    memory_for: Callable[[str], str | None] = lambda text: text,
    memory_type: str = "fact",
    link_for: Callable[[str, str], str] = lambda new, existing: "none",
) -> Callable[[Any], Any]:
    """A ``respond`` function for ``ScriptedLlm``."""

    def respond(call: Any) -> Any:
        schema = call.schema or {}
        properties = schema.get("properties", {})
        text = call.messages[-1][1] if call.messages else ""
        if properties and all(key.isdigit() for key in properties):
            first = next(iter(properties.values()))
            if "keep" in first.get("enum", []):  # pruning: keep every result
                return dict.fromkeys(properties, "keep")
            new, existing = link_candidates(text)  # links between memories
            return {key: link_for(new, existing.get(key, "")) for key in properties}
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

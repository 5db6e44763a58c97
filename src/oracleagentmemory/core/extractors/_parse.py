"""Reading model answers defensively: JSON repair, then validation item by item.

A model answer only ever becomes memory *content*: ids, scopes, metadata, statuses and any
other field a model adds are ignored, so nothing in a conversation can make extraction
overwrite, delete or re-scope records. What cannot be used is dropped with a log line.
"""

from __future__ import annotations

import html
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Final

from oracleagentmemory.core.extractors._prompts import (
    MAX_MEMORIES_PER_CALL,
    MAX_MEMORY_CHARS,
    MAX_SUMMARY_CHARS,
    MAX_TOPIC_CHARS,
    MAX_TOPICS,
)

log = logging.getLogger("oracleagentmemory.extraction")

_FENCE: Final = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA: Final = re.compile(r",\s*([}\]])")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACES: Final = re.compile(r"[ \t\r\f\v]+")

TYPE_SYNONYMS: Final[dict[str, str]] = {
    "memory": "memory",
    "memories": "memory",
    "note": "memory",
    "other": "memory",
    "event": "fact",
    "fact": "fact",
    "facts": "fact",
    "plan": "fact",
    "preference": "preference",
    "preferences": "preference",
    "pref": "preference",
    "like": "preference",
    "dislike": "preference",
    "habit": "preference",
    "guideline": "guideline",
    "guidelines": "guideline",
    "instruction": "guideline",
    "rule": "guideline",
}
"""Type names models use, mapped to the four memory types (case-insensitive)."""


class UnusableAnswer(ValueError):
    """A model answer that is not JSON even after repair."""


def _close_truncated(text: str) -> str | None:
    """Cut a truncated JSON text back to its last complete object and close what is open.

    An answer cut off at the token cap keeps its complete memories; the half-written one
    is dropped rather than stored half-said.
    """
    stack: list[str] = []
    in_string = escaped = False
    best: tuple[int, list[str]] | None = None
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return None
            stack.pop()
            if ch == "}" and stack:
                best = (i, list(stack))
    if best is None:
        return None
    end, open_stack = best
    return text[: end + 1] + "".join(reversed(open_stack))


def parse_json(text: str) -> Any:
    """Decode a model's JSON answer, repairing the usual damage.

    Tried in order: the text as is; the content of a Markdown code fence; the first JSON
    value embedded in surrounding prose; trailing commas removed; a truncated answer cut
    back to its last complete object. Raises :class:`UnusableAnswer` when all fail.
    """
    if not isinstance(text, str):
        raise UnusableAnswer(f"the answer is a {type(text).__name__}, not text")
    candidates = [text.strip().lstrip("\ufeff")]
    fence = _FENCE.search(text)
    if fence:
        candidates.append(fence.group(1).strip())
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (i for i, ch in enumerate(candidate) if ch in "{["):
            for variant in (candidate[start:], _TRAILING_COMMA.sub(r"\1", candidate[start:])):
                try:
                    return decoder.raw_decode(variant)[0]
                except ValueError:
                    pass
            closed = _close_truncated(_TRAILING_COMMA.sub(r"\1", candidate[start:]))
            if closed is not None:
                try:
                    value = json.loads(closed)
                except ValueError:
                    value = None
                if value is not None:
                    log.warning("model answer was truncated; kept its complete items only")
                    return value
            break  # only the first JSON-looking start is worth repairing
    snippet = text.strip()[:120]
    raise UnusableAnswer(f"the answer is not valid JSON (it starts {snippet!r})")


def clean_text(value: str) -> str:
    """XML character references decoded (models copy ``&amp;`` from the escaped prompt),
    control characters removed, runs of spaces collapsed, ends stripped."""
    value = _CONTROL.sub("", html.unescape(value))
    lines = [_SPACES.sub(" ", line).strip() for line in value.split("\n")]
    return "\n".join(line for line in lines if line).strip()


@dataclass
class ParsedMemory:
    """One usable memory of an answer: text, type and the new-message numbers it cites."""

    content: str
    memory_type: str
    sources: tuple[int, ...]
    links: tuple[tuple[Any, Any], ...] = ()
    """(target label, relation) pairs as the model wrote them (DURING_EXTRACTION)."""
    images: tuple[Any, ...] = ()
    """Image labels the memory cites, as the model wrote them (MEMORY image context)."""


@dataclass
class ParsedAnswer:
    """What could be used from one extraction or summary answer."""

    memories: list[ParsedMemory] = field(default_factory=list)
    summary: str | None = None
    topics: tuple[str, ...] | None = None
    problems: list[str] = field(default_factory=list)


def _memory_list(data: Any, problems: list[str]) -> list[Any]:
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        problems.append(f"the answer is a {type(data).__name__}, not an object")
        return []
    if "memories" in data:
        items = data["memories"]
    else:
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1 and not {"summary", "topics"} >= set(data):
            problems.append("no 'memories' key; used the answer's only list")
            items = lists[0]
        else:
            return []
    if items is None:
        return []
    if isinstance(items, dict | str):
        problems.append("'memories' is not a list; read it as one memory")
        return [items]
    if not isinstance(items, list):
        problems.append(f"'memories' is a {type(items).__name__}; ignored")
        return []
    return items


def _item_text(item: Any) -> Any:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        for key in ("content", "text", "memory", "fact", "statement"):
            if key in item:
                return item[key]
    return None


def _item_type(item: Any, problems: list[str]) -> str:
    raw = None
    if isinstance(item, dict):
        for key in ("type", "memory_type", "kind", "category"):
            if key in item:
                raw = item[key]
                break
    if raw is None:
        return "memory"
    name = str(raw).strip().lower() if isinstance(raw, str | int | float) else ""
    kind = TYPE_SYNONYMS.get(name)
    if kind is None:
        problems.append(f"unknown memory type {str(raw)[:40]!r} stored as 'memory'")
        return "memory"
    return kind


def _item_sources(item: Any, new_count: int, problems: list[str]) -> tuple[int, ...]:
    raw = item.get("sources", item.get("source")) if isinstance(item, dict) else None
    if raw is None:
        return ()
    values = raw if isinstance(raw, list) else [raw]
    out: list[int] = []
    for value in values:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str):
            digits = re.fullmatch(r"\s*(?:#|n|m|msg|message)?\s*(\d+)\s*", value, re.IGNORECASE)
            number = int(digits.group(1)) if digits else None
        if number is not None and 1 <= number <= new_count:
            out.append(number)
        else:
            problems.append(f"source {str(value)[:20]!r} is not a new message; ignored")
    return tuple(dict.fromkeys(out))


def _item_links(item: Any, problems: list[str]) -> tuple[tuple[Any, Any], ...]:
    raw = item.get("links") if isinstance(item, dict) else None
    if raw is None:
        return ()
    values = raw if isinstance(raw, list) else [raw]
    out: list[tuple[Any, Any]] = []
    for value in values:
        if isinstance(value, dict):
            target = value.get("target", value.get("memory", value.get("id")))
            relation = value.get("relation", value.get("type"))
            if isinstance(target, str | int) and isinstance(relation, str | type(None)):
                out.append((target, relation))
                continue
        problems.append(f"a link {str(value)[:40]!r} was dropped")
    return tuple(out)


def read_memories(data: Any, new_count: int) -> ParsedAnswer:
    """The usable memories (and summary, topics) of a decoded extraction answer.

    Strings become memory text; numbers are read as text; anything else is dropped. Empty
    texts and texts longer than ``MAX_MEMORY_CHARS`` are dropped; unknown types become
    ``"memory"``; sources that are not new-message numbers are ignored. At most
    ``MAX_MEMORIES_PER_CALL`` memories are kept; repeats within the answer are merged.
    """
    answer = ParsedAnswer()
    problems = answer.problems
    items = _memory_list(data, problems)
    if len(items) > MAX_MEMORIES_PER_CALL:
        problems.append(f"{len(items)} memories; kept the first {MAX_MEMORIES_PER_CALL}")
        items = items[:MAX_MEMORIES_PER_CALL]
    seen: dict[str, ParsedMemory] = {}
    for item in items:
        text = _item_text(item)
        if isinstance(text, int | float) and not isinstance(text, bool):
            text = str(text)
        if not isinstance(text, str):
            problems.append(f"a memory of type {type(text).__name__} was dropped")
            continue
        text = clean_text(text)
        if not text:
            problems.append("an empty memory was dropped")
            continue
        if len(text) > MAX_MEMORY_CHARS:
            problems.append(f"a memory of {len(text)} characters was dropped (too long)")
            continue
        kind = _item_type(item, problems)
        sources = _item_sources(item, new_count, problems)
        links = _item_links(item, problems)
        raw_images = item.get("images") if isinstance(item, dict) else None
        images = tuple(
            i for i in (raw_images if isinstance(raw_images, list) else []) if isinstance(i, str)
        )
        key = text.casefold()
        if key in seen:
            merged = seen[key]
            merged.sources = tuple(dict.fromkeys(merged.sources + sources))
            merged.links = tuple(dict.fromkeys(merged.links + links))
            merged.images = tuple(dict.fromkeys(merged.images + images))
            continue
        seen[key] = ParsedMemory(text, kind, sources, links, images)
    answer.memories = list(seen.values())
    if isinstance(data, dict):
        read_summary(data, answer)
    return answer


def read_summary(data: Any, answer: ParsedAnswer | None = None) -> ParsedAnswer:
    """The summary and topics of a decoded answer (None where they are missing or unusable)."""
    answer = answer or ParsedAnswer()
    if not isinstance(data, dict):
        answer.problems.append(f"the answer is a {type(data).__name__}, not an object")
        return answer
    summary = data.get("summary")
    if isinstance(summary, str):
        text = clean_text(summary)
        if len(text) > MAX_SUMMARY_CHARS:
            answer.problems.append(f"summary cut to {MAX_SUMMARY_CHARS} characters")
            text = text[:MAX_SUMMARY_CHARS]
        answer.summary = text
    elif summary is not None:
        answer.problems.append(f"summary is a {type(summary).__name__}; ignored")
    topics = data.get("topics")
    if isinstance(topics, str):
        topics = topics.split(",")
    if isinstance(topics, list):
        cleaned = [clean_text(t)[:MAX_TOPIC_CHARS] for t in topics if isinstance(t, str)]
        answer.topics = tuple(dict.fromkeys(t for t in cleaned if t))[:MAX_TOPICS]
    return answer

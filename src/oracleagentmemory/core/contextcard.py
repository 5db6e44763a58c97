"""The concrete context card: a thread's state rendered as XML-like text for prompts.

Layout (a card with no summary, topics, results or messages renders as ``''``)::

    <context_card>
      <topics>
        <topic>travel</topic>
      </topics>
      <summary>
        The user plans a trip to Rome.
      </summary>
      <relevant_information>
        <fact>
          <record_id>mem-1</record_id>
          <status>valid</status>
          <content>Likes pizza.</content>
        </fact>
      </relevant_information>
      <recent_messages>
        <message>
          <timestamp>2026-01-02T10:00:00Z</timestamp>
          <role>user</role>
          <content>Book the hotel.</content>
        </message>
      </recent_messages>
    </context_card>

``topics``, ``summary`` and ``relevant_information`` are always present (possibly empty);
``recent_messages`` only when messages were given. Every value is escaped, so a stored text
such as ``</context_card>`` stays text. A recent message's text has its whitespace collapsed
to single spaces; messages with no text are left out; a missing timestamp reads ``-``.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, Final

from oracleagentmemory.apis.contextcard import ContextCard
from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.records import MessageRecord as MessageRecord
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.thread import message_text
from oracleagentmemory.core.searchresult import element, escape_xml_text, indent

DEFAULT_MESSAGE_FORMAT: Final = (
    "<message>\n"
    "  <timestamp>{timestamp}</timestamp>\n"
    "  <role>{role}</role>\n"
    "  <content>{content}</content>\n"
    "</message>"
)
"""Template of one recent message; fields: ``{timestamp}``, ``{role}``, ``{content}``."""

MESSAGE_FORMAT_FIELDS: Final = frozenset({"timestamp", "role", "content"})
_SECTION: Final = "  "
_ITEM: Final = "    "


def _compile_message_format(template: str) -> list[tuple[str, str | None]]:
    """``template`` as (literal, field) pairs; ValueError for unknown fields or format specs."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"message_format is not a valid format string: {exc}") from exc
    segments: list[tuple[str, str | None]] = []
    for literal, field, spec, conversion in parsed:
        if field is not None and field not in MESSAGE_FORMAT_FIELDS:
            allowed = ", ".join(f"{{{name}}}" for name in sorted(MESSAGE_FORMAT_FIELDS))
            raise ValueError(f"message_format uses unsupported field {{{field}}}; use {allowed}")
        if spec or conversion:
            raise ValueError("message_format does not support format specifications or conversions")
        segments.append((literal, field))
    return segments


def _render_message(segments: Sequence[tuple[str, str | None]], message: Message) -> str:
    """One recent message through the template; ``''`` when it has no text."""
    content = " ".join(message_text(message.content).split())
    if not content:
        return ""
    if not message.role.strip():
        return escape_xml_text(content)
    values = {"timestamp": message.timestamp or "-", "role": message.role, "content": content}
    return "".join(
        literal + ("" if field is None else escape_xml_text(values[field]))
        for literal, field in segments
    )


def _sequence(name: str, value: Any, item_type: type, item_name: str) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of {item_name} or None")
    for item in value:
        if not isinstance(item, item_type):
            raise TypeError(f"{name} must contain only {item_name}, got {type(item).__name__}")
    return tuple(value)


class OracleContextCard(ContextCard):
    """Context card returned by an Oracle thread (see the module docstring for the layout).

    Relevant results are embedded through their ``formatted_content``; a result that renders
    as ``''`` (an invalid record hidden by its format config) is shown by its content alone.
    """

    def __init__(
        self,
        summary: str,
        topics: Sequence[str] | None = None,
        relevant_results: Sequence[SearchResult] | None = None,
        recent_messages: Sequence[Message] | None = None,
        message_format: str = DEFAULT_MESSAGE_FORMAT,
    ) -> None:
        if summary is None:
            summary = ""
        if not isinstance(summary, str):
            raise TypeError(f"summary must be a str, got {type(summary).__name__}")
        if not isinstance(message_format, str):
            raise TypeError(f"message_format must be a str, got {type(message_format).__name__}")
        self._summary = summary
        self._topics: tuple[str, ...] = _sequence("topics", topics, str, "str")
        self._results: tuple[SearchResult, ...] = _sequence(
            "relevant_results", relevant_results, SearchResult, "SearchResult"
        )
        self._messages: tuple[Message, ...] = _sequence(
            "recent_messages", recent_messages, Message, "Message"
        )
        self._message_format = message_format
        self._segments = _compile_message_format(message_format)

    @property
    def content(self) -> str:
        """The rendered XML-like card text, ready for prompt assembly (``''`` when empty)."""
        return self._render()

    @property
    def formatted_content(self) -> str:
        """The rendered card text used in prompt flows (identical to :attr:`content`)."""
        return self._render()

    @property
    def summary(self) -> str:
        """The summary text as given."""
        return self._summary

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics as given."""
        return self._topics

    @property
    def relevant_results(self) -> tuple[SearchResult, ...]:
        """The retrieved durable records included in the card."""
        return self._results

    @property
    def recent_messages(self) -> tuple[Message, ...]:
        """The raw recent messages rendered in the card."""
        return self._messages

    @property
    def message_format(self) -> str:
        """The template used to render each recent message."""
        return self._message_format

    def _render(self) -> str:
        if not (self._summary or self._topics or self._results or self._messages):
            return ""
        lines = ["<context_card>"]
        lines += _section("topics", [element("topic", t) for t in self._topics if t.strip()])
        summary = self._summary.strip()
        lines += _section("summary", [escape_xml_text(summary)] if summary else [])
        lines += _section("relevant_information", [_result_text(r) for r in self._results])
        if self._messages:
            rendered = (_render_message(self._segments, m) for m in self._messages)
            lines += _section("recent_messages", [text for text in rendered if text])
        lines.append("</context_card>")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.content


def _section(tag: str, items: list[str]) -> list[str]:
    if not items:
        return [f"{_SECTION}<{tag}></{tag}>"]
    return [f"{_SECTION}<{tag}>", *(indent(item, _ITEM) for item in items), f"{_SECTION}</{tag}>"]


def _result_text(result: SearchResult) -> str:
    text = result.formatted_content
    if text:
        return text
    tag = result.record.record_type
    return "\n".join([f"<{tag}>", f"  {element('content', result.content)}", f"</{tag}>"])

"""The concrete context card: a thread's state rendered as prompt-safe, XML-like text.

Layout (empty sections are left out; a card with nothing in it renders as ``''``)::

    <context_card>
      <topics>
        <topic>travel</topic>
      </topics>
      <summary>The user plans a trip to Rome.</summary>
      <relevant_information>
        <memory id="mem-1" type="fact" timestamp="2026-01-01T00:00:00Z">Likes pizza.</memory>
      </relevant_information>
      <recent_messages>
        <message>
          <timestamp>2026-01-02T10:00:00Z</timestamp>
          <role>user</role>
          <content>Book the hotel.</content>
        </message>
      </recent_messages>
    </context_card>

Section names and order follow the reference SDK's cards. Every value is escaped, so a stored
text such as ``</context_card>`` stays text; values sit inline between their tags, so the
parsed text of an element is the value itself (summary and topics are stripped).
"""

from __future__ import annotations

import string
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from oracleagentmemory.apis.contextcard import ContextCard
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.thread import Message, message_text
from oracleagentmemory.core.searchresult import escape_xml_attr, escape_xml_text, indent_markup

DEFAULT_MESSAGE_FORMAT: Final = (
    "<message>\n"
    "  <timestamp>{timestamp}</timestamp>\n"
    "  <role>{role}</role>\n"
    "  <content>{content}</content>\n"
    "</message>"
)
"""Template of one recent message; fields: ``{id}``, ``{role}``, ``{content}``, ``{timestamp}``."""

MESSAGE_FORMAT_FIELDS: Final = frozenset({"id", "role", "content", "timestamp"})
_SECTION_INDENT: Final = "  "
_ITEM_INDENT: Final = "    "


@dataclass(frozen=True)
class _Segment:
    """Literal text followed by at most one field, and whether that field sits in an attribute."""

    literal: str
    field: str | None
    spec: str
    conversion: str | None
    in_attribute: bool


def _compile_message_format(template: str) -> list[_Segment]:
    """Parse ``template`` and find, for each field, whether it lands in text or in an attribute.

    Text fields are escaped for text, attribute fields also get their quotes escaped; a field
    inside a tag but outside quotes (``<{role}>``) could never be made safe and is refused.
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"message_format is not a valid format string: {exc}") from exc
    in_tag = False
    quote: str | None = None
    segments: list[_Segment] = []
    for literal, field, spec, conversion in parsed:
        for char in literal:
            if not in_tag:
                in_tag = char == "<"
            elif quote is not None:
                quote = None if char == quote else quote
            elif char in "\"'":
                quote = char
            elif char == ">":
                in_tag = False
        if field is None:
            segments.append(_Segment(literal, None, "", None, False))
            continue
        if field not in MESSAGE_FORMAT_FIELDS:
            allowed = ", ".join(f"{{{name}}}" for name in sorted(MESSAGE_FORMAT_FIELDS))
            raise ValueError(f"message_format uses unknown field {{{field}}}; use {allowed}")
        if in_tag and quote is None:
            raise ValueError(
                f"message_format puts {{{field}}} inside a tag but outside a quoted attribute "
                "value, where no escaping can make it safe"
            )
        if spec and "{" in spec:
            raise ValueError("message_format must not nest fields in a format spec")
        segments.append(_Segment(literal, field, spec or "", conversion, in_tag))
    return segments


def _convert(value: str, conversion: str | None) -> str:
    if conversion == "r":
        return repr(value)
    if conversion == "a":
        return ascii(value)
    return value


def _render_message(segments: Sequence[_Segment], message: Message) -> str:
    values = {
        "id": message.id or "",
        "role": message.role,
        "content": message_text(message.content, image_placeholders=True),
        "timestamp": message.timestamp or "",
    }
    out: list[str] = []
    for segment in segments:
        out.append(segment.literal)
        if segment.field is None:
            continue
        value = format(_convert(values[segment.field], segment.conversion), segment.spec)
        out.append(escape_xml_attr(value) if segment.in_attribute else escape_xml_text(value))
    return "".join(out)


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

    Relevant results are embedded through their ``formatted_content``, which the
    ``SearchResult`` contract requires to be XML-safe; results rendering as blank are left out.
    """

    def __init__(
        self,
        summary: str,
        topics: Sequence[str] | None = None,
        relevant_results: Sequence[SearchResult] | None = None,
        recent_messages: Sequence[Message] | None = None,
        message_format: str = DEFAULT_MESSAGE_FORMAT,
    ) -> None:
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
        # Indenting the template (not the rendered text) keeps multi-line values exact.
        self._segments = _compile_message_format(textwrap.indent(message_format, _ITEM_INDENT))
        try:
            _render_message(self._segments, Message(role="", content=""))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"message_format cannot be rendered: {exc}") from exc
        self._content = self._render()

    @property
    def content(self) -> str:
        """The rendered XML-like card text, ready for prompt assembly (``''`` when empty)."""
        return self._content

    @property
    def formatted_content(self) -> str:
        """The rendered card text used in prompt flows (identical to :attr:`content`)."""
        return self._content

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
        sections: list[str] = []
        topics = [topic.strip() for topic in self._topics if topic.strip()]
        if topics:
            items = [f"{_ITEM_INDENT}<topic>{escape_xml_text(topic)}</topic>" for topic in topics]
            sections += [f"{_SECTION_INDENT}<topics>", *items, f"{_SECTION_INDENT}</topics>"]
        summary = self._summary.strip()
        if summary:
            sections.append(f"{_SECTION_INDENT}<summary>{escape_xml_text(summary)}</summary>")
        rendered = [result.formatted_content for result in self._results]
        results = [indent_markup(text, _ITEM_INDENT) for text in rendered if text.strip()]
        if results:
            sections += [
                f"{_SECTION_INDENT}<relevant_information>",
                *results,
                f"{_SECTION_INDENT}</relevant_information>",
            ]
        if self._messages:
            messages = [_render_message(self._segments, message) for message in self._messages]
            sections += [
                f"{_SECTION_INDENT}<recent_messages>",
                *messages,
                f"{_SECTION_INDENT}</recent_messages>",
            ]
        if not sections:
            return ""
        return "\n".join(["<context_card>", *sections, "</context_card>"])

    def __repr__(self) -> str:
        return (
            f"OracleContextCard(summary={self._summary!r}, topics={list(self._topics)!r}, "
            f"relevant_results=<{len(self._results)}>, "
            f"recent_messages=<{len(self._messages)}>)"
        )

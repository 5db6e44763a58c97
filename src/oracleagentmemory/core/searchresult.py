"""The concrete search result and its rendering for prompts.

A result renders as one element named after its record type, with one child element per
visible field, in this order: ``record_id``, ``thread_id``, ``estimated_relevance`` (1 -
distance), ``timestamp``, ``role`` (messages), ``user_id``, ``agent_id``, ``status``, one
element per metadata key, ``content``, then ``linked_records``. Element text is XML-escaped
(``&``, ``<``, ``>``), so stored text cannot open or close an element of the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.message import TextContent as TextContent
from oracleagentmemory.apis.records import (
    MessageRecord as MessageRecord,
    Record,
    RecordStatus,
    ScopedRecord as ScopedRecord,
)
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.apis.searchresult import SearchResult, SearchResultFormatConfig
from oracleagentmemory.apis.thread import message_text

AGENT_MEMORY_METADATA_KEY: Final = "$agent_memory"
"""Metadata key reserved for the SDK's own bookkeeping; never rendered into prompts."""

_INDENT: Final = "  "
_NOT_TAG_CHAR: Final = re.compile(r"[^A-Za-z0-9_.\-]")


def escape_xml_text(value: str) -> str:
    """Escape ``&``, ``<`` and ``>`` so ``value`` can sit between tags."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def element(tag: str, text: str) -> str:
    """``<tag>text</tag>`` with ``text`` escaped."""
    return f"<{tag}>{escape_xml_text(text)}</{tag}>"


def indent(text: str, prefix: str) -> str:
    """Every line of ``text`` prefixed with ``prefix``."""
    return "\n".join(prefix + line for line in text.split("\n"))


def metadata_tag(key: str) -> str:
    """The element name a metadata key renders as (ASCII letters, digits, ``_.-`` kept)."""
    return _NOT_TAG_CHAR.sub("", key)


@dataclass(frozen=True, slots=True)
class OracleSearchResultFormatConfig(SearchResultFormatConfig):
    """Which fields of a search result are rendered.

    Omitted switches take their defaults: timestamp, role (messages) and status are shown;
    thread id, user id, agent id, the estimated relevance (1 - distance) and metadata are not.
    """

    show_thread_id: bool | NotSet = NOT_SET_MARKER
    show_distance: bool | NotSet = NOT_SET_MARKER
    show_timestamp: bool | NotSet = NOT_SET_MARKER
    show_role: bool | NotSet = NOT_SET_MARKER
    show_user_id: bool | NotSet = NOT_SET_MARKER
    show_agent_id: bool | NotSet = NOT_SET_MARKER
    show_status: bool | NotSet = NOT_SET_MARKER
    show_metadata: bool | NotSet = NOT_SET_MARKER

    def __post_init__(self) -> None:
        SearchResultFormatConfig.__post_init__(self)
        for item in fields(self):
            value = getattr(self, item.name)
            shown = item.name.startswith("show_") and value is not NOT_SET_MARKER
            if shown and not isinstance(value, bool):
                raise TypeError(f"{item.name} must be a bool, got {type(value).__name__}")


_SHOW_DEFAULTS: Final = {
    "show_thread_id": False,
    "show_distance": False,
    "show_timestamp": True,
    "show_role": True,
    "show_user_id": False,
    "show_agent_id": False,
    "show_status": True,
    "show_metadata": False,
}


def _shows(config: SearchResultFormatConfig, name: str) -> bool:
    value = getattr(config, name, NOT_SET_MARKER)
    return _SHOW_DEFAULTS[name] if value is NOT_SET_MARKER else bool(value)


class OracleSearchResult(SearchResult):
    """Search result returned by an Oracle thread or client.

    ``linked_results`` are the results reached through relations (``num_hops``); they are
    given explicitly (the record's own ``linked_results`` are not wrapped). ``id`` is an
    optional identifier of the result itself; ``record.id`` identifies the record.
    """

    def __init__(
        self,
        distance: float,
        record: Record,
        *,
        id: str | None = None,
        linked_results: list[tuple[RecordRelation, SearchResult]] | None = None,
        format_config: SearchResultFormatConfig = SearchResultFormatConfig(),  # noqa: B008
    ) -> None:
        if isinstance(distance, bool) or not isinstance(distance, int | float):
            raise TypeError(f"distance must be a float, got {type(distance).__name__}")
        if not isinstance(record, Record):
            raise TypeError(f"record must be a Record, got {type(record).__name__}")
        if id is not None and not isinstance(id, str):
            raise TypeError(f"id must be a str or None, got {type(id).__name__}")
        if not isinstance(format_config, SearchResultFormatConfig):
            raise TypeError("format_config must be a SearchResultFormatConfig")
        self.distance = float(distance)
        self._record = record
        self._id = id
        self._format_config = format_config
        self._linked_results = [] if linked_results is None else _check_linked(linked_results)
        self._source_message_ids: tuple[str, ...] = ()
        self._source_image_ids: tuple[str, ...] = ()

    @property
    def record(self) -> Record:
        """The matched record (a ``ScopedRecord`` subclass for scoped types)."""
        return self._record

    @property
    def id(self) -> str | None:
        """Identifier given to the result (``None`` unless given; see ``record.id``)."""
        return self._id

    @property
    def content(self) -> str:
        """Main text of the record: ``''`` when it has none; text parts joined by newlines."""
        value = self._record.content
        if isinstance(value, str):
            return value
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            return message_text(value)
        return ""

    @property
    def metadata(self) -> dict[str, Any] | None:
        """Record metadata, when available."""
        return self._record.metadata

    @property
    def timestamp(self) -> str | None:
        """Record timestamp, when available."""
        return self._record.timestamp

    @property
    def status(self) -> RecordStatus | None:
        """Lifecycle status of the record (INVALID means kept for history only)."""
        return self._record.status

    @property
    def source_message_ids(self) -> tuple[str, ...]:
        """Provenance of an extracted memory: the ids of the messages it was extracted from
        (empty for messages, profiles and memories added directly). Beyond the reference."""
        return self._source_message_ids

    @property
    def source_image_ids(self) -> tuple[str, ...]:
        """Provenance of a memory extracted about images (``MemoryExtractionImageContext.
        MEMORY``): the ids of those images. Beyond the reference."""
        return self._source_image_ids

    @property
    def linked_results(self) -> list[tuple[RecordRelation, SearchResult]]:
        """Results reached through relations, each with the relation that links it."""
        return list(self._linked_results)

    @property
    def formatted_content(self) -> str:
        """The rendering with this result's own format configuration."""
        return self.format_content()

    def format_content(
        self, format_config: SearchResultFormatConfig | NotSet = NOT_SET_MARKER
    ) -> str:
        """Render the result as XML for prompts (see the module docstring).

        ``''`` for an invalid record when ``include_invalid_results`` is False.
        """
        config = self._format_config if format_config is NOT_SET_MARKER else format_config
        if not isinstance(config, SearchResultFormatConfig):
            raise TypeError("format_config must be a SearchResultFormatConfig")
        if self._record.status is RecordStatus.INVALID and not config.shows_invalid_results:
            return ""
        return self._render(config)

    def _render(self, config: SearchResultFormatConfig) -> str:
        record = self._record
        invalid = record.status is RecordStatus.INVALID
        children = [element("record_id", record.id)]
        children += _scope_lines(config, record, (("show_thread_id", "thread_id"),))
        if _shows(config, "show_distance"):
            children.append(element("estimated_relevance", str(1.0 - self.distance)))
        if _shows(config, "show_timestamp") and record.timestamp is not None:
            children.append(element("timestamp", record.timestamp))
        role = getattr(record, "role", None)
        if _shows(config, "show_role") and record.record_type == "message" and role:
            children.append(element("role", role))
        children += _scope_lines(
            config, record, (("show_user_id", "user_id"), ("show_agent_id", "agent_id"))
        )
        if _shows(config, "show_status"):
            children.append(element("status", record.status.value))
        if _shows(config, "show_metadata") and record.metadata:
            for key, value in record.metadata.items():
                tag = metadata_tag(str(key))
                if key != AGENT_MEMORY_METADATA_KEY and tag:
                    children.append(element(tag, str(value)))
        text = self.content
        if text and not (invalid and not config.shows_invalid_results):
            children.append(element("content", text))
        # A value's continuation lines stay as they are; nested renderings are indented.
        lines = [f"<{record.record_type}>", *(_INDENT + child for child in children)]
        links = self._link_lines(config)
        if links:
            lines += [f"{_INDENT}<linked_records>", *links, f"{_INDENT}</linked_records>"]
        lines.append(f"</{record.record_type}>")
        return "\n".join(lines)

    def _link_lines(self, config: SearchResultFormatConfig) -> list[str]:
        lines: list[str] = []
        for relation, linked in self._linked_results:
            if isinstance(linked, OracleSearchResult):
                body = linked._render(config)
            else:
                body = linked.format_content(config)
            if not body:
                continue
            outward = (relation.source_record_type, relation.source_record_id) == (
                self._record.record_type,
                self._record.id,
            )
            name = relation.relation_type if outward else relation.opposite_relation_type
            inner = _INDENT * 3
            lines += [
                f"{_INDENT * 2}<linked_record>",
                inner + element("relation_type", name),
                indent(body, inner),
                f"{_INDENT * 2}</linked_record>",
            ]
        return lines

    def __repr__(self) -> str:
        return (
            f"OracleSearchResult(distance={self.distance!r}, record_id={self._record.id!r}, "
            f"record_type={self._record.record_type!r}, content={self.content!r})"
        )


def _scope_lines(
    config: SearchResultFormatConfig, record: Record, switches: tuple[tuple[str, str], ...]
) -> list[str]:
    lines = []
    for switch, name in switches:
        value = getattr(record, name, None)
        if _shows(config, switch) and value is not None:
            lines.append(element(name, value))
    return lines


def _check_linked(value: Any) -> list[tuple[RecordRelation, SearchResult]]:
    if not isinstance(value, list | tuple):
        raise TypeError("linked_results must be a list of (RecordRelation, SearchResult) pairs")
    checked: list[tuple[RecordRelation, SearchResult]] = []
    for item in value:
        if (
            not isinstance(item, tuple)
            or len(item) != 2
            or not isinstance(item[0], RecordRelation)
            or not isinstance(item[1], SearchResult)
        ):
            raise TypeError("linked_results must be a list of (RecordRelation, SearchResult) pairs")
        checked.append((item[0], item[1]))
    return checked

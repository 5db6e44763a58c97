"""The concrete search result, and the XML escaping every prompt rendering goes through.

Rendering rule: user-supplied text (record content, ids, roles, metadata, summaries, ...) is
always escaped, so no stored text can open or close an element of the surrounding prompt
structure. Markup lines are indented; value text never is, so multi-line values keep their
exact text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.records import Record, RecordStatus
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.apis.searchresult import SearchResult, SearchResultFormatConfig
from oracleagentmemory.apis.thread import message_text

# Characters XML 1.0 cannot carry at all, even escaped: C0 controls other than TAB/LF/CR,
# lone surrogates and the two non-characters U+FFFE/U+FFFF.
_NOT_XML_CHAR: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_INDENT: Final = "  "


def escape_xml_text(value: str) -> str:
    """Escape ``value`` for use between tags.

    ``&``, ``<`` and ``>`` become entities; CR becomes ``&#13;`` (parsers would fold a raw CR
    into LF); characters XML cannot represent become U+FFFD. When the value's last line is
    empty or only spaces, the LF before it becomes ``&#10;``: the tag written after a value
    then never starts a line, which is what lets :func:`indent_markup` tell markup lines from
    value lines.
    """
    value = _NOT_XML_CHAR.sub("\ufffd", value)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = value.replace("\r", "&#13;")
    head, newline, last_line = value.rpartition("\n")
    if newline and not last_line.strip(" "):
        return f"{head}&#10;{last_line}"
    return value


def escape_xml_attr(value: str) -> str:
    """Escape ``value`` for use inside a quoted attribute (either quote style).

    On top of :func:`escape_xml_text`, quotes become entities and TAB/LF become character
    references, since parsers normalize raw whitespace in attributes to spaces.
    """
    value = escape_xml_text(value).replace('"', "&quot;").replace("'", "&apos;")
    return value.replace("\n", "&#10;").replace("\t", "&#9;")


def indent_markup(text: str, prefix: str) -> str:
    """Indent the markup lines of an escaped rendering by ``prefix``.

    The first line and every line whose first non-blank character is ``<`` get the prefix.
    Escaped values never contain a raw ``<`` and never end a line, so such a line is markup,
    while the continuation lines of a multi-line value are left exactly as they are.
    """
    lines = text.split("\n")
    return "\n".join(
        prefix + line if index == 0 or line.lstrip(" ").startswith("<") else line
        for index, line in enumerate(lines)
    )


def _attr(name: str, value: str) -> str:
    return f' {name}="{escape_xml_attr(value)}"'


def _metadata_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class OracleSearchResult(SearchResult):
    """Search result returned by an Oracle thread or client.

    ``linked_results`` are the records reached through relations (``num_hops``). When it is
    omitted, the record's own ``linked_results`` are wrapped as results that inherit this
    result's distance; pass ``[]`` to drop them.
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
        self._distance = float(distance)
        self._record = record
        self._id = record.id if id is None else id
        self._format_config = format_config
        self._source_message_ids: tuple[str, ...] = ()
        if linked_results is None:
            self._linked = _wrap_linked(record, self._distance, format_config, {record.id})
        else:
            self._linked = _check_linked(linked_results)

    @property
    def distance(self) -> float:
        """Distance from the query (smaller is better)."""
        return self._distance

    @property
    def record(self) -> Record:
        """The matched record (a ``ScopedRecord`` subclass for scoped types)."""
        return self._record

    @property
    def id(self) -> str | None:
        """Identifier of the matched record (the record's id unless given)."""
        return self._id

    @property
    def content(self) -> str:
        """Main text of the record: ``''`` for no content, text parts joined for messages."""
        value = self._record.content
        if value is None or isinstance(value, str):
            return value or ""
        if isinstance(value, bytes | bytearray):
            return ""  # binary payloads have no text
        if isinstance(value, dict):
            return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if isinstance(value, Sequence):
            return message_text(value)
        return str(value)

    @property
    def metadata(self) -> dict[str, Any] | None:
        """Record metadata, when available."""
        return self._record.metadata

    @property
    def timestamp(self) -> str | None:
        """Record timestamp, when available."""
        return self._record.timestamp

    @property
    def status(self) -> RecordStatus:
        """Lifecycle status of the record (INVALID means kept for history only)."""
        return RecordStatus(self._record.status)

    @property
    def source_message_ids(self) -> tuple[str, ...]:
        """Provenance of an extracted memory: the ids of the messages it was extracted from
        (empty for messages, profiles and memories added directly). Beyond the reference."""
        return self._source_message_ids

    @property
    def linked_results(self) -> list[tuple[RecordRelation, SearchResult]]:
        """Records reached through relations, each with the relation that links it."""
        return list(self._linked)

    @property
    def formatted_content(self) -> str:
        """XML-safe rendering with this result's format configuration."""
        return self.format_content()

    def format_content(
        self, format_config: SearchResultFormatConfig | NotSet = NOT_SET_MARKER
    ) -> str:
        """Render the result as one XML element; ``''`` when the configuration hides it.

        Shape: ``<memory id=".." type="fact" timestamp="..">text</memory>`` (``<message>``
        with a ``role`` attribute for messages; ``status="invalid"`` only for invalid
        records). When metadata or linked results are shown, the text moves into a
        ``<content>`` child next to ``<metadata>`` and ``<links>``.
        """
        config = self._format_config if format_config is NOT_SET_MARKER else format_config
        if not isinstance(config, SearchResultFormatConfig):
            raise TypeError("format_config must be a SearchResultFormatConfig")
        return self._render(config, frozenset())

    def _render(self, config: SearchResultFormatConfig, seen: frozenset[str | None]) -> str:
        record = self._record
        status = self.status
        if status is RecordStatus.INVALID and not config.shows_invalid_results:
            return ""
        is_message = record.record_type == "message"
        tag = "message" if is_message else "memory"
        attrs = ""
        if config.include_id and self._id is not None:
            attrs += _attr("id", self._id)
        if config.include_record_type:
            attrs += _attr("type", record.record_type)
        role = getattr(record, "role", None)
        if config.include_role and is_message and isinstance(role, str):
            attrs += _attr("role", role)
        if config.include_timestamp and record.timestamp is not None:
            attrs += _attr("timestamp", record.timestamp)
        if config.include_status and status is not RecordStatus.VALID:
            attrs += _attr("status", status.value)
        if config.include_distance and math.isfinite(self._distance):
            attrs += _attr("distance", format(self._distance, ".6g"))
        text = escape_xml_text(self._text_for_prompt())
        children = self._metadata_lines(config) + self._link_lines(config, seen | {self._id})
        if not children:
            return f"<{tag}{attrs}>{text}</{tag}>"
        lines = [f"<{tag}{attrs}>", f"{_INDENT}<content>{text}</content>"]
        lines += [indent_markup(child, _INDENT) for child in children]
        lines.append(f"</{tag}>")
        return "\n".join(lines)

    def _text_for_prompt(self) -> str:
        value = self._record.content
        if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
            return message_text(value, image_placeholders=True)
        return self.content

    def _metadata_lines(self, config: SearchResultFormatConfig) -> list[str]:
        metadata = self._record.metadata
        if not config.include_metadata or not metadata:
            return []
        entries = [
            f"{_INDENT}<entry{_attr('key', str(key))}>"
            f"{escape_xml_text(_metadata_value(value))}</entry>"
            for key, value in metadata.items()
        ]
        return ["\n".join(["<metadata>", *entries, "</metadata>"])]

    def _link_lines(
        self, config: SearchResultFormatConfig, seen: frozenset[str | None]
    ) -> list[str]:
        if not config.include_linked_results:
            return []
        links: list[str] = []
        for relation, linked in self._linked:
            if linked.id in seen:
                continue  # a relation cycle back to a result already being rendered
            if isinstance(linked, OracleSearchResult):
                body = linked._render(config, seen)
            else:
                body = linked.formatted_content
            if not body.strip():
                continue
            name = (
                relation.relation_type
                if relation.source_record_id == self._id
                else relation.opposite_relation_type
            )
            links.append(
                "\n".join(
                    [f"<link{_attr('relation', name)}>", indent_markup(body, _INDENT), "</link>"]
                )
            )
        if not links:
            return []
        return [
            "\n".join(["<links>", *(indent_markup(link, _INDENT) for link in links), "</links>"])
        ]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OracleSearchResult):
            return NotImplemented
        return (
            self._distance == other._distance
            and self._record == other._record
            and self._id == other._id
            and self._linked == other._linked
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"OracleSearchResult(distance={self._distance!r}, id={self._id!r}, "
            f"record_type={self._record.record_type!r}, content={self.content!r})"
        )


def _wrap_linked(
    record: Record, distance: float, config: SearchResultFormatConfig, ancestors: set[str]
) -> list[tuple[RecordRelation, SearchResult]]:
    """Wrap ``record.linked_results`` (recursively), cutting relation cycles."""
    wrapped: list[tuple[RecordRelation, SearchResult]] = []
    for relation, linked in record.linked_results:
        if linked.id in ancestors:
            continue
        nested = _wrap_linked(linked, distance, config, ancestors | {linked.id})
        result = OracleSearchResult(distance, linked, linked_results=nested, format_config=config)
        wrapped.append((relation, result))
    return wrapped


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

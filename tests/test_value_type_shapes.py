"""Value types are shaped as the reference shapes them: frozen, slotted, hashable, tuples.

Also the behaviour of search results and context cards beyond their rendering (which
``test_formatting_golden.py`` checks against the reference): properties, validation, and
that no stored text can break the card's structure.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, strategies as st

from oracleagentmemory.apis import (
    AgentProfileRecord,
    FactRecord,
    GuidelineRecord,
    ImageContent,
    ImageMimeType,
    ImageRecord,
    MemoryLink,
    MemoryRecord,
    Message,
    MessageContent,
    MessageRecord,
    PendingRecordBatch,
    PreferenceRecord,
    Record,
    RecordRelation,
    RecordStatus,
    ScopedRecord,
    SearchResultFormatConfig,
    TextContent,
    ThreadRecord,
    ThreadSummaryRecord,
    UserProfileRecord,
)
from oracleagentmemory.core import MemoryRetentionConfig, OracleContextCard, OracleSearchResult
from oracleagentmemory.core.searchresult import OracleSearchResultFormatConfig

LINK = ("rel", "a", "fact", "b", "fact", "supersedes", "is_superseded_by", None, None, "t")


def every_value() -> list[Any]:
    """One instance of every record and value type, with dict metadata where it has one."""
    meta = {"k": [1, {"n": None}]}
    scope = {"thread_id": "t", "user_id": "u", "agent_id": "a"}
    return [
        Record("r", content="x", metadata=meta),
        ScopedRecord("s", content="x", metadata=meta, **scope),
        MessageRecord("m", content=[TextContent("hi")], seq_no=1, metadata=meta, **scope),
        MemoryRecord("mem", content="x", metadata=meta, **scope),
        FactRecord("f", content="x", metadata=meta),
        GuidelineRecord("g", content="x"),
        PreferenceRecord("p", content="x"),
        UserProfileRecord("u", content="x", metadata=meta),
        AgentProfileRecord("a", content="x"),
        ImageRecord("i", content="x", bytes=b"\x89PNG", mime_type=ImageMimeType.PNG),
        ThreadRecord("t", content="x", runtime_config={"a": 1}, runtime_state={"b": 2}),
        ThreadSummaryRecord("ts", content={"summary": "s"}),
        RecordRelation("r1", "a", "fact", "b", "fact", "x", "y", None, {"m": 1}, "t"),
        MemoryLink(*LINK),
        Message(role="user", content=[TextContent("a")], metadata=meta),
        TextContent("a"),
        ImageContent(b"x", ImageMimeType.PNG, "d"),
        SearchResultFormatConfig(include_invalid_results=False),
        OracleSearchResultFormatConfig(show_distance=True),
        MemoryRetentionConfig(default_ttl_days=3, max_ttl_days=5),
    ]


@pytest.mark.parametrize("value", every_value(), ids=lambda v: type(v).__name__)
def test_values_are_frozen_slotted_and_hashable(value: Any) -> None:
    assert dataclasses.is_dataclass(value)
    assert not hasattr(value, "__dict__"), "slotted: no per-instance __dict__"
    first = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first, getattr(value, first))
    assert hash(value) == hash(dataclasses.replace(value))
    assert value == dataclasses.replace(value)
    assert len({value, dataclasses.replace(value)}) == 1


def test_sequences_become_tuples() -> None:
    parts = [TextContent("a"), ImageContent(None, ImageMimeType.JPEG)]
    assert isinstance(Message(role="u", content=parts).content, tuple)
    record = MessageRecord("m", content=parts, seq_no=1)
    assert isinstance(record.content, tuple)
    assert record.linked_results == () and isinstance(record.linked_results, tuple)
    linked = FactRecord("a", linked_results=[(MemoryLink(*LINK), FactRecord("b"))])
    assert isinstance(linked.linked_results, tuple)


def test_content_parts_carry_their_type_and_are_abstract_at_the_base() -> None:
    assert TextContent("a").type == "text"
    assert ImageContent(None, ImageMimeType.PNG).type == "image"
    with pytest.raises(TypeError):
        MessageContent()  # type: ignore[abstract]
    assert ImageContent(None, "image/webp").mime_type is ImageMimeType.WEBP  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mime_type"):
        ImageContent(None, "image/gif")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"relation_type": "bogus"}, "relation_type"),
        ({"source_record_type": "message"}, "memory-like"),
        ({"target_record_type": "thread"}, "memory-like"),
        ({"opposite_relation_type": "contradicts"}, "opposite_relation_type"),
    ],
)
def test_memory_link_validates_its_types(changes: dict[str, str], message: str) -> None:
    fields = dict(zip([f.name for f in dataclasses.fields(MemoryLink)], LINK, strict=True))
    with pytest.raises(ValueError, match=message):
        MemoryLink(**{**fields, **changes})


def test_pending_batch_is_slotted() -> None:
    batch = PendingRecordBatch(texts=["a"], record_type="memory")
    assert not hasattr(batch, "__dict__") and batch.contents == ["a"]


# --------------------------------------------------------------------------------------------
# OracleSearchResult
# --------------------------------------------------------------------------------------------


def test_search_result_properties() -> None:
    record = FactRecord("f1", content="x", timestamp="ts", metadata={"k": 1})
    result = OracleSearchResult(0.25, record)
    assert (result.distance, result.record, result.content) == (0.25, record, "x")
    assert (result.metadata, result.timestamp, result.status) == (
        {"k": 1},
        "ts",
        RecordStatus.VALID,
    )
    assert result.id is None and result.linked_results == []
    assert OracleSearchResult(0.1, record, id="given").id == "given"
    assert result.formatted_content == result.format_content()
    parts = MessageRecord("m", content=[TextContent("a"), TextContent("b")], seq_no=1)
    assert OracleSearchResult(0.1, parts).content == "a\nb"
    assert OracleSearchResult(0.1, ThreadSummaryRecord("s", content={"x": 1})).content == ""
    assert OracleSearchResult(0.1, MemoryRecord("m")).content == ""
    # identity semantics, as the reference: results can sit in sets and dict keys
    assert result != OracleSearchResult(0.25, record) and len({result, result}) == 1


def test_record_links_are_not_wrapped_implicitly() -> None:
    record = FactRecord("a", linked_results=[(MemoryLink(*LINK), FactRecord("b"))])
    assert OracleSearchResult(0.3, record).linked_results == []


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("x", FactRecord("a")), {}),
        ((True, FactRecord("a")), {}),
        ((0.1, "record"), {}),
        ((0.1, FactRecord("a")), {"id": 3}),
        ((0.1, FactRecord("a")), {"linked_results": [("rel", "res")]}),
        ((0.1, FactRecord("a")), {"format_config": {"show_distance": True}}),
    ],
)
def test_search_result_rejects_wrong_types(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        OracleSearchResult(*args, **kwargs)


def test_format_configs_check_their_fields() -> None:
    with pytest.raises(TypeError, match="include_invalid_results"):
        SearchResultFormatConfig(include_invalid_results="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="show_distance"):
        OracleSearchResultFormatConfig(show_distance=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        OracleSearchResult(0.1, FactRecord("a")).format_content({"x": 1})  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# OracleContextCard
# --------------------------------------------------------------------------------------------


def test_card_accessors_and_str() -> None:
    result = OracleSearchResult(0.1, FactRecord("a", content="x"))
    message = Message(role="user", content="hi")
    card = OracleContextCard("s", ["t"], [result], [message], "{role}: {content}")
    assert (card.summary, card.topics, card.relevant_results) == ("s", ("t",), (result,))
    assert card.recent_messages == (message,) and card.message_format == "{role}: {content}"
    assert str(card) == card.content == card.formatted_content


@pytest.mark.parametrize(
    "template", ["{id}", "{0}", "{role!r}", "{content:>5}", "{unknown}", "{role"]
)
def test_card_refuses_unsupported_message_formats(template: str) -> None:
    with pytest.raises(ValueError, match="message_format"):
        OracleContextCard("s", message_format=template)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"summary": 3},
        {"summary": "s", "topics": "travel"},
        {"summary": "s", "topics": [1]},
        {"summary": "s", "relevant_results": [FactRecord("a")]},
        {"summary": "s", "recent_messages": [{"role": "user", "content": "x"}]},
        {"summary": "s", "message_format": None},
    ],
)
def test_card_rejects_wrong_types(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        OracleContextCard(**kwargs)


markup = st.sampled_from(["</context_card>", "<summary>", "&amp;", "]]>", "</content>", "<"])
text = st.one_of(
    st.text(alphabet=st.characters(codec="ascii", min_codepoint=32), max_size=30), markup
)
values = st.lists(text, max_size=4).map("".join)


@given(summary=values, topic=values, memory=values, message=values, role=values)
def test_stored_text_never_breaks_the_card_structure(
    summary: str, topic: str, memory: str, message: str, role: str
) -> None:
    card = OracleContextCard(
        summary,
        [topic],
        [OracleSearchResult(0.1, FactRecord("f", content=memory, metadata={"k": memory}))],
        [Message(role=role or "user", content=message or "x")],
    )
    root = ET.fromstring(card.content)
    assert [child.tag for child in root][:3] == ["topics", "summary", "relevant_information"]
    fact = root.find("relevant_information/fact")
    assert fact is not None and (fact.findtext("content") or "") == memory
    assert (root.findtext("summary") or "").strip() == summary.strip()

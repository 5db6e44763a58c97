"""Rendering cases shared by the golden generator and the golden test.

Each case builds value types through public constructors only and returns the rendered text,
so the same code runs against the reference SDK (to write ``format_goldens.json``) and against
this package (to compare). Nothing here may depend on a store or an LLM.
"""

from __future__ import annotations

from collections.abc import Callable

from oracleagentmemory.apis.message import ImageContent, ImageMimeType, Message, TextContent
from oracleagentmemory.apis.records import (
    AgentProfileRecord,
    FactRecord,
    GuidelineRecord,
    ImageRecord,
    MemoryRecord,
    MessageRecord,
    PreferenceRecord,
    Record,
    RecordStatus,
    ThreadRecord,
    ThreadSummaryRecord,
    UserProfileRecord,
)
from oracleagentmemory.apis.relations import MemoryLink, RecordRelation
from oracleagentmemory.apis.searchresult import SearchResultFormatConfig
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.searchresult import (
    OracleSearchResult,
    OracleSearchResultFormatConfig,
)

Case = Callable[[], str]

FULL = dict(
    show_thread_id=True,
    show_distance=True,
    show_timestamp=True,
    show_role=True,
    show_user_id=True,
    show_agent_id=True,
    show_status=True,
    show_metadata=True,
)
SCOPE = dict(thread_id="t1", user_id="u1", agent_id="a1")
TS = "2024-05-01T10:00:00Z"
LINK_AT = "2024-05-02T00:00:00Z"


def _records() -> dict[str, Record]:
    return {
        "memory": MemoryRecord("mem-1", content="Likes <pizza> & 'pasta'", timestamp=TS, **SCOPE),
        "fact": FactRecord("fact-1", content="Allergic to peanuts", metadata={"src": "crm"}),
        "guideline": GuidelineRecord("g-1", content="Answer briefly.", **SCOPE),
        "preference": PreferenceRecord("p-1", content="Window seat", timestamp=TS),
        "message": MessageRecord(
            "msg-1", content="Book a flight\nto Rome", role="user", seq_no=3, timestamp=TS, **SCOPE
        ),
        "message_parts": MessageRecord(
            "msg-2",
            content=[
                TextContent("look"),
                ImageContent(b"\x89PNG", ImageMimeType.PNG, "a cat"),
                TextContent("again"),
            ],
            role="assistant",
            seq_no=4,
        ),
        "message_no_role": MessageRecord("msg-3", content="hi", seq_no=1),
        "user_profile": UserProfileRecord("u1", content="Prefers tea", metadata={"tier": "gold"}),
        "agent_profile": AgentProfileRecord("a1", content="Support bot"),
        "thread": ThreadRecord("t1", content="Trip planning", **SCOPE),
        "image": ImageRecord("img-1", content="a dog", mime_type=ImageMimeType.PNG, **SCOPE),
        "summary": ThreadSummaryRecord("s-1", content={"summary": "S"}, thread_id="t1"),
        "plain": Record("r-1", record_type="custom_kind", content="W"),
        "invalid": FactRecord("f-old", content="Lives in Boston", status=RecordStatus.INVALID),
        "no_content": MemoryRecord("m-empty"),
        "empty_content": MemoryRecord("m-blank", content=""),
        "metadata": MemoryRecord(
            "m-meta",
            content="x",
            metadata={
                "plain": "v<&>",
                "with space": 1,
                "a.b-c_d": True,
                "nested": {"k": [1, {"y": None}]},
                "list": ["p", "q"],
                "none": None,
                "$agent_memory": {"source_message_ids": ["m1"]},
                "é": "dropped",
                "": "dropped",
                "x:y": 2.5,
            },
        ),
        "nul": MemoryRecord("m-nul", content="a\x00b"),
        "escapes": MemoryRecord("m<&>", content="]]> </memory>", timestamp="<ts>", **SCOPE),
    }


def _configs() -> dict[str, SearchResultFormatConfig]:
    return {
        "default": SearchResultFormatConfig(),
        "invalid_true": SearchResultFormatConfig(include_invalid_results=True),
        "invalid_false": SearchResultFormatConfig(include_invalid_results=False),
        "oracle_default": OracleSearchResultFormatConfig(),
        "full": OracleSearchResultFormatConfig(**FULL),
        "full_invalid_false": OracleSearchResultFormatConfig(include_invalid_results=False, **FULL),
        "bare": OracleSearchResultFormatConfig(
            show_timestamp=False, show_role=False, show_status=False
        ),
    }


def _linked_result(config: SearchResultFormatConfig) -> OracleSearchResult:
    new = FactRecord("f-new", content="Moved to Lisbon", user_id="u1")
    old = FactRecord("f-old", content="Lives in Boston", status=RecordStatus.INVALID, user_id="u1")
    pref = PreferenceRecord("p-1", content="Likes trams")
    supersedes = MemoryLink(
        "rel-1",
        "f-new",
        "fact",
        "f-old",
        "fact",
        "supersedes",
        "is_superseded_by",
        LINK_AT,
        {"why": "moved"},
        LINK_AT,
    )
    custom = RecordRelation(
        "rel-2",
        "p-1",
        "preference",
        "f-old",
        "fact",
        "mentions",
        "mentioned_by",
        None,
        None,
        LINK_AT,
    )
    old_result = OracleSearchResult(
        0.35, old, linked_results=[(custom, OracleSearchResult(0.4, pref))]
    )
    return OracleSearchResult(
        0.3, new, linked_results=[(supersedes, old_result)], format_config=config
    )


def _multiline_linked() -> OracleSearchResult:
    first = FactRecord("a", content="A\nA2")
    second = FactRecord("b", content="B\nB2")
    link = MemoryLink(
        "rel", "a", "fact", "b", "fact", "refines", "is_refined_by", None, None, LINK_AT
    )
    return OracleSearchResult(0.3, first, linked_results=[(link, OracleSearchResult(0.1, second))])


def _distances() -> dict[str, float]:
    return {"zero": 0.0, "one": 1.0, "third": 1 / 3, "sum": 0.1 + 0.2, "neg": -0.25, "big": 1.75}


def _messages() -> list[Message]:
    return [
        Message(role="user", content="Hi <there>\n  how   are you?", timestamp=TS, id="m1"),
        Message(role="assistant", content=[TextContent("Hello"), TextContent("friend")]),
        Message(role="user", content=[ImageContent(b"x", ImageMimeType.PNG, "pic")]),
        Message(role="", content="no role"),
        Message(role="user", content="blank ts", timestamp=""),
        Message(role="user", content="   "),
    ]


def _cards() -> dict[str, Callable[[], OracleContextCard]]:
    fact = OracleSearchResult(0.2, FactRecord("fact-1", content="Allergic\nto peanuts"))
    msg = OracleSearchResult(
        0.3, MessageRecord("msg-9", content="old msg", role="user", seq_no=2, timestamp=TS)
    )
    hidden = OracleSearchResult(
        0.1,
        FactRecord("f-old", content="Lives in Boston", status=RecordStatus.INVALID),
        format_config=SearchResultFormatConfig(include_invalid_results=False),
    )
    return {
        "empty": lambda: OracleContextCard(summary=""),
        "summary_only": lambda: OracleContextCard(summary="ctx"),
        "blank_summary": lambda: OracleContextCard(summary="   "),
        "multiline_summary": lambda: OracleContextCard(summary="  a & b\nline2\n\n  line4  \n"),
        "topics": lambda: OracleContextCard(summary="ctx", topics=["travel", "<food>", "", "  "]),
        "topics_only": lambda: OracleContextCard(summary="", topics=["x"]),
        "results": lambda: OracleContextCard(summary="S", relevant_results=[fact, msg]),
        "linked_results": lambda: OracleContextCard(
            summary="", relevant_results=[_linked_result(OracleSearchResultFormatConfig())]
        ),
        "hidden_invalid": lambda: OracleContextCard(summary="", relevant_results=[hidden]),
        "empty_lists": lambda: OracleContextCard(
            summary="", relevant_results=[], recent_messages=[]
        ),
        "messages": lambda: OracleContextCard(summary="", recent_messages=_messages()),
        "messages_all_blank": lambda: OracleContextCard(
            summary="x", recent_messages=[Message(role="user", content="  ")]
        ),
        "custom_format": lambda: OracleContextCard(
            summary="x",
            recent_messages=_messages(),
            message_format="[{role}] {content} @{timestamp} {{literal}}",
        ),
        "multiline_format": lambda: OracleContextCard(
            summary="x", recent_messages=_messages()[:2], message_format="{content}\n-- {role}"
        ),
        "everything": lambda: OracleContextCard(
            summary="The user plans a trip.",
            topics=["travel"],
            relevant_results=[fact, msg],
            recent_messages=_messages(),
        ),
    }


def cases() -> dict[str, Case]:
    """Every golden case, by name."""
    out: dict[str, Case] = {}
    records = _records()
    for config_name, config in _configs().items():
        for record_name, record in records.items():
            out[f"result/{record_name}/{config_name}"] = lambda r=record, c=config: (
                OracleSearchResult(0.25, r).format_content(c)
            )
            out[f"result_own_config/{record_name}/{config_name}"] = lambda r=record, c=config: (
                OracleSearchResult(0.25, r, format_config=c).formatted_content
            )
        out[f"linked/{config_name}"] = lambda c=config: _linked_result(c).formatted_content
    for name, distance in _distances().items():
        out[f"distance/{name}"] = lambda d=distance: OracleSearchResult(
            d, records["memory"]
        ).format_content(OracleSearchResultFormatConfig(show_distance=True))
    for name, build in _cards().items():
        out[f"card/{name}"] = lambda b=build: b().content
        out[f"card_formatted/{name}"] = lambda b=build: b().formatted_content
    out["linked/multiline"] = lambda: _multiline_linked().formatted_content
    out["content/message_parts"] = lambda: OracleSearchResult(0.1, records["message_parts"]).content
    out["content/summary"] = lambda: OracleSearchResult(0.1, records["summary"]).content
    out["content/no_content"] = lambda: OracleSearchResult(0.1, records["no_content"]).content
    return out

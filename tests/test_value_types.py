"""Value types of the client layer: messages, search results, context cards, summaries,
LLM / reranker interfaces, and the layered extraction, image and search configurations.

The rendering tests parse every card and result with ``xml.etree.ElementTree``: whatever a
memory says (``</context_card>``, ``&``, quotes, control characters), the structure holds and
the parsed text is exactly the value.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import strategies as st

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.llms import ILlm, LlmResponse
from oracleagentmemory.apis.llms.llm import generate_in_thread
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, TextContent
from oracleagentmemory.apis.records import (
    Record,
    RecordStatus,
    build_record,
)
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.apis.reranker import (
    IReranker,
    RerankResponse,
    RerankResponseResult,
    rerank_in_thread,
)
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.summary import Summary
from oracleagentmemory.apis.thread import Message, message_text
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from oracleagentmemory.core.imageinputlimitconfig import (
    IMAGE_INPUT_ABSOLUTE_MAXIMA,
    ImageInputLimitConfig,
)
from oracleagentmemory.core.searchconfig import (
    ISearchConfig,
    MemorySearchConfig,
    PruningEvaluationMode,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
)
from oracleagentmemory.core.summary import OracleSummary

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def fact(
    record_id: str = "mem-1",
    content: str | None = "User likes pizza.",
    *,
    timestamp: str | None = "2026-01-01T00:00:00Z",
    status: RecordStatus = RecordStatus.VALID,
    metadata: dict[str, Any] | None = None,
) -> Record:
    return build_record(
        "fact", record_id, content=content, timestamp=timestamp, status=status, metadata=metadata
    )


def relation(source: str, target: str, kind: str = "supersedes") -> RecordRelation:
    opposite = {"supersedes": "is_superseded_by", "supports": "is_supported_by"}[kind]
    return RecordRelation(
        f"rel-{source}-{target}", source, "fact", target, "fact", kind, opposite, None, None, "t"
    )


def parse(text: str) -> ET.Element:
    """Parse a rendering; several top-level elements are wrapped in a root first."""
    return ET.fromstring(f"<root>{text}</root>")


class EchoLlm(ILlm):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any, dict[str, Any]]] = []

    def generate(
        self, prompt: Any, *, response_json_schema: dict[str, Any] | None = None, **kwargs: Any
    ) -> LlmResponse:
        self.calls.append((prompt, response_json_schema, kwargs))
        return LlmResponse(text=f"echo:{prompt}")

    generate_async = generate_in_thread


class LengthReranker(IReranker):
    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        order = sorted(range(len(documents)), key=lambda i: -len(documents[i]))
        return RerankResponse(
            [RerankResponseResult(i, float(len(documents[i])), documents[i]) for i in order]
        )

    rerank_async = rerank_in_thread


class PlainResult(SearchResult):
    """A foreign SearchResult implementation: the card must rely on formatted_content only."""

    def __init__(self, rendered: str) -> None:
        self._rendered = rendered

    distance = property(lambda self: 0.5)
    record = property(lambda self: fact())
    id = property(lambda self: "plain")
    content = property(lambda self: "plain")
    metadata = property(lambda self: None)
    timestamp = property(lambda self: None)

    @property
    def formatted_content(self) -> str:
        return self._rendered


# XML 1.0 can carry these characters (escaped or not); the rest are replaced by U+FFFD.
xml_text = st.text(
    alphabet=st.characters(
        codec="utf-8",
        exclude_categories=("Cs",),
        exclude_characters="".join(chr(c) for c in range(0x20) if chr(c) not in "\t\n\r")
        + "\ufffe\uffff",
    ),
    max_size=40,
)
tricky = st.sampled_from(["</context_card>", "&amp;", "<summary>", '"q"', "'a'", "]]>", "\r\n"])
values = st.one_of(xml_text, tricky, st.lists(st.one_of(xml_text, tricky)).map("".join))


# --------------------------------------------------------------------------------------------
# Page 004 examples (OracleContextCard, OracleSummary, Message)
# --------------------------------------------------------------------------------------------


def test_page_004_context_card_examples() -> None:
    card = OracleContextCard(summary="ctx")
    assert ("<summary>" in card.content and "ctx" in card.content) is True
    assert OracleContextCard(summary="").formatted_content == ""
    card = OracleContextCard(summary="ctx", topics=["travel"])
    assert ("<topics>" in card.formatted_content) is True


def test_page_004_summary_examples() -> None:
    summary = OracleSummary(content="Plan the Rome itinerary.")
    assert summary.content == "Plan the Rome itinerary."
    assert str(summary) == "Plan the Rome itinerary."
    assert (
        OracleSummary(content="Keep the tea preference in mind.").content
        == "Keep the tea preference in mind."
    )
    assert OracleSummary(content="Thread recap").formatted_content == "Thread recap"


def test_page_004_message_fields() -> None:
    params = list(inspect.signature(Message).parameters)
    assert params == ["role", "content", "timestamp", "metadata", "id"]
    message = Message(role="user", content="hi")
    assert (message.timestamp, message.metadata, message.id) == (None, None, None)


# --------------------------------------------------------------------------------------------
# Message, message_text, IThread
# --------------------------------------------------------------------------------------------


def test_message_accepts_structured_content() -> None:
    parts = [TextContent("look"), ImageContent(b"x", ImageMimeType.PNG, "a cat")]
    message = Message(role="user", content=parts, timestamp="t", metadata={"k": 1}, id="m1")
    assert message.content == tuple(parts)
    assert message_text(message.content) == "look"
    assert message_text(message.content, image_placeholders=True) == "look\n[image: a cat]"
    assert message_text([ImageContent(None, ImageMimeType.PNG)], image_placeholders=True) == (
        "[image]"
    )
    assert message_text(None) == ""


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"role": 1, "content": "x"}, "role"),
        ({"role": "user", "content": 3}, "content"),
        ({"role": "user", "content": [{"type": "text"}]}, "content"),
        ({"role": "user", "content": "x", "timestamp": 5}, "timestamp"),
        ({"role": "user", "content": "x", "metadata": [1]}, "metadata"),
        ({"role": "user", "content": "x", "id": 7}, "id"),
    ],
)
def test_message_rejects_wrong_types(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(TypeError, match=field):
        Message(**kwargs)


# --------------------------------------------------------------------------------------------
# OracleSummary
# --------------------------------------------------------------------------------------------


def test_summary_is_plain_text() -> None:
    summary = OracleSummary(content="a < b & c")
    assert summary.formatted_content == summary.content == str(summary) == "a < b & c"
    assert isinstance(summary, Summary)
    assert summary == OracleSummary("a < b & c") and hash(summary) == hash(
        OracleSummary("a < b & c")
    )
    assert repr(summary) == "OracleSummary(content='a < b & c')"
    with pytest.raises(TypeError, match="content"):
        OracleSummary(content=None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# ILlm, IReranker
# --------------------------------------------------------------------------------------------


def test_llm_interface_and_async_twin() -> None:
    with pytest.raises(TypeError):
        ILlm()  # type: ignore[abstract]
    llm = EchoLlm()
    assert llm.generate("hi").text == "echo:hi"
    schema = {"type": "object"}
    response = asyncio.run(llm.generate_async("yo", response_json_schema=schema, temperature=0))
    assert response == LlmResponse(text="echo:yo")
    assert llm.calls[-1] == ("yo", schema, {"temperature": 0})


def test_reranker_interface_and_response() -> None:
    with pytest.raises(TypeError):
        IReranker()  # type: ignore[abstract]
    reranker = LengthReranker()
    response = asyncio.run(reranker.rerank_async("q", ["ccc", "a", "bb", "zzz"]))
    assert [r.index for r in response.results] == [0, 3, 2, 1]  # ties keep input order
    assert [r.relevance_score for r in response.results] == [3.0, 3.0, 2.0, 1.0]
    assert response.results[0].document == "ccc"
    response.check_complete(4)
    with pytest.raises(ValueError, match="3 documents"):
        response.check_complete(3)


# --------------------------------------------------------------------------------------------
# Enums (values exactly as api-signatures.md)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enum", "expected"),
    [
        (MemoryExtractionMode, {"INLINE": "INLINE", "BACKGROUND": "BACKGROUND"}),
        (
            MemoryLinkExtractionMode,
            {
                "DISABLED": "DISABLED",
                "DURING_EXTRACTION": "DURING_EXTRACTION",
                "POST_EXTRACTION": "POST_EXTRACTION",
            },
        ),
        (
            MemoryExtractionImageContext,
            {"DISABLED": "disabled", "IMAGE": "image", "CAPTION": "caption", "MEMORY": "memory"},
        ),
        (
            BackgroundExtractionQueueFullBehavior,
            {
                "DROP": "DROP",
                "WAIT_THEN_DROP": "WAIT_THEN_DROP",
                "WAIT_THEN_RAISE": "WAIT_THEN_RAISE",
            },
        ),
        (
            PruningEvaluationMode,
            {"FAST": "fast", "EXTENDED": "extended", "EXHAUSTIVE": "exhaustive"},
        ),
    ],
)
def test_enum_values(enum: Any, expected: dict[str, str]) -> None:
    assert {member.name: member.value for member in enum} == expected
    assert all(isinstance(member, str) for member in enum)


# --------------------------------------------------------------------------------------------
# MemoryExtractionConfig
# --------------------------------------------------------------------------------------------

EXTRACTION_PARAMS = [
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "extract_memories",
    "enable_context_summary",
    "memory_extraction_custom_instructions",
    "memory_link_extraction_custom_instructions",
    "memory_extraction_image_context",
    "memory_extraction_inherit_message_metadata",
    "extraction_mode",
    "memory_link_extraction_mode",
    "memory_link_extraction_token_limit",
    "background_extraction_queue_full_behavior",
    "background_extraction_queue_put_timeout_seconds",
]


def test_extraction_config_signature_and_defaults() -> None:
    params = inspect.signature(MemoryExtractionConfig).parameters
    assert list(params) == EXTRACTION_PARAMS
    assert all(param.default is NOT_SET_MARKER for param in params.values())
    config = MemoryExtractionConfig()
    assert config.set_fields() == {} and repr(config) == "MemoryExtractionConfig()"


def test_page_001_extraction_example() -> None:
    config = MemoryExtractionConfig(
        extract_memories=True,
        memory_extraction_image_context=MemoryExtractionImageContext.CAPTION,
        extraction_mode=MemoryExtractionMode.BACKGROUND,
        memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
        memory_link_extraction_token_limit=8_000,
    )
    assert config.memory_link_extraction_token_limit == 8000
    assert MemoryExtractionConfig(extract_memories=False).resolve().extract_memories is False


def test_extraction_sdk_defaults() -> None:
    resolved = MemoryExtractionConfig().resolve()
    assert resolved.memory_extraction_window == -1
    assert resolved.context_summary_update_frequency == -1
    assert resolved.memory_extraction_frequency == -1
    assert resolved.memory_extraction_token_limit == 100_000
    assert resolved.extract_memories is True
    assert resolved.enable_context_summary is True
    assert resolved.memory_extraction_custom_instructions is None
    assert resolved.memory_link_extraction_custom_instructions is None
    assert resolved.memory_extraction_image_context is MemoryExtractionImageContext.DISABLED
    assert resolved.memory_extraction_inherit_message_metadata is False
    assert resolved.extraction_mode is MemoryExtractionMode.BACKGROUND
    assert resolved.memory_link_extraction_mode is MemoryLinkExtractionMode.POST_EXTRACTION
    assert resolved.memory_link_extraction_token_limit == 100_000
    assert (
        resolved.background_extraction_queue_full_behavior
        is BackgroundExtractionQueueFullBehavior.DROP
    )
    assert resolved.background_extraction_queue_put_timeout_seconds == 300.0


def test_extraction_fields_resolve_independently() -> None:
    client = MemoryExtractionConfig(
        memory_extraction_frequency=5,
        extraction_mode=MemoryExtractionMode.INLINE,
        memory_extraction_custom_instructions="client",
    )
    thread = MemoryExtractionConfig(
        memory_extraction_frequency=3, memory_extraction_custom_instructions=None
    )
    operation = MemoryExtractionConfig(memory_extraction_frequency=1)
    resolved = operation.merged_over(thread).merged_over(client).resolve()
    assert resolved.memory_extraction_frequency == 1  # operation
    assert resolved.memory_extraction_custom_instructions is None  # thread (explicit None)
    assert resolved.extraction_mode is MemoryExtractionMode.INLINE  # client
    assert resolved.memory_extraction_window == -1  # SDK default
    assert operation.merged_over(NOT_SET_MARKER) is operation
    assert operation.merged_over(None) is operation
    with pytest.raises(TypeError, match="cannot merge"):
        operation.merged_over(ImageInputLimitConfig())  # type: ignore[arg-type]


def test_extraction_values_are_normalized() -> None:
    config = MemoryExtractionConfig(
        extraction_mode="inline",  # type: ignore[arg-type]
        memory_extraction_image_context="CAPTION",  # type: ignore[arg-type]
        memory_extraction_inherit_message_metadata=["tenant", "channel"],
        background_extraction_queue_put_timeout_seconds=10,
    )
    assert config.extraction_mode is MemoryExtractionMode.INLINE
    assert config.memory_extraction_image_context is MemoryExtractionImageContext.CAPTION
    assert config.memory_extraction_inherit_message_metadata == ("tenant", "channel")
    assert config.background_extraction_queue_put_timeout_seconds == 10.0
    assert hash(config) == hash(MemoryExtractionConfig(**config.set_fields()))
    with pytest.raises(AttributeError):
        config.extract_memories = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("memory_extraction_window", "5", TypeError),
        ("memory_extraction_window", True, TypeError),
        ("memory_extraction_window", 0, ValueError),
        ("memory_extraction_window", -2, ValueError),
        ("memory_extraction_frequency", 1.5, TypeError),
        ("memory_extraction_token_limit", None, TypeError),
        ("extract_memories", 1, TypeError),
        ("enable_context_summary", "yes", TypeError),
        ("memory_extraction_custom_instructions", 3, TypeError),
        ("memory_link_extraction_custom_instructions", ["x"], TypeError),
        ("memory_extraction_image_context", "pixels", ValueError),
        ("memory_extraction_image_context", 1, TypeError),
        ("memory_extraction_inherit_message_metadata", "tenant", TypeError),
        ("memory_extraction_inherit_message_metadata", [1], TypeError),
        ("extraction_mode", "later", ValueError),
        ("memory_link_extraction_mode", None, TypeError),
        ("background_extraction_queue_full_behavior", "BLOCK", ValueError),
        ("background_extraction_queue_put_timeout_seconds", -1, ValueError),
        ("background_extraction_queue_put_timeout_seconds", float("inf"), ValueError),
        ("background_extraction_queue_put_timeout_seconds", "10", TypeError),
    ],
)
def test_extraction_validation_names_the_field(field: str, value: Any, error: type) -> None:
    with pytest.raises(error, match=field):
        MemoryExtractionConfig(**{field: value})


def test_extraction_json_round_trip() -> None:
    config = MemoryExtractionConfig(
        memory_extraction_window=4,
        memory_extraction_custom_instructions=None,
        memory_extraction_inherit_message_metadata=("tenant",),
        extraction_mode=MemoryExtractionMode.INLINE,
        background_extraction_queue_full_behavior=BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE,
    )
    stored = json.loads(json.dumps(config.to_json()))
    assert stored == {
        "memory_extraction_window": 4,
        "memory_extraction_custom_instructions": None,
        "memory_extraction_inherit_message_metadata": ["tenant"],
        "extraction_mode": "INLINE",
        "background_extraction_queue_full_behavior": "WAIT_THEN_RAISE",
    }
    assert MemoryExtractionConfig.from_json(stored) == config
    assert MemoryExtractionConfig.from_json({**stored, "future_field": 1}) == config
    with pytest.raises(TypeError, match="mapping"):
        MemoryExtractionConfig.from_json([("extract_memories", True)])  # type: ignore[arg-type]


def test_with_overrides_maps_flat_keywords() -> None:
    base = MemoryExtractionConfig(memory_extraction_window=4)
    updated = base.with_overrides(extract_memories=False, memory_extraction_window=NOT_SET_MARKER)
    assert updated == MemoryExtractionConfig(memory_extraction_window=4, extract_memories=False)
    with pytest.raises(TypeError, match="llm"):
        base.with_overrides(llm=None)
    with pytest.raises(ValueError, match="memory_extraction_window"):
        base.with_overrides(memory_extraction_window=0)


# --------------------------------------------------------------------------------------------
# ImageInputLimitConfig
# --------------------------------------------------------------------------------------------


def test_image_limits_page_example_and_resolution() -> None:
    params = inspect.signature(ImageInputLimitConfig).parameters
    assert list(params) == [
        "max_raw_image_bytes",
        "max_images_per_llm_request",
        "max_total_raw_image_bytes_per_llm_request",
    ]
    config = ImageInputLimitConfig(
        max_raw_image_bytes=16 * 1024 * 1024, max_images_per_llm_request=200
    )
    resolved = config.merged_over(ImageInputLimitConfig(max_images_per_llm_request=3)).resolve()
    assert resolved.max_raw_image_bytes == 16 * 1024 * 1024
    assert resolved.max_images_per_llm_request == 200
    assert resolved.max_total_raw_image_bytes_per_llm_request == 100 * 1024 * 1024  # SDK default
    assert ImageInputLimitConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize("field", sorted(IMAGE_INPUT_ABSOLUTE_MAXIMA))
def test_image_limits_are_bounded(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ImageInputLimitConfig(**{field: 0})
    with pytest.raises(ValueError, match=field):
        ImageInputLimitConfig(**{field: IMAGE_INPUT_ABSOLUTE_MAXIMA[field] + 1})
    with pytest.raises(TypeError, match=field):
        ImageInputLimitConfig(**{field: 1.0})


def test_image_limit_single_image_cannot_exceed_request_total() -> None:
    with pytest.raises(ValueError, match="max_raw_image_bytes"):
        ImageInputLimitConfig(max_raw_image_bytes=10, max_total_raw_image_bytes_per_llm_request=5)


# --------------------------------------------------------------------------------------------
# Search configurations
# --------------------------------------------------------------------------------------------


def test_search_config_signatures() -> None:
    def shape(cls: type) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(cls).parameters.values()]

    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    budgets = [
        ("token_budget", positional, NOT_SET_MARKER),
        ("soft_token_budget", positional, NOT_SET_MARKER),
    ]
    rerank = [
        ("reranker", positional, NOT_SET_MARKER),
        ("reranker_max_candidates", positional, NOT_SET_MARKER),
    ]
    assert shape(MemorySearchConfig) == budgets
    assert shape(TopKMemorySearchConfig) == [
        *budgets,
        *rerank,
        ("max_results", positional, NOT_SET_MARKER),
    ]
    assert shape(PruningMemorySearchConfig) == [
        *budgets,
        *rerank,
        ("evaluation_mode", positional, NOT_SET_MARKER),
        ("num_probe_points", positional, NOT_SET_MARKER),
        ("protected_fraction", positional, NOT_SET_MARKER),
        ("pruner", inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty),
    ]
    assert issubclass(TopKMemorySearchConfig, ISearchConfig)
    assert issubclass(PruningMemorySearchConfig, MemorySearchConfig)


def test_search_config_defaults() -> None:
    plain = MemorySearchConfig().resolve()
    assert (plain.token_budget, plain.soft_token_budget, plain.max_results) == (None, None, None)
    assert plain.reranker is None and plain.pruner is None
    top_k = TopKMemorySearchConfig().resolve()
    assert (top_k.max_results, top_k.reranker_max_candidates) == (10, 50)
    llm = EchoLlm()
    pruning = PruningMemorySearchConfig(pruner=llm).resolve()
    assert pruning.pruner is llm
    assert pruning.evaluation_mode is PruningEvaluationMode.FAST
    assert (pruning.num_probe_points, pruning.protected_fraction) == (5, 0.2)


@pytest.mark.parametrize(
    ("cls", "kwargs", "error", "field"),
    [
        (MemorySearchConfig, {"token_budget": 0}, ValueError, "token_budget"),
        (MemorySearchConfig, {"soft_token_budget": "10"}, TypeError, "soft_token_budget"),
        (MemorySearchConfig, {"token_budget": 10, "soft_token_budget": 20}, ValueError, "soft"),
        (TopKMemorySearchConfig, {"reranker": "cohere"}, TypeError, "reranker"),
        (TopKMemorySearchConfig, {"reranker_max_candidates": 0}, ValueError, "reranker_max"),
        (TopKMemorySearchConfig, {"max_results": 0}, ValueError, "max_results"),
        (TopKMemorySearchConfig, {"max_results": 2.0}, TypeError, "max_results"),
        (PruningMemorySearchConfig, {"pruner": None}, TypeError, "pruner"),
        (
            PruningMemorySearchConfig,
            {"pruner": EchoLlm(), "evaluation_mode": "slow"},
            ValueError,
            "evaluation_mode",
        ),
        (
            PruningMemorySearchConfig,
            {"pruner": EchoLlm(), "num_probe_points": 0},
            ValueError,
            "num_probe_points",
        ),
        (
            PruningMemorySearchConfig,
            {"pruner": EchoLlm(), "protected_fraction": 1.5},
            ValueError,
            "protected_fraction",
        ),
    ],
)
def test_search_config_validation(
    cls: type, kwargs: dict[str, Any], error: type, field: str
) -> None:
    with pytest.raises(error, match=field):
        cls(**kwargs)


def test_pruner_is_required() -> None:
    with pytest.raises(TypeError, match="pruner"):
        PruningMemorySearchConfig()  # type: ignore[call-arg]


def test_search_configs_merge_field_by_field_keeping_the_specific_kind() -> None:
    reranker = LengthReranker()
    client = TopKMemorySearchConfig(token_budget=1000, reranker=reranker, max_results=20)
    operation = MemorySearchConfig(token_budget=200, soft_token_budget=150)
    merged = operation.merged_over(client)
    assert isinstance(merged, TopKMemorySearchConfig)
    resolved = merged.resolve()
    assert (resolved.token_budget, resolved.soft_token_budget) == (200, 150)
    assert resolved.reranker is reranker and resolved.max_results == 20
    # A sibling kind keeps its own kind and inherits the shared fields only.
    llm = EchoLlm()
    pruning = PruningMemorySearchConfig(num_probe_points=3, pruner=llm).merged_over(client)
    assert isinstance(pruning, PruningMemorySearchConfig)
    assert pruning.reranker is reranker and pruning.token_budget == 1000
    assert pruning.resolve().max_results is None
    # An explicit None budget at a narrower level wins over a broader number.
    assert MemorySearchConfig(token_budget=None).merged_over(client).resolve().token_budget is None
    assert operation.merged_over(NOT_SET_MARKER) is operation
    with pytest.raises(TypeError, match="cannot merge"):
        operation.merged_over(MemoryExtractionConfig())  # type: ignore[arg-type]


def test_search_config_json_round_trip() -> None:
    top_k = TopKMemorySearchConfig(token_budget=500, reranker=None, max_results=5)
    stored = json.loads(json.dumps(top_k.to_json()))
    assert stored == {"kind": "top_k", "token_budget": 500, "reranker": None, "max_results": 5}
    assert MemorySearchConfig.from_json(stored) == top_k
    reranker = LengthReranker()
    with_reranker = TopKMemorySearchConfig(reranker=reranker).to_json()
    assert with_reranker == {"kind": "top_k"}
    rebuilt = MemorySearchConfig.from_json(with_reranker, reranker=reranker)
    assert rebuilt == TopKMemorySearchConfig(reranker=reranker)
    llm = EchoLlm()
    pruning = PruningMemorySearchConfig(
        evaluation_mode=PruningEvaluationMode.EXHAUSTIVE, pruner=llm
    )
    stored = json.loads(json.dumps(pruning.to_json()))
    assert stored == {"kind": "pruning", "evaluation_mode": "exhaustive"}
    assert MemorySearchConfig.from_json(stored, pruner=llm) == pruning
    with pytest.raises(ValueError, match="pruner"):
        MemorySearchConfig.from_json(stored)
    with pytest.raises(ValueError, match="kind"):
        MemorySearchConfig.from_json({"kind": "magic"})
    assert MemorySearchConfig.from_json({"token_budget": 9}) == MemorySearchConfig(token_budget=9)


def test_search_config_repr_shows_set_fields_only() -> None:
    assert repr(TopKMemorySearchConfig(max_results=3)) == "TopKMemorySearchConfig(max_results=3)"

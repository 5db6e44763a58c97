"""``core.extractors``: the extractor classes used on their own, without a client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core.extractors import (
    MemoryExtractionConfig,
    OneShotThreadMemoryExtractor,
    PendingRecordBatch,
    ThreadMemoryExtractor,
)
from oracleagentmemory.core.extractors._extractor import ExtractedMemory, MemoryLinkTargetCandidate
from oracleagentmemory.core.extractors._oneshotextractor import MemoryExtractionState

from ._llm_double import ScriptedLlm


def _extractor(llm: Any = None, search: Any = None, **config: Any) -> OneShotThreadMemoryExtractor:
    return OneShotThreadMemoryExtractor(
        llm if llm is not None else ScriptedLlm(),
        search if search is not None else (lambda text, k: []),
        MemoryExtractionConfig(**config),
    )


def test_the_abstract_interface() -> None:
    with pytest.raises(TypeError):
        ThreadMemoryExtractor()  # type: ignore[abstract]
    assert isinstance(_extractor(), ThreadMemoryExtractor)


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="llm"):
        OneShotThreadMemoryExtractor(object(), lambda t, k: [], MemoryExtractionConfig())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="search_memories"):
        OneShotThreadMemoryExtractor(None, None, MemoryExtractionConfig())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config"):
        OneShotThreadMemoryExtractor(None, lambda t, k: [], {})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown field"):
        OneShotThreadMemoryExtractor(
            None, lambda t, k: [], MemoryExtractionConfig(), prompt_messages_format="{x}{content}"
        )


def test_settings_default_resolve_and_can_be_changed() -> None:
    extractor = _extractor(memory_extraction_frequency=3)
    assert (extractor.memory_extraction_window, extractor.memory_extraction_frequency) == (-1, 3)
    assert extractor.memory_extraction_token_limit == 100_000
    assert extractor.enable_context_summary is True
    extractor.memory_extraction_window = 5
    extractor.memory_extraction_frequency = 1
    extractor.context_summary_update_frequency = 2
    extractor.memory_extraction_token_limit = 0
    extractor.enable_context_summary = False
    assert (extractor.memory_extraction_window, extractor.memory_extraction_frequency) == (5, 1)
    assert extractor.context_summary_update_frequency == 2
    assert (extractor.memory_extraction_token_limit, extractor.enable_context_summary) == (0, False)
    with pytest.raises(ValueError):
        extractor.memory_extraction_window = 0
    with pytest.raises(TypeError):
        extractor.enable_context_summary = "yes"  # type: ignore[assignment]


def test_decisions_count_messages() -> None:
    extractor = _extractor(memory_extraction_frequency=3, context_summary_update_frequency=2)
    decisions = [extractor.compute_add_messages_extraction_decision(1) for _ in range(4)]
    assert [(d.extract, d.update_summary) for d in decisions] == [
        (False, False),
        (False, True),
        (True, False),
        (False, True),
    ]
    assert extractor.last_memory_extraction_counter == 1
    extractor.last_memory_extraction_counter = 0
    assert extractor.last_memory_extraction_counter == 0
    extractor.invalidate_history_dependent_state()
    assert extractor.state == MemoryExtractionState()
    every_call = _extractor(extract_memories=False, enable_context_summary=True)
    d = every_call.compute_add_messages_extraction_decision(2)
    assert (d.extract, d.update_summary, d.new_message_count) == (False, True, 2)


def test_extract_memories_standalone_keeps_the_summary_in_state() -> None:
    llm = ScriptedLlm(
        [
            {
                "memories": [{"type": "fact", "content": "Ana lives in Porto", "sources": [2]}],
                "summary": "Ana talked about Porto.",
                "topics": ["Porto"],
            }
        ]
    )
    extractor = _extractor(llm)
    memories = extractor.extract_memories(
        [Message(role="user", content="Hi", id="m0")],
        [
            {"role": "user", "content": "I'm Ana.", "id": "m1"},
            Message(role="user", content="I live in Porto.", id="m2", metadata={"k": 1}),
        ],
    )
    assert [(m.content, m.memory_type, m.source_message_ids) for m in memories] == [
        ("Ana lives in Porto", "fact", ("m2",))
    ]
    assert memories[0].metadata is None  # inheritance is off by default
    assert extractor.state.context_summary == "Ana talked about Porto."
    assert extractor.state.topics == ("Porto",)
    assert extractor.get_recent_messages(1, [{"role": "user", "content": "x"}])[0].content == "x"
    assert extractor.get_recent_messages(0, [{"role": "user", "content": "x"}]) == []


async def test_async_twins_and_precomputed_decision() -> None:
    llm = ScriptedLlm(
        [{"memories": [{"type": "preference", "content": "Likes jazz", "sources": [1]}]}]
    )
    extractor = _extractor(llm, enable_context_summary=False)
    decision = extractor.compute_add_messages_extraction_decision(1)
    memories = await extractor.extract_memories_with_precomputed_decision_async(
        [], [{"role": "user", "content": "I like jazz", "id": "m1"}], decision
    )
    assert [m.content for m in memories] == ["Likes jazz"]
    skip = type(decision)(extract=False, update_summary=False, new_message_count=1)
    assert await extractor.extract_memories_with_precomputed_decision_async([], [], skip) == []
    await extractor.resolve_memory_links_async(memories)


def test_resolve_memory_links_with_sync_and_async_search() -> None:
    existing = MemoryLinkTargetCandidate("mem-1", "fact", "User has two cats.", 0.99)

    async def search(text: str, k: int) -> list[MemoryLinkTargetCandidate]:
        return [existing]

    memories = [
        ExtractedMemory("User has two cats", "fact", ("m1",)),
        ExtractedMemory("User has three cats.", "fact", ("m2",)),
    ]
    _extractor(search=search).resolve_memory_links(memories)
    assert [m.duplicate_of for m in memories] == ["mem-1", None]
    assert memories[1].candidates == [existing]
    plain = [ExtractedMemory("User has two cats", "fact")]
    _extractor(search=lambda text, k: ["a bare string"]).resolve_memory_links(plain)
    assert plain[0].duplicate_of is None and plain[0].candidates == []


def test_build_pending_memory_batches_groups_types_and_skips_duplicates() -> None:
    memories = [
        ExtractedMemory("a", "fact", ("m1",), {"x": 1}, "2024-01-01T00:00:00"),
        ExtractedMemory("b", "preference"),
        ExtractedMemory("c", "fact"),
        ExtractedMemory("d", "fact", duplicate_of="mem-9"),
    ]
    batches = OneShotThreadMemoryExtractor.build_pending_memory_batches(memories, "t", "u", None)
    assert all(isinstance(b, PendingRecordBatch) for b in batches)
    assert [(b.record_type, b.contents) for b in batches] == [
        ("fact", ["a", "c"]),
        ("preference", ["b"]),
    ]
    assert batches[0].metadata == [{"x": 1}, None]
    assert batches[0].timestamps == ["2024-01-01T00:00:00", None]
    assert (batches[0].thread_ids, batches[0].user_ids, batches[0].agent_ids) == ("t", "u", None)


def test_extracted_memory_is_checked() -> None:
    with pytest.raises(ValueError, match="content"):
        ExtractedMemory("  ")
    with pytest.raises(ValueError, match="memory_type"):
        ExtractedMemory("x", "opinion")


def test_without_an_llm_extraction_refuses() -> None:
    extractor = OneShotThreadMemoryExtractor(None, lambda t, k: [], MemoryExtractionConfig())
    with pytest.raises(ValueError, match="needs an llm"):
        extractor.extract([], [{"role": "user", "content": "x"}])
    assert asyncio.iscoroutinefunction(extractor.extract_memories_async)

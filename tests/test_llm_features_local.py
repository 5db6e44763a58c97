"""The page examples about links, images and pruning, run with the offline model (marked
``local_llm``: ``make test-llm``). The 0.5B model's judgement is poor (see the link benchmark
in docs/guides/links-images.md), so these check that every path runs end to end with a real
model and that what it writes is well-formed: links of known types between memories of one
user, INVALID only for targets of supersedes / duplicates, pruning that keeps the protected
results.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from oracleagentmemory.apis.message import ImageContent, TextContent
from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    OracleAgentMemory,
    PruningEvaluationMode,
    PruningMemorySearchConfig,
)
from oracleagentmemory.core.extractors._link_prompts import LINK_RELATIONS
from oracleagentmemory.core.llms.local import LocalLlm, llama_cpp_available

pytestmark = pytest.mark.local_llm

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(scope="module")
def model() -> Iterator[LocalLlm]:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not installed (extra [local-llm]; run make test-llm)")
    try:
        llm = LocalLlm(max_tokens=384)
    except FileNotFoundError as exc:
        pytest.skip(f"the packaged weights are not installed: {exc}")
    with llm:
        yield llm


def _client(tmp_path: Any, llm: Any, **kw: Any) -> OracleAgentMemory:
    return OracleAgentMemory(connection=str(tmp_path / "local.db"), llm=llm, **kw)


def _well_formed(client: OracleAgentMemory) -> None:
    memories = {m.id: m for m in client.list_memories(limit=None)}
    invalidated = set()
    for relation in client.store.list_relations(limit=None):
        assert relation.relation_type in LINK_RELATIONS
        source, target = memories[relation.source_record_id], memories[relation.target_record_id]
        assert source.user_id == target.user_id is not None
        assert source.id != target.id
        if relation.relation_type in ("supersedes", "duplicates"):
            invalidated.add(target.id)
    assert {m.id for m in memories.values() if m.status is RecordStatus.INVALID} == invalidated


def test_autonomous_linking_with_the_local_model(model: LocalLlm, tmp_path: Any) -> None:
    client = _client(
        tmp_path, model, memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    client.add_memory("Maria lives in Boston.", user_id="u1", memory_id="old")
    client.add_memory("Maria likes green tea.", user_id="u1", memory_id="tea")
    new = client.add_memory(
        "Maria moved to Lisbon in 2024.", user_id="u1", memory_id="new", autonomous_linking=True
    )
    assert new == "new"
    _well_formed(client)
    client.close()


@pytest.mark.parametrize(
    "mode", [MemoryLinkExtractionMode.POST_EXTRACTION, MemoryLinkExtractionMode.DURING_EXTRACTION]
)
def test_extraction_with_links_with_the_local_model(
    model: LocalLlm, tmp_path: Any, mode: MemoryLinkExtractionMode
) -> None:
    client = _client(
        tmp_path,
        model,
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            enable_context_summary=False,
            memory_link_extraction_mode=mode,
        ),
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I live in Boston and work as a nurse."}])
    thread.add_messages([{"role": "user", "content": "Big news: I moved to Lisbon last month."}])
    assert client.get_memory_extraction_stats().failed == 0
    _well_formed(client)
    client.close()


def test_pruned_search_client_with_the_local_model(model: LocalLlm, tmp_path: Any) -> None:
    """Page 001's ``pruned_search_client``, then each evaluation mode."""
    client = _client(
        tmp_path,
        None,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
        pruner_llm=model,
    )
    facts = [
        "Maria moved to Lisbon in 2024.",
        "Maria's flat in Lisbon has a balcony.",
        "Tom collects stamps.",
        "The office printer is broken.",
        "Maria works as a nurse.",
    ]
    for fact in facts:
        client.add_memory(fact, user_id="u1")
    unpruned = OracleAgentMemory(connection=str(tmp_path / "local.db"))
    plain = [r.content for r in unpruned.search("Where does Maria live?", user_id="u1")]
    unpruned.close()
    pruned = [r.content for r in client.search("Where does Maria live?", user_id="u1")]
    assert pruned and pruned[0] == plain[0]  # the protected top result stays
    assert set(pruned) <= set(plain)
    thread = client.create_thread(user_id="u1")
    for mode in PruningEvaluationMode:
        thread = client.update_thread(
            thread.thread_id,
            search_config=PruningMemorySearchConfig(pruner=model, evaluation_mode=mode),
        )
        thread.add_memory(f"Maria's favourite city is Lisbon ({mode.value}).")
        assert thread.search("Maria's city", max_results=4)
    client.close()


def test_images_with_the_text_only_local_model(model: LocalLlm, tmp_path: Any) -> None:
    """The local model reads text only: captions are refused or skipped, described images
    take part in extraction as captions and as MEMORY sources."""
    client = _client(
        tmp_path,
        model,
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            enable_context_summary=False,
            memory_link_extraction_mode=MemoryLinkExtractionMode.DISABLED,
            memory_extraction_image_context=MemoryExtractionImageContext.CAPTION,
        ),
    )
    with pytest.warns(RuntimeWarning, match="cannot see images"):
        image_id = client.add_image(PNG, user_id="u1")
    with pytest.raises(ValueError, match="supports_vision=False"):
        client.update_image(image_id, description=None)
    thread = client.create_thread(user_id="u1")
    with pytest.raises(ValueError, match="CAPTION needs a non-blank description"):
        thread.add_messages([{"role": "user", "content": [ImageContent(PNG, "image/png")]}])
    thread.add_messages(
        [
            {
                "role": "user",
                "content": [
                    TextContent("This is my new car!"),
                    ImageContent(PNG, "image/png", "a red Fiat 500 parked on a street"),
                ],
            }
        ]
    )
    assert client.get_memory_extraction_stats().failed == 0
    memory_thread = client.create_thread(
        user_id="u2",
        memory_extraction_config=MemoryExtractionConfig(
            memory_extraction_image_context=MemoryExtractionImageContext.MEMORY
        ),
    )
    memory_thread.add_messages(
        [
            {
                "role": "user",
                "content": [
                    TextContent("Our dog, on the beach"),
                    ImageContent(PNG, "image/png", "a golden retriever running on sand", id="dog"),
                ],
            }
        ]
    )
    assert client.get_memory_extraction_stats().failed == 0
    for result in memory_thread.search("dog", record_types=["memory", "fact", "preference"]):
        assert set(result.source_image_ids) <= {"dog"}
    client.close()

"""Embedders, LLMs and rerankers that do not subclass the interfaces work wherever those are
accepted (the reference does not check ``isinstance``); one without a required method is a
TypeError naming the argument and the missing method."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.llms.llm import LlmResponse
from oracleagentmemory.apis.reranker import RerankResponse, RerankResponseResult
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    OracleAgentMemory,
    SearchStrategy,
)
from oracleagentmemory.core.embedders import BiEncoderReranker
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore
from oracleagentmemory.core.searchconfig import PruningMemorySearchConfig, TopKMemorySearchConfig

from ._embedders import HashingEmbedder
from ._fake_model import fake_model


class DuckEmbedder:
    """Not an IEmbedder: only the methods and the dimension, as a reference user writes."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(dim=48)
        self.calls = 0
        self.async_calls = 0

    @property
    def embedding_dimension(self) -> int:
        return 48

    def embed(self, texts: list[str], *, is_query: bool = False) -> Any:
        self.calls += 1
        return self._inner.embed(texts, is_query=is_query)

    async def embed_async(self, texts: list[str], *, is_query: bool = False) -> Any:
        self.async_calls += 1
        return self._inner.embed(texts, is_query=is_query)


class DuckLlm:
    """Not an ILlm: answers every prompt with the deterministic fake model."""

    def __init__(self) -> None:
        self.model = fake_model()
        self.calls = 0

    def generate(self, prompt: Any, *, response_json_schema: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        if isinstance(prompt, str):
            messages = [("user", prompt)]
        else:
            messages = [(m["role"], m["content"]) for m in prompt]
        answer = self.model(SimpleNamespace(schema=response_json_schema, messages=messages))
        return LlmResponse(answer if isinstance(answer, str) else json.dumps(answer))

    async def generate_async(self, prompt: Any, **kwargs: Any) -> Any:
        return self.generate(prompt, **kwargs)


class DuckReranker:
    """Not an IReranker: only ``rerank_async`` (the interface's abstract method); the longest
    document is the most relevant."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def rerank_async(self, query: str, documents: list[str], **kwargs: Any) -> Any:
        self.calls.append(documents)
        return RerankResponse(
            results=[RerankResponseResult(i, float(len(d))) for i, d in enumerate(documents)]
        )


def test_a_duck_embedder_works_end_to_end(tmp_path: Path) -> None:
    duck = DuckEmbedder()
    db = str(tmp_path / "duck.db")
    with OracleAgentMemory(connection=db, embedder=duck) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I keep bees in Porto."}])
        memory.add_memory("The user prefers green tea.", user_id="u1", memory_type="fact")
        found = memory.search("green tea", user_id="u1", max_results=1)
        assert [r.content for r in found] == ["The user prefers green tea."]
        assert duck.calls >= 3  # the message, the memory, the query
        assert memory.store.embedder.embedding_dimension == 48
        vectors = asyncio.run(memory.store.embedder.embed_async(["x"], is_query=True))
        assert np.asarray(vectors).shape == (1, 48) and duck.async_calls == 1
    # Reopened with the same kind of object: the model identity (its class) matches.
    with OracleAgentMemory(connection=db, embedder=DuckEmbedder()) as memory:
        assert [r.content for r in memory.search("bees", user_id="u1", max_results=1)] == [
            "I keep bees in Porto."
        ]


def test_a_duck_embedder_works_for_the_store_and_the_rescorer(tmp_path: Path) -> None:
    store = OracleDBMemoryStore(
        DuckEmbedder(), str(tmp_path / "s.db"), schema_policy="create_if_necessary"
    )
    try:
        batch = PendingRecordBatch(
            contents=["owls hunt at night", "a tax form is due"], record_type="fact", user_ids="u"
        )
        store.add_batches([batch])
        assert store.search("owls at night", 1, user_id="u")[0][0].content == "owls hunt at night"
        assert store.reembed(DuckEmbedder()) == 2
    finally:
        store.close()
    scorer = BiEncoderReranker(DuckEmbedder())
    response = scorer.rerank("owls", ["owls at night", "a tax form"])
    assert sorted(r.index for r in response.results) == [0, 1]


def test_a_duck_llm_extracts_memories_and_summarises(tmp_path: Path) -> None:
    llm = DuckLlm()
    config = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE)
    with OracleAgentMemory(
        connection=str(tmp_path / "llm.db"),
        embedder=HashingEmbedder(),
        llm=llm,
        memory_extraction_config=config,
    ) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I moved to Lisbon."}])
        assert [m.content for m in memory.list_memories(user_id="u1")] == ["I moved to Lisbon."]
        assert "Lisbon" in thread.get_summary().content
        # as a thread's own LLM and as the pruner of a search
        other = memory.create_thread(user_id="u2", llm=DuckLlm(), memory_extraction_config=config)
        other.add_messages([{"role": "user", "content": "I keep a parrot."}])
        assert [m.content for m in memory.list_memories(user_id="u2")] == ["I keep a parrot."]
        for i in range(5):
            memory.add_memory(f"parrot fact {i}", user_id="u2", memory_type="fact")
        pruner = DuckLlm()
        config = PruningMemorySearchConfig(pruner=pruner, protected_fraction=0.0)
        with OracleAgentMemory(
            connection=str(tmp_path / "llm.db"), embedder=HashingEmbedder(), search_config=config
        ) as pruning:
            pruned = pruning.search("parrot", user_id="u2", max_results=6)
        assert pruner.calls >= 1 and len(pruned) == 6  # the fake model keeps every result
    assert llm.calls >= 1


def test_a_duck_reranker_reorders_search(tmp_path: Path) -> None:
    reranker = DuckReranker()
    with OracleAgentMemory(
        connection=str(tmp_path / "r.db"),
        embedder=HashingEmbedder(),
        search_strategy=SearchStrategy.HYBRID,
        search_config=TopKMemorySearchConfig(reranker=reranker, reranker_max_candidates=4),
    ) as memory:
        for i in range(4):
            memory.add_memory("apples " * (i + 1), user_id="u", memory_type="fact")
        results = memory.search("apples", user_id="u", max_results=4)
        (documents,) = reranker.calls
        assert [r.content for r in results] == sorted(documents, key=len, reverse=True)


class NoAsyncEmbedder:
    def embed(self, texts: list[str], *, is_query: bool = False) -> Any:
        return np.ones((len(texts), 4), dtype=np.float32)


class SyncOnlyLlm:
    def generate(self, prompt: Any, **kwargs: Any) -> Any:
        return LlmResponse("x")


class SyncOnlyReranker:
    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> Any:
        raise AssertionError("never called")


def test_a_missing_method_is_a_type_error_naming_it(tmp_path: Path) -> None:
    db = str(tmp_path / "bad.db")
    with pytest.raises(TypeError, match=r"embedder must implement IEmbedder: .*embed_async"):
        OracleAgentMemory(connection=db, embedder=NoAsyncEmbedder())
    with pytest.raises(TypeError, match=r"embedder must implement IEmbedder: .*embed_async"):
        OracleDBMemoryStore(NoAsyncEmbedder(), db, schema_policy="create_if_necessary")
    with pytest.raises(TypeError, match=r"embedder must be an IEmbedder .*got int"):
        OracleAgentMemory(connection=db, embedder=3)
    with pytest.raises(TypeError, match=r"llm must implement ILlm: .*generate_async"):
        OracleAgentMemory(connection=db, embedder=HashingEmbedder(), llm=SyncOnlyLlm())
    with pytest.raises(TypeError, match=r"pruner_llm must implement ILlm: .*generate_async"):
        OracleAgentMemory(connection=db, embedder=HashingEmbedder(), pruner_llm=SyncOnlyLlm())
    with pytest.raises(TypeError, match=r"pruner must implement ILlm: .*generate_async"):
        PruningMemorySearchConfig(pruner=SyncOnlyLlm())
    with pytest.raises(TypeError, match=r"reranker must implement IReranker: .*rerank_async"):
        TopKMemorySearchConfig(reranker=SyncOnlyReranker())
    with pytest.raises(TypeError, match=r"embedder must implement IEmbedder: .*embed_async"):
        BiEncoderReranker(NoAsyncEmbedder())
    memory = OracleAgentMemory(connection=db, embedder=HashingEmbedder())
    try:
        with pytest.raises(TypeError, match=r"llm must implement ILlm: .*generate_async"):
            memory.create_thread(user_id="u", llm=SyncOnlyLlm())
    finally:
        memory.close()

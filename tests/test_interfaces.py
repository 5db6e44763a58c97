"""The abstract interfaces declare what the reference declares, and require no more.

``tests/typing_samples/user_impl.py`` implements them with the reference's signatures; ``make
test`` type-checks it with ``mypy --strict``. Here: those classes are concrete with our
interfaces, and our abstract members are exactly the reference's (read from its package).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis import IAgentMemory, IEmbedder, ILlm, IMemoryStore, IReranker, IThread
from oracleagentmemory.apis.embedders.embedder import embed_in_thread
from oracleagentmemory.core import OracleAgentMemory, OracleMemoryStore, OracleThread
from tests.typing_samples.user_impl import UserMemory, UserStore, UserThread

REFERENCE_ABSTRACT = {
    IThread: {
        "_do_search_async", "add_image_async", "add_memory_async", "add_messages_async",
        "agent_id", "delete_image_async", "delete_memory_async", "delete_message_async",
        "delete_record_link_async", "get_context_card_async", "get_message_async",
        "get_messages_async", "get_summary_async", "link_records_async", "list_images_async",
        "metadata", "thread_id", "update_image_async", "update_memory_async",
        "update_message_async", "update_record_link_async", "user_id",
        "wait_for_memory_extraction_async",
    },
    IMemoryStore: {
        "_add_prepared_batches", "_add_prepared_batches_async", "add_agent", "add_relations",
        "add_user", "delete", "delete_relations", "delete_thread", "get", "get_relation",
        "list", "list_relations", "list_thread_messages", "search", "update", "update_relations",
    },
    IAgentMemory: {
        "_do_search_async", "add_agent_async", "add_image_async", "add_memory_async",
        "add_user_async", "create_thread_async", "delete_agent_async", "delete_image_async",
        "delete_memory_async", "delete_record_link_async", "delete_thread_async",
        "delete_user_async", "get_thread_async", "link_records_async", "list_agents_async",
        "list_images_async", "list_memories_async", "list_messages_async", "list_threads_async",
        "list_users_async", "update_image_async", "update_memory_async",
        "update_record_link_async", "update_thread_async", "wait_for_memory_extraction_async",
    },
    IEmbedder: {"embed", "embed_async"},
    ILlm: {"generate", "generate_async"},
    IReranker: {"rerank_async"},
}  # fmt: skip
"""The reference's ``__abstractmethods__``, which ours match exactly: a subclass is concrete
here exactly when it is concrete there."""


@pytest.mark.parametrize("interface", list(REFERENCE_ABSTRACT), ids=lambda c: c.__name__)
def test_abstract_members_match_the_reference(interface: type) -> None:
    assert set(interface.__abstractmethods__) == REFERENCE_ABSTRACT[interface]


@pytest.mark.parametrize("implementation", [UserStore, UserThread, UserMemory])
def test_a_user_implementation_with_reference_signatures_is_concrete(implementation: type) -> None:
    assert not inspect.isabstract(implementation)
    implementation()


def test_our_classes_implement_the_interfaces() -> None:
    assert issubclass(OracleAgentMemory, IAgentMemory) and not inspect.isabstract(OracleAgentMemory)
    assert issubclass(OracleThread, IThread) and not inspect.isabstract(OracleThread)
    assert issubclass(OracleMemoryStore, IMemoryStore)


class _Echo(UserThread):
    async def delete_message_async(self, message_id: str) -> int:
        return len(message_id)


def test_sync_defaults_run_the_async_primitives() -> None:
    assert _Echo().delete_message("abcd") == 4


async def test_sync_defaults_work_inside_a_running_loop() -> None:
    assert _Echo().delete_message("abc") == 3


class _HubEmbedder(IEmbedder):
    """How Oracle's published custom embedders are written: embed and embed_async only."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str], *, is_query: bool = False) -> Any:
        self.calls.append(texts)
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, hash(t) % 16] = 1.0
        return out

    async def embed_async(self, texts: list[str], *, is_query: bool = False) -> Any:
        return self.embed(texts, is_query=is_query)


def test_an_embedder_needs_only_embed_and_embed_async(tmp_path: Any) -> None:
    emb = _HubEmbedder()
    assert emb.embedding_dimension == 16 and emb.embedding_dimension == 16
    assert len(emb.calls) == 1, "the dimension is probed once"
    assert emb.max_input_tokens == 512 and emb.max_input_tokens == 512
    assert len(emb.calls) == 2 and len(emb.calls[1][0]) > 1000, "one long probe, once"
    with OracleAgentMemory(
        connection=str(tmp_path / "hub.db"),
        embedder=_HubEmbedder(),
        schema_policy="create_if_necessary",
    ) as mem:
        mem.add_memory("tea with lemon", user_id="u", memory_id="m")
        assert mem.search("tea with lemon", user_id="u")[0].record.id == "m"


def test_the_embedder_probes_report_what_to_define() -> None:
    class Flat(_HubEmbedder):
        def embed(self, texts: list[str], *, is_query: bool = False) -> Any:
            return np.zeros(16, dtype=np.float32)

    class ShortOnly(_HubEmbedder):
        def embed(self, texts: list[str], *, is_query: bool = False) -> Any:
            if any(len(t) > 100 for t in texts):
                raise ValueError("input too long")
            return super().embed(texts)

    with pytest.raises(ValueError, match="2-D array"):
        _ = Flat().embedding_dimension
    with pytest.raises(RuntimeError, match="max_input_tokens property"):
        _ = ShortOnly().max_input_tokens

    class OnlyEmbed(IEmbedder):
        def embed(self, texts: list[str], *, is_query: bool = False) -> Any:
            return np.zeros((len(texts), 4), dtype=np.float32)

    with pytest.raises(TypeError, match="embed_async"):
        OnlyEmbed()  # type: ignore[abstract]

    class Threaded(OnlyEmbed):
        embed_async = embed_in_thread

    assert asyncio.run(Threaded().embed_async(["a"])).shape == (1, 4)

"""The code examples of spec page 001 (the client ``OracleAgentMemory``), run as contracts.

The page builds ``OracleAgentMemory(connection=db_pool, embedder=embedder, llm=llm)``; here the
client is this module's ``spec_client``: the bundled embedding model and, as ``llm``, a scripted
stand-in model (``tests/_fake_model.py``), so memory extraction runs in the background as on the
page (its default mode) and the deletes and waits the page describes have real work to wait for.
Each example runs on a fresh database: the page's examples each build their own client and
reuse ids (``mem-1``, ``c1``) across examples, so they are not one session.

Async examples are transcribed literally: one ``asyncio.run`` / ``anyio.run`` per statement, as
the page does, so several event loops in turn use one client. The same bodies are also awaited
inside one running loop (pytest-asyncio) at the end of this module.

Examples not written here (pruning, images, record links or Oracle-only features): the
``pruned_search_client`` (pruner_llm), ``shared_client`` (schema_owner) and
``hybrid_client`` (OracleDBEmbedder) constructors; add_image / add_image_async, list_images /
list_images_async (images); link_records, delete_record_link, update_record_link (record links).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from oracleagentmemory.core import (
    MemoryExtractionConfig,
    OracleAgentMemory,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)

from ._fake_model import fake_model
from ._llm_double import ScriptedLlm


@pytest.fixture
def spec_client(make_client: Any, local_embedder: Any) -> Any:
    """The page's ``OracleAgentMemory(connection=db_pool, embedder=embedder, llm=llm)``."""
    return make_client(embedder=local_embedder, llm=ScriptedLlm(respond=fake_model()))


# --------------------------------------------------------------------------------------------
# Constructors and configuration objects
# --------------------------------------------------------------------------------------------


def test_constructor_examples(make_client: Any, local_embedder: Any) -> None:
    # ``client`` and ``read_only_client`` from the page's first example; both clients are
    # usable, not only constructible, and the first one extracts memories.
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(embedder=local_embedder, llm=llm)
    read_only_client = make_client(
        embedder=local_embedder,
        name="read_only.db",
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    assert isinstance(client, OracleAgentMemory)
    assert isinstance(read_only_client, OracleAgentMemory)
    thread = client.create_thread(thread_id="c1", user_id="u1")
    assert thread.thread_id == "c1"
    thread.add_messages([{"role": "user", "content": "I work night shifts."}])
    client.wait_for_memory_extraction(timeout=30)
    assert [m.content for m in client.list_memories(user_id="u1")] == ["I work night shifts."]
    assert read_only_client.create_thread(thread_id="c1", user_id="u1").thread_id == "c1"
    # The imports of that example name these enums.
    assert SearchStrategy.VECTOR.value == "vector"
    assert SearchIndexSyncMode.ON_COMMIT.value == "on_commit"


def test_image_input_limit_config_example() -> None:
    from oracleagentmemory.core import ImageInputLimitConfig

    config = ImageInputLimitConfig(
        max_raw_image_bytes=16 * 1024 * 1024,
        max_images_per_llm_request=200,
    )
    assert isinstance(config, ImageInputLimitConfig)


def test_memory_extraction_config_example() -> None:
    from oracleagentmemory.core import (
        MemoryExtractionImageContext,
        MemoryExtractionMode,
        MemoryLinkExtractionMode,
    )

    config = MemoryExtractionConfig(
        extract_memories=True,
        memory_extraction_image_context=MemoryExtractionImageContext.CAPTION,
        extraction_mode=MemoryExtractionMode.BACKGROUND,
        memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
        memory_link_extraction_token_limit=8_000,
    )
    assert isinstance(config, MemoryExtractionConfig)


def test_extraction_enum_values() -> None:
    # Values where page 001 and api-signatures.md agree. MemoryExtractionImageContext's values
    # are not asserted: the page prints 'CAPTION'/'DISABLED' (and translated words), the
    # signature file 'caption'/'disabled'; only its member names are common ground.
    from oracleagentmemory.core import (
        BackgroundExtractionQueueFullBehavior,
        MemoryExtractionImageContext,
        MemoryExtractionMode,
        MemoryLinkExtractionMode,
    )

    assert MemoryExtractionMode.INLINE.value == "INLINE"
    assert MemoryExtractionMode.BACKGROUND.value == "BACKGROUND"
    assert BackgroundExtractionQueueFullBehavior.DROP.value == "DROP"
    assert BackgroundExtractionQueueFullBehavior.WAIT_THEN_DROP.value == "WAIT_THEN_DROP"
    assert BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE.value == "WAIT_THEN_RAISE"
    assert {m.name for m in MemoryLinkExtractionMode} == {
        "DISABLED",
        "DURING_EXTRACTION",
        "POST_EXTRACTION",
    }
    assert {m.name for m in MemoryExtractionImageContext} == {
        "DISABLED",
        "IMAGE",
        "CAPTION",
        "MEMORY",
    }


# --------------------------------------------------------------------------------------------
# add_agent / add_memory / add_user
# --------------------------------------------------------------------------------------------


def test_add_agent_example(spec_client: Any) -> None:
    client = spec_client
    assert (
        client.add_agent(
            "a1",
            "Support assistant",
            metadata={"source": "catalog"},
        )
        == "a1"
    )


def test_add_agent_async_example(spec_client: Any) -> None:
    client = spec_client
    assert (
        asyncio.run(
            client.add_agent_async(
                "a1",
                "Support assistant",
                metadata={"source": "catalog"},
            )
        )
        == "a1"
    )


def test_add_memory_example(spec_client: Any) -> None:
    client = spec_client
    memory_id = client.add_memory("User likes pizza", memory_id="mem-1")
    assert memory_id == "mem-1"


def test_add_memory_async_example(spec_client: Any) -> None:
    client = spec_client
    memory_id = asyncio.run(client.add_memory_async("User likes pizza", memory_id="mem-1"))
    assert memory_id == "mem-1"


def test_add_user_example(spec_client: Any) -> None:
    client = spec_client
    assert (
        client.add_user(
            "u1",
            "Prefers concise answers.",
            metadata={"source": "crm"},
        )
        == "u1"
    )


def test_add_user_async_example(spec_client: Any) -> None:
    client = spec_client
    assert (
        asyncio.run(
            client.add_user_async(
                "u1",
                "Prefers concise answers.",
                metadata={"source": "crm"},
            )
        )
        == "u1"
    )


# --------------------------------------------------------------------------------------------
# close / close_async
# --------------------------------------------------------------------------------------------


def test_close_example(make_client: Any, local_embedder: Any) -> None:
    client = make_client(
        embedder=local_embedder,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    assert client.close() is None
    # "El método es idempotente."
    assert client.close() is None


def test_close_async_example(make_client: Any, local_embedder: Any) -> None:
    client = make_client(
        embedder=local_embedder,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    assert asyncio.run(client.close_async()) is None
    assert asyncio.run(client.close_async()) is None


# --------------------------------------------------------------------------------------------
# create_thread / get_thread / delete_thread
# --------------------------------------------------------------------------------------------


def test_create_thread_example(spec_client: Any) -> None:
    client = spec_client
    thread = client.create_thread(thread_id="c1", user_id="u1")
    assert thread.thread_id == "c1"


def test_create_thread_async_example(spec_client: Any) -> None:
    client = spec_client
    thread = asyncio.run(client.create_thread_async(thread_id="c1", user_id="u1"))
    assert thread.thread_id == "c1"


def test_get_thread_example(spec_client: Any) -> None:
    client = spec_client
    created = client.create_thread(thread_id="c2", user_id="u1")
    loaded = client.get_thread("c2")
    assert loaded.user_id == "u1"
    assert created.thread_id == loaded.thread_id == "c2"


def test_get_thread_async_example(spec_client: Any) -> None:
    client = spec_client
    created = asyncio.run(client.create_thread_async(thread_id="c2", user_id="u1"))
    loaded = asyncio.run(client.get_thread_async("c2"))
    assert loaded.user_id == "u1"
    assert created.thread_id == loaded.thread_id == "c2"


def test_delete_thread_example(spec_client: Any) -> None:
    client = spec_client
    thread = client.create_thread(thread_id="c-delete")
    assert client.delete_thread(thread.thread_id) == 1


def test_delete_thread_async_example(spec_client: Any) -> None:
    client = spec_client
    thread = asyncio.run(client.create_thread_async(thread_id="c-delete"))
    assert asyncio.run(client.delete_thread_async(thread.thread_id)) == 1


# --------------------------------------------------------------------------------------------
# delete_agent / delete_memory / delete_user
# --------------------------------------------------------------------------------------------


def test_delete_agent_example(spec_client: Any) -> None:
    client = spec_client
    assert client.add_agent("a-delete", "Support assistant") == "a-delete"
    assert client.delete_agent("a-delete") == 1


def test_delete_agent_async_example(spec_client: Any) -> None:
    client = spec_client
    assert asyncio.run(client.add_agent_async("a-delete", "Support assistant")) == "a-delete"
    assert asyncio.run(client.delete_agent_async("a-delete")) == 1


def test_delete_memory_example(spec_client: Any) -> None:
    client = spec_client
    memory_id = client.add_memory("Temporary memory", memory_id="mem-delete")
    assert client.delete_memory(memory_id) == 1


def test_delete_memory_async_example(spec_client: Any) -> None:
    client = spec_client
    memory_id = asyncio.run(client.add_memory_async("Temporary memory", memory_id="mem-delete"))
    assert asyncio.run(client.delete_memory_async(memory_id)) == 1


def test_delete_user_example(spec_client: Any) -> None:
    client = spec_client
    assert client.add_user("u-delete", "Prefers concise answers.") == "u-delete"
    assert client.delete_user("u-delete") == 1


def test_delete_user_async_example(spec_client: Any) -> None:
    client = spec_client
    assert asyncio.run(client.add_user_async("u-delete", "Prefers concise answers.")) == "u-delete"
    assert asyncio.run(client.delete_user_async("u-delete")) == 1


# --------------------------------------------------------------------------------------------
# list_agents / list_memories / list_messages / list_threads / list_users
# --------------------------------------------------------------------------------------------


def test_list_agents_example(spec_client: Any) -> None:
    client = spec_client
    assert client.add_agent("a1", "Support assistant", metadata={"source": "catalog"}) == "a1"
    assert [record.id for record in client.list_agents(metadata_filter={"source": "catalog"})] == [
        "a1"
    ]


def test_list_agents_async_example(spec_client: Any) -> None:
    client = spec_client

    async def main() -> list[str]:
        await client.add_agent_async(
            "a1",
            "Support assistant",
            metadata={"source": "catalog"},
        )
        records = await client.list_agents_async(metadata_filter={"source": "catalog"})
        return [record.id for record in records]

    assert anyio.run(main) == ["a1"]


def test_list_memories_example(spec_client: Any) -> None:
    client = spec_client
    assert client.add_memory("User likes pizza.", user_id="u1", memory_id="mem-1") == "mem-1"
    assert [record.id for record in client.list_memories(user_id="u1", limit=10)] == ["mem-1"]


def test_list_memories_async_example(spec_client: Any) -> None:
    client = spec_client

    async def main() -> list[str]:
        await client.add_memory_async("User likes pizza.", user_id="u1", memory_id="mem-1")
        records = await client.list_memories_async(user_id="u1", limit=10)
        return [record.id for record in records]

    assert anyio.run(main) == ["mem-1"]


def test_list_messages_example(spec_client: Any) -> None:
    client = spec_client
    thread = client.create_thread(thread_id="c1", user_id="u1")
    message_id = thread.add_messages([{"role": "user", "content": "Hello"}])[0]
    assert (
        [record.id for record in client.list_messages(thread_id="c1", limit=10)] == [message_id]
    ) is True


def test_list_messages_async_example(spec_client: Any) -> None:
    client = spec_client

    async def main() -> bool:
        thread = await client.create_thread_async(thread_id="c1", user_id="u1")
        message_ids = await thread.add_messages_async([{"role": "user", "content": "Hello"}])
        records = await client.list_messages_async(thread_id="c1", limit=10)
        return [record.id for record in records] == message_ids

    assert anyio.run(main) is True


def test_list_threads_example(spec_client: Any) -> None:
    client = spec_client
    assert client.create_thread(thread_id="c1", user_id="u1").thread_id == "c1"
    assert [record.thread_id for record in client.list_threads(user_id="u1", limit=10)] == ["c1"]


def test_list_threads_async_example(spec_client: Any) -> None:
    client = spec_client

    async def main() -> list[str]:
        await client.create_thread_async(thread_id="c1", user_id="u1")
        records = await client.list_threads_async(user_id="u1", limit=10)
        return [record.thread_id for record in records]

    assert anyio.run(main) == ["c1"]


def test_list_users_example(spec_client: Any) -> None:
    client = spec_client
    assert client.add_user("u1", "Prefers concise answers.", metadata={"source": "crm"}) == "u1"
    assert [record.id for record in client.list_users(metadata_filter={"source": "crm"})] == ["u1"]


def test_list_users_async_example(spec_client: Any) -> None:
    client = spec_client

    async def main() -> list[str]:
        await client.add_user_async(
            "u1",
            "Prefers concise answers.",
            metadata={"source": "crm"},
        )
        records = await client.list_users_async(metadata_filter={"source": "crm"})
        return [record.id for record in records]

    assert anyio.run(main) == ["u1"]


# --------------------------------------------------------------------------------------------
# update_memory / update_thread
# --------------------------------------------------------------------------------------------


def test_update_memory_sync_form_of_the_example(spec_client: Any) -> None:
    # The page shows this example under update_memory_async only; the sync form is the same
    # contract without the event loop.
    client = spec_client
    memory_id = client.add_memory("Original memory")
    assert (client.update_memory(memory_id, content="Updated memory") == memory_id) is True


def test_update_memory_async_example(spec_client: Any) -> None:
    client = spec_client
    memory_id = asyncio.run(client.add_memory_async("Original memory"))
    assert (
        asyncio.run(client.update_memory_async(memory_id, content="Updated memory")) == memory_id
    ) is True


def test_update_thread_example(spec_client: Any) -> None:
    client = spec_client
    # The example updates "c1", the thread the create_thread example made; create it first.
    client.create_thread(thread_id="c1", user_id="u1")
    updated = client.update_thread(
        "c1",
        metadata={"flags": {"vip": True}},
        message_shortening_input_token_limit=12_000,
    )
    assert updated.message_shortening_input_token_limit == 12000


def test_update_thread_async_form(spec_client: Any) -> None:
    # update_thread_async has no example; it takes the same values through **kwargs.
    client = spec_client
    client.create_thread(thread_id="c1", user_id="u1")
    updated = asyncio.run(
        client.update_thread_async(
            "c1",
            metadata={"flags": {"vip": True}},
            message_shortening_input_token_limit=12_000,
        )
    )
    assert updated.message_shortening_input_token_limit == 12000


# --------------------------------------------------------------------------------------------
# wait_for_memory_extraction
# --------------------------------------------------------------------------------------------


def test_wait_for_memory_extraction_example(make_client: Any, local_embedder: Any) -> None:
    client = make_client(
        embedder=local_embedder,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    assert client.wait_for_memory_extraction(timeout=10) is None


def test_wait_for_memory_extraction_async_example(make_client: Any, local_embedder: Any) -> None:
    client = make_client(
        embedder=local_embedder,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    assert asyncio.run(client.wait_for_memory_extraction_async(timeout=10)) is None


# --------------------------------------------------------------------------------------------
# The async examples again, awaited inside one running event loop
# --------------------------------------------------------------------------------------------


async def _add_agent(client: Any) -> list[Any]:
    return [await client.add_agent_async("a1", "Support assistant", metadata={"source": "catalog"})]


async def _add_memory(client: Any) -> list[Any]:
    return [await client.add_memory_async("User likes pizza", memory_id="mem-1")]


async def _add_user(client: Any) -> list[Any]:
    return [
        await client.add_user_async("u1", "Prefers concise answers.", metadata={"source": "crm"})
    ]


async def _create_thread(client: Any) -> list[Any]:
    thread = await client.create_thread_async(thread_id="c1", user_id="u1")
    return [thread.thread_id]


async def _get_thread(client: Any) -> list[Any]:
    await client.create_thread_async(thread_id="c2", user_id="u1")
    loaded = await client.get_thread_async("c2")
    return [loaded.user_id]


async def _delete_thread(client: Any) -> list[Any]:
    thread = await client.create_thread_async(thread_id="c-delete")
    return [await client.delete_thread_async(thread.thread_id)]


async def _delete_agent(client: Any) -> list[Any]:
    return [
        await client.add_agent_async("a-delete", "Support assistant"),
        await client.delete_agent_async("a-delete"),
    ]


async def _delete_memory(client: Any) -> list[Any]:
    memory_id = await client.add_memory_async("Temporary memory", memory_id="mem-delete")
    return [await client.delete_memory_async(memory_id)]


async def _delete_user(client: Any) -> list[Any]:
    return [
        await client.add_user_async("u-delete", "Prefers concise answers."),
        await client.delete_user_async("u-delete"),
    ]


async def _list_agents(client: Any) -> list[Any]:
    await client.add_agent_async("a1", "Support assistant", metadata={"source": "catalog"})
    records = await client.list_agents_async(metadata_filter={"source": "catalog"})
    return [[record.id for record in records]]


async def _list_memories(client: Any) -> list[Any]:
    await client.add_memory_async("User likes pizza.", user_id="u1", memory_id="mem-1")
    records = await client.list_memories_async(user_id="u1", limit=10)
    return [[record.id for record in records]]


async def _list_messages(client: Any) -> list[Any]:
    thread = await client.create_thread_async(thread_id="c1", user_id="u1")
    message_ids = await thread.add_messages_async([{"role": "user", "content": "Hello"}])
    records = await client.list_messages_async(thread_id="c1", limit=10)
    return [[record.id for record in records] == message_ids]


async def _list_threads(client: Any) -> list[Any]:
    await client.create_thread_async(thread_id="c1", user_id="u1")
    records = await client.list_threads_async(user_id="u1", limit=10)
    return [[record.thread_id for record in records]]


async def _list_users(client: Any) -> list[Any]:
    await client.add_user_async("u1", "Prefers concise answers.", metadata={"source": "crm"})
    records = await client.list_users_async(metadata_filter={"source": "crm"})
    return [[record.id for record in records]]


async def _update_memory(client: Any) -> list[Any]:
    memory_id = await client.add_memory_async("Original memory")
    return [await client.update_memory_async(memory_id, content="Updated memory") == memory_id]


async def _update_thread(client: Any) -> list[Any]:
    await client.create_thread_async(thread_id="c1", user_id="u1")
    updated = await client.update_thread_async(
        "c1", metadata={"flags": {"vip": True}}, message_shortening_input_token_limit=12_000
    )
    return [updated.message_shortening_input_token_limit]


async def _wait_for_memory_extraction(client: Any) -> list[Any]:
    return [await client.wait_for_memory_extraction_async(timeout=10)]


_ASYNC_EXAMPLES: dict[str, tuple[Callable[[Any], Awaitable[list[Any]]], list[Any]]] = {
    "add_agent_async": (_add_agent, ["a1"]),
    "add_memory_async": (_add_memory, ["mem-1"]),
    "add_user_async": (_add_user, ["u1"]),
    "create_thread_async": (_create_thread, ["c1"]),
    "get_thread_async": (_get_thread, ["u1"]),
    "delete_thread_async": (_delete_thread, [1]),
    "delete_agent_async": (_delete_agent, ["a-delete", 1]),
    "delete_memory_async": (_delete_memory, [1]),
    "delete_user_async": (_delete_user, ["u-delete", 1]),
    "list_agents_async": (_list_agents, [["a1"]]),
    "list_memories_async": (_list_memories, [["mem-1"]]),
    "list_messages_async": (_list_messages, [True]),
    "list_threads_async": (_list_threads, [["c1"]]),
    "list_users_async": (_list_users, [["u1"]]),
    "update_memory_async": (_update_memory, [True]),
    "update_thread_async": (_update_thread, [12000]),
    "wait_for_memory_extraction_async": (_wait_for_memory_extraction, [None]),
}


@pytest.mark.parametrize("name", sorted(_ASYNC_EXAMPLES))
async def test_async_examples_awaited_in_a_running_loop(spec_client: Any, name: str) -> None:
    body, printed = _ASYNC_EXAMPLES[name]
    assert await body(spec_client) == printed


async def test_close_async_awaited_in_a_running_loop(make_client: Any, local_embedder: Any) -> None:
    client = make_client(
        embedder=local_embedder,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    assert await client.close_async() is None
    assert await client.close_async() is None

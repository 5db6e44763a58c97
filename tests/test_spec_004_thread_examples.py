"""The code examples of spec page 004 (``OracleThread``, ``Message``, ``OracleContextCard``,
``OracleSummary``), run as contracts against the bundled embedding model.

The page's thread comes from ``client.create_thread(thread_id="c1", llm=llm,
enable_context_summary=True)`` on ``OracleAgentMemory(connection=db_pool, embedder=embedder)``.
Here the client is ``spec_client`` and the LLM is dropped: no printed value of this page depends
on it. ``enable_context_summary=True`` is kept in the constructor example (reading: without an
LLM the running summary is simply never refreshed; the page says it is updated "when an llm is
provided").

Each example runs once on a fresh thread, and the whole page runs once more in page order on one
thread (the docs run it as one session); every printed value holds in both. Async twins (the
page lists add_messages_async, get_context_card_async, get_summary_async) assert the same values
awaited in a running loop.

No example of this page is skipped: none needs an LLM, images or record links.
"""

from __future__ import annotations

from typing import Any

from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.summary import OracleSummary


def _thread(client: Any) -> Any:
    return client.create_thread(thread_id="c1")


async def _thread_async(client: Any) -> Any:
    return await client.create_thread_async(thread_id="c1")


# --------------------------------------------------------------------------------------------
# OracleThread
# --------------------------------------------------------------------------------------------


def test_oracle_thread_example(spec_client: Any) -> None:
    client = spec_client
    thread = client.create_thread(
        thread_id="c1",
        enable_context_summary=True,
    )
    assert len(thread.add_messages([{"role": "user", "content": "I love pizza."}])) == 1


async def test_oracle_thread_example_async(spec_client: Any) -> None:
    thread = await spec_client.create_thread_async(thread_id="c1", enable_context_summary=True)
    assert len(await thread.add_messages_async([{"role": "user", "content": "I love pizza."}])) == 1


def test_add_memory_example(spec_client: Any) -> None:
    thread = _thread(spec_client)
    assert thread.add_memory("Remember this preference", memory_id="mem-thread-docs") == (
        "mem-thread-docs"
    )


async def test_add_memory_example_async(spec_client: Any) -> None:
    thread = await _thread_async(spec_client)
    assert (
        await thread.add_memory_async("Remember this preference", memory_id="mem-thread-docs")
        == "mem-thread-docs"
    )


def test_add_messages_example(spec_client: Any) -> None:
    thread = _thread(spec_client)
    assert len(thread.add_messages([{"role": "user", "content": "Thread message from docs"}])) == 1


async def test_add_messages_example_async(spec_client: Any) -> None:
    thread = await _thread_async(spec_client)
    ids = await thread.add_messages_async([{"role": "user", "content": "Thread message from docs"}])
    assert len(ids) == 1


def test_delete_memory_example(spec_client: Any) -> None:
    thread = _thread(spec_client)
    assert thread.delete_memory("456") == 0


async def test_delete_memory_example_async(spec_client: Any) -> None:
    thread = await _thread_async(spec_client)
    assert await thread.delete_memory_async("456") == 0


def test_delete_message_example(spec_client: Any) -> None:
    thread = _thread(spec_client)
    assert thread.delete_message("123") == 0


async def test_delete_message_example_async(spec_client: Any) -> None:
    thread = await _thread_async(spec_client)
    assert await thread.delete_message_async("123") == 0


def test_get_context_card_example(spec_client: Any) -> None:
    thread = _thread(spec_client)
    assert thread.add_memory("User likes pizza", memory_id="mem-context-docs") == (
        "mem-context-docs"
    )
    assert len(thread.add_messages([{"role": "user", "content": "Tell me about pizza"}])) == 1
    assert ("User likes pizza" in thread.get_context_card().content) is True


async def test_get_context_card_example_async(spec_client: Any) -> None:
    thread = await _thread_async(spec_client)
    assert (
        await thread.add_memory_async("User likes pizza", memory_id="mem-context-docs")
        == "mem-context-docs"
    )
    ids = await thread.add_messages_async([{"role": "user", "content": "Tell me about pizza"}])
    assert len(ids) == 1
    card = await thread.get_context_card_async()
    assert isinstance(card, OracleContextCard)
    assert ("User likes pizza" in card.content) is True


def test_get_messages_example(spec_client: Any) -> None:
    thread = _thread(spec_client)
    assert len(thread.add_messages([{"role": "user", "content": "Stored message example"}])) == 1
    messages = thread.get_messages()
    assert messages[-1].content == "Stored message example"
    assert isinstance(messages[-1], Message)


async def test_get_messages_example_async(spec_client: Any) -> None:
    thread = await _thread_async(spec_client)
    await thread.add_messages_async([{"role": "user", "content": "Stored message example"}])
    messages = await thread.get_messages_async()
    assert messages[-1].content == "Stored message example"


def test_get_summary_example(spec_client: Any) -> None:
    thread = _thread(spec_client)
    assert (
        len(thread.add_messages([{"role": "assistant", "content": "Summary source message"}])) == 1
    )
    summary = thread.get_summary()
    assert isinstance(summary, OracleSummary)
    assert bool(summary.content) is True


async def test_get_summary_example_async(spec_client: Any) -> None:
    thread = await _thread_async(spec_client)
    await thread.add_messages_async([{"role": "assistant", "content": "Summary source message"}])
    summary = await thread.get_summary_async()
    assert isinstance(summary, OracleSummary)
    assert bool(summary.content) is True


def test_page_examples_in_order_on_one_thread(spec_client: Any) -> None:
    client = spec_client
    thread = client.create_thread(thread_id="c1", enable_context_summary=True)
    assert len(thread.add_messages([{"role": "user", "content": "I love pizza."}])) == 1
    assert thread.add_memory("Remember this preference", memory_id="mem-thread-docs") == (
        "mem-thread-docs"
    )
    assert len(thread.add_messages([{"role": "user", "content": "Thread message from docs"}])) == 1
    assert thread.delete_memory("456") == 0
    assert thread.delete_message("123") == 0
    assert thread.add_memory("User likes pizza", memory_id="mem-context-docs") == (
        "mem-context-docs"
    )
    assert len(thread.add_messages([{"role": "user", "content": "Tell me about pizza"}])) == 1
    assert ("User likes pizza" in thread.get_context_card().content) is True
    assert len(thread.add_messages([{"role": "user", "content": "Stored message example"}])) == 1
    messages = thread.get_messages()
    assert messages[-1].content == "Stored message example"
    assert (
        len(thread.add_messages([{"role": "assistant", "content": "Summary source message"}])) == 1
    )
    summary = thread.get_summary()
    assert bool(summary.content) is True


# --------------------------------------------------------------------------------------------
# OracleContextCard
# --------------------------------------------------------------------------------------------


def test_context_card_content_example() -> None:
    card = OracleContextCard(summary="ctx")
    assert ("<summary>" in card.content and "ctx" in card.content) is True


def test_context_card_formatted_content_examples() -> None:
    assert OracleContextCard(summary="").formatted_content == ""
    card = OracleContextCard(summary="ctx", topics=["travel"])
    assert ("<topics>" in card.formatted_content) is True


def test_context_card_import_paths_agree() -> None:
    from oracleagentmemory.core import OracleContextCard as FromCore

    assert FromCore is OracleContextCard


# --------------------------------------------------------------------------------------------
# OracleSummary
# --------------------------------------------------------------------------------------------


def test_summary_examples() -> None:
    summary = OracleSummary(content="Plan the Rome itinerary.")
    assert summary.content == "Plan the Rome itinerary."
    assert str(summary) == "Plan the Rome itinerary."


def test_summary_content_example() -> None:
    assert OracleSummary(content="Keep the tea preference in mind.").content == (
        "Keep the tea preference in mind."
    )


def test_summary_formatted_content_example() -> None:
    assert OracleSummary(content="Thread recap").formatted_content == "Thread recap"


def test_summary_import_paths_agree() -> None:
    from oracleagentmemory.core import OracleSummary as FromCore

    assert FromCore is OracleSummary


# --------------------------------------------------------------------------------------------
# Message
# --------------------------------------------------------------------------------------------


def test_message_fields_and_defaults() -> None:
    message = Message(role="user", content="hi")
    assert (message.role, message.content) == ("user", "hi")
    assert message.timestamp is None
    assert message.metadata is None
    assert message.id is None
    full = Message(
        role="assistant",
        content="hello",
        timestamp="2025-01-01T00:00:00+00:00",
        metadata={"k": 1},
        id="msg-1",
    )
    assert (full.timestamp, full.metadata, full.id) == (
        "2025-01-01T00:00:00+00:00",
        {"k": 1},
        "msg-1",
    )

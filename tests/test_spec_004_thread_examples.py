"""The code examples of spec page 004 (``OracleThread``, ``Message``, ``OracleContextCard``,
``OracleSummary``), run as contracts against the bundled embedding model.

The page's thread comes from ``client.create_thread(thread_id="c1", llm=llm,
enable_context_summary=True)`` on ``OracleAgentMemory(connection=db_pool, embedder=embedder)``.
Here the client is ``spec_client`` and every thread example runs twice: with ``llm`` a scripted
stand-in model (``tests/_fake_model.py``: memory extraction in the background and the running
LLM summary are on, as on the page), and without an LLM (the transcript fallback). Every printed
value holds in both.

Each example runs once on a fresh thread, and the whole page runs once more in page order on one
thread (the docs run it as one session); every printed value holds in both. Async twins (the
page lists add_messages_async, get_context_card_async, get_summary_async) assert the same values
awaited in a running loop.

No example of this page is skipped: none needs an LLM, images or record links.
"""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.summary import OracleSummary

from ._fake_model import fake_model
from ._llm_double import ScriptedLlm


@pytest.fixture(params=["llm", "no-llm"])
def page_llm(request: pytest.FixtureRequest) -> Any:
    """The page's ``llm`` (a scripted stand-in model), or None for the no-LLM fallback."""
    return ScriptedLlm(respond=fake_model()) if request.param == "llm" else None


def _llm_kwargs(llm: Any) -> dict[str, Any]:
    if llm is None:
        return {}
    from oracleagentmemory.core import MemoryExtractionConfig

    return {
        "llm": llm,
        "memory_extraction_config": MemoryExtractionConfig(enable_context_summary=True),
    }


def _thread(client: Any, llm: Any) -> Any:
    return client.create_thread(thread_id="c1", **_llm_kwargs(llm))


async def _thread_async(client: Any, llm: Any) -> Any:
    return await client.create_thread_async(thread_id="c1", **_llm_kwargs(llm))


# --------------------------------------------------------------------------------------------
# OracleThread
# --------------------------------------------------------------------------------------------


def test_oracle_thread_example(spec_client: Any, page_llm: Any) -> None:
    client = spec_client
    thread = client.create_thread(
        thread_id="c1",
        **({} if page_llm is None else {"llm": page_llm}),
        enable_context_summary=True,
    )
    assert len(thread.add_messages([{"role": "user", "content": "I love pizza."}])) == 1


async def test_oracle_thread_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await spec_client.create_thread_async(thread_id="c1", **_llm_kwargs(page_llm))
    assert len(await thread.add_messages_async([{"role": "user", "content": "I love pizza."}])) == 1


def test_add_memory_example(spec_client: Any, page_llm: Any) -> None:
    thread = _thread(spec_client, page_llm)
    assert thread.add_memory("Remember this preference", memory_id="mem-thread-docs") == (
        "mem-thread-docs"
    )


async def test_add_memory_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await _thread_async(spec_client, page_llm)
    assert (
        await thread.add_memory_async("Remember this preference", memory_id="mem-thread-docs")
        == "mem-thread-docs"
    )


def test_add_messages_example(spec_client: Any, page_llm: Any) -> None:
    thread = _thread(spec_client, page_llm)
    assert len(thread.add_messages([{"role": "user", "content": "Thread message from docs"}])) == 1


async def test_add_messages_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await _thread_async(spec_client, page_llm)
    ids = await thread.add_messages_async([{"role": "user", "content": "Thread message from docs"}])
    assert len(ids) == 1


def test_delete_memory_example(spec_client: Any, page_llm: Any) -> None:
    thread = _thread(spec_client, page_llm)
    assert thread.delete_memory("456") == 0


async def test_delete_memory_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await _thread_async(spec_client, page_llm)
    assert await thread.delete_memory_async("456") == 0


def test_delete_message_example(spec_client: Any, page_llm: Any) -> None:
    thread = _thread(spec_client, page_llm)
    assert thread.delete_message("123") == 0


async def test_delete_message_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await _thread_async(spec_client, page_llm)
    assert await thread.delete_message_async("123") == 0


def test_get_context_card_example(spec_client: Any, page_llm: Any) -> None:
    thread = _thread(spec_client, page_llm)
    assert thread.add_memory("User likes pizza", memory_id="mem-context-docs") == (
        "mem-context-docs"
    )
    assert len(thread.add_messages([{"role": "user", "content": "Tell me about pizza"}])) == 1
    assert ("User likes pizza" in thread.get_context_card().content) is True


async def test_get_context_card_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await _thread_async(spec_client, page_llm)
    assert (
        await thread.add_memory_async("User likes pizza", memory_id="mem-context-docs")
        == "mem-context-docs"
    )
    ids = await thread.add_messages_async([{"role": "user", "content": "Tell me about pizza"}])
    assert len(ids) == 1
    card = await thread.get_context_card_async()
    assert isinstance(card, OracleContextCard)
    assert ("User likes pizza" in card.content) is True


def test_get_messages_example(spec_client: Any, page_llm: Any) -> None:
    thread = _thread(spec_client, page_llm)
    assert len(thread.add_messages([{"role": "user", "content": "Stored message example"}])) == 1
    messages = thread.get_messages()
    assert messages[-1].content == "Stored message example"
    assert isinstance(messages[-1], Message)


async def test_get_messages_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await _thread_async(spec_client, page_llm)
    await thread.add_messages_async([{"role": "user", "content": "Stored message example"}])
    messages = await thread.get_messages_async()
    assert messages[-1].content == "Stored message example"


def test_get_summary_example(spec_client: Any, page_llm: Any) -> None:
    thread = _thread(spec_client, page_llm)
    assert (
        len(thread.add_messages([{"role": "assistant", "content": "Summary source message"}])) == 1
    )
    summary = thread.get_summary()
    assert isinstance(summary, OracleSummary)
    assert bool(summary.content) is True


async def test_get_summary_example_async(spec_client: Any, page_llm: Any) -> None:
    thread = await _thread_async(spec_client, page_llm)
    await thread.add_messages_async([{"role": "assistant", "content": "Summary source message"}])
    summary = await thread.get_summary_async()
    assert isinstance(summary, OracleSummary)
    assert bool(summary.content) is True


def test_page_examples_in_order_on_one_thread(spec_client: Any, page_llm: Any) -> None:
    client = spec_client
    thread = client.create_thread(thread_id="c1", **_llm_kwargs(page_llm))
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
    if page_llm is not None:  # the LLM did its part: memories and a running summary
        thread.wait_for_memory_extraction(timeout=30)
        extracted = {m.content for m in client.list_memories(thread_id="c1")}
        assert {"I love pizza.", "Tell me about pizza"} <= extracted
        assert client.store.get("thread_summary", "c1") is not None


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

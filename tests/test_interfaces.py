"""The abstract interfaces declare what the reference declares, and require no more.

``tests/typing_samples/user_impl.py`` implements them with the reference's signatures; ``make
test`` type-checks it with ``mypy --strict``. Here: those classes are concrete with our
interfaces, and our abstract members are exactly the reference's (read from its package).
"""

from __future__ import annotations

import inspect

import pytest

from oracleagentmemory.apis import IAgentMemory, IMemoryStore, IThread
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
        "_add_prepared_batches", "add_agent", "add_relations", "add_user", "delete",
        "delete_relations", "delete_thread", "get", "get_relation", "list", "list_relations",
        "list_thread_messages", "search", "update", "update_relations",
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
}  # fmt: skip
"""The reference's ``__abstractmethods__`` (its ``_add_prepared_batches_async`` is concrete
here: a default that runs the sync primitive in a worker thread)."""


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

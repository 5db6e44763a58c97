"""Which public methods of ``OracleAgentMemory`` and ``OracleThread`` emit observability events
(``observability._instrument.instrument`` wraps them), with the operation kind each reports,
and the scope a thread's events carry."""

from __future__ import annotations

from typing import Any, Final

from oracleagentmemory.apis.thread import IThread
from oracleagentmemory.observability._kinds import OperationKind

SHARED_OPERATIONS: Final = {
    "add_memory": OperationKind.CREATE,
    "update_memory": OperationKind.UPDATE,
    "delete_memory": OperationKind.DELETE,
    "add_image": OperationKind.CREATE,
    "list_images": OperationKind.READ,
    "update_image": OperationKind.UPDATE,
    "delete_image": OperationKind.DELETE,
    "link_records": OperationKind.CREATE,
    "update_record_link": OperationKind.UPDATE,
    "delete_record_link": OperationKind.DELETE,
    "search": OperationKind.READ,
    "wait_for_memory_extraction": OperationKind.UNKNOWN,
}
"""The memory, image, link, search and wait methods both classes have, with one kind each."""

CLIENT_OPERATIONS: Final = {
    "add_user": OperationKind.CREATE,
    "add_agent": OperationKind.CREATE,
    "list_users": OperationKind.READ,
    "list_agents": OperationKind.READ,
    "delete_user": OperationKind.DELETE,
    "delete_agent": OperationKind.DELETE,
    "list_memories": OperationKind.READ,
    "get_memory_history": OperationKind.READ,
    "list_messages": OperationKind.READ,
    "create_thread": OperationKind.CREATE,
    "get_thread": OperationKind.READ,
    "update_thread": OperationKind.UPDATE,
    "list_threads": OperationKind.READ,
    "delete_thread": OperationKind.DELETE,
    "close": OperationKind.UNKNOWN,
    **SHARED_OPERATIONS,
}
"""``OracleAgentMemory``'s public methods that emit observability events."""

THREAD_OPERATIONS: Final = {
    "add_messages": OperationKind.CREATE,
    "get_messages": OperationKind.READ,
    "get_message": OperationKind.READ,
    "delete_message": OperationKind.DELETE,
    "update_message": OperationKind.UPDATE,
    "get_context_card": OperationKind.READ,
    "get_summary": OperationKind.READ,
    **SHARED_OPERATIONS,
}
"""``OracleThread``'s public methods that emit observability events."""


def thread_scope(thread: IThread) -> dict[str, Any]:
    """The scope an ``OracleThread``'s events carry: its thread, user and agent ids."""
    return {"thread_id": thread.thread_id, "user_id": thread.user_id, "agent_id": thread.agent_id}

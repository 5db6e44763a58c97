"""Public observability events and listener APIs.

Register listeners with ``register_event_listeners([...])`` (a context manager); every public
operation of the client, threads, stores, embedders and LLM adapters then emits a started and
a completed event (with duration, argument and result summaries, and the error type when it
fails). Nothing is built while no listener is registered.
"""

from typing import TYPE_CHECKING

from oracleagentmemory._lazy import lazy_exports

if TYPE_CHECKING:
    from oracleagentmemory.observability.event import (
        AgentMemoryCompletedEvent,
        AgentMemoryStartedEvent,
        ApiOperationCompletedEvent,
        ApiOperationStartedEvent,
        EmbedderCompletedEvent,
        EmbedderStartedEvent,
        Event,
        LlmGenerationCompletedEvent,
        LlmGenerationStartedEvent,
        MemoryStoreCompletedEvent,
        MemoryStoreStartedEvent,
        OperationKind,
        ThreadCompletedEvent,
        ThreadStartedEvent,
    )
    from oracleagentmemory.observability.eventlistener import (
        EventListener,
        GenericEventListener,
        emit_event,
        register_event_listeners,
    )

_EXPORTS = {
    "oracleagentmemory.observability.event": (
        "AgentMemoryCompletedEvent",
        "AgentMemoryStartedEvent",
        "ApiOperationCompletedEvent",
        "ApiOperationStartedEvent",
        "EmbedderCompletedEvent",
        "EmbedderStartedEvent",
        "Event",
        "LlmGenerationCompletedEvent",
        "LlmGenerationStartedEvent",
        "MemoryStoreCompletedEvent",
        "MemoryStoreStartedEvent",
        "OperationKind",
        "ThreadCompletedEvent",
        "ThreadStartedEvent",
    ),
    "oracleagentmemory.observability.eventlistener": (
        "EventListener",
        "GenericEventListener",
        "emit_event",
        "register_event_listeners",
    ),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "AgentMemoryCompletedEvent",
    "AgentMemoryStartedEvent",
    "ApiOperationCompletedEvent",
    "ApiOperationStartedEvent",
    "EmbedderCompletedEvent",
    "EmbedderStartedEvent",
    "Event",
    "EventListener",
    "GenericEventListener",
    "LlmGenerationCompletedEvent",
    "LlmGenerationStartedEvent",
    "MemoryStoreCompletedEvent",
    "MemoryStoreStartedEvent",
    "OperationKind",
    "ThreadCompletedEvent",
    "ThreadStartedEvent",
    "emit_event",
    "register_event_listeners",
]

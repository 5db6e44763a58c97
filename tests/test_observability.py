"""Observability: every public operation emits a started/completed pair to registered listeners."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.embedders import Embedder
from oracleagentmemory.observability import (
    AgentMemoryCompletedEvent,
    AgentMemoryStartedEvent,
    EmbedderCompletedEvent,
    EmbedderStartedEvent,
    Event,
    EventListener,
    GenericEventListener,
    MemoryStoreStartedEvent,
    OperationKind,
    ThreadCompletedEvent,
    ThreadStartedEvent,
    emit_event,
    register_event_listeners,
)
from tests._openai_server import FakeOpenAIServer


class Recorder(EventListener):
    def __init__(self, include_vectors: bool = False) -> None:
        self.events: list[Event] = []
        self.include_embedding_vectors = include_vectors

    def on_event(self, event: Event) -> None:
        self.events.append(event)

    def names(self) -> list[str]:
        return [event.event_name for event in self.events]


class Exploding(EventListener):
    def on_event(self, event: Event) -> None:
        raise RuntimeError("listener bug")


def test_client_thread_and_store_calls_emit_event_pairs(client: OracleAgentMemory) -> None:
    recorder = Recorder()
    with register_event_listeners([recorder]) as active:
        assert active == [recorder]
        thread = client.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
        thread.add_messages([{"role": "user", "content": "I like tea"}])
        results = client.search("tea", user_id="u1")
    names = recorder.names()
    assert names[0] == "agent_memory.create_thread.started"
    assert "thread.add_messages.started" in names and "thread.add_messages.completed" in names
    assert "memory_store.search.started" in names
    assert names[-1] == "agent_memory.search.completed"
    started = [e for e in recorder.events if isinstance(e, AgentMemoryStartedEvent)][-1]
    completed = [e for e in recorder.events if isinstance(e, AgentMemoryCompletedEvent)][-1]
    assert started.method == "search" and started.operation_kind is OperationKind.READ
    assert started.arguments is not None and started.arguments["query"] == "tea"
    assert started.argument_summary is not None
    assert started.argument_summary["query"] == {"length": 3}
    assert completed.started_event_id == started.event_id and completed.success
    assert completed.result_summary == {"result": {"count": len(results), "null_count": 0}}
    assert completed.duration_ms is not None and completed.duration_ms >= 0
    thread_event = next(e for e in recorder.events if isinstance(e, ThreadStartedEvent))
    assert (thread_event.thread_id, thread_event.user_id, thread_event.agent_id) == (
        "t1",
        "u1",
        "a1",
    )
    assert thread_event.concrete_class == "OracleThread"


def test_failures_are_reported_and_still_raised(client: OracleAgentMemory) -> None:
    recorder = Recorder()
    thread = client.create_thread(thread_id="t1", user_id="u1")
    with register_event_listeners([recorder]), pytest.raises(TypeError):
        thread.search(3)  # type: ignore[arg-type]
    completed = [e for e in recorder.events if isinstance(e, ThreadCompletedEvent)]
    assert completed[-1].success is False and completed[-1].error_type == "TypeError"


def test_a_listener_that_raises_never_breaks_the_call(client: OracleAgentMemory) -> None:
    recorder = Recorder()
    with register_event_listeners([Exploding(), recorder]):
        assert client.add_user("u1", "likes tea") == "u1"
    assert "agent_memory.add_user.completed" in recorder.names()


def test_nothing_is_emitted_outside_a_registration(client: OracleAgentMemory) -> None:
    recorder = Recorder()
    with register_event_listeners([recorder]):
        pass
    client.add_user("u1", "likes tea")
    assert recorder.events == []


def test_nested_registrations_add_and_remove_listeners() -> None:
    outer, inner = Recorder(), Recorder()
    event = Event(event_id="ev_1", component="thread", event_name="thread.search.started")
    with register_event_listeners([outer]):
        with register_event_listeners([inner]) as active:
            assert active == [outer, inner]
            emit_event(event)
        emit_event(event)
    assert len(outer.events) == 2 and len(inner.events) == 1


def test_generic_listener_and_subscriptions_filter_event_types(client: OracleAgentMemory) -> None:
    seen: list[ThreadStartedEvent] = []
    with register_event_listeners([GenericEventListener(ThreadStartedEvent, seen.append)]):
        thread = client.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "hi"}])
    assert seen and all(isinstance(e, ThreadStartedEvent) for e in seen)
    with pytest.raises(TypeError):
        GenericEventListener(dict, print)  # type: ignore[arg-type]


def test_registration_is_context_local() -> None:
    recorder = Recorder()
    event = Event(event_id="ev_1", component="x", event_name="x.y.started")
    other_thread: list[int] = []

    def emit_elsewhere() -> None:
        emit_event(event)
        other_thread.append(len(recorder.events))

    with register_event_listeners([recorder]):
        worker = threading.Thread(target=emit_elsewhere)
        worker.start()
        worker.join()
    assert other_thread == [0] and recorder.events == []


async def test_async_twins_carry_the_callers_listeners(client: OracleAgentMemory) -> None:
    recorder = Recorder()
    with register_event_listeners([recorder]):
        await client.add_user_async("u1", "likes tea")
        await asyncio.gather(client.list_users_async(), client.list_agents_async())
    assert "agent_memory.add_user.completed" in recorder.names()
    assert "agent_memory.list_agents.completed" in recorder.names()


def test_dumps_redact_sensitive_fields_and_repr_does_not(client: OracleAgentMemory) -> None:
    recorder = Recorder()
    thread = client.create_thread(thread_id="t-secret", user_id="u-secret")
    with register_event_listeners([recorder]):
        thread.add_memory("my card number is 1234")
    started = next(e for e in recorder.events if isinstance(e, ThreadStartedEvent))
    dumped = started.model_dump()
    assert dumped["arguments"] == "[REDACTED]" and dumped["thread_id"] == "[REDACTED]"
    assert "1234" not in started.model_dump_json() and "1234" not in json.dumps(
        started.to_observability_dict()
    )
    assert "1234" in repr(started)
    raw = started.model_dump(mask_sensitive_information=False)
    assert raw["arguments"]["content"] == "my card number is 1234"
    assert (
        started.to_observability_dict(mask_sensitive_information=False)["thread_id"] == "t-secret"
    )
    assert started.argument_summary == {"content": {"length": 22}}


def test_store_vectors_are_summarised_not_copied(store: Any) -> None:
    recorder = Recorder()
    with register_event_listeners([recorder]):
        store.add(["x"], record_type="memory", embeddings=[[0.5] * store.vector_dim])
    started = next(e for e in recorder.events if isinstance(e, MemoryStoreStartedEvent))
    assert started.arguments is not None
    assert started.arguments["embeddings"] == {"count": 1, "null_count": 0}


def test_embedder_events_and_vectors_only_on_request() -> None:
    with FakeOpenAIServer(api_key="sk-test", models=("test-embed",)) as server:
        embedder = Embedder(model="test-embed", api_base=server.api_base, api_key="sk-test")
        plain, wanting = Recorder(), Recorder(include_vectors=True)
        with register_event_listeners([plain]):
            embedder.embed(["hello", "world!"])
        with register_event_listeners([wanting]):
            embedder.embed(["hello"], is_query=True)
    started = next(e for e in plain.events if isinstance(e, EmbedderStartedEvent))
    completed = next(e for e in plain.events if isinstance(e, EmbedderCompletedEvent))
    assert started.input_count == 2 and started.text_lengths == [5, 6] and not started.is_query
    assert (
        completed.vector_count == 2
        and completed.embedding_dimension == embedder.embedding_dimension
    )
    assert completed.embedding_vector is None
    vectors = next(e for e in wanting.events if isinstance(e, EmbedderCompletedEvent))
    assert vectors.embedding_vector is not None and len(vectors.embedding_vector) == 1


def test_register_rejects_non_listeners() -> None:
    with pytest.raises(TypeError), register_event_listeners([object()]):  # type: ignore[list-item]
        pass

"""Public event types used by the observability layer.

Events are frozen pydantic models. ``repr()`` shows raw values; ``model_dump()``,
``model_dump_json()`` and ``to_observability_dict()`` replace known sensitive fields (raw
arguments, prompts, texts, vectors, identifiers) with ``"[REDACTED]"`` unless
``mask_sensitive_information=False``.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

from oracleagentmemory.observability._kinds import OperationKind as OperationKind

REDACTED = "[REDACTED]"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def new_event_id() -> str:
    """A fresh event id (``ev_<uuid4>``)."""
    return f"ev_{uuid.uuid4()}"


class Event(BaseModel):
    """Base event envelope emitted by the SDK.

    >>> Event(event_id="ev_1", component="thread", event_name="thread.search.started").component
    'thread'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", frozen=True)

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset()

    event_id: str
    timestamp: str = Field(default_factory=_now)
    component: str
    event_name: str
    metadata: dict[str, Any] | None = None

    def model_dump(
        self, *, mask_sensitive_information: bool = True, **kwargs: Any
    ) -> dict[str, Any]:
        """The fields as a dict; sensitive ones redacted unless asked otherwise."""
        data = super().model_dump(**kwargs)
        return self._mask(data) if mask_sensitive_information else data

    def model_dump_json(self, *, mask_sensitive_information: bool = True, **kwargs: Any) -> str:
        """The fields as JSON; sensitive ones redacted unless asked otherwise."""
        if not mask_sensitive_information:
            return super().model_dump_json(**kwargs)
        indent = kwargs.pop("indent", None)
        data = self._mask(super().model_dump(mode="json", **kwargs))
        return json.dumps(data, indent=indent, ensure_ascii=False)

    def to_observability_dict(self, mask_sensitive_information: bool = True) -> dict[str, Any]:
        """A JSON-ready dict for logs, traces and telemetry sinks."""
        data = super().model_dump(mode="json")
        return self._mask(data) if mask_sensitive_information else data

    def _mask(self, data: dict[str, Any]) -> dict[str, Any]:
        for name in self._SENSITIVE_FIELDS:
            if data.get(name) is not None:
                data[name] = REDACTED
        return data


_OperationKindField = Annotated[OperationKind, Strict(strict=True)]
_API_SENSITIVE = frozenset({"arguments"})
_COMPLETED_SENSITIVE = frozenset({"result", "started_event_id"})
_SCOPE_SENSITIVE = frozenset({"thread_id", "user_id", "agent_id"})


class ApiOperationStartedEvent(Event):
    """Started event emitted for a public API operation call."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _API_SENSITIVE

    api_class: str
    concrete_class: str
    method: str
    operation_kind: _OperationKindField
    arguments: dict[str, Any] | None = None
    argument_summary: dict[str, Any] | None = None


class ApiOperationCompletedEvent(Event):
    """Completed event emitted when a public API operation finishes."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _COMPLETED_SENSITIVE

    started_event_id: str
    api_class: str
    concrete_class: str
    method: str
    operation_kind: _OperationKindField
    success: bool
    result: dict[str, Any] | None = None
    result_summary: dict[str, Any] | None = None
    error_type: str | None = None
    duration_ms: float | None = None


class AgentMemoryStartedEvent(ApiOperationStartedEvent):
    """Started event emitted for an ``IAgentMemory`` public API call."""

    component: Literal["agent_memory"] = "agent_memory"
    api_class: Literal["IAgentMemory"] = "IAgentMemory"


class AgentMemoryCompletedEvent(ApiOperationCompletedEvent):
    """Completed event emitted when an ``IAgentMemory`` public API call finishes."""

    component: Literal["agent_memory"] = "agent_memory"
    api_class: Literal["IAgentMemory"] = "IAgentMemory"


class ThreadStartedEvent(ApiOperationStartedEvent):
    """Started event emitted for an ``IThread`` public API call."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _API_SENSITIVE | _SCOPE_SENSITIVE

    component: Literal["thread"] = "thread"
    api_class: Literal["IThread"] = "IThread"
    thread_id: str
    user_id: str | None = None
    agent_id: str | None = None


class ThreadCompletedEvent(ApiOperationCompletedEvent):
    """Completed event emitted when an ``IThread`` public API call finishes."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _COMPLETED_SENSITIVE | _SCOPE_SENSITIVE

    component: Literal["thread"] = "thread"
    api_class: Literal["IThread"] = "IThread"
    thread_id: str
    user_id: str | None = None
    agent_id: str | None = None


class MemoryStoreStartedEvent(ApiOperationStartedEvent):
    """Started event emitted for an ``IMemoryStore`` public API call."""

    component: Literal["memory_store"] = "memory_store"
    api_class: Literal["IMemoryStore"] = "IMemoryStore"


class MemoryStoreCompletedEvent(ApiOperationCompletedEvent):
    """Completed event emitted when an ``IMemoryStore`` public API call finishes."""

    component: Literal["memory_store"] = "memory_store"
    api_class: Literal["IMemoryStore"] = "IMemoryStore"


class EmbedderStartedEvent(ApiOperationStartedEvent):
    """Started event emitted when an ``IEmbedder.embed`` call starts."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _API_SENSITIVE | {"input"}

    component: Literal["embedder"] = "embedder"
    event_name: Literal["embedder.started"] = "embedder.started"
    api_class: Literal["IEmbedder"] = "IEmbedder"
    method: Literal["embed"] = "embed"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    model: str
    input: str | list[str] | None = None
    input_count: int
    text_lengths: list[int] | None = None
    is_query: bool


class EmbedderCompletedEvent(ApiOperationCompletedEvent):
    """Completed event emitted when an ``IEmbedder.embed`` call finishes.

    ``embedding_vector`` is left empty unless a registered listener asks for vectors
    (``EventListener.include_embedding_vectors``).
    """

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _COMPLETED_SENSITIVE | {"embedding_vector"}

    component: Literal["embedder"] = "embedder"
    event_name: Literal["embedder.completed"] = "embedder.completed"
    api_class: Literal["IEmbedder"] = "IEmbedder"
    method: Literal["embed"] = "embed"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    model: str
    input_count: int
    is_query: bool
    vector_count: int | None = None
    embedding_dimension: int | None = None
    embedding_vector: list[float] | list[list[float]] | None = None


class LlmGenerationStartedEvent(ApiOperationStartedEvent):
    """Started event emitted when an ``ILlm.generate`` call starts."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _API_SENSITIVE | {
        "prompt",
        "response_json_schema",
        "llm_generation_config",
    }

    component: Literal["llm"] = "llm"
    event_name: Literal["llm.generation.started"] = "llm.generation.started"
    api_class: Literal["ILlm"] = "ILlm"
    method: Literal["generate"] = "generate"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    llm_config: dict[str, Any] | None = None
    llm_generation_config: dict[str, Any] | None = None
    model: str
    api_type: str
    prompt: Any
    response_json_schema: dict[str, Any] | None = None
    tools: list[Any] | None = None


class LlmGenerationCompletedEvent(ApiOperationCompletedEvent):
    """Completed event emitted when an ``ILlm.generate`` call finishes."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = _COMPLETED_SENSITIVE | {
        "content",
        "completion_id",
    }

    component: Literal["llm"] = "llm"
    event_name: Literal["llm.generation.completed"] = "llm.generation.completed"
    api_class: Literal["ILlm"] = "ILlm"
    method: Literal["generate"] = "generate"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    llm_config: dict[str, Any] | None = None
    model: str
    api_type: str
    content: str | None = None
    completion_id: str | None = None
    tool_calls: list[Any] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    thinking_tokens: int | None = None
    total_tokens: int | None = None


__all__ = [
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
    "new_event_id",
]

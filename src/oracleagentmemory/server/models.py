"""Request and response bodies of the REST API (OpenAPI schemas)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oracleagentmemory.core.store._limits import MAX_REQUEST_TEXT, MAX_TTL_DAYS

Id = Field(min_length=1, max_length=256)
MemoryType = Literal["memory", "guideline", "fact", "preference"]
Status = Literal["valid", "invalid"]
Strategy = Literal["vector", "keyword", "hybrid"]


SearchableType = Literal[
    "message",
    "memory",
    "guideline",
    "fact",
    "preference",
    "user_profile",
    "agent_profile",
    "image",
]
"""The record types a search may ask for."""


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecordOut(BaseModel):
    """A stored record (message, memory, profile, thread or image)."""

    id: str
    record_type: str
    content: Any = None
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None
    status: str = "valid"
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    role: str | None = None
    seq_no: int | None = None
    mime_type: str | None = None
    expires_at: str | None = None
    updated_at: str | None = Field(None, description="(memories) when it last changed")
    valid_from: str | None = Field(None, description="(memories) when it became true")
    valid_until: str | None = Field(
        None, description="(memories) when it stopped being true (superseded or invalidated)"
    )


class Page(BaseModel):
    """One page of a list: ``items[offset : offset + limit]`` of ``total``."""

    items: list[RecordOut]
    total: int
    offset: int
    limit: int
    next_offset: int | None


class Deleted(BaseModel):
    deleted: int


class Ids(BaseModel):
    ids: list[str]


class Text(BaseModel):
    content: str


class ProfileIn(_In):
    id: str = Id
    information: str = Field(max_length=MAX_REQUEST_TEXT)
    metadata: dict[str, Any] | None = None


class ThreadIn(_In):
    user_id: str = Id
    thread_id: str | None = Field(default=None, min_length=1, max_length=256)
    agent_id: str | None = Field(default=None, min_length=1, max_length=256)
    metadata: dict[str, Any] | None = None


class ThreadPatch(_In):
    metadata: dict[str, Any] | None


class MessageIn(_In):
    role: str = Field(min_length=1, max_length=64)
    content: str = Field(max_length=MAX_REQUEST_TEXT)
    id: str | None = Field(default=None, min_length=1, max_length=256)
    timestamp: str | None = Field(default=None, max_length=64)
    metadata: dict[str, Any] | None = None


class MessagesIn(_In):
    """Messages to append; their contents hold at most ``MAX_REQUEST_TEXT`` characters in
    all (what one request may ask the server to embed)."""

    messages: list[MessageIn] = Field(min_length=1, max_length=1000)
    ttl_days: int | None = Field(default=None, ge=1, le=MAX_TTL_DAYS)

    @model_validator(mode="after")
    def _bounded(self) -> MessagesIn:
        total = sum(len(m.content) for m in self.messages)
        if total > MAX_REQUEST_TEXT:
            raise ValueError(
                f"messages hold {total} characters of content; one request may "
                f"hold at most {MAX_REQUEST_TEXT}"
            )
        return self


class MemoryIn(_In):
    content: str = Field(min_length=1, max_length=MAX_REQUEST_TEXT)
    user_id: str = Id
    memory_type: MemoryType = "memory"
    agent_id: str | None = Field(default=None, min_length=1, max_length=256)
    thread_id: str | None = Field(default=None, min_length=1, max_length=256)
    memory_id: str | None = Field(default=None, min_length=1, max_length=256)
    metadata: dict[str, Any] | None = None
    timestamp: str | None = Field(default=None, max_length=64)
    ttl_days: int | None = Field(default=None, ge=1, le=MAX_TTL_DAYS)
    status: Status = "valid"


class MemoryPatch(_In):
    content: str | None = Field(default=None, min_length=1, max_length=MAX_REQUEST_TEXT)
    metadata: dict[str, Any] | None = None
    status: Status | None = None
    ttl_days: int | None = Field(default=None, ge=1, le=MAX_TTL_DAYS)


class LinkIn(_In):
    source_record_id: str = Id
    source_record_type: MemoryType
    target_record_id: str = Id
    target_record_type: MemoryType
    relation_type: str = Field(min_length=1, max_length=64)
    opposite_relation_type: str | None = Field(default=None, min_length=1, max_length=64)
    metadata: dict[str, Any] | None = None


class LinkOut(BaseModel):
    id: str
    source_record_id: str
    source_record_type: str
    target_record_id: str
    target_record_type: str
    relation_type: str
    opposite_relation_type: str
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None


class SearchIn(_In):
    """Search within the key's users: ``user_id`` is required and matched exactly."""

    query: str = Field(min_length=1, max_length=10_000)
    user_id: str = Id
    agent_id: str | None = Field(default=None, min_length=1, max_length=256)
    thread_id: str | None = Field(default=None, min_length=1, max_length=256)
    exact_agent_match: bool | None = None
    exact_thread_match: bool | None = None
    max_results: int = Field(default=10, ge=1, le=200)
    record_types: list[SearchableType] | None = None
    metadata_filter: dict[str, Any] | None = None
    num_hops: int = Field(default=0, ge=0, le=5)
    max_linked_results: int = Field(default=20, ge=0, le=200)
    include_invalid_results: bool = False
    token_budget: int | None = Field(default=None, ge=1, le=1_000_000)
    strategy: Strategy | None = None
    as_of: datetime | None = Field(
        default=None,
        description="only records true at that time (ISO-8601; without an offset: UTC),"
        " whatever their status now; omitted: what is true now",
    )


class ThreadSearchIn(_In):
    query: str = Field(min_length=1, max_length=10_000)
    max_results: int = Field(default=10, ge=1, le=200)
    record_types: list[SearchableType] | None = None
    metadata_filter: dict[str, Any] | None = None
    exact_thread_match: bool = False
    strategy: Strategy | None = None
    as_of: datetime | None = Field(
        default=None,
        description="only records true at that time (ISO-8601; without an offset: UTC),"
        " whatever their status now; omitted: what is true now",
    )


class VersionOut(BaseModel):
    """One version of a memory (``GET /v1/memories/{id}/history``): what the memory held
    right after the change; a ``deleted`` tombstone ends a deleted memory's history, whose
    earlier versions have no content left."""

    version: int
    memory_id: str
    change: str = Field(description="created, updated, status, superseded, merged or deleted")
    at: str = Field(description="when (ISO-8601, UTC)")
    actor: str | None = Field(
        None,
        description="user:<id>, key:<id>, agent:<id>, extraction:<job id>, or null when not known",
    )
    content: str | None = None
    metadata: dict[str, Any] | None = None
    memory_type: str | None = None
    status: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    changed: list[str] = []
    source_message_ids: list[str] = []
    superseded_by: str | None = None


class LinkedOut(BaseModel):
    relation: LinkOut
    record: RecordOut


class ResultOut(BaseModel):
    record: RecordOut
    distance: float
    linked: list[LinkedOut] = []


class SearchOut(BaseModel):
    results: list[ResultOut]


class PurgeIn(_In):
    expired: bool = True


class ExtractionStats(BaseModel):
    """This server process's memory extraction since it started (each worker has its own)."""

    extraction_enabled: bool
    accepted: int
    completed: int
    failed: int
    dropped: int
    rejected: int
    resumed: int
    queued: int
    running: int
    memories: int
    last_failure: str | None


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]

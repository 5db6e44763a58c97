"""Record value types returned by stores and searches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from oracleagentmemory.apis.message import (
    ImageMimeType,
    MessageContent,
    MetadataValue as MetadataValue,
    content_parts,
)
from oracleagentmemory.apis.relations import (
    MEMORY_TYPES as MEMORY_TYPES,
    MemoryRecordType as MemoryRecordType,
)

if TYPE_CHECKING:
    from oracleagentmemory.apis.relations import RecordRelation

ThreadRecordType: TypeAlias = Literal["message", "memory", "guideline", "fact", "preference"]
"""Record types a thread works with (messages and memory-like records)."""


class RecordStatus(str, Enum):
    """Lifecycle state of a stored record: VALID (normal) or INVALID (kept for history)."""

    VALID = "valid"
    INVALID = "invalid"


@dataclass(frozen=True, slots=True)
class Record:
    """Base persisted record returned by memory stores and search results."""

    id: str
    record_type: str = "record"
    content: Any = None
    timestamp: str | None = None
    metadata: MetadataValue = None
    status: RecordStatus = RecordStatus.VALID
    linked_results: Sequence[tuple[RecordRelation, Record]] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not isinstance(self.linked_results, tuple):
            object.__setattr__(self, "linked_results", tuple(self.linked_results))
        if not isinstance(self.status, RecordStatus):
            object.__setattr__(self, "status", RecordStatus(self.status))

    def __hash__(self) -> int:
        # Dict fields (metadata, configs) are left out so every record hashes; equal records
        # still hash equal. Content parts are tuples, so content always hashes.
        content = self.content
        return hash(
            (
                type(self).__name__,
                self.id,
                self.record_type,
                self.timestamp,
                content if not isinstance(content, dict) else None,
            )
        )


@dataclass(frozen=True, slots=True)
class ScopedRecord(Record):
    """A record that carries public scope identifiers (thread, user, agent)."""

    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None


@dataclass(frozen=True, slots=True)
class MessageRecord(ScopedRecord):
    """A stored chat message; ``seq_no`` increases within its thread (gaps allowed)."""

    record_type: str = field(default="message", init=False)
    content: str | Sequence[MessageContent] = ""
    role: str | None = None
    seq_no: int = field(kw_only=True)

    def __post_init__(self) -> None:
        Record.__post_init__(self)
        if not isinstance(self.content, str):
            object.__setattr__(self, "content", content_parts("MessageRecord", self.content))


@dataclass(frozen=True, slots=True)
class MemoryRecord(ScopedRecord):
    """A durable memory.

    Additions of ours (keyword-only, left out of equality and ``repr``; None where the store
    does not know them): ``updated_at``, when it last changed; ``valid_from`` and
    ``valid_until``, when it became true and stopped being so (None: still true). All three
    ISO-8601, UTC."""

    record_type: str = field(default="memory", init=False)
    content: str | None = None
    updated_at: str | None = field(default=None, kw_only=True, compare=False, repr=False)
    valid_from: str | None = field(default=None, kw_only=True, compare=False, repr=False)
    valid_until: str | None = field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GuidelineRecord(MemoryRecord):
    """A guideline, stored apart from general memories."""

    record_type: str = field(default="guideline", init=False)


@dataclass(frozen=True, slots=True)
class FactRecord(MemoryRecord):
    """A fact, stored apart from general memories."""

    record_type: str = field(default="fact", init=False)


@dataclass(frozen=True, slots=True)
class PreferenceRecord(MemoryRecord):
    """A preference, stored apart from general memories."""

    record_type: str = field(default="preference", init=False)


@dataclass(frozen=True, slots=True)
class UserProfileRecord(Record):
    """An unscoped user profile; the user id is the record id."""

    record_type: str = field(default="user_profile", init=False)
    content: str | None = None


@dataclass(frozen=True, slots=True)
class AgentProfileRecord(Record):
    """An unscoped agent profile; the agent id is the record id."""

    record_type: str = field(default="agent_profile", init=False)
    content: str | None = None


@dataclass(frozen=True, slots=True)
class ImageRecord(ScopedRecord):
    """A stored image; ``bytes`` is loaded only when asked for."""

    record_type: str = field(default="image", init=False)
    content: str | None = None
    message_id: str | None = None
    bytes: bytes | None = None
    mime_type: ImageMimeType = field(kw_only=True)


@dataclass(frozen=True, slots=True)
class ThreadRecord(ScopedRecord):
    """A stored thread with its persisted runtime configuration and state."""

    record_type: str = field(default="thread", init=False)
    content: str | None = None
    runtime_config: dict[str, Any] | None = None
    runtime_state: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ThreadSummaryRecord(ScopedRecord):
    """A stored summary of a thread, covering messages up to ``_covered_through_seq_no``."""

    record_type: str = field(default="thread_summary", init=False)
    content: dict[str, object] | None = None
    _covered_through_seq_no: int = 0


MEMORY_RECORD_TYPES: Final = ("memory", "guideline", "fact", "preference")
PROFILE_RECORD_TYPES: Final = ("user_profile", "agent_profile")

_RECORD_CLASSES: Final[dict[str, type[Record]]] = {
    "message": MessageRecord,
    "memory": MemoryRecord,
    "guideline": GuidelineRecord,
    "fact": FactRecord,
    "preference": PreferenceRecord,
    "user_profile": UserProfileRecord,
    "agent_profile": AgentProfileRecord,
    "image": ImageRecord,
    "thread": ThreadRecord,
    "thread_summary": ThreadSummaryRecord,
}

RECORD_TYPES: Final = tuple(_RECORD_CLASSES)


def build_record(
    record_type: str,
    record_id: str,
    *,
    content: str | dict[str, object] | Sequence[MessageContent] | None = None,
    thread_id: str | None = None,
    user_id: str | None = None,
    agent_id: str | None = None,
    role: str | None = None,
    seq_no: int | None = None,
    timestamp: str | None = None,
    metadata: MetadataValue = None,
    status: RecordStatus = RecordStatus.VALID,
    **kwargs: Any,
) -> Record:
    """Build the most specific record class known for ``record_type``.

    Scope fields are dropped for unscoped types (profiles); ``role`` and ``seq_no`` are used
    only for messages, where ``seq_no`` is required.
    """
    cls = _RECORD_CLASSES.get(record_type)
    common: dict[str, Any] = {
        "content": content,
        "timestamp": timestamp,
        "metadata": metadata,
        "status": RecordStatus(status),
    }
    if cls is None:
        return Record(record_id, record_type=record_type, **common, **kwargs)
    if issubclass(cls, ScopedRecord):
        common.update(thread_id=thread_id, user_id=user_id, agent_id=agent_id)
    if cls is MessageRecord:
        if seq_no is None:
            raise ValueError("seq_no is required to build a message record")
        if content is None:
            common["content"] = ""
        return MessageRecord(record_id, role=role, seq_no=seq_no, **common, **kwargs)
    if cls is ImageRecord:
        mime_type = kwargs.pop("mime_type", None)
        if mime_type is None:
            raise ValueError("mime_type is required to build an image record")
        return ImageRecord(record_id, mime_type=ImageMimeType(mime_type), **common, **kwargs)
    return cls(record_id, **common, **kwargs)


for _cls in _RECORD_CLASSES.values():
    # dataclass() gives every frozen subclass a field-wise __hash__, which fails on dict
    # metadata; keep the base's hash (dict fields left out) for the whole family.
    _cls.__hash__ = Record.__hash__  # type: ignore[method-assign]
for _cls in (ScopedRecord,):
    _cls.__hash__ = Record.__hash__  # type: ignore[method-assign]


MemoryChange: TypeAlias = Literal["created", "updated", "status", "superseded", "merged", "deleted"]
"""What one version of a memory records: its creation, a content or metadata change, a status
change, a ``supersedes`` link pointing at it, source messages merged into it by extraction
(a duplicate found), or its deletion."""


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One version of a memory-like record (``OracleAgentMemory.get_memory_history``).

    ``content``, ``metadata``, ``memory_type`` and ``status`` are what the record held right
    after the change (``changed`` names the fields it changed). ``actor`` is who made it:
    ``"user:<id>"`` (an API key's user), ``"key:<key id>"`` (an admin key), ``"agent:<id>"``,
    ``"extraction:<job id>"`` (with the ``source_message_ids`` the memory came from), or None
    when the writer did not say. Deleting a memory erases the content and metadata of its
    earlier versions: what remains is one ``"deleted"`` tombstone (id, time, who) after
    versions without content."""

    version: int
    memory_id: str
    change: MemoryChange
    at: datetime
    actor: str | None = None
    content: str | None = None
    metadata: dict[str, Any] | None = None
    memory_type: str | None = None
    status: RecordStatus | None = None
    user_id: str | None = None
    agent_id: str | None = None
    changed: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    superseded_by: str | None = None
    """The memory whose ``supersedes`` link made this version (``change == "superseded"``)."""

    def __post_init__(self) -> None:
        if self.status is not None and not isinstance(self.status, RecordStatus):
            object.__setattr__(self, "status", RecordStatus(self.status))
        for name in ("changed", "source_message_ids"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def __hash__(self) -> int:
        return hash((self.memory_id, self.version, self.change, self.at))

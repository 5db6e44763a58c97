"""What an extractor produces, and the interface every thread memory extractor implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from oracleagentmemory._async import async_twin
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.apis.thread import Message, ThreadMessageTypedDictT

EXTRACTED_MEMORY_TYPES: Final = MEMORY_RECORD_TYPES
"""The typed outputs of extraction: memory, guideline, fact, preference."""


@dataclass(frozen=True)
class MemoryLinkTargetCandidate:
    """An existing memory an extracted one was compared with.

    ``similarity`` is the cosine similarity of the two texts' embeddings (None when the store
    has no embedder); ``timestamp`` is the stored memory's time. Extraction uses candidates to
    find duplicates; automatic links choose their targets among them.
    """

    memory_id: str
    memory_type: str
    content: str
    similarity: float | None = None
    timestamp: str | None = None


@dataclass
class ExtractedMemory:
    """One memory an extractor found, before it is stored.

    ``source_message_ids`` are the ids of the messages it was extracted from (its
    provenance). ``duplicate_of`` is set by :meth:`ThreadMemoryExtractor.resolve_memory_links`
    when the memory restates an existing one; it is then not stored again and its sources
    are merged into that memory's. ``candidates`` are the existing memories it was compared
    with. ``links`` are the links to existing memories the model chose during extraction
    (DURING_EXTRACTION): each an existing memory and the relation read from this one to it.
    ``source_image_ids`` are the images it is about (MEMORY image context).
    """

    content: str
    memory_type: str = "memory"
    source_message_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None
    timestamp: str | None = None
    duplicate_of: str | None = None
    candidates: list[MemoryLinkTargetCandidate] = field(default_factory=list)
    links: list[tuple[MemoryLinkTargetCandidate, str]] = field(default_factory=list)
    source_image_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.content, str) or not self.content.strip():
            raise ValueError("content must be a non-empty string")
        if self.memory_type not in EXTRACTED_MEMORY_TYPES:
            raise ValueError(
                f"memory_type must be one of {list(EXTRACTED_MEMORY_TYPES)}, "
                f"got {self.memory_type!r}"
            )
        self.source_message_ids = tuple(self.source_message_ids)
        self.source_image_ids = tuple(self.source_image_ids)


def as_message(item: Message | Mapping[str, Any]) -> Message:
    """A :class:`Message` from a message or a message dict (``role`` and ``content``)."""
    if isinstance(item, Message):
        return item
    if isinstance(item, Mapping):
        return Message(
            role=item["role"],
            content=item["content"],
            timestamp=item.get("timestamp"),
            metadata=item.get("metadata"),
            id=item.get("id"),
        )
    raise TypeError(f"a message must be a Message or a dict, got {type(item).__name__}")


class ThreadMemoryExtractor(ABC):
    """Turns a thread's new messages into memories.

    :meth:`extract_memories` asks the model; :meth:`resolve_memory_links` compares the
    results with stored memories (duplicates; link candidates);
    :meth:`build_pending_memory_batches` prepares the store writes.
    """

    @abstractmethod
    def extract_memories(
        self,
        existing_messages: Sequence[Message | ThreadMessageTypedDictT],
        new_messages: Sequence[Message | ThreadMessageTypedDictT],
        context_summary: str = "",
    ) -> list[ExtractedMemory]:
        """Memories found in ``new_messages``; ``existing_messages`` (earlier turns) and
        ``context_summary`` are context only."""

    @abstractmethod
    def resolve_memory_links(self, memories: list[ExtractedMemory]) -> None:
        """Compare ``memories`` with stored ones, in place (sets ``duplicate_of`` and
        ``candidates``)."""

    @staticmethod
    def build_pending_memory_batches(
        extracted_memories: list[ExtractedMemory],
        thread_id: str | None,
        user_id: str | None,
        agent_id: str | None,
    ) -> list[PendingRecordBatch]:
        """One store batch per memory type, in the order the types first appear, for the
        memories that are not duplicates; each memory takes the given scope."""
        by_type: dict[str, list[ExtractedMemory]] = {}
        for memory in extracted_memories:
            if memory.duplicate_of is None:
                by_type.setdefault(memory.memory_type, []).append(memory)
        return [
            PendingRecordBatch(
                contents=[m.content for m in group],
                record_type=memory_type,
                thread_ids=thread_id,
                user_ids=user_id,
                agent_ids=agent_id,
                timestamps=[m.timestamp for m in group],
                metadata=[m.metadata for m in group],
            )
            for memory_type, group in by_type.items()
        ]

    extract_memories_async = async_twin(extract_memories)
    resolve_memory_links_async = async_twin(resolve_memory_links)


def batch_order(extracted_memories: list[ExtractedMemory]) -> list[ExtractedMemory]:
    """The stored memories in the order :meth:`build_pending_memory_batches` writes them."""
    by_type: dict[str, list[ExtractedMemory]] = {}
    for memory in extracted_memories:
        if memory.duplicate_of is None:
            by_type.setdefault(memory.memory_type, []).append(memory)
    return [m for group in by_type.values() for m in group]

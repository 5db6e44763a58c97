"""Typed links between stored records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

MEMORY_LINK_TYPES: Final[dict[str, str]] = {
    "supersedes": "is_superseded_by",
    "contradicts": "contradicts",
    "refines": "is_refined_by",
    "supports": "is_supported_by",
    "duplicates": "duplicates",
}
"""Each memory link type and the relation type seen from its target."""

RelationType = str
MemoryLinkType = Literal["supersedes", "contradicts", "refines", "supports", "duplicates"]
MemoryRecordType = Literal["memory", "guideline", "fact", "preference"]


@dataclass(frozen=True)
class RecordRelation:
    """A stored, directed relation between two records."""

    id: str
    source_record_id: str
    source_record_type: str
    target_record_id: str
    target_record_type: str
    relation_type: str
    opposite_relation_type: str
    timestamp: str | None
    metadata: dict[str, Any] | None
    created_at: str


@dataclass(frozen=True)
class MemoryLink(RecordRelation):
    """A relation between two memory-like records (memory, guideline, fact, preference)."""

    @property
    def link_type(self) -> str:
        """The relation type, seen from the source memory."""
        return self.relation_type

    @property
    def source_memory_id(self) -> str:
        """Identifier of the source memory."""
        return self.source_record_id

    @property
    def target_memory_id(self) -> str:
        """Identifier of the target memory."""
        return self.target_record_id

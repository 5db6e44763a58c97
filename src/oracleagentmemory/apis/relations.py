"""Typed links between stored records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from oracleagentmemory.apis.message import MetadataValue as MetadataValue

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
MemoryLinkOppositeType = Literal[
    "is_superseded_by", "contradicts", "is_refined_by", "is_supported_by", "duplicates"
]
MemoryRecordType = Literal["memory", "guideline", "fact", "preference"]
MEMORY_TYPES: Final = frozenset(get_args(MemoryRecordType))
"""The memory-like record types (the endpoints a memory link may join)."""
_MEMORY_TYPES: Final = MEMORY_TYPES
memory_link_type_opposite_mapping: Final[dict[str, str]] = MEMORY_LINK_TYPES
"""The reference's name for :data:`MEMORY_LINK_TYPES` (link type -> its opposite)."""


@dataclass(frozen=True, slots=True)
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

    def __hash__(self) -> int:
        # metadata (a dict) is left out so relations hash; equal relations still hash equal.
        return hash((self.id, self.source_record_id, self.target_record_id, self.relation_type))


@dataclass(frozen=True, slots=True)
class MemoryLink(RecordRelation):
    """A relation between two memory-like records (memory, guideline, fact, preference).

    Construction checks that both endpoints are memory-like and that ``relation_type`` is a
    built-in memory link type with its fixed opposite (ValueError otherwise).
    """

    source_record_type: MemoryRecordType
    target_record_type: MemoryRecordType
    relation_type: MemoryLinkType
    opposite_relation_type: MemoryLinkOppositeType

    def __post_init__(self) -> None:
        if (
            self.source_record_type not in _MEMORY_TYPES
            or self.target_record_type not in _MEMORY_TYPES
        ):
            raise ValueError(
                "memory links need memory-like endpoints (memory, guideline, fact, preference), "
                f"got {self.source_record_type!r} -> {self.target_record_type!r}"
            )
        if self.relation_type not in MEMORY_LINK_TYPES:
            raise ValueError(
                f"relation_type must be one of {sorted(MEMORY_LINK_TYPES)}, "
                f"got {self.relation_type!r}"
            )
        expected = MEMORY_LINK_TYPES[self.relation_type]
        if self.opposite_relation_type != expected:
            raise ValueError(
                f"opposite_relation_type of {self.relation_type!r} must be {expected!r}, "
                f"got {self.opposite_relation_type!r}"
            )

    @property
    def link_type(self) -> MemoryLinkType:
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


MemoryLink.__hash__ = RecordRelation.__hash__  # type: ignore[method-assign]

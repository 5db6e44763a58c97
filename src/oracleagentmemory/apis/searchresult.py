"""The search-result interface and the options that control how a result is rendered."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.records import Record


class SearchResult(ABC):
    """One record returned by a search, with its distance to the query."""

    @property
    @abstractmethod
    def distance(self) -> float:
        """Distance from the query (smaller is better)."""

    @property
    @abstractmethod
    def record(self) -> Record:
        """The matched record."""

    @property
    @abstractmethod
    def id(self) -> str | None:
        """Stable identifier of the matched record, when available."""

    @property
    @abstractmethod
    def content(self) -> str:
        """Main textual content of the matched record."""

    @property
    @abstractmethod
    def metadata(self) -> dict[str, Any] | None:
        """Record metadata, when available."""

    @property
    @abstractmethod
    def timestamp(self) -> str | None:
        """Record timestamp, when available."""

    @property
    @abstractmethod
    def formatted_content(self) -> str:
        """XML-safe rendering of the result's default visible fields, for prompts."""


@dataclass(frozen=True)
class SearchResultFormatConfig:
    """Which fields of a search result are rendered, and whether invalid results are.

    ``include_invalid_results``: omitted or True renders an invalid (superseded) record with
    ``status="invalid"`` so a prompt can tell it is outdated; False renders it as ``''`` and
    drops invalid linked results. The other switches pick the visible fields; ``id``, type,
    role (messages), timestamp, status and linked results are shown by default, distance and
    metadata are not (metadata is often application bookkeeping, and costs tokens).
    """

    include_invalid_results: bool | NotSet = NOT_SET_MARKER
    include_id: bool = field(default=True, kw_only=True)
    include_record_type: bool = field(default=True, kw_only=True)
    include_role: bool = field(default=True, kw_only=True)
    include_timestamp: bool = field(default=True, kw_only=True)
    include_status: bool = field(default=True, kw_only=True)
    include_distance: bool = field(default=False, kw_only=True)
    include_metadata: bool = field(default=False, kw_only=True)
    include_linked_results: bool = field(default=True, kw_only=True)

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is NOT_SET_MARKER and item.name == "include_invalid_results":
                continue
            if not isinstance(value, bool):
                raise TypeError(f"{item.name} must be a bool, got {type(value).__name__}")

    @property
    def shows_invalid_results(self) -> bool:
        """``include_invalid_results`` resolved: omitted means True."""
        return self.include_invalid_results is not False

"""The search-result interface and the base of its rendering options."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.records import Record, RecordStatus

if TYPE_CHECKING:
    from oracleagentmemory.apis.relations import RecordRelation


@dataclass(frozen=True, slots=True)
class SearchResultFormatConfig:
    """Whether invalid (superseded) records are rendered in full.

    ``include_invalid_results`` omitted or True renders an invalid record with its content
    and ``<status>invalid</status>``; False renders an invalid result as ``''`` and keeps only
    the id and status of invalid linked records. ``OracleSearchResultFormatConfig`` adds the
    switches for the visible fields.
    """

    include_invalid_results: bool | NotSet = NOT_SET_MARKER

    def __post_init__(self) -> None:
        value = self.include_invalid_results
        if value is not NOT_SET_MARKER and not isinstance(value, bool):
            raise TypeError(f"include_invalid_results must be a bool, got {type(value).__name__}")

    @property
    def shows_invalid_results(self) -> bool:
        """``include_invalid_results`` resolved: omitted means True."""
        return self.include_invalid_results is not False


class SearchResult(ABC):
    """One record returned by a search, with its distance to the query."""

    @property
    @abstractmethod
    def record(self) -> Record:
        """The matched record."""

    @property
    @abstractmethod
    def id(self) -> str | None:
        """Identifier given to the result, when one was given."""

    @property
    @abstractmethod
    def content(self) -> str:
        """Main textual content of the matched record."""

    @property
    def status(self) -> RecordStatus | None:
        """Lifecycle status of the matched record."""
        return self.record.status

    @property
    def linked_results(self) -> list[tuple[RecordRelation, SearchResult]]:
        """Records reached through relations, each with the relation that links it."""
        return []

    @property
    def formatted_content(self) -> str:
        """Rendering of the result for prompts, with the result's own configuration."""
        return self.format_content()

    def format_content(
        self, format_config: SearchResultFormatConfig | NotSet = NOT_SET_MARKER
    ) -> str:
        """Rendering of the result for prompts (plain content unless a subclass does more)."""
        del format_config
        return self.content

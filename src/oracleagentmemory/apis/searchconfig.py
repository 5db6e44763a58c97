"""The interface of search configurations."""

from __future__ import annotations

from abc import ABC


class ISearchConfig(ABC):  # noqa: B024 - the reference declares no abstract method either
    """Base of search configurations (``MemorySearchConfig`` and its reranking kinds)."""

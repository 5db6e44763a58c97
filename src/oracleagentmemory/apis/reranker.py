"""The reranker interface used by reranking search configurations."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RerankResponseResult:
    """The relevance of one document: ``index`` into the documents given to
    :meth:`IReranker.rerank`; higher ``relevance_score`` = more relevant (comparable within
    one call); ``document`` optionally echoes its text."""

    index: int
    relevance_score: float
    document: str | None = None


@dataclass(frozen=True, slots=True)
class RerankResponse:
    """A reranker's answer: one result per scored document, in any order."""

    results: list[RerankResponseResult]


class IReranker(ABC):
    """Scores documents against a query; used to reorder search candidates."""

    @abstractmethod
    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Score each of ``documents`` against ``query`` (one score per document, in order)."""

    async def rerank_async(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Rerank without blocking the event loop (runs :meth:`rerank` in a worker thread)."""
        return await asyncio.to_thread(self.rerank, query, documents, **kwargs)

"""The reranker interface used by reranking search configurations."""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass
class RerankResponse:
    """Relevance scores for the documents given to :meth:`IReranker.rerank`.

    ``scores[i]`` is the relevance of ``documents[i]`` (same order and length as the input);
    higher is more relevant. Scores need not be normalized, only comparable within one call.
    """

    scores: list[float]

    def __post_init__(self) -> None:
        try:
            scores = [float(score) for score in self.scores]
        except (TypeError, ValueError) as exc:
            raise TypeError("scores must be a sequence of numbers") from exc
        if any(math.isnan(score) for score in scores):
            raise ValueError("scores must not contain NaN (they would not order)")
        self.scores = scores

    def ranked_indices(self) -> list[int]:
        """Document indices, most relevant first (ties keep input order)."""
        return sorted(range(len(self.scores)), key=lambda i: -self.scores[i])

    def check_aligned(self, document_count: int) -> None:
        """Raise ValueError unless there is exactly one score per document."""
        if len(self.scores) != document_count:
            raise ValueError(
                f"reranker returned {len(self.scores)} scores for {document_count} documents"
            )


class IReranker(ABC):
    """Scores documents against a query; used to reorder search candidates."""

    @abstractmethod
    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Score each of ``documents`` against ``query`` (one score per document, in order)."""

    async def rerank_async(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Rerank without blocking the event loop (runs :meth:`rerank` in a worker thread)."""
        return await asyncio.to_thread(self.rerank, query, documents, **kwargs)

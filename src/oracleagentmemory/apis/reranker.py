"""The reranker interface used by reranking search configurations."""

from __future__ import annotations

import asyncio
import math
import numbers
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.apis._twins import run_blocking


@dataclass(frozen=True, slots=True)
class RerankResponseResult:
    """One ranked document: its ``index`` in the input list, its score, and optionally its text.

    Higher ``relevance_score`` is more relevant; scores need only be comparable within one call.
    Integral indices and real scores of any numeric type (numpy's included) are stored as
    ``int`` and ``float``.
    """

    index: int
    relevance_score: float
    document: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.index, bool) or not isinstance(self.index, numbers.Integral):
            raise TypeError(f"index must be an int, got {type(self.index).__name__}")
        if self.index < 0:
            raise ValueError(f"index must not be negative, got {self.index}")
        score = self.relevance_score
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise TypeError(f"relevance_score must be a number, got {type(score).__name__}")
        if math.isnan(float(score)):
            raise ValueError("relevance_score must not be NaN (it would not order)")
        if self.document is not None and not isinstance(self.document, str):
            raise TypeError(f"document must be a str or None, got {type(self.document).__name__}")
        object.__setattr__(self, "index", int(self.index))
        object.__setattr__(self, "relevance_score", float(score))


@dataclass(frozen=True, slots=True)
class RerankResponse:
    """The ranking :meth:`IReranker.rerank` returns, most relevant first.

    A complete ranking lists every input index exactly once; :meth:`check_complete` verifies
    that against the number of documents.
    """

    results: list[RerankResponseResult]

    def __post_init__(self) -> None:
        if isinstance(self.results, str | bytes) or not isinstance(self.results, list | tuple):
            raise TypeError(
                f"results must be a list of RerankResponseResult, got {type(self.results).__name__}"
            )
        for i, item in enumerate(self.results):
            if not isinstance(item, RerankResponseResult):
                raise TypeError(
                    f"results[{i}] must be a RerankResponseResult, got {type(item).__name__}"
                )
        if isinstance(self.results, tuple):
            object.__setattr__(self, "results", list(self.results))

    def check_complete(self, document_count: int) -> None:
        """Raise ValueError unless the results rank each of ``document_count`` inputs once."""
        indices = sorted(result.index for result in self.results)
        if indices != list(range(document_count)):
            raise ValueError(
                f"the reranker returned indices {indices} for {document_count} documents; "
                "each index in range must appear exactly once"
            )


class IReranker(ABC):
    """Scores documents against a query; used to reorder search candidates.

    Implement :meth:`rerank_async` (as in the reference, it is the one abstract method);
    :meth:`rerank` runs it to completion. A reranker whose work is synchronous overrides
    :meth:`rerank` and sets ``rerank_async = rerank_in_thread``.
    """

    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Rank ``documents`` by relevance to ``query``.

        Returns every input index exactly once, most relevant first. The base implementation
        runs :meth:`rerank_async` to completion.
        """
        return run_blocking(lambda: self.rerank_async(query, documents, **kwargs))

    @abstractmethod
    async def rerank_async(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Like :meth:`rerank`, without blocking the event loop."""


async def rerank_in_thread(
    self: IReranker, query: str, documents: list[str], **kwargs: Any
) -> RerankResponse:
    """A ``rerank_async`` for rerankers that override :meth:`IReranker.rerank`: runs it in a
    worker thread."""
    return await asyncio.to_thread(self.rerank, query, documents, **kwargs)


rerank_in_thread.__name__ = "rerank_async"

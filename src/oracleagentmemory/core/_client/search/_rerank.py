"""The optional reranking stage of client and thread search (``search_config.reranker``).

The store's ranked candidates (the top ``reranker_max_candidates``) go to the reranker in one
call, as their text; the reranker's relevance scores reorder them (highest first; candidates
it leaves unscored keep their first-stage order, after the scored ones); the caller then keeps
the first ``max_results``. Each result keeps its first-stage distance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from oracleagentmemory.apis._duck import rerank_now
from oracleagentmemory.apis.reranker import IReranker

T = TypeVar("T")


def _scores(response: Any, count: int) -> dict[int, float]:
    """``index -> relevance`` from a reranker's response (``results`` of index/relevance_score
    items), checked against the number of documents sent."""
    results = getattr(response, "results", None)
    if results is None:
        raise TypeError(f"reranker returned {type(response).__name__}, expected a RerankResponse")
    out: dict[int, float] = {}
    for item in results:
        index, score = item.index, float(item.relevance_score)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise ValueError(f"reranker returned index {index!r} for {count} documents")
        if score != score:  # NaN would not order
            raise ValueError("reranker returned a NaN relevance_score")
        if index in out:
            raise ValueError(f"reranker returned index {index} twice")
        out[index] = score
    return out


def rerank(
    reranker: IReranker, query: str, candidates: Sequence[T], texts: Sequence[str]
) -> list[T]:
    """``candidates`` reordered by ``reranker`` over their ``texts`` (one batched call)."""
    if len(candidates) < 2:
        return list(candidates)
    response = rerank_now(reranker, query, list(texts))
    scores = _scores(response, len(candidates))
    order = sorted(
        range(len(candidates)),
        key=lambda i: (0, -scores[i], i) if i in scores else (1, 0.0, i),
    )
    return [candidates[i] for i in order]

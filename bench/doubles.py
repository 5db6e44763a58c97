"""Embedder wrappers used by the harness (labelled as such in every row that uses them)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder, embed_in_thread


class _Double(IEmbedder):
    """What both doubles share: a fixed dimension, a 256-token window, async in a thread."""

    def __init__(self, dim: int) -> None:
        self._dim = dim

    embed_async = embed_in_thread

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return 256


class LookupEmbedder(_Double):
    """Test double: returns the precomputed synthetic vector of each known text, at no
    model cost, so a text query can drive HYBRID and client searches over synthetic vectors.
    Unknown texts are an error (documents are always written with explicit embeddings)."""

    def __init__(self, table: Mapping[str, NDArray[np.float32]], dim: int) -> None:
        super().__init__(dim)
        self._table = table

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        return np.stack([np.asarray(self._table[t], dtype=np.float32) for t in texts])

    @property
    def model_identity(self) -> str:
        return "bench/precomputed-synthetic-384"


class ModelCostLookup(LookupEmbedder):
    """:class:`LookupEmbedder` whose every call also embeds its texts with ``model``, whose
    vectors are dropped: a query pays the real model's time and still finds the synthetic
    corpus, so a search row can be timed with its query embedding included."""

    def __init__(
        self, table: Mapping[str, NDArray[np.float32]], dim: int, model: IEmbedder
    ) -> None:
        super().__init__(table, dim)
        self._model = model

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        self._model.embed(texts, is_query=is_query)
        return super().embed(texts, is_query=is_query)


class HashEmbedder(_Double):
    """Test double: each word hashed to one of ``dim`` signed axes, summed and normalised, at
    no model cost, for load tests that write through the client API (which embeds texts)."""

    def __init__(self, dim: int = 384) -> None:
        super().__init__(dim)

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split() or [""]:
                h = zlib.crc32(word.encode())
                out[i, h % self._dim] += 1.0 if h & 1 << 31 else -1.0
            norm = float(np.linalg.norm(out[i]))
            out[i] = out[i] / norm if norm else 1.0 / np.sqrt(self._dim)
        return out

    @property
    def model_identity(self) -> str:
        return f"bench/hashed-words-{self._dim}"

"""A small, real embedder for tests: feature hashing of word unigrams and character trigrams.

It is deterministic, fast and offline, and close texts get close vectors, which is all the
contract tests need; spec-example tests use the bundled model instead.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder, embed_in_thread

_WORD = re.compile(r"\w+")


class HashingEmbedder(IEmbedder):
    """Bag of hashed words and trigrams, L2-normalised."""

    def __init__(self, dim: int = 64) -> None:
        self._dim = dim
        self.calls = 0
        self.texts_embedded = 0

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                out[row, h % self._dim] += 1.0 if (h >> 32) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out

    embed_async = embed_in_thread

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return 64

    @property
    def model_identity(self) -> str:
        return f"tests.hashing-{self._dim}"

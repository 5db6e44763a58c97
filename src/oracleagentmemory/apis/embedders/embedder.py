"""The text-embedder interface."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import NDArray


def check_texts_encodable(texts: list[str]) -> None:
    """ValueError naming the first text that is not valid Unicode (a lone surrogate cannot
    be encoded as UTF-8, so no tokenizer or server can take it)."""
    for i, text in enumerate(texts):
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(
                    f"texts[{i}] is not valid Unicode: it contains a lone surrogate"
                ) from None


class IEmbedder(ABC):
    """Turns texts into float32 vectors of a fixed dimension."""

    @abstractmethod
    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """Embed ``texts``; returns an array of shape ``(len(texts), embedding_dimension)``.

        ``is_query`` lets asymmetric models embed search queries differently from documents.
        """

    async def embed_async(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """Embed without blocking the event loop (runs :meth:`embed` in a worker thread)."""
        return await asyncio.to_thread(self.embed, texts, is_query=is_query)

    @property
    @abstractmethod
    def embedding_dimension(self) -> int:
        """Length of every vector this embedder returns."""

    @property
    @abstractmethod
    def max_input_tokens(self) -> int:
        """Longest input, in model tokens, embedded without truncation."""

    @property
    def model_identity(self) -> str:
        """Identifies the model (and precision) that wrote a store's vectors.

        Stores record it and refuse to open with a different one, since vectors from different
        models must never share an index. Override it in custom embedders.
        """
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}"

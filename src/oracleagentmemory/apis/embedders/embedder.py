"""The text-embedder interface."""

from __future__ import annotations

import asyncio
import contextlib
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


PROBE_TOKENS = 512
"""What :attr:`IEmbedder.max_input_tokens` assumes when a subclass does not say."""
_PROBE_CHARS_PER_TOKEN = 3.5
"""Characters per token the length probe assumes (no tokenizer runs here)."""


class IEmbedder(ABC):
    """Turns texts into float32 vectors of a fixed dimension.

    Implement :meth:`embed` and :meth:`embed_async` (:func:`embed_in_thread` is a ready
    ``embed_async`` that runs :meth:`embed` in a worker thread). :attr:`embedding_dimension`
    and :attr:`max_input_tokens` have defaults that probe :meth:`embed` once each; override
    them when the model's figures are known.
    """

    @abstractmethod
    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """Embed ``texts``; returns an array of shape ``(len(texts), embedding_dimension)``.

        ``is_query`` lets asymmetric models embed search queries differently from documents.
        """

    @abstractmethod
    async def embed_async(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """Like :meth:`embed`, without blocking the event loop."""

    @property
    def embedding_dimension(self) -> int:
        """Length of every vector this embedder returns.

        The default embeds one short probe text once and keeps the width it gets.
        """
        known = getattr(self, "_probed_dimension", None)
        if known is None:
            out = np.asarray(self.embed(["probe"]))
            if out.ndim != 2 or out.shape[0] != 1 or out.shape[1] < 1:
                raise ValueError(
                    f"{type(self).__name__}.embed must return a 2-D array of shape "
                    f"(len(texts), dimension); for one text it returned shape {out.shape}"
                )
            known = int(out.shape[1])
            self._remember("_probed_dimension", known)
        return int(known)

    @property
    def max_input_tokens(self) -> int:
        """Longest input, in model tokens, embedded without truncation.

        The default embeds one probe text of about :data:`PROBE_TOKENS` tokens once (to check
        the model takes inputs that long) and answers :data:`PROBE_TOKENS`, a conservative
        figure; override it when the model's real limit is known.
        """
        known = getattr(self, "_probed_max_tokens", None)
        if known is None:
            probe = "word " * int(PROBE_TOKENS * _PROBE_CHARS_PER_TOKEN / 5)
            try:
                self.embed([probe.strip()])
            except Exception as exc:
                raise RuntimeError(
                    f"{type(self).__name__}: could not embed a probe of about {PROBE_TOKENS} "
                    f"tokens to settle max_input_tokens ({type(exc).__name__}: {exc}); define "
                    "the max_input_tokens property with the model's input limit"
                ) from exc
            known = PROBE_TOKENS
            self._remember("_probed_max_tokens", known)
        return int(known)

    def _remember(self, name: str, value: int) -> None:
        # With __slots__ (no room for it) the probe simply runs again next time.
        with contextlib.suppress(AttributeError, TypeError):
            object.__setattr__(self, name, value)

    @property
    def model_identity(self) -> str:
        """Identifies the model (and precision) that wrote a store's vectors.

        Stores record it and refuse to open with a different one, since vectors from different
        models must never share an index. Override it in custom embedders.
        """
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}"


async def embed_in_thread(
    self: IEmbedder, texts: list[str], *, is_query: bool = False
) -> NDArray[np.float32]:
    """An ``embed_async`` for embedders whose work is synchronous: runs ``embed`` in a worker
    thread (``embed_async = embed_in_thread`` in the class body)."""
    return await asyncio.to_thread(self.embed, texts, is_query=is_query)


embed_in_thread.__name__ = "embed_async"

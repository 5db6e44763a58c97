"""Embedders, LLMs and rerankers by what they do, not what they subclass.

As in the reference, an object with an interface's methods is accepted where the interface is,
without subclassing it (duck typing). Every route that takes one checks it here: the
interface's abstract methods must be there and callable, else a ``TypeError`` naming the
argument and what is missing. An embedder that does not subclass :class:`IEmbedder` is wrapped
in :class:`DuckEmbedder`, which supplies the members the interface defaults (the probe of
``embedding_dimension`` and ``max_input_tokens``, ``model_identity``); LLMs and rerankers are
used as given (:func:`rerank_now` stands in for a missing ``rerank``).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis._twins import run_blocking
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.reranker import IReranker, RerankResponse

EMBEDDER_METHODS = ("embed", "embed_async")
LLM_METHODS = ("generate", "generate_async")
RERANKER_METHODS = ("rerank_async",)
"""The interfaces' abstract methods; members with a default there are optional."""


def _require(value: Any, name: str, interface: type, methods: tuple[str, ...]) -> None:
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise TypeError(
            f"{name} must implement {interface.__name__}: {type(value).__name__} is missing "
            f"{', '.join(missing)}"
        )


class DuckEmbedder(IEmbedder):
    """An object with :class:`IEmbedder`'s methods, used as one; ``wrapped`` is the object.

    Its own ``embedding_dimension``, ``max_input_tokens`` and ``model_identity`` are used when
    it has them, else the interface's defaults (``model_identity``: its class's name).
    """

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """The wrapped object's ``embed``."""
        return cast(NDArray[np.float32], self.wrapped.embed(texts, is_query=is_query))

    async def embed_async(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """The wrapped object's ``embed_async``."""
        return cast(NDArray[np.float32], await self.wrapped.embed_async(texts, is_query=is_query))

    @property
    def embedding_dimension(self) -> int:
        """The wrapped object's, else probed once (the interface's default)."""
        own = getattr(self.wrapped, "embedding_dimension", None)
        if own is not None:
            return int(own)
        return int(IEmbedder.embedding_dimension.fget(self))  # type: ignore[attr-defined]

    @property
    def max_input_tokens(self) -> int:
        """The wrapped object's, else probed once (the interface's default)."""
        own = getattr(self.wrapped, "max_input_tokens", None)
        if own is not None:
            return int(own)
        return int(IEmbedder.max_input_tokens.fget(self))  # type: ignore[attr-defined]

    @property
    def model_identity(self) -> str:
        """The wrapped object's, else its class's module and name."""
        identity = getattr(self.wrapped, "model_identity", None)
        if isinstance(identity, str) and identity:
            return identity
        cls = type(self.wrapped)
        return f"{cls.__module__}.{cls.__qualname__}"

    def __getattr__(self, name: str) -> Any:
        # Anything else (a ``model`` name, say) is the wrapped object's.
        if name == "wrapped":
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    def __repr__(self) -> str:
        return f"DuckEmbedder({self.wrapped!r})"


def as_embedder(value: Any, name: str = "embedder") -> IEmbedder:
    """``value`` as an :class:`IEmbedder`: itself when it is one, else wrapped in
    :class:`DuckEmbedder` when it has ``embed`` and ``embed_async``; TypeError naming
    ``name`` and what is missing otherwise."""
    if isinstance(value, IEmbedder):
        return value
    _require(value, name, IEmbedder, EMBEDDER_METHODS)
    return DuckEmbedder(value)


def check_llm(value: Any, name: str = "llm") -> ILlm:
    """``value`` itself when it is an :class:`ILlm` or has ``generate`` and
    ``generate_async``; TypeError naming ``name`` and what is missing otherwise."""
    if not isinstance(value, ILlm):
        _require(value, name, ILlm, LLM_METHODS)
    return cast(ILlm, value)


def check_reranker(value: Any, name: str = "reranker") -> IReranker:
    """``value`` itself when it is an :class:`IReranker` or has ``rerank_async``; TypeError
    naming ``name`` and what is missing otherwise."""
    if not isinstance(value, IReranker):
        _require(value, name, IReranker, RERANKER_METHODS)
    return cast(IReranker, value)


def rerank_now(reranker: Any, query: str, documents: list[str]) -> RerankResponse:
    """``reranker.rerank``, or, for a duck without one, its ``rerank_async`` run to the end
    (what :meth:`IReranker.rerank` does)."""
    method = getattr(reranker, "rerank", None)
    if callable(method):
        return cast(RerankResponse, method(query, documents))
    return cast(RerankResponse, run_blocking(lambda: reranker.rerank_async(query, documents)))

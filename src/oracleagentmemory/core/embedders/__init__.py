"""Embedders: the bundled offline model and an adapter for OpenAI-compatible servers."""

from oracleagentmemory.core.embedders._local import LocalEmbedder, default_embedder
from oracleagentmemory.core.embedders.embedder import Embedder, EmbeddingRequestError

__all__ = ["Embedder", "EmbeddingRequestError", "LocalEmbedder", "default_embedder"]

"""Embedders: the bundled offline models and an adapter for OpenAI-compatible servers."""

from oracleagentmemory.core.embedders._default import default_embedder
from oracleagentmemory.core.embedders._e5 import E5Embedder
from oracleagentmemory.core.embedders._local import LocalEmbedder
from oracleagentmemory.core.embedders._rescorer import BiEncoderReranker
from oracleagentmemory.core.embedders.embedder import Embedder, EmbeddingRequestError

__all__ = [
    "BiEncoderReranker",
    "E5Embedder",
    "Embedder",
    "EmbeddingRequestError",
    "LocalEmbedder",
    "default_embedder",
]

"""Embedders: the bundled offline models and an adapter for OpenAI-compatible servers."""

from oracleagentmemory.core.embedders._default import default_embedder
from oracleagentmemory.core.embedders._e5 import E5Embedder
from oracleagentmemory.core.embedders._local import LocalEmbedder
from oracleagentmemory.core.embedders._rescorer import BiEncoderReranker
from oracleagentmemory.core.embedders.embedder import Embedder, EmbeddingRequestError
from oracleagentmemory.core.embedders.oracledb import OracleDBEmbedder

__all__ = [
    "BiEncoderReranker",
    "E5Embedder",
    "Embedder",
    "EmbeddingRequestError",
    "LocalEmbedder",
    "OracleDBEmbedder",
    "default_embedder",
]

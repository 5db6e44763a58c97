"""Embedders: the bundled offline models and an adapter for OpenAI-compatible servers."""

from typing import TYPE_CHECKING

from oracleagentmemory._lazy import lazy_exports

if TYPE_CHECKING:
    from oracleagentmemory.core.embedders._default import default_embedder
    from oracleagentmemory.core.embedders._e5 import E5Embedder
    from oracleagentmemory.core.embedders._local import LocalEmbedder
    from oracleagentmemory.core.embedders._onnx_dir import OnnxDirectoryEmbedder
    from oracleagentmemory.core.embedders._rescorer import BiEncoderReranker
    from oracleagentmemory.core.embedders.embedder import Embedder, EmbeddingRequestError
    from oracleagentmemory.core.embedders.oracledb import OracleDBEmbedder

_EXPORTS = {
    "oracleagentmemory.core.embedders._default": ("default_embedder",),
    "oracleagentmemory.core.embedders._e5": ("E5Embedder",),
    "oracleagentmemory.core.embedders._local": ("LocalEmbedder",),
    "oracleagentmemory.core.embedders._onnx_dir": ("OnnxDirectoryEmbedder",),
    "oracleagentmemory.core.embedders._rescorer": ("BiEncoderReranker",),
    "oracleagentmemory.core.embedders.embedder": (
        "Embedder",
        "EmbeddingRequestError",
    ),
    "oracleagentmemory.core.embedders.oracledb": ("OracleDBEmbedder",),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "BiEncoderReranker",
    "E5Embedder",
    "Embedder",
    "EmbeddingRequestError",
    "LocalEmbedder",
    "OnnxDirectoryEmbedder",
    "OracleDBEmbedder",
    "default_embedder",
]

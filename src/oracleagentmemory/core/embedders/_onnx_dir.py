"""An embedder on a local model directory in the Hugging Face layout: ONNX export + tokenizer.

For weights a company has vetted itself: nothing is downloaded, ever. The directory is what
``optimum-cli export onnx`` writes or what a model repository holds (``onnx/model.onnx`` or
``model.onnx``, ``tokenizer.json``, optionally ``config.json``, ``tokenizer_config.json``,
``sentence_bert_config.json`` and ``1_Pooling/config.json``); it runs on ONNX Runtime with the
``tokenizers`` package, pooled and normalised by the same code as the bundled MiniLM.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder, embed_in_thread
from oracleagentmemory.core.embedders._local import _default_threads, _sha256, cpu_session
from oracleagentmemory.core.embedders._pooling import (
    POOLINGS,
    l2_normalise,
    length_batches,
    padded,
    pool,
)
from oracleagentmemory.core.embedders._validation import check_text_list
from oracleagentmemory.observability._instrument import instrument_embedder

ONNX_FILES = ("onnx/model.onnx", "model.onnx")
"""Where the ONNX export is looked for, in order, when ``onnx_file`` is not given."""
_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "position_ids")
_STATE_OUTPUTS = ("last_hidden_state", "token_embeddings")
_POOLED_OUTPUT = "sentence_embedding"
_ST_POOLING = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "last",
    "pooling_mode_max_tokens": "max",
}
_UNLIMITED = 1_000_000  # tokenizer_config.json's "no limit" is a huge number
_INSTALL_HINT = (
    "OnnxDirectoryEmbedder needs onnxruntime and tokenizers; install `recallwell[local-embeddings]`"
)


def _json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, or {} when the file is absent."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"path: {path} is not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"path: {path} does not hold a JSON object")
    return data


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def _directory(path: Any) -> Path:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ValueError(f"path: {str(root)!r} is not a directory")
    return root


def _onnx_path(root: Path, onnx_file: Any) -> Path:
    if onnx_file is not None:
        if not isinstance(onnx_file, str | os.PathLike):
            raise TypeError(f"onnx_file must be a str or None, got {type(onnx_file).__name__}")
        chosen = root / onnx_file
        if not chosen.is_file():
            raise ValueError(f"onnx_file: {str(chosen)!r} is not a file")
        return chosen
    for name in ONNX_FILES:
        if (root / name).is_file():
            return root / name
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.onnx"))
    hint = f" (it holds {', '.join(found)}: pass onnx_file= to pick one)" if found else ""
    raise ValueError(f"path: {str(root)!r} has no {' or '.join(ONNX_FILES)}{hint}")


def _pooling_mode(root: Path, pooling: Any) -> str:
    if pooling is None:
        declared = _json(root / "1_Pooling" / "config.json")
        modes = [mode for key, mode in _ST_POOLING.items() if declared.get(key)]
        other = [k for k, v in declared.items() if k.startswith("pooling_mode") and v is True]
        if len(other) > len(modes) or len(modes) > 1:
            raise ValueError(
                f"pooling: 1_Pooling/config.json asks for {', '.join(other)}; pass pooling= "
                f"one of {', '.join(POOLINGS)}"
            )
        return modes[0] if modes else "mean"
    if not isinstance(pooling, str):
        raise TypeError(f"pooling must be a str or None, got {type(pooling).__name__}")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    return pooling


def _max_length(root: Path, config: dict[str, Any], given: Any) -> int:
    """``given``, else what the directory declares, capped by the model's position table."""
    positions = config.get("max_position_embeddings")
    limit = int(positions) if isinstance(positions, int) and positions > 0 else None
    if limit is not None and str(config.get("model_type", "")).endswith(("roberta", "camembert")):
        limit -= 2  # RoBERTa's positions start after the padding index
    if given is not None:
        wanted = _positive("max_length", given)
        if limit is not None and wanted > limit:
            raise ValueError(f"max_length must be at most {limit} for this model, got {wanted}")
        return wanted
    for name, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        value = _json(root / name).get(key)
        if isinstance(value, int) and 0 < value < _UNLIMITED:
            return min(value, limit) if limit else value
    return limit or 512


def _pad_id(tokenizer: Any, root: Path, config: dict[str, Any]) -> int:
    padding = tokenizer.padding
    if padding and isinstance(padding.get("pad_id"), int):
        return int(padding["pad_id"])
    token = _json(root / "tokenizer_config.json").get("pad_token")
    if isinstance(token, dict):
        token = token.get("content")
    if isinstance(token, str) and tokenizer.token_to_id(token) is not None:
        return int(tokenizer.token_to_id(token))
    pad = config.get("pad_token_id")
    return int(pad) if isinstance(pad, int) else 0


@instrument_embedder
class OnnxDirectoryEmbedder(IEmbedder):
    """Embeds with a local model directory in the Hugging Face layout, offline.

    ``path`` holds an ONNX export (``onnx/model.onnx`` or ``model.onnx``, or the file
    ``onnx_file`` names relative to ``path``, e.g. a quantized variant) and ``tokenizer.json``.
    ``pooling`` is one of :data:`POOLINGS`; omitted, an export's own ``sentence_embedding``
    output is used as it is, else the token states are pooled as sentence-transformers'
    ``1_Pooling/config.json`` declares, else by ``"mean"``. ``max_length`` (tokens, special tokens
    included; longer texts are truncated) defaults to the directory's
    ``sentence_bert_config.json`` / ``tokenizer_config.json`` / ``config.json``.
    ``query_prefix`` / ``document_prefix`` are prepended as ``is_query`` selects (e5 models
    want ``"query: "`` / ``"passage: "``). ``sha256``, when given, must equal the ONNX file's
    hash, checked before the file is loaded. ``batch_size`` texts go through the model per run
    on ``threads`` ONNX Runtime threads (default: the cores, at most 8). The model loads in the
    constructor.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        onnx_file: str | None = None,
        pooling: str | None = None,
        normalize: bool = True,
        query_prefix: str = "",
        document_prefix: str = "",
        max_length: int | None = None,
        sha256: str | None = None,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        root = _directory(path)
        model = _onnx_path(root, onnx_file)
        tokenizer_file = root / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise ValueError(f"path: {str(root)!r} has no tokenizer.json")
        config = _json(root / "config.json")
        self._pooling = _pooling_mode(root, pooling)
        if not isinstance(normalize, bool):
            raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
        for name, value in (("query_prefix", query_prefix), ("document_prefix", document_prefix)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        if sha256 is not None and (
            not isinstance(sha256, str)
            or len(sha256) != 64
            or any(c not in "0123456789abcdef" for c in sha256.lower())
        ):
            raise ValueError(f"sha256 must be 64 hexadecimal digits or None, got {sha256!r}")
        self._max_length = _max_length(root, config, max_length)
        self._batch_size = _positive("batch_size", batch_size)
        threads = _default_threads() if threads is None else _positive("threads", threads)
        missing = [m for m in ("onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(f"{_INSTALL_HINT} (missing: {', '.join(missing)})")

        self._path, self._onnx = root, model
        self._normalize = normalize
        self._prefixes = (document_prefix, query_prefix)
        self._onnx_sha256 = _sha256(model)
        if sha256 is not None and self._onnx_sha256 != sha256.lower():
            raise ValueError(
                f"sha256: {str(model)!r} has sha256 {self._onnx_sha256}, expected "
                f"{sha256.lower()}; refusing to load it"
            )
        self._tokenizer_sha256 = _sha256(tokenizer_file)
        self._tokenizer = self._load_tokenizer(tokenizer_file, root, config)
        self._tokenizer_lock = threading.Lock()  # one Rust tokenizer behind one Python object
        try:
            self._session = cpu_session(model, threads)
        except Exception as exc:  # ONNX Runtime's own error types; the file is the cause
            raise ValueError(f"onnx_file: ONNX Runtime cannot load {str(model)!r}: {exc}") from exc
        self._inputs = self._check_inputs()
        self._output, width = self._pick_output(pooling is not None)
        # hidden_size is the token states' width; a pooled output may be projected further.
        hidden = None if self._pooled_output else config.get("hidden_size")
        self._dimension = width or (hidden if isinstance(hidden, int) and hidden > 0 else None)

    def _load_tokenizer(self, file: Path, root: Path, config: dict[str, Any]) -> Any:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:
            raise ValueError(f"path: {str(file)!r} is not a tokenizers file ({exc})") from exc
        self._pad = _pad_id(tokenizer, root, config)
        # Padding is per batch (see embed); a file's fixed padding/truncation is replaced.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_length)
        return tokenizer

    def _check_inputs(self) -> dict[str, Any]:
        """The model's inputs by name, with the numpy integer type each takes."""
        inputs: dict[str, Any] = {}
        for arg in self._session.get_inputs():
            if arg.name not in _INPUTS:
                raise ValueError(
                    f"onnx_file: {str(self._onnx)!r} asks for input {arg.name!r}; an encoder "
                    f"export takes only {', '.join(_INPUTS)}"
                )
            inputs[arg.name] = np.int32 if arg.type == "tensor(int32)" else np.int64
        if "input_ids" not in inputs:
            raise ValueError(f"onnx_file: {str(self._onnx)!r} has no input_ids input")
        return inputs

    def _pick_output(self, pooling_given: bool) -> tuple[str, int | None]:
        """The output to read and its width if fixed: sentence-transformers' own pooled
        ``sentence_embedding`` unless ``pooling`` was given, else the token states."""
        outputs = {arg.name: arg for arg in self._session.get_outputs()}
        name = next((n for n in _STATE_OUTPUTS if n in outputs), next(iter(outputs)))
        if not pooling_given and _POOLED_OUTPUT in outputs:
            name = _POOLED_OUTPUT
        shape = outputs[name].shape
        if len(shape) not in (2, 3):
            raise ValueError(f"onnx_file: output {name!r} has shape {shape}, not 2-D or 3-D")
        self._pooled_output = len(shape) == 2
        if self._pooled_output:
            self._pooling = "model"  # the export pools; the identity says so
        width = shape[-1]
        return name, width if isinstance(width, int) and width > 0 else None

    embed_async = embed_in_thread

    def __repr__(self) -> str:
        return f"OnnxDirectoryEmbedder({str(self._path)!r}, pooling={self._pooling!r})"

    @property
    def onnx_path(self) -> Path:
        """The ONNX file that was loaded."""
        return self._onnx

    @property
    def onnx_sha256(self) -> str:
        """The loaded ONNX file's sha256 (what to pin with ``sha256=``)."""
        return self._onnx_sha256

    @property
    def embedding_dimension(self) -> int:
        """From the ONNX output's shape, else ``config.json``'s ``hidden_size``, else a probe."""
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    @property
    def max_input_tokens(self) -> int:
        return self._max_length

    @property
    def model_identity(self) -> str:
        """The ONNX file's and tokenizer's hashes and the settings that change the vectors."""
        identity = (
            f"onnx-dir:model={self._onnx_sha256[:16]},tokenizer={self._tokenizer_sha256[:16]},"
            f"pooling={self._pooling}"
        )
        if not self._normalize:
            identity += ",unnormalized"
        if any(self._prefixes):
            digest = hashlib.sha256(json.dumps(self._prefixes).encode()).hexdigest()
            identity += f",prefixes={digest[:8]}"
        return identity

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """Texts longer than :attr:`max_input_tokens` are truncated."""
        check_text_list(texts)
        if not texts:
            return np.empty((0, self.embedding_dimension), dtype=np.float32)
        prefix = self._prefixes[1] if is_query else self._prefixes[0]
        with self._tokenizer_lock:
            encodings = self._tokenizer.encode_batch([prefix + t for t in texts])
        parts: list[tuple[list[int], NDArray[np.float32]]] = []
        for rows in length_batches(encodings, self._batch_size):
            parts.append((rows, self._run([encodings[i] for i in rows])))
        width = parts[0][1].shape[1]
        if self._dimension is not None and width != self._dimension:
            raise RuntimeError(f"the model gave {width}-wide vectors, expected {self._dimension}")
        out = np.empty((len(texts), width), dtype=np.float32)
        for rows, vectors in parts:
            out[rows] = vectors
        return out

    def _run(self, encodings: list[Any]) -> NDArray[np.float32]:
        ids, mask, types = padded(encodings, self._pad)
        width = ids.shape[1]
        feed = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": types,
            "position_ids": np.broadcast_to(np.arange(width), ids.shape),
        }
        inputs = {name: feed[name].astype(dtype) for name, dtype in self._inputs.items()}
        (result,) = self._session.run([self._output], inputs)
        vectors = np.asarray(result, dtype=np.float32)
        if not self._pooled_output:
            vectors = pool(vectors, mask, self._pooling)
        return l2_normalise(vectors) if self._normalize else vectors

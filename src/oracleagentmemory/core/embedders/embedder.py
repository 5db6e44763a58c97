"""An embedder for any server that speaks OpenAI's ``POST /v1/embeddings`` (OpenAI, vLLM, ...)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import ssl
import threading
import time
import weakref
from types import TracebackType
from typing import Any

import httpx
import numpy as np
from numpy.typing import NDArray

from oracleagentmemory._notset import NOT_SET, NotSet
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.observability._instrument import instrument_embedder

_DEFAULT_API_BASE = "https://api.openai.com/v1"
_DEFAULT_MAX_INPUT_TOKENS = 512
_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_RESERVED_KWARGS = frozenset({"model", "input", "dimensions", "truncate_prompt_tokens"})
_PROBE_TEXT = "dimension probe"
# Failures before the server saw the request (or a dropped keep-alive), so a retry is safe.
_RETRYABLE_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError)


class EmbeddingRequestError(RuntimeError):
    """The embeddings endpoint could not be reached or refused a request.

    ``status_code`` is the HTTP status (``None`` when no response came back) and
    ``server_message`` the server's own explanation, when it gave one.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, server_message: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.server_message = server_message


def _optional_str(name: str, value: object) -> str | None:
    if value is NOT_SET or value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    return value


def _optional_file(name: str, value: object) -> str | None:
    path = _optional_str(name, value)
    if path is not None and not os.path.exists(path):
        raise ValueError(f"{name} does not exist: {path!r}")
    return path


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def _bool(name: str, value: object, default: bool) -> bool:
    if value is NOT_SET:
        return default
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def _server_message(response: httpx.Response) -> str:
    """The human part of an error body, in the shapes OpenAI, vLLM and FastAPI use."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:500] if text else response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, str):
                return value
    return str(body)[:500]


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


def _retry_delay(attempt: int, response: httpx.Response | None) -> float:
    if response is not None:
        header = response.headers.get("retry-after")
        if header is not None:
            try:
                seconds = float(header)
            except ValueError:
                pass
            else:
                return min(max(seconds, 0.0), 20.0)
    return 0.5 * 2.0**attempt


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
    #: Extra attempts after a connection failure or a 408/429/5xx answer.
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

        base = _optional_str("api_base", api_base)
        if base is None:
            base = os.environ.get("OPENAI_BASE_URL") or _DEFAULT_API_BASE
        base = base.rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ValueError(f"api_base must be an http(s) URL, got {base!r}")
        self._url = base if base.endswith("/embeddings") else f"{base}/embeddings"
        self._api_base = base

        key = os.environ.get("OPENAI_API_KEY") if api_key is NOT_SET else api_key
        self._api_key = _optional_str("api_key", key) or None

        self._requested_dimension: int | None = None
        if embedding_dimension is not NOT_SET and embedding_dimension is not None:
            self._requested_dimension = _positive_int("embedding_dimension", embedding_dimension)
        self._dimension: int | None = self._requested_dimension

        self._max_input_tokens = (
            _DEFAULT_MAX_INPUT_TOKENS
            if max_input_tokens is NOT_SET
            else _positive_int("max_input_tokens", max_input_tokens)
        )
        self._normalize = _bool("normalize", normalize, True)
        self._query_prefix = _optional_str("query_prefix", query_prefix) or ""
        self._document_prefix = _optional_str("document_prefix", document_prefix) or ""

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

        self._trust_env = _bool("trust_env", trust_env, True)
        self._proxy = _optional_str("proxy", proxy)
        self._verify = self._tls_config(
            _optional_file("cert_file", cert_file),
            _optional_file("key_file", key_file),
            _optional_file("ca_file", ca_file),
        )

        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        # An AsyncClient's pooled connections belong to the loop that opened them.
        self._aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._aclients = weakref.WeakKeyDictionary()

    def _tls_config(
        self, cert_file: str | None, key_file: str | None, ca_file: str | None
    ) -> ssl.SSLContext | bool:
        if key_file is not None and cert_file is None:
            raise ValueError("key_file needs cert_file")
        if cert_file is None and ca_file is None:
            return True  # httpx's own defaults, which honour SSL_CERT_FILE when trust_env
        if ca_file is None:
            ctx = httpx.create_ssl_context(trust_env=self._trust_env)
        elif os.path.isdir(ca_file):
            ctx = ssl.create_default_context(capath=ca_file)
        else:
            ctx = ssl.create_default_context(cafile=ca_file)
        if cert_file is not None:
            ctx.load_cert_chain(cert_file, key_file)
        return ctx

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

    def _client_kwargs(self) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return {
            "headers": headers,
            "verify": self._verify,
            "proxy": self._proxy,
            "trust_env": self._trust_env,
            "timeout": httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
        }

    def _sync_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(**self._client_kwargs())
            return self._client

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._aclients.get(loop)
            if client is None:
                for stale in [old for old in self._aclients if old.is_closed()]:
                    del self._aclients[stale]  # its loop is gone; nothing can close it now
                client = self._aclients[loop] = httpx.AsyncClient(**self._client_kwargs())
            return client

    def _body(self, inputs: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._model, "input": inputs, **self._default_kwargs}
        if self._requested_dimension is not None:
            body["dimensions"] = self._requested_dimension
        if self._truncate is not None:
            body["truncate_prompt_tokens"] = self._truncate
        return body

    def _check(self, response: httpx.Response, expected: int) -> NDArray[np.float32]:
        if not response.is_success:
            message = _server_message(response)
            raise EmbeddingRequestError(
                f"embeddings request to {self._url} failed with HTTP {response.status_code}: "
                f"{message}",
                status_code=response.status_code,
                server_message=message,
            )
        try:
            body = response.json()
        except ValueError as exc:
            raise ValueError(f"embeddings response from {self._url} is not JSON") from exc
        return _parse_vectors(body, expected)

    def _transport_error(self, exc: httpx.HTTPError) -> EmbeddingRequestError:
        return EmbeddingRequestError(
            f"embeddings request to {self._url} failed: {type(exc).__name__}: {exc}"
        )

    @staticmethod
    def _retryable(exc: httpx.HTTPError) -> bool:
        return isinstance(exc, _RETRYABLE_ERRORS)

    def _post(self, inputs: list[str]) -> NDArray[np.float32]:
        client = self._sync_client()
        body = self._body(inputs)
        attempt = 0
        while True:
            try:
                response = client.post(self._url, json=body)
            except httpx.HTTPError as exc:
                if attempt >= self.max_retries or not self._retryable(exc):
                    raise self._transport_error(exc) from exc
                time.sleep(_retry_delay(attempt, None))
            else:
                if response.status_code not in _RETRY_STATUSES or attempt >= self.max_retries:
                    return self._check(response, len(inputs))
                time.sleep(_retry_delay(attempt, response))
            attempt += 1

    async def _apost(self, inputs: list[str]) -> NDArray[np.float32]:
        client = self._async_client()
        body = self._body(inputs)
        attempt = 0
        while True:
            try:
                response = await client.post(self._url, json=body)
            except httpx.HTTPError as exc:
                if attempt >= self.max_retries or not self._retryable(exc):
                    raise self._transport_error(exc) from exc
                await asyncio.sleep(_retry_delay(attempt, None))
            else:
                if response.status_code not in _RETRY_STATUSES or attempt >= self.max_retries:
                    return self._check(response, len(inputs))
                await asyncio.sleep(_retry_delay(attempt, response))
            attempt += 1

    # -- embedding -----------------------------------------------------------------------------

    def _prepare(self, texts: list[str], is_query: bool) -> list[str]:
        if isinstance(texts, str) or not isinstance(texts, list):
            raise TypeError(f"texts must be a list of str, got {type(texts).__name__}")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] must be str, got {type(text).__name__}")
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
        size = _positive_int("batch_size", self.batch_size)
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
        with self._lock:
            client, self._client = self._client, None
            aclients = list(self._aclients.items())
            self._aclients.clear()
        if client is not None:
            client.close()
        for loop, aclient in aclients:
            _close_on_loop(loop, aclient)

    async def aclose(self) -> None:
        """Release pooled connections, the running loop's async pool included."""
        loop = asyncio.get_running_loop()
        with self._lock:
            aclient = self._aclients.pop(loop, None)
        if aclient is not None:
            await aclient.aclose()
        self.close()

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


_pending_closes: set[asyncio.Task[None]] = set()


def _close_on_loop(loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient) -> None:
    if loop.is_closed():
        return
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        task = loop.create_task(client.aclose())
        _pending_closes.add(task)  # keep a reference until it is done
        task.add_done_callback(_pending_closes.discard)
    elif loop.is_running():
        asyncio.run_coroutine_threadsafe(client.aclose(), loop)
    elif running is None:
        loop.run_until_complete(client.aclose())

"""``Reranker``: served rerank models behind the common ``POST /rerank`` protocol.

Cohere (v1/v2), Jina, vLLM and Infinity all take ``{model, query, documents, top_n?}`` and
answer ``{"results": [{"index", "relevance_score", "document"?}]}``; this adapter speaks that
protocol over httpx with the same retry and pooling machinery as the other HTTP adapters.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import math
import os
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx

from oracleagentmemory._notset import NOT_SET, NOT_SET_MARKER as NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.reranker import IReranker, RerankResponse, RerankResponseResult
from oracleagentmemory.core._shared._http import (
    Attempts,
    HttpRequestError,
    JsonHttpClient,
    RetryPolicy,
    api_base_arg,
    optional_str,
    retry_after,
)

# prefix -> (default api_base or None when required, environment variable holding the key)
_PROVIDERS: dict[str, tuple[str | None, str | None]] = {
    "cohere": ("https://api.cohere.com/v2", "COHERE_API_KEY"),
    "jina_ai": ("https://api.jina.ai/v1", "JINA_AI_API_KEY"),
    "hosted_vllm": (None, None),
    "vllm": (None, None),
    "infinity": (None, None),
}
# Providers with their own rerank protocols, reached through litellm.
_LITELLM_PROVIDERS = frozenset({"azure_ai", "bedrock", "together_ai", "voyage", "nvidia_nim"})
_CLIENT_KWARGS = frozenset({"timeout", "max_retries", "num_retries", "extra_headers"})
_RESERVED = frozenset({"model", "query", "documents"})


class RerankRequestError(HttpRequestError):
    """The rerank endpoint could not be reached or refused a request (after retries)."""


def _parse_result(item: Any, position: int, count: int) -> RerankResponseResult:
    where = f"malformed rerank response: results[{position}]"
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} is not an object")
    index = item.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise ValueError(f"{where}.index is {index!r} for {count} documents")
    score = item.get("relevance_score", item.get("score"))
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise ValueError(f"{where}.relevance_score is {score!r}")
    document = item.get("document")
    if isinstance(document, Mapping):
        document = document.get("text")
    if document is not None and not isinstance(document, str):
        raise ValueError(f"{where}.document is not text")
    return RerankResponseResult(index, float(score), document)


def parse_rerank(body: Any, count: int, *, complete: bool) -> RerankResponse:
    """The server's answer as a :class:`RerankResponse`, most relevant first.

    ``complete`` (no ``top_n`` requested) demands that every input index is ranked.
    """
    results = body.get("results") if isinstance(body, Mapping) else None
    if not isinstance(results, list):
        raise ValueError("malformed rerank response: no 'results' list")
    parsed = [_parse_result(item, i, count) for i, item in enumerate(results)]
    seen = [r.index for r in parsed]
    if len(set(seen)) != len(seen):
        raise ValueError("malformed rerank response: an index appears twice")
    if complete and len(parsed) != count:
        raise ValueError(f"malformed rerank response: {len(parsed)} results for {count} documents")
    parsed.sort(key=lambda r: (-r.relevance_score, r.index))
    return RerankResponse(parsed)


class Reranker(IReranker):
    """Reranks through a served model speaking the common ``/rerank`` protocol.

    ``model`` may carry a provider prefix: ``cohere/`` (default ``api_base``
    ``https://api.cohere.com/v2``, key from ``COHERE_API_KEY``), ``jina_ai/``
    (``https://api.jina.ai/v1``, ``JINA_AI_API_KEY``), or ``hosted_vllm/``, ``vllm/``,
    ``infinity/`` (``api_base`` required); the prefix is not sent. ``azure_ai/``,
    ``bedrock/``, ``together_ai/``, ``voyage/`` and ``nvidia_nim/`` go through litellm (extra
    ``[litellm]``). Without a prefix, ``api_base`` is required. Extra keyword arguments
    (``top_n``, ``return_documents``, ...) go into every request body, except ``timeout``,
    ``max_retries``/``num_retries`` and ``extra_headers``, which configure the client. Proxy
    and CA settings come from the environment (``HTTPS_PROXY``, ``SSL_CERT_FILE``).
    """

    #: Extra attempts after a timeout, a connection failure or a 408/429/5xx answer.
    max_retries: int = 2
    #: Seconds to wait for an answer.
    timeout: float = 60.0

    def __init__(
        self,
        model: str,
        api_base: str | NotSet | None = NOT_SET,
        api_key: str | NotSet | None = NOT_SET,
        **default_kwargs: Any,
    ) -> None:
        if not isinstance(model, str):
            raise TypeError(f"model must be a str, got {type(model).__name__}")
        if not model.strip():
            raise ValueError("model must be a non-empty str")
        self._model = model
        self._client_options, self._default_body = _split(default_kwargs)
        prefix, slash, rest = model.partition("/")
        self._litellm: Any = None
        self._http: JsonHttpClient | None = None
        if slash and prefix in _LITELLM_PROVIDERS:
            if importlib.util.find_spec("litellm") is None:
                raise ImportError(
                    f"model {model!r} is served through litellm, which is not installed: "
                    "pip install 'recallwell[litellm]'"
                )
            self._api_base = optional_str("api_base", api_base)
            self._api_key = optional_str("api_key", api_key)
            self._send_model = model
            return
        default_base, key_env = _PROVIDERS.get(prefix, (None, None)) if slash else (None, None)
        self._send_model = rest if slash and prefix in _PROVIDERS else model
        if (api_base is NOT_SET or api_base is None) and default_base is None:
            raise ValueError(f"model {model!r} needs an api_base (the rerank server's URL)")
        base = api_base_arg(api_base, default_base or "")
        self._api_base = base
        self._url = base if base.endswith("/rerank") else f"{base}/rerank"
        if api_key is NOT_SET:
            key = os.environ.get(key_env) if key_env else None
        else:
            key = optional_str("api_key", api_key)
        self._api_key = key
        self._http = JsonHttpClient(
            what="rerank",
            error_class=RerankRequestError,
            api_key=key or None,
            verify=True,
            proxy=None,
            trust_env=True,
            timeout=self.timeout,
        )

    def __repr__(self) -> str:
        return f"Reranker(model={self._model!r}, api_base={self._api_base!r})"

    @property
    def model(self) -> str:
        """The model name as given."""
        return self._model

    def _request(
        self, query: str, documents: list[str], kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], bool]:
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        if not query.strip():
            raise ValueError("query must be a non-empty str")
        if isinstance(documents, str) or not isinstance(documents, list):
            raise TypeError(f"documents must be a list of str, got {type(documents).__name__}")
        for i, doc in enumerate(documents):
            if not isinstance(doc, str):
                raise TypeError(f"documents[{i}] must be a str, got {type(doc).__name__}")
        client, extra = _split(kwargs)
        options = {**self._client_options, **client}
        body: dict[str, Any] = {"model": self._send_model, "query": query, "documents": documents}
        for key, value in {**self._default_body, **extra}.items():
            if value is not None:
                body[key] = value
        top_n = body.get("top_n")
        if top_n is not None and (
            isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1
        ):
            raise ValueError(f"top_n must be a positive int, got {top_n!r}")
        retries = options.get("max_retries", options.get("num_retries", self.max_retries))
        send = {
            "timeout": float(options.get("timeout", self.timeout)),
            "headers": dict(options.get("extra_headers") or {}) or None,
            "policy": RetryPolicy(max_retries=retries),
        }
        complete = top_n is None or top_n >= len(documents)
        return body, send, complete

    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Rank ``documents`` by relevance to ``query``, most relevant first.

        Every input index appears once, unless a ``top_n`` was asked for.
        """
        body, send, complete = self._request(query, documents, kwargs)
        if not documents:
            return RerankResponse([])
        if self._http is None:
            litellm, kwargs = self._litellm_module(), self._litellm_kwargs(body, send)
            attempts = Attempts(send["policy"])
            while True:
                try:
                    answer = litellm.rerank(**kwargs)
                    return parse_rerank(_plain(answer), len(documents), complete=complete)
                except ValueError:
                    raise
                except Exception as exc:
                    error, delay = _litellm_failure(self._model, attempts, exc)
                    if delay is None:
                        raise error from exc
                time.sleep(delay)
        answer = self._http.post(self._url, body, **send)
        return parse_rerank(answer, len(documents), complete=complete)

    async def rerank_async(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Like :meth:`rerank`, on the running loop's own connection pool."""
        body, send, complete = self._request(query, documents, kwargs)
        if not documents:
            return RerankResponse([])
        if self._http is None:
            litellm, kwargs = self._litellm_module(), self._litellm_kwargs(body, send)
            attempts = Attempts(send["policy"])
            while True:
                try:
                    answer = await litellm.arerank(**kwargs)
                    return parse_rerank(_plain(answer), len(documents), complete=complete)
                except ValueError:
                    raise
                except Exception as exc:
                    error, delay = _litellm_failure(self._model, attempts, exc)
                    if delay is None:
                        raise error from exc
                await asyncio.sleep(delay)
        answer = await self._http.apost(self._url, body, **send)
        return parse_rerank(answer, len(documents), complete=complete)

    # -- litellm ----------------------------------------------------------------------------

    def _litellm_module(self) -> Any:
        if self._litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            self._litellm = importlib.import_module("litellm")
        return self._litellm

    def _litellm_kwargs(self, body: dict[str, Any], send: dict[str, Any]) -> dict[str, Any]:
        kwargs = {**body, "timeout": send["timeout"]}
        if self._api_base is not None:
            kwargs["api_base"] = self._api_base
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key
        return kwargs

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Release pooled connections; a later call opens new ones."""
        if self._http is not None:
            self._http.close()

    async def aclose(self) -> None:
        """Release pooled connections, the running loop's async pool included."""
        if self._http is not None:
            await self._http.aclose()

    def __enter__(self) -> Reranker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Reranker:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _split(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    clash = _RESERVED.intersection(kwargs)
    if clash:
        raise ValueError(f"{', '.join(sorted(clash))} cannot be passed as extra request fields")
    client = {k: v for k, v in kwargs.items() if k in _CLIENT_KWARGS}
    body = {k: v for k, v in kwargs.items() if k not in _CLIENT_KWARGS}
    timeout = client.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    for name in ("max_retries", "num_retries"):
        value = client.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return client, body


def _litellm_failure(
    model: str, attempts: Attempts, exc: Exception
) -> tuple[RerankRequestError, float | None]:
    """The adapter's error for a litellm exception, and the wait before a retry (None: final;
    only provider answers, which carry a status, are retried)."""
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    response = getattr(exc, "response", None)
    wanted = retry_after(response) if isinstance(response, httpx.Response) else None
    error = RerankRequestError(
        f"litellm rerank request for {model!r} failed: {type(exc).__name__}: {exc}",
        status_code=status,
        server_message=str(getattr(exc, "message", exc)),
    )
    return error, None if status is None else attempts.after_status(status, wanted)


def _plain(answer: Any) -> Any:
    """A litellm response object as plain data."""
    dump = getattr(answer, "model_dump", None)
    return dump() if callable(dump) else answer

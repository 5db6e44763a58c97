"""The two transports behind :class:`~oracleagentmemory.core.llms.Llm`: the OpenAI protocol over
httpx (``HttpBackend``) and litellm for providers that do not speak it (``LitellmBackend``).

Both turn one :class:`Request` into one :class:`Completion`, sync or async; structured-output
fallbacks, repair and validation happen above them, the same for both.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from oracleagentmemory.core._shared._http import (
    Attempts,
    ConcurrencyLimit,
    JsonHttpClient,
    RetryPolicy,
    retry_after,
)
from oracleagentmemory.core.llms import _openai
from oracleagentmemory.core.llms._errors import LlmRequestError
from oracleagentmemory.core.llms._messages import to_chat_completions
from oracleagentmemory.core.llms._structured import Completion, OutputMode, Request

LITELLM_EXTRA_HINT = "pip install 'recallwell[litellm]'"


@dataclass
class CallOptions:
    """Everything about one ``generate`` call except the transcript."""

    api_type: str
    stream: bool
    sampling: _openai.Sampling
    timeout: float
    policy: RetryPolicy
    headers: dict[str, str] = field(default_factory=dict)


class Backend(Protocol):
    """One request in, one completion out."""

    def complete(self, request: Request, options: CallOptions) -> Completion: ...

    async def acomplete(self, request: Request, options: CallOptions) -> Completion: ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


def _no_retry(request: Request) -> Collection[int]:
    # A server that cannot do a response_format often answers 500 (llama-cpp-python): fall
    # back to the next mode at once instead of retrying the same rejected request.
    return {500} if request.mode in (OutputMode.JSON_SCHEMA, OutputMode.JSON_OBJECT) else ()


class HttpBackend:
    """Chat completions and the responses API of an OpenAI-compatible server."""

    def __init__(self, *, model: str, api_base: str, http: JsonHttpClient) -> None:
        self.model = model
        for suffix in ("/chat/completions", "/responses"):
            if api_base.endswith(suffix):
                api_base = api_base[: -len(suffix)]
        self.api_base = api_base
        self.http = http

    def url(self, api_type: str) -> str:
        """The endpoint of ``api_type``."""
        path = "chat/completions" if api_type == _openai.CHAT else "responses"
        return f"{self.api_base}/{path}"

    def _send_args(
        self, request: Request, options: CallOptions
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        url = self.url(options.api_type)
        body = _openai.request_body(
            options.api_type, self.model, request, options.sampling, options.stream
        )
        kwargs: dict[str, Any] = {
            "timeout": options.timeout,
            "headers": options.headers or None,
            "no_retry": _no_retry(request),
            "policy": options.policy,
        }
        return url, body, kwargs

    def complete(self, request: Request, options: CallOptions) -> Completion:
        url, body, kwargs = self._send_args(request, options)
        if options.stream:
            with self.http.stream_lines(url, body, **kwargs) as lines:
                return _openai.assemble(options.api_type, url, lines)
        return _openai.parse(options.api_type, self.http.post(url, body, **kwargs), url)

    async def acomplete(self, request: Request, options: CallOptions) -> Completion:
        url, body, kwargs = self._send_args(request, options)
        if options.stream:
            async with self.http.astream_lines(url, body, **kwargs) as lines:
                return await _openai.aassemble(options.api_type, url, lines)
        return _openai.parse(options.api_type, await self.http.apost(url, body, **kwargs), url)

    def close(self) -> None:
        self.http.close()

    async def aclose(self) -> None:
        await self.http.aclose()


def litellm_available() -> bool:
    """True when the optional ``litellm`` package can be imported."""
    return importlib.util.find_spec("litellm") is not None


class LitellmBackend:
    """Providers with their own protocols (Anthropic, Bedrock, Vertex AI, ...) via litellm.

    litellm is imported on first use, with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so the import
    does not fetch a cost map from the internet. Failures come back as :class:`LlmRequestError`
    with the provider's status, and are retried by the same policy as HTTP requests (408, 429,
    5xx, with the provider's Retry-After when litellm passes the response on).
    """

    def __init__(
        self, *, model: str, api_base: str | None, api_key: str | None, limit: ConcurrencyLimit
    ) -> None:
        if not litellm_available():
            raise ImportError(
                f"model {model!r} is served through litellm, which is not installed: "
                f"{LITELLM_EXTRA_HINT}"
            )
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.limit = limit
        self._module: Any = None

    def _litellm(self) -> Any:
        if self._module is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            self._module = importlib.import_module("litellm")
        return self._module

    def _kwargs(self, request: Request, options: CallOptions) -> dict[str, Any]:
        sampling = options.sampling
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_chat_completions(request.messages),
            "timeout": options.timeout,
        }
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        if sampling.temperature is not None:
            kwargs["temperature"] = sampling.temperature
        if sampling.max_tokens is not None:
            kwargs["max_tokens"] = sampling.max_tokens
        if sampling.reasoning_effort is not None:
            kwargs["reasoning_effort"] = sampling.reasoning_effort
        if request.mode is OutputMode.JSON_SCHEMA and request.schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": request.schema},
            }
        elif request.mode is OutputMode.JSON_OBJECT:
            kwargs["response_format"] = {"type": "json_object"}
        if options.headers:
            kwargs["extra_headers"] = dict(options.headers)
        if options.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        for key, value in sampling.extra.items():
            if value is None:
                kwargs.pop(key, None)
            else:
                kwargs[key] = value
        return kwargs

    def _error(self, exc: Exception) -> tuple[LlmRequestError, float | None]:
        """The adapter's error for a litellm exception, and the provider's Retry-After."""
        status = getattr(exc, "status_code", None)
        response = getattr(exc, "response", None)
        wanted = retry_after(response) if isinstance(response, httpx.Response) else None
        error = LlmRequestError(
            f"litellm request for {self.model!r} failed: {type(exc).__name__}: {exc}",
            status_code=status if isinstance(status, int) else None,
            server_message=str(getattr(exc, "message", exc)),
        )
        return error, wanted

    def _retry_delay(
        self, attempts: Attempts, exc: Exception
    ) -> tuple[LlmRequestError, float | None]:
        error, wanted = self._error(exc)
        # Only provider answers carry a status; anything else (a bug, a bad argument) is final.
        delay = (
            None if error.status_code is None else attempts.after_status(error.status_code, wanted)
        )
        return error, delay

    def complete(self, request: Request, options: CallOptions) -> Completion:
        litellm = self._litellm()
        kwargs = self._kwargs(request, options)
        attempts = Attempts(options.policy, _no_retry(request))
        while True:
            try:
                with self.limit.hold():
                    answer = litellm.completion(**kwargs)
                    return (
                        _fold_chunks(list(answer))
                        if options.stream
                        else _from_model_response(answer)
                    )
            except Exception as exc:
                error, delay = self._retry_delay(attempts, exc)
                if delay is None:
                    raise error from exc
            time.sleep(delay)

    async def acomplete(self, request: Request, options: CallOptions) -> Completion:
        litellm = self._litellm()
        kwargs = self._kwargs(request, options)
        attempts = Attempts(options.policy, _no_retry(request))
        while True:
            try:
                async with self.limit.ahold():
                    answer = await litellm.acompletion(**kwargs)
                    if options.stream:
                        return _fold_chunks([chunk async for chunk in answer])
                    return _from_model_response(answer)
            except Exception as exc:
                error, delay = self._retry_delay(attempts, exc)
                if delay is None:
                    raise error from exc
            await asyncio.sleep(delay)

    def close(self) -> None:
        """litellm keeps its own module-level clients; nothing to release here."""

    async def aclose(self) -> None:
        """litellm keeps its own module-level clients; nothing to release here."""


def _dump(obj: Any) -> Any:
    """A litellm response object as plain JSON data."""
    for method in ("model_dump", "dict", "json"):
        fn = getattr(obj, method, None)
        if callable(fn):
            data = fn()
            return json.loads(data) if isinstance(data, str) else data
    return obj


def _from_model_response(answer: Any) -> Completion:
    return _openai.parse_chat(_dump(answer), "litellm")


def _fold_chunks(chunks: list[Any]) -> Completion:
    assembler = _openai.StreamAssembler(_openai.CHAT, "litellm")
    for chunk in chunks:
        assembler.feed_line("data: " + json.dumps(_dump(chunk)))
    return assembler.result()

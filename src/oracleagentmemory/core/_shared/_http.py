"""HTTP plumbing shared by the adapters for served models (embeddings, chat, rerank).

One :class:`JsonHttpClient` per adapter instance holds a pooled sync ``httpx.Client`` and one
``httpx.AsyncClient`` per event loop, TLS and proxy settings, the retry policy (exponential
backoff with jitter on 408/429/5xx, timeouts and connection failures, honouring
``Retry-After``) and an optional :class:`ConcurrencyLimit` held for each attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import os
import random
import ssl
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET

if TYPE_CHECKING:  # imported where used: a process that serves no model never loads httpx
    import httpx

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP statuses worth another attempt: timeouts, rate limits and server-side failures."""


class HttpRequestError(RuntimeError):
    """A served model could not be reached or refused a request.

    ``status_code`` is the HTTP status (``None`` when no response came back) and
    ``server_message`` the server's own explanation, when it gave one.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, server_message: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.server_message = server_message


ErrorFactory = Callable[..., HttpRequestError]


# -- argument validation shared by the adapters' constructors ---------------------------------


def optional_str(name: str, value: object) -> str | None:
    """``value`` as a str, ``None`` when omitted or None; TypeError otherwise."""
    if value is NOT_SET or value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    return value


def optional_file(name: str, value: object) -> str | None:
    """A path that must exist, or ``None``."""
    path = optional_str(name, value)
    if path is not None and not os.path.exists(path):
        raise ValueError(f"{name} does not exist: {path!r}")
    return path


def positive_int(name: str, value: object) -> int:
    """``value`` if it is an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def bool_arg(name: str, value: object, default: bool) -> bool:
    """``default`` when omitted, else ``value`` if it is a bool."""
    if value is NOT_SET:
        return default
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def api_base_arg(value: object, default: str) -> str:
    """A validated http(s) base URL without a trailing slash (``default`` when omitted)."""
    base = optional_str("api_base", value) or default
    base = base.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"api_base must be an http(s) URL, got {base!r}")
    return base


def tls_verify(
    *, cert_file: str | None, key_file: str | None, ca_file: str | None, trust_env: bool
) -> ssl.SSLContext | bool:
    """httpx's ``verify`` value for a custom CA (file or directory) and/or a client certificate."""
    import httpx

    if key_file is not None and cert_file is None:
        raise ValueError("key_file needs cert_file")
    if cert_file is None and ca_file is None:
        return True  # httpx's own defaults, which honour SSL_CERT_FILE when trust_env
    if ca_file is None:
        ctx = httpx.create_ssl_context(trust_env=trust_env)
    elif os.path.isdir(ca_file):
        ctx = ssl.create_default_context(capath=ca_file)
    else:
        ctx = ssl.create_default_context(cafile=ca_file)
    if cert_file is not None:
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


def server_message(response: httpx.Response) -> str:
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


# -- retries -----------------------------------------------------------------------------------


@dataclass
class RetryPolicy:
    """How often and how long to wait before trying a request again.

    The n-th retry (from 0) waits a random time in ``[d/2, d]`` with
    ``d = min(max_delay, base_delay * 2**n)`` ("equal jitter"), unless the server sent
    ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``: that wait is honoured,
    up to ``max_retry_after`` seconds.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0


def retry_after(response: httpx.Response | None) -> float | None:
    """The server's requested wait in seconds, when it sent one."""
    if response is None:
        return None
    millis = response.headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            return max(float(millis) / 1000.0, 0.0)
    header = response.headers.get("retry-after")
    if header is None:
        return None
    try:
        return max(float(header), 0.0)
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(header)
        return max(when.timestamp() - time.time(), 0.0)
    return None


def _tls_failure(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def retryable_error(exc: httpx.HTTPError) -> bool:
    """Timeouts, dropped or refused connections: worth another attempt (TLS failures are not)."""
    import httpx

    transient = isinstance(
        exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError
    )
    return transient and not _tls_failure(exc)


class Attempts:
    """The retry decision of one logical request, shared by every sync and async loop."""

    def __init__(self, policy: RetryPolicy, no_retry: Collection[int] = ()) -> None:
        self.policy = policy
        self.no_retry = no_retry
        self.attempt = 0

    def _backoff(self) -> float:
        ceiling = min(self.policy.max_delay, self.policy.base_delay * 2.0**self.attempt)
        return random.uniform(ceiling / 2.0, ceiling)

    def after_status(self, status: int | None, wanted: float | None = None) -> float | None:
        """Seconds to wait before retrying after a failure with HTTP ``status`` (``None``: a
        timeout or lost connection), or None when it is final. ``wanted`` is the server's
        Retry-After, honoured up to ``max_retry_after``."""
        if self.attempt >= self.policy.max_retries:
            return None
        if status is not None and (status not in RETRY_STATUSES or status in self.no_retry):
            return None
        delay = self._backoff() if wanted is None else min(wanted, self.policy.max_retry_after)
        self.attempt += 1
        return delay

    def after_response(self, response: httpx.Response) -> float | None:
        """Seconds to wait before retrying, or None when ``response`` is the final answer."""
        if response.is_success:
            return None
        return self.after_status(response.status_code, retry_after(response))

    def after_error(self, exc: httpx.HTTPError) -> float | None:
        """Seconds to wait before retrying, or None when ``exc`` must be raised."""
        if not retryable_error(exc):
            return None
        return self.after_status(None)


# -- concurrency ---------------------------------------------------------------------------------


class ConcurrencyLimit:
    """At most ``limit`` requests in flight, counted across threads and event loops.

    Sync callers block on a ``threading.Semaphore``; async callers poll it with short sleeps, so
    they never block their loop and cancelling a waiting task leaks nothing.
    ``limit=None`` means no limit.
    """

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._sem = threading.Semaphore(limit) if limit is not None else None

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold one slot for the duration of the block (sync)."""
        if self._sem is None:
            yield
            return
        self._sem.acquire()
        try:
            yield
        finally:
            self._sem.release()

    @contextlib.asynccontextmanager
    async def ahold(self) -> AsyncIterator[None]:
        """Hold one slot for the duration of the block (async)."""
        if self._sem is None:
            yield
            return
        pause = 0.001
        while not self._sem.acquire(blocking=False):
            await asyncio.sleep(pause)
            pause = min(pause * 2.0, 0.05)
        try:
            yield
        finally:
            self._sem.release()


# -- the client ----------------------------------------------------------------------------------


class JsonHttpClient:
    """POSTs JSON to one service with retries; the pools open lazily and close on :meth:`close`.

    ``what`` names the request kind in error messages (``"chat completions"``);
    ``error_class`` is the :class:`HttpRequestError` subclass raised. ``policy`` and ``timeout``
    are read at each request, so an adapter may expose them as tunable attributes.
    """

    def __init__(
        self,
        *,
        what: str,
        error_class: type[HttpRequestError],
        api_key: str | None,
        verify: ssl.SSLContext | bool,
        proxy: str | None,
        trust_env: bool,
        timeout: float,
        policy: RetryPolicy | None = None,
        limit: ConcurrencyLimit | None = None,
        auth_header: str = "Authorization",
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        self.what = what
        self.error_class = error_class
        self.policy = policy or RetryPolicy()
        self.timeout = timeout
        self.limit = limit or ConcurrencyLimit(None)
        headers = {"Accept": "application/json", **(extra_headers or {})}
        if api_key is not None:
            headers[auth_header] = (
                f"Bearer {api_key}" if auth_header.lower() == "authorization" else api_key
            )
        self._headers = headers
        self._verify = verify
        self._proxy = proxy
        self._trust_env = trust_env
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        # An AsyncClient's pooled connections belong to the loop that opened them.
        self._aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._aclients = weakref.WeakKeyDictionary()

    # -- pools ------------------------------------------------------------------------------

    def _client_kwargs(self) -> dict[str, Any]:
        return {
            "headers": self._headers,
            "verify": self._verify,
            "proxy": self._proxy,
            "trust_env": self._trust_env,
            "timeout": self._timeout(None),
        }

    def _timeout(self, seconds: float | None) -> httpx.Timeout:
        import httpx

        total = self.timeout if seconds is None else seconds
        return httpx.Timeout(total, connect=min(total, 10.0))

    def sync_client(self) -> httpx.Client:
        """The pooled sync client (opened on first use)."""
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(**self._client_kwargs())
            return self._client

    def async_client(self) -> httpx.AsyncClient:
        """The running loop's pooled async client (opened on first use)."""
        import httpx

        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._aclients.get(loop)
            if client is None:
                for stale in [old for old in self._aclients if old.is_closed()]:
                    del self._aclients[stale]  # its loop is gone; nothing can close it now
                client = self._aclients[loop] = httpx.AsyncClient(**self._client_kwargs())
            return client

    # -- errors -----------------------------------------------------------------------------

    def status_error(self, url: str, response: httpx.Response) -> HttpRequestError:
        """The error for a final non-2xx ``response`` (its body must have been read)."""
        message = server_message(response)
        return self.error_class(
            f"{self.what} request to {url} failed with HTTP {response.status_code}: {message}",
            status_code=response.status_code,
            server_message=message,
        )

    def transport_error(self, url: str, exc: httpx.HTTPError) -> HttpRequestError:
        """The error for a request that got no response."""
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            return self.error_class(f"{self.what} request to {url} timed out: {exc!r}")
        return self.error_class(f"{self.what} request to {url} failed: {type(exc).__name__}: {exc}")

    def parse_json(self, url: str, response: httpx.Response) -> Any:
        """The JSON body of a successful response (ValueError when it is not JSON)."""
        try:
            return response.json()
        except ValueError as exc:
            raise ValueError(f"{self.what} response from {url} is not JSON") from exc

    # -- requests ---------------------------------------------------------------------------

    def post(
        self,
        url: str,
        body: dict[str, Any],
        *,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        no_retry: Collection[int] = (),
        policy: RetryPolicy | None = None,
    ) -> Any:
        """POST ``body`` and return the parsed JSON of the 2xx answer, retrying as ``policy``
        (default: the client's) says; statuses in ``no_retry`` are final even if normally
        retried. ``timeout`` (seconds) overrides the client's for this request."""
        import httpx

        client = self.sync_client()
        attempts = Attempts(policy or self.policy, no_retry)
        while True:
            try:
                with self.limit.hold():
                    response = client.post(
                        url, json=body, timeout=self._timeout(timeout), headers=headers
                    )
            except httpx.HTTPError as exc:
                delay = attempts.after_error(exc)
                if delay is None:
                    raise self.transport_error(url, exc) from exc
            else:
                delay = attempts.after_response(response)
                if delay is None:
                    if not response.is_success:
                        raise self.status_error(url, response)
                    return self.parse_json(url, response)
            time.sleep(delay)

    async def apost(
        self,
        url: str,
        body: dict[str, Any],
        *,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        no_retry: Collection[int] = (),
        policy: RetryPolicy | None = None,
    ) -> Any:
        """Async twin of :meth:`post`, on the running loop's own connection pool."""
        import httpx

        client = self.async_client()
        attempts = Attempts(policy or self.policy, no_retry)
        while True:
            try:
                async with self.limit.ahold():
                    response = await client.post(
                        url, json=body, timeout=self._timeout(timeout), headers=headers
                    )
            except httpx.HTTPError as exc:
                delay = attempts.after_error(exc)
                if delay is None:
                    raise self.transport_error(url, exc) from exc
            else:
                delay = attempts.after_response(response)
                if delay is None:
                    if not response.is_success:
                        raise self.status_error(url, response)
                    return self.parse_json(url, response)
            await asyncio.sleep(delay)

    @contextlib.contextmanager
    def stream_lines(
        self,
        url: str,
        body: dict[str, Any],
        *,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        no_retry: Collection[int] = (),
        policy: RetryPolicy | None = None,
    ) -> Iterator[Iterator[str]]:
        """POST ``body`` and yield the lines of a 2xx streamed answer.

        Failures before the stream starts are retried like :meth:`post`; a connection lost
        mid-stream raises the adapter's error. The concurrency slot is held until the block
        exits.
        """
        import httpx

        client = self.sync_client()
        attempts = Attempts(policy or self.policy, no_retry)
        while True:
            stack = contextlib.ExitStack()
            try:
                stack.enter_context(self.limit.hold())
                response = stack.enter_context(
                    client.stream(
                        "POST", url, json=body, timeout=self._timeout(timeout), headers=headers
                    )
                )
                delay = attempts.after_response(response)
                if delay is None and not response.is_success:
                    response.read()
            except httpx.HTTPError as exc:
                stack.close()
                delay = attempts.after_error(exc)
                if delay is None:
                    raise self.transport_error(url, exc) from exc
                time.sleep(delay)
                continue
            except BaseException:
                stack.close()
                raise
            with stack:
                if delay is None:
                    if not response.is_success:
                        raise self.status_error(url, response)
                    yield self._sync_lines(url, response)
                    return
            time.sleep(delay)

    def _sync_lines(self, url: str, response: httpx.Response) -> Iterator[str]:
        import httpx

        try:
            yield from response.iter_lines()
        except httpx.HTTPError as exc:
            raise self.transport_error(url, exc) from exc

    @contextlib.asynccontextmanager
    async def astream_lines(
        self,
        url: str,
        body: dict[str, Any],
        *,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        no_retry: Collection[int] = (),
        policy: RetryPolicy | None = None,
    ) -> AsyncIterator[AsyncIterator[str]]:
        """Async twin of :meth:`stream_lines`."""
        import httpx

        client = self.async_client()
        attempts = Attempts(policy or self.policy, no_retry)
        while True:
            stack = contextlib.AsyncExitStack()
            try:
                await stack.enter_async_context(self.limit.ahold())
                response = await stack.enter_async_context(
                    client.stream(
                        "POST", url, json=body, timeout=self._timeout(timeout), headers=headers
                    )
                )
                delay = attempts.after_response(response)
                if delay is None and not response.is_success:
                    await response.aread()
            except httpx.HTTPError as exc:
                await stack.aclose()
                delay = attempts.after_error(exc)
                if delay is None:
                    raise self.transport_error(url, exc) from exc
                await asyncio.sleep(delay)
                continue
            except BaseException:
                await stack.aclose()
                raise
            async with stack:
                if delay is None:
                    if not response.is_success:
                        raise self.status_error(url, response)
                    yield self._async_lines(url, response)
                    return
            await asyncio.sleep(delay)

    async def _async_lines(self, url: str, response: httpx.Response) -> AsyncIterator[str]:
        import httpx

        try:
            async for line in response.aiter_lines():
                yield line
        except httpx.HTTPError as exc:
            raise self.transport_error(url, exc) from exc

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Release pooled connections; a later request opens new ones.

        An async pool is closed on its own loop, which from synchronous code is only possible
        while that loop is idle or running elsewhere; prefer :meth:`aclose` in async code.
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

"""The shared HTTP plumbing of the served-model adapters: retry timing and the concurrency limit."""

from __future__ import annotations

import asyncio
import email.utils
import threading
import time

import httpx
import pytest

from oracleagentmemory.core._shared._http import (
    Attempts,
    ConcurrencyLimit,
    RetryPolicy,
    retry_after,
)


def response(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers)


def test_retry_after_forms() -> None:
    assert retry_after(response(429, **{"Retry-After": "3"})) == 3.0
    assert retry_after(response(429, **{"retry-after-ms": "250"})) == 0.25
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after(response(503, **{"Retry-After": when})) or 0) <= 31
    assert retry_after(response(503, **{"Retry-After": "soon"})) is None
    assert retry_after(response(503)) is None and retry_after(None) is None


def test_backoff_doubles_with_jitter_and_a_cap() -> None:
    attempts = Attempts(RetryPolicy(max_retries=6, base_delay=0.5, max_delay=3.0))
    delays = [attempts.after_status(503) for _ in range(6)]
    ceilings = [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert delay is not None and ceiling / 2 <= delay <= ceiling
    assert attempts.after_status(503) is None  # retries spent


def test_which_failures_are_retried() -> None:
    attempts = Attempts(RetryPolicy(max_retries=5), no_retry={500})
    assert attempts.after_status(400) is None and attempts.after_status(401) is None
    assert attempts.after_status(500) is None  # excluded for this request
    assert attempts.after_status(None) is not None  # timeout / lost connection
    assert attempts.after_response(response(200)) is None
    assert attempts.after_error(httpx.ReadTimeout("slow")) is not None
    assert attempts.after_error(httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED]")) is None
    assert attempts.after_error(httpx.UnsupportedProtocol("ftp")) is None


def test_retry_after_is_honoured_up_to_a_ceiling() -> None:
    attempts = Attempts(RetryPolicy(max_retries=3, max_retry_after=5.0))
    assert attempts.after_response(response(429, **{"Retry-After": "2"})) == 2.0
    assert attempts.after_response(response(429, **{"Retry-After": "600"})) == 5.0


def test_limit_is_shared_by_threads_and_loops() -> None:
    limit = ConcurrencyLimit(2)
    inside = 0
    peak = 0
    lock = threading.Lock()

    def enter() -> None:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)

    def leave() -> None:
        nonlocal inside
        with lock:
            inside -= 1

    def sync_user() -> None:
        with limit.hold():
            enter()
            time.sleep(0.05)
            leave()

    async def async_user() -> None:
        async with limit.ahold():
            enter()
            await asyncio.sleep(0.05)
            leave()

    async def several() -> None:
        await asyncio.gather(*(async_user() for _ in range(4)))

    threads = [threading.Thread(target=sync_user) for _ in range(4)]
    threads.append(threading.Thread(target=asyncio.run, args=(several(),)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 2 and inside == 0


async def test_a_cancelled_waiter_leaks_no_slot() -> None:
    limit = ConcurrencyLimit(1)
    release = asyncio.Event()

    async def holder() -> None:
        async with limit.ahold():
            await release.wait()

    async def waiter() -> None:
        async with limit.ahold():
            pytest.fail("the waiter must not get the slot while it is held")

    held = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0.02)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await held
    async with limit.ahold():  # the only slot is free again
        pass


def test_no_limit() -> None:
    limit = ConcurrencyLimit(None)
    with limit.hold(), limit.hold():
        pass

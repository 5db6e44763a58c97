"""One source of truth for sync and async methods.

Every ``*_async`` method of the SDK is derived from its sync twin by :func:`async_twin`: the
sync method runs in a worker thread, so the event loop never blocks on I/O or embedding.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def async_twin(method: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Derive ``name_async`` from ``name``: same arguments, same result, run off the loop.

    The sync method is looked up on the instance at call time, so a subclass that overrides
    the sync method gets a matching async twin for free.
    """
    name = method.__name__

    @functools.wraps(method)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> R:
        self, rest = args[0], args[1:]
        bound: Callable[..., R] = getattr(self, name)
        return await asyncio.to_thread(bound, *rest, **kwargs)

    # wraps() copies __isabstractmethod__; the twin itself is concrete.
    twin.__dict__.pop("__isabstractmethod__", None)
    twin.__name__ = f"{name}_async"
    twin.__qualname__ = method.__qualname__.rsplit(".", 1)[0] + f".{name}_async"
    twin.__doc__ = (
        f"Async twin of :meth:`{name}`: same arguments and result, run in a worker thread."
    )
    twin.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return twin


def run_sync(awaitable: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine to completion from sync code.

    With no event loop running in this thread it runs on a fresh loop; inside a running loop
    (sync code called from async code) it runs on a fresh loop in a worker thread, since the
    caller's loop cannot be re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaitable)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        # The caller's context (an end-user scope, event listeners) goes along.
        return pool.submit(contextvars.copy_context().run, asyncio.run, awaitable).result()

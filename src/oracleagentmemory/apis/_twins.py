"""Running a coroutine from synchronous code, for the interfaces' ready-made twins
(``generate_from_async``, ``IReranker.rerank``)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")


def run_blocking(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run the coroutine ``make()`` to completion from synchronous code.

    Without a running event loop in this thread it runs on a fresh one; inside a running loop
    (a sync call made from async code) it runs on a fresh loop in a helper thread, because the
    caller's loop cannot be re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    context = contextvars.copy_context()  # the caller's end-user scope and listeners go along
    worker = threading.Thread(
        target=context.run, args=(target,), name="oam-sync-bridge", daemon=True
    )
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]

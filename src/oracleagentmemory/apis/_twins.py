"""Adapter interfaces whose implementers write either the sync or the async method.

``ILlm`` and ``IReranker`` each have a sync method and an ``*_async`` twin. An implementation
may override one of them (or both); :func:`fill_missing_twin` supplies the other when a
subclass is created, so a class that implements neither stays abstract.
"""

from __future__ import annotations

import asyncio
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

    worker = threading.Thread(target=target, name="oam-sync-bridge", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _implements(cls: type, name: str, default: Any) -> bool:
    method = getattr(cls, name, None)
    if method is None or getattr(method, "__isabstractmethod__", False):
        return False
    return method is not default


def fill_missing_twin(
    cls: type, sync_name: str, async_name: str, sync_default: Any, async_default: Any
) -> None:
    """Give ``cls`` the twin of whichever of the two methods it implements.

    ``sync_default`` runs the async method to completion and ``async_default`` runs the sync
    one in a worker thread. Called from ``__init_subclass__``, before ABCMeta computes the
    abstract set, so a filled-in method counts as concrete; a class implementing neither
    method keeps the abstract one(s) and cannot be instantiated.
    """
    has_sync = _implements(cls, sync_name, sync_default)
    has_async = _implements(cls, async_name, async_default)
    if has_sync and not has_async:
        setattr(cls, async_name, async_default)
    elif has_async and not has_sync:
        setattr(cls, sync_name, sync_default)

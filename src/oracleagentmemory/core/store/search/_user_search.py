"""PostgreSQL's user cache: what one search shares between its branches.

A search (:func:`one_search`) counts its user once whatever its branches ask the cache
(``_user_vectors``), shares one catch-up of the cache, may leave the log's check for later
(``check_later``, :data:`_CHECK`), and starts the fills it asked for after its answer. The
searches running in this process are counted (:data:`_ACTIVITY`) so the pass at open can
wait for a pause in them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class _Search:
    """One search (:func:`one_search`): the users it counted, and the fills it asked for
    (user -> with keyword rows), started after its answer."""

    __slots__ = ("cache", "counted", "fills")

    def __init__(self) -> None:
        self.counted: set[str] = set()
        self.fills: dict[str, bool] = {}
        self.cache: Any = None
        """The cache (``_user_vectors.UserVectors``) to start the fills on."""


_SEARCH: ContextVar[object | None] = ContextVar("oam_user_cache_search", default=None)
_CHECK: ContextVar[tuple[object, str, frozenset[str]] | None] = ContextVar(
    "oam_user_cache_check", default=None
)
"""(search, snapshot, cached users) of a ranking this context made before asking the log
(``check_later``)."""


_ACTIVITY = [0, 0.0]
"""Searches of this process running, and when the last one ended (``time.monotonic``)."""
_ACTIVITY_LOCK = threading.Lock()


@contextmanager
def one_search() -> Iterator[None]:
    """One search: its branches share one catch-up of the cache (one snapshot of the log)
    and count its user once; the fills it asked for start when it ends."""
    search = _Search()
    token = _SEARCH.set(search)
    with _ACTIVITY_LOCK:
        _ACTIVITY[0] += 1
    try:
        yield
    finally:
        with _ACTIVITY_LOCK:
            _ACTIVITY[0] -= 1
            _ACTIVITY[1] = time.monotonic()
        _SEARCH.reset(token)
        cache = search.cache
        if cache is not None:
            with cache.lock:
                for user, words in search.fills.items():
                    cache._submit(user, words)


def locked(lock: threading.Lock, job: Callable[P, R]) -> Callable[P, R]:
    """``job`` run with ``lock`` held."""

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with lock:
            return job(*args, **kwargs)

    return run

"""Background work at interpreter exit: stopped within a bound, and no native call left running.

A daemon worker thread still inside ONNX Runtime (or another C++ library) when the process exits
makes it abort ("terminate called without an active exception", exit status 134): the C++
runtime's static destructors meet threads still at work. So one hook, registered once, runs
when the interpreter starts to shut down, before daemon threads are abandoned
(``threading._register_atexit``: before non-daemon threads are joined and before ``atexit``
handlers). It tells every registered queue to take no new job, gives the jobs running a bounded
time (:func:`exit_wait_seconds`) to finish, then refuses the library's worker threads any new
native call (:class:`ProcessExiting`) and waits, again bounded, for those already running.
Jobs that did not finish stay recorded in the store, and the next client opening it resumes them.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

log = logging.getLogger("oracleagentmemory.extraction")

EXIT_WAIT_ENV = "OAM_EXIT_WAIT_SECONDS"
DEFAULT_EXIT_WAIT_S = 5.0
"""How long an exiting process waits for the background jobs already running."""
NATIVE_WAIT_S = 30.0
"""How long it then waits for native calls (an embedding batch) the workers are inside."""


class ProcessExiting(BaseException):
    """Raised in a library worker thread that starts a native or LLM call while the process
    exits. A ``BaseException``, so a job's ``except Exception`` does not count it as a failed
    attempt: the job stays recorded in the store as it was."""


class ExitStoppable(Protocol):
    """What the exit hook asks of a background queue."""

    def stop_taking_jobs(self) -> int:
        """Start no further job; returns how many stay queued (recorded for the next process)."""

    def wait_running(self, deadline: float) -> int:
        """Wait until no job runs or ``time.monotonic()`` reaches ``deadline``; returns how
        many jobs still run."""


_cond = threading.Condition()
_exiting = False
_in_flight = 0
_local = threading.local()
_queues: weakref.WeakSet[ExitStoppable] = weakref.WeakSet()
_hooked = False


def exit_wait_seconds() -> float:
    """The bound from ``OAM_EXIT_WAIT_SECONDS`` (default :data:`DEFAULT_EXIT_WAIT_S`)."""
    raw = os.environ.get(EXIT_WAIT_ENV)
    if raw is None:
        return DEFAULT_EXIT_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{EXIT_WAIT_ENV} must be a number of seconds, got {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{EXIT_WAIT_ENV} must be a finite number >= 0, got {raw!r}")
    return value


def mark_worker() -> None:
    """Mark the calling thread as a library worker (its native calls are gated at exit)."""
    _local.worker = True


def _is_worker() -> bool:
    return bool(getattr(_local, "worker", False))


def check_not_exiting() -> None:
    """Raise :class:`ProcessExiting` in a worker thread once the process exits."""
    if _exiting and _is_worker():
        raise ProcessExiting("the process is exiting: the job stays queued in the store")


@contextmanager
def native_call() -> Iterator[None]:
    """Around a call into a C++ library (an embedding model): in a worker thread, refused once
    the process exits and waited for by the exit hook. Other threads pass through."""
    global _in_flight
    if not _is_worker():
        yield
        return
    with _cond:
        check_not_exiting()
        _in_flight += 1
    try:
        yield
    finally:
        with _cond:
            _in_flight -= 1
            _cond.notify_all()


def watch(queue: ExitStoppable) -> None:
    """Have the exit hook stop ``queue`` (held weakly); registers the hook on first use."""
    global _hooked
    with _cond:
        _queues.add(queue)
        if _hooked:
            return
        _hooked = True
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(_at_exit)
        else:  # pragma: no cover - every CPython since 3.9 has it
            atexit.register(_at_exit)
    except RuntimeError:  # the interpreter is already shutting down
        pass


def _at_exit() -> None:
    global _exiting
    try:
        wait = exit_wait_seconds()
    except ValueError as exc:
        log.warning("%s; waiting %s s", exc, DEFAULT_EXIT_WAIT_S)
        wait = DEFAULT_EXIT_WAIT_S
    queues = list(_queues)
    queued = sum(queue.stop_taking_jobs() for queue in queues)
    deadline = time.monotonic() + wait
    still = sum(queue.wait_running(deadline) for queue in queues)
    with _cond:
        _exiting = True
        native_deadline = time.monotonic() + NATIVE_WAIT_S
        while _in_flight and (left := native_deadline - time.monotonic()) > 0:
            _cond.wait(left)
        stuck = _in_flight
    if queued:
        log.info(
            "exiting with %d background job(s) queued: they stay recorded in the store "
            "and resume when a client with an LLM next opens it",
            queued,
        )
    if still:
        log.warning(
            "exiting with %d background job(s) still running after %s s: they stay recorded in "
            "the store and resume when a client with an LLM next opens it",
            still,
            wait,
        )
    if stuck:
        log.warning("exiting while %d native call(s) of background workers still run", stuck)

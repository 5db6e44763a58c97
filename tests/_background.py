"""Test work run on a thread of its own, its end and errors reported to the test."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def in_thread(
    work: Callable[[], Any],
) -> tuple[threading.Thread, threading.Event, list[BaseException]]:
    """Start ``work`` on a daemon thread: the thread, an event set when it ends, and the
    errors it raised (empty when it returned)."""
    done, errors = threading.Event(), []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done, errors

"""Argument checks the client and its threads share: counts in range, ids, no stray keyword
arguments, wait timeouts. Each raises the ``TypeError`` / ``ValueError`` the public method
documents, naming the argument."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core.store._limits import MAX_LIST_ROWS, check_int as limits_check_int


def check_int(name: str, value: Any, minimum: int = 0, maximum: int = MAX_LIST_ROWS) -> int:
    """``value`` as an int in ``[minimum, maximum]`` (a bool is no int here); the store's
    rule (``_limits.check_int``) with the public methods' defaults."""
    return limits_check_int(value, name, minimum, maximum)


def check_ids(**ids: Any) -> None:
    """Each id given is None or a non-empty string (else a ``TypeError`` naming it)."""
    for name, value in ids.items():
        if value is not None and (not isinstance(value, str) or not value):
            raise TypeError(f"{name} must be a non-empty string")


def no_extra_kwargs(method: str, kwargs: Mapping[str, Any]) -> None:
    """A ``TypeError`` naming the keyword arguments ``method`` does not take, if any."""
    if kwargs:
        raise TypeError(f"{method}() got unexpected keyword argument(s): {sorted(kwargs)}")


def check_wait(timeout: Any, raise_on_failure: Any) -> None:
    """A wait's arguments: ``timeout`` (see :func:`check_timeout`) and a bool."""
    check_timeout(timeout)
    if not isinstance(raise_on_failure, bool):
        raise TypeError("raise_on_failure must be a bool")


def check_timeout(timeout: Any) -> None:
    """A wait timeout: a finite number of seconds >= 0, or None."""
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError("timeout must be a number of seconds or None")
    if not math.isfinite(timeout) or timeout < 0:
        raise ValueError(f"timeout must be a finite number >= 0, got {timeout!r}")


def check_single(**values: Any) -> None:
    """Each value given is one value, not a list (the store's per-batch form): metadata a
    dict or None, the others no list or tuple. A ``TypeError`` naming the argument."""
    for name, value in values.items():
        if value is NOT_SET_MARKER or value is None:
            continue
        if name.endswith("metadata"):
            if not isinstance(value, dict):
                raise TypeError(f"{name} must be a dict or None, got {type(value).__name__}")
        elif isinstance(value, list | tuple):
            raise TypeError(f"{name} must be a single value, not a {type(value).__name__}")

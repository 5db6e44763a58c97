"""Schema-level retention settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.ttl import TimeToLiveAnchor as TimeToLiveAnchor

MAX_TTL_DAYS = 3_652_058
"""Longest time to live, in days: from year 1 to the end of year 9999, the last date a
timestamp can hold. A record's expiry (its anchor plus its TTL) must also fall within year
9999; a write whose expiry would not is refused with a ValueError."""


def _check_days(name: str, value: Any) -> int | None:
    if value is NOT_SET_MARKER or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if not 1 <= value <= MAX_TTL_DAYS:
        raise ValueError(f"{name} must be between 1 and {MAX_TTL_DAYS} days, got {value}")
    return value


@dataclass(frozen=True, slots=True, init=False)
class MemoryRetentionConfig:
    """Retention for messages and memories.

    ``default_ttl_days`` applies when a write omits ``ttl_days``. ``max_ttl_days`` is a hard cap:
    larger values are clamped with a warning, and ``ttl_days=None`` uses it instead of "never
    expires". Omitted fields resolve to None.
    """

    default_ttl_days: int | None
    max_ttl_days: int | None

    def __init__(self, default_ttl_days: Any = NOT_SET_MARKER, max_ttl_days: Any = NOT_SET_MARKER):
        default = _check_days("default_ttl_days", default_ttl_days)
        maximum = _check_days("max_ttl_days", max_ttl_days)
        object.__setattr__(self, "default_ttl_days", default)
        object.__setattr__(self, "max_ttl_days", maximum)

    def to_json(self) -> dict[str, int | None]:
        """The settings as stored in schema metadata."""
        return {"default_ttl_days": self.default_ttl_days, "max_ttl_days": self.max_ttl_days}

"""Timestamps, expiry and retention rules shared by every engine."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from typing import Any, overload

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._limits import MAX_TIMESTAMP_YEAR, MAX_TTL_DAYS


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


@overload
def stored_time(text: str) -> str: ...
@overload
def stored_time(text: None) -> None: ...
def stored_time(text: str | None) -> str | None:
    """A time the store wrote itself (a record's or link's creation), as the reference prints
    it: ISO-8601 in UTC without an offset (``2026-06-04T19:28:46.988002``). Times a caller
    gave are returned as given."""
    if not text:
        return text
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return text
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt.isoformat()


def parse_timestamp(value: str, name: str = "timestamp") -> datetime:
    """Parse an ISO-8601 timestamp; naive values are UTC. Its UTC year must lie in
    ``1..MAX_TIMESTAMP_YEAR``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be an ISO-8601 string or None, got {type(value).__name__}")
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{name} is not an ISO-8601 timestamp: {value[:64]!r}") from None
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt
    try:
        year = dt.astimezone(UTC).year
    except OverflowError:
        year = 0
    if not 1 <= year <= MAX_TIMESTAMP_YEAR:
        raise ValueError(
            f"{name} {value!r} is out of range: timestamps lie in years 1 to "
            f"{MAX_TIMESTAMP_YEAR} (UTC)"
        )
    return dt


def check_ttl_days(value: Any, name: str = "ttl_days") -> int | None:
    """Validate one explicit ``ttl_days`` value (None allowed)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if not 1 <= value <= MAX_TTL_DAYS:
        raise ValueError(
            f"{name} must be between 1 and {MAX_TTL_DAYS} days (an expiry after year 9999 "
            f"cannot be represented), got {value}"
        )
    return value


def check_anchor(value: Any, name: str = "ttl_anchor") -> TimeToLiveAnchor:
    if isinstance(value, TimeToLiveAnchor):
        return value
    if isinstance(value, str):
        for anchor in TimeToLiveAnchor:
            if value.lower() in (anchor.value, anchor.name.lower()):
                return anchor
    raise ValueError(f"{name} must be a TimeToLiveAnchor, got {value!r}")


def resolve_ttl_days(value: Any, retention: MemoryRetentionConfig) -> int | None:
    """Apply the retention rules: omitted -> default; None -> max (or never); clamp to max."""
    days = retention.default_ttl_days if value is NOT_SET_MARKER else value
    maximum = retention.max_ttl_days
    if maximum is None:
        return days
    if days is None:
        return maximum
    if days > maximum:
        warnings.warn(
            f"ttl_days={days} exceeds MemoryRetentionConfig.max_ttl_days={maximum}; "
            f"clamped to {maximum}",
            UserWarning,
            stacklevel=4,
        )
        return maximum
    return days


def expiry(
    days: int | None,
    anchor: TimeToLiveAnchor,
    created_at: datetime,
    event_ts: str | None,
    name: str = "timestamps",
) -> float | None:
    """Expiry as epoch seconds, or None for records that never expire."""
    if days is None:
        return None
    if anchor is TimeToLiveAnchor.TIMESTAMP:
        if event_ts is None:
            raise ValueError(
                f"ttl_anchor=TimeToLiveAnchor.TIMESTAMP needs a concrete ISO-8601 {name} value"
            )
        base = parse_timestamp(event_ts, name)
    else:
        base = created_at
    try:
        end = base + timedelta(days=days)
    except OverflowError:
        end = None
    if end is None or end > _LAST:
        start = f"{name} {iso(base)}" if anchor is TimeToLiveAnchor.TIMESTAMP else iso(base)
        raise ValueError(
            f"ttl_days={days} from {start} ends after year 9999, which cannot be "
            "represented; give fewer days or ttl_days=None (never expires)"
        )
    return end.timestamp()


_LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)

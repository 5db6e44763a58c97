"""Time-to-live anchors."""

from __future__ import annotations

from enum import Enum


class TimeToLiveAnchor(Enum):
    """Anchor used to compute an expiry timestamp from a time-to-live duration.

    ``CREATED_AT`` (the default) counts from the time the store wrote the record;
    ``TIMESTAMP`` counts from the record's event timestamp.
    """

    CREATED_AT = "created_at"
    TIMESTAMP = "timestamp"

"""Retention: expired records are invisible at once and purged later.

Every read filters ``expires_at`` itself, so purging is housekeeping, never correctness: the
store purges when it opens and, after a write, at most every ``PURGE_INTERVAL_S`` seconds
(reads never wait for it).
"""

from __future__ import annotations

import time

from oracleagentmemory.core.store.writes._deletes import Deleter

PURGE_INTERVAL_S = 600.0
"""Expired rows are purged on open and at most this often after writes (reads never wait)."""


class Retention:
    """The retention part: when to purge, and the purge itself."""

    def __init__(self, deleter: Deleter) -> None:
        self._deleter = deleter
        self._last_purge = 0.0

    def purge_expired(self) -> int:
        """Physically remove expired records (one transaction); returns how many."""
        self._last_purge = time.time()
        results = self._deleter.run(
            [("r.expires_at IS NOT NULL AND r.expires_at <= ?", [time.time()])]
        )
        return len(results[0])

    def after_write(self) -> None:
        """Purge if the last purge is older than ``PURGE_INTERVAL_S``."""
        if time.time() - self._last_purge > PURGE_INTERVAL_S:
            self.purge_expired()

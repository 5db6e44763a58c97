"""Retention: expired records are invisible at once and purged later.

Every read filters ``expires_at`` itself, so purging is housekeeping, never correctness: the
store purges when it opens and, after a write, at most every ``PURGE_INTERVAL_S`` seconds
(reads never wait for it).
"""

from __future__ import annotations

import logging
import time

from oracleagentmemory.core.store.writes._deletes import Deleter

log = logging.getLogger("oracleagentmemory.store")

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
        results = self._deleter.run(  # rows being written elsewhere: the next purge's
            [("r.expires_at IS NOT NULL AND r.expires_at <= ?", [time.time()])], skip_locked=True
        )
        return len(results[0])

    def after_write(self) -> None:
        """Purge if the last purge is older than ``PURGE_INTERVAL_S``."""
        if time.time() - self._last_purge > PURGE_INTERVAL_S:
            try:  # housekeeping after a committed write: never that write's failure
                self.purge_expired()
            except Exception as exc:
                log.warning("purging expired records failed: %s: %s", type(exc).__name__, exc)

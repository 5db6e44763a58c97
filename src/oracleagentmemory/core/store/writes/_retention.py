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
        """Physically remove expired records (one transaction a round: all of them in one,
        but on the Citus layout, ``Dialect.rounds``); returns how many."""
        self._last_purge = time.time()
        d = self._deleter.dialect
        removed = 0
        for where, params in d.rounds(
            d.tables.records, "r", "r.expires_at IS NOT NULL AND r.expires_at <= ?", [time.time()]
        ):
            # rows being written elsewhere: the next purge's
            removed += len(self._deleter.run([(where, params)], skip_locked=True)[0])
        return removed

    def at_open(self) -> None:
        """The purge at open: a failure (a busy or overloaded server) is logged, and the
        store opens all the same (expired rows are invisible anyway)."""
        try:
            self.purge_expired()
        except Exception as exc:
            log.warning("purging expired records at open failed: %s: %s", type(exc).__name__, exc)

    def after_write(self) -> None:
        """Purge if the last purge is older than ``PURGE_INTERVAL_S``."""
        if time.time() - self._last_purge > PURGE_INTERVAL_S:
            try:  # housekeeping after a committed write: never that write's failure
                self.purge_expired()
            except Exception as exc:
                log.warning("purging expired records failed: %s: %s", type(exc).__name__, exc)

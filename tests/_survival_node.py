"""One node of ``tests/test_node_survival.py``: ``oam serve`` (arguments as given), with a
freeze hook for the SIGSTOP test.

With ``OAM_TEST_FREEZE_ON`` set, the node stops itself (SIGSTOP) right after it ran an
UPDATE whose parameters hold that text, inside the update's transaction: the node freezes
holding whatever that write locks, as a GC pause or a stalled VM would. With
``OAM_TEST_FREEZE_STORE_LOCK=1`` it first takes the store-wide lock exclusively, as every
update did before issue #50 (the "before" figure).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import Any


def _install_freeze(marker: str) -> None:
    from oracleagentmemory.core.store.engines.postgres._postgres import PostgresDialect

    original = PostgresDialect.execute

    def execute(self: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        out = original(self, sql, params)
        if sql.lstrip().upper().startswith("UPDATE") and marker in [
            p for p in params if isinstance(p, str)
        ]:
            if os.environ.get("OAM_TEST_FREEZE_STORE_LOCK") == "1":
                original(self, "SELECT pg_advisory_xact_lock(?)", [self._lock_key])
            os.kill(os.getpid(), signal.SIGSTOP)
        return out

    PostgresDialect.execute = execute  # type: ignore[method-assign]


def main() -> int:
    marker = os.environ.get("OAM_TEST_FREEZE_ON")
    if marker:
        _install_freeze(marker)
    from oracleagentmemory.cli import main as oam

    return oam(["serve", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())

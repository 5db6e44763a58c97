"""The reference's end-user security context (``core.deepsec``); unavailable here."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.core.deepsec.admin import _unavailable


class OracleMemoryEndUserSecurityContext:
    """Runs agent-memory operations as one end user of the database (unavailable here:
    constructing one raises NotImplementedError)."""

    def __init__(self, security_context: Any) -> None:
        _unavailable()


def get_end_user_username(connection: Any) -> str | None:
    """The end user a database connection acts for (unavailable here)."""
    _unavailable()

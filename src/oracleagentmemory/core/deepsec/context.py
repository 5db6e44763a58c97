"""The end-user security context: agent-memory operations run as one end user.

On PostgreSQL the end user is a database role (a :class:`~.admin.LocalEndUserPrincipal`'s
login role): every transaction the store starts inside the block runs ``SET LOCAL ROLE``
first, so row security applies to that role, and the identity ends with the transaction
(a pooled connection never carries it into another call). The connection's own role must
be allowed to set that role (``GRANT alice TO app WITH INHERIT FALSE``). SQLite has no
roles: a SQLite store refuses to run inside the block (NotImplementedError).
"""

from __future__ import annotations

import contextvars
from typing import Any

from oracleagentmemory.core._shared import _end_user
from oracleagentmemory.core.deepsec.admin import LocalEndUserPrincipal

__all__ = ["OracleMemoryEndUserSecurityContext"]


class OracleMemoryEndUserSecurityContext:
    """Run agent-memory operations as one end user of the database.

    ``security_context`` names the end user: a PostgreSQL role name (``str``) or a
    :class:`~.admin.LocalEndUserPrincipal`. Inside ``with`` (or ``async with``), each
    database operation of an agent-memory store runs as that role, in its own transaction;
    awaited calls inherit it, a task that outlives the block gets RuntimeError, and
    background memory extraction accepted inside the block finishes as that user. Nesting
    is supported, the same instance included; each exit restores the scope of its entry.
    It does not change connections the application uses directly.

    Raises TypeError for ``None`` or another type, ValueError for an empty name.
    """

    def __init__(self, security_context: Any) -> None:
        if security_context is None:
            raise TypeError("security_context must not be None")
        if isinstance(security_context, LocalEndUserPrincipal):
            username = security_context.username
        elif isinstance(security_context, str):
            username = security_context
        else:
            raise TypeError(
                "security_context must be the end user's PostgreSQL role name (str) or a "
                f"LocalEndUserPrincipal, got {type(security_context).__name__}"
            )
        if not username or "\x00" in username:
            raise ValueError("security_context must name a role (a non-empty string)")
        if username == "none":  # SET ROLE none is RESET ROLE: the connection's own role
            raise ValueError("security_context: 'none' is not a role PostgreSQL can set")
        self.username = username
        self._tokens: list[contextvars.Token[Any]] = []

    def __repr__(self) -> str:
        return f"OracleMemoryEndUserSecurityContext({self.username!r})"

    def __enter__(self) -> OracleMemoryEndUserSecurityContext:
        self._tokens.append(_end_user.enter(self.username))
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if not self._tokens:
            raise RuntimeError("this end-user security context was exited without an entry")
        _end_user.leave(self._tokens.pop())

    async def __aenter__(self) -> OracleMemoryEndUserSecurityContext:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        self.__exit__(exc_type, exc, traceback)

"""The reference's row-security policies (``core.deepsec``): names for what an end user may see.

Policies are opaque selections passed to ``core.deepsec.admin``; on PostgreSQL each becomes
row-level security on the store's tables (``_postgres_rls``).
"""

from __future__ import annotations


class DeepDataSecurityPolicy:
    """One row-security policy of an agent-memory store."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class UserOwnRowsDeepDataSecurityPolicy(DeepDataSecurityPolicy):
    """An end user reads and writes the rows whose ``user_id`` is that end user (and what
    hangs off them); a record's user, type, id and creation time never change, and a link
    needs both its memories to be the user's to be written."""


class GlobalMemoriesDeepDataSecurityPolicy(DeepDataSecurityPolicy):
    """Memories without a user, and links between memories the end user can read, are
    readable; nothing is writable through this policy."""

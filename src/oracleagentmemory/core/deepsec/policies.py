"""The reference's row-security policies (``core.deepsec``): names for what an end user may see.

They are plain values here. Applying them (``core.deepsec.admin``) needs database-enforced
row security, which this SDK does not build yet (see ``core.deepsec``).
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
    """An end user sees the rows whose user is that end user."""


class GlobalMemoriesDeepDataSecurityPolicy(DeepDataSecurityPolicy):
    """Memories without a user (and the links between visible memories) are readable."""

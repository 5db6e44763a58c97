"""The reference's row-security administration (``core.deepsec``): principals, and the calls
that create, grant, list, revoke and remove policies.

Principals are plain values here; every call raises :class:`NotImplementedError` (see
``core.deepsec``).
"""

from __future__ import annotations

from typing import Any, NoReturn

from oracleagentmemory.core.deepsec.policies import DeepDataSecurityPolicy as DeepDataSecurityPolicy
from oracleagentmemory.core.deepsec.policies import (
    GlobalMemoriesDeepDataSecurityPolicy as GlobalMemoriesDeepDataSecurityPolicy,
)
from oracleagentmemory.core.deepsec.policies import (
    UserOwnRowsDeepDataSecurityPolicy as UserOwnRowsDeepDataSecurityPolicy,
)

UNAVAILABLE = (
    "database-enforced row security (core.deepsec) needs Oracle Database's Deep Data Security, "
    "and this SDK stores memory in SQLite or PostgreSQL, where it is not built yet; through "
    "`oam serve` and `oam mcp`, bind each API key to its users (`oam keys create --user U`) "
    "to keep users apart (docs/operations/security.md)"
)


def _unavailable() -> NoReturn:
    raise NotImplementedError(UNAVAILABLE)


class Principal:
    """Who receives policies."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items()))))


class LocalEndUserPrincipal(Principal):
    """A local end user of the database, by name."""

    def __init__(self, username: str) -> None:
        if not isinstance(username, str) or not username:
            raise ValueError("username must be a non-empty string")
        self.username = username


class OciGroupPrincipal(Principal):
    """A group of an identity provider (OCI IAM in the reference), by name."""

    def __init__(self, group_name: str) -> None:
        if not isinstance(group_name, str) or not group_name:
            raise ValueError("group_name must be a non-empty string")
        self.group_name = group_name


def add_deep_data_security_policies(
    connection: Any, owner_schema: str, memory_store_id: str,
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Create the policies for a store (unavailable here: NotImplementedError)."""
    _unavailable()


def remove_deep_data_security_policies(
    connection: Any, owner_schema: str, memory_store_id: str,
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Remove policies of a store (unavailable here: NotImplementedError)."""
    _unavailable()


def list_deep_data_security_policies(
    connection: Any, owner_schema: str, memory_store_id: str
) -> list[DeepDataSecurityPolicy]:
    """The policies a store has (unavailable here: NotImplementedError)."""
    _unavailable()


def grant_agent_memory_policies(
    connection: Any, memory_store_id: str, owner_schema: str, principals: list[Principal],
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Grant policies to principals (unavailable here: NotImplementedError)."""
    _unavailable()


def revoke_agent_memory_policies(
    connection: Any, memory_store_id: str, owner_schema: str, principals: list[Principal],
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Revoke policies from principals (unavailable here: NotImplementedError)."""
    _unavailable()


def list_agent_memory_granted_policies(
    connection: Any, memory_store_id: str, owner_schema: str
) -> list[tuple[Principal, list[DeepDataSecurityPolicy]]]:
    """Each principal with the policies granted to it (unavailable here)."""
    _unavailable()

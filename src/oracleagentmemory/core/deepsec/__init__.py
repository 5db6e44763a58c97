"""Row security enforced by the database: the reference's Deep Data Security, on PostgreSQL.

An operator adds policies to a store (:func:`add_deep_data_security_policies`), grants them
to principals (database roles: :class:`LocalEndUserPrincipal`, :class:`OciGroupPrincipal`)
and lists or revokes them; PostgreSQL's row-level security then keeps each end user to the
rows the policies allow, whatever SQL runs. A client runs as an end user either by
connecting as that user's role or inside :class:`OracleMemoryEndUserSecurityContext`.
SQLite has no roles: these calls raise NotImplementedError there.
"""

from oracleagentmemory.core.deepsec.admin import (
    LocalEndUserPrincipal,
    OciGroupPrincipal,
    Principal,
    add_deep_data_security_policies,
    get_end_user_username,
    grant_agent_memory_policies,
    list_agent_memory_granted_policies,
    list_deep_data_security_policies,
    remove_deep_data_security_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.core.deepsec.context import OracleMemoryEndUserSecurityContext
from oracleagentmemory.core.deepsec.policies import (
    DeepDataSecurityPolicy,
    GlobalMemoriesDeepDataSecurityPolicy,
    UserOwnRowsDeepDataSecurityPolicy,
)

__all__ = [
    "DeepDataSecurityPolicy",
    "GlobalMemoriesDeepDataSecurityPolicy",
    "LocalEndUserPrincipal",
    "OciGroupPrincipal",
    "OracleMemoryEndUserSecurityContext",
    "Principal",
    "UserOwnRowsDeepDataSecurityPolicy",
    "add_deep_data_security_policies",
    "get_end_user_username",
    "grant_agent_memory_policies",
    "list_agent_memory_granted_policies",
    "list_deep_data_security_policies",
    "remove_deep_data_security_policies",
    "revoke_agent_memory_policies",
]

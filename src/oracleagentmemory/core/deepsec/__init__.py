"""The reference's database-enforced row security (Oracle Deep Data Security), by name.

Code that imports these names keeps working; principals and policies are plain values, and
every call that would act on the database (adding, granting, listing, revoking or removing
policies, an end-user security context) raises :class:`NotImplementedError` saying what to use
instead. Row security on PostgreSQL is planned; SQLite has no roles.
"""

from oracleagentmemory.core.deepsec.admin import (
    LocalEndUserPrincipal,
    OciGroupPrincipal,
    Principal,
    add_deep_data_security_policies,
    grant_agent_memory_policies,
    list_agent_memory_granted_policies,
    list_deep_data_security_policies,
    remove_deep_data_security_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.core.deepsec.context import (
    OracleMemoryEndUserSecurityContext,
    get_end_user_username,
)
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

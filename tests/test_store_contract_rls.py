"""The store contract suite once more, on PostgreSQL with both row-security policies on.

Every store the suite builds gets ``UserOwnRowsDeepDataSecurityPolicy`` and
``GlobalMemoriesDeepDataSecurityPolicy``; each call naming one user (``user_id=`` or
``user_ids=`` of one value) runs inside ``OracleMemoryEndUserSecurityContext(that user)``,
as that user's own login role (made and granted the policies on first use), so row-level
security filters every statement it sends. Calls naming no user run as the store's owner
(administration: global records, cross-user listings). The suite's assertions are
unchanged: the permitted user gets the same answers with the policies on as without.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, deepsec as ds
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore

from ._embedders import HashingEmbedder
from .test_store_contract import *  # noqa: F403  (the suite, collected again here)

# Store semantics that read across users: a non-exact user scope (page 002) ranks the named
# user's records first but returns other users' too, and profile listings ignore the user
# filter. Under the own-rows policy the database hides the other users' rows, so these
# must fail here (strict: a pass would mean another user's row got through).
_ACROSS_USERS = {
    "test_list_profiles_ignores_scope_filters",
    "test_search_scope_resolution[{'user_id': 'u1'}]",
    "test_search_non_exact_scope_ranks_matching_records_first[user_id-user_ids]",
}


@pytest.fixture(autouse=True)
def _across_users(request: pytest.FixtureRequest) -> None:
    if request.node.name in _ACROSS_USERS:
        request.applymarker(
            pytest.mark.xfail(
                strict=True, reason="reads another user's rows, which the own-rows policy hides"
            )
        )


POLICIES = [ds.UserOwnRowsDeepDataSecurityPolicy(), ds.GlobalMemoriesDeepDataSecurityPolicy()]
_ROLES: set[str] = set()
_ROLES_LOCK = threading.Lock()


@pytest.fixture
def backend() -> str:
    return "postgres"


def _one_user(kwargs: dict[str, Any]) -> str | None:
    for key in ("user_id", "user_ids"):
        value = kwargs.get(key)
        if isinstance(value, str):
            return value
        if (
            isinstance(value, list)
            and value
            and all(isinstance(v, str) for v in value)
            and len(set(value)) == 1
        ):
            return value[0]
    return None


class PolicyStore:
    """The test's store, each call naming one user run as that user's role."""

    def __init__(self, store: OracleMemoryStore, url: str, schema: str, store_id: str) -> None:
        self._store, self._url, self._schema, self._store_id = store, url, schema, store_id

    def _role(self, user: str) -> bool:
        """Make ``user``'s login role with the policies; False when it cannot be a role."""
        if len(user.encode()) > 63 or "\x00" in user:
            return False
        with _ROLES_LOCK, psycopg.connect(self._url, autocommit=True) as conn:
            if user not in _ROLES:
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [user])
                if exists.fetchone() is None:
                    conn.execute(
                        psycopg.sql.SQL("CREATE ROLE {} LOGIN").format(psycopg.sql.Identifier(user))
                    )
                _ROLES.add(user)
            ds.grant_agent_memory_policies(
                conn, self._store_id, self._schema, [ds.LocalEndUserPrincipal(user)], POLICIES
            )
        return True

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            user = _one_user(kwargs)
            if user is None or not self._role(user):
                return attr(*args, **kwargs)
            with ds.OracleMemoryEndUserSecurityContext(user):
                return attr(*args, **kwargs)

        return call


@pytest.fixture
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: HashingEmbedder
) -> Iterator[Any]:
    made: list[OracleMemoryStore] = []

    def factory(**kwargs: Any) -> Any:
        emb = kwargs.pop("embedder", embedder)
        name = kwargs.pop("name", "memory.db")
        kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
        url = request.getfixturevalue("pg_url")(name)
        store = PostgresMemoryStore(emb, url, **kwargs)
        made.append(store)
        store_id = str(kwargs.get("memory_store_id", kwargs.get("table_name_prefix", "")))
        with psycopg.connect(url, autocommit=True) as conn:
            schema = str(conn.execute("SELECT current_schema()").fetchone()[0])  # type: ignore[index]
            if not store_id:
                store_id = store._core.store_id  # type: ignore[attr-defined]
            ds.add_deep_data_security_policies(conn, schema, store_id, POLICIES)
        return PolicyStore(store, url, schema, store_id)

    yield factory
    for store in made:
        store.close()

"""Row security on SQLite: it has no database roles, so every ``core.deepsec`` call, and any
store operation inside an end-user context, fails with an error naming PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy, SQLiteMemoryStore, deepsec as ds

from ._embedders import HashingEmbedder

POLICIES = [ds.UserOwnRowsDeepDataSecurityPolicy(), ds.GlobalMemoriesDeepDataSecurityPolicy()]


@pytest.mark.parametrize("connection", ["memory.db", "sqlite3"])
def test_every_administration_call_names_postgresql(tmp_path: Path, connection: str) -> None:
    conn: Any = str(tmp_path / "memory.db")
    if connection == "sqlite3":
        conn = sqlite3.connect(conn)
    principal = [ds.LocalEndUserPrincipal("alice")]
    calls = [
        lambda: ds.add_deep_data_security_policies(conn, "main", "oam", POLICIES),
        lambda: ds.remove_deep_data_security_policies(conn, "main", "oam", POLICIES),
        lambda: ds.list_deep_data_security_policies(conn, "main", "oam"),
        lambda: ds.grant_agent_memory_policies(conn, "oam", "main", principal, POLICIES),
        lambda: ds.revoke_agent_memory_policies(conn, "oam", "main", principal, POLICIES),
        lambda: ds.list_agent_memory_granted_policies(conn, "oam", "main"),
        lambda: ds.get_end_user_username(conn),
    ]
    for call in calls:
        with pytest.raises(NotImplementedError, match="needs PostgreSQL"):
            call()
    assert not (tmp_path / "memory.db").exists() or connection == "sqlite3"


def test_a_sqlite_store_refuses_to_run_inside_an_end_user_context(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(
        HashingEmbedder(), str(tmp_path / "m.db"), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    store.add(["alice likes tea"], record_type="memory", user_ids="alice", record_ids="a")
    client = OracleAgentMemory(store=store)
    with ds.OracleMemoryEndUserSecurityContext("alice"):
        for call in (
            lambda: store.search("tea", 5, user_id="alice"),
            lambda: store.list("memory"),
            lambda: store.get("memory", "a"),
            lambda: store.add(["more"], record_type="memory", user_ids="alice"),
            lambda: store.delete("memory", "a"),
            lambda: client.search("tea", user_id="alice"),
            lambda: client.create_thread(user_id="alice"),
        ):
            with pytest.raises(NotImplementedError, match="needs PostgreSQL"):
                call()
    # Outside the block the store works, and nothing was written inside it.
    assert [r.id for r in store.list("memory")] == ["a"]
    client.close()


def test_the_context_checks_its_argument() -> None:
    with pytest.raises(TypeError, match="None"):
        ds.OracleMemoryEndUserSecurityContext(None)
    with pytest.raises(TypeError, match="role name"):
        ds.OracleMemoryEndUserSecurityContext(42)
    with pytest.raises(ValueError):
        ds.OracleMemoryEndUserSecurityContext("")
    ctx = ds.OracleMemoryEndUserSecurityContext(ds.LocalEndUserPrincipal("alice"))
    assert ctx.username == "alice"
    with pytest.raises(RuntimeError, match="without an entry"):
        ctx.__exit__(None, None, None)

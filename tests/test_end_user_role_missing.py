"""``oam serve --end-user-roles`` on a real PostgreSQL: a one-user API key whose user has no
database role the server may take (none at all, one the server may not ``SET ROLE`` to, a
name that is no role) is refused with a clean 403 on every ``/v1`` route, in the usual JSON
error body, never a 500 or a traceback; the Python API reports the same as PermissionError.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, deepsec as ds

from ._embedders import HashingEmbedder
from ._images import PNG
from ._servers import oam, running_server

OWNER, ALICE, STRANGER = "eur_owner", "eur_alice", "eur_stranger"
SCHEMA, STORE = "eur", "eur1"
GHOSTS = {
    "no role": "eur_ghost",  # no such role in the database
    "role not grantable": STRANGER,  # a role the server's own role may not SET
    "not a role name": "Ghost Person",  # a user id that is no identifier
}


@pytest.fixture(scope="module")
def server(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    for stmt in (
        f"CREATE ROLE {OWNER} LOGIN CREATEROLE",
        f"CREATE SCHEMA {SCHEMA} AUTHORIZATION {OWNER}",
        f"CREATE ROLE {ALICE} LOGIN",
        f"CREATE ROLE {STRANGER} LOGIN",
        f"GRANT {ALICE} TO {OWNER} WITH INHERIT FALSE, SET TRUE",
    ):
        pg_server.psql(stmt + ";")
    uri = re.sub(r"//[^:@/]*(:[^@]*)?@", f"//{OWNER}@", pg_server.get_uri(), count=1)
    dsn = f"{uri}&options=-csearch_path%3D{SCHEMA}%2Cpublic"
    owner = PostgresMemoryStore(
        HashingEmbedder(),
        uri,
        schema_owner=SCHEMA,
        memory_store_id=STORE,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )
    owner.close()
    import psycopg

    with psycopg.connect(uri, autocommit=True) as admin:
        own = ds.UserOwnRowsDeepDataSecurityPolicy()
        ds.add_deep_data_security_policies(admin, SCHEMA, STORE, [own])
        ds.grant_agent_memory_policies(
            admin, STORE, SCHEMA, [ds.LocalEndUserPrincipal(ALICE)], [own]
        )

    def key(user: str) -> str:
        args = ["keys", "create", "--dsn", dsn, "--memory-store-id", STORE, "--user", user]
        return oam(*args).stdout.strip().splitlines()[-1]

    keys = {name: key(user) for name, user in GHOSTS.items()}
    keys["alice"] = key(ALICE)
    log = tmp_path_factory.mktemp("eur") / "serve.log"
    opts = ["--memory-store-id", STORE, "--embedder", "none", "--search-strategy", "keyword"]
    with running_server(dsn, *opts, "--end-user-roles", log=log) as base:
        yield {"base": base, "keys": keys, "log": log, "uri": uri}


def _call(server: dict[str, Any], who: str) -> Callable[..., httpx.Response]:
    def call(method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {server['keys'][who]}"}
        return httpx.request(method, server["base"] + path, headers=headers, timeout=60, **kw)

    return call


def _routes(user: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every ``/v1`` route, with a request that passes the key's own checks (the key's user,
    valid bodies), so each one reaches the database."""
    return [
        ("GET", "/v1/users", {}),
        ("POST", "/v1/users", {"json": {"id": user, "information": "likes tea"}}),
        ("GET", f"/v1/users/{user}", {}),
        ("DELETE", f"/v1/users/{user}", {}),
        ("GET", "/v1/agents", {}),
        ("POST", "/v1/memories", {"json": {"content": "tea", "user_id": user}}),
        ("GET", "/v1/memories", {"params": {"user_id": user}}),
        ("GET", "/v1/memories/alice-m", {}),
        ("PATCH", "/v1/memories/alice-m", {"json": {"content": "coffee"}}),
        ("DELETE", "/v1/memories/alice-m", {}),
        (
            "POST",
            "/v1/links",
            {
                "json": {
                    "source_record_id": "a",
                    "source_record_type": "memory",
                    "target_record_id": "b",
                    "target_record_type": "memory",
                    "relation_type": "related_to",
                }
            },
        ),
        ("GET", "/v1/memories/alice-m/links", {}),
        ("DELETE", "/v1/links/1", {}),
        ("POST", "/v1/search", {"json": {"query": "tea", "user_id": user}}),
        ("POST", "/v1/threads", {"json": {"user_id": user}}),
        ("GET", "/v1/threads", {"params": {"user_id": user}}),
        ("GET", "/v1/threads/alice-t", {}),
        ("PATCH", "/v1/threads/alice-t", {"json": {"metadata": {"a": 1}}}),
        ("DELETE", "/v1/threads/alice-t", {}),
        (
            "POST",
            "/v1/threads/alice-t/messages",
            {"json": {"messages": [{"role": "user", "content": "hi"}]}},
        ),
        ("GET", "/v1/threads/alice-t/messages", {}),
        ("DELETE", "/v1/threads/alice-t/messages/m1", {}),
        ("GET", "/v1/threads/alice-t/context-card", {}),
        ("GET", "/v1/threads/alice-t/summary", {}),
        ("POST", "/v1/threads/alice-t/search", {"json": {"query": "hi"}}),
        (
            "POST",
            "/v1/images",
            {"data": {"user_id": user}, "files": {"file": ("cat.png", PNG, "image/png")}},
        ),
        ("GET", "/v1/images", {"params": {"user_id": user}}),
        ("GET", "/v1/images/alice-img", {}),
        ("GET", "/v1/images/alice-img/content", {}),
        ("DELETE", "/v1/images/alice-img", {}),
    ]


def test_a_key_whose_user_has_a_role_works(server: dict[str, Any]) -> None:
    alice = _call(server, "alice")
    made = alice(
        "POST",
        "/v1/memories",
        json={"content": "green tea", "user_id": ALICE},
    )
    assert made.status_code == 201, made.text
    got = alice("GET", "/v1/memories", params={"user_id": ALICE})
    assert got.status_code == 200 and got.json()["items"], got.text


@pytest.mark.parametrize("who", sorted(GHOSTS))
def test_a_key_whose_user_has_no_database_role_gets_a_clean_403_everywhere(
    server: dict[str, Any], who: str
) -> None:
    call = _call(server, who)
    user = GHOSTS[who]
    for method, path, kw in _routes(user):
        got = call(method, path, **kw)
        what = f"{who}: {method} {path} -> {got.status_code} {got.text[:300]}"
        assert got.status_code == 403, what
        assert got.headers["content-type"].startswith("application/json"), what
        error = got.json()["error"]
        assert set(error) == {"status", "code", "message"}, what
        assert (error["status"], error["code"]) == (403, "forbidden"), what
        for leak in ("Traceback", 'File "', ".py", "SELECT ", "set_config"):
            assert leak not in error["message"], what
    # The server logged no traceback for any of them.
    assert "Traceback" not in Path(server["log"]).read_text()


@pytest.mark.parametrize("user", sorted(GHOSTS.values()))
def test_the_python_api_reports_a_missing_role_as_permission_error(
    server: dict[str, Any], user: str
) -> None:
    store = PostgresMemoryStore(
        HashingEmbedder(),
        server["uri"],
        schema_owner=SCHEMA,
        memory_store_id=STORE,
        schema_policy=SchemaPolicy.REQUIRE_EXISTING,
    )
    try:
        with ds.OracleMemoryEndUserSecurityContext(user):
            with pytest.raises(PermissionError, match="role"):
                store.list_records(["memory"], user_id=user)
            with pytest.raises(PermissionError, match="role"):
                store.add(["x"], record_type="memory", user_ids=user)
    finally:
        store.close()

"""A memory's history over REST (``GET /v1/memories/{id}/history``), the MCP tool and the
``/ui`` memory page, on both engines: the API key's user recorded as the actor, another
user's memory (live or deleted) answered as unknown, the tombstone of a deleted memory still
readable by its owner."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from fastapi.testclient import TestClient

from oracleagentmemory.admin.apikeys import ApiKeyStore
from oracleagentmemory.admin.connect import Target
from oracleagentmemory.server.app import create_app
from oracleagentmemory.server.state import ServerSettings

from ._ui_forms import ui_login
from .conftest import backend_connection

BASE = "http://testserver"


@dataclass
class Site:
    client: TestClient
    keys: dict[str, str]
    key_ids: dict[str, str]
    dsn: str

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}


@pytest.fixture
def site(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Site]:
    dsn = backend_connection(request, backend, tmp_path, "history.db")
    store = ApiKeyStore(Target(dsn))
    made = {u: store.create([u]) for u in ("alice", "bob")}
    made["admin"] = store.create([], admin=True)
    store.close()
    keys = {who: k[0] for who, k in made.items()}
    key_ids = {who: k[1].key_id for who, k in made.items()}
    app = create_app(ServerSettings(dsn=dsn, embedder="none", search_strategy="keyword"))
    with TestClient(app, base_url=BASE, headers={"Origin": BASE}) as client:
        yield Site(client, keys, key_ids, dsn)


def _history(site: Site, who: str, memory_id: str) -> Any:
    return site.client.get(f"/v1/memories/{memory_id}/history", headers=site.auth(who))


def test_rest_history_names_the_key_and_keeps_a_tombstone(site: Site) -> None:
    c, alice = site.client, site.auth("alice")
    r = c.post(
        "/v1/memories", json={"content": "Alice likes tea", "user_id": "alice"}, headers=alice
    )
    assert r.status_code == 201, r.text
    mid = r.json()["id"]
    assert (
        c.patch(
            f"/v1/memories/{mid}", json={"content": "Alice likes green tea"}, headers=alice
        ).status_code
        == 200
    )
    assert (
        c.patch(
            f"/v1/memories/{mid}", json={"metadata": {"k": 1}}, headers=site.auth("admin")
        ).status_code
        == 200
    )
    assert (
        c.patch(f"/v1/memories/{mid}", json={"status": "invalid"}, headers=alice).status_code == 200
    )
    r = _history(site, "alice", mid)
    assert r.status_code == 200, r.text
    versions = r.json()
    assert [v["change"] for v in versions] == ["created", "updated", "updated", "status"]
    assert [v["version"] for v in versions] == [1, 2, 3, 4]
    assert [v["actor"] for v in versions] == [
        "user:alice",
        "user:alice",
        f"key:{site.key_ids['admin']}",
        "user:alice",
    ]
    assert versions[1]["content"] == "Alice likes green tea"
    assert versions[2]["metadata"] == {"k": 1} and versions[2]["changed"] == ["metadata"]
    assert versions[3]["status"] == "invalid" and versions[0]["memory_type"] == "memory"
    assert versions[0]["at"].endswith("+00:00")
    # Another user's memory is unknown; no key is 401; an unknown id 404.
    assert _history(site, "bob", mid).status_code == 404
    assert c.get(f"/v1/memories/{mid}/history").status_code == 401
    assert _history(site, "alice", "no-such-memory").status_code == 404
    # Deleted: its owner still reads the tombstone, without content; others do not.
    assert c.delete(f"/v1/memories/{mid}", headers=alice).json() == {"deleted": 1}
    gone = _history(site, "alice", mid).json()
    assert [v["change"] for v in gone][-1] == "deleted" and len(gone) == 5
    assert all(v["content"] is None and v["metadata"] is None for v in gone)
    assert gone[-1]["actor"] == "user:alice"
    assert _history(site, "bob", mid).status_code == 404
    assert _history(site, "admin", mid).status_code == 200


def test_rest_links_that_supersede_are_versions(site: Site) -> None:
    c, alice = site.client, site.auth("alice")
    old = c.post(
        "/v1/memories", json={"content": "Lives in Porto", "user_id": "alice"}, headers=alice
    ).json()["id"]
    new = c.post(
        "/v1/memories", json={"content": "Lives in Lisbon", "user_id": "alice"}, headers=alice
    ).json()["id"]
    r = c.post(
        "/v1/links",
        json={
            "source_record_id": new,
            "source_record_type": "memory",
            "target_record_id": old,
            "target_record_type": "memory",
            "relation_type": "supersedes",
        },
        headers=alice,
    )
    assert r.status_code == 201, r.text
    versions = _history(site, "alice", old).json()
    assert [(v["change"], v["superseded_by"], v["actor"]) for v in versions] == [
        ("created", None, "user:alice"),
        ("superseded", new, "user:alice"),
    ]


def test_openapi_documents_the_route(site: Site) -> None:
    doc = site.client.get("/openapi.json").json()
    op = doc["paths"]["/v1/memories/{memory_id}/history"]["get"]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["items"]["$ref"].endswith("/VersionOut")
    assert {"401", "404"} <= set(op["responses"])


def _login(site: Site, who: str) -> TestClient:
    return ui_login(site.client, site.keys[who])


def test_ui_memory_page_shows_the_versions(site: Site) -> None:
    mid = site.client.post(
        "/v1/memories",
        json={"content": "Alice rides a bike", "user_id": "alice"},
        headers=site.auth("alice"),
    ).json()["id"]
    c = _login(site, "alice")
    page = c.get(f"/ui/memories/{mid}")
    assert page.status_code == 200 and "History (1)" in page.text
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token
    r = c.post(
        f"/ui/memories/{mid}/edit",
        data={
            "csrf": token.group(1),
            "content": "Alice rides an e-bike",
            "status": "valid",
            "metadata": "",
        },
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    page = c.get(f"/ui/memories/{mid}").text
    assert "History (2)" in page and 'id="history"' in page
    rows = re.findall(r"<tr><td class='num'>(\d+)</td><td>.*?</tr>", page)
    assert rows == ["2", "1"]  # newest first
    assert page.count("user:alice") == 2 and "Alice rides an e-bike" in page


def test_mcp_tool_reads_the_servers_users_history(make_client: Any) -> None:
    from oracleagentmemory.mcpserver.server import MemoryTools

    client = make_client()
    alice = MemoryTools(client, "alice", None)
    bob = MemoryTools(client, "bob", None)
    mid = alice.add_memory("Alice plays chess")["id"]
    alice.update_memory(mid, content="Alice plays go")
    assert [v["change"] for v in alice.get_memory_history(mid)] == ["created", "updated"]
    with pytest.raises(ValueError):
        bob.get_memory_history(mid)
    alice.delete_memory(mid)
    assert [v["change"] for v in alice.get_memory_history(mid)] == ["created", "updated", "deleted"]
    with pytest.raises(ValueError):
        bob.get_memory_history(mid)
    with pytest.raises(ValueError):
        alice.get_memory_history("never-there")


async def test_mcp_stdio_tool_names_the_agent(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp import Client

    from .test_mcp_server import _data, _server

    db = str(tmp_path / "mcp.db")
    async with Client(_server(db, "alice", "--agent-id", "helper")) as alice:
        mid = _data(await alice.call_tool("add_memory", {"content": "Alice bakes bread"}))["id"]
        await alice.call_tool("update_memory", {"memory_id": mid, "content": "Alice bakes rye"})
        versions = _data(await alice.call_tool("get_memory_history", {"memory_id": mid}))
    assert [(v["change"], v["actor"], v["content"]) for v in versions] == [
        ("created", "agent:helper", "Alice bakes bread"),
        ("updated", "agent:helper", "Alice bakes rye"),
    ]

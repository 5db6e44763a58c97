"""``as_of`` search and the memories' times over REST (``/v1/search``, a thread's search),
the MCP search tool and the ``/ui`` search page, on both engines (#51)."""

from __future__ import annotations

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
JAN_2024 = "2024-01-01T00:00:00+00:00"
JUN_2025 = "2025-06-01T00:00:00+00:00"


@dataclass
class Site:
    client: TestClient
    keys: dict[str, str]

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}


@pytest.fixture
def site(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Site]:
    dsn = backend_connection(request, backend, tmp_path, "validity.db")
    store = ApiKeyStore(Target(dsn))
    keys = {u: store.create([u])[0] for u in ("alice", "bob")}
    store.close()
    app = create_app(ServerSettings(dsn=dsn, embedder="none", search_strategy="keyword"))
    with TestClient(app, base_url=BASE, headers={"Origin": BASE}) as client:
        yield Site(client, keys)


def _moved(site: Site) -> tuple[str, str]:
    """Alice in Paris from 2024, in Lisbon from mid 2025 (superseding Paris)."""
    c, alice = site.client, site.auth("alice")
    ids = []
    for text, ts in (("Alice lives in Paris", JAN_2024), ("Alice lives in Lisbon", JUN_2025)):
        r = c.post(
            "/v1/memories",
            json={"content": text, "user_id": "alice", "agent_id": "a1", "timestamp": ts},
            headers=alice,
        )
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    old, new = ids
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
    assert c.patch(f"/v1/memories/{old}", json={"status": "invalid"}, headers=alice).is_success
    return old, new


def _contents(r: Any) -> list[str]:
    assert r.status_code == 200, r.text
    return [hit["record"]["content"] for hit in r.json()["results"]]


def test_rest_search_as_of_and_the_memories_times(site: Site) -> None:
    old, _ = _moved(site)
    c, alice = site.client, site.auth("alice")
    body = {"query": "Alice lives", "user_id": "alice"}
    assert _contents(c.post("/v1/search", json=body, headers=alice)) == ["Alice lives in Lisbon"]
    then = c.post("/v1/search", json={**body, "as_of": "2024-06-01T00:00:00Z"}, headers=alice)
    assert _contents(then) == ["Alice lives in Paris"]
    (hit,) = then.json()["results"]
    record = hit["record"]
    assert record["valid_from"] == "2024-01-01T00:00:00"
    assert record["valid_until"] == "2025-06-01T00:00:00"
    assert record["updated_at"] is not None and record["status"] == "invalid"
    # Naive times are UTC; a bad one is a 422 naming the field.
    naive = c.post("/v1/search", json={**body, "as_of": "2026-01-01T00:00:00"}, headers=alice)
    assert _contents(naive) == ["Alice lives in Lisbon"]
    bad = c.post("/v1/search", json={**body, "as_of": "someday"}, headers=alice)
    assert bad.status_code == 422 and "as_of" in bad.text
    # Another user's past is still not hers to read.
    bob = c.post(
        "/v1/search", json={**body, "as_of": "2024-06-01T00:00:00Z"}, headers=site.auth("bob")
    )
    assert bob.status_code == 403
    # A thread's search takes it too.
    r = c.post("/v1/threads", json={"user_id": "alice", "agent_id": "a1"}, headers=alice)
    assert r.status_code == 201, r.text
    tid = r.json()["id"]
    path = f"/v1/threads/{tid}/search"
    assert _contents(c.post(path, json={"query": "Alice lives"}, headers=alice)) == [
        "Alice lives in Lisbon"
    ]
    then = c.post(path, json={"query": "Alice lives", "as_of": "2024-06-01"}, headers=alice)
    assert _contents(then) == ["Alice lives in Paris"]
    # The record routes return the times too.
    got = c.get(f"/v1/memories/{old}", headers=alice).json()
    assert got["valid_until"] == "2025-06-01T00:00:00"


def test_openapi_documents_as_of(site: Site) -> None:
    doc = site.client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name in ("SearchIn", "ThreadSearchIn"):
        assert "as_of" in schemas[name]["properties"]
    assert {"updated_at", "valid_from", "valid_until"} <= set(schemas["RecordOut"]["properties"])


def _login(site: Site, who: str) -> TestClient:
    return ui_login(site.client, site.keys[who])


def test_ui_search_page_as_of(site: Site) -> None:
    old, new = _moved(site)
    c = _login(site, "alice")
    # A memory's page says when it was true.
    page = c.get(f"/ui/memories/{old}").text
    assert "from 2024-01-01 00:00 until 2025-06-01 00:00" in page
    assert "from 2025-06-01 00:00 on (still true)" in c.get(f"/ui/memories/{new}").text
    page = c.get("/ui/users/alice/search", params={"q": "Alice lives", "kind": "memories"})
    assert page.status_code == 200 and 'id="as-of"' in page.text
    assert "Alice lives in Lisbon" in page.text and "Alice lives in Paris" not in page.text
    then = c.get(
        "/ui/users/alice/search",
        params={"q": "Alice lives", "kind": "memories", "as_of": "2024-06-01T00:00"},
    )
    assert then.status_code == 200
    assert "Alice lives in Paris" in then.text and "Alice lives in Lisbon" not in then.text
    assert "as of 2024-06-01T00:00 UTC" in then.text
    bad = c.get("/ui/users/alice/search", params={"q": "Alice", "as_of": "someday"})
    assert bad.status_code == 200 and 'id="search-error"' in bad.text


def test_mcp_search_tool_as_of(make_client: Any) -> None:
    from oracleagentmemory.mcpserver.server import MemoryTools

    client = make_client()
    alice = MemoryTools(client, "alice", None)
    old = client.add_memory("Alice lives in Paris", user_id="alice", timestamp=JAN_2024)
    new = client.add_memory("Alice lives in Lisbon", user_id="alice", timestamp=JUN_2025)
    client.link_records(new, "memory", old, "memory", "supersedes")
    client.update_memory(old, status="invalid")
    now = alice.search_memories("Alice lives", record_types=["memory"])
    assert [r["content"] for r in now] == ["Alice lives in Lisbon"]
    then = alice.search_memories("Alice lives", record_types=["memory"], as_of="2024-06-01")
    assert [r["content"] for r in then] == ["Alice lives in Paris"]
    assert then[0]["valid_until"] == "2025-06-01T00:00:00"
    with pytest.raises(ValueError, match="as_of"):
        alice.search_memories("Alice lives", as_of="someday")

"""The REST server in a real uvicorn subprocess, over a real socket with httpx: every route,
auth failures, size limits, bad JSON, and several worker processes writing one SQLite file."""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from ._servers import new_key, running_server

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("rest") / "rest.db")
    keys = {"u1": new_key(db, "u1"), "u2": new_key(db, "u2"), "admin": new_key(db, admin=True)}
    with running_server(db) as base:
        yield {"base": base, "keys": keys, "db": db}


def _client(server: dict[str, Any], who: str | None) -> httpx.Client:
    headers = {} if who is None else {"Authorization": f"Bearer {server['keys'][who]}"}
    return httpx.Client(base_url=server["base"], headers=headers, timeout=60)


def _err(resp: httpx.Response, status: int) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"status", "code", "message"}
    assert body["error"]["status"] == status
    return body["error"]  # type: ignore[no-any-return]


def test_health_and_openapi_need_no_key(server: dict[str, Any]) -> None:
    with _client(server, None) as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        doc = c.get("/openapi.json").json()
        assert "/v1/search" in doc["paths"]
        assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_auth_failures(server: dict[str, Any]) -> None:
    with _client(server, None) as c:
        assert _err(c.get("/v1/users"), 401)["code"] == "unauthorized"
        _err(
            c.get(
                "/v1/users", headers={"Authorization": "Bearer oam_0123456789abcdef_" + "x" * 43}
            ),
            401,
        )
        _err(c.get("/v1/users", headers={"Authorization": "Basic abc"}), 401)
        _err(c.post("/v1/search", json={"query": "q", "user_id": "u1"}), 401)
    with _client(server, "u1") as c:
        for resp in (
            c.post("/v1/search", json={"query": "q", "user_id": "u2"}),
            c.get("/v1/memories", params={"user_id": "u2"}),
            c.get("/v1/threads", params={"user_id": "u2"}),
            c.post("/v1/users", json={"id": "u2", "information": "x"}),
            c.post("/v1/memories", json={"content": "x", "user_id": "u2"}),
            c.post("/v1/agents", json={"id": "a1", "information": "x"}),
            c.post("/v1/purge", json={"expired": True}),
        ):
            assert _err(resp, 403)["code"] == "forbidden"


def test_every_route(server: dict[str, Any]) -> None:
    with (
        _client(server, "u1") as c,
        _client(server, "u2") as other,
        _client(server, "admin") as admin,
    ):
        # users and agents
        assert (
            c.post(
                "/v1/users", json={"id": "u1", "information": "Likes tea.", "metadata": {"tier": 1}}
            ).status_code
            == 201
        )
        assert c.get("/v1/users/u1").json()["content"] == "Likes tea."
        assert [u["id"] for u in c.get("/v1/users").json()["items"]] == ["u1"]
        assert (
            admin.post("/v1/agents", json={"id": "bot", "information": "Helps."}).status_code == 201
        )
        assert [a["id"] for a in admin.get("/v1/agents").json()["items"]] == ["bot"]
        assert c.get("/v1/agents").json()["items"] == []  # a user key: its threads' agents
        # threads and messages
        t = c.post(
            "/v1/threads",
            json={
                "user_id": "u1",
                "thread_id": "t1",
                "agent_id": "bot",
                "metadata": {"topic": "trip"},
            },
        )
        assert t.status_code == 201 and t.json()["id"] == "t1"
        assert [a["id"] for a in c.get("/v1/agents").json()["items"]] == ["bot"]
        _err(c.post("/v1/threads", json={"user_id": "u1", "thread_id": "t1"}), 409)
        ids = c.post(
            "/v1/threads/t1/messages",
            json={
                "messages": [
                    {"role": "user", "content": "I fly to Tokyo on Friday."},
                    {"role": "assistant", "content": "Window seat?"},
                    {"role": "user", "content": "Yes, and no peanuts please."},
                ]
            },
        ).json()["ids"]
        assert len(ids) == 3
        msgs = c.get("/v1/threads/t1/messages", params={"limit": 2}).json()
        assert [m["seq_no"] for m in msgs["items"]] == [1, 2] and msgs["next_offset"] == 2
        assert msgs["total"] == 3
        assert (
            c.get("/v1/threads/t1/messages", params={"offset": 2}).json()["items"][0]["content"]
            == "Yes, and no peanuts please."
        )
        assert c.get("/v1/threads", params={"user_id": "u1"}).json()["total"] == 1
        assert c.get("/v1/threads/t1").json()["metadata"] == {"topic": "trip"}
        assert c.patch("/v1/threads/t1", json={"metadata": {"topic": "japan"}}).json()[
            "metadata"
        ] == {"topic": "japan"}
        _err(other.get("/v1/threads/t1"), 404)
        _err(
            other.post(
                "/v1/threads/t1/messages", json={"messages": [{"role": "user", "content": "x"}]}
            ),
            404,
        )
        # memories
        m1 = c.post(
            "/v1/memories",
            json={
                "content": "Allergic to peanuts.",
                "user_id": "u1",
                "memory_type": "fact",
                "ttl_days": 30,
                "metadata": {"tags": ["health"]},
            },
        )
        assert m1.status_code == 201 and m1.json()["expires_at"] is not None
        m1id = m1.json()["id"]
        m2id = c.post(
            "/v1/memories",
            json={
                "content": "Prefers window seats.",
                "user_id": "u1",
                "memory_type": "preference",
                "thread_id": "t1",
            },
        ).json()["id"]
        assert c.get(f"/v1/memories/{m1id}").json()["record_type"] == "fact"
        _err(other.get(f"/v1/memories/{m1id}"), 404)
        _err(c.get("/v1/memories/nope"), 404)
        page = c.get("/v1/memories", params={"user_id": "u1", "limit": 1}).json()
        assert page["total"] == 2 and len(page["items"]) == 1 and page["next_offset"] == 1
        patched = c.patch(
            f"/v1/memories/{m2id}", json={"content": "Prefers aisle seats.", "status": "valid"}
        ).json()
        assert patched["content"] == "Prefers aisle seats."
        _err(other.patch(f"/v1/memories/{m2id}", json={"content": "hacked"}), 404)
        # links
        link = c.post(
            "/v1/links",
            json={
                "source_record_id": m2id,
                "source_record_type": "preference",
                "target_record_id": m1id,
                "target_record_type": "fact",
                "relation_type": "supports",
            },
        )
        assert (
            link.status_code == 201 and link.json()["opposite_relation_type"] == "is_supported_by"
        )
        assert len(c.get(f"/v1/memories/{m1id}/links").json()) == 1
        # search (client and thread), with every scope flag and a metadata filter
        res = c.post(
            "/v1/search", json={"query": "peanut allergy", "user_id": "u1", "max_results": 5}
        ).json()["results"]
        assert res[0]["record"]["id"] in (m1id, ids[2]) and "distance" in res[0]
        flt = c.post(
            "/v1/search",
            json={
                "query": "peanut",
                "user_id": "u1",
                "agent_id": "bot",
                "thread_id": "t1",
                "exact_agent_match": False,
                "exact_thread_match": False,
                "metadata_filter": {"tags": {"$array_contains": "health"}},
                "record_types": ["fact"],
                "num_hops": 1,
                "strategy": "hybrid",
            },
        ).json()["results"]
        assert [r["record"]["id"] for r in flt] == [m1id]
        assert flt[0]["linked"][0]["record"]["id"] == m2id
        _err(
            c.post(
                "/v1/search",
                json={"query": "x", "user_id": "u1", "metadata_filter": {"a": {"$bogus": 1}}},
            ),
            400,
        )
        tres = c.post("/v1/threads/t1/search", json={"query": "Tokyo flight"}).json()
        assert any("Tokyo" in r["record"]["content"] for r in tres["results"])
        # context card, summary
        card = c.get("/v1/threads/t1/context-card").json()["content"]
        assert "peanuts" in card
        assert "Tokyo" in c.get("/v1/threads/t1/summary").json()["content"]
        # images (multipart)
        img = c.post(
            "/v1/images",
            data={
                "user_id": "u1",
                "description": "a beach at sunset",
                "metadata": json.dumps({"place": "Nice"}),
            },
            files={"file": ("b.png", PNG, "image/png")},
        )
        assert img.status_code == 201, img.text
        img_id = img.json()["id"]
        assert c.get(f"/v1/images/{img_id}").json()["mime_type"] == "image/png"
        got = c.get(f"/v1/images/{img_id}/content")
        assert got.content == PNG and got.headers["content-type"] == "image/png"
        assert c.get("/v1/images", params={"user_id": "u1"}).json()["total"] == 1
        _err(other.get(f"/v1/images/{img_id}/content"), 404)
        _err(
            c.post(
                "/v1/images",
                data={"user_id": "u1", "metadata": "[1]"},
                files={"file": ("b.png", PNG, "image/png")},
            ),
            400,
        )
        _err(
            c.post(
                "/v1/images",
                data={"user_id": "u1"},
                files={"file": ("b.txt", b"not an image", "text/plain")},
            ),
            415,
        )
        assert c.delete(f"/v1/images/{img_id}").json() == {"deleted": 1}
        # deletes
        rel_id = link.json()["id"]
        _err(other.delete(f"/v1/links/{rel_id}"), 404)
        assert c.delete(f"/v1/links/{rel_id}").json() == {"deleted": 1}
        _err(c.delete(f"/v1/links/{rel_id}"), 404)
        assert c.delete(f"/v1/threads/t1/messages/{ids[0]}").json() == {"deleted": 1}
        _err(other.delete(f"/v1/memories/{m1id}"), 404)
        assert c.delete(f"/v1/memories/{m1id}").json() == {"deleted": 1}
        assert admin.post("/v1/purge", json={"expired": True}).json() == {"deleted": 0}
        assert c.delete("/v1/threads/t1").json() == {"deleted": 1}
        _err(c.get("/v1/threads/t1"), 404)
        assert admin.delete("/v1/agents/bot").json() == {"deleted": 1}
        assert c.delete("/v1/users/u1").json() == {"deleted": 1}
        assert c.get("/v1/memories", params={"user_id": "u1"}).json()["total"] == 0


def test_oversize_and_bad_bodies(server: dict[str, Any]) -> None:
    with _client(server, "u1") as c:
        big = json.dumps({"query": "x" * (2 << 20), "user_id": "u1"})
        assert (
            _err(
                c.post("/v1/search", content=big, headers={"content-type": "application/json"}), 413
            )["code"]
            == "payload_too_large"
        )

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
            yield b'{"query": "'
            for _ in range(40):
                yield b"y" * 65536
            yield b'", "user_id": "u1"}'

        _err(
            c.post("/v1/search", content=chunks(), headers={"content-type": "application/json"}),
            413,
        )
        _err(
            c.post(
                "/v1/search", content=b"{bad json", headers={"content-type": "application/json"}
            ),
            400,
        )
        assert _err(c.post("/v1/search", json={"query": "x"}), 422)["code"] == "invalid_request"
        _err(c.post("/v1/search", json={"query": "x", "user_id": "u1", "bogus": 1}), 422)
        _err(c.post("/v1/search", json={"query": "x", "user_id": "u1", "max_results": 10**9}), 422)
        _err(c.get("/v1/nope"), 404)


def test_four_workers_write_one_sqlite_file(tmp_path: Path) -> None:
    db = str(tmp_path / "soak.db")
    users = [f"w{i}" for i in range(4)]
    key = new_key(db, *users)
    per_user, batch = 12, 5
    with running_server(
        db, "--workers", "4", "--embedder", "none", "--search-strategy", "keyword"
    ) as base:
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
            for u in users:
                assert (
                    c.post("/v1/threads", json={"user_id": u, "thread_id": f"t-{u}"}).status_code
                    == 201
                )

        def writer(u: str) -> int:
            written = 0
            with httpx.Client(base_url=base, headers=headers, timeout=120) as w:
                for i in range(per_user):
                    # Writers interleave on every thread, from different worker processes.
                    r = w.post(
                        f"/v1/threads/t-{users[(users.index(u) + i) % 4]}/messages",
                        json={
                            "messages": [
                                {"role": "user", "content": f"{u} says {i}.{j}"}
                                for j in range(batch)
                            ]
                        },
                    )
                    assert r.status_code == 201, r.text
                    m = w.post("/v1/memories", json={"content": f"{u} memory {i}", "user_id": u})
                    assert m.status_code == 201, m.text
                    written += batch
            return written

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            total = sum(pool.map(writer, users * 2))
        with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
            seen = 0
            for u in users:
                msgs = c.get(f"/v1/threads/t-{u}/messages", params={"limit": 1000}).json()
                seqs = [m["seq_no"] for m in msgs["items"]]
                assert seqs == list(range(1, len(seqs) + 1)), "seq_no unique and increasing"
                seen += msgs["total"]
                mems = c.get("/v1/memories", params={"user_id": u, "limit": 1000}).json()
                assert mems["total"] == 2 * per_user
            assert seen == total == 4 * 2 * per_user * batch

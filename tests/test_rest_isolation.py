"""A hostile neighbour against ``oam serve`` (issue 21), over a real socket: another user's
thread id, record ids, forms posted from another site, files that are not images, nested form
JSON, ids holding slashes, slow clients, and the heaviest requests the limits allow while
another user keeps working."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.store._limits import (
    MAX_FILTER_CHARS,
    MAX_FILTER_TERMS,
    MAX_REQUEST_TEXT,
)

from ._images import PNG
from ._servers import new_key, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("isolation") / "iso.db")
    with OracleAgentMemory(connection=db, schema_policy="create_if_necessary") as mem:
        # Bob's conversation as the store tour (docs/guides/store.md) writes one: messages, no
        # thread row.
        mem.store.add(
            ["bob's secret plan", "bob's bank pin is 4321"],
            record_type="message",
            roles="user",
            thread_ids="conv-bob",
            user_ids="bob",
            record_ids=["bob-m1", "bob-m2"],
        )
        mem.add_memory(
            "Bob hides the key under the mat.",
            user_id="bob",
            thread_id="conv-bob",
            memory_id="bob-mem",
        )
        mem.create_thread(thread_id="bob-thread", user_id="bob")
        mem.add_image(PNG, user_id="bob", description="bob's photo", image_id="bob-img")
        mem.add_image(
            b"<html><script>alert(1)</script>",
            mime_type="image/png",
            user_id="bob",
            description="not a png",
            image_id="bob-fake",
        )
    keys = {u: new_key(db, u) for u in ("alice", "bob")}
    keys["admin"] = new_key(db, admin=True)
    with running_server(db) as base:
        yield {"base": base, "keys": keys, "db": db}


def _as(server: dict[str, Any], who: str) -> httpx.Client:
    return httpx.Client(
        base_url=server["base"],
        timeout=120,
        headers={"Authorization": f"Bearer {server['keys'][who]}"},
    )


def _bob_intact(server: dict[str, Any]) -> None:
    with _as(server, "bob") as bob:
        mems = bob.get("/v1/memories", params={"user_id": "bob"}).json()["items"]
        assert [m["id"] for m in mems] == ["bob-mem"]
        assert bob.get("/v1/threads/bob-thread").status_code == 200
    with OracleAgentMemory(connection=server["db"]) as mem:
        assert [m.id for m in mem.store.list_thread_messages("conv-bob")] == ["bob-m1", "bob-m2"]


def test_a_thread_id_does_not_reach_another_users_rows(server: dict[str, Any]) -> None:
    with _as(server, "alice") as alice:
        taken = alice.post("/v1/threads", json={"user_id": "alice", "thread_id": "conv-bob"})
        assert taken.status_code == 409, taken.text
        assert "bob" not in taken.text.replace("conv-bob", "")
        planted = alice.post(
            "/v1/memories", json={"content": "x", "user_id": "alice", "thread_id": "conv-bob"}
        )
        assert planted.status_code == 409, planted.text
        image = alice.post(
            "/v1/images",
            files={"file": ("a.png", PNG, "image/png")},
            data={"user_id": "alice", "thread_id": "conv-bob", "description": "d"},
        )
        assert image.status_code == 409, image.text
        for path in ("", "/messages", "/summary", "/context-card"):
            assert alice.get(f"/v1/threads/conv-bob{path}").status_code == 404, path
            assert alice.get(f"/v1/threads/bob-thread{path}").status_code == 404, path
        assert (
            alice.post(
                "/v1/threads/bob-thread/messages",
                json={"messages": [{"role": "user", "content": "hi"}]},
            ).status_code
            == 404
        )
        assert alice.delete("/v1/threads/conv-bob").status_code == 404
        assert alice.delete("/v1/threads/bob-thread").status_code == 404
        assert alice.delete("/v1/users/alice", params={"cascade": "true"}).status_code == 200
    _bob_intact(server)
    # The owner can give the conversation its thread row and read it back.
    with _as(server, "bob") as bob:
        assert (
            bob.post("/v1/threads", json={"user_id": "bob", "thread_id": "conv-bob"}).status_code
            == 201
        )
        msgs = bob.get("/v1/threads/conv-bob/messages").json()["items"]
        assert [m["id"] for m in msgs] == ["bob-m1", "bob-m2"]


def test_another_users_record_answers_like_an_unknown_id(server: dict[str, Any]) -> None:
    with _as(server, "alice") as alice:
        for route, theirs in (
            ("/v1/memories/{}", "bob-mem"),
            ("/v1/threads/{}", "bob-thread"),
            ("/v1/images/{}", "bob-img"),
            ("/v1/images/{}/content", "bob-img"),
            ("/v1/memories/{}/links", "bob-mem"),
        ):
            a = alice.get(route.format(theirs))
            b = alice.get(route.format("no-such-id"))
            assert (a.status_code, b.status_code) == (404, 404), route
            assert a.json()["error"]["message"].replace(theirs, "ID") == b.json()["error"][
                "message"
            ].replace("no-such-id", "ID")
        assert alice.patch("/v1/memories/bob-mem", json={"content": "hacked"}).status_code == 404
        assert alice.delete("/v1/memories/bob-mem").status_code == 404
    _bob_intact(server)


def test_a_user_key_lists_only_its_threads_agents(server: dict[str, Any]) -> None:
    with _as(server, "admin") as admin:
        for agent in ("concierge", "spy"):
            admin.post("/v1/agents", json={"id": agent, "information": "An agent."})
    with _as(server, "alice") as alice:
        assert alice.get("/v1/agents").json()["items"] == []
        alice.post("/v1/threads", json={"user_id": "alice", "agent_id": "concierge"})
        assert [a["id"] for a in alice.get("/v1/agents").json()["items"]] == ["concierge"]
    with _as(server, "admin") as admin:
        assert {a["id"] for a in admin.get("/v1/agents").json()["items"]} >= {"concierge", "spy"}


def test_responses_carry_security_headers_and_docs_are_local(server: dict[str, Any]) -> None:
    with httpx.Client(base_url=server["base"]) as anon:
        for path in ("/ui", "/docs", "/v1/users", "/healthz"):
            r = anon.get(path)
            assert r.headers["x-content-type-options"] == "nosniff", path
            assert r.headers["cache-control"] == "no-store", path
            assert "frame-ancestors 'none'" in r.headers["content-security-policy"], path
        assert anon.get("/ui").headers["x-frame-options"] == "DENY"
        docs = anon.get("/docs")
        assert docs.status_code == 200
        scripts = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', docs.text)
        assert scripts and all(s.startswith("/docs/assets/") for s in scripts), scripts
        for src in scripts:
            assert anon.get(src).status_code == 200, src


def _login(server: dict[str, Any], who: str) -> httpx.Client:
    c = httpx.Client(base_url=server["base"], timeout=60, headers={"Origin": server["base"]})
    page = c.get("/ui")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    r = c.post("/ui/login", data={"key": server["keys"][who], "csrf": token})
    assert r.status_code == 303, r.text
    return c


def _form_token(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no CSRF field"
    return found.group(1)


def test_ui_forms_need_this_origin_and_their_token(server: dict[str, Any]) -> None:
    with _as(server, "alice") as alice:
        mid = alice.post("/v1/memories", json={"content": "keep me", "user_id": "alice"}).json()[
            "id"
        ]
    ui = _login(server, "alice")
    token = _form_token(ui.get(f"/ui/memories/{mid}").text)
    attempts = [  # (headers, form): what a page on another site can make a browser send
        ({"Origin": "https://evil.example"}, {"csrf": token}),
        ({"Origin": "null"}, {"csrf": token}),
        ({}, {}),
        ({}, {"csrf": "0" * 64}),
    ]
    for headers, form in attempts:
        r = ui.post(f"/ui/memories/{mid}/delete", data=form, headers=headers)
        assert r.status_code == 403, (headers, form)
        r = ui.post(f"/ui/memories/{mid}/edit", data={**form, "content": "hacked"}, headers=headers)
        assert r.status_code == 403, (headers, form)
    no_origin = httpx.Client(base_url=server["base"], cookies=ui.cookies)
    assert no_origin.post(f"/ui/memories/{mid}/delete", data={"csrf": token}).status_code == 403
    with _as(server, "alice") as alice:
        assert alice.get(f"/v1/memories/{mid}").json()["content"] == "keep me"
    assert ui.post(f"/ui/memories/{mid}/delete", data={"csrf": token}).status_code == 303
    # Logging a browser in with the attacker's key needs the log-in page's own token.
    victim = httpx.Client(base_url=server["base"], headers={"Origin": server["base"]})
    forced = victim.post("/ui/login", data={"key": server["keys"]["bob"], "csrf": "x"})
    assert forced.status_code == 403 and "oam_session" not in forced.cookies
    cross = httpx.Client(base_url=server["base"], headers={"Origin": "https://evil.example"})
    cross.get("/ui")
    assert (
        cross.post(
            "/ui/login",
            data={"key": server["keys"]["bob"], "csrf": cross.cookies.get("oam_login_csrf", "")},
        ).status_code
        == 403
    )
    # Another user's thread and memory are "not found" in the browser too.
    assert ui.get("/ui/threads/conv-bob").status_code == 404
    assert ui.get("/ui/threads/bob-thread").status_code == 404
    assert ui.get("/ui/memories/bob-mem").status_code == 404


def test_uploads_must_be_the_images_they_claim(server: dict[str, Any]) -> None:
    with _as(server, "alice") as alice:
        for name, data, mime in (
            ("x.png", b"<html><script>alert(1)</script>", "image/png"),
            ("x.png", b"GIF89a" + b"\0" * 20, "image/png"),
            ("x.jpg", PNG, "image/jpeg"),
            ("x.txt", b"plain text", "text/plain"),
        ):
            r = alice.post(
                "/v1/images",
                files={"file": (name, data, mime)},
                data={"user_id": "alice", "description": "d"},
            )
            assert r.status_code == 415, (mime, r.text)
        ok = alice.post(
            "/v1/images",
            files={"file": ("x.png", PNG, "image/png")},
            data={"user_id": "alice", "description": "d"},
        )
        assert ok.status_code == 201 and ok.json()["mime_type"] == "image/png"
        served = alice.get(f"/v1/images/{ok.json()['id']}/content")
        assert served.headers["content-type"] == "image/png" and served.content == PNG
    with _as(server, "bob") as bob:  # stored through the SDK with bytes that are no PNG
        fake = bob.get("/v1/images/bob-fake/content")
        assert fake.headers["content-type"] == "application/octet-stream"
        assert fake.headers["content-disposition"] == "attachment"
        assert "sandbox" in fake.headers["content-security-policy"]


def test_deeply_nested_form_json_is_a_400(server: dict[str, Any]) -> None:
    nested = "[" * 3000 + "]" * 3000  # 6 KB
    with _as(server, "alice") as alice:
        r = alice.post(
            "/v1/images",
            files={"file": ("x.png", PNG, "image/png")},
            data={"user_id": "alice", "description": "d", "metadata": nested},
        )
        assert r.status_code == 400 and "metadata" in r.json()["error"]["message"]
        deep = {"metadata": {"a": 1}}
        cursor = deep["metadata"]
        for _ in range(60):
            cursor["a"] = {"a": 1}
            cursor = cursor["a"]
        r = alice.post("/v1/memories", json={"content": "x", "user_id": "alice", **deep})
        assert r.status_code in (400, 422) and "deeper" in r.text
    ui = _login(server, "alice")
    with _as(server, "alice") as alice:
        mid = alice.post("/v1/memories", json={"content": "m", "user_id": "alice"}).json()["id"]
    token = _form_token(ui.get(f"/ui/memories/{mid}").text)
    r = ui.post(
        f"/ui/memories/{mid}/edit", data={"csrf": token, "content": "m", "metadata": "{" * 3000}
    )
    assert r.status_code == 400


def test_ids_holding_slashes_are_reachable(server: dict[str, Any]) -> None:
    with _as(server, "alice") as alice:
        assert (
            alice.post(
                "/v1/memories",
                json={
                    "content": "A memory under a slashed id.",
                    "user_id": "alice",
                    "memory_id": "team/q3",
                },
            ).status_code
            == 201
        )
        assert (
            alice.post(
                "/v1/threads", json={"user_id": "alice", "thread_id": "alice/trip"}
            ).status_code
            == 201
        )
        assert alice.get("/v1/memories/team%2Fq3").json()["id"] == "team/q3"
        assert alice.get("/v1/threads/alice%2Ftrip").json()["id"] == "alice/trip"
        ids = alice.post(
            "/v1/threads/alice%2Ftrip/messages",
            json={"messages": [{"role": "user", "content": "to Lisbon", "id": "m/1"}]},
        ).json()["ids"]
        assert ids == ["m/1"]
        assert alice.get("/v1/threads/alice%2Ftrip/messages").json()["items"][0]["id"] == "m/1"
        assert alice.delete("/v1/threads/alice%2Ftrip/messages/m%2F1").json() == {"deleted": 1}
        assert alice.get("/v1/memories/team/q3").status_code == 404  # a raw slash splits
        assert alice.get("/v1/memories/%EE%80%80").status_code == 400
    ui = _login(server, "alice")
    page = ui.get("/ui/users/alice").text
    assert 'href="/ui/memories/team%2Fq3"' in page
    assert "A memory under a slashed id." in ui.get("/ui/memories/team%2Fq3").text


def test_limits_on_filters_and_request_text(server: dict[str, Any]) -> None:
    with _as(server, "alice") as alice:
        over = {f"k{i}": i for i in range(MAX_FILTER_TERMS + 1)}
        r = alice.post(
            "/v1/search", json={"query": "q", "user_id": "alice", "metadata_filter": over}
        )
        assert r.status_code == 400 and "terms" in r.text
        r = alice.post(
            "/v1/search",
            json={
                "query": "q",
                "user_id": "alice",
                "metadata_filter": {"s": "x" * MAX_FILTER_CHARS},
            },
        )
        assert r.status_code == 400 and "characters" in r.text
        tid = alice.post("/v1/threads", json={"user_id": "alice"}).json()["id"]
        half = "word " * (MAX_REQUEST_TEXT // 10 + 1)
        r = alice.post(
            f"/v1/threads/{tid}/messages",
            json={
                "messages": [{"role": "user", "content": half}, {"role": "user", "content": half}]
            },
        )
        assert r.status_code == 422 and "at most" in r.text


def test_slow_clients_are_cut_off(tmp_path: Path) -> None:
    db = str(tmp_path / "slow.db")
    with running_server(db, "--request-timeout", "1.5") as base:
        port = int(base.rsplit(":", 1)[1])
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(10)
            reply = b""
            try:
                for char in b"GET /healthz HTTP/1.1\r\nHost: x\r\n":  # never ends its head
                    s.sendall(bytes([char]))
                    time.sleep(0.1)
                reply = s.recv(1024)
            except (BrokenPipeError, ConnectionResetError):
                pass
        assert time.monotonic() - started < 8, "the trickling client was not cut off"
        assert reply == b"" or b"408" in reply
        with socket.create_connection(("127.0.0.1", port)) as idle:  # connects, sends nothing
            idle.settimeout(10)
            t0 = time.monotonic()
            assert idle.recv(1024) == b""
            assert time.monotonic() - t0 < 8
        assert httpx.get(base + "/healthz").status_code == 200


def test_the_heaviest_requests_do_not_stall_another_user(server: dict[str, Any]) -> None:
    """Alice sends the largest filter and the largest message the limits allow; Bob's
    requests keep completing meanwhile (bench/isolation.py measures the latencies)."""
    with _as(server, "alice") as alice:
        tid = alice.post("/v1/threads", json={"user_id": "alice"}).json()["id"]
    big_filter = {f"k{i}": i for i in range(MAX_FILTER_TERMS)}
    big_text = (
        "Alice writes a very long diary entry about her travels. " * (MAX_REQUEST_TEXT // 56)
    )[:MAX_REQUEST_TEXT]
    done = threading.Event()
    errors: list[str] = []

    def heavy() -> None:
        try:
            with _as(server, "alice") as alice:
                r = alice.post(
                    f"/v1/threads/{tid}/messages",
                    json={"messages": [{"role": "user", "content": big_text}]},
                )
                if r.status_code != 201:
                    errors.append(r.text)
        finally:
            done.set()

    def filters() -> None:
        with _as(server, "alice") as alice:
            while not done.is_set():
                alice.post(
                    "/v1/search",
                    json={"query": "travel", "user_id": "alice", "metadata_filter": big_filter},
                )

    workers = [threading.Thread(target=heavy), threading.Thread(target=filters)]
    for w in workers:
        w.start()
    answered = 0
    with _as(server, "bob") as bob:
        while not done.is_set():
            r = bob.post("/v1/search", json={"query": "key", "user_id": "bob"})
            assert r.status_code == 200
            answered += 1
    for w in workers:
        w.join()
    assert not errors, errors
    assert answered >= 5, f"bob got {answered} answers while alice's message was embedded"


def test_serving_beyond_loopback_warns(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with running_server(str(tmp_path / "net.db"), "--host", "0.0.0.0", log=log):
        pass
    text = log.read_text()
    assert "warning: oam serve: listening on 0.0.0.0" in text and "TLS" in text
    quiet = tmp_path / "quiet.log"
    with running_server(str(tmp_path / "lo.db"), log=quiet):
        pass
    assert "warning" not in quiet.read_text()

"""No existence oracle (issue 48, class 4): what a caller gets for an id never depends on
whether a record it may not see holds that id.

Under row security (``oam serve --end-user-roles`` on a real PostgreSQL) a one-user key sees
only its user's rows, so it may not choose record ids at all (an id taken by someone else
would answer otherwise than a fresh one): every create route answers a chosen id the same,
taken or not, before anything is read; ids are generated (random UUIDs). Another user's
thread, memory or image by id is an unknown one on every route. Without row security (per-user
keys on either engine; ``/ui``; MCP) a chosen id that is taken answers the same whoever holds
it and whatever it holds (the "taken" answer itself is the documented side channel).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.core import (
    OracleAgentMemory,
    PostgresMemoryStore,
    SchemaPolicy,
    deepsec as ds,
)

from ._embedders import HashingEmbedder
from ._images import PNG
from ._servers import new_key, oam, running_server

OWNER, ALICE, BOB = "eio_owner", "eio_alice", "eio_bob"
SCHEMA, STORE = "eio", "eio1"


def _seed(store: Any, alice: str, bob: str) -> None:
    """Both users: a memory, a thread with a row and a message, a thread only messages name,
    an image."""
    for user in (alice, bob):
        store.add(
            [f"{user} likes green tea"], record_type="memory", record_ids=f"{user}-m", user_ids=user
        )
        store.create_thread_record(
            f"{user}-t", user_id=user, agent_id=None, metadata=None, runtime_config=None
        )
        store.add(
            [f"{user} says hello"],
            record_type="message",
            thread_ids=f"{user}-t",
            user_ids=user,
            roles="user",
            record_ids=f"{user}-msg",
        )
        store.add(
            [f"{user} whispers"],
            record_type="message",
            thread_ids=f"{user}-conv",
            user_ids=user,
            roles="user",
            record_ids=f"{user}-conv-msg",
        )
        store.add_image(
            PNG,
            mime_type="image/png",
            description=f"{user}'s cat",
            image_id=f"{user}-img",
            user_id=user,
        )


@pytest.fixture(scope="module")
def rls(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    for stmt in (
        f"CREATE ROLE {OWNER} LOGIN CREATEROLE",
        f"CREATE SCHEMA {SCHEMA} AUTHORIZATION {OWNER}",
        f"CREATE ROLE {ALICE} LOGIN",
        f"CREATE ROLE {BOB} LOGIN",
        f"GRANT {ALICE}, {BOB} TO {OWNER} WITH INHERIT FALSE, SET TRUE",
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
    _seed(owner, ALICE, BOB)
    with psycopg.connect(uri, autocommit=True) as admin:
        own = ds.UserOwnRowsDeepDataSecurityPolicy()
        ds.add_deep_data_security_policies(admin, SCHEMA, STORE, [own])
        ds.grant_agent_memory_policies(
            admin,
            STORE,
            SCHEMA,
            [ds.LocalEndUserPrincipal(ALICE), ds.LocalEndUserPrincipal(BOB)],
            [own],
        )

    def key(*args: str) -> str:
        made = oam("keys", "create", "--dsn", dsn, "--memory-store-id", STORE, *args)
        return made.stdout.strip().splitlines()[-1]

    keys = {"alice": key("--user", ALICE), "admin": key("--admin")}
    log = tmp_path_factory.mktemp("eio") / "serve.log"
    opts = ["--memory-store-id", STORE, "--embedder", "none", "--search-strategy", "keyword"]
    with running_server(dsn, *opts, "--end-user-roles", log=log) as base:
        yield {"base": base, "keys": keys, "owner": owner, "log": log}
    owner.close()


def _as(base: str, key: str) -> Callable[..., httpx.Response]:
    def call(method: str, path: str, **kw: Any) -> httpx.Response:
        return httpx.request(
            method, base + path, timeout=60, headers={"Authorization": f"Bearer {key}"}, **kw
        )

    return call


def _same(answers: dict[str, httpx.Response], ids: dict[str, str]) -> None:
    """Every answer has one status and one body, once each id is replaced by ``ID``."""
    shapes = {name: (r.status_code, r.text.replace(ids[name], "ID")) for name, r in answers.items()}
    assert len(set(shapes.values())) == 1, shapes


CREATES: list[tuple[str, str, Callable[[str], dict[str, Any]]]] = [
    (
        "memory",
        "/v1/memories",
        lambda i: {"json": {"content": "x", "user_id": ALICE, "memory_id": i}},
    ),
    (
        "fact",
        "/v1/memories",
        lambda i: {
            "json": {"content": "x", "user_id": ALICE, "memory_id": i, "memory_type": "fact"}
        },
    ),
    (
        "memory in a thread",
        "/v1/memories",
        lambda i: {
            "json": {"content": "x", "user_id": ALICE, "memory_id": i, "thread_id": f"{ALICE}-t"}
        },
    ),
    ("thread", "/v1/threads", lambda i: {"json": {"user_id": ALICE, "thread_id": i}}),
    (
        "message",
        f"/v1/threads/{ALICE}-t/messages",
        lambda i: {"json": {"messages": [{"role": "user", "content": "x", "id": i}]}},
    ),
    (
        "second message",
        f"/v1/threads/{ALICE}-t/messages",
        lambda i: {
            "json": {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "user", "content": "y", "id": i},
                ]
            }
        },
    ),
]
TAKEN = {  # per create route: her own id, bob's id of the same family, bob's of another
    "memory": (f"{ALICE}-m", f"{BOB}-m", f"{BOB}-t"),
    "fact": (f"{ALICE}-m", f"{BOB}-m", f"{BOB}-img"),
    "memory in a thread": (f"{ALICE}-m", f"{BOB}-m", f"{BOB}-msg"),
    "thread": (f"{ALICE}-t", f"{BOB}-t", f"{BOB}-conv"),
    "message": (f"{ALICE}-msg", f"{BOB}-msg", f"{BOB}-conv-msg"),
    "second message": (f"{ALICE}-msg", f"{BOB}-msg", f"{BOB}-m"),
}


@pytest.mark.parametrize("route", CREATES, ids=[c[0] for c in CREATES])
def test_under_row_security_a_chosen_id_answers_alike_taken_or_free(
    rls: dict[str, Any], route: tuple[str, str, Callable[[str], dict[str, Any]]]
) -> None:
    name, path, body = route
    alice = _as(rls["base"], rls["keys"]["alice"])
    mine, bobs, other = TAKEN[name]
    ids = {"mine": mine, "bobs": bobs, "other": other, "fresh": f"fresh-{uuid.uuid4()}"}
    answers = {who: alice("POST", path, **body(i)) for who, i in ids.items()}
    _same(answers, ids)
    got = answers["fresh"]
    assert got.status_code == 400, got.text
    assert got.json()["error"]["code"] == "bad_request"
    # Nothing was written, to anyone: bob's rows are as they were.
    owner = rls["owner"]
    assert owner.get("memory", f"{BOB}-m").content == f"{BOB} likes green tea"
    assert [m.id for m in owner.list_thread_messages(f"{BOB}-t")] == [f"{BOB}-msg"]
    assert owner.get("memory", ids["fresh"]) is None and owner.get("thread", ids["fresh"]) is None


def test_under_row_security_ids_are_generated_and_admin_keys_may_choose(
    rls: dict[str, Any],
) -> None:
    alice = _as(rls["base"], rls["keys"]["alice"])
    made = alice("POST", "/v1/memories", json={"content": "oolong", "user_id": ALICE})
    thread = alice("POST", "/v1/threads", json={"user_id": ALICE})
    assert (made.status_code, thread.status_code) == (201, 201), (made.text, thread.text)
    said = alice(
        "POST",
        f"/v1/threads/{thread.json()['id']}/messages",
        json={"messages": [{"role": "user", "content": "hi"}]},
    )
    assert said.status_code == 201, said.text
    for new in (made.json()["id"], thread.json()["id"], *said.json()["ids"]):
        assert uuid.UUID(new).version == 4  # random: no one guesses another user's id
    admin = _as(rls["base"], rls["keys"]["admin"])  # the server's own role: sees every row
    chosen = admin(
        "POST",
        "/v1/memories",
        json={"content": "x", "user_id": ALICE, "memory_id": "chosen-by-admin"},
    )
    assert chosen.status_code == 201, chosen.text


THREAD_ROUTES: list[tuple[str, str, Callable[[str], dict[str, Any]]]] = [
    (
        "POST",
        "/v1/memories",
        lambda t: {"json": {"content": "x", "user_id": ALICE, "thread_id": t}},
    ),
    (
        "POST",
        "/v1/images",
        lambda t: {
            "data": {"user_id": ALICE, "thread_id": t},
            "files": {"file": ("c.png", PNG, "image/png")},
        },
    ),
    (
        "POST",
        "/v1/threads/{t}/messages",
        lambda t: {"json": {"messages": [{"role": "user", "content": "x"}]}},
    ),
    ("GET", "/v1/threads/{t}", lambda t: {}),
    ("PATCH", "/v1/threads/{t}", lambda t: {"json": {"metadata": {"a": 1}}}),
    ("DELETE", "/v1/threads/{t}", lambda t: {}),
    ("GET", "/v1/threads/{t}/messages", lambda t: {}),
    ("DELETE", "/v1/threads/{t}/messages/x", lambda t: {}),
    ("GET", "/v1/threads/{t}/context-card", lambda t: {}),
    ("GET", "/v1/threads/{t}/summary", lambda t: {}),
    ("POST", "/v1/threads/{t}/search", lambda t: {"json": {"query": "hello"}}),
]
RECORD_ROUTES: list[tuple[str, str, Callable[[str], dict[str, Any]]]] = [
    ("GET", "/v1/memories/{r}", lambda r: {}),
    ("PATCH", "/v1/memories/{r}", lambda r: {"json": {"content": "mine now"}}),
    ("DELETE", "/v1/memories/{r}", lambda r: {}),
    ("GET", "/v1/memories/{r}/links", lambda r: {}),
    (
        "POST",
        "/v1/links",
        lambda r: {
            "json": {
                "source_record_id": f"{ALICE}-m",
                "source_record_type": "memory",
                "target_record_id": r,
                "target_record_type": "memory",
                "relation_type": "about",
            }
        },
    ),
    ("GET", "/v1/images/{r}", lambda r: {}),
    ("GET", "/v1/images/{r}/content", lambda r: {}),
    ("DELETE", "/v1/images/{r}", lambda r: {}),
]


@pytest.mark.parametrize("route", THREAD_ROUTES, ids=[f"{m} {p}" for m, p, _ in THREAD_ROUTES])
def test_under_row_security_another_users_thread_is_an_unknown_thread(
    rls: dict[str, Any], route: tuple[str, str, Callable[[str], dict[str, Any]]]
) -> None:
    method, path, kw = route
    alice = _as(rls["base"], rls["keys"]["alice"])
    ids = {"row": f"{BOB}-t", "messages only": f"{BOB}-conv", "unknown": "no-such-thread"}
    answers = {n: alice(method, path.format(t=t), **kw(t)) for n, t in ids.items()}
    _same(answers, ids)
    assert answers["unknown"].status_code == 404, answers["unknown"].text


@pytest.mark.parametrize("route", RECORD_ROUTES, ids=[f"{m} {p}" for m, p, _ in RECORD_ROUTES])
def test_under_row_security_another_users_record_is_an_unknown_record(
    rls: dict[str, Any], route: tuple[str, str, Callable[[str], dict[str, Any]]]
) -> None:
    method, path, kw = route
    alice = _as(rls["base"], rls["keys"]["alice"])
    family = "img" if "/images" in path else "m"
    ids = {"bobs": f"{BOB}-{family}", "unknown": f"no-such-{family}"}
    answers = {n: alice(method, path.format(r=r), **kw(r)) for n, r in ids.items()}
    _same(answers, ids)
    assert answers["unknown"].status_code == 404, answers["unknown"].text
    owner = rls["owner"]
    assert owner.get("memory", f"{BOB}-m").content == f"{BOB} likes green tea"
    assert owner.get("image", f"{BOB}-img") is not None


# ------------------------------------------------ without row security: a clash says nothing


@pytest.fixture
def plain(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    dsn = (
        str(tmp_path / "plain.db")
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")("plain")
    )
    with OracleAgentMemory(
        connection=dsn,
        schema_policy="create_if_necessary",
        embedder=None,
        search_strategy="keyword",
    ) as mem:
        _seed(mem.store, "alice", "bob")
    keys = {"alice": new_key(dsn, "alice")}
    with running_server(dsn, "--embedder", "none", "--search-strategy", "keyword") as base:
        yield {"base": base, "keys": keys, "dsn": dsn}


def test_a_taken_message_id_answers_alike_whoever_holds_it(plain: dict[str, Any]) -> None:
    alice = _as(plain["base"], plain["keys"]["alice"])
    ids = {"mine": "alice-msg", "bobs": "bob-msg", "bobs elsewhere": "bob-conv-msg"}
    answers = {
        n: alice(
            "POST",
            "/v1/threads/alice-t/messages",
            json={"messages": [{"role": "user", "content": "x", "id": i}]},
        )
        for n, i in ids.items()
    }
    _same(answers, ids)
    assert answers["mine"].status_code in (400, 409)
    assert "bob" not in answers["bobs"].text.replace("bob-msg", "")


def test_ui_and_mcp_answer_another_users_thread_alike_whatever_it_holds(
    plain: dict[str, Any],
) -> None:
    """A thread with a row and one only messages name answer the same (``/ui`` form, MCP)."""
    base = plain["base"]
    with httpx.Client(base_url=base, headers={"Origin": base}, timeout=60) as ui:
        page = ui.get("/ui")
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token
        ui.post("/ui/login", data={"key": plain["keys"]["alice"], "csrf": token.group(1)})
        form = ui.get("/ui/users/alice/memories/new")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert token, form.text[:300]
        ids = {"row": "bob-t", "messages only": "bob-conv"}
        answers = {
            n: ui.post(
                "/ui/users/alice/memories",
                data={
                    "csrf": token.group(1),
                    "content": "x",
                    "memory_type": "memory",
                    "thread_id": t,
                },
            )
            for n, t in ids.items()
        }
    for r in answers.values():
        assert r.status_code in (404, 409), r.text[:300]
    errors = {
        n: (
            r.status_code,
            (
                re.search(r'id="create-error">([^<]*)<', r.text)
                or re.search(r'id="error">([^<]*)<', r.text)
            )
            .group(1)  # type: ignore[union-attr]
            .replace(ids[n], "ID"),
        )
        for n, r in answers.items()
    }
    assert len(set(errors.values())) == 1, errors

    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from oracleagentmemory.mcpserver.server import MemoryTools, MessageIn

    with OracleAgentMemory(
        connection=plain["dsn"], embedder=None, search_strategy="keyword"
    ) as client:
        tools = MemoryTools(client, "alice", None)
        calls: dict[str, Callable[[str], Any]] = {
            "add_messages": lambda t: tools.add_messages(t, [MessageIn(role="user", content="x")]),
            "get_context_card": lambda t: tools.get_context_card(t),
            "add_memory": lambda t: tools.add_memory("x", thread_id=t),
        }
        for tool, run in calls.items():
            said = {}
            for n, t in ids.items():
                with pytest.raises(ValueError) as err:
                    run(t)
                said[n] = str(err.value).replace(t, "ID")
            assert len(set(said.values())) == 1, (tool, said)
        assert [m.id for m in client.store.list_thread_messages("bob-t")] == ["bob-msg"]

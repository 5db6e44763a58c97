"""Paging in the store (issue 48, class 3): a page costs the page.

Every list route of ``oam serve``, the MCP ``list_memories`` tool and ``oam memories list``
read one ``LIMIT``/``OFFSET`` page and count the rest in SQL. Checked on both engines, from
the class of defect rather than one example:

- the right page for varied windows (first, last, straddling the end, past the end, the
  deepest offset) against the full list the Python API gives, with ``total`` and
  ``next_offset``; out-of-range or non-integer ``limit``/``offset`` answer 422 naming the
  argument (ValueError / usage error naming it on the Python, MCP and CLI paths);
- the cost: the rows the database hands the store for a request (counted at the store's
  one door to the engine, ``dialect.execute``) grow with the page, not with the list (a
  one-row page of a long thread reads as many rows as one of a ten-message thread); and the
  engine's own plan reads no more than ``offset + limit`` rows (SQLite: an index walk in
  the page's order, no sort of the whole list; PostgreSQL: ``EXPLAIN ANALYZE`` row counts).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.core import OracleAgentMemory

from ._images import PNG
from ._servers import free_port, new_key, oam, running_server
from .conftest import backend_connection

BIG = 1200
"""Messages in alice's long thread (the short one holds ten)."""
MAX_OFFSET = 10_000_000
OVERHEAD = 6
"""Rows a list request may read beside its page: the thread's row (ownership check), a
``COUNT(*)`` row, a few lookups of one row each."""
SERVE = ("--embedder", "none", "--search-strategy", "keyword")
ALICE_USERS = ["alice", "carol", *(f"u{i:02d}" for i in range(20))]


def populate(dsn: str) -> None:
    """Profiles, threads, messages, memories and images of alice and bob (and users and
    agents that no key of alice reaches)."""
    with OracleAgentMemory(
        connection=dsn,
        embedder=None,
        search_strategy="keyword",
        schema_policy="create_if_necessary",
    ) as mem:
        for u in ("alice", "bob", "carol", "dave", *(f"u{i:02d}" for i in range(25))):
            mem.add_user(u, f"profile of {u}")
        for a in ("a1", "a2", "bob-agent", "lonely", *(f"ag{i:02d}" for i in range(24))):
            mem.add_agent(a, f"agent {a}")
        big = mem.create_thread(thread_id="big", user_id="alice", agent_id="a1")
        for start in range(0, BIG, 400):
            big.add_messages(
                [
                    {
                        "role": "user" if j % 2 else "assistant",
                        "content": f"message {j} of the long thread",
                    }
                    for j in range(start, min(BIG, start + 400))
                ]
            )
        small = mem.create_thread(thread_id="small", user_id="alice", agent_id="a2")
        small.add_messages([{"role": "user", "content": f"short {j}"} for j in range(10)])
        for i in range(24):
            mem.create_thread(thread_id=f"t{i:02d}", user_id="alice", agent_id=f"ag{i:02d}")
        types = ("memory", "fact", "preference", "guideline")
        for i in range(30):
            agent = ("a1", "a2", None)[i % 3]
            mem.add_memory(
                f"alice memory {i}", user_id="alice", agent_id=agent, memory_type=types[i % 4]
            )
        for i in range(8):
            small.add_memory(f"small-thread memory {i}", memory_type=types[i % 4])
        for i in range(22):
            mem.add_image(PNG, user_id="alice", description=f"photo {i}")
        bob = mem.create_thread(thread_id="bob-t", user_id="bob", agent_id="bob-agent")
        bob.add_messages([{"role": "user", "content": f"bob {j}"} for j in range(5)])
        for i in range(4):
            mem.add_memory(f"bob memory {i}", user_id="bob")
            mem.add_image(PNG, user_id="bob", description=f"bob photo {i}")


def oracle(dsn: str) -> dict[str, list[str]]:
    """Every list a route pages, in full, from the Python API (``limit=None``)."""
    with OracleAgentMemory(connection=dsn, embedder=None, search_strategy="keyword") as mem:
        agents_of_alice = {t.agent_id for u in ALICE_USERS for t in mem.list_threads(u, limit=None)}
        lists = {
            "users-admin": [u.id for u in mem.list_users(limit=None)],
            "users-alice": [u.id for u in mem.list_users(limit=None) if u.id in ALICE_USERS],
            "agents-admin": [a.id for a in mem.list_agents(limit=None)],
            "agents-alice": [a.id for a in mem.list_agents(limit=None) if a.id in agents_of_alice],
            "memories": [m.id for m in mem.list_memories(user_id="alice", limit=None)],
            "memories-a1": [
                m.id for m in mem.list_memories(user_id="alice", agent_id="a1", limit=None)
            ],
            "memories-small": [
                m.id for m in mem.list_memories(user_id="alice", thread_id="small", limit=None)
            ],
            "threads": [t.id for t in mem.list_threads("alice", limit=None)],
            "threads-a1": [t.id for t in mem.list_threads("alice", agent_id="a1", limit=None)],
            "messages-big": [m.id for m in mem.store.list_thread_messages("big")],
            "messages-small": [m.id for m in mem.store.list_thread_messages("small")],
            "images": [i.id for i in mem.list_images(user_id="alice", limit=None)],
        }
    return lists


ROUTES: dict[str, tuple[str, str, dict[str, str]]] = {
    # name: (key, path, fixed query)
    "users-admin": ("admin", "/v1/users", {}),
    "users-alice": ("alice", "/v1/users", {}),
    "agents-admin": ("admin", "/v1/agents", {}),
    "agents-alice": ("alice", "/v1/agents", {}),
    "memories": ("alice", "/v1/memories", {"user_id": "alice"}),
    "memories-a1": ("alice", "/v1/memories", {"user_id": "alice", "agent_id": "a1"}),
    "memories-small": ("alice", "/v1/memories", {"user_id": "alice", "thread_id": "small"}),
    "threads": ("alice", "/v1/threads", {"user_id": "alice"}),
    "threads-a1": ("alice", "/v1/threads", {"user_id": "alice", "agent_id": "a1"}),
    "messages-big": ("alice", "/v1/threads/big/messages", {}),
    "messages-small": ("alice", "/v1/threads/small/messages", {}),
    "images": ("alice", "/v1/images", {"user_id": "alice"}),
}


def windows(n: int) -> list[tuple[int, int]]:
    """(limit, offset) pairs for a list of ``n``: the edges, past the end, the deepest."""
    return [
        (1, 0),
        (1, max(n - 1, 0)),
        (3, 2),
        (4, max(n - 2, 0)),
        (1000, 0),
        (7, n),
        (2, n + 5),
        (5, n // 2),
        (1000, 1),
        (5, MAX_OFFSET),
    ]


BAD = [
    ({"limit": "0"}, "limit"),
    ({"limit": "-1"}, "limit"),
    ({"limit": "1001"}, "limit"),
    ({"limit": "ten"}, "limit"),
    ({"limit": "1.5"}, "limit"),
    ({"offset": "-1"}, "offset"),
    ({"offset": str(MAX_OFFSET + 1)}, "offset"),
    ({"offset": "x"}, "offset"),
]


def dsn_for(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    return backend_connection(request, backend, tmp_path, "paging.db")


def check_pages(get: Callable[..., httpx.Response], lists: dict[str, list[str]]) -> None:
    for name, (who, path, fixed) in ROUTES.items():
        full = lists[name]
        assert len(full) >= 8 or name in ("memories-small", "threads-a1"), (name, len(full))
        for limit, offset in windows(len(full)):
            r = get(who, path, {**fixed, "limit": limit, "offset": offset})
            assert r.status_code == 200, (name, r.text)
            body = r.json()
            want = full[offset : offset + limit]
            assert [i["id"] for i in body["items"]] == want, (name, limit, offset)
            assert body["total"] == len(full), name
            assert (body["limit"], body["offset"]) == (limit, offset)
            more = offset + limit < len(full)
            assert body["next_offset"] == (offset + limit if more else None), (name, body)
        for bad, arg in BAD:
            r = get(who, path, {**fixed, **bad})
            assert r.status_code == 422, (name, bad, r.text)
            assert arg in r.json()["error"]["message"], (name, bad, r.text)


def test_every_list_route_returns_the_right_page(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    dsn = dsn_for(request, backend, tmp_path)
    populate(dsn)
    lists = oracle(dsn)
    keys = {"alice": new_key(dsn, *ALICE_USERS), "admin": new_key(dsn, admin=True)}
    assert "bob-agent" not in lists["agents-alice"] and "dave" not in lists["users-alice"]
    with running_server(dsn, *SERVE) as base, httpx.Client(base_url=base, timeout=60) as c:

        def get(who: str, path: str, params: dict[str, Any]) -> httpx.Response:
            return c.get(path, params=params, headers={"Authorization": f"Bearer {keys[who]}"})

        check_pages(get, lists)
        # Another user's thread, or a list of a user the key may not touch: refused as before.
        assert get("alice", "/v1/threads/bob-t/messages", {"limit": 1}).status_code == 404
        assert get("alice", "/v1/memories", {"user_id": "bob", "limit": 1}).status_code == 403


# ------------------------------------------------------------------ cost, in one process


class RowMeter:
    """Counts the rows the engine hands the store (every read goes through the dialect's
    ``execute`` / ``execute_all``), and keeps the statements that read a page."""

    def __init__(self, dialect: Any) -> None:
        self.dialect = dialect
        self.rows = 0
        self.pages: list[tuple[str, list[Any]]] = []
        self._lock = threading.Lock()
        run, run_all = dialect.execute, dialect.execute_all

        def execute(sql: str, params: Any = ()) -> Any:
            out = run(sql, params)
            self._seen([(sql, params)], [out])
            return out

        def execute_all(statements: Any) -> Any:
            out = run_all(statements)
            self._seen(statements, out)
            return out

        dialect.execute, dialect.execute_all = execute, execute_all
        self._restore = (run, run_all)

    def _seen(self, statements: Any, results: Any) -> None:
        with self._lock:
            for (sql, params), rows in zip(statements, results, strict=True):
                self.rows += len(rows)
                if "LIMIT ? OFFSET ?" in sql:
                    self.pages.append((sql, list(params)))

    def take(self) -> tuple[int, list[tuple[str, list[Any]]]]:
        with self._lock:
            out = (self.rows, self.pages)
            self.rows, self.pages = 0, []
        return out

    def close(self) -> None:
        self.dialect.execute, self.dialect.execute_all = self._restore


@pytest.fixture
def live(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The REST app served by uvicorn on a real socket in this process, so the test can
    count what its store reads."""
    import uvicorn

    from oracleagentmemory.server.app import create_app
    from oracleagentmemory.server.state import ServerSettings

    dsn = dsn_for(request, backend, tmp_path)
    populate(dsn)
    lists = oracle(dsn)
    keys = {"alice": new_key(dsn, *ALICE_USERS), "admin": new_key(dsn, admin=True)}
    app = create_app(ServerSettings(dsn=dsn, embedder="none", search_strategy="keyword"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    store = app.state.oam.client.store
    meter = RowMeter(store._core.dialect)
    try:
        yield {
            "base": f"http://127.0.0.1:{port}",
            "keys": keys,
            "lists": lists,
            "store": store,
            "meter": meter,
            "backend": backend,
        }
    finally:
        meter.close()
        server.should_exit = True
        thread.join(30)


def plan_rows(live: dict[str, Any], sql: str, params: list[Any]) -> int | None:
    """The rows of the records table the engine reads for one page statement: PostgreSQL's
    ``EXPLAIN ANALYZE`` counts; None on SQLite, where the plan must instead walk an index in
    the page's order (no temporary sort of the whole list)."""
    store = live["store"]
    dialect = store._core.dialect
    records = dialect.tables.records.split(".")[-1].strip('"')
    with store._core.lock:
        if live["backend"] == "sqlite":
            plan = " | ".join(
                str(r[-1]) for r in dialect.execute("EXPLAIN QUERY PLAN " + sql, params)
            )
            assert "TEMP B-TREE" not in plan, plan
            assert "USING INDEX" in plan or "USING INTEGER PRIMARY KEY" in plan, plan
            return None
        ((doc,),) = dialect.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
    doc = json.loads(doc) if isinstance(doc, str) else doc
    total = 0

    def walk(node: dict[str, Any]) -> None:
        nonlocal total
        if node.get("Relation Name") == records and "Subplan Name" not in node:
            total += int(node["Actual Rows"]) * int(node.get("Actual Loops", 1))
        for child in node.get("Plans", ()):
            walk(child)

    walk(doc[0]["Plan"])
    return total


def test_a_page_reads_the_page_not_the_list(live: dict[str, Any]) -> None:
    meter, lists = live["meter"], live["lists"]
    with httpx.Client(base_url=live["base"], timeout=60) as c:

        def rows_for(name: str, limit: int, offset: int) -> int:
            who, path, fixed = ROUTES[name]
            meter.take()
            r = c.get(
                path,
                params={**fixed, "limit": limit, "offset": offset},
                headers={"Authorization": f"Bearer {live['keys'][who]}"},
            )
            assert r.status_code == 200, r.text
            n = len(r.json()["items"])
            assert n == len(lists[name][offset : offset + limit])
            rows, pages = meter.take()
            assert len(pages) == 1, (name, pages)  # one LIMIT/OFFSET statement read the page
            assert rows <= n + OVERHEAD, (name, limit, offset, rows)
            engine_rows = plan_rows(live, *pages[0])
            if engine_rows is not None and name.startswith("messages"):
                # the long thread: an index walk that stops after offset + limit rows
                assert n <= engine_rows <= offset + limit + 1, (name, offset, limit, engine_rows)
            return rows

        for name in ROUTES:
            n = len(lists[name])
            one = rows_for(name, 1, 0)
            assert rows_for(name, 1, n - 1) == one, name
            assert rows_for(name, 1, n + 3) == one - 1, name  # past the end: an empty page
            if n >= 5:
                assert rows_for(name, 5, 0) == one + 4, name  # each item one row more
        # The finding itself: limit=1 on a 1,200-message thread reads what it reads on a
        # 10-message thread.
        assert rows_for("messages-big", 1, 0) == rows_for("messages-small", 1, 0)
        assert rows_for("messages-big", 1, BIG // 2) == rows_for("messages-small", 1, 5)


# ------------------------------------------------------------------ MCP and the CLI


def test_mcp_and_python_pages(live: dict[str, Any]) -> None:
    from oracleagentmemory.mcpserver.server import MemoryTools

    store, meter = live["store"], live["meter"]
    client = OracleAgentMemory(store=store)
    try:
        tools = MemoryTools(client, "alice", None)
        full = [m.id for m in client.list_memories(user_id="alice", limit=None)]
        thread_full = [
            m.id for m in client.list_memories(user_id="alice", thread_id="small", limit=None)
        ]
        n = len(full)
        for limit, offset in windows(n):
            meter.take()
            got = [m["id"] for m in tools.list_memories(limit=limit, offset=offset)]
            rows, _ = meter.take()
            end = max(n - offset, 0)
            assert got == full[max(end - limit, 0) : end], (limit, offset)
            assert rows <= len(got) + OVERHEAD, (limit, offset, rows)
        got = [m["id"] for m in tools.list_memories(thread_id="small", limit=3, offset=2)]
        assert got == thread_full[-5:-2]
        for kwargs, arg in (
            ({"limit": 0}, "limit"),
            ({"limit": 1001}, "limit"),
            ({"offset": -1}, "offset"),
            ({"offset": MAX_OFFSET + 1}, "offset"),
        ):
            with pytest.raises(ValueError, match=arg):
                tools.list_memories(**kwargs)
        with pytest.raises(TypeError, match="limit"):
            tools.list_memories(limit="3")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="thread"):
            tools.list_memories(thread_id="bob-t", limit=1)  # another user's thread
        # The store's paged read, as the routes use it, for each family it serves.
        ov = store.overview
        for name, types, scope in (
            ("threads", ["thread"], {"user_id": "alice"}),
            ("images", ["image"], {"user_id": "alice"}),
            ("users-admin", ["user_profile"], {}),
            ("agents-admin", ["agent_profile"], {}),
        ):
            page = ov.records(types, limit=3, offset=1, newest_first=True, **scope)
            assert [r.id for r in page.items] == lists_rev(live, name)[1:4], name
        for bad, exc in (
            ({"record_types": "thread"}, TypeError),
            ({"record_types": ["thread", "message"]}, ValueError),
            ({"record_types": ["thread"], "ids": "alice"}, TypeError),
        ):
            with pytest.raises(exc):
                ov.records(limit=1, **bad)
        assert ov.records(["user_profile"], ids=[], limit=1).total == 0
    finally:
        client.close()


def lists_rev(live: dict[str, Any], name: str) -> list[str]:
    return list(reversed(live["lists"][name]))


async def test_mcp_tool_pages_over_stdio(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    dsn = dsn_for(request, backend, tmp_path)
    await asyncio.to_thread(populate, dsn)
    full = (await asyncio.to_thread(oracle, dsn))["memories"]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "oracleagentmemory.cli", "mcp", "--dsn", dsn, "--user-id", "alice", *SERVE],
        env={**os.environ},
    )
    async with Client(params) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        props = tools["list_memories"].input_schema["properties"]
        assert props["offset"]["default"] == 0 and props["limit"]["maximum"] == 1000
        n = len(full)
        for limit, offset in windows(n):
            res = await mcp.call_tool("list_memories", {"limit": limit, "offset": offset})
            assert not res.is_error, res.content
            sc = res.structured_content
            got = [
                m["id"]
                for m in (
                    sc.get("result", sc) if sc is not None else json.loads(res.content[0].text)
                )
            ]
            end = max(n - offset, 0)
            assert got == full[max(end - limit, 0) : end], (limit, offset)
        for bad in ({"limit": 0}, {"offset": -1}, {"offset": MAX_OFFSET + 1}):
            res = await mcp.call_tool("list_memories", bad)
            assert res.is_error and next(iter(bad)) in str(res.content), bad


def test_cli_memories_list_pages(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    dsn = dsn_for(request, backend, tmp_path)
    populate(dsn)
    full = oracle(dsn)["memories"]
    n = len(full)
    env = {"OAM_DSN": dsn}
    for limit, offset in ((1, 1), (4, 3), (5, n - 2), (3, n), (1000, 1)):
        out = oam(
            "memories",
            "list",
            "--user-id",
            "alice",
            "--limit",
            str(limit),
            "--offset",
            str(offset),
            "--json",
            "--embedder",
            "none",
            "--search-strategy",
            "keyword",
            env=env,
        ).stdout
        got = [json.loads(line)["id"] for line in out.splitlines() if line.strip()]
        end = max(n - offset, 0)
        assert got == full[max(end - limit, 0) : end], (limit, offset)
    for args in (
        ("--offset", "-1"),
        ("--offset", "2", "--limit", "0"),
        ("--offset", "2", "--limit", "1001"),
    ):
        proc = oam(
            "memories",
            "list",
            "--user-id",
            "alice",
            *args,
            "--embedder",
            "none",
            "--search-strategy",
            "keyword",
            env=env,
            check=False,
        )
        assert proc.returncode != 0 and "--offset" in proc.stderr, (args, proc.stderr)


def test_a_thread_page_shows_what_a_read_through_the_thread_shows(make_store: Any) -> None:
    """The page and its total hold the rows ``list_thread_messages`` gives: the owner's and
    user-less ones, never another user's left in the thread by an older store."""
    from .test_thread_ownership import MSG, _make_legacy

    store = _make_legacy(make_store)
    store.add(["no one's note"], thread_ids="shared", user_ids=None, record_ids="n1", **MSG)
    store.add(
        [f"alice {i}" for i in range(2, 9)],
        thread_ids="shared",
        user_ids="alice",
        record_ids=[f"a{i}" for i in range(2, 9)],
        **MSG,
    )
    ov = store.overview  # type: ignore[attr-defined]
    for thread in ("shared", "loose", "plain", "nobody"):
        full = [m.id for m in store.list_thread_messages(thread)]
        for limit, offset in windows(len(full)):
            page = ov.thread_messages(thread, limit=limit, offset=offset)
            assert [m.id for m in page.items] == full[offset : offset + limit], (thread, offset)
            assert page.total == len(full)
        for newest in (False, True):
            order = full[::-1] if newest else full
            for i, m in enumerate(order):
                seq = store.get("message", m).seq_no  # type: ignore[union-attr]
                assert ov.message_position(thread, seq, newest_first=newest) == i
    assert "b1" not in [m.id for m in ov.thread_messages("shared", limit=1000).items]
    assert "n1" in [m.id for m in ov.thread_messages("shared", limit=1000).items]


def _ui_login(c: httpx.Client, key: str) -> None:
    import re

    page = c.get("/ui")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token, page.text[:200]
    r = c.post(
        "/ui/login",
        data={"key": key, "csrf": token.group(1)},
        headers={"Origin": str(c.base_url).rstrip("/")},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text


def test_ui_pages_read_the_page_not_the_list(live: dict[str, Any]) -> None:
    """The ``/ui`` lists (users, a user's memories and threads, a thread's messages): the
    rows a page reads do not grow with the list, only with the page."""
    meter = live["meter"]
    pages = {
        "admin": [("/ui", len(live["lists"]["users-admin"]))],
        "alice": [
            ("/ui/users/alice", len(live["lists"]["memories"])),
            ("/ui/users/alice/threads", len(live["lists"]["threads"])),
            ("/ui/threads/big", BIG),
        ],
    }
    for who, paths in pages.items():
        with httpx.Client(base_url=live["base"], timeout=60) as c:
            _ui_login(c, live["keys"][who])

            def rows_for(path: str, per_page: int, page: int) -> int:
                meter.take()
                r = c.get(path, params={"per_page": per_page, "page": page})
                assert r.status_code == 200, (path, r.text[:300])
                return meter.take()[0]

            for path, n in paths:
                first, last = rows_for(path, 10, 1), rows_for(path, 10, n // 10)
                if path.startswith("/ui/threads/"):
                    # The thread page also shows the thread's context card, whose search
                    # costs what a search costs; its list is paged: the first and last pages
                    # read alike, and each more item on a page reads one row more.
                    assert first == last, (path, first, last)
                    assert rows_for(path, 25, 1) == first + 15, path
                else:
                    # Beside each item, a page reads a few grouped counts about the items it
                    # shows (a user's families, a thread's messages), never the whole list.
                    for rows in (first, last):
                        assert rows <= 10 * 3 + 40, (path, first, last)

"""The ``/ui`` pages through FastAPI's TestClient, on every engine: what each page lists, its
filters and paging and their bounds, the key rule (403 for another user's page, 404 for
another user's records), forms (create, edit, delete with its confirmation step) with their
CSRF and origin checks, and hostile text escaped everywhere. ``test_ui_browser`` drives the
same pages in Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from fastapi.testclient import TestClient

from oracleagentmemory.admin.apikeys import ApiKeyStore
from oracleagentmemory.admin.connect import Target
from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.server.app import create_app
from oracleagentmemory.server.state import ServerSettings

from ._ui_store import EXTRACTED, HOSTILE, LONG_THREAD, fill
from .conftest import backend_connection

BASE = "http://testserver"


class _Tables(HTMLParser):
    """Cell texts of every table by id, and every link (href, text, id)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.links: list[tuple[str, str, str]] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._link: list[Any] | None = None
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "table":
            self._table = a.get("id") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "a":
            self._link = [a.get("href") or "", [], a.get("id") or ""]

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "a" and self._link is not None:
            self.links.append((self._link[0], "".join(self._link[1]).strip(), self._link[2]))
            self._link = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._link is not None:
            self._link[1].append(data)


def parse(html: str) -> _Tables:
    p = _Tables()
    p.feed(html)
    return p


def body_rows(html: str, table_id: str) -> list[list[str]]:
    """The rows of a table without its header row."""
    return parse(html).tables[table_id][1:]


def csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)


@dataclass
class Site:
    client: TestClient
    keys: dict[str, str]
    ids: dict[str, str]
    dsn: str

    def login(self, who: str) -> TestClient:
        self.client.cookies.clear()  # a fresh browser
        page = self.client.get("/ui")
        r = self.client.post(
            "/ui/login",
            data={"key": self.keys[who], "csrf": csrf(page.text)},
            follow_redirects=False,
        )
        assert r.status_code == 303, r.text
        return self.client


@pytest.fixture
def site(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Site]:
    dsn = backend_connection(request, backend, tmp_path, "ui.db")
    ids = fill(dsn, None, search_strategy="keyword")
    store = ApiKeyStore(Target(dsn))
    keys = {u: store.create([u])[0] for u in ("alice", "carol")}
    keys["admin"] = store.create([], admin=True)[0]
    keys["alice+newbie"] = store.create(["alice", "newbie"])[0]
    store.close()
    app = create_app(ServerSettings(dsn=dsn, embedder="none", search_strategy="keyword"))
    with TestClient(app, base_url=BASE, headers={"Origin": BASE}) as client:
        yield Site(client, keys, ids, dsn)


# ---------------------------------------------------------------------------- users


def test_users_come_from_the_data_with_counts_and_pages(site: Site) -> None:
    c = site.login("admin")
    page = c.get("/ui")
    rows = body_rows(page.text, "users")
    assert [r[0] for r in rows] == ["alice", "bob", "carol", "dave"]  # 3 of 4 have no profile
    by_user = {r[0]: r[1:] for r in rows}
    assert by_user["alice"] == ["profile", "2", str(LONG_THREAD + 3), "5", "0"]
    assert by_user["carol"] == ["", "0", "0", "1", "0"]
    assert "<b>4</b><span>users</span>" in page.text  # the stats header
    assert re.search(rf"<b>{LONG_THREAD + 4}</b><span>messages</span>", page.text)
    second = c.get("/ui", params={"per_page": 10})
    assert len(body_rows(second.text, "users")) == 4
    assert c.get("/ui", params={"page": 2}).status_code == 404
    # A key bound to users lists those users only, one without records too.
    c = site.login("alice+newbie")
    rows = body_rows(c.get("/ui").text, "users")
    assert [r[0] for r in rows] == ["alice", "newbie"] and rows[1][1:] == ["", "0", "0", "0", "0"]


def test_another_users_pages_are_403_and_records_404(site: Site) -> None:
    c = site.login("alice")
    for path in (
        "/ui/users/bob",
        "/ui/users/bob/threads",
        "/ui/users/bob/search?q=plan",
        "/ui/users/bob/memories/new",
    ):
        r = c.get(path)
        assert r.status_code == 403, path
        assert "may not access user &#x27;bob&#x27;" in r.text, path
    page = c.get("/ui/users/alice/memories/new").text
    r = c.post("/ui/users/bob/memories", data={"csrf": csrf(page), "content": "planted"})
    assert r.status_code == 403
    bob_memory = site.ids["bob_memory"]
    for path in (
        "/ui/threads/bob-thread",
        f"/ui/memories/{bob_memory}",
        f"/ui/memories/{bob_memory}/delete",
        "/ui/threads/no-such-thread",
    ):
        r = c.get(path)
        assert r.status_code == 404, path
    r = c.post(f"/ui/memories/{bob_memory}/delete", data={"csrf": csrf(page)})
    assert r.status_code == 404
    with OracleAgentMemory(connection=site.dsn, embedder=None, search_strategy="keyword") as mem:
        assert [m.content for m in mem.list_memories(user_id="bob")] == [
            "Bob hides the key under the mat."
        ]


def test_without_a_session_every_page_is_the_login_page(site: Site) -> None:
    for path in (
        "/ui",
        "/ui/users/alice",
        "/ui/threads/trip-tokyo",
        f"/ui/memories/{site.ids['fact']}",
    ):
        r = site.client.get(path)
        assert r.status_code == 200 and 'id="key"' in r.text, path
    r = site.client.post(f"/ui/memories/{site.ids['fact']}/delete", data={"csrf": "x"})
    assert 'id="key"' in r.text
    site.client.cookies.set("oam_session", "oams_" + "x" * 43, path="/ui")
    assert 'id="key"' in site.client.get("/ui/users/alice").text


# ---------------------------------------------------------------------------- memories tab


def test_memories_are_filtered_and_paged(site: Site) -> None:
    c = site.login("alice")

    def contents(**params: Any) -> list[str]:
        r = c.get("/ui/users/alice", params=params)
        assert r.status_code == 200, r.text
        return [row[2] for row in body_rows(r.text, "memories")]

    everything = contents()
    assert len(everything) == 5 and everything[-1] == EXTRACTED  # newest first
    assert contents(order="oldest")[0] == EXTRACTED
    assert set(contents(type="fact")) == {EXTRACTED, HOSTILE}
    assert set(contents(type=["fact", "preference"])) == {
        EXTRACTED,
        HOSTILE,
        "Alice prefers window seats.",
    }
    assert contents(status="invalid") == ["Alice lived in Lisbon."]
    assert contents(agent_id="planner") == ["Answer Alice in short sentences."]
    assert set(contents(thread_id="trip-tokyo")) == {EXTRACTED, "Alice prefers window seats."}
    assert contents(since="2024-02-01", until="2024-03-31") == [  # the newest added first
        HOSTILE,
        "Answer Alice in short sentences.",
    ]
    page = c.get("/ui/users/alice", params={"per_page": 10, "type": ["fact", "memory"]}).text
    assert "1–3 of 3 memories" in page
    r = c.get(
        "/ui/users/alice",
        params={
            "type": ["fact", "preference", "guideline", "memory"],
            "per_page": 10,
            "order": "oldest",
        },
    )
    assert "1–5 of 5 memories" in r.text
    # The agent filter offers the user's agents; the row of a memory links its thread.
    assert '<option value="planner">' in page.replace(" selected", "")
    links = parse(c.get("/ui/users/alice", params={"thread_id": "trip-tokyo"}).text).links
    assert ("/ui/threads/trip-tokyo", "trip-tokyo", "") in links


def test_page_links_keep_the_filters(site: Site) -> None:
    c = site.login("alice")
    with OracleAgentMemory(connection=site.dsn, embedder=None, search_strategy="keyword") as mem:
        for i in range(23):
            mem.add_memory(f"note {i}", user_id="alice", memory_type="fact")
    r = c.get("/ui/users/alice", params={"type": "fact", "per_page": 10})
    assert "1–10 of 25 memories" in r.text
    hrefs = {text: href for href, text, _ in parse(r.text).links if "page=" in href}
    assert hrefs["3"] == "/ui/users/alice?type=fact&per_page=10&page=3"
    third = c.get(hrefs["3"])
    assert "21–25 of 25 memories" in third.text and len(body_rows(third.text, "memories")) == 5
    assert (
        c.get("/ui/users/alice", params={"type": "fact", "per_page": 10, "page": 4}).status_code
        == 404
    )


BAD_PARAMETERS = [  # (query, status, the parameter the page names)
    ({"page": "-1"}, 400, "page"),
    ({"page": "0"}, 400, "page"),
    ({"page": "two"}, 400, "page"),
    ({"page": "99999999999999999999"}, 400, "page"),
    ({"page": "2"}, 404, "page"),
    ({"per_page": "7"}, 400, "per_page"),
    ({"per_page": "100000"}, 400, "per_page"),
    ({"type": "thread"}, 400, "type"),
    ({"type": "<b>x</b>"}, 400, "type"),
    ({"status": "deleted"}, 400, "status"),
    ({"since": "yesterday"}, 400, "since"),
    ({"until": "2024-02-30"}, 400, "until"),
    ({"order": "random"}, 400, "order"),
    ({"agent_id": "a" * 300}, 400, "agent_id"),
    ({"thread_id": "bad\x00id"}, 400, "thread_id"),
]


def test_bad_parameters_are_a_4xx_page_naming_them(site: Site) -> None:
    c = site.login("alice")
    for params, status, named in BAD_PARAMETERS:
        r = c.get("/ui/users/alice", params=params)
        assert r.status_code == status, (params, r.text)
        assert r.headers["content-type"].startswith("text/html"), params
        message = re.search(r'<p class="err" id="error">([^<]*)</p>', r.text)
        assert message and message.group(1).startswith(named + ":"), (params, r.text)
        assert "<b>x</b>" not in r.text


# ---------------------------------------------------------------------------- threads


def test_threads_tab_lists_threads_with_message_counts(site: Site) -> None:
    c = site.login("alice")
    rows = body_rows(c.get("/ui/users/alice/threads").text, "threads")
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("alice-long", "planner", str(LONG_THREAD)),
        ("trip-tokyo", "concierge", "3"),
    ]
    oldest = body_rows(c.get("/ui/users/alice/threads", params={"order": "oldest"}).text, "threads")
    assert oldest[0][0] == "trip-tokyo"
    assert c.get("/ui/users/alice/threads", params={"page": "3"}).status_code == 404


def test_a_threads_messages_are_paged(site: Site) -> None:
    c = site.login("alice")
    first = c.get("/ui/threads/alice-long")
    rows = body_rows(first.text, "messages")
    assert len(rows) == 50 and rows[0][0] == "1" and rows[0][2] == "long message 1"
    assert f"1–50 of {LONG_THREAD} messages" in first.text
    hrefs = {text: href for href, text, _ in parse(first.text).links if "page=" in href}
    assert hrefs["next ›"] == "/ui/threads/alice-long?page=2" and "3" in hrefs
    last = body_rows(c.get("/ui/threads/alice-long", params={"page": 3}).text, "messages")
    assert [r[0] for r in last] == [str(n) for n in range(101, LONG_THREAD + 1)]
    newest = c.get("/ui/threads/alice-long", params={"order": "newest", "per_page": 10})
    assert body_rows(newest.text, "messages")[0][2] == f"long message {LONG_THREAD}"
    assert "/ui/threads/alice-long?order=newest&amp;per_page=10&amp;page=2" in newest.text
    # at=SEQ opens the page holding that message and marks its row.
    at = c.get("/ui/threads/alice-long", params={"at": 75})
    assert "51–100 of" in at.text and "<tr id='m-75' class=at>" in at.text
    for bad in ({"page": "4"}, {"at": "-3"}, {"per_page": "3"}):
        assert c.get("/ui/threads/alice-long", params=bad).status_code in (400, 404), bad


def test_the_context_card_is_rendered_not_raw(site: Site) -> None:
    c = site.login("alice")
    page = c.get("/ui/threads/trip-tokyo").text
    assert "&lt;context_card&gt;" not in page and "<context_card>" not in page
    card = page[page.index('id="card"') :]
    assert 'id="card-summary"' in card and "allergic to peanuts" in card
    assert f'href="/ui/memories/{site.ids["fact"]}"' in card  # a relevant record, linked


# ---------------------------------------------------------------------------- a memory


def test_memory_page_shows_provenance_thread_and_links(site: Site) -> None:
    c = site.login("alice")
    page = c.get(f"/ui/memories/{site.ids['fact']}").text
    sources = body_rows(page, "sources")
    assert [(r[0], r[1], r[2], r[3]) for r in sources] == [
        ("trip-tokyo", "#3", "user", "I'm allergic to peanuts.")
    ]
    links = parse(page).links
    assert ("/ui/threads/trip-tokyo?at=3#m-3", "#3", "") in links
    assert ("/ui/threads/trip-tokyo", "trip-tokyo", "") in links
    (link_row,) = body_rows(page, "links")
    assert link_row[0] == "is_supported_by" and link_row[4] == "Alice prefers window seats."
    assert (f"/ui/memories/{site.ids['pref']}", site.ids["pref"], "") in links
    direct = c.get(f"/ui/memories/{site.ids['pref']}").text
    assert "sources-none" in parse(direct).ids and body_rows(direct, "links")[0][0] == "supports"
    assert "<dt>expires</dt><dd>never</dd>" not in direct  # it expires in 180 days


def test_search_hits_link_to_their_memories_and_threads(site: Site) -> None:
    c = site.login("alice")
    r = c.get("/ui/users/alice/search", params={"q": "peanuts", "strategy": "keyword"})
    assert r.status_code == 200, r.text
    rows = body_rows(r.text, "results")
    kinds = {row[1]: row for row in rows}
    assert {"fact", "message"} <= set(kinds)
    assert all(0 <= float(row[0]) <= 2 for row in rows)
    links = {href for href, _, _ in parse(r.text).links}
    assert f"/ui/memories/{site.ids['fact']}" in links
    assert "/ui/threads/trip-tokyo?at=3#m-3" in links  # the message, inside its thread
    only = body_rows(
        c.get(
            "/ui/users/alice/search",
            params={"q": "peanuts", "strategy": "keyword", "kind": "messages"},
        ).text,
        "results",
    )
    assert {row[1] for row in only} == {"message"}
    assert (
        c.get("/ui/users/alice/search", params={"q": "x", "kind": "all-of-it"}).status_code == 400
    )
    # The search form of earlier versions, on the user page, still works.
    old = c.get("/ui/users/alice", params={"q": "peanuts", "strategy": "keyword"})
    assert old.status_code == 200 and 'id="results"' in old.text


# ---------------------------------------------------------------------------- forms


def test_create_a_memory(site: Site) -> None:
    c = site.login("alice")
    form = c.get("/ui/users/alice/memories/new").text
    assert '<option value="trip-tokyo">' in form and '<option value="concierge">' in form
    data = {
        "csrf": csrf(form),
        "content": "Alice's passport expires in 2031.",
        "memory_type": "fact",
        "agent_id": "concierge",
        "thread_id": "trip-tokyo",
        "ttl_days": "30",
        "metadata": '{"source": "ui"}',
    }
    r = c.post("/ui/users/alice/memories", data=data, follow_redirects=False)
    assert r.status_code == 303, r.text
    page = c.get(r.headers["location"])
    assert "Created memory" in page.text and "passport expires in 2031" in page.text
    with OracleAgentMemory(connection=site.dsn, embedder=None, search_strategy="keyword") as mem:
        (made,) = [m for m in mem.list_memories(user_id="alice") if "passport" in m.content]
        assert (made.record_type, made.agent_id, made.thread_id, made.metadata) == (
            "fact",
            "concierge",
            "trip-tokyo",
            {"source": "ui"},
        )
    minimal = c.post(
        "/ui/users/alice/memories",
        data={"csrf": csrf(form), "content": "Tea."},
        follow_redirects=False,
    )
    assert minimal.status_code == 303
    # Naming a thread without an agent takes the thread's agent, as over REST.
    scoped = c.post(
        "/ui/users/alice/memories",
        data={
            "csrf": csrf(form),
            "content": "Alice wants a quiet room.",
            "thread_id": "trip-tokyo",
        },
        follow_redirects=False,
    )
    assert scoped.status_code == 303, scoped.text
    other = c.post(
        "/ui/users/alice/memories",
        data={"csrf": csrf(form), "content": "x", "thread_id": "trip-tokyo", "agent_id": "planner"},
    )
    assert other.status_code == 409 and "concierge" in other.text
    with OracleAgentMemory(connection=site.dsn, embedder=None, search_strategy="keyword") as mem:
        (quiet,) = [m for m in mem.list_memories(user_id="alice") if "quiet" in m.content]
        assert (quiet.agent_id, quiet.thread_id) == ("concierge", "trip-tokyo")


BAD_FORMS = [  # (the field changed, status, words of the reason shown)
    ({"content": "   "}, 400, "content:"),
    ({"memory_type": "thread"}, 400, "memory_type:"),
    ({"ttl_days": "0"}, 400, "ttl_days:"),
    ({"ttl_days": "soon"}, 400, "ttl_days:"),
    ({"metadata": "[1, 2]"}, 400, "metadata must be a JSON object"),
    ({"metadata": "{" * 3000}, 400, "metadata must be a JSON object"),
    ({"thread_id": "bob-thread"}, 409, "belongs to another user"),
    ({"agent_id": "a" * 300}, 400, "agent_id:"),
]


def test_create_refuses_bad_values_and_keeps_the_form(site: Site) -> None:
    c = site.login("alice")
    token = csrf(c.get("/ui/users/alice/memories/new").text)
    for change, status, words in BAD_FORMS:
        data = {"csrf": token, "content": "<b>kept</b> text", "memory_type": "fact", **change}
        r = c.post("/ui/users/alice/memories", data=data)
        assert r.status_code == status, (change, r.text)
        assert words in r.text and 'id="create"' in r.text, change
        if "content" not in change:  # the values given stay in the form, escaped
            assert "&lt;b&gt;kept&lt;/b&gt; text</textarea>" in r.text, change
    with OracleAgentMemory(connection=site.dsn, embedder=None, search_strategy="keyword") as mem:
        assert not [m for m in mem.list_memories(user_id="alice") if "kept" in m.content]


def test_forms_need_this_origin_and_their_token(site: Site) -> None:
    c = site.login("alice")
    token = csrf(c.get("/ui/users/alice/memories/new").text)
    fact = site.ids["fact"]
    posts = [
        (f"/ui/memories/{fact}/delete", {}),
        (f"/ui/memories/{fact}/edit", {"content": "hacked"}),
        ("/ui/users/alice/memories", {"content": "planted"}),
    ]
    for path, extra in posts:
        for headers, form in (
            ({"Origin": "https://evil.example"}, {"csrf": token}),
            ({}, {"csrf": "0" * 64}),
            ({}, {}),
        ):
            r = c.post(path, data={**form, **extra}, headers=headers)
            assert r.status_code == 403, (path, headers, form)
    with OracleAgentMemory(connection=site.dsn, embedder=None, search_strategy="keyword") as mem:
        contents = [m.content for m in mem.list_memories(user_id="alice")]
    assert EXTRACTED in contents and "planted" not in contents and "hacked" not in contents


def test_delete_asks_first_and_cancel_keeps_the_memory(site: Site) -> None:
    c = site.login("alice")
    pref = site.ids["pref"]
    page = c.get(f"/ui/memories/{pref}").text
    # The memory page has no form that deletes: only a link to the confirmation step.
    assert f'action="/ui/memories/{pref}/delete"' not in page
    assert (f"/ui/memories/{pref}/delete", "delete…", "delete-link") in parse(page).links
    confirm = c.get(f"/ui/memories/{pref}/delete").text
    assert "Alice prefers window seats." in confirm and "1 link(s)" in confirm
    assert f'action="/ui/memories/{pref}/delete"' in confirm
    assert (f"/ui/memories/{pref}", "cancel", "cancel") in parse(confirm).links
    assert c.get(f"/ui/memories/{pref}").status_code == 200  # cancel: nothing happened
    r = c.post(f"/ui/memories/{pref}/delete", data={"csrf": csrf(confirm)}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/users/alice?")
    after = c.get(r.headers["location"]).text
    assert f"Deleted memory {pref}." in after
    assert "Alice prefers window seats." not in after
    assert c.get(f"/ui/memories/{pref}").status_code == 404


def test_edit_saves_and_reports_bad_metadata(site: Site) -> None:
    c = site.login("alice")
    mid = site.ids["guideline"]
    token = csrf(c.get(f"/ui/memories/{mid}").text)
    r = c.post(
        f"/ui/memories/{mid}/edit",
        data={"csrf": token, "content": "Be brief.", "status": "invalid", "metadata": '{"a": 1}'},
    )
    assert r.status_code == 200 and "Saved memory" in r.text and "Be brief." in r.text
    bad = c.post(
        f"/ui/memories/{mid}/edit", data={"csrf": token, "content": "x", "metadata": "not json"}
    )
    assert bad.status_code == 400 and "metadata must be a JSON object" in bad.text
    worse = c.post(
        f"/ui/memories/{mid}/edit", data={"csrf": token, "content": "x", "status": "gone"}
    )
    assert worse.status_code == 400


# ---------------------------------------------------------------------------- escaping


def test_hostile_text_and_ids_are_escaped_everywhere(site: Site) -> None:
    c = site.login("alice")
    odd_id = '"><b>id</b>'
    with OracleAgentMemory(connection=site.dsn, embedder=None, search_strategy="keyword") as mem:
        mem.add_memory("An odd id.", user_id="alice", memory_id=odd_id)
        t = mem.create_thread(thread_id="<i>t</i>", user_id="alice", agent_id="<u>a</u>")
        t.add_messages([{"role": "user", "content": HOSTILE}])
    pages = [
        c.get("/ui/users/alice").text,
        c.get("/ui/users/alice/threads").text,
        c.get(f"/ui/memories/{site.ids['hostile']}").text,
        c.get(f"/ui/memories/{site.ids['hostile']}/delete").text,
        c.get("/ui/users/alice/search", params={"q": "quotes alert", "strategy": "keyword"}).text,
        c.get("/ui/threads/%3Ci%3Et%3C%2Fi%3E").text,  # its card holds the hostile message
        c.get("/ui/users/alice", params={"thread_id": '"><script>x</script>'}).text,
    ]
    for html in pages:
        assert "<script" not in html and "<img" not in html and "<b>id" not in html
        assert "<i>t</i>" not in html and "<u>a</u>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in pages[2]
    assert "&lt;script&gt;" in pages[4] and "&lt;script&gt;" in pages[5]
    assert 'href="/ui/memories/%22%3E%3Cb%3Eid%3C%2Fb%3E"' in pages[0]
    assert c.get("/ui/memories/%22%3E%3Cb%3Eid%3C%2Fb%3E").status_code == 200

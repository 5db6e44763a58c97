"""The /ui memory browser driven by headless Chromium (Debian's ``chromium``; install it with
``make ui-browser``) against ``oam serve`` over a real socket: every page and every action,
with a screenshot of each screen. Screenshots go to a temporary folder, or to the folder named
by ``OAM_UI_SCREENSHOTS`` (``make ui-screenshots`` refreshes ``docs/images/ui/``, which
``docs/guides/memory-browser.md`` shows). ``test_ui_pages`` checks the same pages' logic
without a browser, on every engine."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.core import OracleAgentMemory

from ._cdp import Browser, find_chromium
from ._servers import new_key, running_server
from ._ui_store import EXTRACTED, HOSTILE, LONG_THREAD, MORE, fill, fill_more

CHROMIUM = find_chromium()
LAPTOP = (1440, 900)
WIDE = (1920, 1080)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="headless Chromium is not installed (Debian package 'chromium'; `make ui-browser` "
        "installs it)",
    ),
]


@dataclass
class UI:
    browser: Browser
    base: str
    key: str
    admin: str
    ids: dict[str, str]
    db: str
    shots: Path

    def go(self, path: str) -> None:
        self.browser.goto(self.base + path)

    def js(self, expression: str) -> Any:
        return self.browser.js(expression)

    def click(self, selector: str) -> None:
        """Click what ``selector`` names and wait for the page it opens."""
        self.browser.submit(f"document.querySelector({json.dumps(selector)}).click()")

    def text(self, selector: str) -> str:
        return str(self.js(f"document.querySelector({json.dumps(selector)}).innerText"))

    def exists(self, selector: str) -> bool:
        return bool(self.js(f"document.querySelector({json.dumps(selector)}) !== null"))

    def column(self, table: str, index: int) -> list[str]:
        """The texts of one column of a table's body."""
        return list(
            self.js(
                f"[...document.querySelectorAll({json.dumps(f'#{table} tbody tr')})]"
                f".map(r => r.cells[{index}].innerText)"
            )
        )

    def title(self) -> str:
        return str(self.js("document.title"))

    def size(self, width_height: tuple[int, int]) -> None:
        width, height = width_height
        self.browser.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def shot(self, name: str) -> None:
        self.browser.screenshot(self.shots / f"{name}.png")

    def login(self, key: str | None = None) -> None:
        """Be logged in with ``key`` (Alice's by default)."""
        key = key or self.key
        self.go("/ui")
        if not self.exists("#key"):
            who = "admin key" if key == self.admin else "key for alice"
            if who in self.text("header"):
                return
            self.click("#logout")
        self.browser.submit(
            f"document.querySelector('#key').value = {json.dumps(key)};"
            "document.querySelector('#login').click()"
        )


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory, local_embedder: Any) -> Iterator[UI]:
    folder = tmp_path_factory.mktemp("ui-browser")
    db = str(folder / "ui.db")
    ids = fill(db, local_embedder, hostile=False)
    fill_more(db, local_embedder)
    key, admin = new_key(db, "alice"), new_key(db, admin=True)
    shots = Path(os.environ.get("OAM_UI_SCREENSHOTS") or folder / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    assert CHROMIUM is not None
    with running_server(db) as base:
        browser = Browser(CHROMIUM)
        try:
            ui = UI(browser, base, key, admin, ids, db, shots)
            ui.size(LAPTOP)
            yield ui
        finally:
            browser.close()


def test_login_and_the_users_list_with_counts(ui: UI) -> None:
    ui.go("/ui")
    assert ui.exists("#key") and "Log in" in ui.title()
    ui.browser.submit(
        "document.querySelector('#key').value = 'oam_not_a_key';"
        "document.querySelector('#login').click()"
    )
    assert "invalid or revoked" in ui.text("#error")
    ui.shot("login")
    ui.login(ui.admin)  # an admin key lists every user that owns records, with counts
    assert ui.column("users", 0) == ["alice", "bob", "carol", "dave"]
    assert ui.column("users", 1) == ["profile", "", "", "profile"]
    assert ui.column("users", 4) == [str(4 + len(MORE)), "1", "1", "0"]
    assert ui.text("#stats").split()[:2] == ["4", "users"]
    ui.shot("users")
    ui.login()
    assert ui.column("users", 0) == ["alice"]  # the key's user only, though bob has data
    assert ui.column("users", 3) == [str(LONG_THREAD + 3)]  # messages
    assert ui.column("users", 4) == [str(4 + len(MORE))]  # memories
    assert "key for alice" in ui.text("header")
    ui.go("/ui/users/bob")  # another user's page is refused, as by the API
    assert "403" in ui.title() and "may not access user 'bob'" in ui.text("#error")


def test_user_page_filters_and_pages(ui: UI) -> None:
    ui.login()
    ui.click("#users tbody a")
    assert ui.title().startswith("User alice")
    assert "Alice, a frequent traveller." in ui.text("#profile")
    assert ui.text("#stats").split()[:2] == ["2", "threads"]
    assert ui.text("#pager").startswith(f"1–{4 + len(MORE)} of {4 + len(MORE)} memories")
    # The layout uses the window: the table spans nearly all of it.
    assert ui.js("document.querySelector('#memories').getBoundingClientRect().width") > 1300
    ui.shot("user-memories")
    ui.browser.submit(
        "document.querySelector('#filters input[value=fact]').click();"
        "document.querySelector('#filters input[value=preference]').click();"
        "document.querySelector('#f-per-page').value = '10';"
        "document.querySelector('#apply').click()"
    )
    total = sum(1 for k, _, _, _ in MORE if k in ("fact", "preference")) + 2
    assert total > 10 and ui.text("#pager").startswith(f"1–10 of {total} memories")
    assert set(ui.column("memories", 1)) == {"fact", "preference"}
    ui.shot("user-filtered")
    ui.click("#pager a[rel=next]")
    assert ui.text("#pager").startswith(f"11–{total} of {total}")
    assert ui.js("document.querySelector('#filters input[value=fact]').checked")  # kept
    ui.browser.submit(
        "document.querySelector('#f-agent').value = 'concierge';"
        "document.querySelector('#f-since').value = '2024-06-01';"
        "document.querySelector('#f-until').value = '2024-06-30';"
        "document.querySelector('#apply').click()"
    )
    assert set(ui.column("memories", 2)) == {
        c
        for k, a, d, c in MORE
        if k in ("fact", "preference") and a == "concierge" and d.startswith("2024-06")
    }
    assert set(ui.column("memories", 4)) == {"concierge"}
    ui.click("#reset")
    ui.click("#tab-threads")
    assert ui.column("threads", 0) == ["alice-long", "trip-tokyo"]
    assert ui.column("threads", 2) == [str(LONG_THREAD), "3"]
    ui.shot("user-threads")


def test_thread_paging_and_context_card(ui: UI) -> None:
    ui.login()
    ui.go("/ui/users/alice/threads")
    ui.click("#threads tbody a")  # alice-long, the newest thread
    assert ui.text("#pager-top").startswith(f"1–50 of {LONG_THREAD} messages")
    assert ui.column("messages", 0)[:2] == ["1", "2"]
    ui.click("#pager-top a[rel=next]")
    assert ui.column("messages", 0)[0] == "51"
    ui.click("#message-order")
    assert ui.column("messages", 2)[0] == f"long message {LONG_THREAD}"
    ui.go("/ui/threads/alice-long?at=75#m-75")
    assert ui.text("#pager-top").startswith("51–100")
    assert ui.js("document.querySelector('#m-75').matches(':target')")
    ui.size(WIDE)
    try:
        ui.go("/ui/threads/alice-long?at=75")
        # Wide screens put the messages and the card side by side.
        assert ui.js(
            "document.querySelector('#card').getBoundingClientRect().left > "
            "document.querySelector('#messages').getBoundingClientRect().right"
        )
        ui.shot("thread-paged-wide")
    finally:
        ui.size(LAPTOP)
    ui.go("/ui/threads/trip-tokyo")
    assert "Tokyo" in ui.text("#messages")
    card = ui.text("#card")
    assert "Summary" in card and "Relevant information" in card and EXTRACTED in card
    assert "<context_card>" not in card and not ui.exists("#card context_card")
    ui.shot("thread")
    ui.click(f"#card a[href='/ui/memories/{ui.ids['fact']}']")  # a card record, linked
    assert ui.title().startswith("Memory ")


def test_memory_page_provenance_links_and_edit(ui: UI) -> None:
    ui.login()
    ui.go("/ui/users/alice?thread_id=trip-tokyo&type=fact")
    ui.click("#memories tbody a")
    assert ui.text("#content") == EXTRACTED
    assert ui.column("sources", 3) == ["I'm allergic to peanuts."]
    assert "is_supported_by" in ui.text("#links")
    ui.shot("memory")
    ui.click("#sources tbody td:nth-child(2) a")  # the source message, inside its thread
    assert ui.title().startswith("Thread trip-tokyo")
    assert ui.js("document.querySelector('#m-3').matches(':target')")
    ui.go(f"/ui/memories/{ui.ids['fact']}")
    ui.click("#links tbody a")  # the linked preference
    assert ui.text("#content") == "Alice prefers window seats."
    assert "never" not in ui.text("#memory")  # it expires
    ui.browser.submit(
        "document.querySelector('#edit-content').value = "
        "'Alice prefers aisle seats.';document.querySelector('#save').click()"
    )
    assert ui.text("#content") == "Alice prefers aisle seats."
    assert "Saved memory" in ui.text("#note")


def test_search_hits_link_to_their_threads_and_memories(ui: UI) -> None:
    ui.login()
    ui.go("/ui/users/alice")
    ui.click("#tab-search")
    ui.browser.submit(
        "document.querySelector('#q').value = 'food allergy';"
        "document.querySelector('#strategy').value = 'hybrid';"
        "document.querySelector('#go').click()"
    )
    rows = ui.js(
        "[...document.querySelectorAll('#results tbody tr')]"
        ".map(r => [r.cells[0].innerText, r.cells[1].innerText, r.cells[3].innerText])"
    )
    assert rows and all(0 <= float(d) <= 2 for d, _, _ in rows), "distances are shown"
    assert any("peanuts" in text for _, _, text in rows[:3])
    ui.shot("search")
    hit = [i for i, (_, kind, text) in enumerate(rows) if kind == "message" and "peanuts" in text]
    assert hit, rows
    ui.click(f"#results tbody tr:nth-child({hit[0] + 1}) td:nth-child(5) a")
    assert ui.title().startswith("Thread trip-tokyo")
    assert ui.js("document.querySelector('tr:target').id") == "m-3"
    ui.go("/ui/users/alice/search?q=peanuts&strategy=keyword&kind=memories")
    ui.click("#results tbody td:nth-child(3) a")
    assert ui.title().startswith("Memory ") and ui.text("#content") == EXTRACTED


def test_create_a_memory_with_the_form(ui: UI) -> None:
    ui.login()
    ui.go("/ui/users/alice")
    ui.click("#tab-add-memory")
    ui.js(
        "document.querySelector('#new-content').value = 'Alice wants a window table at "
        "dinner.'; document.querySelector('#new-type').value = 'preference';"
        "document.querySelector('#new-agent').value = 'concierge';"
        "document.querySelector('#new-thread').value = 'trip-tokyo';"
        "document.querySelector('#new-ttl').value = '90'"
    )
    ui.shot("create")
    ui.click("#create-button")
    assert "Created memory" in ui.text("#note")
    assert ui.text("#content") == "Alice wants a window table at dinner."
    assert "trip-tokyo" in ui.text("#memory-thread") and "never" not in ui.text("#memory")
    ui.go("/ui/users/alice/memories/new")
    ui.js(
        "document.querySelector('#new-content').value = 'x';"
        "document.querySelector('#new-thread').value = 'bob-thread'"
    )
    ui.click("#create-button")
    assert "belongs to another user" in ui.text("#create-error")


def test_delete_asks_first_and_cancel_keeps_it(ui: UI, local_embedder: Any) -> None:
    ui.login()
    mid = ui.ids["old"]
    ui.go(f"/ui/memories/{mid}")
    assert ui.text("#content") == "Alice lived in Lisbon."
    assert not ui.exists(f"form[action='/ui/memories/{mid}/delete']")  # no one-click delete
    ui.click("#delete-link")
    assert "Delete this memory for good?" in ui.text("#confirm")
    ui.shot("delete-confirm")
    ui.click("#cancel")
    assert ui.text("#content") == "Alice lived in Lisbon."
    ui.click("#delete-link")
    ui.click("#confirm-delete")
    assert f"Deleted memory {mid}." in ui.text("#note")
    assert "Lisbon" not in ui.text("#memories")
    ui.shot("deleted")
    ui.go(f"/ui/memories/{mid}")
    assert "404" in ui.title()
    with OracleAgentMemory(connection=ui.db, embedder=local_embedder) as mem:
        assert mid not in [m.id for m in mem.list_memories(user_id="alice")]


def test_hostile_text_stays_text(ui: UI) -> None:
    ui.login(ui.admin)
    ui.go("/ui/users/carol/memories/new")
    ui.js(
        f"document.querySelector('#new-content').value = {json.dumps(HOSTILE)};"
        "document.querySelector('#new-agent').value = '<b>agent</b>'"
    )
    ui.click("#create-button")
    assert ui.text("#content") == HOSTILE
    mid = ui.text("h1").removeprefix("Memory ")
    for path in (
        f"/ui/memories/{mid}",
        "/ui/users/carol",
        "/ui/users/carol/search?q=quotes+alert",
        f"/ui/memories/{mid}/delete",
    ):
        ui.go(path)
        assert HOSTILE in ui.text("main"), path
        assert ui.js("document.querySelectorAll('main script, main img').length") == 0, path
        assert not ui.js("[...document.querySelectorAll('b')].some(b => b.innerText == 'agent')")

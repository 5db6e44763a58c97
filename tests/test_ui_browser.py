"""The /ui memory browser driven by headless Chromium (Debian's ``chromium``; install it with
``make ui-browser``): log in with a key, search, open a memory, edit and delete it, with a
screenshot of each screen. Screenshots go to a temporary folder, or to the folder named by
``OAM_UI_SCREENSHOTS`` (``make ui-screenshots`` refreshes ``bench/results/ui/``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.core import OracleAgentMemory

from ._cdp import Browser, find_chromium
from ._servers import new_key, running_server

CHROMIUM = find_chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                    "(Debian package 'chromium'; `make ui-browser` installs it)")
def test_memory_browser(tmp_path: Path, local_embedder: Any) -> None:
    db = str(tmp_path / "ui.db")
    with OracleAgentMemory(connection=db, embedder=local_embedder) as mem:
        mem.add_user("alice", "Alice, a frequent traveller.")
        t = mem.create_thread(thread_id="trip-tokyo", user_id="alice", agent_id="concierge")
        t.add_messages([
            {"role": "user", "content": "I'm flying to Tokyo on Friday."},
            {"role": "assistant", "content": "Noted. Any dietary needs?"},
            {"role": "user", "content": "I'm allergic to peanuts."},
        ])
        fact = t.add_memory("Alice is allergic to peanuts.", memory_type="fact")
        pref = t.add_memory("Alice prefers window seats.", memory_type="preference",
                            ttl_days=180)
        mem.link_records(pref, "preference", fact, "fact", "supports")
        mem.add_memory("Bob likes jazz.", user_id="bob")
    key = new_key(db, "alice")
    assert CHROMIUM is not None
    shots = Path(os.environ.get("OAM_UI_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with running_server(db) as base:
        browser = Browser(CHROMIUM)
        try:
            browser.goto(f"{base}/ui")
            assert browser.js("document.querySelector('#key') !== null")
            browser.screenshot(shots / "1-login.png")
            browser.submit(f"document.querySelector('#key').value = {key!r};"
                           "document.querySelector('#login').click()")
            assert browser.js("document.querySelector('#users').innerText") == "alice"
            browser.screenshot(shots / "2-users.png")
            # Another user's page is refused, as by the API.
            browser.goto(f"{base}/ui/users/bob")
            assert "403" in browser.js("document.title")
            browser.goto(f"{base}/ui/users/alice")
            assert "allergic" in browser.js("document.querySelector('#memories').innerText")
            browser.submit("document.querySelector('#q').value = 'food allergy';"
                           "document.querySelector('#strategy').value = 'hybrid';"
                           "document.querySelector('#go').click()")
            rows = browser.js("[...document.querySelectorAll('#results tr')].slice(1)"
                              ".map(r => [r.cells[0].innerText, r.cells[3].innerText])")
            assert rows and "peanuts" in rows[0][1]
            assert all(0 <= float(d) <= 2 for d, _ in rows), "distances are shown"
            browser.screenshot(shots / "3-search.png")
            browser.goto(f"{base}/ui/threads/trip-tokyo")
            assert "Tokyo" in browser.js("document.querySelector('#messages').innerText")
            assert "peanuts" in browser.js("document.querySelector('#card').innerText")
            browser.screenshot(shots / "4-thread.png")
            browser.goto(f"{base}/ui/memories/{pref}")
            assert "supports" in browser.js("document.querySelector('#links').innerText")
            assert "never" not in browser.js("document.querySelector('#memory').innerText")
            browser.submit("document.querySelector('#edit-content').value = "
                           "'Alice prefers aisle seats.';document.querySelector('#save').click()")
            assert browser.js("document.querySelector('#content').innerText") == \
                "Alice prefers aisle seats."
            browser.screenshot(shots / "5-memory.png")
            browser.submit("document.querySelector('#delete-button').click()")
            assert "deleted memory" in browser.js("document.querySelector('#note').innerText")
            assert "aisle" not in browser.js("document.querySelector('#memories').innerText")
            browser.screenshot(shots / "6-deleted.png")
        finally:
            browser.close()
    with OracleAgentMemory(connection=db, embedder=local_embedder) as mem:
        assert [m.id for m in mem.list_memories(user_id="alice")] == [fact]

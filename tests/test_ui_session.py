"""The ``/ui`` session is a server-side session id, never the API key (issue 48), on both
engines, against two real ``oam serve`` processes on one store (as two workers are): the
cookie is not the key and not a ``/v1`` key; a session opened on one server is honoured by
the other; log-out, revoking the key and expiry (idle and absolute) end it everywhere at once.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.admin.apikeys import SESSION_IDLE_SECONDS, SESSION_MAX_SECONDS
from oracleagentmemory.admin.connect import Target
from oracleagentmemory.admin.db import Database
from oracleagentmemory.core import OracleAgentMemory

from ._servers import new_key, oam, running_server

COOKIE = "oam_session"
SESSIONS = "oam_ui_sessions"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("uisession")
    if request.param == "sqlite":
        dsn = str(folder / "ui.db")
    else:
        server = request.getfixturevalue("pg_server")
        schema = f"uisession_{int(time.time() * 1000) % 10**9}"
        server.psql(f"CREATE SCHEMA {schema};")
        dsn = f"{server.get_uri()}&options=-csearch_path%3D{schema}%2Cpublic"
    with OracleAgentMemory(connection=dsn, schema_policy="create_if_necessary") as mem:
        for user in ("alice", "carol"):
            mem.add_memory(f"{user} keeps a diary.", user_id=user, memory_id=f"{user}-m")
    opts = ("--embedder", "none", "--search-strategy", "keyword")
    with (
        running_server(dsn, *opts, log=folder / "a.log") as a,
        running_server(dsn, *opts, log=folder / "b.log") as b,
    ):
        yield {"dsn": dsn, "a": a, "b": b, "folder": folder}


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


def _login(base: str, key: str, **headers: str) -> httpx.Response:
    with httpx.Client(base_url=base, headers={"Origin": base, **headers}, timeout=60) as ui:
        page = ui.get("/ui")
        return ui.post(
            "/ui/login", data={"key": key, "csrf": _csrf(page.text)}, follow_redirects=False
        )


def _session(base: str, key: str) -> str:
    r = _login(base, key)
    assert r.status_code == 303, r.text
    return str(r.cookies[COOKIE])


def _page(base: str, session: str, path: str = "/ui/users/alice") -> httpx.Response:
    return httpx.get(base + path, headers={"Cookie": f"{COOKIE}={session}"}, timeout=60)


def _logged_in(base: str, session: str) -> bool:
    r = _page(base, session, "/ui")
    assert r.status_code in (200, 401), r.text
    return 'id="logout"' in r.text and 'id="key"' not in r.text


@contextlib.contextmanager
def _db(dsn: str) -> Iterator[Database]:
    db = Database(Target(dsn), create=False)
    try:
        yield db
    finally:
        db.close()


def test_the_cookie_is_a_session_id_never_the_key_nor_a_v1_key(site: dict[str, Any]) -> None:
    key = new_key(site["dsn"], "alice")
    r = _login(site["a"], key)
    assert r.status_code == 303
    session = r.cookies[COOKIE]
    secret = key.split("_", 2)[2]  # oam_<key id>_<secret>; the secret may hold "_"
    assert session != key and secret not in session and key not in r.headers["set-cookie"]
    cookie = r.headers["set-cookie"].lower()
    for flag in ("httponly", "samesite=strict", "path=/ui", f"max-age={SESSION_MAX_SECONDS}"):
        assert flag in cookie, cookie
    assert "secure" not in cookie  # plain http here; over https it is marked Secure (below)
    assert _logged_in(site["a"], session) and _logged_in(site["b"], session)
    assert "alice keeps a diary." in _page(site["b"], session).text
    # Not a key: every /v1 route answers 401, on either server, as for any unknown key.
    for base in (site["a"], site["b"]):
        for method, path in (
            ("GET", "/v1/users"),
            ("GET", "/v1/memories?user_id=alice"),
            ("GET", "/v1/memories/alice-m"),
            ("POST", "/v1/search"),
        ):
            got = httpx.request(
                method,
                base + path,
                timeout=60,
                json={"query": "x", "user_id": "alice"},
                headers={"Authorization": f"Bearer {session}"},
            )
            assert got.status_code == 401, (path, got.text)
    # And the key itself is no session: a cookie holding it shows the log-in page.
    assert not _logged_in(site["a"], key)
    # The store keeps a digest of the session id, never the id (nor the key).
    with _db(site["dsn"]) as db:
        rows = db.execute(f"SELECT * FROM {SESSIONS}")
    flat = " ".join(str(v) for row in rows for v in row)
    assert rows and session not in flat and secret not in flat
    # Two log-ins are two sessions.
    assert _session(site["a"], key) != _session(site["a"], key)


def test_over_https_the_cookie_is_secure(site: dict[str, Any]) -> None:
    """Behind a TLS proxy on loopback (``X-Forwarded-Proto``, trusted from 127.0.0.1)."""
    key = new_key(site["dsn"], "alice")
    https = site["a"].replace("http://", "https://")
    with httpx.Client(
        base_url=site["a"], timeout=60, headers={"Origin": https, "X-Forwarded-Proto": "https"}
    ) as ui:
        page = ui.get("/ui")
        r = ui.post(
            "/ui/login", data={"key": key, "csrf": _csrf(page.text)}, follow_redirects=False
        )
    assert r.status_code == 303, r.text
    assert "secure" in r.headers["set-cookie"].lower()


def test_a_session_is_shared_by_servers_and_log_out_ends_it_everywhere(
    site: dict[str, Any],
) -> None:
    key = new_key(site["dsn"], "alice")
    session = _session(site["a"], key)
    other = _session(site["b"], key)  # another browser of the same key
    page = _page(site["b"], session, "/ui")
    assert 'id="logout"' in page.text
    out = httpx.post(
        site["b"] + "/ui/logout",
        data={"csrf": _csrf(page.text)},
        headers={"Cookie": f"{COOKIE}={session}", "Origin": site["b"]},
        follow_redirects=False,
        timeout=60,
    )
    assert out.status_code == 303
    # The old cookie, replayed on either server, is refused at once (no grace period).
    for base in (site["a"], site["b"]):
        assert not _logged_in(base, session)
        for path in ("/ui/users/alice", "/ui/memories/alice-m"):
            assert "alice keeps a diary" not in _page(base, session, path).text
    # A forged log-out (no token) ends nothing; the other browser's session lives on.
    forged = httpx.post(
        site["a"] + "/ui/logout",
        data={"csrf": "0" * 64},
        headers={"Cookie": f"{COOKIE}={other}", "Origin": site["a"]},
        timeout=60,
    )
    assert forged.status_code == 403
    assert _logged_in(site["a"], other) and _logged_in(site["b"], other)


def test_revoking_a_key_ends_its_sessions_at_once(site: dict[str, Any]) -> None:
    alice, carol = new_key(site["dsn"], "alice"), new_key(site["dsn"], "carol")
    hers = [_session(site["a"], alice), _session(site["b"], alice)]
    kept = _session(site["a"], carol)
    for session in hers:  # a page seen first: a server that had looked would still refuse
        assert _logged_in(site["a"], session) and _logged_in(site["b"], session)
    key_id = alice.split("_")[1]
    oam("keys", "revoke", "--dsn", site["dsn"], key_id)
    for session in hers:
        for base in (site["a"], site["b"]):
            assert not _logged_in(base, session)
    assert _logged_in(site["b"], kept)
    with _db(site["dsn"]) as db:
        left = db.execute(f"SELECT COUNT(*) FROM {SESSIONS} WHERE key_id = ?", [key_id])
    assert left[0][0] == 0  # removed, not only refused
    # The revoked key cannot open a new session either.
    assert _login(site["a"], alice).status_code == 401


@pytest.mark.parametrize(
    ("started_ago", "seen_ago", "alive"),
    [
        (SESSION_IDLE_SECONDS + 5, SESSION_IDLE_SECONDS + 5, False),  # idle too long
        (SESSION_MAX_SECONDS + 5, 10, False),  # busy, but past its absolute lifetime
        (SESSION_MAX_SECONDS - 120, SESSION_IDLE_SECONDS - 120, True),  # within both
        (SESSION_MAX_SECONDS + 5, SESSION_IDLE_SECONDS + 5, False),  # both
    ],
)
def test_an_expired_session_is_refused(
    site: dict[str, Any], started_ago: int, seen_ago: int, alive: bool
) -> None:
    from oracleagentmemory.admin.apikeys import _digest

    key = new_key(site["dsn"], "alice")
    session = _session(site["a"], key)
    now = int(time.time())
    with _db(site["dsn"]) as db:  # the session ages: its times move into the past
        db.execute(
            f"UPDATE {SESSIONS} SET created_at = ?, last_seen = ? WHERE session_hash = ?",
            [now - started_ago, now - seen_ago, _digest(session)],
        )
    for base in (site["b"], site["a"]):
        assert _logged_in(base, session) is alive
    if alive:  # using it moved its idle clock: it is seen now
        with _db(site["dsn"]) as db:
            ((seen,),) = db.execute(
                f"SELECT last_seen FROM {SESSIONS} WHERE session_hash = ?", [_digest(session)]
            )
        assert int(seen) >= now - 5


def test_no_server_logged_a_traceback(site: dict[str, Any]) -> None:
    for name in ("a.log", "b.log"):
        assert "Traceback" not in (Path(site["folder"]) / name).read_text()

"""Logging in to the ``/ui`` pages through a TestClient, as a browser does (the form's CSRF
token, then the key)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def ui_login(client: TestClient, key: str) -> TestClient:
    """``client`` with a ``/ui`` session for ``key`` (its earlier cookies dropped)."""
    client.cookies.clear()
    page = client.get("/ui")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token
    r = client.post("/ui/login", data={"key": key, "csrf": token.group(1)}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return client

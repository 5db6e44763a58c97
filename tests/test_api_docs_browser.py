"""``/docs`` renders in a real browser (issue 47): headless Chromium (Debian's ``chromium``;
``make ui-browser`` installs it) loads the Swagger UI page of ``oam serve`` over a real
socket, with its scripts served by the server itself, and shows one operation block for each
operation of ``/openapi.json`` (an OpenAPI 3.1 document), and no rendering error."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.server.app import docs_assets

from ._cdp import Browser, find_chromium
from ._servers import running_server

CHROMIUM = find_chromium()
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="headless Chromium is not installed (Debian package 'chromium'; `make ui-browser` "
        "installs it)",
    ),
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = str(tmp_path_factory.mktemp("api-docs") / "docs.db")
    with running_server(db) as url:
        yield url


def test_swagger_ui_ships_with_the_server_extra() -> None:
    assets = docs_assets()
    assert assets is not None, "the [server] extra's Swagger UI package is missing"
    assert (assets / "swagger-ui-bundle.js").stat().st_size > 100_000


def test_docs_render_every_operation(base: str) -> None:
    doc = httpx.get(base + "/openapi.json", timeout=30).json()
    assert doc["openapi"].startswith("3.1")
    operations = sum(len(METHODS & set(item)) for item in doc["paths"].values())
    assert operations > 30, operations
    assert CHROMIUM is not None
    browser = Browser(CHROMIUM)
    try:
        browser.goto(base + "/docs")
        deadline = time.monotonic() + 60
        rendered = 0
        while time.monotonic() < deadline:  # Swagger UI renders after fetching the document
            rendered = int(browser.js("document.querySelectorAll('.opblock').length"))
            if rendered >= operations:
                break
            time.sleep(0.25)
        text = str(browser.js("document.body.innerText"))
        assert "Unable to render" not in text
        assert browser.js("document.querySelector('.errors-wrapper') === null")
        assert rendered == operations, (rendered, operations, text[:2000])
        # Swagger UI 5 is the first major version that renders OpenAPI 3.1 documents.
        version = str(browser.js("window.versions.swaggerUI.version"))
        assert int(version.split(".")[0]) >= 5, version
        title = str(browser.js("document.querySelector('.info .title').innerText"))
        assert title.startswith("oracleagentmemory"), title
        paths = browser.js(
            "[...document.querySelectorAll('.opblock-summary-path')]"
            ".map(e => e.getAttribute('data-path'))"
        )
        assert "/v1/search" in paths and "/readyz" in paths, json.dumps(paths)[:500]
    finally:
        browser.close()

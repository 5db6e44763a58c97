"""Write the REST server's OpenAPI document, as ``oam serve`` serves it at ``/openapi.json``.

The FastAPI application is built without starting a server (no store is opened: that happens
in the application's start-up, which never runs here), and the document is written as JSON
with sorted keys and a final newline, so that the same server code always gives the same
bytes. The TypeScript client's types are generated from this file
(``clients/typescript/openapi.json``); ``tests/test_typescript_client.py`` fails when the
checked-in copy differs from what the server writes.

    python tools/export_openapi.py                       # to standard output
    python tools/export_openapi.py clients/typescript/openapi.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def openapi_document() -> dict[str, Any]:
    """The document of an application built with default settings (it does not depend on
    the store: ``--end-user-roles`` and the limits add no route)."""
    from oracleagentmemory.server.app import create_app
    from oracleagentmemory.server.state import ServerSettings

    document: dict[str, Any] = create_app(ServerSettings(dsn="unused.db")).openapi()
    return document


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(openapi_document())
    if len(argv) > 1:
        print(f"usage: {Path(sys.argv[0]).name} [OUTPUT]", file=sys.stderr)
        return 2
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Record ids in URL paths, whatever characters they hold.

Ids are any text up to 256 characters, ``/`` included. A client sends such an id
percent-encoded (``/v1/threads/team%2Fq3``); HTTP servers decode the path before routing, so
an encoded slash would split the id in two. :class:`EncodedSlashes` re-decodes the raw path
one segment at a time, keeping a slash inside a segment as :data:`SLASH` (a private-use
character), and every route names its id parameters ``{name:id}``, whose convertor turns
:data:`SLASH` back into ``/``. A raw path that itself holds :data:`SLASH` is refused (400),
so no id is ever read as another.
"""

from __future__ import annotations

import json
from urllib.parse import unquote

from starlette.convertors import Convertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send

SLASH = "\ue000"
"""Stands for a ``/`` inside one path segment while the path is routed."""


class IdConvertor(Convertor[str]):
    """``{name:id}``: one path segment, decoded, with its encoded slashes restored."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return value.replace(SLASH, "/")

    def to_string(self, value: str) -> str:
        return value.replace("/", "%2F")


register_url_convertor("id", IdConvertor())


class EncodedSlashes:
    """ASGI middleware: route on segments decoded one at a time (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path")
            if isinstance(raw, bytes | bytearray) and b"%" in raw:
                segments = [unquote(part.decode("latin-1")) for part in bytes(raw).split(b"/")]
                if any(SLASH in part for part in segments):
                    await _refuse(send)
                    return
                path = "/".join(part.replace("/", SLASH) for part in segments)
                scope = {**scope, "path": path}  # raw_path holds the root path, if any
        await self.app(scope, receive, send)


async def _refuse(send: Send) -> None:
    body = json.dumps(
        {
            "error": {
                "status": 400,
                "code": "bad_request",
                "message": "the path holds U+E000, which no id may hold",
            }
        }
    )
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})

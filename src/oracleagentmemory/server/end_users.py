"""``oam serve --end-user-roles``: each request of a one-user API key runs as that user's
PostgreSQL role, so row security (``core.deepsec``) checks every statement it sends, on top
of the key's own user check.

An ASGI middleware, so the end-user scope is entered and left in the request's own task
(the endpoint's worker thread inherits it). The key is verified once: the verified key is
left on the request scope for the ``api_key`` dependency. Admin keys and keys bound to
several users run as the server's own role (the store's owner administers it).
"""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread

from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext

SCOPE_KEY = "oam.api_key"
"""Where the verified key waits on the ASGI scope."""


class EndUserRoles:
    """Run each ``/v1`` request of a one-user key as that user's database role."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or ()).get(b"authorization")
        state = scope["app"].state.oam
        key = None
        if header:
            try:
                key = await anyio.to_thread.run_sync(state.authenticate, header.decode("latin-1"))
            except Exception:  # the endpoint's own dependency answers 401
                key = None
        if key is None or key.admin or len(key.user_ids) != 1:
            await self.app(scope, receive, send)
            return
        scope[SCOPE_KEY] = key
        try:
            context = OracleMemoryEndUserSecurityContext(key.user_ids[0])
        except ValueError as exc:  # not a role name: never run it as the server's own role
            await _refuse(send, str(exc))
            return
        with context:
            await self.app(scope, receive, send)


async def _refuse(send: Any, message: str) -> None:
    body = json.dumps({"error": {"status": 403, "code": "forbidden", "message": message}})
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})

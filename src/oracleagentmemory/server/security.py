"""What keeps the HTTP surface safe beside the key checks: response headers, and same-origin
checks and CSRF tokens for the ``/ui`` forms.

* Every response says ``nosniff`` and ``no-store``; ``/ui`` and ``/docs`` pages may not be
  framed and run only their own scripts and styles (a Content-Security-Policy each); API
  responses (JSON, image bytes) are sandboxed, so a stored file can never run as a page.
* A ``/ui`` form is accepted only from the same origin (``Origin``, else ``Referer``) and with
  its CSRF token: a digest of the session id (kept in an HttpOnly cookie; the key never is),
  or, for the log-in form, a random value also set as a cookie.

Slow clients are cut off by ``admin.serving.DeadlineH11Protocol``. :class:`KeyActor` names
each API request's key as the actor of the changes it makes (a memory's history).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oracleagentmemory.core._shared._actor import acting_as

LOGIN_COOKIE = "oam_login_csrf"
API_KEY_SCOPE = "oam.api_key"
"""Where a verified key waits on the ASGI scope (``deps.api_key`` takes it from there)."""

_BASE = {
    b"x-content-type-options": b"nosniff",
    b"cache-control": b"no-store",
    b"referrer-policy": b"same-origin",
}
_PAGE_CSP = (
    b"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_DOCS_CSP = (
    b"default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_API_CSP = b"default-src 'none'; frame-ancestors 'none'; sandbox"


def headers_for(path: str) -> dict[bytes, bytes]:
    """The security headers a response to ``path`` carries."""
    out = dict(_BASE)
    if path == "/ui" or path.startswith("/ui/"):
        out[b"content-security-policy"] = _PAGE_CSP
        out[b"x-frame-options"] = b"DENY"
    elif path == "/docs" or path.startswith("/docs/"):
        out[b"content-security-policy"] = _DOCS_CSP
        out[b"x-frame-options"] = b"DENY"
    else:
        out[b"content-security-policy"] = _API_CSP
    return out


class SecurityHeaders:
    """ASGI middleware adding :func:`headers_for` to every HTTP response (an app's own value
    for a header wins)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = headers_for(scope["path"])

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *((k, v) for k, v in extra.items() if k not in present),
                ]
            await send(message)

        await self.app(scope, receive, with_headers)


# ---------------------------------------------------------------------------- /ui forms


def own_origin(request: Request) -> str:
    """``scheme://host[:port]`` as this request reached the server."""
    host = request.headers.get("host") or (
        f"{request.url.hostname}:{request.url.port}" if request.url.port else request.url.hostname
    )
    return f"{request.url.scheme}://{host}"


def same_origin(request: Request) -> bool:
    """Whether a form post comes from one of our own pages: its ``Origin`` header (browsers
    send it with every POST), else its ``Referer``, names this server's origin."""
    mine = own_origin(request)
    origin = request.headers.get("origin")
    if origin is not None:
        return hmac.compare_digest(origin.rstrip("/"), mine)
    referer = request.headers.get("referer")
    if referer is not None:
        return referer == mine or referer.startswith(mine + "/")
    return False


def session_token(session: str) -> str:
    """The CSRF token of the ``/ui`` session ``session`` (a digest: the page never shows the
    session id, and another site cannot compute it)."""
    return hashlib.sha256(b"oam-ui-csrf\0" + session.encode()).hexdigest()


def new_login_token() -> str:
    return secrets.token_urlsafe(32)


def tokens_match(given: str, expected: str) -> bool:
    return bool(given) and bool(expected) and hmac.compare_digest(given, expected)


class KeyActor:
    """Each ``/v1`` request's changes are made by its API key: ``user:<id>`` for a key of
    one user, else ``key:<key id>`` (``core._shared._actor``, recorded in a memory's
    history). The verified key is left on the request scope for the ``api_key``
    dependency, so a request verifies its key once."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        key = scope.get(API_KEY_SCOPE)
        header = dict(scope.get("headers") or ()).get(b"authorization")
        if key is None and header:
            try:
                state = scope["app"].state.oam
                key = await anyio.to_thread.run_sync(state.authenticate, header.decode("latin-1"))
            except Exception:  # the endpoint's own dependency answers (401, or 503 starting)
                key = None
        if key is None:
            await self.app(scope, receive, send)
            return
        scope[API_KEY_SCOPE] = key
        with acting_as(actor_of(key)):
            await self.app(scope, receive, send)


def actor_of(key: Any) -> str:
    """The actor an API key's changes name: ``user:<id>`` for a key of one user, else
    ``key:<key id>`` (an admin key, or a key of several users)."""
    one = len(key.user_ids) == 1 and not key.admin
    return f"user:{key.user_ids[0]}" if one else f"key:{key.key_id}"

"""What keeps the HTTP surface safe beside the key checks: response headers, and same-origin
checks and CSRF tokens for the ``/ui`` forms.

* Every response says ``nosniff`` and ``no-store``; ``/ui`` and ``/docs`` pages may not be
  framed and run only their own scripts and styles (a Content-Security-Policy each); API
  responses (JSON, image bytes) are sandboxed, so a stored file can never run as a page.
* A ``/ui`` form is accepted only from the same origin (``Origin``, else ``Referer``) and with
  its CSRF token: a digest of the session id (kept in an HttpOnly cookie; the key never is),
  or, for the log-in form, a random value also set as a cookie.

Slow clients are cut off by ``admin.serving.DeadlineH11Protocol``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOGIN_COOKIE = "oam_login_csrf"

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

"""Who is browsing ``/ui`` and whether a form post is genuine; error pages.

A browser logs in with an API key and then holds a server-side session id (never the key),
in an HttpOnly, SameSite=Strict cookie (Secure over HTTPS); the session lives in the store's
database (``admin.apikeys``), so every worker honours it and log-out or revoking the key
ends it everywhere. Its :class:`Session` carries the key's facts and the CSRF token its
forms send back. A form post
is accepted only from this server's own pages (same origin) and with that token
(``security``). :func:`ui_route` turns what a handler raises into the page to answer: no
session -> the log-in page; :class:`ApiError` -> its status with its message (401 -> log-in
page); a thread of another user -> 409; a bad value -> 400. So no input reaches a 500.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from oracleagentmemory.admin.apikeys import ApiKey
from oracleagentmemory.core.store._threads import ThreadOwnershipError
from oracleagentmemory.server.deps import state_of
from oracleagentmemory.server.errors import ApiError
from oracleagentmemory.server.security import (
    LOGIN_COOKIE,
    new_login_token,
    same_origin,
    session_token,
    tokens_match,
)
from oracleagentmemory.server.ui.render import esc, link, page

COOKIE = "oam_session"


class Session:
    """A logged-in browser: its key's facts and the CSRF token its forms carry."""

    def __init__(self, key: ApiKey, token: str) -> None:
        self.key = key
        self.token = token

    @property
    def field(self) -> str:
        """The hidden form field every POST form of this session carries."""
        return f'<input type="hidden" name="csrf" value="{esc(self.token)}">'

    @property
    def who(self) -> str:
        if self.key.admin:
            return "admin key (every user)"
        return "key for " + ", ".join(self.key.user_ids)

    def nav(self) -> str:
        return (
            link("/ui", "Users") + f'<span class="who">{esc(self.who)}</span>'
            '<form method="post" action="/ui/logout">'
            f'{self.field}<button id="logout">log out</button></form>'
        )


class LoginNeeded(Exception):
    """The request has no valid session: answer with the log-in page."""


def session_of(request: Request) -> Session | None:
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    key = state_of(request).keys.session(token)
    return None if key is None else Session(key, session_token(token))


def need_session(request: Request) -> Session:
    found = session_of(request)
    if found is None:
        raise LoginNeeded
    return found


def check_form(request: Request, session: Session, given: str) -> None:
    """403 unless this form post comes from our own page and carries the session's token."""
    if not (same_origin(request) and tokens_match(given, session.token)):
        raise ApiError(403, "this form did not come from this page (reload it and try again)")


def login_page(message: str = "", status: int = 200) -> HTMLResponse:
    """The log-in page; its form's token is also set as a cookie (login CSRF)."""
    err = f'<p class="err" id="error">{esc(message)}</p>' if message else ""
    token = new_login_token()
    resp = page(
        "Log in",
        err
        + (
            '<form method="post" action="/ui/login" class="bar" id="login-form">'
            '<label>API key <input type="password" name="key" id="key" autocomplete="off" '
            'size="60"></label>'
            f'<input type="hidden" name="csrf" value="{esc(token)}">'
            '<button id="login">log in</button></form>'
            "<p class='muted'>Create a key with"
            " <code>oam keys create --dsn DSN --user-id USER</code>"
            " (or <code>--admin</code> for every user).</p>"
        ),
        status=status,
    )
    resp.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", path="/ui")
    return resp


def error_page(status: int, message: str, session: Session | None) -> HTMLResponse:
    return page(
        f"Error {status}",
        f'<p class="err" id="error">{esc(message)}</p><p><a href="/ui">back to the users</a></p>',
        status=status,
        nav=session.nav() if session else "",
    )


def ui_route(handler: Callable[..., Response]) -> Callable[..., Response]:
    """Answer what ``handler`` raises with a page (see the module docstring). The handler
    takes the request as its ``request`` keyword."""

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> Response:
        request: Request = kwargs["request"]
        try:
            return handler(*args, **kwargs)
        except LoginNeeded:
            return login_page()
        except ApiError as exc:
            if exc.status == 401:
                return login_page(exc.message, status=401)
            return error_page(exc.status, exc.message, session_of(request))
        except ThreadOwnershipError as exc:
            return error_page(409, str(exc), session_of(request))
        except (ValueError, TypeError) as exc:
            return error_page(400, str(exc), session_of(request))

    return run

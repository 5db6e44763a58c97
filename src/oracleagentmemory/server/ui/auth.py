"""Logging in and out of ``/ui`` with an API key."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from oracleagentmemory.admin.apikeys import SESSION_MAX_SECONDS
from oracleagentmemory.server.deps import state_of
from oracleagentmemory.server.security import LOGIN_COOKIE, same_origin, tokens_match
from oracleagentmemory.server.ui.session import COOKIE, check_form, login_page, session_of, ui_route

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.post("/login")
@ui_route
def login(
    request: Request, key: Annotated[str, Form()] = "", csrf: Annotated[str, Form()] = ""
) -> Response:
    # Another site must not log a browser in with its own key (login CSRF).
    if not (same_origin(request) and tokens_match(csrf, request.cookies.get(LOGIN_COOKIE, ""))):
        return login_page(
            "the log-in form expired or came from another site; try again", status=403
        )
    keys = state_of(request).keys
    found = keys.verify(key.strip())
    session = None if found is None else keys.start_session(found)  # never the key itself
    if session is None:
        return login_page("invalid or revoked API key", status=401)
    resp = RedirectResponse("/ui", status_code=303)
    resp.set_cookie(
        COOKIE,
        session,
        httponly=True,
        samesite="strict",
        path="/ui",
        secure=request.url.scheme == "https",
        max_age=SESSION_MAX_SECONDS,
    )
    resp.delete_cookie(LOGIN_COOKIE, path="/ui")
    return resp


@router.post("/logout")
@ui_route
def logout(request: Request, csrf: Annotated[str, Form()] = "") -> Response:
    session = session_of(request)
    if session is not None:
        check_form(request, session, csrf)
        state_of(request).keys.end_session(request.cookies.get(COOKIE, ""))  # for every worker
    resp = RedirectResponse("/ui", status_code=303)
    resp.delete_cookie(COOKIE, path="/ui")
    return resp

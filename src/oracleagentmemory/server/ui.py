"""The memory browser at ``/ui``: server-rendered HTML forms, no JavaScript.

Log in with an API key (kept in an HttpOnly, SameSite=Strict cookie), pick a user, see their
threads, messages and memories (type, status, expiry, links), search with a scope and a
strategy and see distances, read a thread's context card, edit or delete a memory. The same
key rule as the API applies: a user outside the key is refused with 403, and another user's
thread or memory is "not found", as an unknown id is. Every form post must come from this
server's own pages (same origin) and carry its CSRF token (``security``).
"""

from __future__ import annotations

import json
from html import escape
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from oracleagentmemory.admin.apikeys import ApiKey
from oracleagentmemory.server.deps import (
    MEMORY_TYPES,
    json_object,
    owned_memory,
    owned_thread,
    state_of,
)
from oracleagentmemory.server.errors import ApiError
from oracleagentmemory.server.security import (
    LOGIN_COOKIE,
    new_login_token,
    same_origin,
    session_token,
    tokens_match,
)
from oracleagentmemory.server.state import ServerState, require_user

router = APIRouter(prefix="/ui", include_in_schema=False)
COOKIE = "oam_key"

_CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#1d2329;background:#f6f7f9}
header{background:#24323f;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1rem;
align-items:center}header a{color:#cfe3ff}header form{margin-left:auto}
main{padding:1rem 1.4rem;max-width:1100px}
table{border-collapse:collapse;width:100%;background:#fff;margin:.4rem 0 1.2rem}
th,td{border:1px solid #d8dde3;padding:.3rem .5rem;text-align:left;vertical-align:top;
font-size:.92rem}
th{background:#eef1f5}
.tag{display:inline-block;padding:0 .4rem;border-radius:.6rem;background:#e3ecf7}
.invalid{background:#f7e3e3}
.err{background:#fde8e8;border:1px solid #e0a0a0;padding:.6rem}
.note{background:#e8f6e8;border:1px solid #9c9;padding:.6rem}
pre{white-space:pre-wrap;background:#fff;
border:1px solid #d8dde3;padding:.6rem}input[type=text],input[type=password],textarea{width:100%;
box-sizing:border-box}textarea{min-height:6rem}fieldset{background:#fff;border:1px solid #d8dde3}
"""


class Session:
    """A logged-in browser: its key's facts and the CSRF token its forms carry."""

    def __init__(self, key: ApiKey, token: str) -> None:
        self.key = key
        self.token = token

    @property
    def field(self) -> str:
        """The hidden form field every POST form of this session carries."""
        return f'<input type="hidden" name="csrf" value="{escape(self.token)}">'


def _page(title: str, body: str, *, status: int = 200, session: Session | None = None
          ) -> HTMLResponse:
    nav = ('<a href="/ui">users</a><form method="post" action="/ui/logout">'
           f'{session.field}<button id="logout">log out</button></form>') if session else ""
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)} · "
            f"oracleagentmemory</title><style>{_CSS}</style></head><body><header>"
            f"<strong>oracleagentmemory</strong>{nav}</header><main><h1>{escape(title)}</h1>"
            f"{body}</main></body></html>")
    return HTMLResponse(html, status_code=status)


def _login(message: str = "", status: int = 200) -> HTMLResponse:
    """The log-in page; its form's token is also set as a cookie (login CSRF)."""
    err = f'<p class="err">{escape(message)}</p>' if message else ""
    token = new_login_token()
    resp = _page("Log in", err + (
        '<form method="post" action="/ui/login"><label>API key '
        '<input type="password" name="key" id="key" autocomplete="off"></label> '
        f'<input type="hidden" name="csrf" value="{escape(token)}">'
        '<button id="login">log in</button></form>'
        "<p>Create a key with <code>oam keys create --dsn DSN --user USER</code>.</p>"),
        status=status)
    resp.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", path="/ui")
    return resp


def _session(request: Request) -> Session | None:
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    key = state_of(request).keys.verify(token)
    return None if key is None else Session(key, session_token(token))


def _posted(request: Request, session: Session, given: str) -> HTMLResponse | None:
    """None when a form post is genuine (same origin, this session's token); else the
    403 page to answer."""
    if same_origin(request) and tokens_match(given, session.token):
        return None
    return _page("Error 403", '<p class="err">this form did not come from this page '
                 "(reload it and try again)</p>", status=403, session=session)


def _forbidden(exc: ApiError, session: Session | None) -> HTMLResponse:
    if exc.status == 401:
        return _login(exc.message, status=401)
    return _page(f"Error {exc.status}", f'<p class="err">{escape(exc.message)}</p>',
                 status=exc.status, session=session)


def _link(path: str, text: str, **attrs: str) -> str:
    extra = "".join(f' {k}="{escape(v)}"' for k, v in attrs.items())
    return f'<a href="{escape(path)}"{extra}>{escape(text)}</a>'


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return f"<code>{escape(json.dumps(value, ensure_ascii=False))}</code>"
    return escape(str(value))


def _status(record: Any) -> str:
    st = getattr(record, "status", "valid")
    return str(getattr(st, "value", st))


@router.get("", response_class=HTMLResponse)
def home(request: Request) -> Response:
    session = _session(request)
    if session is None:
        return _login()
    key = session.key
    state = state_of(request)
    users = [u.id for u in state.client.list_users(limit=None)] if key.admin else []
    ids = sorted(set(key.user_ids) | set(users))
    rows = "".join(f"<li>{_link('/ui/users/' + quote(u, safe=''), u)}</li>" for u in ids)
    who = "an admin key (every user)" if key.admin else "a key for " + ", ".join(key.user_ids)
    return _page("Users", f"<p>Logged in with {escape(who)}.</p><ul id='users'>{rows}</ul>"
                 '<form method="get" action="/ui/go"><label>open user '
                 '<input type="text" name="user_id"></label> <button>open</button></form>',
                 session=session)


@router.get("/go")
def go(user_id: str = "") -> Response:
    return RedirectResponse("/ui/users/" + quote(user_id, safe=""), status_code=303)


@router.post("/login")
def login(request: Request, key: Annotated[str, Form()] = "",
          csrf: Annotated[str, Form()] = "") -> Response:
    # Another site must not log a browser in with its own key (login CSRF).
    if not (same_origin(request) and tokens_match(csrf, request.cookies.get(LOGIN_COOKIE, ""))):
        return _login("the log-in form expired or came from another site; try again",
                      status=403)
    found = state_of(request).keys.verify(key.strip())
    if found is None:
        return _login("invalid or revoked API key", status=401)
    resp = RedirectResponse("/ui", status_code=303)
    resp.set_cookie(COOKIE, key.strip(), httponly=True, samesite="strict", path="/ui",
                    secure=request.url.scheme == "https")
    resp.delete_cookie(LOGIN_COOKIE, path="/ui")
    return resp


@router.post("/logout")
def logout(request: Request, csrf: Annotated[str, Form()] = "") -> Response:
    session = _session(request)
    if session is not None and (refused := _posted(request, session, csrf)) is not None:
        return refused
    resp = RedirectResponse("/ui", status_code=303)
    resp.delete_cookie(COOKIE, path="/ui")
    return resp


def _search_form(user_id: str, q: str, strategy: str, agent_id: str, thread_id: str,
                 exact_thread: bool) -> str:
    opts = "".join(
        f'<option value="{s}"{" selected" if s == strategy else ""}>{s}</option>'
        for s in ("vector", "keyword", "hybrid")
    )
    checked = " checked" if exact_thread else ""
    return (f'<form method="get" action="/ui/users/{escape(quote(user_id, safe=""))}" '
            f'id="search"><fieldset><legend>search</legend>'
            f'<input type="text" name="q" id="q" value="{escape(q)}" placeholder="query"> '
            f'strategy <select name="strategy" id="strategy">{opts}</select> '
            f'agent <input type="text" name="agent_id" value="{escape(agent_id)}" size="12" '
            f'style="width:auto"> thread <input type="text" name="thread_id" '
            f'value="{escape(thread_id)}" size="12" style="width:auto"> '
            f'<label><input type="checkbox" name="exact_thread" value="1"{checked}> only this '
            f'thread</label> <button id="go">search</button></fieldset></form>')


def _memory_rows(state: ServerState, records: list[Any]) -> str:
    exp = state.expiries([(r.record_type, r.id) for r in records])
    store = state.client.store
    out = []
    for r in records:
        links = len(store.list_relations(source_record_id=r.id, limit=None)) + len(
            store.list_relations(target_record_id=r.id, limit=None))
        cls = ' class="invalid"' if _status(r) != "valid" else ""
        out.append(
            f"<tr{cls}><td>{_link('/ui/memories/' + quote(r.id, safe=''), r.id)}</td>"
            f"<td><span class='tag'>{escape(r.record_type)}</span></td>"
            f"<td>{_cell(r.content)}</td><td>{_status(r)}</td>"
            f"<td>{_cell(exp.get((r.record_type, r.id)) or 'never')}</td><td>{links}</td>"
            f"<td>{_cell(r.thread_id)}</td></tr>")
    return "".join(out)


@router.get("/users/{user_id:id}", response_class=HTMLResponse)
def user_page(request: Request, user_id: str, q: str = "", strategy: str = "",
              agent_id: str = "", thread_id: str = "", exact_thread: str = "") -> Response:
    session = _session(request)
    if session is None:
        return _login()
    state = state_of(request)
    try:
        require_user(session.key, user_id)
    except ApiError as exc:
        return _forbidden(exc, session)
    strategy = strategy or state.default_strategy
    body = [_search_form(user_id, q, strategy, agent_id, thread_id, bool(exact_thread))]
    if q:
        kwargs: dict[str, Any] = {"user_id": user_id, "exact_user_match": True,
                                  "max_results": 20}
        if agent_id:
            kwargs["agent_id"] = agent_id
        if thread_id:
            kwargs["thread_id"] = thread_id
            kwargs["exact_thread_match"] = bool(exact_thread)
        try:
            results = state.client_for(strategy).search(q, **kwargs)
        except (ValueError, TypeError) as exc:
            body.append(f'<p class="err">{escape(str(exc))}</p>')
            results = []
        rows = "".join(
            f"<tr><td>{r.distance:.4f}</td><td><span class='tag'>"
            f"{escape(r.record.record_type)}</span></td><td>"
            + (_link('/ui/memories/' + quote(r.record.id, safe=''), r.record.id)
               if r.record.record_type in MEMORY_TYPES else escape(r.record.id))
            + f"</td><td>{_cell(r.content)}</td><td>{_cell(getattr(r.record, 'thread_id', None))}"
            "</td></tr>"
            for r in results
        )
        body.append(f"<h2>Results ({len(results)}, {escape(strategy)})</h2><table id='results'>"
                    "<tr><th>distance</th><th>type</th><th>id</th><th>content</th>"
                    f"<th>thread</th></tr>{rows}</table>")
    threads = state.client.list_threads(user_id, limit=None)
    trows = "".join(
        f"<tr><td>{_link('/ui/threads/' + quote(t.id, safe=''), t.id)}</td>"
        f"<td>{_cell(t.agent_id)}</td><td>{_cell(t.timestamp)}</td><td>{_cell(t.metadata)}</td>"
        "</tr>" for t in threads)
    body.append(f"<h2>Threads ({len(threads)})</h2><table id='threads'><tr><th>thread</th>"
                f"<th>agent</th><th>created</th><th>metadata</th></tr>{trows}</table>")
    memories = state.client.list_memories(user_id=user_id, limit=None)
    body.append(f"<h2>Memories ({len(memories)})</h2><table id='memories'><tr><th>id</th>"
                "<th>type</th><th>content</th><th>status</th><th>expires</th><th>links</th>"
                f"<th>thread</th></tr>{_memory_rows(state, memories)}</table>")
    note = request.query_params.get("note")
    if note:
        body.insert(0, f'<p class="note" id="note">{escape(note)}</p>')
    return _page(f"User {user_id}", "".join(body), session=session)


@router.get("/threads/{thread_id:id}", response_class=HTMLResponse)
def thread_page(request: Request, thread_id: str) -> Response:
    session = _session(request)
    if session is None:
        return _login()
    state = state_of(request)
    try:
        record = owned_thread(state, session.key, thread_id)
    except ApiError as exc:
        return _forbidden(exc, session)
    msgs = state.client.store.list_thread_messages(thread_id)
    rows = "".join(f"<tr><td>{m.seq_no}</td><td>{_cell(m.role)}</td><td>{_cell(m.content)}</td>"
                   f"<td>{_cell(m.timestamp)}</td></tr>" for m in msgs)
    card = state.client.get_thread(thread_id).get_context_card().content
    user = record.user_id or ""
    return _page(f"Thread {thread_id}", session=session, body=(
        f"<p>user {_link('/ui/users/' + quote(user, safe=''), user)}, agent "
        f"{_cell(record.agent_id)}</p><h2>Messages ({len(msgs)})</h2><table id='messages'>"
        f"<tr><th>#</th><th>role</th><th>content</th><th>time</th></tr>{rows}</table>"
        f"<h2>Context card</h2><pre id='card'>{escape(card)}</pre>"))


@router.get("/memories/{memory_id:id}", response_class=HTMLResponse)
def memory_page(request: Request, memory_id: str) -> Response:
    session = _session(request)
    if session is None:
        return _login()
    state = state_of(request)
    try:
        record = owned_memory(state, session.key, memory_id)
    except ApiError as exc:
        return _forbidden(exc, session)
    exp = state.expiries([(record.record_type, record.id)]).get((record.record_type, record.id))
    store = state.client.store
    rels = store.list_relations(source_record_id=memory_id, limit=None) + store.list_relations(
        target_record_id=memory_id, limit=None)
    lrows = ""
    for r in rels:
        outgoing = r.source_record_id == memory_id
        other = r.target_record_id if outgoing else r.source_record_id
        label = r.relation_type if outgoing else r.opposite_relation_type
        lrows += (f"<tr><td>{escape(label)}</td>"
                  f"<td>{_link('/ui/memories/' + quote(other, safe=''), other)}</td></tr>")
    status_opts = "".join(
        f'<option value="{s}"{" selected" if s == _status(record) else ""}>{s}</option>'
        for s in ("valid", "invalid"))
    meta = json.dumps(record.metadata, ensure_ascii=False) if record.metadata is not None else ""
    mid = escape(quote(memory_id, safe=""))
    user = record.user_id or ""
    return _page(f"Memory {memory_id}", session=session, body=(
        f"<table id='memory'><tr><th>type</th><td>{escape(record.record_type)}</td></tr>"
        f"<tr><th>content</th><td id='content'>{_cell(record.content)}</td></tr>"
        f"<tr><th>status</th><td>{_status(record)}</td></tr>"
        f"<tr><th>user</th><td>{_link('/ui/users/' + quote(user, safe=''), user)}</td></tr>"
        f"<tr><th>agent / thread</th><td>{_cell(record.agent_id)} / {_cell(record.thread_id)}"
        f"</td></tr><tr><th>timestamp</th><td>{_cell(record.timestamp)}</td></tr>"
        f"<tr><th>expires</th><td>{_cell(exp or 'never')}</td></tr>"
        f"<tr><th>metadata</th><td>{_cell(record.metadata)}</td></tr></table>"
        f"<h2>Links ({len(rels)})</h2><table id='links'><tr><th>relation</th><th>memory</th>"
        f"</tr>{lrows}</table>"
        f'<h2>Edit</h2><form method="post" action="/ui/memories/{mid}/edit" id="edit">'
        f'{session.field}'
        f'<label>content<textarea name="content" id="edit-content">{escape(record.content or "")}'
        f'</textarea></label><label>status <select name="status">{status_opts}</select></label>'
        f'<label>metadata (JSON)<input type="text" name="metadata" value="{escape(meta)}">'
        f'</label><button id="save">save</button></form>'
        f'<h2>Delete</h2><form method="post" action="/ui/memories/{mid}/delete" id="delete">'
        f'{session.field}'
        f'<button id="delete-button">delete this memory</button></form>'))


@router.post("/memories/{memory_id:id}/edit")
def memory_edit(request: Request, memory_id: str, content: Annotated[str, Form()] = "",
                status: Annotated[str, Form()] = "valid",
                metadata: Annotated[str, Form()] = "",
                csrf: Annotated[str, Form()] = "") -> Response:
    session = _session(request)
    if session is None:
        return _login()
    if (refused := _posted(request, session, csrf)) is not None:
        return refused
    state = state_of(request)
    try:
        owned_memory(state, session.key, memory_id)
    except ApiError as exc:
        return _forbidden(exc, session)
    try:
        meta = json_object(metadata, "metadata")
        state.client.update_memory(memory_id, content=content, status=status, metadata=meta)
    except (ValueError, TypeError) as exc:
        return _page("Invalid edit", f'<p class="err">{escape(str(exc))}</p>', status=400,
                     session=session)
    return RedirectResponse(f"/ui/memories/{quote(memory_id, safe='')}", status_code=303)


@router.post("/memories/{memory_id:id}/delete")
def memory_delete(request: Request, memory_id: str,
                  csrf: Annotated[str, Form()] = "") -> Response:
    session = _session(request)
    if session is None:
        return _login()
    if (refused := _posted(request, session, csrf)) is not None:
        return refused
    state = state_of(request)
    try:
        record = owned_memory(state, session.key, memory_id)
    except ApiError as exc:
        return _forbidden(exc, session)
    state.client.delete_memory(memory_id)
    user = record.user_id or ""
    query = urlencode({"note": f"deleted memory {memory_id}"})
    return RedirectResponse(f"/ui/users/{quote(user, safe='')}?{query}", status_code=303)

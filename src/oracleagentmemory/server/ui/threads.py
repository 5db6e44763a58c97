"""A thread's page: its messages paged (oldest or newest first; ``at=SEQ`` opens the page
holding that message and marks it), beside the thread's facts, its memories and its context
card rendered as HTML (``card``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from oracleagentmemory.core.store._limits import MAX_SEQ_NO
from oracleagentmemory.server.deps import owned_thread, state_of
from oracleagentmemory.server.ui import params as qp
from oracleagentmemory.server.ui.card import render_card
from oracleagentmemory.server.ui.render import (
    esc,
    link,
    memory_link,
    page,
    pager,
    path_of,
    short,
    stats,
    table,
    tag,
    text_of,
    user_link,
    when,
    with_query,
)
from oracleagentmemory.server.ui.session import need_session, ui_route
from oracleagentmemory.server.ui.users import overview

router = APIRouter(prefix="/ui", include_in_schema=False)
THREAD_MEMORIES_SHOWN = 10


@router.get("/threads/{thread_id:id}", response_class=HTMLResponse)
@ui_route
def thread_page(request: Request, thread_id: str) -> Response:
    session = need_session(request)
    state = state_of(request)
    record = owned_thread(state, session.key, thread_id)
    query = request.query_params
    paging = qp.paging(query)
    order = qp.choice(query, "order", qp.ORDERS, "oldest")
    newest = order == "newest"
    at = qp.number(query, "at", 0, 0, MAX_SEQ_NO) or None
    ov = overview(state)
    if at is not None and query.get("page") is None:
        before = ov.message_position(thread_id, at, newest_first=newest)
        paging = qp.Paging(before // paging.per_page + 1, paging.per_page)
    found = ov.thread_messages(
        thread_id, limit=paging.per_page, offset=paging.offset, newest_first=newest
    )
    paging.check(found.total)
    rows = (
        f"<tr id='m-{m.seq_no}'{' class=at' if m.seq_no == at else ''}>"
        f"<td class='num'>{m.seq_no}</td><td>{tag(m.role or 'message')}</td>"
        f"<td class='text'>{esc(text_of(m.content))}</td>"
        f"<td class='when'>{esc(when(m.timestamp))}</td></tr>"
        for m in found.items
    )
    base = path_of("threads", thread_id)
    size = None if paging.per_page == 50 else paging.per_page
    params = {"order": "newest" if newest else None, "per_page": size}
    flip = with_query(base, {"order": None if newest else "newest", "per_page": size})
    user = record.user_id
    mems = ov.memories(user_id=user, thread_id=thread_id, limit=THREAD_MEMORIES_SHOWN)
    mrows = (
        f"<tr><td>{tag(m.record_type)}</td><td class='text'>{esc(short(m.content, 200))}"
        f"</td><td class='id'>{memory_link(m.id, 'open')}</td></tr>"
        for m in mems.items
    )
    more = ""
    if user is not None and mems.total:
        href = with_query(path_of("users", user), {"thread_id": thread_id})
        more = (
            "<p class='small'>"
            + link(href, f"all {mems.total} in the user's memories", id="thread-memories-all")
            + "</p>"
        )
    try:
        card = render_card(state.client.get_thread(thread_id).get_context_card().content)
    except (ValueError, TypeError, KeyError) as exc:
        card = f'<p class="err" id="card">the context card could not be made: {esc(exc)}</p>'
    facts = (
        f"<dl class='kv' id='thread-facts'><dt>user</dt><dd>{user_link(user) or 'none'}</dd>"
        f"<dt>agent</dt><dd>{esc(record.agent_id) or 'none'}</dd>"
        f"<dt>created</dt><dd>{esc(when(record.timestamp))}</dd>"
        f"<dt>metadata</dt><dd class='text'>{esc(text_of(record.metadata)) or 'none'}</dd></dl>"
    )
    left = (
        f"<p class='small'>{esc(order)} first · "
        + link(flip, ("oldest" if newest else "newest") + " first", id="message-order")
        + "</p>"
        + pager(
            base,
            params,
            page=paging.page,
            per_page=paging.per_page,
            total=found.total,
            id_="pager-top",
            unit="messages",
        )
        + table("messages", ["#", "role", "content", "time"], rows, "No messages yet.")
        + pager(
            base,
            params,
            page=paging.page,
            per_page=paging.per_page,
            total=found.total,
            unit="messages",
        )
    )
    right = (
        f"<div class='panel'>{facts}</div>"
        f"<div class='panel'><h2>Context card</h2>{card}</div>"
        f"<div class='panel'><h2>Memories from this thread ({mems.total})</h2>"
        + table("thread-memories", ["type", "content", ""], mrows, "none")
        + more
        + "</div>"
    )
    crumbs = [("Users", "/ui")]
    if user is not None:
        crumbs += [(user, path_of("users", user)), ("threads", path_of("users", user, "threads"))]
    body = (
        stats([("messages", found.total), ("memories", mems.total)])
        + f"<div class='split'><div>{left}</div><div>{right}</div></div>"
    )
    return page(f"Thread {thread_id}", body, nav=session.nav(), crumbs=[*crumbs, (thread_id, None)])

"""The users of ``/ui``: the list of users with their counts, and a user's pages (the frame
with the user's stats and tabs, the memories tab with its filters, the threads tab).

Users come from the data (every user id that owns a record), restricted to what the key may
see: an admin key lists every user, a key bound to users lists those users (with zero
counts for one that has no records yet). Another user's page is a 403, as in the API.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.server.deps import state_of
from oracleagentmemory.server.state import ServerState, require_user
from oracleagentmemory.server.ui import params as qp
from oracleagentmemory.server.ui.render import (
    esc,
    link,
    memory_link,
    page,
    pager,
    path_of,
    short,
    stats,
    status_of,
    status_tag,
    table,
    tabs,
    tag,
    text_of,
    thread_link,
    user_link,
    when,
)
from oracleagentmemory.server.ui.session import Session, need_session, ui_route

router = APIRouter(prefix="/ui", include_in_schema=False)
PLURALS = {
    "memory": "plain memories",
    "guideline": "guidelines",
    "fact": "facts",
    "preference": "preferences",
}
NOTES = {
    "deleted": "Deleted memory {}.",
    "created": "Created memory {}.",
    "saved": "Saved memory {}.",
}


def overview(state: ServerState) -> Any:
    return state.client.store.overview


def notice(request: Request) -> str:
    """The note a redirect after an action asked for (fixed sentences, the id escaped)."""
    template = NOTES.get(request.query_params.get("done", ""))
    if template is None:
        return ""
    rid = qp.text(request.query_params, "id") or ""
    return f'<p class="note" id="note">{esc(template.format(rid))}</p>'


# ---------------------------------------------------------------------------- users


@router.get("", response_class=HTMLResponse)
@ui_route
def home(request: Request) -> Response:
    session = need_session(request)
    query = request.query_params
    paging = qp.paging(query)
    key = session.key
    ov = overview(state_of(request))
    if key.admin:
        found = ov.users(limit=paging.per_page, offset=paging.offset)
        users, total = found.items, found.total
        fam = ov.family_counts()
        tiles = [
            ("users", total),
            ("threads", fam.get("thread", 0)),
            ("messages", fam.get("message", 0)),
            ("memories", fam.get("memory", 0)),
            ("images", fam.get("image", 0)),
        ]
    else:
        ids = sorted(key.user_ids)
        total = len(ids)
        counts = ov.user_counts(ids)
        users = [counts[u] for u in ids[paging.offset : paging.offset + paging.per_page]]
        tiles = [("users", total)] + [
            (label, sum(getattr(c, label) for c in counts.values()))
            for label in ("threads", "messages", "memories", "images")
        ]
    paging.check(total)
    rows = (
        f"<tr><td>{user_link(u.user_id)}</td>"
        f"<td>{'profile' if u.has_profile else ''}</td>"
        f"<td class='num'>{link(path_of('users', u.user_id, 'threads'), u.threads)}</td>"
        f"<td class='num'>{u.messages}</td>"
        f"<td class='num'>{link(path_of('users', u.user_id), u.memories)}</td>"
        f"<td class='num'>{u.images}</td></tr>"
        for u in users
    )
    scope = "every user that owns records" if key.admin else "the users of this key"
    body = (
        stats(tiles)
        + f"<p class='muted'>Logged in with {'an' if key.admin else 'a'} {esc(session.who)}: "
        f"showing {scope}.</p>"
        + pager(
            "/ui",
            {"per_page": paging.per_page if paging.per_page != 50 else None},
            page=paging.page,
            per_page=paging.per_page,
            total=total,
            unit="users",
        )
        + table(
            "users",
            ["user", "profile", "threads", "messages", "memories", "images"],
            rows,
            "No users yet: add records or import a conversation file.",
        )
        + '<form method="get" action="/ui/go" class="bar" id="open-user"><label>open a user '
        'by id <input type="text" name="user_id" id="open-user-id"></label>'
        "<button>open</button></form>"
    )
    return page("Users", body, nav=session.nav())


@router.get("/go")
@ui_route
def go(request: Request) -> Response:
    user_id = qp.text(request.query_params, "user_id")
    if user_id is None:
        return RedirectResponse("/ui", status_code=303)
    return RedirectResponse(path_of("users", user_id), status_code=303)


# ---------------------------------------------------------------------------- a user's frame


def user_frame(
    request: Request, session: Session, user_id: str, tab: str, body: str, *, status: int = 200
) -> HTMLResponse:
    """A user's page: the title, the profile, stat tiles, the tabs, then ``body``."""
    require_user(session.key, user_id)
    state = state_of(request)
    ov = overview(state)
    counts = ov.user_counts([user_id])[user_id]
    by_type: dict[str, int] = {}
    invalid = 0
    for (rtype, st), n in ov.memory_type_counts(user_id).items():
        by_type[rtype] = by_type.get(rtype, 0) + n
        invalid += n if st == "invalid" else 0
    tiles = [
        ("threads", counts.threads),
        ("messages", counts.messages),
        ("memories", counts.memories),
        *((PLURALS[t], by_type.get(t, 0)) for t in MEMORY_RECORD_TYPES),
        ("invalid memories", invalid),
    ]
    profile = state.client.store.get("user_profile", user_id)
    about = (
        f'<p class="text muted" id="profile">{esc(short(profile.content, 600))}</p>'
        if profile is not None
        else ""
    )
    base = path_of("users", user_id)
    nav = tabs(
        [
            ("Memories", base),
            ("Threads", base + "/threads"),
            ("Search", base + "/search"),
            ("Add memory", base + "/memories/new"),
        ],
        tab,
    )
    return page(
        f"User {user_id}",
        about + stats(tiles) + nav + notice(request) + body,
        status=status,
        nav=session.nav(),
        crumbs=[("Users", "/ui"), (user_id, None)],
    )


# ---------------------------------------------------------------------------- memories tab


def _filters(user_id: str, agents: list[str], chosen: dict[str, Any]) -> str:
    types = "".join(
        f'<label><input type="checkbox" name="type" value="{t}"'
        f"{' checked' if t in chosen['types'] else ''}> {t}</label>"
        for t in MEMORY_RECORD_TYPES
    )

    def options(values: list[str], current: str | None, blank: str) -> str:
        items = [("", blank)] + [(v, v) for v in values]
        if current and current not in values:
            items.append((current, current))
        return "".join(
            f'<option value="{esc(v)}"{" selected" if v == (current or "") else ""}>'
            f"{esc(label)}</option>"
            for v, label in items
        )

    def sizes() -> str:
        return "".join(
            f"<option{' selected' if n == chosen['per_page'] else ''}>{n}</option>"
            for n in qp.PER_PAGE
        )

    return (
        f'<form method="get" action="{esc(path_of("users", user_id))}" class="bar" '
        f'id="filters"><fieldset><legend>type</legend>{types}</fieldset>'
        f'<label>status <select name="status" id="f-status">'
        f"{options(['valid', 'invalid'], chosen['status'], 'any')}</select></label>"
        f'<label>agent <select name="agent_id" id="f-agent">'
        f"{options(agents, chosen['agent_id'], 'any')}</select></label>"
        f'<label>thread <input type="text" name="thread_id" id="f-thread" size="14" '
        f'value="{esc(chosen["thread_id"])}"></label>'
        f'<label>from <input type="date" name="since" id="f-since" '
        f'value="{esc(chosen["since"])}"></label>'
        f'<label>to <input type="date" name="until" id="f-until" '
        f'value="{esc(chosen["until"])}"></label>'
        f'<label>order <select name="order" id="f-order">'
        + "".join(
            f"<option{' selected' if o == chosen['order'] else ''}>{o}</option>" for o in qp.ORDERS
        )
        + f'</select></label><label>per page <select name="per_page" id="f-per-page">'
        f'{sizes()}</select></label><button id="apply">apply</button> '
        + link(path_of("users", user_id), "reset", id="reset")
        + "</form>"
    )


@router.get("/users/{user_id:id}", response_class=HTMLResponse)
@ui_route
def user_memories(request: Request, user_id: str) -> Response:
    session = need_session(request)
    require_user(session.key, user_id)
    query = request.query_params
    if query.get("q"):  # the search form of earlier versions posted here
        return RedirectResponse(
            path_of("users", user_id, "search") + "?" + str(query), status_code=303
        )
    paging = qp.paging(query)
    chosen: dict[str, Any] = {
        "types": qp.memory_types(query),
        "status": qp.status(query),
        "agent_id": qp.text(query, "agent_id"),
        "thread_id": qp.text(query, "thread_id"),
        "since": qp.day(query, "since"),
        "until": qp.day(query, "until"),
        "order": qp.choice(query, "order", qp.ORDERS, "newest"),
        "per_page": paging.per_page,
    }
    state = state_of(request)
    ov = overview(state)
    found = ov.memories(
        user_id=user_id,
        limit=paging.per_page,
        offset=paging.offset,
        record_types=chosen["types"] or None,
        status=chosen["status"],
        agent_id=chosen["agent_id"],
        thread_id=chosen["thread_id"],
        since=chosen["since"],
        until=chosen["until"],
        newest_first=chosen["order"] == "newest",
    )
    paging.check(found.total)
    params: list[tuple[str, Any]] = [("type", t) for t in chosen["types"]] + [
        (k, chosen[k]) for k in ("status", "agent_id", "thread_id", "since", "until")
    ]
    if chosen["order"] != "newest":
        params.append(("order", chosen["order"]))
    if paging.per_page != 50:
        params.append(("per_page", paging.per_page))
    links = ov.link_counts([m.id for m in found.items])
    sources = ov.source_counts([m.id for m in found.items])
    exp = state.expiries([(m.record_type, m.id) for m in found.items])
    rows = []
    for m in found.items:
        st = status_of(m)
        expires = exp.get((m.record_type, m.id))
        rows.append(
            f"<tr{' class=invalid' if st != 'valid' else ''}>"
            f"<td class='id'>{memory_link(m.id)}</td><td>{tag(m.record_type)}</td>"
            f"<td class='text'>{esc(text_of(m.content))}</td>"
            f"<td>{status_tag(st)}</td>"
            f"<td>{esc(m.agent_id)}</td><td class='id'>{thread_link(m.thread_id)}</td>"
            f"<td class='when'>{esc(when(m.timestamp))}</td>"
            f"<td class='when'>{esc(when(expires) if expires else 'never')}</td>"
            f"<td class='num'>{links.get(m.id, 0)}</td>"
            f"<td class='num'>{sources.get(m.id, 0)}</td></tr>"
        )
    base = path_of("users", user_id)
    pages = pager(
        base, params, page=paging.page, per_page=paging.per_page, total=found.total, unit="memories"
    )
    body = (
        _filters(user_id, ov.agents_of(user_id), chosen)
        + pages
        + table(
            "memories",
            [
                "id",
                "type",
                "content",
                "status",
                "agent",
                "thread",
                "time",
                "expires",
                "links",
                "sources",
            ],
            rows,
            "No memories match these filters.",
        )
    )
    return user_frame(request, session, user_id, "Memories", body)


# ---------------------------------------------------------------------------- threads tab


@router.get("/users/{user_id:id}/threads", response_class=HTMLResponse)
@ui_route
def user_threads(request: Request, user_id: str) -> Response:
    session = need_session(request)
    require_user(session.key, user_id)
    query = request.query_params
    paging = qp.paging(query)
    order = qp.choice(query, "order", qp.ORDERS, "newest")
    found = overview(state_of(request)).threads(
        user_id=user_id, limit=paging.per_page, offset=paging.offset, newest_first=order == "newest"
    )
    paging.check(found.total)
    rows = (
        f"<tr><td class='id'>{thread_link(s.thread.id)}</td><td>{esc(s.thread.agent_id)}</td>"
        f"<td class='num'>{s.messages}</td>"
        f"<td class='when'>{esc(when(s.last_message_at))}</td>"
        f"<td class='when'>{esc(when(s.thread.timestamp))}</td>"
        f"<td class='text small'>{esc(short(s.thread.metadata, 200))}</td></tr>"
        for s in found.items
    )
    base = path_of("users", user_id, "threads")
    params = {
        "order": None if order == "newest" else order,
        "per_page": None if paging.per_page == 50 else paging.per_page,
    }
    other = "oldest" if order == "newest" else "newest"
    body = (
        f"<p class='small'>{esc(order)} first · "
        + link(
            base + ("?order=oldest" if other == "oldest" else ""),
            f"{other} first",
            id="thread-order",
        )
        + "</p>"
        + pager(
            base,
            params,
            page=paging.page,
            per_page=paging.per_page,
            total=found.total,
            unit="threads",
        )
        + table(
            "threads",
            ["thread", "agent", "messages", "last message", "created", "metadata"],
            rows,
            "This user has no threads.",
        )
    )
    return user_frame(request, session, user_id, "Threads", body)

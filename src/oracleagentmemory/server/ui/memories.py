"""A memory's page and its actions: where it came from (the source messages of an extracted
memory, each a link into its thread), its thread, its typed links to other memories, its
history (every version: when, who, what changed, the content after it); the edit form; and
deleting it, which takes a confirmation page first (a plain form: it works without
JavaScript). Every post carries the session's CSRF token and must come from this server's
own page; its changes name the session's key in the memory's history."""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core._client.search._search import IMAGE_SOURCE_PREFIX
from oracleagentmemory.core._shared._actor import acting_as
from oracleagentmemory.server.deps import json_object, owned_memory, state_of
from oracleagentmemory.server.security import actor_of
from oracleagentmemory.server.ui.render import (
    esc,
    link,
    memory_link,
    message_href,
    page,
    path_of,
    short,
    status_of,
    status_tag,
    table,
    tag,
    text_of,
    thread_link,
    user_link,
    when,
    with_query,
)
from oracleagentmemory.server.ui.session import Session, check_form, need_session, ui_route
from oracleagentmemory.server.ui.users import notice, overview

router = APIRouter(prefix="/ui", include_in_schema=False)
MAX_SHOWN: Final = 200
"""The most source messages and links a memory's page lists."""


def _crumbs(record: Any) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = [("Users", "/ui")]
    if record.user_id:
        out.append((record.user_id, path_of("users", record.user_id)))
    return [*out, (record.id, None)]


def _details(record: Any, expires: str | None) -> str:
    st = status_of(record)
    return (
        "<dl class='kv' id='memory'>"
        f"<dt>type</dt><dd>{tag(record.record_type)}</dd>"
        f"<dt>content</dt><dd class='text' id='content'>{esc(text_of(record.content))}</dd>"
        f"<dt>status</dt><dd>{status_tag(st)}</dd>"
        f"<dt>user</dt><dd>{user_link(record.user_id) or 'none'}</dd>"
        f"<dt>agent</dt><dd>{esc(record.agent_id) or 'none'}</dd>"
        f"<dt>thread</dt><dd id='memory-thread'>{thread_link(record.thread_id) or 'none'}</dd>"
        f"<dt>time</dt><dd>{esc(when(record.timestamp))}</dd>"
        f"<dt>expires</dt><dd>{esc(when(expires) if expires else 'never')}</dd>"
        + _validity(record)
        + f"<dt>metadata</dt><dd class='text'>{esc(text_of(record.metadata)) or 'none'}</dd></dl>"
    )


def _validity(record: Any) -> str:
    """When the memory was true, and when it last changed (None where the store does not
    know: a schema older than 16)."""
    since = getattr(record, "valid_from", None)
    if since is None:
        return ""
    until = getattr(record, "valid_until", None)
    changed = getattr(record, "updated_at", None)
    return (
        f"<dt>true</dt><dd id='validity'>from {esc(when(since))} "
        f"{'until ' + esc(when(until)) if until else 'on (still true)'}</dd>"
        f"<dt>changed</dt><dd>{esc(when(changed)) if changed else 'not since created'}</dd>"
    )


def _sources(state: Any, session: Session, record: Any) -> str:
    """The provenance of an extracted memory: its source messages (linked into their
    thread), its source images, and how many sources no longer exist."""
    found = state.client.store.memory_sources([record.id]).get(record.id, ())
    if not found:
        return (
            "<h2>Source messages (0)</h2><p class='muted' id='sources-none'>Added directly"
            " (not extracted from messages).</p>"
        )
    images = [s[len(IMAGE_SOURCE_PREFIX) :] for s in found if s.startswith(IMAGE_SOURCE_PREFIX)]
    ids = [s for s in found if not s.startswith(IMAGE_SOURCE_PREFIX)][:MAX_SHOWN]
    messages = overview(state).messages_by_id(ids)
    shown = sorted(
        (m for m in messages.values() if session.key.allows(m.user_id)),
        key=lambda m: (m.thread_id or "", m.seq_no or 0),
    )
    rows = (
        f"<tr><td class='id'>{thread_link(m.thread_id, at=m.seq_no)}</td>"
        f"<td class='num'>{link(message_href(m.thread_id or '', m.seq_no), f'#{m.seq_no}')}"
        "</td>"
        f"<td>{tag(m.role or 'message')}</td><td class='text'>{esc(text_of(m.content))}</td>"
        f"<td class='when'>{esc(when(m.timestamp))}</td></tr>"
        for m in shown
    )
    gone = len(ids) - len(shown)
    extra = ""
    if gone:
        extra += f"<p class='muted small'>{gone} source message(s) no longer exist.</p>"
    if images:
        extra += (
            "<p class='small'>Source images: "
            + ", ".join(f"<code>{esc(i)}</code>" for i in images)
            + "</p>"
        )
    return (
        f"<h2>Source messages ({len(shown)})</h2>"
        + table("sources", ["thread", "message", "role", "content", "time"], rows, "none")
        + extra
    )


def _links(state: Any, session: Session, record: Any) -> str:
    store = state.client.store
    mid, mtype = record.id, record.record_type
    rels = store.list_relations(
        source_record_id=mid, source_record_type=mtype, limit=MAX_SHOWN
    ) + store.list_relations(target_record_id=mid, target_record_type=mtype, limit=MAX_SHOWN)
    rows = []
    for r in rels:
        outgoing = r.source_record_id == mid and r.source_record_type == mtype
        other_id = r.target_record_id if outgoing else r.source_record_id
        other_type = r.target_record_type if outgoing else r.source_record_type
        label = r.relation_type if outgoing else r.opposite_relation_type
        other = store.get(other_type, other_id) if other_type in MEMORY_RECORD_TYPES else None
        if other is not None and not session.key.allows(other.user_id):
            other = None
        target = memory_link(other_id) if other is not None else f"<code>{esc(other_id)}</code>"
        rows.append(
            f"<tr><td>{esc(label)}</td><td class='small'>{'→' if outgoing else '←'}</td>"
            f"<td>{tag(other_type)}</td><td class='id'>{target}</td>"
            f"<td class='text'>{esc(short(other.content, 200)) if other else ''}</td>"
            f"<td class='when'>{esc(when(r.created_at))}</td></tr>"
        )
    return f"<h2>Links ({len(rels)})</h2>" + table(
        "links",
        ["relation", "", "type", "memory", "content", "linked"],
        rows,
        "This memory has no links.",
    )


def _history(state: Any, session: Session, record: Any) -> str:
    """The memory's versions, newest first (``get_memory_history``)."""
    versions = [
        v for v in state.client.get_memory_history(record.id) if session.key.allows(v.user_id)
    ]
    rows = (
        f"<tr><td class='num'>{v.version}</td><td>{tag(v.change)}</td>"
        f"<td class='when'>{esc(when(v.at.isoformat()))}</td>"
        f"<td class='id'>{esc(v.actor or '')}</td>"
        f"<td class='small'>{esc(', '.join(v.changed))}</td>"
        f"<td class='text'>{esc(short(v.content, 200)) if v.content is not None else ''}</td>"
        f"<td>{status_tag(v.status.value) if v.status is not None else ''}</td></tr>"
        for v in reversed(versions[-MAX_SHOWN:])
    )
    return f"<h2>History ({len(versions)})</h2>" + table(
        "history",
        ["version", "change", "when", "who", "changed", "content", "status"],
        rows,
        "No versions recorded.",
    )


def _edit_form(session: Session, record: Any) -> str:
    st = status_of(record)
    opts = "".join(
        f'<option value="{s}"{" selected" if s == st else ""}>{s}</option>'
        for s in ("valid", "invalid")
    )
    meta = "" if record.metadata is None else text_of(record.metadata)
    action = path_of("memories", record.id, "edit")
    return (
        f'<h2>Edit</h2><form method="post" action="{esc(action)}" id="edit" class="stack">'
        f"{session.field}<label for='edit-content'>content</label>"
        f'<textarea name="content" id="edit-content">{esc(text_of(record.content))}</textarea>'
        f'<div class="row"><div><label for="edit-status">status</label>'
        f'<select name="status" id="edit-status">{opts}</select></div>'
        f'<div><label for="edit-metadata">metadata (a JSON object)</label>'
        f'<input type="text" name="metadata" id="edit-metadata" value="{esc(meta)}"></div></div>'
        '<div class="actions"><button id="save">save</button>'
        + link(
            path_of("memories", record.id, "delete"),
            "delete…",
            class_="button danger",
            id="delete-link",
        )
        + "</div></form>"
    )


@router.get("/memories/{memory_id:id}", response_class=HTMLResponse)
@ui_route
def memory_page(request: Request, memory_id: str) -> Response:
    session = need_session(request)
    state = state_of(request)
    record = owned_memory(state, session.key, memory_id)
    key = (record.record_type, record.id)
    body = (
        notice(request)
        + "<div class='split'><div>"
        + f"<div class='panel'>{_details(record, state.expiries([key]).get(key))}</div>"
        + _sources(state, session, record)
        + _links(state, session, record)
        + _history(state, session, record)
        + f"</div><div class='panel'>{_edit_form(session, record)}</div></div>"
    )
    return page(f"Memory {memory_id}", body, nav=session.nav(), crumbs=_crumbs(record))


@router.post("/memories/{memory_id:id}/edit")
@ui_route
def memory_edit(
    request: Request,
    memory_id: str,
    content: Annotated[str, Form()] = "",
    status: Annotated[str, Form()] = "valid",
    metadata: Annotated[str, Form()] = "",
    csrf: Annotated[str, Form()] = "",
) -> Response:
    session = need_session(request)
    check_form(request, session, csrf)
    state = state_of(request)
    owned_memory(state, session.key, memory_id)
    meta = json_object(metadata, "metadata")
    with acting_as(actor_of(session.key)):
        state.client.update_memory(memory_id, content=content, status=status, metadata=meta)
    done = with_query(path_of("memories", memory_id), {"done": "saved", "id": memory_id})
    return RedirectResponse(done, status_code=303)


@router.get("/memories/{memory_id:id}/delete", response_class=HTMLResponse)
@ui_route
def memory_delete_confirm(request: Request, memory_id: str) -> Response:
    """The confirmation step: what will be deleted, a form to do it and a way back."""
    session = need_session(request)
    state = state_of(request)
    record = owned_memory(state, session.key, memory_id)
    links = overview(state).link_counts([memory_id]).get(memory_id, 0)
    back = path_of("memories", memory_id)
    body = (
        "<div class='confirm' id='confirm'><p><strong>Delete this memory for good?</strong> "
        f"It cannot be undone; its {links} link(s) go with it.</p>"
        f"<p>{tag(record.record_type)} <span class='text'>{esc(text_of(record.content))}"
        "</span></p>"
        f'<form method="post" action="{esc(path_of("memories", memory_id, "delete"))}" '
        f'id="delete" class="actions">{session.field}'
        '<button class="danger" id="confirm-delete">delete</button>'
        + link(back, "cancel", class_="button plain", id="cancel")
        + "</form></div>"
    )
    return page(f"Delete memory {memory_id}?", body, nav=session.nav(), crumbs=_crumbs(record))


@router.post("/memories/{memory_id:id}/delete")
@ui_route
def memory_delete(request: Request, memory_id: str, csrf: Annotated[str, Form()] = "") -> Response:
    session = need_session(request)
    check_form(request, session, csrf)
    state = state_of(request)
    record = owned_memory(state, session.key, memory_id)
    with acting_as(actor_of(session.key)):
        state.client.delete_memory(memory_id)
    params = {"done": "deleted", "id": memory_id}
    target = path_of("users", record.user_id) if record.user_id else "/ui"
    return RedirectResponse(with_query(target, params), status_code=303)

"""Adding a memory from ``/ui``: a form on the user's page (content, type, optional agent
and thread, TTL, metadata) and its post. A value the store refuses re-shows the form with
the values given and the reason (400; 409 for a thread of another user)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core._shared._actor import acting_as
from oracleagentmemory.core.store._limits import MAX_ID_CHARS, MAX_TTL_DAYS
from oracleagentmemory.core.store._threads import ThreadOwnershipError
from oracleagentmemory.server.deps import json_object, state_of, thread_scope
from oracleagentmemory.server.errors import ApiError
from oracleagentmemory.server.security import actor_of
from oracleagentmemory.server.state import require_user
from oracleagentmemory.server.ui.render import esc, path_of, with_query
from oracleagentmemory.server.ui.session import Session, check_form, need_session, ui_route
from oracleagentmemory.server.ui.users import overview, user_frame

router = APIRouter(prefix="/ui", include_in_schema=False)
THREADS_OFFERED = 50


def _form(
    request: Request,
    session: Session,
    user_id: str,
    values: dict[str, str],
    error: str = "",
    status: int = 200,
) -> HTMLResponse:
    ov = overview(state_of(request))
    agents = "".join(f'<option value="{esc(a)}">' for a in ov.agents_of(user_id))
    threads = "".join(
        f'<option value="{esc(s.thread.id)}">'
        for s in ov.threads(user_id=user_id, limit=THREADS_OFFERED).items
    )
    types = "".join(
        f'<option value="{t}"{" selected" if t == values.get("memory_type") else ""}>{t}</option>'
        for t in MEMORY_RECORD_TYPES
    )
    err = f'<p class="err" id="create-error">{esc(error)}</p>' if error else ""
    body = err + (
        f'<form method="post" action="{esc(path_of("users", user_id, "memories"))}" '
        f'id="create" class="stack">{session.field}'
        "<label for='new-content'>content</label>"
        f'<textarea name="content" id="new-content" required>{esc(values.get("content"))}'
        "</textarea><div class='row'>"
        f"<div><label for='new-type'>type</label><select name='memory_type' id='new-type'>"
        f"{types}</select></div>"
        "<div><label for='new-agent'>agent (optional)</label><input type='text' "
        f"name='agent_id' id='new-agent' list='agents' value='{esc(values.get('agent_id'))}'>"
        f"<datalist id='agents'>{agents}</datalist></div>"
        "<div><label for='new-thread'>thread (optional)</label><input type='text' "
        f"name='thread_id' id='new-thread' list='threads' "
        f"value='{esc(values.get('thread_id'))}'><datalist id='threads'>{threads}</datalist>"
        "</div><div><label for='new-ttl'>expires after (days; blank: the store's default)"
        f"</label><input type='number' name='ttl_days' id='new-ttl' min='1' "
        f"max='{MAX_TTL_DAYS}' value='{esc(values.get('ttl_days'))}'></div></div>"
        "<label for='new-metadata'>metadata (a JSON object, optional)</label>"
        "<input type='text' name='metadata' id='new-metadata' "
        f"value='{esc(values.get('metadata'))}'>"
        "<div class='actions'><button id='create-button'>add memory</button></div></form>"
    )
    return user_frame(request, session, user_id, "Add memory", body, status=status)


@router.get("/users/{user_id:id}/memories/new", response_class=HTMLResponse)
@ui_route
def new_memory(request: Request, user_id: str) -> Response:
    session = need_session(request)
    require_user(session.key, user_id)
    return _form(request, session, user_id, {"memory_type": "memory"})


def _arguments(values: dict[str, str]) -> dict[str, Any]:
    """The ``add_memory`` arguments of the form; ApiError 400 naming a bad field."""
    if not values["content"].strip():
        raise ApiError(400, "content: a memory needs some text")
    if values["memory_type"] not in MEMORY_RECORD_TYPES:
        raise ApiError(400, f"memory_type: must be one of {', '.join(MEMORY_RECORD_TYPES)}")
    out: dict[str, Any] = {"memory_type": values["memory_type"]}
    for name in ("agent_id", "thread_id"):
        value = values[name].strip()
        if value:
            if len(value) > MAX_ID_CHARS:
                raise ApiError(400, f"{name}: ids have at most {MAX_ID_CHARS} characters")
            out[name] = value
    ttl = values["ttl_days"].strip()
    if ttl:
        if not (ttl.isascii() and ttl.isdigit() and 1 <= int(ttl) <= MAX_TTL_DAYS):
            raise ApiError(
                400, f"ttl_days: must be a whole number of days from 1 to {MAX_TTL_DAYS}, or blank"
            )
        out["ttl_days"] = int(ttl)
    meta = json_object(values["metadata"], "metadata")
    if meta is not None:
        out["metadata"] = meta
    return out


@router.post("/users/{user_id:id}/memories")
@ui_route
def create_memory(
    request: Request,
    user_id: str,
    content: Annotated[str, Form()] = "",
    memory_type: Annotated[str, Form()] = "memory",
    agent_id: Annotated[str, Form()] = "",
    thread_id: Annotated[str, Form()] = "",
    ttl_days: Annotated[str, Form()] = "",
    metadata: Annotated[str, Form()] = "",
    csrf: Annotated[str, Form()] = "",
) -> Response:
    session = need_session(request)
    check_form(request, session, csrf)
    require_user(session.key, user_id)
    values = {
        "content": content,
        "memory_type": memory_type,
        "agent_id": agent_id,
        "thread_id": thread_id,
        "ttl_days": ttl_days,
        "metadata": metadata,
    }
    state = state_of(request)
    try:
        kwargs = _arguments(values)
        kwargs["user_id"] = user_id
        if "thread_id" in kwargs:  # the thread's scope, as over REST and thread.add_memory
            kwargs.update(
                thread_scope(
                    state, session.key, kwargs["thread_id"], user_id, kwargs.get("agent_id")
                )
            )
        with acting_as(actor_of(session.key)):  # named in the memory's history
            memory_id = state.client.add_memory(content, **kwargs)
    except ApiError as exc:
        return _form(request, session, user_id, values, exc.message, exc.status)
    except ThreadOwnershipError as exc:
        return _form(request, session, user_id, values, str(exc), 409)
    except (ValueError, TypeError) as exc:
        return _form(request, session, user_id, values, str(exc), 400)
    done = with_query(path_of("memories", memory_id), {"done": "created", "id": memory_id})
    return RedirectResponse(done, status_code=303)

"""Shared route helpers: the caller's key, record serialisation, ownership checks, pages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

import oracleagentmemory.server.paths  # noqa: F401 - registers the {name:id} convertor
from oracleagentmemory.admin.apikeys import ApiKey
from oracleagentmemory.server.errors import ApiError
from oracleagentmemory.server.models import LinkOut, Page, RecordOut
from oracleagentmemory.server.state import ServerState

bearer = HTTPBearer(auto_error=False, description="an API key from `oam keys create`")
MEMORY_TYPES = ("memory", "guideline", "fact", "preference")


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.oam
    return state


def api_key(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> ApiKey:
    """The caller's key (401 when missing or invalid)."""
    verified = request.scope.get("oam.api_key")  # by EndUserRoles (server/end_users.py)
    if verified is not None:
        return verified  # type: ignore[no-any-return]
    state = state_of(request)
    if credentials is None:
        return state.authenticate(request.headers.get("authorization"))
    return state.authenticate(f"Bearer {credentials.credentials}")


Key = Annotated[ApiKey, Depends(api_key)]
State = Annotated[ServerState, Depends(state_of)]
Limit = Annotated[int, Query(ge=1, le=1000, description="page size")]
Offset = Annotated[int, Query(ge=0, le=10_000_000, description="items to skip")]


def json_object(text: str | None, name: str) -> dict[str, Any] | None:
    """A form field holding a JSON object (None when blank); ValueError naming the field for
    anything else, however deeply nested (no RecursionError escapes)."""
    if text is None or not text.strip():
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"{name} must be a JSON object") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object")
    return value


def record_out(record: Any, expires_at: str | None = None) -> RecordOut:
    status = getattr(record, "status", "valid")
    mime = getattr(record, "mime_type", None)
    content = record.content
    if content is not None and not isinstance(content, str | dict):
        content = str(content)
    return RecordOut(
        id=record.id,
        record_type=record.record_type,
        content=content,
        timestamp=record.timestamp,
        metadata=record.metadata,
        status=str(getattr(status, "value", status)),
        thread_id=getattr(record, "thread_id", None),
        user_id=getattr(record, "user_id", None),
        agent_id=getattr(record, "agent_id", None),
        role=getattr(record, "role", None),
        seq_no=getattr(record, "seq_no", None),
        mime_type=None if mime is None else str(getattr(mime, "value", mime)),
        expires_at=expires_at,
        updated_at=getattr(record, "updated_at", None),
        valid_from=getattr(record, "valid_from", None),
        valid_until=getattr(record, "valid_until", None),
    )


def records_out(state: ServerState, records: Sequence[Any]) -> list[RecordOut]:
    exp = state.expiries([(r.record_type, r.id) for r in records])
    return [record_out(r, exp.get((r.record_type, r.id))) for r in records]


def link_out(rel: Any) -> LinkOut:
    return LinkOut(
        id=rel.id,
        source_record_id=rel.source_record_id,
        source_record_type=rel.source_record_type,
        target_record_id=rel.target_record_id,
        target_record_type=rel.target_record_type,
        relation_type=rel.relation_type,
        opposite_relation_type=rel.opposite_relation_type,
        timestamp=rel.timestamp,
        metadata=rel.metadata,
    )


def page(state: ServerState, found: Any) -> Page:
    """A page the store read with ``LIMIT``/``OFFSET`` (``store.overview``), its ``total``
    counted in SQL: a route never loads more rows than it answers with."""
    nxt = found.offset + found.limit
    return Page(
        items=records_out(state, found.items),
        total=found.total,
        offset=found.offset,
        limit=found.limit,
        next_offset=nxt if nxt < found.total else None,
    )


def overview(state: ServerState) -> Any:
    """The store's paged reads (``core/store/_overview``)."""
    return state.client.store.overview


def find_memory(state: ServerState, memory_id: str) -> Any:
    """The memory-like record with this id (404 when none)."""
    store = state.client.store
    for rtype in MEMORY_TYPES:
        record = store.get(rtype, memory_id)
        if record is not None:
            return record
    raise ApiError(404, f"no memory with id {memory_id!r}")


def owned_memory(state: ServerState, key: ApiKey, memory_id: str) -> Any:
    """The memory-like record ``memory_id`` when the key may touch its user; 404 otherwise,
    the same answer as for an id that does not exist."""
    try:
        record = find_memory(state, memory_id)
    except ApiError:
        record = None
    return _visible(key, record, f"no memory with id {memory_id!r}")


def owned_thread(state: ServerState, key: ApiKey, thread_id: str) -> Any:
    """The thread row ``thread_id`` when the key may touch its user; 404 otherwise."""
    record = state.client.store.get("thread", thread_id)
    return _visible(key, record, f"no thread with id {thread_id!r}")


def thread_scope(
    state: ServerState, key: ApiKey, thread_id: str, user_id: str | None, agent_id: str | None
) -> dict[str, Any]:
    """The scope of a write naming a thread: the thread's own user and agent, as
    ``thread.add_memory`` gives (404 for no such thread; 409 for a thread of a user the key
    may not touch, as for a taken thread id, or when the request names another user or agent
    than the thread's; under row security a thread of a user the key may not touch is 404,
    as an unknown one)."""
    owner = state.client.store.thread_owner(thread_id)  # also a thread id only rows name
    if owner is None:
        raise ApiError(404, f"no thread with id {thread_id!r}")
    owner_user, owner_agent = owner
    if not key.allows(owner_user) and under_row_security(state, key):
        raise ApiError(404, f"no thread with id {thread_id!r}")  # invisible: as unknown
    if not key.allows(owner_user) or (user_id is not None and user_id != owner_user):
        raise ApiError(409, f"thread {thread_id!r} belongs to another user")
    if agent_id is not None and agent_id != owner_agent:
        raise ApiError(
            409, f"thread {thread_id!r} belongs to agent {owner_agent!r}, not {agent_id!r}"
        )
    return {"thread_id": thread_id, "user_id": owner_user, "agent_id": owner_agent}


def under_row_security(state: ServerState, key: ApiKey) -> bool:
    """Whether this key's requests run as its user's database role (``--end-user-roles``,
    ``server/end_users``): one user, not admin. Such a key sees only its user's rows, so it
    learns nothing of other rows' existence: it may not choose record ids (an id another
    user took would answer otherwise than a fresh one), and another user's thread is an
    unknown thread (docs/operations/security.md, "No existence oracle")."""
    return bool(state.settings.end_user_roles) and not key.admin and len(key.user_ids) == 1


def server_chosen_ids(state: ServerState, key: ApiKey, **chosen: Any) -> None:
    """400 for any id in ``chosen`` (field name -> value, None: left out) when the key runs
    under row security (:func:`under_row_security`): checked before anything is read, so
    the answer is the same whether or not the id exists."""
    if not under_row_security(state, key):
        return
    for name, value in chosen.items():
        if value is not None:
            raise ApiError(
                400, f"{name}: under row security the server chooses record ids; leave {name} out"
            )


def owned_image(state: ServerState, key: ApiKey, image_id: str, *, with_bytes: bool = False) -> Any:
    """The image ``image_id`` when the key may touch its user; 404 otherwise."""
    record = state.client.store.get("image", image_id, include_bytes=with_bytes)
    return _visible(key, record, f"no image with id {image_id!r}")


def _visible(key: ApiKey, record: Any, missing: str) -> Any:
    """``record`` if it exists and the key may touch its user; else 404 ``missing``, so that
    another user's record cannot be told from an absent one."""
    if record is None or not key.allows(record.user_id):
        raise ApiError(404, missing)
    return record

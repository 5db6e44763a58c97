"""Threads, their messages, context cards and summaries, and images (multipart)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Response, UploadFile, status

from oracleagentmemory.core._client.messages._images import sniff_mime_type
from oracleagentmemory.server.api import results_out, search_kwargs
from oracleagentmemory.server.deps import (
    Key,
    Limit,
    Offset,
    State,
    json_object,
    overview,
    owned_image,
    owned_thread,
    page,
    records_out,
    server_chosen_ids,
    thread_scope,
)
from oracleagentmemory.server.errors import ERROR_RESPONSES, ApiError
from oracleagentmemory.server.models import (
    Deleted,
    Ids,
    MessagesIn,
    Page,
    RecordOut,
    SearchOut,
    Text,
    ThreadIn,
    ThreadPatch,
    ThreadSearchIn,
)
from oracleagentmemory.server.state import require_user

router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES)


@router.post(
    "/threads",
    tags=["threads"],
    status_code=status.HTTP_201_CREATED,
    summary="Create a thread for a user",
)
def create_thread(body: ThreadIn, state: State, key: Key) -> RecordOut:
    require_user(key, body.user_id)
    server_chosen_ids(state, key, thread_id=body.thread_id)
    # Without agent_id the thread has no agent (the SDK would generate an id no one knows).
    kwargs: dict[str, Any] = {"user_id": body.user_id, "agent_id": body.agent_id}
    for name in ("thread_id", "metadata"):
        value = getattr(body, name)
        if value is not None:
            kwargs[name] = value
    if body.thread_id is not None and state.client.store.get("thread", body.thread_id):
        raise ApiError(409, f"thread {body.thread_id!r} already exists")
    thread = state.client.create_thread(**kwargs)  # 409 for another user's thread id
    return records_out(state, [state.client.store.get("thread", thread.thread_id)])[0]


@router.get("/threads", tags=["threads"], summary="A user's threads, oldest first")
def list_threads(
    state: State,
    key: Key,
    user_id: str = Query(min_length=1, max_length=256),
    agent_id: str | None = Query(None, min_length=1, max_length=256),
    limit: Limit = 100,
    offset: Offset = 0,
) -> Page:
    require_user(key, user_id)
    kwargs: dict[str, Any] = {"user_id": user_id, "limit": limit, "offset": offset}
    if agent_id is not None:
        kwargs["agent_id"] = agent_id
    return page(state, overview(state).records(["thread"], **kwargs))


@router.get("/threads/{thread_id:id}", tags=["threads"], summary="One thread")
def get_thread(thread_id: str, state: State, key: Key) -> RecordOut:
    return records_out(state, [owned_thread(state, key, thread_id)])[0]


@router.patch("/threads/{thread_id:id}", tags=["threads"], summary="Replace a thread's metadata")
def update_thread(thread_id: str, body: ThreadPatch, state: State, key: Key) -> RecordOut:
    owned_thread(state, key, thread_id)
    state.client.update_thread(thread_id, metadata=body.metadata)
    return records_out(state, [state.client.store.get("thread", thread_id)])[0]


@router.delete(
    "/threads/{thread_id:id}",
    tags=["threads"],
    summary="Delete a thread with its messages and thread memories",
)
def delete_thread(thread_id: str, state: State, key: Key) -> Deleted:
    owned_thread(state, key, thread_id)
    return Deleted(deleted=state.client.delete_thread(thread_id))


@router.post(
    "/threads/{thread_id:id}/messages",
    tags=["messages"],
    status_code=status.HTTP_201_CREATED,
    summary="Append messages to a thread",
)
def add_messages(thread_id: str, body: MessagesIn, state: State, key: Key) -> Ids:
    chosen = next((m.id for m in body.messages if m.id is not None), None)
    server_chosen_ids(state, key, **{"messages.id": chosen})
    owned_thread(state, key, thread_id)
    thread = state.client.get_thread(thread_id)
    msgs = [m.model_dump(exclude_none=True) for m in body.messages]
    kwargs: dict[str, Any] = {}
    if body.ttl_days is not None:
        kwargs["ttl_days"] = body.ttl_days
    return Ids(ids=thread.add_messages(msgs, **kwargs))


@router.get(
    "/threads/{thread_id:id}/messages", tags=["messages"], summary="A thread's messages in order"
)
def list_messages(
    thread_id: str, state: State, key: Key, limit: Limit = 100, offset: Offset = 0
) -> Page:
    owned_thread(state, key, thread_id)
    return page(state, overview(state).thread_messages(thread_id, limit=limit, offset=offset))


@router.delete(
    "/threads/{thread_id:id}/messages/{message_id:id}",
    tags=["messages"],
    summary="Delete one message",
)
def delete_message(thread_id: str, message_id: str, state: State, key: Key) -> Deleted:
    owned_thread(state, key, thread_id)
    return Deleted(deleted=state.client.get_thread(thread_id).delete_message(message_id))


@router.get(
    "/threads/{thread_id:id}/context-card",
    tags=["threads"],
    summary="The thread's context card (prompt-ready text)",
)
def context_card(
    thread_id: str,
    state: State,
    key: Key,
    max_relevant_results: int | None = Query(None, ge=0, le=200),
    max_recent_messages: int | None = Query(None, ge=0, le=200),
) -> Text:
    owned_thread(state, key, thread_id)
    kwargs: dict[str, Any] = {}
    if max_relevant_results is not None:
        kwargs["max_relevant_results"] = max_relevant_results
    if max_recent_messages is not None:
        kwargs["max_recent_messages"] = max_recent_messages
    card = state.client.get_thread(thread_id).get_context_card(**kwargs)
    return Text(content=card.content)


@router.get("/threads/{thread_id:id}/summary", tags=["threads"], summary="The thread's summary")
def summary(
    thread_id: str,
    state: State,
    key: Key,
    token_budget: int | None = Query(None, ge=1, le=1_000_000),
) -> Text:
    owned_thread(state, key, thread_id)
    kwargs: dict[str, Any] = {}
    if token_budget is not None:
        kwargs["token_budget"] = token_budget
    return Text(content=state.client.get_thread(thread_id).get_summary(**kwargs).content)


@router.post(
    "/threads/{thread_id:id}/search",
    tags=["search"],
    summary="Search from a thread (its user and agent, this thread preferred)",
)
def thread_search(thread_id: str, body: ThreadSearchIn, state: State, key: Key) -> SearchOut:
    owned_thread(state, key, thread_id)
    client = state.client_for(body.strategy)
    kwargs = search_kwargs(body)
    if body.exact_thread_match:
        kwargs["exact_thread_match"] = True
    return results_out(state, client.get_thread(thread_id).search(body.query, **kwargs))


# ---------------------------------------------------------------------------- images


@router.post(
    "/images",
    tags=["images"],
    status_code=status.HTTP_201_CREATED,
    summary="Upload an image (multipart: file, user_id, description, ...)",
)
def add_image(
    state: State,
    key: Key,
    file: Annotated[UploadFile, File(description="PNG, JPEG or WEBP bytes")],
    user_id: Annotated[str, Form(min_length=1, max_length=256)],
    description: Annotated[str | None, Form(max_length=10_000)] = None,
    thread_id: Annotated[str | None, Form(min_length=1, max_length=256)] = None,
    agent_id: Annotated[str | None, Form(min_length=1, max_length=256)] = None,
    metadata: Annotated[str | None, Form(description="a JSON object", max_length=100_000)] = None,
) -> RecordOut:
    require_user(key, user_id)
    kwargs: dict[str, Any] = {"user_id": user_id}
    if thread_id is not None:
        kwargs.update(thread_scope(state, key, thread_id, user_id, agent_id))
    elif agent_id is not None:
        kwargs["agent_id"] = agent_id
    if description is not None:
        kwargs["description"] = description
    meta = json_object(metadata, "metadata")
    if meta is not None:
        kwargs["metadata"] = meta
    data = file.file.read()
    kwargs["mime_type"] = _checked_type(data, file.content_type)
    image_id = state.client.add_image(data, **kwargs)
    return records_out(state, [state.client.store.get("image", image_id)])[0]


def _checked_type(data: bytes, declared: str | None) -> str:
    """The uploaded file's image type, read from its own signature: 415 unless the bytes
    are a PNG, JPEG or WEBP image of the declared type (when one is declared)."""
    found = sniff_mime_type(data)
    if found is None:
        raise ApiError(
            415,
            "the file is not a PNG, JPEG or WEBP image (its bytes do not "
            "start with one of their signatures)",
        )
    if declared and declared.startswith("image/") and declared.lower() != found.value:
        raise ApiError(415, f"the file was sent as {declared} but its bytes are {found.value}")
    return found.value


@router.get("/images", tags=["images"], summary="A user's images (without bytes)")
def list_images(
    state: State,
    key: Key,
    user_id: str = Query(min_length=1, max_length=256),
    limit: Limit = 100,
    offset: Offset = 0,
) -> Page:
    require_user(key, user_id)
    return page(
        state, overview(state).records(["image"], user_id=user_id, limit=limit, offset=offset)
    )


@router.get("/images/{image_id:id}", tags=["images"], summary="One image's record")
def get_image(image_id: str, state: State, key: Key) -> RecordOut:
    return records_out(state, [owned_image(state, key, image_id)])[0]


@router.get(
    "/images/{image_id:id}/content",
    tags=["images"],
    summary="The image's bytes",
    response_class=Response,
    responses={200: {"content": {"image/*": {}}, "description": "the image"}},
)
def image_content(image_id: str, state: State, key: Key) -> Response:
    record = owned_image(state, key, image_id, with_bytes=True)
    mime = str(getattr(record.mime_type, "value", record.mime_type))
    data = record.bytes or b""
    found = sniff_mime_type(data)
    if found is None or found.value != mime:  # stored through the SDK, unchecked: download only
        return Response(
            content=data,
            media_type="application/octet-stream",
            headers={"content-disposition": "attachment"},
        )
    return Response(content=data, media_type=mime)


@router.delete("/images/{image_id:id}", tags=["images"], summary="Delete an image")
def delete_image(image_id: str, state: State, key: Key) -> Deleted:
    owned_image(state, key, image_id)
    return Deleted(deleted=state.client.delete_image(image_id))

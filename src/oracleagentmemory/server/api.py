"""The client API over HTTP: users and agents, memories, links, search, purge."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, status

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.server.deps import (
    Key,
    Limit,
    Offset,
    State,
    link_out,
    overview,
    owned_memory,
    page,
    record_out,
    records_out,
    server_chosen_ids,
    thread_scope,
)
from oracleagentmemory.server.errors import ERROR_RESPONSES, ApiError
from oracleagentmemory.server.models import (
    Deleted,
    ExtractionStats,
    LinkedOut,
    LinkIn,
    LinkOut,
    MemoryIn,
    MemoryPatch,
    Page,
    ProfileIn,
    PurgeIn,
    RecordOut,
    ResultOut,
    SearchIn,
    SearchOut,
    VersionOut,
)
from oracleagentmemory.server.state import require_admin, require_user

router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES)


# ---------------------------------------------------------------------------- users, agents


@router.get("/users", tags=["users"], summary="User profiles this key may access")
def list_users(state: State, key: Key, limit: Limit = 100, offset: Offset = 0) -> Page:
    ids = None if key.admin else sorted(key.user_ids)
    return page(
        state, overview(state).records(["user_profile"], ids=ids, limit=limit, offset=offset)
    )


@router.post(
    "/users", tags=["users"], status_code=status.HTTP_201_CREATED, summary="Add a user profile"
)
def add_user(body: ProfileIn, state: State, key: Key) -> RecordOut:
    require_user(key, body.id)
    state.client.add_user(body.id, body.information, body.metadata)
    return record_out(state.client.store.get("user_profile", body.id))


@router.get("/users/{user_id:id}", tags=["users"], summary="A user profile")
def get_user(user_id: str, state: State, key: Key) -> RecordOut:
    require_user(key, user_id)
    record = state.client.store.get("user_profile", user_id)
    if record is None:
        raise ApiError(404, f"no user profile {user_id!r}")
    return record_out(record)


@router.delete(
    "/users/{user_id:id}",
    tags=["users"],
    summary="Delete a user (and, with cascade, all their threads and memories)",
)
def delete_user(user_id: str, state: State, key: Key, cascade: bool = True) -> Deleted:
    require_user(key, user_id)
    return Deleted(deleted=state.client.delete_user(user_id, cascade=cascade))


@router.get(
    "/agents",
    tags=["agents"],
    summary="Agent profiles (a user key: the agents of its users' threads)",
)
def list_agents(state: State, key: Key, limit: Limit = 100, offset: Offset = 0) -> Page:
    users = None if key.admin else sorted(key.user_ids)
    return page(
        state,
        overview(state).records(
            ["agent_profile"], agents_of_users=users, limit=limit, offset=offset
        ),
    )


@router.post(
    "/agents",
    tags=["agents"],
    status_code=status.HTTP_201_CREATED,
    summary="Add an agent profile (admin key)",
)
def add_agent(body: ProfileIn, state: State, key: Key) -> RecordOut:
    require_admin(key)
    state.client.add_agent(body.id, body.information, body.metadata)
    return record_out(state.client.store.get("agent_profile", body.id))


@router.delete("/agents/{agent_id:id}", tags=["agents"], summary="Delete an agent (admin key)")
def delete_agent(agent_id: str, state: State, key: Key, cascade: bool = True) -> Deleted:
    require_admin(key)
    return Deleted(deleted=state.client.delete_agent(agent_id, cascade=cascade))


# ---------------------------------------------------------------------------- memories


@router.post(
    "/memories", tags=["memories"], status_code=status.HTTP_201_CREATED, summary="Add a memory"
)
def add_memory(body: MemoryIn, state: State, key: Key) -> RecordOut:
    require_user(key, body.user_id)
    server_chosen_ids(state, key, memory_id=body.memory_id)
    kwargs: dict[str, Any] = {
        "memory_type": body.memory_type,
        "user_id": body.user_id,
        "status": body.status,
    }
    for name in ("memory_id", "metadata", "timestamp", "ttl_days"):
        value = getattr(body, name)
        if value is not None:
            kwargs[name] = value
    if body.thread_id is not None:
        kwargs.update(thread_scope(state, key, body.thread_id, body.user_id, body.agent_id))
    elif body.agent_id is not None:
        kwargs["agent_id"] = body.agent_id
    memory_id = state.client.add_memory(body.content, **kwargs)
    record = state.client.store.get(body.memory_type, memory_id)
    return records_out(state, [record])[0]


@router.get("/memories", tags=["memories"], summary="A user's memories, oldest first")
def list_memories(
    state: State,
    key: Key,
    user_id: str = Query(min_length=1, max_length=256),
    agent_id: str | None = Query(None, min_length=1, max_length=256),
    thread_id: str | None = Query(None, min_length=1, max_length=256),
    limit: Limit = 100,
    offset: Offset = 0,
) -> Page:
    require_user(key, user_id)
    kwargs: dict[str, Any] = {"user_id": user_id, "limit": limit, "offset": offset}
    if agent_id is not None:
        kwargs["agent_id"] = agent_id
    if thread_id is not None:
        kwargs["thread_id"] = thread_id
    return page(state, overview(state).records(MEMORY_RECORD_TYPES, **kwargs))


@router.get("/memories/{memory_id:id}", tags=["memories"], summary="One memory")
def get_memory(memory_id: str, state: State, key: Key) -> RecordOut:
    return records_out(state, [owned_memory(state, key, memory_id)])[0]


@router.get(
    "/memories/{memory_id:id}/history",
    tags=["memories"],
    summary="A memory's versions, oldest first (a deleted one's: its tombstone)",
)
def memory_history(memory_id: str, state: State, key: Key) -> list[VersionOut]:
    versions = state.client.get_memory_history(memory_id)
    try:
        owned_memory(state, key, memory_id)
    except ApiError:  # deleted: its tombstone says whose it was
        if not versions or not key.allows(versions[-1].user_id):
            raise
    return [
        VersionOut(
            version=v.version,
            memory_id=v.memory_id,
            change=v.change,
            at=v.at.isoformat(),
            actor=v.actor,
            content=v.content,
            metadata=v.metadata,
            memory_type=v.memory_type,
            status=None if v.status is None else v.status.value,
            user_id=v.user_id,
            agent_id=v.agent_id,
            changed=list(v.changed),
            source_message_ids=list(v.source_message_ids),
            superseded_by=v.superseded_by,
        )
        for v in versions
        if key.allows(v.user_id)  # an id another user had before: not theirs to see
    ]


@router.patch(
    "/memories/{memory_id:id}",
    tags=["memories"],
    summary="Change a memory's content, metadata, status or TTL",
)
def update_memory(memory_id: str, body: MemoryPatch, state: State, key: Key) -> RecordOut:
    record = owned_memory(state, key, memory_id)
    kwargs: dict[str, Any] = {}
    given = body.model_fields_set
    if body.content is not None:
        kwargs["content"] = body.content
    if "metadata" in given:
        kwargs["metadata"] = body.metadata
    if body.status is not None:
        kwargs["status"] = body.status
    if body.ttl_days is not None:
        kwargs["ttl_days"] = body.ttl_days
    if kwargs:
        state.client.update_memory(memory_id, **kwargs)
    return records_out(state, [state.client.store.get(record.record_type, memory_id)])[0]


@router.delete("/memories/{memory_id:id}", tags=["memories"], summary="Delete a memory")
def delete_memory(memory_id: str, state: State, key: Key) -> Deleted:
    owned_memory(state, key, memory_id)
    return Deleted(deleted=state.client.delete_memory(memory_id))


# ---------------------------------------------------------------------------- links


@router.post(
    "/links", tags=["links"], status_code=status.HTTP_201_CREATED, summary="Link two memories"
)
def add_link(body: LinkIn, state: State, key: Key) -> LinkOut:
    owned_memory(state, key, body.source_record_id)
    owned_memory(state, key, body.target_record_id)
    kwargs: dict[str, Any] = {}
    if body.opposite_relation_type is not None:
        kwargs["opposite_relation_type"] = body.opposite_relation_type
    if body.metadata is not None:
        kwargs["metadata"] = body.metadata
    rid = state.client.link_records(
        body.source_record_id,
        body.source_record_type,
        body.target_record_id,
        body.target_record_type,
        body.relation_type,
        **kwargs,
    )
    rel = state.client.store.get_relation(relation_id=rid)
    return link_out(rel)


@router.get("/memories/{memory_id:id}/links", tags=["links"], summary="Links from and to a memory")
def list_links(memory_id: str, state: State, key: Key) -> list[LinkOut]:
    record = owned_memory(state, key, memory_id)
    store = state.client.store
    out = store.list_relations(
        source_record_id=memory_id, source_record_type=record.record_type, limit=None
    )
    out += store.list_relations(
        target_record_id=memory_id, target_record_type=record.record_type, limit=None
    )
    return [link_out(r) for r in out]


@router.delete("/links/{relation_id:id}", tags=["links"], summary="Delete a link")
def delete_link(relation_id: str, state: State, key: Key) -> Deleted:
    rel = state.client.store.get_relation(relation_id=relation_id)
    if rel is None:
        raise ApiError(404, f"no link with id {relation_id!r}")
    owned_memory(state, key, rel.source_record_id)
    return Deleted(deleted=state.client.delete_record_link(relation_id=relation_id))


# ---------------------------------------------------------------------------- search, purge


def results_out(state: State, results: list[Any]) -> SearchOut:
    out = []
    for r in results:
        linked = [
            LinkedOut(relation=link_out(rel), record=record_out(rec))
            for rel, rec in (getattr(r.record, "linked_results", None) or ())
        ]
        out.append(
            ResultOut(record=record_out(r.record), distance=float(r.distance), linked=linked)
        )
    return SearchOut(results=out)


def search_kwargs(body: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"max_results": body.max_results}
    if body.record_types is not None:
        kwargs["record_types"] = list(body.record_types)
    if body.metadata_filter is not None:
        kwargs["metadata_filter"] = body.metadata_filter
    if body.as_of is not None:
        kwargs["as_of"] = body.as_of
    return kwargs


@router.post(
    "/search",
    tags=["search"],
    summary="Search one user's memory (the user is always matched exactly)",
)
def search(body: SearchIn, state: State, key: Key) -> SearchOut:
    require_user(key, body.user_id)
    kwargs = search_kwargs(body)
    kwargs.update(
        user_id=body.user_id,
        exact_user_match=True,
        num_hops=body.num_hops,
        max_linked_results=body.max_linked_results,
        include_invalid_results=body.include_invalid_results,
    )
    for name in (
        "agent_id",
        "thread_id",
        "exact_agent_match",
        "exact_thread_match",
        "token_budget",
    ):
        value = getattr(body, name)
        if value is not None:
            kwargs[name] = value
    client = state.client_for(body.strategy)
    return results_out(state, client.search(body.query, **kwargs))


@router.get(
    "/extraction",
    tags=["admin"],
    summary="This worker's memory extraction: counts and the latest failure (admin key)",
)
def extraction_stats(state: State, key: Key) -> ExtractionStats:
    require_admin(key)  # a failure names its thread, whoever's it is
    stats = state.client.get_memory_extraction_stats()
    return ExtractionStats(
        extraction_enabled=state.settings.llm is not None,
        **{
            name: getattr(stats, name)
            for name in ExtractionStats.model_fields
            if name != "extraction_enabled"
        },
    )


@router.post("/purge", tags=["admin"], summary="Remove expired records now (admin key)")
def purge(body: PurgeIn, state: State, key: Key) -> Deleted:
    require_admin(key)
    removed = state.client.store.purge_expired() if body.expired else 0
    return Deleted(deleted=removed)

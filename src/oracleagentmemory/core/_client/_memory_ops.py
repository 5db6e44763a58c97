"""Memory and link writes shared by the client and its threads (one path for each)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES, MemoryVersion, Record
from oracleagentmemory.apis.relations import MEMORY_LINK_TYPES
from oracleagentmemory.core._client._validation import check_single
from oracleagentmemory.core._shared._actor import acting_as
from oracleagentmemory.core.extractors._linking import (
    LINK_CANDIDATES,
    LinkDecision,
    LinkResolver,
    LinkWrite,
    NewMemory,
    write_links,
)
from oracleagentmemory.core.extractors._service import DELETE_WAIT_SECONDS
from oracleagentmemory.core.extractors._similar import similar_memories
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore


@dataclass(frozen=True)
class AutoLinkSettings:
    """What ``add_memory(autonomous_linking=True)`` needs from the client or thread: its
    LLM and the link settings of its memory-extraction configuration."""

    llm: Any
    token_limit: int
    custom_instructions: str | None

    @classmethod
    def of(cls, settings: Any) -> AutoLinkSettings:
        """From resolved client or thread settings (``core._client._runtime.ResolvedSettings``)."""
        from oracleagentmemory.core.extractors.memoryextractionconfig import (
            MemoryExtractionConfig,
        )

        config = settings.config("memory_extraction_config", MemoryExtractionConfig).resolve()
        return cls(
            settings.get("llm"),
            config.memory_link_extraction_token_limit,
            config.memory_link_extraction_custom_instructions,
        )


def find_memory(store: OracleMemoryStore, memory_id: str) -> Record | None:
    """The memory-like record (memory, guideline, fact or preference) with this id."""
    if not isinstance(memory_id, str):
        raise TypeError("memory_id must be a string")
    for memory_type in MEMORY_RECORD_TYPES:
        record = store.get(memory_type, memory_id)
        if record is not None:
            return record
    return None


def find_memory_for_write(store: OracleMemoryStore, memory_id: str) -> Record | None:
    """:func:`find_memory` for a read that decides a write: it reads where writes go (the
    primary, when the store has a read replica), never a replica's older copy."""
    with store._reads_for_write():
        return find_memory(store, memory_id)


def update_memory_record(
    store: OracleMemoryStore, memory_id: str, *, thread_id: Any = NOT_SET_MARKER, **fields: Any
) -> str:
    """The one update path for memories (client and thread): omitted fields and the scope are
    kept; KeyError when no such memory exists (in ``thread_id``, when given)."""
    record = find_memory_for_write(store, memory_id)
    if record is None or (
        thread_id is not NOT_SET_MARKER and getattr(record, "thread_id", None) != thread_id
    ):
        where = "" if thread_id is NOT_SET_MARKER else f" in thread {thread_id!r}"
        raise KeyError(f"no memory with id {memory_id!r}{where}")
    text = fields.get("text", NOT_SET_MARKER)
    if text is not NOT_SET_MARKER and not isinstance(text, str):
        raise TypeError("content must be a string")
    given = {k: v for k, v in fields.items() if v is not NOT_SET_MARKER}
    if given:
        store.update(record.record_type, memory_id, **given)
    return memory_id


LINK_ARGUMENTS: Final = (
    "autonomous_linking",
    "memory_id_to_link",
    "link_type",
    "link_id",
    "link_timestamp",
    "link_metadata",
)
"""The link arguments of ``add_memory``."""
_LINK_ARGS = (*LINK_ARGUMENTS, "allow_cross_user")
"""The link options ``add_memory_record`` takes from its store options."""


MEMORY_ARGUMENTS: Final = (
    "memory_type",
    "user_id",
    "agent_id",
    "thread_id",
    "memory_id",
    "metadata",
    "timestamp",
    "ttl_days",
    "ttl_anchor",
    "status",
    *LINK_ARGUMENTS,
)
"""The arguments of a client's or thread's ``add_memory`` but its content and store options."""


def memory_arguments(
    arguments: Mapping[str, Any], scope: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``add_memory`` arguments of a call, from its ``locals()``; omitted scope ids
    (``user_id`` / ``agent_id`` / ``thread_id``) taken from ``scope`` (a thread's own)."""
    out = {name: arguments[name] for name in MEMORY_ARGUMENTS}
    for name, value in (scope or {}).items():
        if out[name] is NOT_SET_MARKER:
            out[name] = value
    return out


def add_memory_record(store: OracleMemoryStore, content: str, **arguments: Any) -> str:
    """:func:`_add_memory_record`, its history naming the agent it is written for (unless
    an outer caller, such as the REST server's API key, is named already)."""
    agent = arguments.get("agent_id")
    with acting_as(f"agent:{agent}" if isinstance(agent, str) else None, keep_outer=True):
        return _add_memory_record(store, content, **arguments)


def get_memory_history(self: Any, memory_id: str) -> list[MemoryVersion]:
    """The versions of a memory-like record, oldest first: each change (creation, content or
    metadata update, status change, a ``supersedes`` link pointing at it, deletion) with
    when, who and what the record held after it. A deleted memory keeps one ``"deleted"``
    tombstone and no content; an id that never named a memory has no versions."""
    self._check_open()
    if not isinstance(memory_id, str) or not memory_id:
        raise TypeError("memory_id must be a non-empty string")
    history = getattr(self._store, "memory_history", None)
    if history is None:
        raise NotImplementedError(f"{type(self._store).__name__} keeps no memory history")
    return list(history(memory_id))


def _add_memory_record(
    store: OracleMemoryStore,
    content: str,
    *,
    memory_type: Any,
    user_id: Any,
    agent_id: Any,
    thread_id: Any,
    memory_id: Any,
    metadata: Any,
    timestamp: Any,
    ttl_days: Any,
    ttl_anchor: Any,
    status: Any,
    auto_link: AutoLinkSettings | None = None,
    **store_kwargs: Any,
) -> str:
    """The one write path for memories added by a client or a thread.

    With ``memory_id_to_link`` and ``link_type`` the memory and its link are written in one
    transaction (``store.add_with_relations``): both land, or neither.

    ``autonomous_linking=True`` asks ``auto_link.llm`` how the memory relates to the
    closest existing memories of its user (before anything is written), then stores the
    memory and the chosen links; a superseded or duplicated memory becomes INVALID. Should
    storing those links fail, the new memory is deleted again (with its links).
    """
    link = {name: store_kwargs.pop(name, NOT_SET_MARKER) for name in _LINK_ARGS}
    check_single(
        **{name: link[name] for name in LINK_ARGUMENTS},
        **{"user_id": user_id, "agent_id": agent_id, "thread_id": thread_id},
        **{"memory_id": memory_id, "metadata": metadata, "timestamp": timestamp},
        **{"ttl_days": ttl_days, "ttl_anchor": ttl_anchor, "status": status},
    )
    autonomous = link["autonomous_linking"]
    if autonomous not in (NOT_SET_MARKER, None) and not isinstance(autonomous, bool):
        raise TypeError("autonomous_linking must be a bool")
    target: Record | None = None
    wants_link = any(
        link[name] not in (NOT_SET_MARKER, None) for name in ("memory_id_to_link", "link_type")
    )
    if wants_link:
        if link["memory_id_to_link"] in (NOT_SET_MARKER, None) or link["link_type"] in (
            NOT_SET_MARKER,
            None,
        ):
            raise ValueError("memory_id_to_link and link_type go together")
        target = find_memory_for_write(store, link["memory_id_to_link"])
        if target is None:
            raise ValueError(f"memory_id_to_link: no memory with id {link['memory_id_to_link']!r}")
        if link["link_type"] not in MEMORY_LINK_TYPES:
            raise ValueError(
                f"link_type must be one of {sorted(MEMORY_LINK_TYPES)}, got {link['link_type']!r}"
            )
    if not isinstance(content, str):
        raise TypeError("content must be a string")
    kind = "memory" if memory_type is NOT_SET_MARKER else memory_type
    if kind not in MEMORY_RECORD_TYPES:
        raise ValueError(f"memory_type must be one of {list(MEMORY_RECORD_TYPES)}, got {kind!r}")
    user = None if user_id is NOT_SET_MARKER else user_id
    decisions: list[LinkDecision] = []
    if autonomous is True:
        decisions = _decide_autonomous_links(
            store,
            content,
            user,
            None if timestamp is NOT_SET_MARKER else timestamp,
            {target.id} if target is not None else set(),
            auto_link,
        )
    if memory_id is NOT_SET_MARKER or memory_id is None:
        memory_id = str(uuid.uuid4()) if target is not None else None
    batch = PendingRecordBatch(
        contents=[content],
        record_type=kind,
        record_ids=memory_id,
        thread_ids=None if thread_id is NOT_SET_MARKER else thread_id,
        user_ids=None if user_id is NOT_SET_MARKER else user_id,
        agent_ids=None if agent_id is NOT_SET_MARKER else agent_id,
        timestamps=timestamp,
        metadata=metadata,
        ttl_days=ttl_days,
        ttl_anchor=ttl_anchor,
        statuses=status,
    )
    if target is None:
        ids = store.add_batches([batch], **store_kwargs)
    else:
        ids, _ = store.add_with_relations(
            [batch], [_relation(link, memory_id, kind, target)], **store_kwargs
        )
    if decisions:
        try:
            write_links(
                store,
                [
                    LinkWrite(ids[0], kind, d.target.memory_id, d.target.memory_type, d.relation)
                    for d in decisions
                ],
                user_id=user,
                origin="autonomous_linking",
            )
        except BaseException:
            store.delete(kind, ids[0])  # takes the links written so far along
            raise
    return ids[0]


def _relation(link: dict[str, Any], memory_id: str, kind: str, target: Record) -> dict[str, Any]:
    """The explicit link of ``add_memory(memory_id_to_link=..., link_type=...)``."""

    def given(name: str) -> Any:
        return None if link[name] is NOT_SET_MARKER else link[name]

    return {
        "source_record_ids": memory_id,
        "source_record_types": kind,
        "target_record_ids": target.id,
        "target_record_types": target.record_type,
        "relation_types": link["link_type"],
        "relation_ids": given("link_id"),
        "timestamps": given("link_timestamp"),
        "metadata": given("link_metadata"),
        "allow_cross_user": False
        if link["allow_cross_user"] is NOT_SET_MARKER
        else link["allow_cross_user"],
    }


def _decide_autonomous_links(
    store: OracleMemoryStore,
    content: str,
    user_id: Any,
    timestamp: Any,
    exclude: set[str],
    settings: AutoLinkSettings | None,
) -> list[LinkDecision]:
    """The links the LLM chooses for a memory about to be added (nothing is written)."""
    if settings is None or settings.llm is None:
        raise ValueError("autonomous_linking=True needs an llm (on the client or the thread)")
    if user_id is None:
        raise ValueError(
            "autonomous_linking=True needs a user_id: links only join memories of one user"
        )
    if not isinstance(user_id, str):
        raise TypeError("user_id must be a string")
    candidates = similar_memories(
        store,
        [content],
        LINK_CANDIDATES,
        {"user_id": user_id, "exact_user_match": True},
        exclude=exclude,
    )
    resolver = LinkResolver(settings.llm, settings.token_limit, settings.custom_instructions)
    return resolver.decide([NewMemory(content, timestamp)], candidates)


def link_records(
    store: OracleMemoryStore,
    source_record_id: str,
    source_record_type: str,
    target_record_id: str,
    target_record_type: str,
    relation_type: str,
    opposite_relation_type: Any = NOT_SET_MARKER,
    relation_id: Any = NOT_SET_MARKER,
    timestamp: Any = NOT_SET_MARKER,
    metadata: Any = NOT_SET_MARKER,
    allow_cross_user: bool = False,
) -> str:
    """Store one directed relation; returns its id (records of different users only with
    ``allow_cross_user=True``)."""
    for value, name in (
        (source_record_id, "source_record_id"),
        (source_record_type, "source_record_type"),
        (target_record_id, "target_record_id"),
        (target_record_type, "target_record_type"),
        (relation_type, "relation_type"),
    ):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    for value, name in (
        (opposite_relation_type, "opposite_relation_type"),
        (relation_id, "relation_id"),
    ):
        if value is not NOT_SET_MARKER and not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    check_single(timestamp=timestamp, metadata=metadata)
    relation = {
        "source_record_ids": source_record_id,
        "source_record_types": source_record_type,
        "target_record_ids": target_record_id,
        "target_record_types": target_record_type,
        "relation_types": relation_type,
        "opposite_relation_types": opposite_relation_type,
        "relation_ids": None if relation_id is NOT_SET_MARKER else relation_id,
        "timestamps": None if timestamp is NOT_SET_MARKER else timestamp,
        "metadata": None if metadata is NOT_SET_MARKER else metadata,
        "allow_cross_user": allow_cross_user,
    }
    return store.add_with_relations([], [relation])[1][0]


def update_record_link(
    store: OracleMemoryStore,
    relation_id: str,
    relation_type: Any = NOT_SET_MARKER,
    opposite_relation_type: Any = NOT_SET_MARKER,
    timestamp: Any = NOT_SET_MARKER,
    metadata: Any = NOT_SET_MARKER,
) -> int:
    """Change a relation's fields; returns 1, or 0 for an unknown id."""
    if not isinstance(relation_id, str):
        raise TypeError(f"relation_id must be a string, got {type(relation_id).__name__}")
    check_single(
        relation_type=relation_type,
        opposite_relation_type=opposite_relation_type,
        timestamp=timestamp,
        metadata=metadata,
    )
    return len(
        store.update_relations(
            relation_id,
            relation_types=relation_type,
            opposite_relation_types=opposite_relation_type,
            timestamps=timestamp,
            metadata=metadata,
        )
    )


def delete_memory_record(store: OracleMemoryStore, extraction: Any, memory_id: str) -> int:
    """Delete a memory-like record by id (1, or 0 for an unknown id), after the background
    extraction of its thread, if it has one (``extraction``: the client's service)."""
    record = find_memory_for_write(store, memory_id)
    if record is None:
        return 0
    thread_id = getattr(record, "thread_id", None)
    if thread_id is not None:
        extraction.wait([thread_id], DELETE_WAIT_SECONDS)
    return store.delete(record.record_type, memory_id)


def delete_record_link(
    store: OracleMemoryStore,
    source_record_id: Any = NOT_SET_MARKER,
    source_record_type: Any = NOT_SET_MARKER,
    target_record_id: Any = NOT_SET_MARKER,
    target_record_type: Any = NOT_SET_MARKER,
    relation_type: Any = NOT_SET_MARKER,
    relation_id: Any = NOT_SET_MARKER,
) -> int:
    """Delete a relation by id, or by its full stored (source, target, type) tuple."""
    if relation_id is not NOT_SET_MARKER:
        if not isinstance(relation_id, str):
            raise TypeError(f"relation_id must be a string, got {type(relation_id).__name__}")
        return store.delete_relations(relation_id)
    relation = store.get_relation(
        source_record_id,
        source_record_type,
        target_record_id,
        target_record_type,
        relation_type,
    )
    return 0 if relation is None else store.delete_relations(relation.id)

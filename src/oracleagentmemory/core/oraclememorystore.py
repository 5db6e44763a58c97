"""The abstract store used by the client: a few primitives, everything else derived."""

from __future__ import annotations

import builtins
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT, IMemoryStore
from oracleagentmemory.apis.records import MessageRecord, Record
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.core._async import async_twin


class OracleMemoryStore(IMemoryStore):
    """Common store interface used by ``OracleAgentMemory``.

    A backend implements the primitives (``add_batches``, ``get``, ``list``, ``search``,
    ``update``, ``delete``, ``delete_thread``, ...); ``add`` and the profile helpers are
    derived here, and every ``*_async`` method is derived from its sync twin.
    """

    def add(
        self,
        contents: Any = NOT_SET_MARKER,
        record_type: Any = NOT_SET_MARKER,
        index_texts: Any = NOT_SET_MARKER,
        embeddings: Any = NOT_SET_MARKER,
        record_ids: Any = NOT_SET_MARKER,
        thread_ids: Any = NOT_SET_MARKER,
        user_ids: Any = NOT_SET_MARKER,
        agent_ids: Any = NOT_SET_MARKER,
        roles: Any = NOT_SET_MARKER,
        timestamps: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
        ttl_days: Any = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        statuses: Any = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> list[str]:
        """Add records; returns their identifiers in input order.

        ``contents`` is the stored text; ``index_texts`` overrides the retrieval text (a string
        may be chunked by the store, a list is caller-owned chunks, ``None`` uses the content,
        empty means "not searchable"); ``embeddings`` gives vectors directly (one per record or
        one per caller chunk). Scalars broadcast across the batch. ``store_kwargs``:
        ``batch_size`` (rows per ``executemany``, default 256).
        """
        batch = PendingRecordBatch(
            contents=contents,
            record_type=record_type,
            record_ids=record_ids,
            index_texts=index_texts,
            embeddings=embeddings,
            thread_ids=thread_ids,
            user_ids=user_ids,
            agent_ids=agent_ids,
            roles=roles,
            timestamps=timestamps,
            metadata=metadata,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            statuses=statuses,
        )
        return self.add_batches([batch], **store_kwargs)

    @abstractmethod
    def add_batches(self, batches: list[PendingRecordBatch], **store_kwargs: Any) -> list[str]:
        """Add caller-prepared batches in one transaction; returns ids in input order."""

    def add_user(
        self,
        user_id: str | NotSet = NOT_SET_MARKER,
        information: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Add an unscoped user profile whose record id is ``user_id``; returns it."""
        return self._add_profile("user_profile", "user_id", user_id, information, metadata)

    def add_agent(
        self,
        agent_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Add an unscoped agent profile whose record id is ``agent_id``; returns it."""
        return self._add_profile("agent_profile", "agent_id", agent_id, information, metadata)

    def _add_profile(
        self, record_type: str, id_name: str, actor_id: Any, information: Any, metadata: Any
    ) -> str:
        if not isinstance(actor_id, str) or not actor_id:
            raise TypeError(f"{id_name} must be a non-empty string")
        if not isinstance(information, str):
            raise TypeError("information must be a string")
        ids = self.add(
            [information], record_type=record_type, record_ids=actor_id, metadata=metadata
        )
        return ids[0]

    @abstractmethod
    def get(
        self, record_type: str, record_id: str, include_bytes: Any = NOT_SET_MARKER
    ) -> Record | None:
        """Return the record, or None when it does not exist (or has expired)."""

    @abstractmethod
    def list(
        self,
        record_type: str,
        *,
        limit: Any = NOT_SET_MARKER,
        thread_id: Any = NOT_SET_MARKER,
        user_id: Any = NOT_SET_MARKER,
        agent_id: Any = NOT_SET_MARKER,
        metadata_filter: Any = NOT_SET_MARKER,
        include_bytes: Any = NOT_SET_MARKER,
        record_id: Any = NOT_SET_MARKER,
    ) -> list[Record]:
        """List records of one type: the newest ``limit`` ones, oldest to newest."""

    def list_records(
        self,
        record_types: Sequence[str],
        *,
        limit: Any = NOT_SET_MARKER,
        thread_id: Any = NOT_SET_MARKER,
        user_id: Any = NOT_SET_MARKER,
        agent_id: Any = NOT_SET_MARKER,
        metadata_filter: Any = NOT_SET_MARKER,
        record_id: Any = NOT_SET_MARKER,
    ) -> builtins.list[Record]:
        """``list()`` over several record types (this fallback merges by timestamp)."""
        merged: builtins.list[Record] = []
        for record_type in record_types:
            merged.extend(
                self.list(
                    record_type,
                    limit=limit,
                    thread_id=thread_id,
                    user_id=user_id,
                    agent_id=agent_id,
                    metadata_filter=metadata_filter,
                    record_id=record_id,
                )
            )
        merged.sort(key=lambda r: r.timestamp or "")
        if limit is NOT_SET_MARKER:
            limit = MAX_LIST_LIMIT
        return merged if limit is None else merged[-limit:]

    @abstractmethod
    def list_thread_messages(
        self,
        thread_id: str,
        *,
        last_n: int | None = None,
        range_start_seq_no: int | None = None,
        range_end_seq_no: int | None = None,
        include_bytes: Any = NOT_SET_MARKER,
    ) -> builtins.list[MessageRecord]:
        """A thread's messages in ``seq_no`` order (range bounds inclusive, then ``last_n``)."""

    @abstractmethod
    def search(
        self,
        query: str | None,
        k: int,
        query_vector: Any = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        exact_user_match: bool = False,
        exact_agent_match: bool = False,
        exact_thread_match: bool = False,
        record_types: set[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        num_hops: int = 0,
        max_linked_results: int = 100,
        include_invalid_results: bool = True,
    ) -> builtins.list[tuple[Record, float]]:
        """Return up to ``k`` (record, distance) pairs, distance ascending."""

    @abstractmethod
    def update(
        self,
        record_type: str,
        record_id: str,
        *,
        content: Any = NOT_SET_MARKER,
        index_text: Any = NOT_SET_MARKER,
        embedding: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
        timestamp: Any = NOT_SET_MARKER,
        ttl_days: Any = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        status: Any = NOT_SET_MARKER,
        text: Any = NOT_SET_MARKER,
    ) -> int:
        """Update one record; returns 1, or 0 when no such record exists."""

    @abstractmethod
    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record (and, with ``cascade``, an actor's scoped rows); returns 0 or 1."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread row with its messages, memories and retrieval rows; returns 0 or 1."""

    def add_relations(
        self,
        source_record_ids: str | builtins.list[str],
        source_record_types: str | builtins.list[str],
        target_record_ids: str | builtins.list[str],
        target_record_types: str | builtins.list[str],
        relation_types: str | builtins.list[str],
        opposite_relation_types: Any = NOT_SET_MARKER,
        relation_ids: Any = NOT_SET_MARKER,
        timestamps: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
    ) -> builtins.list[str]:
        """Store directed relations between records; returns their ids."""
        raise NotImplementedError(f"{type(self).__name__} does not store relations")

    def get_relation(
        self,
        source_record_id: Any = NOT_SET_MARKER,
        source_record_type: Any = NOT_SET_MARKER,
        target_record_id: Any = NOT_SET_MARKER,
        target_record_type: Any = NOT_SET_MARKER,
        relation_type: Any = NOT_SET_MARKER,
        relation_id: Any = NOT_SET_MARKER,
    ) -> RecordRelation | None:
        """One relation by id or by its full endpoint tuple."""
        raise NotImplementedError(f"{type(self).__name__} does not store relations")

    def list_relations(
        self,
        relation_type: Any = NOT_SET_MARKER,
        source_record_id: Any = NOT_SET_MARKER,
        source_record_type: Any = NOT_SET_MARKER,
        target_record_id: Any = NOT_SET_MARKER,
        target_record_type: Any = NOT_SET_MARKER,
        limit: Any = NOT_SET_MARKER,
        metadata_filter: Any = NOT_SET_MARKER,
        relation_id: Any = NOT_SET_MARKER,
    ) -> builtins.list[RecordRelation]:
        """Relations matching every given field."""
        raise NotImplementedError(f"{type(self).__name__} does not store relations")

    def update_relations(
        self,
        relation_ids: str | builtins.list[str],
        relation_types: Any = NOT_SET_MARKER,
        opposite_relation_types: Any = NOT_SET_MARKER,
        timestamps: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
    ) -> builtins.list[str]:
        """Change relation fields; returns the updated ids."""
        raise NotImplementedError(f"{type(self).__name__} does not store relations")

    def delete_relations(self, relation_ids: str | builtins.list[str]) -> int:
        """Delete relations by id; returns how many existed."""
        raise NotImplementedError(f"{type(self).__name__} does not store relations")

    def create_thread_record(
        self,
        thread_id: str,
        *,
        user_id: str | None,
        agent_id: str | None,
        metadata: dict[str, Any] | None,
        runtime_config: dict[str, Any] | None,
    ) -> str:
        """Insert a thread row with its persisted runtime configuration; returns its id."""
        raise NotImplementedError(f"{type(self).__name__} does not store threads")

    def update_thread_record(
        self,
        thread_id: str,
        *,
        metadata: Any = NOT_SET_MARKER,
        runtime_config: Any = NOT_SET_MARKER,
        runtime_state: Any = NOT_SET_MARKER,
    ) -> int:
        """Replace a thread's metadata / runtime configuration / state; returns 0 or 1."""
        raise NotImplementedError(f"{type(self).__name__} does not store threads")

    def close(self) -> None:
        """Release resources; idempotent."""

    def __enter__(self) -> OracleMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    add_async = async_twin(add)
    add_batches_async = async_twin(add_batches)
    add_user_async = async_twin(add_user)
    add_agent_async = async_twin(add_agent)
    get_async = async_twin(get)
    list_async = async_twin(list)
    list_records_async = async_twin(list_records)
    list_thread_messages_async = async_twin(list_thread_messages)
    search_async = async_twin(search)
    update_async = async_twin(update)
    delete_async = async_twin(delete)
    delete_thread_async = async_twin(delete_thread)
    create_thread_record_async = async_twin(create_thread_record)
    add_relations_async = async_twin(add_relations)
    get_relation_async = async_twin(get_relation)
    list_relations_async = async_twin(list_relations)
    update_relations_async = async_twin(update_relations)
    delete_relations_async = async_twin(delete_relations)
    update_thread_record_async = async_twin(update_thread_record)

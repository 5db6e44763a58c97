"""The abstract store used by the client: a few primitives, everything else derived."""

from __future__ import annotations

import builtins
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from oracleagentmemory._async import async_twin
from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.memorystore import (
    DOCUMENT_TYPES as DOCUMENT_TYPES,
    MAX_LIST_LIMIT,
    IMemoryStore,
    MetadataFilter as MetadataFilter,
    PerRecordIndexTextInput as PerRecordIndexTextInput,
    RecordContentInput as RecordContentInput,
)
from oracleagentmemory.apis.message import (
    ImageContent as ImageContent,
    MetadataValue as MetadataValue,
    TextContent as TextContent,
)
from oracleagentmemory.apis.records import (
    MessageRecord,
    Record,
    ScopedRecord as ScopedRecord,
    ThreadRecord as ThreadRecord,
)
from oracleagentmemory.apis.relations import MEMORY_TYPES as MEMORY_TYPES
from oracleagentmemory.core.store._limits import check_text


class OracleMemoryStore(IMemoryStore):
    """Common store interface used by ``OracleAgentMemory``.

    A backend implements the primitives of ``IMemoryStore`` (``_add_prepared_batches``,
    ``get``, ``list``, ``search``, ``update``, ``delete``, the relation methods, ...); the
    profile helpers are derived here, and every ``*_async`` method from its sync twin.
    """

    def add_with_relations(
        self,
        batches: list[PendingRecordBatch],
        relations: Sequence[Mapping[str, Any]],
        **store_kwargs: Any,
    ) -> tuple[list[str], list[str]]:
        """Add batches and relations (mappings of ``add_relations`` keyword arguments, plus
        ``allow_cross_user``) in ONE transaction; returns (record ids, relation ids)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot write records and relations in one transaction"
        )

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
        check_text(actor_id, id_name)
        check_text(information, "information")
        ids = self.add(
            [information], record_type=record_type, record_ids=actor_id, metadata=metadata
        )
        return ids[0]

    @abstractmethod
    def get(
        self, record_type: str, record_id: str, include_bytes: Any = NOT_SET_MARKER
    ) -> Record | None:
        """Return the record, or None when it does not exist (or has expired)."""

    def get_many(self, record_type: str, record_ids: Sequence[str]) -> builtins.dict[str, Record]:
        """The records of one type among ``record_ids`` that exist and have not expired, as
        ``{id: record}`` (an addition of ours; a database store reads them in one query)."""
        if isinstance(record_ids, str):
            raise TypeError("record_ids must be a list of ids, not one string")
        found = {rid: self.get(record_type, rid) for rid in dict.fromkeys(record_ids)}
        return {rid: record for rid, record in found.items() if record is not None}

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

    def _reads_for_write(self) -> AbstractContextManager[None]:
        """Inside it, this store's reads go where its writes go (a read that decides a
        write, on a store with a read replica); elsewhere reads are unchanged."""
        return nullcontext()

    def _reads_as_of_now(self) -> AbstractContextManager[Any]:
        """Inside it, this store's reads need only what it had committed when it began (and
        what this context commits): a read replica serves them while later writes replay.
        It gives an object whose ``done()`` ends that, or None; elsewhere nothing changes."""
        return nullcontext()

    def close(self) -> None:
        """Release resources; idempotent."""

    def __enter__(self) -> OracleMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    list_records_async = async_twin(list_records)
    add_with_relations_async = async_twin(add_with_relations)
    create_thread_record_async = async_twin(create_thread_record)
    update_thread_record_async = async_twin(update_thread_record)

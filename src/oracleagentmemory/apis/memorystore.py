"""The memory-store interface shared by every backend, with the reference's signatures."""

from __future__ import annotations

import asyncio
import builtins
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

import numpy as np

from oracleagentmemory._async import async_twin
from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.batch import PendingRecordBatch as PendingRecordBatch
from oracleagentmemory.apis.message import MessageContent
from oracleagentmemory.apis.records import MessageRecord, MetadataValue, Record, RecordStatus
from oracleagentmemory.apis.relations import RecordRelation, RelationType
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

MAX_LIST_LIMIT: Final = 10000
"""Default upper bound of ``list()`` when ``limit`` is omitted."""
DOCUMENT_TYPES: Final = frozenset({"image"})
"""Record types whose payload is a document (bytes) rather than text."""
DEFAULT_BATCH_SIZE: Final = 256
"""Rows per ``executemany`` in a store write (the ``batch_size`` store option)."""

RecordContentInput: TypeAlias = str | Mapping[str, object] | Sequence[MessageContent] | bytes | None
"""What one record may store as content."""
PerBatchRecordContentsInput: TypeAlias = Sequence[RecordContentInput]
"""The contents of a batch, one per record."""
PerRecordIndexTextInput: TypeAlias = str | builtins.list[str]
"""A record's retrieval text: a string (chunked by the store) or caller-owned chunks."""
PerBatchIndexTextsInput: TypeAlias = builtins.list[str | builtins.list[str] | None]
"""The retrieval texts of a batch, one per record."""
EmbeddingVectorInput: TypeAlias = builtins.list[float] | np.ndarray
"""One vector: a list of floats or a NumPy array."""
PerRecordEmbeddingsInput: TypeAlias = (
    builtins.list[float] | np.ndarray | builtins.list[builtins.list[float] | np.ndarray]
)
"""A record's vector, or one vector per caller chunk."""
PerBatchEmbeddingsInput: TypeAlias = builtins.list[PerRecordEmbeddingsInput]
"""The vectors of a batch, one entry per record."""
MetadataFilter: TypeAlias = dict[str, Any] | None
"""A metadata filter (see ``OracleMemoryStore.search``)."""


class IMemoryStore(ABC):
    """Persistence and similarity search over records.

    A backend implements the abstract primitives; ``add`` and ``add_batches`` are derived from
    ``_add_prepared_batches``, and every ``*_async`` method runs its sync twin in a worker
    thread.
    """

    def add(
        self,
        contents: PerBatchRecordContentsInput | NotSet = NOT_SET_MARKER,
        record_type: str | NotSet = NOT_SET_MARKER,
        index_texts: PerBatchIndexTextsInput | NotSet = NOT_SET_MARKER,
        embeddings: PerBatchEmbeddingsInput | NotSet = NOT_SET_MARKER,
        record_ids: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        thread_ids: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        user_ids: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        agent_ids: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        roles: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        timestamps: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        metadata: MetadataValue | builtins.list[MetadataValue] | NotSet = NOT_SET_MARKER,
        ttl_days: int | builtins.list[int | None] | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | builtins.list[TimeToLiveAnchor] | NotSet = NOT_SET_MARKER,
        statuses: RecordStatus | builtins.list[RecordStatus] | NotSet = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """Add records; returns their ids in input order (see ``OracleMemoryStore.add``)."""
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
    def add_agent(
        self,
        agent_id: str,
        information: str,
        metadata: MetadataValue | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Add an unscoped agent profile whose record id is ``agent_id``; returns it."""

    def add_batches(
        self,
        batches: builtins.list[PendingRecordBatch],
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """Add caller-prepared batches in one transaction; returns ids in input order."""
        return self._add_prepared_batches(batches, **store_kwargs)

    @abstractmethod
    def add_relations(
        self,
        source_record_ids: str | builtins.list[str],
        source_record_types: str | builtins.list[str],
        target_record_ids: str | builtins.list[str],
        target_record_types: str | builtins.list[str],
        relation_types: RelationType | builtins.list[RelationType],
        opposite_relation_types: RelationType
        | builtins.list[RelationType]
        | NotSet = NOT_SET_MARKER,
        relation_ids: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        timestamps: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        metadata: MetadataValue | builtins.list[MetadataValue] | NotSet = NOT_SET_MARKER,
    ) -> builtins.list[str]:
        """Store directed relations between records; returns their ids."""

    @abstractmethod
    def add_user(
        self,
        user_id: str | NotSet = NOT_SET_MARKER,
        information: str | NotSet = NOT_SET_MARKER,
        metadata: MetadataValue | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Add an unscoped user profile whose record id is ``user_id``; returns it."""

    @abstractmethod
    def delete(
        self,
        record_type: str,
        record_id: str,
        cascade: bool = False,
    ) -> int:
        """Delete one record (with ``cascade``, an actor's scoped rows too); returns 0 or 1."""

    @abstractmethod
    def delete_relations(
        self,
        relation_ids: str | builtins.list[str],
    ) -> int:
        """Delete relations by id; returns how many existed."""

    @abstractmethod
    def delete_thread(
        self,
        thread_id: str,
    ) -> int:
        """Delete a thread with its messages, memories and retrieval rows; returns 0 or 1."""

    @abstractmethod
    def get(
        self,
        record_type: str,
        record_id: str,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> Record | None:
        """Return the record, or None when it does not exist (or has expired)."""

    @abstractmethod
    def get_relation(
        self,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        relation_type: RelationType | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> RecordRelation | None:
        """One relation by id or by its full endpoint tuple."""

    @abstractmethod
    def list(
        self,
        record_type: str,
        *,
        limit: int | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: MetadataFilter | NotSet = NOT_SET_MARKER,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
        record_id: str | NotSet = NOT_SET_MARKER,
    ) -> builtins.list[Record]:
        """List records of one type: the newest ``limit`` ones, oldest to newest."""

    @abstractmethod
    def list_relations(
        self,
        relation_type: str | NotSet = NOT_SET_MARKER,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
        metadata_filter: MetadataFilter | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> builtins.list[RecordRelation]:
        """Relations matching every given field."""

    @abstractmethod
    def list_thread_messages(
        self,
        thread_id: str,
        *,
        last_n: int | None = None,
        range_start_seq_no: int | None = None,
        range_end_seq_no: int | None = None,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> builtins.list[MessageRecord]:
        """A thread's messages in ``seq_no`` order (range bounds inclusive, then ``last_n``)."""

    @abstractmethod
    def search(
        self,
        query: str | None,
        k: int,
        *,
        query_vector: builtins.list[float] | None = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        exact_user_match: bool = False,
        exact_agent_match: bool = False,
        exact_thread_match: bool = False,
        record_types: set[str] | None = None,
        metadata_filter: MetadataFilter = None,
        num_hops: int = 0,
        max_linked_results: int = 100,
        include_invalid_results: bool = True,
    ) -> builtins.list[tuple[Record, float]]:
        """Up to ``k`` (record, distance) pairs, distance ascending."""

    @abstractmethod
    def update(
        self,
        record_type: str,
        record_id: str,
        *,
        content: RecordContentInput | NotSet = NOT_SET_MARKER,
        index_text: PerRecordIndexTextInput | NotSet | None = NOT_SET_MARKER,
        embedding: PerRecordEmbeddingsInput | NotSet | None = NOT_SET_MARKER,
        metadata: MetadataValue | NotSet = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        status: RecordStatus | NotSet = NOT_SET_MARKER,
        text: str | NotSet | None = NOT_SET_MARKER,
    ) -> int:
        """Update one record; returns 1, or 0 when no such record exists."""

    @abstractmethod
    def update_relations(
        self,
        relation_ids: str | builtins.list[str],
        relation_types: RelationType | builtins.list[RelationType] | NotSet = NOT_SET_MARKER,
        opposite_relation_types: RelationType
        | builtins.list[RelationType]
        | NotSet = NOT_SET_MARKER,
        timestamps: str | builtins.list[str | None] | NotSet | None = NOT_SET_MARKER,
        metadata: MetadataValue | builtins.list[MetadataValue] | NotSet = NOT_SET_MARKER,
    ) -> builtins.list[str]:
        """Change relation fields; returns the updated ids."""

    @abstractmethod
    def _add_prepared_batches(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """Write caller-prepared batches in one transaction; returns ids in input order."""

    @abstractmethod
    async def _add_prepared_batches_async(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """Async form of :meth:`_add_prepared_batches` (abstract, as in the reference)."""

    add_async = async_twin(add)
    add_agent_async = async_twin(add_agent)
    add_batches_async = async_twin(add_batches)
    add_relations_async = async_twin(add_relations)

    async def add_user_async(
        self,
        user_id: str,
        information: str,
        metadata: MetadataValue | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Async form of :meth:`add_user` (both identifiers are required here)."""
        return await asyncio.to_thread(self.add_user, user_id, information, metadata)

    delete_async = async_twin(delete)
    delete_relations_async = async_twin(delete_relations)
    delete_thread_async = async_twin(delete_thread)
    get_async = async_twin(get)
    get_relation_async = async_twin(get_relation)
    list_async = async_twin(list)
    list_relations_async = async_twin(list_relations)
    list_thread_messages_async = async_twin(list_thread_messages)
    search_async = async_twin(search)
    update_async = async_twin(update)
    update_relations_async = async_twin(update_relations)

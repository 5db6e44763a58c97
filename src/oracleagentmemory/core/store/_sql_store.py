"""The one SQL store: a thin facade over the parts that do the work, for every engine.

Engines differ only through :class:`~._dialect.Dialect`. The facade builds one part per
responsibility, each holding the shared :class:`~._store_core.StoreCore` and the parts it
calls, and keeps the store's public methods as one-line hand-offs:

==============================  ===================================================
``schema/_schema``              open-time checks, migrations, meta table, capabilities
``writes/_writes``              planning hand-off, group commit, insert, thread rows
``writes/_image_rows``          images (record + bytes)
``writes/_updates``             one record updated in place
``writes/_deletes``             deletes and cascades; ``writes/_retention``: expiry
``_reads``                      get, list, a thread's messages
``_overview``                   browsing: users with counts, filtered and paged lists
``search/_searcher``            search: ``_vector_branch``, ``_keyword_branch``, ...
``vectors/_index_keeper``       the in-process vector index and its catch-up
``search/_user_vectors``        cached users' vectors and keyword rows (PostgreSQL)
``_relations``                  typed links; ``_extraction``: extraction bookkeeping
==============================  ===================================================

``docs/architecture.md`` traces a write and a search through them.
"""

from __future__ import annotations

import asyncio
import builtins
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis._duck import as_embedder
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.apis.records import MemoryVersion, MessageRecord, Record
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._dialect import Dialect
from oracleagentmemory.core.store._extraction import (
    ExtractionBook,
    ExtractionMethods,
)
from oracleagentmemory.core.store._limits import MAX_VECTOR_DIM
from oracleagentmemory.core.store._overview import Overview
from oracleagentmemory.core.store._reads import Reader
from oracleagentmemory.core.store._relations import Links
from oracleagentmemory.core.store._store_core import StoreCore, check_lookup, enum_member
from oracleagentmemory.core.store.schema._history import read_history, restore_history
from oracleagentmemory.core.store.schema._planning import check_positive_int
from oracleagentmemory.core.store.schema._rows import Chunker
from oracleagentmemory.core.store.schema._schema import (
    EmbedderMismatchError,
    Schema,
    SchemaError,
    StoreWideWork,
)
from oracleagentmemory.core.store.schema._validity import restore_validity
from oracleagentmemory.core.store.search._keyword_branch import KeywordBranch
from oracleagentmemory.core.store.search._searcher import Searcher
from oracleagentmemory.core.store.search._user_vectors import prefill_bytes
from oracleagentmemory.core.store.search._vector_branch import VectorBranch
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper
from oracleagentmemory.core.store.vectors._reembed import reembed
from oracleagentmemory.core.store.writes._deletes import Deleter
from oracleagentmemory.core.store.writes._image_rows import ImageWriter
from oracleagentmemory.core.store.writes._retention import Retention
from oracleagentmemory.core.store.writes._updates import Updater
from oracleagentmemory.core.store.writes._writes import Writer

__all__ = ["DEFAULT_STORE_ID", "EmbedderMismatchError", "SQLMemoryStore", "SchemaError"]

_STORE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,15}$")
DEFAULT_STORE_ID = "oam"


class SQLMemoryStore(ExtractionMethods, OracleMemoryStore):
    """Store over one SQL engine (see the module docstring). Construct an engine subclass."""

    def __init__(
        self,
        embedder: IEmbedder | None,
        dialect: Dialect,
        *,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: int | None = None,
        memory_store_id: str | NotSet = NOT_SET_MARKER,
        search_strategy: SearchStrategy = SearchStrategy.VECTOR,
        search_index_sync: SearchIndexSyncMode = SearchIndexSyncMode.ON_COMMIT,
        memory_retention_config: MemoryRetentionConfig | NotSet = NOT_SET_MARKER,
    ) -> None:
        self._dialect = dialect
        embedder = None if embedder is None else as_embedder(embedder)
        try:
            core = StoreCore(
                dialect,
                embedder,
                store_id=memory_store_id if isinstance(memory_store_id, str) else DEFAULT_STORE_ID,
                schema_policy=schema_policy,
                search_strategy=search_strategy,
                search_index_sync=search_index_sync,
            )
            self._core = core
            self._lock = core.lock
            self._schema = Schema(core)
            self._keeper = IndexKeeper(core)
            self._reads = Reader(core)
            self._overview = Overview(core)
            self._links = Links(core, self._keeper, self._reads)
            self._deletes = Deleter(core, self._keeper)
            self._retention = Retention(self._deletes)
            self._writes = Writer(core, self._keeper, self._links, self._retention)
            self._images = ImageWriter(core, self._keeper, self._writes)
            self._updates = Updater(core, self._keeper)
            self._vectors = VectorBranch(core, self._keeper)
            self._search = Searcher(
                core,
                self._reads,
                self._links,
                self._vectors,
                KeywordBranch(core, self._vectors.users),
            )
            self._extraction = ExtractionBook(core, self._keeper, self._writes, self._deletes)
            # PostgreSQL's user cache (engines with a change log): a bad setting fails here,
            # before anything is written; other engines never read it.
            prefill = prefill_bytes() if getattr(dialect, "change_log", None) else 0
            self._open_schema(vector_dim, memory_retention_config)
            dialect.opened()
            core.chunker = Chunker.for_tokens(embedder.max_input_tokens if embedder else None)
            if not dialect.read_only:  # a standby: reads filter expired rows themselves
                self._retention.at_open()  # a failure only logs
                self._vectors.users.prefill(prefill)  # PostgreSQL: users read in at open
        except BaseException:
            dialect.close()
            raise

    def _open_schema(self, vector_dim: int | None, retention: Any) -> None:
        """Check, create or upgrade the schema in one transaction; on a standby (a read
        replica) only check it, in one read-only snapshot: no DDL, no meta rows written.
        With concurrent writers, a schema that needs no store-wide work opens under the
        shared lock (beside other nodes' writes), else under the exclusive one."""
        core, dialect = self._core, self._dialect
        if not dialect.read_only:
            if dialect.concurrent_writers:
                self._schema.shared_pass = True
                try:
                    with core.lock, dialect.opening():
                        self._schema.open(vector_dim, retention)
                    return
                except StoreWideWork:
                    pass  # rolled back, nothing written: again, under the exclusive lock
                finally:
                    self._schema.shared_pass = False
            with core.lock, dialect.transaction():
                self._schema.open(vector_dim, retention)
            return
        if core.policy is not SchemaPolicy.NO_CHECK:
            core.policy = SchemaPolicy.REQUIRE_EXISTING
        try:
            with core.lock, dialect.snapshot():
                self._schema.open(vector_dim, retention)
        except SchemaError as exc:
            raise SchemaError(
                f"{exc} (this store is open on a standby, a read replica: create or upgrade "
                "the schema through the primary)"
            ) from exc

    @staticmethod
    def check_arguments(
        embedder: Any,
        vector_dim: Any,
        memory_store_id: Any,
        search_strategy: Any,
        search_index_sync: Any,
        memory_retention_config: Any,
    ) -> str:
        """Validate constructor arguments before a connection is opened; returns the table
        prefix for ``memory_store_id``."""
        if embedder is not None:
            as_embedder(embedder)
        if vector_dim is not None:
            check_positive_int(vector_dim, "vector_dim", maximum=MAX_VECTOR_DIM)
        if memory_store_id is NOT_SET_MARKER:
            memory_store_id = DEFAULT_STORE_ID
        if not isinstance(memory_store_id, str) or not _STORE_ID.match(memory_store_id):
            raise ValueError(
                "memory_store_id must start with a letter, contain only letters, digits and "
                f"underscores, and have at most 16 characters; got {memory_store_id!r}"
            )
        if memory_store_id.lower().startswith("sqlite_"):
            # Its tables would be named sqlite_..., which SQLite reserves for itself; refused
            # on every engine, so a store can move between them.
            raise ValueError(
                f"memory_store_id {memory_store_id!r} starts with 'sqlite_': SQLite reserves "
                "table names with that prefix, so choose another id"
            )
        strategy = enum_member(SearchStrategy, search_strategy, "search_strategy")
        sync = enum_member(SearchIndexSyncMode, search_index_sync, "search_index_sync")
        if sync is SearchIndexSyncMode.AUTO and strategy is SearchStrategy.KEYWORD:
            raise ValueError(
                "search_index_sync=SearchIndexSyncMode.AUTO is supported only with "
                "SearchStrategy.HYBRID; keyword search rejects AUTO"
            )
        if memory_retention_config is not NOT_SET_MARKER and not isinstance(
            memory_retention_config, MemoryRetentionConfig
        ):
            raise TypeError("memory_retention_config must be a MemoryRetentionConfig")
        return memory_store_id

    # ------------------------------------------------------------------ properties

    @property
    def overview(self) -> Overview:
        """Counts and bounded pages for browsing the store (``_overview``: the ``/ui``)."""
        return self._overview

    @property
    def search_strategy(self) -> SearchStrategy:
        """The strategy ``search()`` uses."""
        return self._core.strategy

    @property
    def embedder(self) -> IEmbedder | None:
        """The embedder used for writes and text queries (None: explicit vectors only)."""
        return self._core.embedder

    @property
    def vector_dim(self) -> int | None:
        """Dimension of the local vectors, or None for a store without vector storage."""
        return self._core.vector_dim

    @property
    def memory_retention_config(self) -> MemoryRetentionConfig:
        """Retention settings in force."""
        return self._core.retention

    # ------------------------------------------------------------------ writes

    def _add_prepared_batches(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """Add caller-prepared batches in one transaction; returns ids in input order.

        ``store_kwargs``: ``batch_size`` (rows per ``executemany``, default 256);
        ``require_thread`` (a thread id whose thread row must exist when the write commits,
        else KeyError and nothing is written: how a handle to a deleted thread is refused).
        """
        return self._writes.add_with_relations(batches, [], store_kwargs)[0]

    async def _add_prepared_batches_async(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """:meth:`_add_prepared_batches` in a worker thread."""
        return await asyncio.to_thread(self._add_prepared_batches, batches, **store_kwargs)

    def add_with_relations(
        self,
        batches: builtins.list[PendingRecordBatch],
        relations: Sequence[Mapping[str, Any]],
        **store_kwargs: Any,
    ) -> tuple[builtins.list[str], builtins.list[str]]:
        """Add batches and relations in ONE transaction: all of it lands, or none.

        Each relation is a mapping of :meth:`add_relations` keyword arguments; its endpoints
        may be records of these batches (give them explicit ids). Returns (record ids,
        relation ids). ``store_kwargs`` as for :meth:`add_batches`.
        """
        return self._writes.add_with_relations(batches, relations, store_kwargs)

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
        return self._writes.create_thread_record(
            thread_id, user_id, agent_id, metadata, runtime_config
        )

    def update_thread_record(
        self,
        thread_id: str,
        *,
        metadata: Any = NOT_SET_MARKER,
        runtime_config: Any = NOT_SET_MARKER,
        runtime_state: Any = NOT_SET_MARKER,
    ) -> int:
        """Replace a thread's metadata / runtime configuration / state; returns 0 or 1."""
        return self._writes.update_thread_record(thread_id, metadata, runtime_config, runtime_state)

    def add_image(
        self,
        image: bytes,
        *,
        mime_type: str,
        description: str | None = None,
        image_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        message_id: str | None = None,
        metadata: Any = None,
        timestamp: str | None = None,
        ttl_days: Any = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        require_thread: str | None = None,
    ) -> str:
        """Store an image (bytes apart from the record) whose description is its retrieval
        text; returns its id. The record and its bytes are written in one transaction
        (``require_thread``: see :meth:`add_batches`)."""
        return self._images.add_image(
            image,
            mime_type=mime_type,
            description=description,
            image_id=image_id,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            message_id=message_id,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            require_thread=require_thread,
        )

    def update_image_payload(
        self, image_id: str, *, image: Any = NOT_SET_MARKER, mime_type: Any = NOT_SET_MARKER
    ) -> int:
        """Replace an image's bytes and/or MIME type; returns 1, or 0 for an unknown id."""
        return self._images.update_image_payload(image_id, image, mime_type)

    def update(
        self,
        record_type: str,
        record_id: str,
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
        """Update one record (see page 000's rules); returns 1, or 0 for an unknown id.

        Omitted arguments leave fields unchanged; ``None`` clears them. An expired record
        that has not been purged can be revived by a new expiry.
        """
        return self._updates.update(
            record_type,
            record_id,
            content=content,
            index_text=index_text,
            embedding=embedding,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            status=status,
            text=text,
        )

    def reembed(self, embedder: IEmbedder, *, batch_size: int = 256) -> int:
        """Move the store to another embedding model: every chunk with retrieval text is
        embedded again by ``embedder`` (``batch_size`` texts per call) and the store records
        the new model identity and dimension. One transaction: a crash or error leaves the
        store as it was. Returns the number of vectors written. Open the store with its old
        model (or ``embedder=None``) to call it; other processes must reopen the store."""
        return reembed(self._core, self._schema, self._keeper, embedder, batch_size)

    def sync_search_index(self) -> None:
        """Refresh the keyword index (needed under ``SearchIndexSyncMode.MANUAL``)."""
        core = self._core
        with core.lock:
            core.check_open()
            if core.has_keyword:
                with self._keeper.write():
                    core.dialect.keyword_index_rebuild()

    # ------------------------------------------------------------------ reads

    def get(
        self, record_type: str, record_id: str, include_bytes: Any = NOT_SET_MARKER
    ) -> Record | None:
        """Return the record, or None when it does not exist or has expired."""
        return self._dialect.routed_read(
            lambda: self._reads.get(record_type, record_id, include_bytes)
        )

    def get_many(self, record_type: str, record_ids: Sequence[str]) -> builtins.dict[str, Record]:
        """The records of one type among ``record_ids`` that exist and have not expired, as
        ``{id: record}``, in one query: an addition of ours (the reference has ``get``)."""
        return self._dialect.routed_read(lambda: self._reads.get_many(record_type, record_ids))

    def memory_history(self, memory_id: str) -> builtins.list[MemoryVersion]:
        """A memory's versions, oldest first (``schema/_history``; read from the primary)."""
        return read_history(self._core, memory_id)

    def restore_history(self, versions: Sequence[MemoryVersion]) -> int:
        """Replace those memories' history with ``versions`` (an import; ``schema/_history``)."""
        return restore_history(self._core, versions)

    def restore_validity(self, windows: Sequence[tuple[str, str, str, str | None]]) -> int:
        """Set when records were true: ``(record_type, id, valid_from, valid_until)``, ISO-8601
        (an import; ``schema/_validity``)."""
        return restore_validity(self._core, windows)

    def list(
        self,
        record_type: str,
        limit: Any = NOT_SET_MARKER,
        thread_id: Any = NOT_SET_MARKER,
        user_id: Any = NOT_SET_MARKER,
        agent_id: Any = NOT_SET_MARKER,
        metadata_filter: Any = NOT_SET_MARKER,
        include_bytes: Any = NOT_SET_MARKER,
        record_id: Any = NOT_SET_MARKER,
    ) -> builtins.list[Record]:
        """List records of one type: the newest ``limit`` (default MAX_LIST_LIMIT, None = all),
        oldest to newest. Scope filters: omitted = any, None = unscoped only; ignored for
        profiles. ``metadata_filter``: omitted = any, None = records without metadata."""
        return self.list_records(
            [record_type],
            limit=limit,
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            metadata_filter=metadata_filter,
            record_id=record_id,
            include_bytes=include_bytes,
        )

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
        include_bytes: Any = NOT_SET_MARKER,
    ) -> builtins.list[Record]:
        """``list()`` over several record types at once, in one insertion order.

        ``include_bytes``: True loads every listed image's bytes; a list of image ids loads
        only those (an allow-list); otherwise images come without bytes.
        """
        return self._dialect.routed_read(
            partial(
                self._reads.list_records,
                record_types,
                limit=limit,
                thread_id=thread_id,
                user_id=user_id,
                agent_id=agent_id,
                metadata_filter=metadata_filter,
                record_id=record_id,
                include_bytes=include_bytes,
            )
        )

    def list_thread_messages(
        self,
        thread_id: str,
        last_n: int | None = None,
        range_start_seq_no: int | None = None,
        range_end_seq_no: int | None = None,
        include_bytes: Any = NOT_SET_MARKER,
    ) -> builtins.list[MessageRecord]:
        """A thread's messages in ``seq_no`` order: inclusive seq_no range, then the last
        ``last_n`` of those. Only the thread owner's messages (see ``_threads``)."""
        return self._dialect.routed_read(
            partial(
                self._reads.list_thread_messages,
                thread_id,
                last_n,
                range_start_seq_no,
                range_end_seq_no,
            )
        )

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
        as_of: datetime | None = None,
    ) -> builtins.list[tuple[Record, float]]:
        """Up to ``k`` (record, distance) pairs, distance ascending, one per logical record.

        VECTOR: cosine distance. KEYWORD: ``1 / (1 + bm25)``. HYBRID: score fusion of both,
        with records from a period the query names preferred (``_hybrid.hybrid_rank``). A
        scope id given with ``exact_*_match=False`` filters nothing but adds a small penalty
        to records that miss it, so matches rank higher. ``as_of`` (an addition of ours):
        the records true at that time, whatever their status now (``schema/_validity``).
        """
        return self._dialect.routed_read(
            partial(
                self._search.search,
                query,
                k,
                query_vector=query_vector,
                thread_id=thread_id,
                user_id=user_id,
                agent_id=agent_id,
                exact_user_match=exact_user_match,
                exact_agent_match=exact_agent_match,
                exact_thread_match=exact_thread_match,
                record_types=record_types,
                metadata_filter=metadata_filter,
                num_hops=num_hops,
                max_linked_results=max_linked_results,
                include_invalid_results=include_invalid_results,
                as_of=as_of,
            )
        )

    def thread_owner(self, thread_id: str) -> tuple[str | None, str | None] | None:
        """(user_id, agent_id) owning ``thread_id`` since its first write, or None when no
        record names it (see ``_threads``)."""
        check_lookup(thread_id, "thread_id")
        with self._core.lock:
            self._core.check_open()
            return self._core.owners.owner(thread_id)

    def thread_conflicts(self) -> builtins.list[str]:
        """Thread ids that hold rows of users other than their owner, written before thread
        ids had owners (schema version 7); reads through these threads show the owner's."""
        with self._core.lock:
            self._core.check_open()
            return self._core.owners.conflicts()

    def id_secret(self) -> bytes:
        """This store's random secret (32 bytes, made once, kept in its meta table): the key
        of ids a caller must not be able to compute, such as the integrations' item ids."""
        return self._schema.id_secret()

    def adopt_id_secret(self, secret: bytes) -> bool:
        """Take another store's ``id_secret`` while this one holds no records (an import of
        its export), so ids derived there are found here; returns whether it did."""
        return self._schema.adopt_id_secret(secret)

    # ------------------------------------------------------------------ deletes

    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record with its retrieval rows; returns 0 or 1.

        With ``cascade`` an actor profile also takes its owned threads (with their messages
        and memories) and every remaining row scoped to the actor, in the same transaction,
        even when the profile row itself is already gone.
        """
        return self._deletes.delete(record_type, record_id, cascade)

    @property
    def deletes_leave_bytes(self) -> bool:
        """Whether deleted rows' bytes stay in the table files until :meth:`vacuum` (an
        addition of ours: True on PostgreSQL, False on SQLite, whose deletes zero them)."""
        return self._dialect.deletes_leave_bytes

    def vacuum(self) -> builtins.list[str]:
        """Rewrite the store's tables so no byte of a deleted row stays in their files
        (an addition of ours, behind ``oam purge``): PostgreSQL's ``VACUUM (FULL, ANALYZE)``,
        which locks each table while it is rewritten; SQLite's ``VACUUM`` and a truncated
        WAL. Returns what was rewritten."""
        with self._core.lock:
            self._core.check_open()
            return self._dialect.vacuum()

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread row, its owner's messages, thread-scoped memories and retrieval
        rows in one transaction, and release the thread id; returns the number of thread rows
        deleted (0 or 1). Rows another user wrote with this id before thread ids had owners
        stay (see ``_threads``)."""
        return self._deletes.delete_thread(thread_id)

    def delete_thread_messages(self, thread_id: str) -> int:
        """Delete a thread's messages (its owner's and user-less ones) with their retrieval
        rows in one transaction; the thread row, its memories and its ``seq_no`` mark stay
        (later messages number on). Returns how many were deleted."""
        return self._deletes.delete_thread_messages(thread_id)

    def purge_expired(self) -> int:
        """Physically remove expired records; returns how many were removed.

        Expired records are invisible at once; the store also purges on open and after
        writes at most every ``PURGE_INTERVAL_S`` seconds (``_retention``).
        """
        return self._retention.purge_expired()

    def close(self) -> None:
        """Close the store's own connection (a caller's connection stays open); idempotent.

        A large in-process vector index is saved beside a SQLite file first, so the next
        open maps it instead of reading every vector back.
        """
        with self._core.lock:
            if not self._core.closed:
                self._core.closed = True
                self._keeper.close()
                self._vectors.close()
                self._dialect.close()

    # ------------------------------------------------------------------ relations

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
        *,
        allow_cross_user: bool = False,
    ) -> builtins.list[str]:
        """Store directed relations (one transaction); returns their ids in input order.

        Both endpoints must exist and be memory-like; a pair of records holds at most one
        relation, in either orientation. Records of different users (``None`` counts as a
        user) are linked only with ``allow_cross_user=True``.
        """
        return self._links.add_relations(
            source_record_ids,
            source_record_types,
            target_record_ids,
            target_record_types,
            relation_types,
            opposite_relation_types,
            relation_ids,
            timestamps,
            metadata,
            allow_cross_user,
        )

    def get_relation(
        self,
        source_record_id: Any = NOT_SET_MARKER,
        source_record_type: Any = NOT_SET_MARKER,
        target_record_id: Any = NOT_SET_MARKER,
        target_record_type: Any = NOT_SET_MARKER,
        relation_type: Any = NOT_SET_MARKER,
        relation_id: Any = NOT_SET_MARKER,
    ) -> RecordRelation | None:
        """One relation, by id or by its full (source, target, type) tuple."""
        return self._links.get_relation(
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
            relation_id,
        )

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
        """Relations matching every given field, oldest first (``limit`` newest; None = all)."""
        return self._links.list_relations(
            relation_type,
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            limit,
            metadata_filter,
            relation_id,
        )

    def update_relations(
        self,
        relation_ids: str | builtins.list[str],
        relation_types: Any = NOT_SET_MARKER,
        opposite_relation_types: Any = NOT_SET_MARKER,
        timestamps: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
    ) -> builtins.list[str]:
        """Change relation fields (omitted = kept, None clears timestamp / metadata);
        returns the ids that were updated."""
        return self._links.update_relations(
            relation_ids, relation_types, opposite_relation_types, timestamps, metadata
        )

    def delete_relations(self, relation_ids: str | builtins.list[str]) -> int:
        """Delete relations by id; returns how many existed."""
        return self._links.delete_relations(relation_ids)

    def expand_links(
        self,
        records: Sequence[Record],
        num_hops: int,
        max_linked_results: int,
        include_invalid: bool,
        exact_scope: Mapping[str, str | None] | None = None,
    ) -> builtins.list[Record]:
        """The records with the (relation, record) pairs reachable in ``num_hops`` hops
        attached as ``linked_results`` (breadth first, at most ``max_linked_results`` in all);
        records are immutable, so each one that gains links is a copy.

        ``exact_scope`` ({"user": id, ...}) is the search's exact scope: a linked record
        outside it is neither attached nor expanded, so links never leak another user's
        records into a scoped search.
        """
        return self._links.expand_links(
            records, num_hops, max_linked_results, include_invalid, exact_scope
        )

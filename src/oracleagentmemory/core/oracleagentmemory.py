"""``OracleAgentMemory``: the client most applications use."""

from __future__ import annotations

import asyncio
import builtins
import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from oracleagentmemory._async import async_twin
from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.agentmemory import IAgentMemory
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.memorystore import MetadataFilter as MetadataFilter
from oracleagentmemory.apis.message import (
    ImageContent as ImageContent,
    ImageMimeType,
    MetadataValue as MetadataValue,
)
from oracleagentmemory.apis.records import (
    MEMORY_RECORD_TYPES,
    AgentProfileRecord,
    ImageRecord,
    MemoryRecord,
    MessageRecord,
    Record as Record,
    RecordStatus as RecordStatus,
    ScopedRecord as ScopedRecord,
    ThreadRecord,
    UserProfileRecord,
)
from oracleagentmemory.apis.relations import (
    MEMORY_TYPES as MEMORY_TYPES,
    MemoryLinkType,
    MemoryRecordType,
    RelationType as RelationType,
)
from oracleagentmemory.apis.searchconfig import ISearchConfig as ISearchConfig
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.searchscope import SearchScope as SearchScope
from oracleagentmemory.apis.ttl import TimeToLiveAnchor as TimeToLiveAnchor
from oracleagentmemory.core._client._client_setup import (
    check_llms,
    client_extraction,
    client_store,
    open_store as open_store,
    resolve_embedder as resolve_embedder,
    store_options,
)
from oracleagentmemory.core._client._memory_ops import (
    AutoLinkSettings,
    add_memory_record,
    delete_memory_record,
    delete_record_link,
    get_memory_history as _memory_history,
    link_records,
    memory_arguments,
    update_memory_record,
    update_record_link,
)
from oracleagentmemory.core._client._observed import CLIENT_OPERATIONS
from oracleagentmemory.core._client._runtime import (
    CONTEXT_CARD_TOKEN_LIMIT_DEFAULT as CONTEXT_CARD_TOKEN_LIMIT_DEFAULT,
    CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT as CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT,
    MAX_MESSAGE_TOKEN_LENGTH_DEFAULT as MAX_MESSAGE_TOKEN_LENGTH_DEFAULT,
    MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT as MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT,
    ResolvedSettings,
    flatten,
    thread_settings,
)
from oracleagentmemory.core._client._thread_handles import ThreadHandles
from oracleagentmemory.core._client._validation import (
    check_single,
    check_timeout,
    check_wait,
    no_extra_kwargs,
)
from oracleagentmemory.core._client.messages import _images
from oracleagentmemory.core._client.messages._message_content import load_images
from oracleagentmemory.core._client.messages._thread_messages import image_bytes_wanted
from oracleagentmemory.core._client.search._scope import resolve_client_scope
from oracleagentmemory.core._client.search._search import (
    client_search_config,
    run_search,
    search_arguments,
)
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import (
    SearchIndexSyncMode as SearchIndexSyncMode,
    SearchStrategy as SearchStrategy,
)
from oracleagentmemory.core.embedders.embedder import Embedder
from oracleagentmemory.core.extractors import (
    OneShotThreadMemoryExtractor as OneShotThreadMemoryExtractor,
)
from oracleagentmemory.core.extractors._background import MemoryExtractionStats
from oracleagentmemory.core.extractors._extractor import (
    ExtractedMemory as ExtractedMemory,
    MemoryLinkTargetCandidate as MemoryLinkTargetCandidate,
)
from oracleagentmemory.core.extractors._service import DELETE_WAIT_SECONDS
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    CONTEXT_SUMMARY_UPDATE_FREQUENCY_DEFAULT as CONTEXT_SUMMARY_UPDATE_FREQUENCY_DEFAULT,
    MEMORY_EXTRACTION_FREQUENCY_DEFAULT as MEMORY_EXTRACTION_FREQUENCY_DEFAULT,
    MEMORY_EXTRACTION_TOKEN_LIMIT_DEFAULT as MEMORY_EXTRACTION_TOKEN_LIMIT_DEFAULT,
    MEMORY_EXTRACTION_WINDOW_DEFAULT as MEMORY_EXTRACTION_WINDOW_DEFAULT,
    MEMORY_LINKING_TOKEN_LIMIT_DEFAULT as MEMORY_LINKING_TOKEN_LIMIT_DEFAULT,
    BackgroundExtractionQueueFullBehavior as BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig as MemoryExtractionConfig,
    MemoryExtractionImageContext as MemoryExtractionImageContext,
    MemoryExtractionMode as MemoryExtractionMode,
    MemoryLinkExtractionMode as MemoryLinkExtractionMode,
    resolve_memory_extraction_config_argument as resolve_memory_extraction_config_argument,
)
from oracleagentmemory.core.imageinputlimitconfig import (
    ImageInputLimitConfig as ImageInputLimitConfig,
)
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore as OracleDBMemoryStore
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.retention import MemoryRetentionConfig as MemoryRetentionConfig
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig as MemorySearchConfig,
    PruningMemorySearchConfig as PruningMemorySearchConfig,
    TopKMemorySearchConfig as TopKMemorySearchConfig,
)
from oracleagentmemory.core.searchresult import (
    OracleSearchResultFormatConfig as OracleSearchResultFormatConfig,
)
from oracleagentmemory.core.thread import OracleThread
from oracleagentmemory.observability._instrument import instrument

ConcreteEmbedder = Embedder
"""The reference's other name for :class:`~oracleagentmemory.core.embedders.Embedder`."""
DbStoreBackend = OracleDBMemoryStore
"""The reference's other name for :class:`OracleDBMemoryStore`."""

log = logging.getLogger("oracleagentmemory.client")


@instrument("AgentMemoryStartedEvent", "AgentMemoryCompletedEvent", CLIENT_OPERATIONS)
class OracleAgentMemory(IAgentMemory):
    """Agent memory on a store: threads, messages, memories, profiles and search.

    Give ``connection`` (a SQLite path, ``"sqlite:///path"``, ``":memory:"`` or a
    ``sqlite3.Connection``; the file is created on first use unless ``schema_policy`` says
    otherwise) or a ready ``store``. ``embedder`` defaults to the bundled offline model.
    Thread settings resolve per field: the operation's value, else the stored thread's, else
    the client's, else the SDK default. ``read_connection`` (PostgreSQL): a hot standby that
    serves searches and reads once it has replayed this client's last write (docs/scaling.md).
    """

    def __init__(
        self,
        *,
        store: OracleMemoryStore | NotSet = NOT_SET_MARKER,
        connection: object = NOT_SET_MARKER,
        embedder: IEmbedder | str | NotSet = NOT_SET_MARKER,
        llm: Any = NOT_SET_MARKER,
        memory_extraction_config: Any = NOT_SET_MARKER,
        image_input_limit_config: Any = NOT_SET_MARKER,
        schema_policy: SchemaPolicy | str | NotSet = NOT_SET_MARKER,
        memory_store_id: str | NotSet = NOT_SET_MARKER,
        table_name_prefix: str | NotSet = NOT_SET_MARKER,
        schema_owner: str | NotSet = NOT_SET_MARKER,
        search_strategy: Any = NOT_SET_MARKER,
        search_index_sync: Any = NOT_SET_MARKER,
        extract_memories: bool | NotSet = NOT_SET_MARKER,
        memory_extraction_custom_instructions: str | NotSet = NOT_SET_MARKER,
        memory_retention_config: Any = NOT_SET_MARKER,
        search_config: Any = NOT_SET_MARKER,
        pruner_llm: Any = NOT_SET_MARKER,
        read_connection: object = NOT_SET_MARKER,
    ) -> None:
        arguments = locals()  # the store options and client settings, by name
        self._closed = False
        self._lock = threading.RLock()
        self._store, self._owns_store = client_store(store, connection, store_options(arguments))
        check_llms(llm, pruner_llm)
        self._pruner_llm: ILlm | None = None if pruner_llm is NOT_SET_MARKER else pruner_llm
        self._client_settings = flatten(thread_settings(arguments), "OracleAgentMemory")
        self._extraction = client_extraction(self._store, self._client_settings)

    # ------------------------------------------------------------------ helpers

    @property
    def store(self) -> OracleMemoryStore:
        """The store this client reads and writes."""
        return self._store

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this OracleAgentMemory client is closed")

    @property
    def _threads(self) -> ThreadHandles:
        return ThreadHandles(self._store, self, self._extraction, self._client_settings)

    # ------------------------------------------------------------------ profiles

    def add_user(
        self,
        user_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Add an unscoped user profile; the record id is ``user_id``."""
        self._check_open()
        check_single(user_id=user_id, metadata=metadata)
        return self._store.add_user(user_id, information, metadata)

    def add_agent(
        self,
        agent_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Add an unscoped agent profile; the record id is ``agent_id``."""
        self._check_open()
        check_single(agent_id=agent_id, metadata=metadata)
        return self._store.add_agent(agent_id, information, metadata)

    def list_users(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> builtins.list[UserProfileRecord]:
        """User profiles, oldest first (``limit`` newest; None = all)."""
        self._check_open()
        return self._store.list("user_profile", metadata_filter=metadata_filter, limit=limit)  # type: ignore[return-value]

    def list_agents(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> builtins.list[AgentProfileRecord]:
        """Agent profiles, oldest first (``limit`` newest; None = all)."""
        self._check_open()
        return self._store.list("agent_profile", metadata_filter=metadata_filter, limit=limit)  # type: ignore[return-value]

    def delete_user(self, user_id: str, cascade: bool = True) -> int:
        """Delete a user profile and, with ``cascade`` (default), the user's threads, messages
        and memories, in one transaction; returns 1, or 0 when the profile was absent."""
        self._check_open()
        self._extraction.wait(self._extraction.threads_of(user_id=user_id), DELETE_WAIT_SECONDS)
        return self._store.delete("user_profile", user_id, cascade=cascade)

    def delete_agent(self, agent_id: str, cascade: bool = True) -> int:
        """Delete an agent profile and, with ``cascade`` (default), everything scoped to it."""
        self._check_open()
        self._extraction.wait(self._extraction.threads_of(agent_id=agent_id), DELETE_WAIT_SECONDS)
        return self._store.delete("agent_profile", agent_id, cascade=cascade)

    # ------------------------------------------------------------------ memories

    def add_memory(
        self,
        content: str,
        *,
        memory_type: MemoryRecordType | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        thread_id: str | NotSet = NOT_SET_MARKER,
        memory_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        status: Any = NOT_SET_MARKER,
        autonomous_linking: bool | NotSet = NOT_SET_MARKER,
        memory_id_to_link: str | NotSet = NOT_SET_MARKER,
        link_type: MemoryLinkType | NotSet = NOT_SET_MARKER,
        link_id: str | NotSet = NOT_SET_MARKER,
        link_timestamp: str | NotSet | None = NOT_SET_MARKER,
        link_metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> str:
        """Add a memory (``memory_type``: memory, guideline, fact or preference); omitted
        scope ids leave it unscoped in that dimension. Returns its id."""
        self._check_open()
        return add_memory_record(
            self._store,
            content,
            **memory_arguments(locals()),
            auto_link=AutoLinkSettings.of(ResolvedSettings(self._client_settings)),
            **store_kwargs,
        )

    def update_memory(
        self,
        memory_id: str,
        content: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        status: Any = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Update a memory-like record; omitted fields and the scope are kept, metadata is
        replaced whole. Returns the id; KeyError when no such memory exists."""
        self._check_open()
        no_extra_kwargs("update_memory", kwargs)
        if content is not NOT_SET_MARKER and not isinstance(content, str):
            raise TypeError("content must be a string")
        return update_memory_record(
            self._store,
            memory_id,
            text=content,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            status=status,
        )

    def delete_memory(self, memory_id: str) -> int:
        """Delete a memory-like record by id; returns 1, or 0 for an unknown id."""
        self._check_open()
        return delete_memory_record(self._store, self._extraction, memory_id)

    get_memory_history = _memory_history

    def list_memories(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> builtins.list[MemoryRecord]:
        """Memory-like records of every kind, oldest first (``limit`` newest; None = all).
        Scope filters: omitted = any, None = unscoped only."""
        self._check_open()
        return self._store.list_records(  # type: ignore[return-value]
            MEMORY_RECORD_TYPES,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            metadata_filter=metadata_filter,
            limit=limit,
        )

    def list_messages(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> builtins.list[MessageRecord]:
        """Message records, oldest first (``limit`` newest; None = all); image parts carry
        their current descriptions, and their bytes only with ``include_image_bytes=True``."""
        self._check_open()
        with_bytes = image_bytes_wanted(include_image_bytes)
        records = self._store.list(
            "message",
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            metadata_filter=metadata_filter,
            limit=limit,
        )
        # Image parts with their image records' current descriptions, as a thread's
        # get_messages gives them (one lookup per image; other messages as they are).
        return load_images(self._store, records, with_bytes)

    # ------------------------------------------------------------------ images

    def add_image(
        self,
        image: bytes,
        description: str | NotSet | None = NOT_SET_MARKER,
        mime_type: ImageMimeType | str | NotSet = NOT_SET_MARKER,
        image_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> str:
        """Store an image; its ``description`` is what search matches. ``mime_type`` may be
        omitted for PNG, JPEG and WEBP bytes (detected from their signature). Returns its id.
        Without a description, the configured LLM (if it can see images) writes one: before
        returning (INLINE extraction mode) or in the background (BACKGROUND, the default)."""
        self._check_open()
        return _images.add_image(
            self._store,
            image,
            **_images.image_arguments(locals(), _images.ADD_ARGUMENTS),
            limits=_images.image_limits(ResolvedSettings(self._client_settings)),
            captions=self._captions(thread_id, user_id, agent_id),
            store_kwargs=store_kwargs,
        )

    def _captions(self, thread_id: Any, user_id: Any, agent_id: Any) -> _images.CaptionSettings:
        settings = ResolvedSettings(self._client_settings)
        return _images.client_captions(settings, self._extraction, thread_id, user_id, agent_id)

    def list_images(
        self,
        image_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_bytes: bool | builtins.list[str] | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> builtins.list[ImageRecord]:
        """Image records, oldest first; bytes only with ``include_bytes`` (True, or a list
        of image ids to load)."""
        self._check_open()
        return self._store.list(  # type: ignore[return-value]
            "image",
            record_id=image_id,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            metadata_filter=metadata_filter,
            include_bytes=include_bytes,
            limit=limit,
        )

    def update_image(
        self,
        image_id: str,
        image: bytes | NotSet = NOT_SET_MARKER,
        description: str | NotSet | None = NOT_SET_MARKER,
        mime_type: ImageMimeType | str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Update an image (omitted fields kept; new bytes need their ``mime_type``; a new
        description is re-indexed; ``description=None`` has the configured LLM write a new
        one; metadata is replaced whole). KeyError when unknown."""
        self._check_open()
        no_extra_kwargs("update_image", kwargs)
        record = _images.find_image(self._store, image_id)
        return _images.update_image(
            self._store,
            image_id,
            **_images.image_arguments(locals(), _images.UPDATE_ARGUMENTS),
            limits=_images.image_limits(ResolvedSettings(self._client_settings)),
            captions=self._captions(record.thread_id, record.user_id, record.agent_id),
        )

    def delete_image(self, image_id: str) -> int:
        """Delete an image and its bytes; returns 1, or 0 when there is none."""
        self._check_open()
        return _images.delete_image(self._store, image_id)

    # ------------------------------------------------------------------ links

    def link_records(
        self,
        source_record_id: str,
        source_record_type: str,
        target_record_id: str,
        target_record_type: str,
        relation_type: str,
        opposite_relation_type: str | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        *,
        allow_cross_user: bool = False,
    ) -> str:
        """Link two memory-like records (``"supersedes"``, ``"contradicts"``, ``"refines"``,
        ``"supports"``, ``"duplicates"`` or a custom type); returns the relation id. One
        relation per pair of records; the opposite label names it seen from the target.
        Records of different users are linked only with ``allow_cross_user=True``."""
        self._check_open()
        return link_records(
            self._store,
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
            opposite_relation_type,
            relation_id,
            timestamp,
            metadata,
            allow_cross_user,
        )

    def update_record_link(
        self,
        relation_id: str,
        relation_type: str | NotSet = NOT_SET_MARKER,
        opposite_relation_type: str | NotSet = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> int:
        """Change a relation (omitted fields kept; a built-in type brings its fixed opposite;
        None clears timestamp or metadata); returns 1, or 0 for an unknown id."""
        self._check_open()
        return update_record_link(
            self._store, relation_id, relation_type, opposite_relation_type, timestamp, metadata
        )

    def delete_record_link(
        self,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        relation_type: str | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> int:
        """Delete a relation by ``relation_id``, or by its full stored source-to-target tuple;
        returns 1, or 0 when there is none."""
        self._check_open()
        return delete_record_link(
            self._store,
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
            relation_id,
        )

    # ------------------------------------------------------------------ threads

    def create_thread(
        self,
        *,
        thread_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        llm: Any = NOT_SET_MARKER,
        max_message_token_length: int | NotSet = NOT_SET_MARKER,
        message_shortening_input_token_limit: int | NotSet = NOT_SET_MARKER,
        memory_extraction_config: Any = NOT_SET_MARKER,
        image_input_limit_config: Any = NOT_SET_MARKER,
        search_config: Any = NOT_SET_MARKER,
        context_card_token_limit: int | NotSet = NOT_SET_MARKER,
        context_card_type_search_concurrency: int | NotSet = NOT_SET_MARKER,
        extract_memories: bool | NotSet = NOT_SET_MARKER,
        memory_extraction_window: int | NotSet = NOT_SET_MARKER,
        context_summary_update_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_token_limit: int | NotSet = NOT_SET_MARKER,
        memory_extraction_custom_instructions: str | NotSet | None = NOT_SET_MARKER,
        memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSet = NOT_SET_MARKER,
        enable_context_summary: bool | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> OracleThread:
        """Create and store a thread; returns its handle.

        Omitted ids are generated (UUIDs). The settings given here are persisted with the
        thread (except ``llm``) and win over the client's for this thread.
        """
        self._check_open()
        no_extra_kwargs("create_thread", kwargs)
        return self._threads.create(
            thread_settings(locals()), thread_id, user_id, agent_id, metadata
        )

    def get_thread(
        self,
        thread_id: str,
        *,
        llm: Any = NOT_SET_MARKER,
        max_message_token_length: int | NotSet = NOT_SET_MARKER,
        message_shortening_input_token_limit: int | NotSet = NOT_SET_MARKER,
        memory_extraction_config: Any = NOT_SET_MARKER,
        image_input_limit_config: Any = NOT_SET_MARKER,
        search_config: Any = NOT_SET_MARKER,
        context_card_token_limit: int | NotSet = NOT_SET_MARKER,
        context_card_type_search_concurrency: int | NotSet = NOT_SET_MARKER,
        extract_memories: bool | NotSet = NOT_SET_MARKER,
        memory_extraction_window: int | NotSet = NOT_SET_MARKER,
        context_summary_update_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_token_limit: int | NotSet = NOT_SET_MARKER,
        memory_extraction_custom_instructions: str | NotSet | None = NOT_SET_MARKER,
        memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSet = NOT_SET_MARKER,
        enable_context_summary: bool | NotSet = NOT_SET_MARKER,
    ) -> OracleThread:
        """A handle on a stored thread; the settings given here apply to this handle only
        (they win over the stored ones, which win over the client's). KeyError when unknown."""
        self._check_open()
        return self._threads.open(thread_id, thread_settings(locals()))

    def update_thread(
        self,
        thread_id: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        llm: Any = NOT_SET_MARKER,
        extract_memories: bool | NotSet = NOT_SET_MARKER,
        max_message_token_length: int | NotSet = NOT_SET_MARKER,
        message_shortening_input_token_limit: int | NotSet = NOT_SET_MARKER,
        memory_extraction_window: int | NotSet = NOT_SET_MARKER,
        context_summary_update_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_token_limit: int | NotSet = NOT_SET_MARKER,
        context_card_token_limit: int | NotSet = NOT_SET_MARKER,
        enable_context_summary: bool | NotSet = NOT_SET_MARKER,
        memory_extraction_custom_instructions: str | NotSet | None = NOT_SET_MARKER,
        memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSet = NOT_SET_MARKER,
        memory_extraction_config: Any = NOT_SET_MARKER,
        image_input_limit_config: Any = NOT_SET_MARKER,
        search_config: Any = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> OracleThread:
        """Persist new metadata (replaced whole) and durable setting overrides; ownership
        (user and agent) cannot change. Returns a handle with the resolved settings."""
        self._check_open()
        no_extra_kwargs("update_thread", kwargs)
        self._threads.update(thread_id, metadata, thread_settings(locals()))
        return self.get_thread(thread_id, llm=llm, search_config=search_config)

    def list_threads(
        self,
        user_id: str | None,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> builtins.list[ThreadRecord]:
        """Threads of a user (None = threads without a user), oldest first."""
        self._check_open()
        return self._store.list(  # type: ignore[return-value]
            "thread",
            user_id=user_id,
            agent_id=agent_id,
            metadata_filter=metadata_filter,
            limit=limit,
        )

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, thread-scoped memories and retrieval data, in
        one transaction; returns 1, or 0 when no thread row existed."""
        self._check_open()
        if not isinstance(thread_id, str):
            raise TypeError("thread_id must be a string")
        self._extraction.wait([thread_id], DELETE_WAIT_SECONDS)
        return self._store.delete_thread(thread_id)

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        *,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        exact_user_match: bool | NotSet = NOT_SET_MARKER,
        exact_agent_match: bool | NotSet = NOT_SET_MARKER,
        exact_thread_match: bool | NotSet = NOT_SET_MARKER,
        max_results: int | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet = NOT_SET_MARKER,
        soft_token_budget: int | NotSet = NOT_SET_MARKER,
        record_types: builtins.list[str] | NotSet = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        num_hops: int | NotSet = NOT_SET_MARKER,
        max_linked_results: int | NotSet = NOT_SET_MARKER,
        include_invalid_results: bool | NotSet = NOT_SET_MARKER,
        scope: Any = NOT_SET_MARKER,
        as_of: datetime | None = None,
    ) -> builtins.list[SearchResult]:
        """Search records relevant to ``query`` within an explicit, exact user scope.

        ``user_id`` is required (None + exact match = records without a user); omitted
        ``agent_id`` / ``thread_id`` leave those dimensions open; an id given with
        ``exact_*_match=False`` only ranks matching records higher. ``as_of`` (an addition
        of ours): the records true at that time, whatever their status now.
        """
        self._check_open()
        scope_args, options = search_arguments(locals())
        return run_search(
            self._store,
            query,
            resolve_client_scope(**scope_args),
            **options,
            search_config=client_search_config(ResolvedSettings(self._client_settings)),
            pruner=self._pruner_llm,
        )

    # ------------------------------------------------------------------ lifecycle

    def wait_for_memory_extraction(
        self, timeout: float | None = 300.0, *, raise_on_failure: bool = False
    ) -> None:
        """Wait up to ``timeout`` seconds (None: no limit) for the background extraction this
        client accepted before the call, on all its threads. Work accepted later, or by
        another client or process, is not waited for; failed extraction counts as finished.

        ``raise_on_failure=True`` (beyond the reference): once the wait ends, raise
        :class:`~oracleagentmemory.core.extractors.MemoryExtractionError` if extraction or
        summary work of this client failed since the last such report (a timeout still
        returns quietly)."""
        check_wait(timeout, raise_on_failure)
        self._extraction.wait(None, timeout, raise_on_failure)

    def get_memory_extraction_stats(self) -> MemoryExtractionStats:
        """Counters of this client's memory extraction (accepted, completed, failed, dropped,
        rejected, resumed, queued, running)."""
        return self._extraction.stats()

    def close(self, timeout: float | None = 300.0) -> None:
        """Stop accepting background work, wait up to ``timeout`` seconds for the work
        accepted so far, and close the store this client opened (a store passed in stays
        open). Work not finished by then stays recorded in the store and is resumed by the
        next client with an LLM. Idempotent."""
        check_timeout(timeout)
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._extraction.close(timeout)
        if self._owns_store:
            self._store.close()

    def __enter__(self) -> OracleAgentMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Two steps, so mypy infers each twin from its sync method (not from the interface).
    _add_user_twin = async_twin(add_user)
    _add_agent_twin = async_twin(add_agent)
    _list_users_twin = async_twin(list_users)
    _list_agents_twin = async_twin(list_agents)
    _delete_user_twin = async_twin(delete_user)
    _delete_agent_twin = async_twin(delete_agent)
    _add_memory_twin = async_twin(add_memory)
    _update_memory_twin = async_twin(update_memory)
    _delete_memory_twin = async_twin(delete_memory)
    _list_memories_twin = async_twin(list_memories)
    _list_messages_twin = async_twin(list_messages)
    _create_thread_twin = async_twin(create_thread)
    _get_thread_twin = async_twin(get_thread)
    _list_threads_twin = async_twin(list_threads)
    _delete_thread_twin = async_twin(delete_thread)
    _search_twin = async_twin(search)
    _link_records_twin = async_twin(link_records)
    _update_record_link_twin = async_twin(update_record_link)
    _delete_record_link_twin = async_twin(delete_record_link)
    _add_image_twin = async_twin(add_image)
    _list_images_twin = async_twin(list_images)
    _update_image_twin = async_twin(update_image)
    _delete_image_twin = async_twin(delete_image)
    _wait_for_memory_extraction_twin = async_twin(wait_for_memory_extraction)
    _close_twin = async_twin(close)
    get_memory_history_async = async_twin(_memory_history)
    add_user_async = _add_user_twin
    add_agent_async = _add_agent_twin
    list_users_async = _list_users_twin
    list_agents_async = _list_agents_twin
    delete_user_async = _delete_user_twin
    delete_agent_async = _delete_agent_twin
    add_memory_async = _add_memory_twin
    update_memory_async = _update_memory_twin
    delete_memory_async = _delete_memory_twin
    list_memories_async = _list_memories_twin
    list_messages_async = _list_messages_twin
    create_thread_async = _create_thread_twin
    get_thread_async = _get_thread_twin

    async def update_thread_async(
        self,
        thread_id: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> OracleThread:
        """Async form of :meth:`update_thread` (runtime settings go in ``kwargs``)."""
        return await asyncio.to_thread(self.update_thread, thread_id, metadata, **kwargs)

    list_threads_async = _list_threads_twin
    delete_thread_async = _delete_thread_twin
    search_async = _search_twin

    async def _do_search_async(self, query: str, **kwargs: Any) -> list[SearchResult]:
        return await self.search_async(query, **kwargs)

    link_records_async = _link_records_twin
    update_record_link_async = _update_record_link_twin
    delete_record_link_async = _delete_record_link_twin
    add_image_async = _add_image_twin
    list_images_async = _list_images_twin
    update_image_async = _update_image_twin
    delete_image_async = _delete_image_twin
    wait_for_memory_extraction_async = _wait_for_memory_extraction_twin
    close_async = _close_twin

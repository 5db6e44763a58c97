"""``OracleThread``: one conversation's messages, memories, search, context card and summary."""

from __future__ import annotations

import asyncio
import logging
import uuid
import warnings
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from oracleagentmemory._async import async_twin
from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.agentmemory import IAgentMemory
from oracleagentmemory.apis.batch import PendingRecordBatch as PendingRecordBatch
from oracleagentmemory.apis.llms.llm import ILlm as ILlm
from oracleagentmemory.apis.memorystore import (
    MetadataFilter as MetadataFilter,
    PerBatchRecordContentsInput as PerBatchRecordContentsInput,
    RecordContentInput as RecordContentInput,
)
from oracleagentmemory.apis.message import (
    ImageContent as ImageContent,
    ImageMimeType,
    Message,
    MessageContent as MessageContent,
    MetadataValue as MetadataValue,
    TextContent as TextContent,
)
from oracleagentmemory.apis.records import (
    ImageRecord,
    MessageRecord as MessageRecord,
    RecordStatus as RecordStatus,
    ScopedRecord as ScopedRecord,
    ThreadRecordType,
)
from oracleagentmemory.apis.relations import (
    MEMORY_TYPES as MEMORY_TYPES,
    MemoryLinkType,
    MemoryRecordType,
    RecordRelation as RecordRelation,
    RelationType as RelationType,
)
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.searchscope import SearchScope as SearchScope
from oracleagentmemory.apis.thread import (
    IThread,
    ThreadMessageContentT as ThreadMessageContentT,
    ThreadMessageMappingT as ThreadMessageMappingT,
    ThreadMessageTypedDictT as ThreadMessageTypedDictT,
)
from oracleagentmemory.apis.ttl import TimeToLiveAnchor as TimeToLiveAnchor
from oracleagentmemory.core._client._context_card import (
    CARD_DEFAULTS as CARD_DEFAULTS,
    CARD_RECORD_TYPES as CARD_RECORD_TYPES,
    CONTEXT_CARD_EXCEPT_LAST_MESSAGES_DEFAULT as CONTEXT_CARD_EXCEPT_LAST_MESSAGES_DEFAULT,
    CONTEXT_CARD_FALLBACK_MESSAGE_COUNT_DEFAULT as CONTEXT_CARD_FALLBACK_MESSAGE_COUNT_DEFAULT,
    CONTEXT_CARD_MAX_RECENT_MESSAGES_DEFAULT as CONTEXT_CARD_MAX_RECENT_MESSAGES_DEFAULT,
    CONTEXT_CARD_MAX_RELEVANT_RESULTS_DEFAULT as CONTEXT_CARD_MAX_RELEVANT_RESULTS_DEFAULT,
    DEFAULT_SUMMARY_TOKEN_BUDGET as DEFAULT_SUMMARY_TOKEN_BUDGET,
    CardSource,
    context_card,
    thread_summary,
)
from oracleagentmemory.core._client._memory_ops import (
    AutoLinkSettings,
    add_memory_record,
    delete_record_link,
    link_records,
    memory_arguments,
    update_memory_record,
    update_record_link,
)
from oracleagentmemory.core._client._observed import THREAD_OPERATIONS, thread_scope
from oracleagentmemory.core._client._runtime import (
    CONTEXT_CARD_TOKEN_LIMIT_DEFAULT as CONTEXT_CARD_TOKEN_LIMIT_DEFAULT,
    CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT as CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT,
    MAX_MESSAGE_TOKEN_LENGTH_DEFAULT as MAX_MESSAGE_TOKEN_LENGTH_DEFAULT,
    MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT as MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT,
    ResolvedSettings,
    flatten,
    thread_settings,
)
from oracleagentmemory.core._client._validation import (
    check_ids,
    check_single,
    check_timeout as check_timeout,
    check_wait,
    no_extra_kwargs,
)
from oracleagentmemory.core._client.messages import _images
from oracleagentmemory.core._client.messages._images import image_limits
from oracleagentmemory.core._client.messages._message_batch import (
    caption_message_images,
    coerce_message,
    message_batch,
)
from oracleagentmemory.core._client.messages._thread_messages import (
    DEFAULT_MESSAGE_HISTORY_LIMIT as DEFAULT_MESSAGE_HISTORY_LIMIT,
    DEFAULT_MESSAGE_WINDOW as DEFAULT_MESSAGE_WINDOW,
    delete_thread_memory,
    delete_thread_message,
    holds,
    thread_message,
    thread_messages,
    update_thread_message,
)
from oracleagentmemory.core._client.search._scope import resolve_thread_scope
from oracleagentmemory.core._client.search._search import (
    run_search,
    search_arguments,
    thread_search_config,
)
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.extractors import (
    OneShotThreadMemoryExtractor as OneShotThreadMemoryExtractor,
)
from oracleagentmemory.core.extractors._extractor import (
    ExtractedMemory as ExtractedMemory,
    MemoryLinkTargetCandidate as MemoryLinkTargetCandidate,
)
from oracleagentmemory.core.extractors._service import (
    ExtractionService,
    ThreadContext,
)
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    MemoryExtractionConfig as MemoryExtractionConfig,
    MemoryExtractionImageContext as MemoryExtractionImageContext,
    MemoryExtractionMode as MemoryExtractionMode,
    resolve_memory_extraction_config_argument as resolve_memory_extraction_config_argument,
)
from oracleagentmemory.core.imageinputlimitconfig import (
    ImageInputLimitConfig as ImageInputLimitConfig,
)
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore as OracleDBMemoryStore
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig as MemorySearchConfig,
    TopKMemorySearchConfig as TopKMemorySearchConfig,
)
from oracleagentmemory.core.searchresult import (
    AGENT_MEMORY_METADATA_KEY as AGENT_MEMORY_METADATA_KEY,
    OracleSearchResult as OracleSearchResult,
)
from oracleagentmemory.core.summary import OracleSummary
from oracleagentmemory.observability._instrument import instrument

BaseThread = IThread
"""The reference's other name for :class:`~oracleagentmemory.apis.thread.IThread`."""

log = logging.getLogger("oracleagentmemory.thread")


@instrument("ThreadStartedEvent", "ThreadCompletedEvent", THREAD_OPERATIONS, thread_scope)
class OracleThread(IThread):
    """A conversation backed by a memory store.

    Messages are stored one record each with increasing ``seq_no``; memories added here take
    the thread's scope. Search defaults to the thread's user and agent (exact) and prefers,
    without requiring, the current thread.
    """

    def __init__(
        self,
        store: OracleMemoryStore,
        client: IAgentMemory | None = None,
        thread_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        persist_messages_in_config: bool = False,
        llm: Any = NOT_SET_MARKER,
        memory_extraction_config: Any = NOT_SET_MARKER,
        image_input_limit_config: Any = NOT_SET_MARKER,
        max_message_token_length: int = 15000,
        message_shortening_input_token_limit: int = 30000,
        memory_extraction_window: int | NotSet = NOT_SET_MARKER,
        context_summary_update_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_frequency: int | NotSet = NOT_SET_MARKER,
        memory_extraction_token_limit: int | NotSet = NOT_SET_MARKER,
        context_card_token_limit: int = 100000,
        context_card_type_search_concurrency: int = 5,
        enable_context_summary: bool | NotSet = NOT_SET_MARKER,
        memory_extraction_custom_instructions: str | NotSet | None = NOT_SET_MARKER,
        memory_extraction_inherit_message_metadata: Any = NOT_SET_MARKER,
        search_config: Any = NOT_SET_MARKER,
    ) -> None:
        settings = thread_settings(locals())  # the runtime-setting arguments, by name
        if not isinstance(store, OracleMemoryStore):
            raise TypeError("store must be an OracleMemoryStore")
        self._store = store
        self._client = client
        given = None if thread_id is NOT_SET_MARKER else thread_id  # None: generate one too
        self._thread_id = str(uuid.uuid4()) if given is None else given
        self._user_id: str | None = str(uuid.uuid4()) if user_id is NOT_SET_MARKER else user_id
        self._agent_id: str | None = str(uuid.uuid4()) if agent_id is NOT_SET_MARKER else agent_id
        check_ids(thread_id=self._thread_id, user_id=self._user_id, agent_id=self._agent_id)
        check_single(metadata=metadata)
        self._metadata = None if metadata is NOT_SET_MARKER else metadata
        self._persist_messages_in_config = persist_messages_in_config
        self._stored = False
        explicit = flatten(settings)
        self._settings = ResolvedSettings(explicit)
        self._service: ExtractionService | None = getattr(client, "_extraction", None)
        if self._service is None and explicit.get("llm") is not None:
            warnings.warn(
                "an OracleThread built without its OracleAgentMemory client stores messages "
                "only: memory extraction and LLM summaries run for threads of a client "
                "(client.create_thread / get_thread)",
                RuntimeWarning,
                stacklevel=2,
            )

    @classmethod
    def _bind(
        cls,
        store: OracleMemoryStore,
        client: IAgentMemory | None,
        thread_id: str,
        user_id: str | None,
        agent_id: str | None,
        metadata: dict[str, Any] | None,
        settings: ResolvedSettings,
        service: ExtractionService | None = None,
    ) -> OracleThread:
        """A handle on a stored thread with settings already resolved by the client."""
        self = cls.__new__(cls)
        self._store = store
        self._client = client
        self._thread_id = thread_id
        self._user_id = user_id
        self._agent_id = agent_id
        self._metadata = metadata
        self._persist_messages_in_config = False
        self._settings = settings
        self._stored = True  # a handle on a stored thread: its writes need the thread row
        self._service = service
        return self

    def _context(self) -> ThreadContext:
        return ThreadContext(self._thread_id, self._user_id, self._agent_id)

    # ------------------------------------------------------------------ properties

    @property
    def thread_id(self) -> str:
        """This thread's identifier."""
        return self._thread_id

    @property
    def user_id(self) -> str | None:
        """The user who owns this thread."""
        return self._user_id

    @property
    def agent_id(self) -> str | None:
        """The agent this thread belongs to."""
        return self._agent_id

    @property
    def metadata(self) -> dict[str, Any] | None:
        """The thread's metadata as loaded."""
        return self._metadata

    @property
    def max_message_token_length(self) -> int:
        """Per-message cap, in tokens, of prompt copies made for an LLM."""
        return int(self._settings.get("max_message_token_length"))

    @property
    def message_shortening_input_token_limit(self) -> int:
        """Input cap, in tokens, when an LLM shortens an oversized message."""
        return int(self._settings.get("message_shortening_input_token_limit"))

    @property
    def context_card_token_limit(self) -> int:
        """Cap, in tokens, of prompts used to summarise a context card."""
        return int(self._settings.get("context_card_token_limit"))

    @property
    def context_card_type_search_concurrency(self) -> int:
        """How many per-type searches a context card may run at once."""
        return int(self._settings.get("context_card_type_search_concurrency"))

    @property
    def llm(self) -> Any:
        """The LLM adapter in force for this thread, or None."""
        return self._settings.get("llm")

    def setting(self, name: str) -> Any:
        """A resolved runtime setting by name (``"memory_extraction_config.extraction_mode"``
        for a config field); None when no level sets it."""
        return self._settings.get(name)

    @property
    def _owner(self) -> tuple[str, str | None]:
        """This thread as ``_thread_messages`` and ``_images`` name it: (id, user id)."""
        return (self._thread_id, self._user_id)

    def _write_kwargs(self, store_kwargs: dict[str, Any]) -> dict[str, Any]:
        """Store options for a write: a handle on a stored thread writes only while its
        thread row exists (checked in the write's own transaction; KeyError otherwise)."""
        if getattr(self, "_stored", False):
            return {"require_thread": self._thread_id, **store_kwargs}
        return store_kwargs

    # ------------------------------------------------------------------ messages

    def add_messages(
        self,
        messages: Sequence[Any],
        metadata: Any = NOT_SET_MARKER,
        ttl_days: Any = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> list[str]:
        """Append messages (``Message`` objects or dicts with role, content and optional id,
        timestamp, metadata); returns their ids. ``metadata`` / ``ttl_days`` / ``ttl_anchor``
        are one value for all messages or a list aligned with them; a message's own metadata
        wins over ``metadata``."""
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
            raise TypeError("messages must be a list of Message objects or dicts")
        limits = image_limits(self._settings)
        msgs = [coerce_message(m, i, limits) for i, m in enumerate(messages)]
        if not msgs:
            return []
        msgs, caption_later = caption_message_images(
            msgs, self._settings, self._service, self._captions
        )
        store_kwargs = self._write_kwargs(store_kwargs)
        batch = message_batch(
            self._store, self._context(), msgs, metadata, ttl_days, ttl_anchor, store_kwargs
        )
        if self._service is None:
            return self._store.add_batches([batch], **store_kwargs)
        return self._service.add_messages(
            self._context(), self._settings, batch, store_kwargs, caption_ids=caption_later
        )

    def get_messages(
        self,
        *,
        start: int | NotSet | None = NOT_SET_MARKER,
        end: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[Message]:
        """Messages in chronological order.

        Both omitted: the most recent ``DEFAULT_MESSAGE_WINDOW`` messages. ``start`` (0-based)
        with ``end`` omitted: the most recent bounded window from ``start``. ``end`` (exclusive)
        None or -1: everything from ``start``.
        """
        return thread_messages(self._store, self._thread_id, start, end, include_image_bytes)

    def get_message(self, message_id: str, *, included_image_ids: Any = NOT_SET_MARKER) -> Message:
        """One message of this thread; KeyError when it is not in this thread."""
        return thread_message(self._store, self._owner, message_id, included_image_ids)

    def delete_message(self, message_id: str, *, cascade: bool = False) -> int:
        """Delete a message of this exact thread (0 for unknown ids or other threads).

        By default memories extracted from it are kept (as the reference does). With
        ``cascade=True`` the memories extracted from this message alone are deleted with it,
        in one transaction, after this thread's earlier background extraction has finished;
        memories that other messages also support stay (without this message in their
        provenance).
        """
        return delete_thread_message(self._store, self._service, self._owner, message_id, cascade)

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
        """Add a memory scoped, by default, to this thread, its user and its agent."""
        own = {"user_id": self._user_id, "agent_id": self._agent_id, "thread_id": self._thread_id}
        return add_memory_record(
            self._store,
            content,
            **memory_arguments(locals(), own),
            auto_link=AutoLinkSettings.of(self._settings),
            **self._write_kwargs(store_kwargs),
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
        """Update a memory of this thread (omitted fields and scope kept, metadata replaced
        whole); returns its id. KeyError when it is not a memory of this thread."""
        no_extra_kwargs("update_memory", kwargs)
        return update_memory_record(
            self._store,
            memory_id,
            thread_id=self._thread_id,
            text=content,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            status=status,
        )

    def update_message(
        self,
        message_id: str,
        content: ThreadMessageContentT | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Update a message of this thread (its text is re-indexed; role, order and scope are
        kept); returns its id. KeyError when it is not a message of this thread."""
        no_extra_kwargs("update_message", kwargs)
        fields = {"text": content, "metadata": metadata, "ttl_days": ttl_days}
        return update_thread_message(
            self._store, self._owner, message_id, {**fields, "ttl_anchor": ttl_anchor}
        )

    def delete_memory(self, memory_id: str) -> int:
        """Delete a memory-like record of this exact thread (0 for unknown ids or other threads)."""
        return delete_thread_memory(self._store, self._owner, memory_id)

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
        """Store an image scoped, by default, to this thread, its user and its agent; see
        ``OracleAgentMemory.add_image``."""
        own = {"user_id": self._user_id, "agent_id": self._agent_id, "thread_id": self._thread_id}
        return _images.add_image(
            self._store,
            image,
            **_images.image_arguments(locals(), _images.ADD_ARGUMENTS, own),
            limits=image_limits(self._settings),
            captions=self._captions(),
            store_kwargs=self._write_kwargs(store_kwargs),
        )

    def _captions(self) -> _images.CaptionSettings:
        return _images.CaptionSettings.of(
            self._settings, self._service, self._thread_id, (self._user_id, self._agent_id)
        )

    def list_images(
        self,
        image_id: str | NotSet = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_bytes: bool | list[str] | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ImageRecord]:
        """This thread's images, oldest first (bytes only with ``include_bytes``)."""
        records = self._store.list(
            "image",
            record_id=image_id,
            thread_id=self._thread_id,
            metadata_filter=metadata_filter,
            include_bytes=include_bytes,
            limit=limit,
        )
        return [r for r in records if holds(self._owner, r)]  # type: ignore[misc]

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
        """Update an image of this thread; see ``OracleAgentMemory.update_image``."""
        no_extra_kwargs("update_image", kwargs)
        return _images.update_image(
            self._store,
            image_id,
            **_images.image_arguments(locals(), _images.UPDATE_ARGUMENTS),
            limits=image_limits(self._settings),
            thread=self._owner,
            captions=self._captions(),
        )

    def delete_image(self, image_id: str) -> int:
        """Delete an image of this exact thread; 0 for unknown ids or other threads."""
        return _images.delete_image(self._store, image_id, self._owner)

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
        """Link two memory-like records; see ``OracleAgentMemory.link_records``."""
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
        """Change a relation; see ``OracleAgentMemory.update_record_link``."""
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
        """Delete a relation; see ``OracleAgentMemory.delete_record_link``."""
        return delete_record_link(
            self._store,
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
            relation_id,
        )

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
        record_types: list[str] | NotSet = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        num_hops: int | NotSet = NOT_SET_MARKER,
        max_linked_results: int | NotSet = NOT_SET_MARKER,
        include_invalid_results: bool | NotSet = NOT_SET_MARKER,
        scope: Any = NOT_SET_MARKER,
        as_of: datetime | None = None,
    ) -> list[SearchResult]:
        """Search with the thread's defaults: its user and agent exactly, this thread preferred
        (records of other threads of the same user and agent still qualify). ``as_of`` (an
        addition of ours): the records true at that time, whatever their status now."""
        scope_args, options = search_arguments(locals())
        resolved = resolve_thread_scope(
            thread_user_id=self._user_id,
            thread_agent_id=self._agent_id,
            current_thread_id=self._thread_id,
            **scope_args,
        )
        return run_search(
            self._store,
            query,
            resolved,
            **options,
            search_config=thread_search_config(self._settings, self._client_pruner()),
            pruner=self._client_pruner(),
        )

    def _client_pruner(self) -> Any:
        return getattr(self._client, "_pruner_llm", None)

    # ------------------------------------------------------------------ card and summary

    def _card_source(self) -> CardSource:
        return CardSource(self._store, self._context(), self._settings, self._service, self.search)

    def get_context_card(
        self,
        fallback_message_count: int | NotSet = NOT_SET_MARKER,
        max_relevant_results: int | NotSet = NOT_SET_MARKER,
        max_recent_messages: int | NotSet = NOT_SET_MARKER,
        except_last_messages: int | NotSet = NOT_SET_MARKER,
        min_relevant_results_by_type: Mapping[ThreadRecordType, int]
        | NotSet
        | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_invalid_results: bool | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet | None = NOT_SET_MARKER,
        soft_token_budget: int | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> OracleContextCard:
        """A context card for the prompt: a summary of the recent messages, the durable records
        most relevant to them (from any thread of this user and agent), and the recent
        messages verbatim.

        With an LLM and ``enable_context_summary`` (the default) the summary and topics are
        the thread's running LLM summary (see :meth:`get_summary`). Without one the summary
        is the recent transcript itself (``fallback_message_count`` messages), no topics.
        ``except_last_messages`` leaves the newest messages out of all three parts (for a turn
        the caller sends separately).
        """
        no_extra_kwargs("get_context_card", kwargs)
        return context_card(
            self._card_source(),
            fallback_message_count,
            max_relevant_results,
            max_recent_messages,
            except_last_messages,
            min_relevant_results_by_type,
            metadata_filter,
            include_invalid_results,
            token_budget,
            soft_token_budget,
        )

    def get_summary(
        self,
        except_last: int | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> OracleSummary:
        """A summary of the transcript (all messages but the last ``except_last``).

        With an LLM and ``enable_context_summary`` it is the running LLM summary stored with
        the thread, refreshed once ``context_summary_update_frequency`` messages came after
        it (at once when that is <= 0). Without an LLM it is the transcript itself, newest
        messages kept first when it is too long. A positive ``token_budget`` (default 1000)
        cuts the text to ``int(token_budget * 3.5)`` characters when its estimate exceeds the
        budget; a non-positive one disables the cut.
        """
        no_extra_kwargs("get_summary", kwargs)
        return thread_summary(self._card_source(), except_last, token_budget)

    def wait_for_memory_extraction(
        self, timeout: float | None = 300.0, *, raise_on_failure: bool = False
    ) -> None:
        """Wait up to ``timeout`` seconds (None: no limit) for the background extraction of
        this thread accepted before the call; failed extraction counts as finished.

        ``raise_on_failure=True`` (beyond the reference): once the wait ends, raise
        :class:`~oracleagentmemory.core.extractors.MemoryExtractionError` if this thread's
        extraction or summary work failed since the last such report."""
        check_wait(timeout, raise_on_failure)
        if self._service is not None:
            self._service.wait([self._thread_id], timeout, raise_on_failure)

    _add_messages_twin = async_twin(add_messages)
    add_messages_async = _add_messages_twin

    async def get_messages_async(
        self,
        start: int | NotSet | None = NOT_SET_MARKER,
        end: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[Message]:
        """Async form of :meth:`get_messages` (whose arguments are keyword-only)."""
        return await asyncio.to_thread(
            self.get_messages, start=start, end=end, include_image_bytes=include_image_bytes
        )

    _get_message_twin = async_twin(get_message)
    get_message_async = _get_message_twin
    _delete_message_twin = async_twin(delete_message)
    delete_message_async = _delete_message_twin
    _add_memory_twin = async_twin(add_memory)
    add_memory_async = _add_memory_twin
    _delete_memory_twin = async_twin(delete_memory)
    delete_memory_async = _delete_memory_twin
    _update_memory_twin = async_twin(update_memory)
    update_memory_async = _update_memory_twin
    _update_message_twin = async_twin(update_message)
    update_message_async = _update_message_twin
    _search_twin = async_twin(search)
    search_async = _search_twin

    async def _do_search_async(self, query: str, **kwargs: Any) -> list[SearchResult]:
        return await self.search_async(query, **kwargs)

    _link_records_twin = async_twin(link_records)
    link_records_async = _link_records_twin
    _add_image_twin = async_twin(add_image)
    add_image_async = _add_image_twin
    _list_images_twin = async_twin(list_images)
    list_images_async = _list_images_twin
    _update_image_twin = async_twin(update_image)
    update_image_async = _update_image_twin
    _delete_image_twin = async_twin(delete_image)
    delete_image_async = _delete_image_twin
    _update_record_link_twin = async_twin(update_record_link)
    update_record_link_async = _update_record_link_twin
    _delete_record_link_twin = async_twin(delete_record_link)
    delete_record_link_async = _delete_record_link_twin
    _get_context_card_twin = async_twin(get_context_card)
    get_context_card_async = _get_context_card_twin
    _get_summary_twin = async_twin(get_summary)
    get_summary_async = _get_summary_twin
    _wait_for_memory_extraction_twin = async_twin(wait_for_memory_extraction)
    wait_for_memory_extraction_async = _wait_for_memory_extraction_twin

    def __repr__(self) -> str:
        return (
            f"OracleThread(thread_id={self._thread_id!r}, user_id={self._user_id!r}, "
            f"agent_id={self._agent_id!r})"
        )

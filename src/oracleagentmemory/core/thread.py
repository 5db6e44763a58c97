"""``OracleThread``: one conversation's messages, memories, search, context card and summary."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import uuid
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from oracleagentmemory._async import async_twin
from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.llms.llm import ILlm as ILlm
from oracleagentmemory.apis.memorystore import MetadataFilter as MetadataFilter
from oracleagentmemory.apis.memorystore import (
    PerBatchRecordContentsInput as PerBatchRecordContentsInput,
)
from oracleagentmemory.apis.memorystore import (
    RecordContentInput as RecordContentInput,
)
from oracleagentmemory.apis.message import ImageContent as ImageContent
from oracleagentmemory.apis.message import ImageMimeType, Message
from oracleagentmemory.apis.message import MessageContent as MessageContent
from oracleagentmemory.apis.message import MetadataValue as MetadataValue
from oracleagentmemory.apis.message import TextContent as TextContent
from oracleagentmemory.apis.records import (
    MEMORY_RECORD_TYPES,
    ImageRecord,
    MessageRecord,
    ThreadRecordType,
)
from oracleagentmemory.apis.records import RecordStatus as RecordStatus
from oracleagentmemory.apis.records import ScopedRecord as ScopedRecord
from oracleagentmemory.apis.relations import MEMORY_TYPES as MEMORY_TYPES
from oracleagentmemory.apis.relations import MemoryLinkType, MemoryRecordType
from oracleagentmemory.apis.relations import RecordRelation as RecordRelation
from oracleagentmemory.apis.relations import RelationType as RelationType
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.searchscope import SearchScope as SearchScope
from oracleagentmemory.apis.thread import IThread, message_text
from oracleagentmemory.apis.thread import (
    ThreadMessageContentT as ThreadMessageContentT,
)
from oracleagentmemory.apis.thread import ThreadMessageMappingT as ThreadMessageMappingT
from oracleagentmemory.apis.thread import ThreadMessageTypedDictT as ThreadMessageTypedDictT
from oracleagentmemory.apis.ttl import TimeToLiveAnchor as TimeToLiveAnchor
from oracleagentmemory.core._memory_ops import (
    AutoLinkSettings,
    add_memory_record,
    delete_record_link,
    link_records,
    update_memory_record,
    update_record_link,
)
from oracleagentmemory.core._message_content import (
    images_of,
    load_images,
    message_from_record,
    normalize_content,
    with_descriptions,
)
from oracleagentmemory.core._runtime import (
    CONTEXT_CARD_TOKEN_LIMIT_DEFAULT as CONTEXT_CARD_TOKEN_LIMIT_DEFAULT,
)
from oracleagentmemory.core._runtime import (
    CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT as CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT,
)
from oracleagentmemory.core._runtime import (
    MAX_MESSAGE_TOKEN_LENGTH_DEFAULT as MAX_MESSAGE_TOKEN_LENGTH_DEFAULT,
)
from oracleagentmemory.core._runtime import (
    MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT as MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT,
)
from oracleagentmemory.core._runtime import ResolvedSettings, flatten
from oracleagentmemory.core._scope import in_thread, resolve_thread_scope
from oracleagentmemory.core._search import (
    CHARS_PER_TOKEN,
    apply_budgets,
    estimate_tokens,
    run_search,
)
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.extractors import (
    OneShotThreadMemoryExtractor as OneShotThreadMemoryExtractor,
)
from oracleagentmemory.core.extractors._extractor import ExtractedMemory as ExtractedMemory
from oracleagentmemory.core.extractors._extractor import (
    MemoryLinkTargetCandidate as MemoryLinkTargetCandidate,
)
from oracleagentmemory.core.extractors._service import (
    DELETE_WAIT_SECONDS,
    ExtractionService,
    ThreadContext,
    supports_extraction,
)
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    MemoryExtractionConfig as MemoryExtractionConfig,
)
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    MemoryExtractionImageContext as MemoryExtractionImageContext,
)
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    MemoryExtractionMode as MemoryExtractionMode,
)
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    resolve_memory_extraction_config_argument as resolve_memory_extraction_config_argument,
)
from oracleagentmemory.core.imageinputlimitconfig import (
    ImageInputLimitConfig as ImageInputLimitConfig,
)
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore as OracleDBMemoryStore
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.searchconfig import MemorySearchConfig as MemorySearchConfig
from oracleagentmemory.core.searchconfig import TopKMemorySearchConfig as TopKMemorySearchConfig
from oracleagentmemory.core.searchresult import (
    AGENT_MEMORY_METADATA_KEY as AGENT_MEMORY_METADATA_KEY,
)
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.core.store._limits import MAX_LIST_ROWS, check_text
from oracleagentmemory.core.store._rows import Chunker
from oracleagentmemory.core.summary import OracleSummary
from oracleagentmemory.observability._instrument import instrument
from oracleagentmemory.observability.event import (
    OperationKind,
    ThreadCompletedEvent,
    ThreadStartedEvent,
)

if TYPE_CHECKING:
    from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory

BaseThread = IThread
"""The reference's other name for :class:`~oracleagentmemory.apis.thread.IThread`."""

log = logging.getLogger("oracleagentmemory.thread")

DEFAULT_MESSAGE_HISTORY_LIMIT: Final = 100
"""``get_messages()`` without ``start``/``end`` returns at most this many recent messages."""
DEFAULT_MESSAGE_WINDOW: Final = DEFAULT_MESSAGE_HISTORY_LIMIT
CONTEXT_CARD_FALLBACK_MESSAGE_COUNT_DEFAULT: Final = 5
CONTEXT_CARD_MAX_RECENT_MESSAGES_DEFAULT: Final = 0
CONTEXT_CARD_EXCEPT_LAST_MESSAGES_DEFAULT: Final = 0
CONTEXT_CARD_MAX_RELEVANT_RESULTS_DEFAULT: Final = 10
CARD_DEFAULTS: Final = {
    "fallback_message_count": CONTEXT_CARD_FALLBACK_MESSAGE_COUNT_DEFAULT,
    "max_relevant_results": CONTEXT_CARD_MAX_RELEVANT_RESULTS_DEFAULT,
    "max_recent_messages": CONTEXT_CARD_MAX_RECENT_MESSAGES_DEFAULT,
    "except_last_messages": CONTEXT_CARD_EXCEPT_LAST_MESSAGES_DEFAULT,
}
DEFAULT_SUMMARY_TOKEN_BUDGET: Final = 1000
CARD_RECORD_TYPES = (*MEMORY_RECORD_TYPES, "user_profile", "agent_profile")
"""Durable records a context card may show (messages appear verbatim, not as results)."""


def _coerce_message(item: Any, index: int, limits: Any = None) -> Message:
    """A message to store: text, or parts (images checked against ``limits``)."""
    if isinstance(item, Message):
        msg = item
        content = normalize_content(item.content, f"messages[{index}].content", limits)
    elif isinstance(item, Mapping):
        unknown = set(item) - {"role", "content", "id", "timestamp", "metadata"}
        if unknown:
            raise ValueError(f"messages[{index}] has unknown keys: {sorted(unknown)}")
        if "role" not in item or "content" not in item:
            raise ValueError(f"messages[{index}] needs 'role' and 'content'")
        content = normalize_content(item["content"], f"messages[{index}].content", limits)
        msg = Message(
            role=item["role"],
            content=content,
            timestamp=item.get("timestamp"),
            metadata=item.get("metadata"),
            id=item.get("id"),
        )
    else:
        raise TypeError(f"messages[{index}] must be a Message or a mapping with role and content")
    if not isinstance(msg.role, str) or not msg.role:
        raise ValueError(f"messages[{index}].role must be a non-empty string")
    # Checked before the thread embeds anything: NUL and lone surrogates are never stored
    # (normalize_content checks the text of the content and of its parts).
    check_text(msg.role, f"messages[{index}].role")
    if content is not msg.content:
        msg = dataclasses.replace(msg, content=content)
    return msg


def _check_int(name: str, value: Any, minimum: int = 0, maximum: int = MAX_LIST_ROWS) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def _no_extra_kwargs(method: str, kwargs: Mapping[str, Any]) -> None:
    if kwargs:
        raise TypeError(f"{method}() got unexpected keyword argument(s): {sorted(kwargs)}")


def check_timeout(timeout: Any) -> None:
    """A wait timeout: a finite number of seconds >= 0, or None."""
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError("timeout must be a number of seconds or None")
    if not math.isfinite(timeout) or timeout < 0:
        raise ValueError(f"timeout must be a finite number >= 0, got {timeout!r}")


def _transcript_line(msg: Message) -> str:
    return f"{msg.role}: {msg.content}"


_OBSERVED: Final = {
    "add_messages": OperationKind.CREATE,
    "get_messages": OperationKind.READ,
    "get_message": OperationKind.READ,
    "delete_message": OperationKind.DELETE,
    "add_memory": OperationKind.CREATE,
    "update_memory": OperationKind.UPDATE,
    "update_message": OperationKind.UPDATE,
    "delete_memory": OperationKind.DELETE,
    "add_image": OperationKind.CREATE,
    "list_images": OperationKind.READ,
    "update_image": OperationKind.UPDATE,
    "delete_image": OperationKind.DELETE,
    "link_records": OperationKind.CREATE,
    "update_record_link": OperationKind.UPDATE,
    "delete_record_link": OperationKind.DELETE,
    "search": OperationKind.READ,
    "get_context_card": OperationKind.READ,
    "get_summary": OperationKind.READ,
    "wait_for_memory_extraction": OperationKind.UNKNOWN,
}
"""Public methods that emit observability events, with their operation kind."""


def _thread_scope(thread: OracleThread) -> dict[str, Any]:
    return {"thread_id": thread.thread_id, "user_id": thread.user_id, "agent_id": thread.agent_id}


@instrument(ThreadStartedEvent, ThreadCompletedEvent, _OBSERVED, _thread_scope)
class OracleThread(IThread):
    """A conversation backed by a memory store.

    Messages are stored one record each with increasing ``seq_no``; memories added here take
    the thread's scope. Search defaults to the thread's user and agent (exact) and prefers,
    without requiring, the current thread.
    """

    def __init__(
        self,
        store: OracleMemoryStore,
        client: OracleAgentMemory | None = None,
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
        if not isinstance(store, OracleMemoryStore):
            raise TypeError("store must be an OracleMemoryStore")
        self._store = store
        self._client = client
        self._thread_id = str(uuid.uuid4()) if thread_id is NOT_SET_MARKER else thread_id
        self._user_id: str | None = str(uuid.uuid4()) if user_id is NOT_SET_MARKER else user_id
        self._agent_id: str | None = str(uuid.uuid4()) if agent_id is NOT_SET_MARKER else agent_id
        for name, value in (
            ("thread_id", self._thread_id),
            ("user_id", self._user_id),
            ("agent_id", self._agent_id),
        ):
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"{name} must be a non-empty string")
        self._metadata = None if metadata is NOT_SET_MARKER else metadata
        self._persist_messages_in_config = persist_messages_in_config
        self._stored = False
        explicit = flatten(
            {
                "llm": llm,
                "memory_extraction_config": memory_extraction_config,
                "image_input_limit_config": image_input_limit_config,
                "max_message_token_length": max_message_token_length,
                "message_shortening_input_token_limit": message_shortening_input_token_limit,
                "memory_extraction_window": memory_extraction_window,
                "context_summary_update_frequency": context_summary_update_frequency,
                "memory_extraction_frequency": memory_extraction_frequency,
                "memory_extraction_token_limit": memory_extraction_token_limit,
                "context_card_token_limit": context_card_token_limit,
                "context_card_type_search_concurrency": context_card_type_search_concurrency,
                "enable_context_summary": enable_context_summary,
                "memory_extraction_custom_instructions": memory_extraction_custom_instructions,
                "memory_extraction_inherit_message_metadata": (
                    memory_extraction_inherit_message_metadata
                ),
                "search_config": search_config,
            }
        )
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
        client: OracleAgentMemory | None,
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

    def _holds(self, record: Any) -> bool:
        """Whether ``record`` is a row of this thread (its id, and its owner's or no user)."""
        return record is not None and in_thread(record, self._thread_id, self._user_id)

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
        limits, _ = self._image_settings()
        msgs = [_coerce_message(m, i, limits) for i, m in enumerate(messages)]
        if not msgs:
            return []
        msgs, caption_later = self._caption_message_images(msgs)
        store_kwargs = self._write_kwargs(store_kwargs)
        n = len(msgs)
        if isinstance(metadata, list):
            if len(metadata) != n:
                raise ValueError(f"metadata has {len(metadata)} entries but messages has {n}")
            metas = list(metadata)
        else:
            metas = [None if metadata is NOT_SET_MARKER else metadata] * n
        metas = [m.metadata if m.metadata is not None else metas[i] for i, m in enumerate(msgs)]
        contents = [m.content for m in msgs]
        if "index_texts" not in store_kwargs:
            store_kwargs.update(self._retrieval_payloads(contents, store_kwargs))
        payload = {
            k: store_kwargs.pop(k) for k in ("index_texts", "embeddings") if k in store_kwargs
        }
        batch = PendingRecordBatch(
            contents=contents,
            record_type="message",
            record_ids=[m.id for m in msgs],
            thread_ids=self._thread_id,
            user_ids=self._user_id,
            agent_ids=self._agent_id,
            roles=[m.role for m in msgs],
            timestamps=[m.timestamp for m in msgs],
            metadata=metas,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            **payload,
        )
        if self._service is None:
            return self._store.add_batches([batch], **store_kwargs)
        return self._service.add_messages(
            self._context(), self._settings, batch, store_kwargs, caption_ids=caption_later
        )

    def _caption_message_images(self, msgs: list[Message]) -> tuple[list[Message], list[str]]:
        """Images without a description get one from the thread's LLM when it can see them:
        now (INLINE; the descriptions are stored with the images) or after the write
        (BACKGROUND; their ids are returned, queued before this call's extraction). With an
        LLM that cannot see, image contexts that need the images fail here, before anything
        is written."""
        missing = [
            image
            for m in msgs
            for image in images_of(m.content)
            if not (image.description or "").strip()
        ]
        llm = self._settings.get("llm")
        if self._service is None or llm is None:
            return msgs, []
        from oracleagentmemory.core._captions import can_see, caption_request, check_request
        from oracleagentmemory.core.extractors.memoryextractionconfig import (
            MemoryExtractionConfig,
            MemoryExtractionImageContext,
        )

        config = self._settings.config("memory_extraction_config", MemoryExtractionConfig)
        resolved = config.resolve()
        context = resolved.memory_extraction_image_context
        has_images = any(images_of(m.content) for m in msgs)
        if (
            has_images
            and resolved.extract_memories
            and context is MemoryExtractionImageContext.IMAGE
        ):
            from oracleagentmemory.core._captions import resolved_limits
            from oracleagentmemory.core.imageinputlimitconfig import validate_image_request

            limits = resolved_limits(self._image_settings()[0])
            for m in msgs:  # each message's images go to the llm in one request
                validate_image_request([m], limits)
        if not can_see(llm):
            if has_images and resolved.extract_memories:
                if context is MemoryExtractionImageContext.IMAGE:
                    raise ValueError(
                        "memory_extraction_image_context=IMAGE sends images to the llm, which "
                        "cannot see images (supports_vision=False)"
                    )
                if missing and context is MemoryExtractionImageContext.CAPTION:
                    raise ValueError(
                        "memory_extraction_image_context=CAPTION needs a non-blank description "
                        "for every image, and the llm cannot describe images "
                        "(supports_vision=False): give each ImageContent a description"
                    )
            return msgs, []
        if not missing:
            return msgs, []
        captions = self._captions()
        for image in missing:
            check_request(caption_request(image.bytes or b"", image.mime_type), captions.limits)
        if not captions.inline:
            return msgs, [image.id for image in missing]
        from oracleagentmemory.core._images import _caption_now

        found: dict[str, str] = {}
        for image in missing:
            text = _caption_now(captions, image.bytes or b"", image.mime_type)
            if text:
                found[image.id] = text
        return [
            dataclasses.replace(m, content=with_descriptions(m.content, found)) for m in msgs
        ], []

    def _retrieval_payloads(self, contents: list[Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """Index each short message together with the message before it (keyword text and
        vector alike).

        A turn often makes sense only with the turn it answers ("Yes, in May" after "When did
        you move?"). Measured on LoCoMo (dev, leave-one-conversation-out): keyword recall@10
        0.63 -> 0.73 with the window; the window's vector is as good as the message's alone
        with all-MiniLM-L6-v2 and far better with multilingual-e5-small (dense recall@10
        0.52 -> 0.65). Messages too long for one retrieval chunk keep the store's chunking;
        caller-given ``embeddings`` are used as they are.
        """
        store = self._store
        embedder = getattr(store, "embedder", None)
        limit = Chunker.for_tokens(embedder.max_input_tokens if embedder else None).max_words
        last = store.list_thread_messages(self._thread_id, last_n=1)
        previous = message_text(last[0].content, image_placeholders=True) if last else None
        windows: list[str | None] = []
        for content in contents:
            text = message_text(content, image_placeholders=True)
            fits = previous is not None and len(f"{previous} {text}".split()) <= limit
            if fits and text:
                windows.append(f"{previous}\n{text}")
            else:  # a message with images is indexed with their descriptions
                windows.append(text if not isinstance(content, str) and text else None)
            previous = text
        if all(w is None for w in windows):
            return {}
        return {"index_texts": windows}

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
        with_bytes = include_image_bytes is True
        if include_image_bytes not in (NOT_SET_MARKER, True, False):
            raise TypeError("include_image_bytes must be a bool")
        if start is NOT_SET_MARKER and end is NOT_SET_MARKER:
            records = self._store.list_thread_messages(
                self._thread_id, last_n=DEFAULT_MESSAGE_WINDOW
            )
            return load_images(self._store, [message_from_record(r) for r in records], with_bytes)
        first = 0 if start in (NOT_SET_MARKER, None) else _check_int("start", start)
        records = self._store.list_thread_messages(self._thread_id)[first:]
        if end is NOT_SET_MARKER:
            records = records[-DEFAULT_MESSAGE_WINDOW:]
        elif end is not None and end != -1:
            stop = _check_int("end", end)
            records = records[: max(0, stop - first)]
        return load_images(self._store, [message_from_record(r) for r in records], with_bytes)

    def get_message(self, message_id: str, *, included_image_ids: Any = NOT_SET_MARKER) -> Message:
        """One message of this thread; KeyError when it is not in this thread."""
        record = self._store.get("message", message_id)
        if not isinstance(record, MessageRecord) or not self._holds(record):
            raise KeyError(f"message {message_id!r} is not in thread {self._thread_id!r}")
        wanted: list[str] = []
        if included_image_ids not in (NOT_SET_MARKER, None):
            if isinstance(included_image_ids, str) or not isinstance(included_image_ids, Sequence):
                raise TypeError("included_image_ids must be a list of image ids")
            wanted = list(included_image_ids)
        loaded: Message = load_images(self._store, [message_from_record(record)], wanted)[0]
        return loaded

    def delete_message(self, message_id: str, *, cascade: bool = False) -> int:
        """Delete a message of this exact thread (0 for unknown ids or other threads).

        By default memories extracted from it are kept (as the reference does). With
        ``cascade=True`` the memories extracted from this message alone are deleted with it,
        in one transaction, after this thread's earlier background extraction has finished;
        memories that other messages also support stay (without this message in their
        provenance).
        """
        if not isinstance(message_id, str):
            raise TypeError("message_id must be a string")
        if not isinstance(cascade, bool):
            raise TypeError("cascade must be a bool")
        if cascade:
            if not supports_extraction(self._store):
                raise TypeError("cascade=True needs a store that records provenance")
            if self._service is not None:
                self._service.wait([self._thread_id], DELETE_WAIT_SECONDS)
            return self._store.delete_message_cascade(self._thread_id, message_id)[0]
        record = self._store.get("message", message_id)
        if not self._holds(record):
            return 0
        return self._store.delete("message", message_id)

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
        return add_memory_record(
            self._store,
            content,
            memory_type=memory_type,
            user_id=self._user_id if user_id is NOT_SET_MARKER else user_id,
            agent_id=self._agent_id if agent_id is NOT_SET_MARKER else agent_id,
            thread_id=self._thread_id if thread_id is NOT_SET_MARKER else thread_id,
            memory_id=memory_id,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            status=status,
            autonomous_linking=autonomous_linking,
            memory_id_to_link=memory_id_to_link,
            link_type=link_type,
            link_id=link_id,
            link_timestamp=link_timestamp,
            link_metadata=link_metadata,
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
        _no_extra_kwargs("update_memory", kwargs)
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
        _no_extra_kwargs("update_message", kwargs)
        record = self._store.get("message", message_id)
        if not self._holds(record):
            raise KeyError(f"message {message_id!r} is not in thread {self._thread_id!r}")
        if content is not NOT_SET_MARKER and not isinstance(content, str):
            raise TypeError(
                "content must be a string (structured content with images is not supported yet)"
            )
        fields = {
            "text": content,
            "metadata": metadata,
            "ttl_days": ttl_days,
            "ttl_anchor": ttl_anchor,
        }
        given = {k: v for k, v in fields.items() if v is not NOT_SET_MARKER}
        if given:
            self._store.update("message", message_id, **given)
        return message_id

    def delete_memory(self, memory_id: str) -> int:
        """Delete a memory-like record of this exact thread (0 for unknown ids or other threads)."""
        for memory_type in MEMORY_RECORD_TYPES:
            record = self._store.get(memory_type, memory_id)
            if record is not None:
                if not self._holds(record):
                    return 0
                return self._store.delete(memory_type, memory_id)
        return 0

    # ------------------------------------------------------------------ images

    def _image_settings(self) -> tuple[Any, Any]:
        from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig

        limits = self._settings.config("image_input_limit_config", ImageInputLimitConfig)
        return limits, self._settings.get("llm")

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
        from oracleagentmemory.core import _images

        limits, _ = self._image_settings()
        return _images.add_image(
            self._store,
            image,
            description=description,
            mime_type=mime_type,
            image_id=image_id,
            user_id=self._user_id if user_id is NOT_SET_MARKER else user_id,
            agent_id=self._agent_id if agent_id is NOT_SET_MARKER else agent_id,
            thread_id=self._thread_id if thread_id is NOT_SET_MARKER else thread_id,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            limits=limits,
            captions=self._captions(),
            store_kwargs=self._write_kwargs(store_kwargs),
        )

    def _captions(self) -> Any:
        from oracleagentmemory.core import _images

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
        return [r for r in records if self._holds(r)]  # type: ignore[misc]

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
        from oracleagentmemory.core import _images

        _no_extra_kwargs("update_image", kwargs)
        limits, _ = self._image_settings()
        return _images.update_image(
            self._store,
            image_id,
            image=image,
            description=description,
            mime_type=mime_type,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            limits=limits,
            thread=(self._thread_id, self._user_id),
            captions=self._captions(),
        )

    def delete_image(self, image_id: str) -> int:
        """Delete an image of this exact thread; 0 for unknown ids or other threads."""
        from oracleagentmemory.core import _images

        return _images.delete_image(self._store, image_id, (self._thread_id, self._user_id))

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
    ) -> list[SearchResult]:
        """Search with the thread's defaults: its user and agent exactly, this thread preferred
        (records of other threads of the same user and agent still qualify)."""
        resolved = resolve_thread_scope(
            thread_user_id=self._user_id,
            thread_agent_id=self._agent_id,
            current_thread_id=self._thread_id,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            exact_user_match=exact_user_match,
            exact_agent_match=exact_agent_match,
            exact_thread_match=exact_thread_match,
            scope=scope,
        )
        return run_search(
            self._store,
            query,
            resolved,
            max_results=max_results,
            token_budget=token_budget,
            soft_token_budget=soft_token_budget,
            record_types=record_types,
            metadata_filter=metadata_filter,
            num_hops=num_hops,
            max_linked_results=max_linked_results,
            include_invalid_results=include_invalid_results,
            search_config=self._search_config(),
            pruner=self._client_pruner(),
        )

    def _client_pruner(self) -> Any:
        return getattr(self._client, "_pruner_llm", None)

    def _search_config(self) -> Any:
        """The thread's search config: the object given in this process (with its reranker
        and pruner), else the kind and fields stored with the thread. A stored pruning config
        prunes with the client's ``pruner_llm`` (its own LLM is never stored); without one it
        keeps only its budgets."""
        from oracleagentmemory.core.searchconfig import (
            MemorySearchConfig,
            PruningMemorySearchConfig,
        )

        cls = self._settings.get("search_config.__class__")
        if cls is None:
            kind = self._settings.get("search_config.__kind__")
            if kind is None:
                return None
            cls = MemorySearchConfig.kind_class(kind)
        if (
            issubclass(cls, PruningMemorySearchConfig)
            and self._settings.get("search_config.pruner") is None
        ):
            if self._client_pruner() is None:
                return self._settings.config("search_config", MemorySearchConfig)
            return self._settings.config("search_config", cls, pruner=self._client_pruner())
        return self._settings.config("search_config", cls)

    # ------------------------------------------------------------------ card and summary

    def _recent(self, count: int, except_last: int) -> list[Message]:
        if count <= 0:
            return []
        records = self._store.list_thread_messages(
            self._thread_id, last_n=min(MAX_LIST_ROWS, count + except_last)
        )
        if except_last:
            records = records[:-except_last] if except_last < len(records) else []
        return [message_from_record(r) for r in records[-count:]]

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
        _no_extra_kwargs("get_context_card", kwargs)

        def opt(name: str, value: Any) -> int:
            return _check_int(name, CARD_DEFAULTS[name] if value is NOT_SET_MARKER else value)

        fallback = opt("fallback_message_count", fallback_message_count)
        max_relevant = opt("max_relevant_results", max_relevant_results)
        max_recent = opt("max_recent_messages", max_recent_messages)
        except_last = opt("except_last_messages", except_last_messages)
        window = self._recent(max(fallback, max_recent), except_last)
        summary_msgs = window[-fallback:] if fallback else []
        recent = window[-max_recent:] if max_recent else []
        summary = "\n".join(_transcript_line(m) for m in summary_msgs)
        topics: tuple[str, ...] = ()
        llm_summary = self._llm_summary(except_last)
        if llm_summary is not None:
            summary, topics = llm_summary
        results: list[SearchResult] = []
        query = " ".join(m.content for m in summary_msgs if isinstance(m.content, str)).strip()
        if query and max_relevant > 0:
            results = self._card_results(
                query,
                max_relevant,
                min_relevant_results_by_type,
                metadata_filter,
                include_invalid_results,
            )
            hard = (
                None
                if token_budget in (NOT_SET_MARKER, None)
                else _check_int("token_budget", token_budget, 1)
            )
            soft = (
                None
                if soft_token_budget in (NOT_SET_MARKER, None)
                else _check_int("soft_token_budget", soft_token_budget, 1)
            )
            results = apply_budgets(results, hard, soft)
        return OracleContextCard(
            summary=summary,
            topics=list(topics) or None,
            relevant_results=results,
            recent_messages=recent,
        )

    def _llm_summary(self, except_last: int) -> tuple[str, tuple[str, ...]] | None:
        """The LLM summary of the messages but the last ``except_last`` (None without one)."""
        if self._service is None or self._settings.get("llm") is None:
            return None
        tail = self._store.list_thread_messages(self._thread_id, last_n=except_last + 1)
        if len(tail) <= except_last:
            return None
        return self._service.thread_summary(self._context(), self._settings, tail[0].seq_no)

    def _card_results(
        self,
        query: str,
        max_relevant: int,
        min_by_type: Any,
        metadata_filter: Any,
        include_invalid_results: Any,
    ) -> list[SearchResult]:
        common = dict(
            metadata_filter=metadata_filter,
            include_invalid_results=include_invalid_results,
        )
        best = self.search(
            query, max_results=max_relevant, record_types=list(CARD_RECORD_TYPES), **common
        )
        if min_by_type in (NOT_SET_MARKER, None):
            return best
        if not isinstance(min_by_type, Mapping):
            raise TypeError(
                "min_relevant_results_by_type must be a mapping of record type to count"
            )
        chosen = {r.id: r for r in best}
        for record_type, minimum in min_by_type.items():
            _check_int(f"min_relevant_results_by_type[{record_type!r}]", minimum)
            have = sum(1 for r in chosen.values() if r.record.record_type == record_type)
            if have >= minimum:
                continue
            extra = self.search(query, max_results=minimum, record_types=[record_type], **common)
            for r in extra:
                if have >= minimum:
                    break
                if r.id not in chosen:
                    chosen[r.id] = r
                    have += 1
        return sorted(chosen.values(), key=lambda r: cast(OracleSearchResult, r).distance)

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
        messages kept first when it is too long. A positive ``token_budget`` (default 2000)
        cuts the text to ``int(token_budget * 3.5)`` characters when its estimate exceeds the
        budget; a non-positive one disables the cut.
        """
        _no_extra_kwargs("get_summary", kwargs)
        skip = 0 if except_last is NOT_SET_MARKER else _check_int("except_last", except_last)
        budget = DEFAULT_SUMMARY_TOKEN_BUDGET if token_budget is NOT_SET_MARKER else token_budget
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise TypeError("token_budget must be an int")
        llm_summary = self._llm_summary(skip)
        if llm_summary is not None:
            text = llm_summary[0]
            if budget > 0 and estimate_tokens(text) > budget:
                text = text[: int(budget * CHARS_PER_TOKEN)]
            return OracleSummary(content=text)
        records = self._store.list_thread_messages(self._thread_id)
        if skip:
            records = records[:-skip] if skip < len(records) else []
        lines = [_transcript_line(message_from_record(r)) for r in records]
        text = "\n".join(lines)
        if budget > 0 and estimate_tokens(text) > budget:
            limit = int(budget * CHARS_PER_TOKEN)
            kept: list[str] = []
            size = 0
            for line in reversed(lines):
                if size + len(line) + 1 > limit and kept:
                    break
                kept.append(line)
                size += len(line) + 1
            omitted = len(lines) - len(kept)
            head = f"[{omitted} earlier messages omitted]\n" if omitted else ""
            text = (head + "\n".join(reversed(kept)))[:limit]
        return OracleSummary(content=text)

    def wait_for_memory_extraction(self, timeout: float | None = 300.0) -> None:
        """Wait up to ``timeout`` seconds (None: no limit) for the background extraction of
        this thread accepted before the call; failed extraction counts as finished."""
        check_timeout(timeout)
        if self._service is not None:
            self._service.wait([self._thread_id], timeout)

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

"""Thread-level value types: the chat ``Message`` and the ``IThread`` interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypeAlias, TypedDict

from oracleagentmemory._async import run_sync
from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.contextcard import ContextCard as ContextCard
from oracleagentmemory.apis.memorystore import MetadataFilter as MetadataFilter
from oracleagentmemory.apis.message import (
    ImageContent,
    ImageMimeType,
    Message as Message,
    MetadataValue as MetadataValue,
    TextContent,
)
from oracleagentmemory.apis.records import (
    ImageRecord,
    RecordStatus,
    ThreadRecordType as ThreadRecordType,
)
from oracleagentmemory.apis.relations import (
    MemoryLinkType as MemoryLinkType,
    MemoryRecordType as MemoryRecordType,
    RelationType as RelationType,
)
from oracleagentmemory.apis.searchresult import SearchResult as SearchResult
from oracleagentmemory.apis.searchscope import SearchScope
from oracleagentmemory.apis.summary import Summary as Summary
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

if TYPE_CHECKING:
    from oracleagentmemory.apis.contextcard import ContextCard
    from oracleagentmemory.apis.searchresult import SearchResult
    from oracleagentmemory.apis.summary import Summary


class ThreadMessageTypedDictT(TypedDict):
    """A message given as a plain dict: ``role`` and ``content`` are required.

    Structured ``content`` is a list of part dicts (``{"type": "text", "text": ...}`` and the
    like); the thread converts them into :class:`MessageContent` parts.
    """

    role: str
    content: str | Sequence[Mapping[str, Any]]
    id: NotRequired[str | None]
    timestamp: NotRequired[str | None]
    metadata: NotRequired[dict[str, Any] | None]


def message_text(content: Any, *, image_placeholders: bool = False) -> str:
    """The text of a message's content: plain text as is, text parts joined by newlines.

    With ``image_placeholders`` an image part reads ``[image: description]`` (``[image]`` with
    no description), so a prompt still shows that the message carried an image. ``None``
    reads as ``''``.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, TextContent):
            parts.append(part.text)
        elif isinstance(part, ImageContent) and image_placeholders:
            parts.append(f"[image: {part.description}]" if part.description else "[image]")
    return "\n".join(parts)


ThreadMessageContentT: TypeAlias = str | list[Mapping[str, Any]]
"""Message content given as text or as a list of content-part dicts."""
ThreadMessageMappingT: TypeAlias = Mapping[
    str, str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None
]
"""A message given as a plain mapping (``role``, ``content``, optional ``id``, ...)."""


class NormalizedMessageT(TypedDict):
    """A message dict after normalisation: ``role`` and ``content`` always present."""

    role: str
    content: str | list[Mapping[str, Any]] | None
    id: NotRequired[str | None]
    timestamp: NotRequired[str | None]
    metadata: NotRequired[dict[str, Any] | None]


class IThread(ABC):
    """A conversation thread: its messages, memories, images, links, context card and summary.

    As in the reference SDK, the ``*_async`` methods are the abstract primitives and each sync
    method runs its async twin to completion; ``OracleThread`` overrides the sync methods and
    derives the async twins from them.
    """

    def add_image(
        self,
        image: bytes,
        description: str | NotSet | None = NOT_SET_MARKER,
        mime_type: ImageMimeType | NotSet = NOT_SET_MARKER,
        image_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> str:
        """Store an image; returns its id (described by the LLM when no description is given)."""
        return run_sync(
            self.add_image_async(
                image=image,
                description=description,
                mime_type=mime_type,
                image_id=image_id,
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                metadata=metadata,
                timestamp=timestamp,
                ttl_days=ttl_days,
                ttl_anchor=ttl_anchor,
                **store_kwargs,
            )
        )

    @abstractmethod
    async def add_image_async(
        self,
        image: bytes,
        description: str | NotSet | None = NOT_SET_MARKER,
        mime_type: ImageMimeType | NotSet = NOT_SET_MARKER,
        image_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> str:
        """Async form of :meth:`add_image`."""

    def add_memory(
        self,
        content: str,
        *,
        memory_type: Literal["memory", "guideline", "fact", "preference"] | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        thread_id: str | NotSet = NOT_SET_MARKER,
        memory_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        status: RecordStatus | NotSet = NOT_SET_MARKER,
        autonomous_linking: bool | NotSet = NOT_SET_MARKER,
        memory_id_to_link: str | NotSet = NOT_SET_MARKER,
        link_type: Literal["supersedes", "contradicts", "refines", "supports", "duplicates"]
        | NotSet = NOT_SET_MARKER,
        link_id: str | NotSet = NOT_SET_MARKER,
        link_timestamp: str | NotSet | None = NOT_SET_MARKER,
        link_metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> str:
        """Store a durable memory; returns its id."""
        return run_sync(
            self.add_memory_async(
                content=content,
                memory_type=memory_type,
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
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
                **store_kwargs,
            )
        )

    @abstractmethod
    async def add_memory_async(
        self,
        content: str,
        *,
        memory_type: Literal["memory", "guideline", "fact", "preference"] | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        thread_id: str | NotSet = NOT_SET_MARKER,
        memory_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        status: RecordStatus | NotSet = NOT_SET_MARKER,
        autonomous_linking: bool | NotSet = NOT_SET_MARKER,
        memory_id_to_link: str | NotSet = NOT_SET_MARKER,
        link_type: Literal["supersedes", "contradicts", "refines", "supports", "duplicates"]
        | NotSet = NOT_SET_MARKER,
        link_id: str | NotSet = NOT_SET_MARKER,
        link_timestamp: str | NotSet | None = NOT_SET_MARKER,
        link_metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> str:
        """Async form of :meth:`add_memory`."""

    def add_messages(
        self,
        messages: Sequence[
            Message
            | ThreadMessageTypedDictT
            | Mapping[str, str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None]
        ],
        metadata: dict[str, Any] | list[dict[str, Any] | None] | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | list[int | None] | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | list[TimeToLiveAnchor] | NotSet = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> list[str]:
        """Store messages in order; returns their ids."""
        return run_sync(
            self.add_messages_async(
                messages=messages,
                metadata=metadata,
                ttl_days=ttl_days,
                ttl_anchor=ttl_anchor,
                **store_kwargs,
            )
        )

    @abstractmethod
    async def add_messages_async(
        self,
        messages: Sequence[
            Message
            | ThreadMessageTypedDictT
            | Mapping[str, str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None]
        ],
        metadata: dict[str, Any] | list[dict[str, Any] | None] | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | list[int | None] | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | list[TimeToLiveAnchor] | NotSet = NOT_SET_MARKER,
        **store_kwargs: Any,
    ) -> list[str]:
        """Async form of :meth:`add_messages`."""

    @property
    @abstractmethod
    def agent_id(self) -> str | None:
        """Identifier of the agent the thread belongs to."""

    def delete_image(
        self,
        image_id: str,
    ) -> int:
        """Delete an image; returns 0 or 1."""
        return run_sync(self.delete_image_async(image_id=image_id))

    @abstractmethod
    async def delete_image_async(
        self,
        image_id: str,
    ) -> int:
        """Async form of :meth:`delete_image`."""

    def delete_memory(
        self,
        memory_id: str,
    ) -> int:
        """Delete a memory-like record; returns 0 or 1."""
        return run_sync(self.delete_memory_async(memory_id=memory_id))

    @abstractmethod
    async def delete_memory_async(
        self,
        memory_id: str,
    ) -> int:
        """Async form of :meth:`delete_memory`."""

    def delete_message(
        self,
        message_id: str,
    ) -> int:
        """Delete a message of this thread; returns 0 or 1."""
        return run_sync(self.delete_message_async(message_id=message_id))

    @abstractmethod
    async def delete_message_async(
        self,
        message_id: str,
    ) -> int:
        """Async form of :meth:`delete_message`."""

    def delete_record_link(
        self,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        relation_type: str | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> int:
        """Delete a relation by id or by its full endpoint tuple; returns 0 or 1."""
        return run_sync(
            self.delete_record_link_async(
                source_record_id=source_record_id,
                source_record_type=source_record_type,
                target_record_id=target_record_id,
                target_record_type=target_record_type,
                relation_type=relation_type,
                relation_id=relation_id,
            )
        )

    @abstractmethod
    async def delete_record_link_async(
        self,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        relation_type: str | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> int:
        """Async form of :meth:`delete_record_link`."""

    def get_context_card(
        self,
        fallback_message_count: int | NotSet = NOT_SET_MARKER,
        max_relevant_results: int | NotSet = NOT_SET_MARKER,
        max_recent_messages: int | NotSet = NOT_SET_MARKER,
        except_last_messages: int | NotSet = NOT_SET_MARKER,
        min_relevant_results_by_type: Mapping[
            Literal["message", "memory", "guideline", "fact", "preference"], int
        ]
        | NotSet
        | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_invalid_results: bool | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet | None = NOT_SET_MARKER,
        soft_token_budget: int | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> ContextCard:
        """A context card for the thread."""
        return run_sync(
            self.get_context_card_async(
                fallback_message_count=fallback_message_count,
                max_relevant_results=max_relevant_results,
                max_recent_messages=max_recent_messages,
                except_last_messages=except_last_messages,
                min_relevant_results_by_type=min_relevant_results_by_type,
                metadata_filter=metadata_filter,
                include_invalid_results=include_invalid_results,
                token_budget=token_budget,
                soft_token_budget=soft_token_budget,
                **kwargs,
            )
        )

    @abstractmethod
    async def get_context_card_async(
        self,
        fallback_message_count: int | NotSet = NOT_SET_MARKER,
        max_relevant_results: int | NotSet = NOT_SET_MARKER,
        max_recent_messages: int | NotSet = NOT_SET_MARKER,
        except_last_messages: int | NotSet = NOT_SET_MARKER,
        min_relevant_results_by_type: Mapping[
            Literal["message", "memory", "guideline", "fact", "preference"], int
        ]
        | NotSet
        | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_invalid_results: bool | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet | None = NOT_SET_MARKER,
        soft_token_budget: int | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> ContextCard:
        """Async form of :meth:`get_context_card`."""

    def get_message(
        self,
        message_id: str,
        *,
        included_image_ids: list[str] | NotSet = NOT_SET_MARKER,
    ) -> Message:
        """One message of the thread."""
        return run_sync(
            self.get_message_async(message_id=message_id, included_image_ids=included_image_ids)
        )

    @abstractmethod
    async def get_message_async(
        self,
        message_id: str,
        *,
        included_image_ids: list[str] | NotSet = NOT_SET_MARKER,
    ) -> Message:
        """Async form of :meth:`get_message`."""

    def get_messages(
        self,
        *,
        start: int | NotSet | None = NOT_SET_MARKER,
        end: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[Message]:
        """Stored messages in chronological order."""
        return run_sync(
            self.get_messages_async(start=start, end=end, include_image_bytes=include_image_bytes)
        )

    @abstractmethod
    async def get_messages_async(
        self,
        *,
        start: int | NotSet | None = NOT_SET_MARKER,
        end: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[Message]:
        """Async form of :meth:`get_messages`."""

    def get_summary(
        self,
        except_last: int | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> Summary:
        """A summary of the thread."""
        return run_sync(
            self.get_summary_async(except_last=except_last, token_budget=token_budget, **kwargs)
        )

    @abstractmethod
    async def get_summary_async(
        self,
        except_last: int | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> Summary:
        """Async form of :meth:`get_summary`."""

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
    ) -> str:
        """Store a directed relation between two records; returns its id."""
        return run_sync(
            self.link_records_async(
                source_record_id=source_record_id,
                source_record_type=source_record_type,
                target_record_id=target_record_id,
                target_record_type=target_record_type,
                relation_type=relation_type,
                opposite_relation_type=opposite_relation_type,
                relation_id=relation_id,
                timestamp=timestamp,
                metadata=metadata,
            )
        )

    @abstractmethod
    async def link_records_async(
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
    ) -> str:
        """Async form of :meth:`link_records`."""

    def list_images(
        self,
        image_id: str | NotSet = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ImageRecord]:
        """Stored images."""
        return run_sync(
            self.list_images_async(
                image_id=image_id,
                metadata_filter=metadata_filter,
                include_bytes=include_bytes,
                limit=limit,
            )
        )

    @abstractmethod
    async def list_images_async(
        self,
        image_id: str | NotSet = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ImageRecord]:
        """Async form of :meth:`list_images`."""

    @property
    @abstractmethod
    def metadata(self) -> dict[str, Any] | None:
        """JSON-like metadata of the thread."""

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
        scope: SearchScope | NotSet = NOT_SET_MARKER,
        as_of: datetime | None = None,
    ) -> list[SearchResult]:
        """Records relevant to ``query`` within the resolved scope; ``as_of`` (an addition
        of ours): the records true at that time, whatever their status now."""
        return run_sync(
            self.search_async(
                query=query,
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                exact_user_match=exact_user_match,
                exact_agent_match=exact_agent_match,
                exact_thread_match=exact_thread_match,
                max_results=max_results,
                token_budget=token_budget,
                soft_token_budget=soft_token_budget,
                record_types=record_types,
                metadata_filter=metadata_filter,
                num_hops=num_hops,
                max_linked_results=max_linked_results,
                include_invalid_results=include_invalid_results,
                scope=scope,
                as_of=as_of,
            )
        )

    async def search_async(
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
        scope: SearchScope | NotSet = NOT_SET_MARKER,
        as_of: datetime | None = None,
    ) -> list[SearchResult]:
        """Async form of :meth:`search`."""
        return await self._do_search_async(
            query,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            exact_user_match=exact_user_match,
            exact_agent_match=exact_agent_match,
            exact_thread_match=exact_thread_match,
            max_results=max_results,
            token_budget=token_budget,
            soft_token_budget=soft_token_budget,
            record_types=record_types,
            metadata_filter=metadata_filter,
            num_hops=num_hops,
            max_linked_results=max_linked_results,
            include_invalid_results=include_invalid_results,
            scope=scope,
            as_of=as_of,
        )

    @property
    @abstractmethod
    def thread_id(self) -> str:
        """Identifier of the thread."""

    def update_image(
        self,
        image_id: str,
        image: bytes | NotSet = NOT_SET_MARKER,
        description: str | NotSet | None = NOT_SET_MARKER,
        mime_type: ImageMimeType | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Update an image; omitted fields are kept. Returns its id."""
        return run_sync(
            self.update_image_async(
                image_id=image_id,
                image=image,
                description=description,
                mime_type=mime_type,
                metadata=metadata,
                timestamp=timestamp,
                ttl_days=ttl_days,
                ttl_anchor=ttl_anchor,
                **kwargs,
            )
        )

    @abstractmethod
    async def update_image_async(
        self,
        image_id: str,
        image: bytes | NotSet = NOT_SET_MARKER,
        description: str | NotSet | None = NOT_SET_MARKER,
        mime_type: ImageMimeType | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Async form of :meth:`update_image`."""

    def update_memory(
        self,
        memory_id: str,
        content: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        status: RecordStatus | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Update a memory-like record; omitted fields are kept. Returns its id."""
        return run_sync(
            self.update_memory_async(
                memory_id=memory_id,
                content=content,
                metadata=metadata,
                timestamp=timestamp,
                ttl_days=ttl_days,
                ttl_anchor=ttl_anchor,
                status=status,
                **kwargs,
            )
        )

    @abstractmethod
    async def update_memory_async(
        self,
        memory_id: str,
        content: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        status: RecordStatus | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Async form of :meth:`update_memory`."""

    def update_message(
        self,
        message_id: str,
        content: str | list[Mapping[str, Any]] | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Update a message; omitted fields are kept. Returns its id."""
        return run_sync(
            self.update_message_async(
                message_id=message_id,
                content=content,
                metadata=metadata,
                ttl_days=ttl_days,
                ttl_anchor=ttl_anchor,
                **kwargs,
            )
        )

    @abstractmethod
    async def update_message_async(
        self,
        message_id: str,
        content: str | list[Mapping[str, Any]] | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Async form of :meth:`update_message`."""

    def update_record_link(
        self,
        relation_id: str,
        relation_type: str | NotSet = NOT_SET_MARKER,
        opposite_relation_type: str | NotSet = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> int:
        """Change a relation; returns 1, or 0 for an unknown id."""
        return run_sync(
            self.update_record_link_async(
                relation_id=relation_id,
                relation_type=relation_type,
                opposite_relation_type=opposite_relation_type,
                timestamp=timestamp,
                metadata=metadata,
            )
        )

    @abstractmethod
    async def update_record_link_async(
        self,
        relation_id: str,
        relation_type: str | NotSet = NOT_SET_MARKER,
        opposite_relation_type: str | NotSet = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> int:
        """Async form of :meth:`update_record_link`."""

    @property
    @abstractmethod
    def user_id(self) -> str | None:
        """Identifier of the user the thread belongs to."""

    def wait_for_memory_extraction(
        self,
        timeout: float | None = 300.0,
    ) -> None:
        """Wait for background extraction accepted before the call."""
        return run_sync(self.wait_for_memory_extraction_async(timeout=timeout))

    @abstractmethod
    async def wait_for_memory_extraction_async(
        self,
        timeout: float | None = 300.0,
    ) -> None:
        """Async form of :meth:`wait_for_memory_extraction`."""

    @abstractmethod
    async def _do_search_async(self, query: str, **kwargs: Any) -> list[SearchResult]:
        """Run a search with the caller's (unresolved) scope arguments."""

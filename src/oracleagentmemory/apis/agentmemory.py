"""The agent-memory interface: what ``OracleAgentMemory`` offers, for other implementations.

As in the reference SDK, the ``*_async`` methods are the abstract primitives and each sync
method runs its async twin to completion; an implementation may override either side (ours
overrides the sync methods and derives the async twins from them).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from oracleagentmemory._async import run_sync
from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.memorystore import MetadataFilter as MetadataFilter
from oracleagentmemory.apis.message import ImageMimeType, MetadataValue as MetadataValue
from oracleagentmemory.apis.records import (
    AgentProfileRecord,
    ImageRecord,
    MemoryRecord,
    MessageRecord,
    RecordStatus,
    ThreadRecord,
    UserProfileRecord,
)
from oracleagentmemory.apis.relations import (
    MemoryLinkType as MemoryLinkType,
    MemoryRecordType as MemoryRecordType,
    RelationType as RelationType,
)
from oracleagentmemory.apis.searchconfig import ISearchConfig as ISearchConfig
from oracleagentmemory.apis.searchresult import SearchResult as SearchResult
from oracleagentmemory.apis.searchscope import SearchScope
from oracleagentmemory.apis.thread import IThread as IThread
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

if TYPE_CHECKING:
    from oracleagentmemory.apis.searchresult import SearchResult
    from oracleagentmemory.apis.thread import IThread


class IAgentMemory(ABC):
    """Durable memory for agents: threads, memories, profiles, images, links and search."""

    def add_agent(
        self,
        agent_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Store an agent profile; returns the agent id."""
        return run_sync(
            self.add_agent_async(agent_id=agent_id, information=information, metadata=metadata)
        )

    @abstractmethod
    async def add_agent_async(
        self,
        agent_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Async form of :meth:`add_agent`."""

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

    def add_user(
        self,
        user_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Store a user profile; returns the user id."""
        return run_sync(
            self.add_user_async(user_id=user_id, information=information, metadata=metadata)
        )

    @abstractmethod
    async def add_user_async(
        self,
        user_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        """Async form of :meth:`add_user`."""

    def create_thread(
        self,
        *,
        thread_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> IThread:
        """Create and register a thread."""
        return run_sync(
            self.create_thread_async(
                thread_id=thread_id, user_id=user_id, agent_id=agent_id, metadata=metadata, **kwargs
            )
        )

    @abstractmethod
    async def create_thread_async(
        self,
        *,
        thread_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> IThread:
        """Async form of :meth:`create_thread`."""

    def delete_agent(
        self,
        agent_id: str,
        cascade: bool = True,
    ) -> int:
        """Delete an agent profile (and, with ``cascade``, what is scoped to it); returns 0 or 1."""
        return run_sync(self.delete_agent_async(agent_id=agent_id, cascade=cascade))

    @abstractmethod
    async def delete_agent_async(
        self,
        agent_id: str,
        cascade: bool = True,
    ) -> int:
        """Async form of :meth:`delete_agent`."""

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

    def delete_thread(
        self,
        thread_id: str,
    ) -> int:
        """Delete a thread with its messages and memories; returns 0 or 1."""
        return run_sync(self.delete_thread_async(thread_id=thread_id))

    @abstractmethod
    async def delete_thread_async(
        self,
        thread_id: str,
    ) -> int:
        """Async form of :meth:`delete_thread`."""

    def delete_user(
        self,
        user_id: str,
        cascade: bool = True,
    ) -> int:
        """Delete a user profile (and, with ``cascade``, what is scoped to it); returns 0 or 1."""
        return run_sync(self.delete_user_async(user_id=user_id, cascade=cascade))

    @abstractmethod
    async def delete_user_async(
        self,
        user_id: str,
        cascade: bool = True,
    ) -> int:
        """Async form of :meth:`delete_user`."""

    def get_thread(
        self,
        thread_id: str,
    ) -> IThread:
        """Reopen a stored thread."""
        return run_sync(self.get_thread_async(thread_id=thread_id))

    @abstractmethod
    async def get_thread_async(
        self,
        thread_id: str,
    ) -> IThread:
        """Async form of :meth:`get_thread`."""

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

    def list_agents(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[AgentProfileRecord]:
        """Stored agent profiles."""
        return run_sync(self.list_agents_async(metadata_filter=metadata_filter, limit=limit))

    @abstractmethod
    async def list_agents_async(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[AgentProfileRecord]:
        """Async form of :meth:`list_agents`."""

    def list_images(
        self,
        image_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ImageRecord]:
        """Stored images."""
        return run_sync(
            self.list_images_async(
                image_id=image_id,
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                metadata_filter=metadata_filter,
                include_bytes=include_bytes,
                limit=limit,
            )
        )

    @abstractmethod
    async def list_images_async(
        self,
        image_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ImageRecord]:
        """Async form of :meth:`list_images`."""

    def list_memories(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[MemoryRecord]:
        """Stored memory-like records."""
        return run_sync(
            self.list_memories_async(
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                metadata_filter=metadata_filter,
                limit=limit,
            )
        )

    @abstractmethod
    async def list_memories_async(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[MemoryRecord]:
        """Async form of :meth:`list_memories`."""

    def list_messages(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[MessageRecord]:
        """Stored messages."""
        return run_sync(
            self.list_messages_async(
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                metadata_filter=metadata_filter,
                limit=limit,
                include_image_bytes=include_image_bytes,
            )
        )

    @abstractmethod
    async def list_messages_async(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[MessageRecord]:
        """Async form of :meth:`list_messages`."""

    def list_threads(
        self,
        user_id: str | None,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ThreadRecord]:
        """Stored threads."""
        return run_sync(
            self.list_threads_async(
                user_id=user_id, agent_id=agent_id, metadata_filter=metadata_filter, limit=limit
            )
        )

    @abstractmethod
    async def list_threads_async(
        self,
        user_id: str | None,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ThreadRecord]:
        """Async form of :meth:`list_threads`."""

    def list_users(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[UserProfileRecord]:
        """Stored user profiles."""
        return run_sync(self.list_users_async(metadata_filter=metadata_filter, limit=limit))

    @abstractmethod
    async def list_users_async(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[UserProfileRecord]:
        """Async form of :meth:`list_users`."""

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
        *,
        content: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        status: RecordStatus | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        """Async form of :meth:`update_memory`."""

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

    def update_thread(
        self,
        thread_id: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> IThread:
        """Persist thread metadata and runtime settings."""
        return run_sync(self.update_thread_async(thread_id=thread_id, metadata=metadata, **kwargs))

    @abstractmethod
    async def update_thread_async(
        self,
        thread_id: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> IThread:
        """Async form of :meth:`update_thread`."""

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

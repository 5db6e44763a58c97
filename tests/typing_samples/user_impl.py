"""A user's own implementations of the SDK interfaces, written with the reference's signatures.

``make test`` runs ``mypy --strict`` on this module: code written against the reference's
``IMemoryStore``, ``IThread`` and ``IAgentMemory`` must type-check against ours, and
``tests/test_interfaces.py`` checks that these classes are concrete (nothing more is abstract
in our interfaces than in the reference's).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis import (
    AgentProfileRecord,
    ContextCard,
    IAgentMemory,
    ImageMimeType,
    ImageRecord,
    IMemoryStore,
    IThread,
    MemoryRecord,
    Message,
    MessageRecord,
    PendingRecordBatch,
    Record,
    RecordRelation,
    RecordStatus,
    SearchResult,
    Summary,
    ThreadRecord,
    TimeToLiveAnchor,
    UserProfileRecord,
)
from oracleagentmemory.apis.memorystore import (
    MetadataFilter,
    PerRecordEmbeddingsInput,
    PerRecordIndexTextInput,
    RecordContentInput,
)
from oracleagentmemory.apis.records import MetadataValue
from oracleagentmemory.apis.relations import RelationType
from oracleagentmemory.apis.thread import ThreadMessageTypedDictT


class UserStore(IMemoryStore):
    """Implements every abstract member of the reference's IMemoryStore."""

    def _add_prepared_batches(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        return []

    async def _add_prepared_batches_async(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        return []

    def add_agent(
        self,
        agent_id: str,
        information: str,
        metadata: MetadataValue | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        raise NotImplementedError

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
        raise NotImplementedError

    def add_user(
        self,
        user_id: str | NotSet = NOT_SET_MARKER,
        information: str | NotSet = NOT_SET_MARKER,
        metadata: MetadataValue | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        raise NotImplementedError

    def delete(
        self,
        record_type: str,
        record_id: str,
        cascade: bool = False,
    ) -> int:
        raise NotImplementedError

    def delete_relations(
        self,
        relation_ids: str | builtins.list[str],
    ) -> int:
        raise NotImplementedError

    def delete_thread(
        self,
        thread_id: str,
    ) -> int:
        raise NotImplementedError

    def get(
        self,
        record_type: str,
        record_id: str,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> Record | None:
        raise NotImplementedError

    def get_relation(
        self,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        relation_type: RelationType | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> RecordRelation | None:
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

    def list_thread_messages(
        self,
        thread_id: str,
        *,
        last_n: int | None = None,
        range_start_seq_no: int | None = None,
        range_end_seq_no: int | None = None,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> builtins.list[MessageRecord]:
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError


class UserThread(IThread):
    """Implements every abstract member of the reference's IThread."""

    async def _do_search_async(self, query: str, **kwargs: Any) -> list[SearchResult]:
        return []

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
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

    @property
    def agent_id(self) -> str:
        return "agent_id"

    async def delete_image_async(
        self,
        image_id: str,
    ) -> int:
        raise NotImplementedError

    async def delete_memory_async(
        self,
        memory_id: str,
    ) -> int:
        raise NotImplementedError

    async def delete_message_async(
        self,
        message_id: str,
    ) -> int:
        raise NotImplementedError

    async def delete_record_link_async(
        self,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        relation_type: str | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> int:
        raise NotImplementedError

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
        raise NotImplementedError

    async def get_message_async(
        self,
        message_id: str,
        *,
        included_image_ids: list[str] | NotSet = NOT_SET_MARKER,
    ) -> Message:
        raise NotImplementedError

    async def get_messages_async(
        self,
        *,
        start: int | NotSet | None = NOT_SET_MARKER,
        end: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[Message]:
        raise NotImplementedError

    async def get_summary_async(
        self,
        except_last: int | NotSet = NOT_SET_MARKER,
        token_budget: int | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> Summary:
        raise NotImplementedError

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
        raise NotImplementedError

    async def list_images_async(
        self,
        image_id: str | NotSet = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        include_bytes: bool | NotSet = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ImageRecord]:
        raise NotImplementedError

    @property
    def metadata(self) -> dict[str, Any] | None:
        return None

    @property
    def thread_id(self) -> str:
        return "thread_id"

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
        raise NotImplementedError

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
        raise NotImplementedError

    async def update_message_async(
        self,
        message_id: str,
        content: str | list[Mapping[str, Any]] | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        ttl_days: int | NotSet | None = NOT_SET_MARKER,
        ttl_anchor: TimeToLiveAnchor | NotSet = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> str:
        raise NotImplementedError

    async def update_record_link_async(
        self,
        relation_id: str,
        relation_type: str | NotSet = NOT_SET_MARKER,
        opposite_relation_type: str | NotSet = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> int:
        raise NotImplementedError

    @property
    def user_id(self) -> str:
        return "user_id"

    async def wait_for_memory_extraction_async(
        self,
        timeout: float | None = 300.0,
    ) -> None:
        raise NotImplementedError


class UserMemory(IAgentMemory):
    """Implements every abstract member of the reference's IAgentMemory."""

    async def _do_search_async(self, query: str, **kwargs: Any) -> list[SearchResult]:
        return []

    async def add_agent_async(
        self,
        agent_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

    async def add_user_async(
        self,
        user_id: str,
        information: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> str:
        raise NotImplementedError

    async def create_thread_async(
        self,
        *,
        thread_id: str | NotSet = NOT_SET_MARKER,
        user_id: str | NotSet = NOT_SET_MARKER,
        agent_id: str | NotSet = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> IThread:
        raise NotImplementedError

    async def delete_agent_async(
        self,
        agent_id: str,
        cascade: bool = True,
    ) -> int:
        raise NotImplementedError

    async def delete_image_async(
        self,
        image_id: str,
    ) -> int:
        raise NotImplementedError

    async def delete_memory_async(
        self,
        memory_id: str,
    ) -> int:
        raise NotImplementedError

    async def delete_record_link_async(
        self,
        source_record_id: str | NotSet = NOT_SET_MARKER,
        source_record_type: str | NotSet = NOT_SET_MARKER,
        target_record_id: str | NotSet = NOT_SET_MARKER,
        target_record_type: str | NotSet = NOT_SET_MARKER,
        relation_type: str | NotSet = NOT_SET_MARKER,
        relation_id: str | NotSet = NOT_SET_MARKER,
    ) -> int:
        raise NotImplementedError

    async def delete_thread_async(
        self,
        thread_id: str,
    ) -> int:
        raise NotImplementedError

    async def delete_user_async(
        self,
        user_id: str,
        cascade: bool = True,
    ) -> int:
        raise NotImplementedError

    async def get_thread_async(
        self,
        thread_id: str,
    ) -> IThread:
        raise NotImplementedError

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
        raise NotImplementedError

    async def list_agents_async(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[AgentProfileRecord]:
        raise NotImplementedError

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
        raise NotImplementedError

    async def list_memories_async(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[MemoryRecord]:
        raise NotImplementedError

    async def list_messages_async(
        self,
        user_id: str | NotSet | None = NOT_SET_MARKER,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        thread_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
        include_image_bytes: bool | NotSet = NOT_SET_MARKER,
    ) -> list[MessageRecord]:
        raise NotImplementedError

    async def list_threads_async(
        self,
        user_id: str | None,
        agent_id: str | NotSet | None = NOT_SET_MARKER,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[ThreadRecord]:
        raise NotImplementedError

    async def list_users_async(
        self,
        metadata_filter: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        limit: int | NotSet | None = NOT_SET_MARKER,
    ) -> list[UserProfileRecord]:
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

    async def update_record_link_async(
        self,
        relation_id: str,
        relation_type: str | NotSet = NOT_SET_MARKER,
        opposite_relation_type: str | NotSet = NOT_SET_MARKER,
        timestamp: str | NotSet | None = NOT_SET_MARKER,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
    ) -> int:
        raise NotImplementedError

    async def update_thread_async(
        self,
        thread_id: str,
        metadata: dict[str, Any] | NotSet | None = NOT_SET_MARKER,
        **kwargs: Any,
    ) -> IThread:
        raise NotImplementedError

    async def wait_for_memory_extraction_async(
        self,
        timeout: float | None = 300.0,
    ) -> None:
        raise NotImplementedError

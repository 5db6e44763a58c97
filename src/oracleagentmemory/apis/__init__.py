"""Value types and interfaces of the agent-memory SDK (no I/O): records, messages, relations,
scopes, search results, context cards, summaries and the abstract client, thread, store,
embedder, LLM and reranker interfaces that ``core`` implements (and a user's code may)."""

from typing import TYPE_CHECKING

from oracleagentmemory._lazy import lazy_exports
from oracleagentmemory._notset import NOT_SET_MARKER

if TYPE_CHECKING:
    from oracleagentmemory.apis.agentmemory import IAgentMemory
    from oracleagentmemory.apis.batch import PendingRecordBatch
    from oracleagentmemory.apis.contextcard import ContextCard
    from oracleagentmemory.apis.embedders.embedder import IEmbedder
    from oracleagentmemory.apis.llms.llm import ILlm, LlmResponse
    from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT, IMemoryStore
    from oracleagentmemory.apis.message import (
        ImageContent,
        ImageMimeType,
        Message,
        MessageContent,
        TextContent,
    )
    from oracleagentmemory.apis.records import (
        AgentProfileRecord,
        FactRecord,
        GuidelineRecord,
        ImageRecord,
        MemoryChange as MemoryChange,
        MemoryRecord,
        MemoryVersion as MemoryVersion,
        MessageRecord,
        PreferenceRecord,
        Record,
        RecordStatus,
        ScopedRecord,
        ThreadRecord,
        ThreadRecordType,
        ThreadSummaryRecord,
        UserProfileRecord,
        build_record,
    )
    from oracleagentmemory.apis.relations import (
        MemoryLink,
        MemoryLinkOppositeType,
        MemoryLinkType,
        MemoryRecordType,
        RecordRelation,
        RelationType,
    )
    from oracleagentmemory.apis.reranker import IReranker, RerankResponse, RerankResponseResult
    from oracleagentmemory.apis.scope import Scope
    from oracleagentmemory.apis.searchconfig import ISearchConfig
    from oracleagentmemory.apis.searchresult import SearchResult, SearchResultFormatConfig
    from oracleagentmemory.apis.searchscope import SearchScope
    from oracleagentmemory.apis.summary import Summary
    from oracleagentmemory.apis.thread import IThread
    from oracleagentmemory.apis.ttl import TimeToLiveAnchor

_EXPORTS = {
    "oracleagentmemory.apis.agentmemory": ("IAgentMemory",),
    "oracleagentmemory.apis.batch": ("PendingRecordBatch",),
    "oracleagentmemory.apis.contextcard": ("ContextCard",),
    "oracleagentmemory.apis.embedders.embedder": ("IEmbedder",),
    "oracleagentmemory.apis.llms.llm": (
        "ILlm",
        "LlmResponse",
    ),
    "oracleagentmemory.apis.memorystore": (
        "MAX_LIST_LIMIT",
        "IMemoryStore",
    ),
    "oracleagentmemory.apis.message": (
        "ImageContent",
        "ImageMimeType",
        "Message",
        "MessageContent",
        "TextContent",
    ),
    "oracleagentmemory.apis.records": (
        "AgentProfileRecord",
        "FactRecord",
        "GuidelineRecord",
        "ImageRecord",
        "MemoryChange",
        "MemoryRecord",
        "MemoryVersion",
        "MessageRecord",
        "PreferenceRecord",
        "Record",
        "RecordStatus",
        "ScopedRecord",
        "ThreadRecord",
        "ThreadRecordType",
        "ThreadSummaryRecord",
        "UserProfileRecord",
        "build_record",
    ),
    "oracleagentmemory.apis.relations": (
        "MemoryLink",
        "MemoryLinkOppositeType",
        "MemoryLinkType",
        "MemoryRecordType",
        "RecordRelation",
        "RelationType",
    ),
    "oracleagentmemory.apis.reranker": (
        "IReranker",
        "RerankResponse",
        "RerankResponseResult",
    ),
    "oracleagentmemory.apis.scope": ("Scope",),
    "oracleagentmemory.apis.searchconfig": ("ISearchConfig",),
    "oracleagentmemory.apis.searchresult": (
        "SearchResult",
        "SearchResultFormatConfig",
    ),
    "oracleagentmemory.apis.searchscope": ("SearchScope",),
    "oracleagentmemory.apis.summary": ("Summary",),
    "oracleagentmemory.apis.thread": ("IThread",),
    "oracleagentmemory.apis.ttl": ("TimeToLiveAnchor",),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "MAX_LIST_LIMIT",
    "NOT_SET_MARKER",
    "AgentProfileRecord",
    "ContextCard",
    "FactRecord",
    "GuidelineRecord",
    "IAgentMemory",
    "IEmbedder",
    "ILlm",
    "IMemoryStore",
    "IReranker",
    "ISearchConfig",
    "IThread",
    "ImageContent",
    "ImageMimeType",
    "ImageRecord",
    "LlmResponse",
    "MemoryChange",
    "MemoryLink",
    "MemoryLinkOppositeType",
    "MemoryLinkType",
    "MemoryRecord",
    "MemoryRecordType",
    "MemoryVersion",
    "Message",
    "MessageContent",
    "MessageRecord",
    "PendingRecordBatch",
    "PreferenceRecord",
    "Record",
    "RecordRelation",
    "RecordStatus",
    "RelationType",
    "RerankResponse",
    "RerankResponseResult",
    "Scope",
    "ScopedRecord",
    "SearchResult",
    "SearchResultFormatConfig",
    "SearchScope",
    "Summary",
    "TextContent",
    "ThreadRecord",
    "ThreadRecordType",
    "ThreadSummaryRecord",
    "TimeToLiveAnchor",
    "UserProfileRecord",
    "build_record",
]

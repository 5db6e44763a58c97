"""Value types and interfaces of the agent-memory SDK (no I/O)."""

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.llms.llm import ILlm, LlmResponse
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT, IMemoryStore
from oracleagentmemory.apis.records import (
    AgentProfileRecord,
    FactRecord,
    GuidelineRecord,
    ImageRecord,
    MemoryRecord,
    MessageRecord,
    PreferenceRecord,
    Record,
    RecordStatus,
    ScopedRecord,
    ThreadRecord,
    ThreadSummaryRecord,
    UserProfileRecord,
    build_record,
)
from oracleagentmemory.apis.relations import MemoryLink, RecordRelation
from oracleagentmemory.apis.reranker import IReranker, RerankResponse, RerankResponseResult
from oracleagentmemory.apis.scope import Scope
from oracleagentmemory.apis.searchscope import SearchScope
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

__all__ = [
    "MAX_LIST_LIMIT",
    "NOT_SET_MARKER",
    "AgentProfileRecord",
    "FactRecord",
    "GuidelineRecord",
    "ILlm",
    "IMemoryStore",
    "IReranker",
    "ImageRecord",
    "LlmResponse",
    "MemoryLink",
    "MemoryRecord",
    "MessageRecord",
    "PendingRecordBatch",
    "PreferenceRecord",
    "Record",
    "RecordRelation",
    "RecordStatus",
    "RerankResponse",
    "RerankResponseResult",
    "Scope",
    "ScopedRecord",
    "SearchScope",
    "ThreadRecord",
    "ThreadSummaryRecord",
    "TimeToLiveAnchor",
    "UserProfileRecord",
    "build_record",
]

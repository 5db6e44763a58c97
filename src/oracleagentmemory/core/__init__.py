"""The agent-memory client, stores, configuration and adapters."""

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
)
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.core.store._postgres_store import PostgresMemoryStore
from oracleagentmemory.core.store._sql_store import SchemaError
from oracleagentmemory.core.store._sqlite_store import SQLiteMemoryStore
from oracleagentmemory.core.summary import OracleSummary
from oracleagentmemory.core.thread import OracleThread

__all__ = [
    "NOT_SET_MARKER",
    "BackgroundExtractionQueueFullBehavior",
    "ImageInputLimitConfig",
    "MemoryExtractionConfig",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLinkExtractionMode",
    "MemoryRetentionConfig",
    "MemorySearchConfig",
    "OracleAgentMemory",
    "OracleContextCard",
    "OracleDBMemoryStore",
    "OracleMemoryStore",
    "OracleSearchResult",
    "OracleSummary",
    "OracleThread",
    "PostgresMemoryStore",
    "PruningMemorySearchConfig",
    "SQLiteMemoryStore",
    "SchemaError",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
    "TopKMemorySearchConfig",
]

"""The agent-memory client, stores, configuration and adapters."""

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core.client import OracleAgentMemory
from oracleagentmemory.core.configs import (
    BackgroundExtractionQueueFullBehavior,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.memorystore import OracleMemoryStore
from oracleagentmemory.core.reranker import Reranker
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.schemapolicy import SchemaPolicy
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
)
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.core.store._db_store import OracleDBMemoryStore
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
    "Reranker",
    "SQLiteMemoryStore",
    "SchemaError",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
    "TopKMemorySearchConfig",
]

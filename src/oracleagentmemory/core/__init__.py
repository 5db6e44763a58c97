"""The agent-memory client, stores, configuration and adapters."""

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.memorystore import OracleMemoryStore
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.schemapolicy import SchemaPolicy
from oracleagentmemory.core.store._sql_store import SchemaError
from oracleagentmemory.core.store._sqlite_store import SQLiteMemoryStore

__all__ = [
    "NOT_SET_MARKER",
    "MemoryRetentionConfig",
    "OracleMemoryStore",
    "SQLiteMemoryStore",
    "SchemaError",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
]

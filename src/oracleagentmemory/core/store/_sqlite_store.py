"""The embedded default: the SQL store on a SQLite file."""

from __future__ import annotations

from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.schemapolicy import SchemaPolicy
from oracleagentmemory.core.store._sql_store import SQLMemoryStore
from oracleagentmemory.core.store._sqlite import SQLiteDialect


class SQLiteMemoryStore(SQLMemoryStore):
    """Messages, memories and profiles in one SQLite file, with no server to run.

    ``connection`` is a file path, ``"sqlite:///path"``, ``":memory:"`` or a
    ``sqlite3.Connection`` (switched to autocommit; the caller keeps ownership; pass
    ``check_same_thread=False`` to use the async methods). Calls on one store are serialised;
    several processes may share a file (SQLite's locking orders their writes).
    """

    def __init__(
        self,
        embedder: IEmbedder | None,
        connection: Any,
        *,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: int | None = None,
        memory_store_id: str | NotSet = NOT_SET_MARKER,
        search_strategy: SearchStrategy = SearchStrategy.VECTOR,
        search_index_sync: SearchIndexSyncMode = SearchIndexSyncMode.ON_COMMIT,
        memory_retention_config: MemoryRetentionConfig | NotSet = NOT_SET_MARKER,
    ) -> None:
        prefix = self.check_arguments(
            embedder,
            vector_dim,
            memory_store_id,
            search_strategy,
            search_index_sync,
            memory_retention_config,
        )
        super().__init__(
            embedder,
            SQLiteDialect(connection, prefix),
            schema_policy=schema_policy,
            vector_dim=vector_dim,
            memory_store_id=prefix,
            search_strategy=search_strategy,
            search_index_sync=search_index_sync,
            memory_retention_config=memory_retention_config,
        )

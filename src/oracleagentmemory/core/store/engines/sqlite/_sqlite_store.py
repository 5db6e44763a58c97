"""The embedded default: the database store on a SQLite file."""

from __future__ import annotations

from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore, _sqlite_dialect
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._dialect import Dialect


class SQLiteMemoryStore(OracleDBMemoryStore):
    """Messages, memories and profiles in one SQLite file, with no server to run.

    ``connection`` is a file path, ``"sqlite:///path"``, ``":memory:"`` or a
    ``sqlite3.Connection``. A caller's connection names the database: the store opens its own
    connection to that file and never touches the caller's again (close it when you like); an
    in-memory database is used through the caller's connection (switched to autocommit; pass
    ``check_same_thread=False`` to use the async methods), and then no work of the store
    outlives a call (memory extraction runs inline). Calls on one store are serialised;
    several processes may share a file (SQLite's locking orders their writes).
    """

    def __init__(
        self,
        embedder: IEmbedder | None,
        connection: Any,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: int | None = None,
        table_name_prefix: str | NotSet = NOT_SET_MARKER,
        search_strategy: SearchStrategy | NotSet = NOT_SET_MARKER,
        search_index_sync: SearchIndexSyncMode | NotSet = NOT_SET_MARKER,
        memory_retention_config: MemoryRetentionConfig | NotSet = NOT_SET_MARKER,
        memory_store_id: str | NotSet = NOT_SET_MARKER,
        schema_owner: str | NotSet = NOT_SET_MARKER,
    ) -> None:
        super().__init__(
            embedder,
            connection,
            schema_policy,
            vector_dim,
            table_name_prefix,
            search_strategy,
            search_index_sync,
            memory_retention_config,
            memory_store_id,
            schema_owner,
        )

    def _make_dialect(
        self, connection: Any, prefix: str, schema_owner: Any, read_connection: Any = None
    ) -> Dialect:
        return _sqlite_dialect(connection, prefix, schema_owner)

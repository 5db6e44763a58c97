"""``OracleDBMemoryStore``: the documented database store, on the engine its connection names.

The reference runs this class on Oracle Database. Ours takes the same arguments and picks the
engine from ``pool``: a SQLite path, ``"sqlite:///path"``, ``":memory:"`` or
``sqlite3.Connection`` gives the embedded store; a ``postgresql://`` URL, psycopg connection
or pool gives PostgreSQL. ``SQLiteMemoryStore`` and ``PostgresMemoryStore`` are the same
class with the engine fixed.
"""

from __future__ import annotations

import sqlite3
import warnings
from contextlib import AbstractContextManager
from os import PathLike
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis._duck import as_embedder
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.apis.memorystore import (
    DEFAULT_BATCH_SIZE as DEFAULT_BATCH_SIZE,
    DOCUMENT_TYPES as DOCUMENT_TYPES,
    MAX_LIST_LIMIT as MAX_LIST_LIMIT,
    MetadataFilter as MetadataFilter,
    PendingRecordBatch as PendingRecordBatch,
    PerBatchEmbeddingsInput as PerBatchEmbeddingsInput,
    PerBatchIndexTextsInput as PerBatchIndexTextsInput,
    PerBatchRecordContentsInput as PerBatchRecordContentsInput,
    PerRecordEmbeddingsInput as PerRecordEmbeddingsInput,
    PerRecordIndexTextInput as PerRecordIndexTextInput,
    RecordContentInput as RecordContentInput,
)
from oracleagentmemory.apis.message import (
    ImageContent as ImageContent,
    MessageContent as MessageContent,
    MetadataValue as MetadataValue,
    TextContent as TextContent,
)
from oracleagentmemory.apis.records import (
    ImageRecord as ImageRecord,
    MemoryRecord as MemoryRecord,
    MessageRecord as MessageRecord,
    Record as Record,
    RecordStatus as RecordStatus,
    ThreadRecord as ThreadRecord,
    ThreadSummaryRecord as ThreadSummaryRecord,
    build_record as build_record,
)
from oracleagentmemory.apis.relations import (
    MEMORY_TYPES as MEMORY_TYPES,
    RecordRelation as RecordRelation,
    RelationType as RelationType,
    memory_link_type_opposite_mapping as memory_link_type_opposite_mapping,
)
from oracleagentmemory.apis.ttl import TimeToLiveAnchor as TimeToLiveAnchor
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.deepsec import get_end_user_username as get_end_user_username
from oracleagentmemory.core.embedders.oracledb import OracleDBEmbedder as OracleDBEmbedder
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore as OracleMemoryStore
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.searchresult import (
    AGENT_MEMORY_METADATA_KEY as AGENT_MEMORY_METADATA_KEY,
)
from oracleagentmemory.core.store._dialect import Dialect
from oracleagentmemory.core.store._sql_store import SQLMemoryStore
from oracleagentmemory.core.store._store_core import enum_member
from oracleagentmemory.observability._instrument import instrument
from oracleagentmemory.observability._kinds import OperationKind


def is_postgres(connection: Any) -> bool:
    """Whether ``connection`` names a PostgreSQL database (URL, psycopg connection or pool)."""
    if isinstance(connection, str):
        return connection.startswith(("postgresql://", "postgres://"))
    return type(connection).__module__.startswith(("psycopg", "psycopg_pool"))


def is_sqlite(connection: Any) -> bool:
    return isinstance(connection, str | PathLike | sqlite3.Connection) and not is_postgres(
        connection
    )


_OBSERVED: Final = {
    "add": OperationKind.CREATE,
    "add_batches": OperationKind.CREATE,
    "add_user": OperationKind.CREATE,
    "add_agent": OperationKind.CREATE,
    "get": OperationKind.READ,
    "list": OperationKind.READ,
    "list_thread_messages": OperationKind.READ,
    "search": OperationKind.READ,
    "update": OperationKind.UPDATE,
    "delete": OperationKind.DELETE,
    "delete_thread": OperationKind.DELETE,
    "add_relations": OperationKind.CREATE,
    "get_relation": OperationKind.READ,
    "list_relations": OperationKind.READ,
    "update_relations": OperationKind.UPDATE,
    "delete_relations": OperationKind.DELETE,
}
"""Public methods that emit observability events, with their operation kind."""


@instrument("MemoryStoreStartedEvent", "MemoryStoreCompletedEvent", _OBSERVED)
class OracleDBMemoryStore(SQLMemoryStore):
    """Persistence for messages, memories and actor profiles in a database.

    ``pool`` selects the engine (see the module docstring). Omitted ``search_strategy`` is
    VECTOR and omitted ``search_index_sync`` is ON_COMMIT. ``table_name_prefix`` is the
    deprecated spelling of ``memory_store_id``. ``schema_owner`` names the PostgreSQL schema
    that holds the tables; an embedded SQLite file has no schemas and ignores it.
    ``read_connection`` (PostgreSQL, keyword only): a hot standby of the primary, in the
    forms ``pool`` takes; searches and reads go there once it has replayed this store's last
    commit (see ``PostgresMemoryStore``). A store whose ``pool`` is a standby opens
    read-only.
    """

    def __init__(
        self,
        embedder: IEmbedder | None,
        pool: Any,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: int | None = None,
        table_name_prefix: str | NotSet = NOT_SET_MARKER,
        search_strategy: SearchStrategy | NotSet = NOT_SET_MARKER,
        search_index_sync: SearchIndexSyncMode | NotSet = NOT_SET_MARKER,
        memory_retention_config: MemoryRetentionConfig | NotSet = NOT_SET_MARKER,
        memory_store_id: str | NotSet = NOT_SET_MARKER,
        schema_owner: str | NotSet = NOT_SET_MARKER,
        *,
        read_connection: Any = None,
    ) -> None:
        if read_connection is not None and not is_postgres(pool):
            raise ValueError(
                "read_connection: read replicas need PostgreSQL (a hot standby of the "
                "primary); an embedded SQLite store has none"
            )
        if table_name_prefix is not NOT_SET_MARKER:
            if memory_store_id is not NOT_SET_MARKER:
                raise ValueError("give memory_store_id or table_name_prefix, not both")
            warnings.warn(
                "table_name_prefix is deprecated since 26.6.0; use memory_store_id",
                DeprecationWarning,
                stacklevel=3,
            )
            memory_store_id = table_name_prefix
        strategy = SearchStrategy.VECTOR if search_strategy is NOT_SET_MARKER else search_strategy
        embedder = None if embedder is None else as_embedder(embedder)
        sync = (
            SearchIndexSyncMode.ON_COMMIT
            if search_index_sync is NOT_SET_MARKER
            else search_index_sync
        )
        prefix = self.check_arguments(
            embedder, vector_dim, memory_store_id, strategy, sync, memory_retention_config
        )
        policy = enum_member(SchemaPolicy, schema_policy, "schema_policy")
        if policy is SchemaPolicy.REQUIRE_EXISTING and is_sqlite(pool):
            from oracleagentmemory.core.store.engines.sqlite._sqlite import require_database_file

            require_database_file(pool)
        super().__init__(
            embedder,
            self._make_dialect(pool, prefix, schema_owner, read_connection),
            schema_policy=schema_policy,
            vector_dim=vector_dim,
            memory_store_id=prefix,
            search_strategy=strategy,
            search_index_sync=sync,
            memory_retention_config=memory_retention_config,
        )

    def _reads_for_write(self) -> AbstractContextManager[None]:
        return self._dialect.primary_reads()

    def _reads_as_of_now(self) -> AbstractContextManager[Any]:
        return self._dialect.reads_as_of_now()

    def _make_dialect(
        self, connection: Any, prefix: str, schema_owner: Any, read_connection: Any = None
    ) -> Dialect:
        if is_postgres(connection):
            return _postgres_dialect(connection, prefix, schema_owner, read_connection)
        if is_sqlite(connection):
            return _sqlite_dialect(connection, prefix, schema_owner)
        raise TypeError(
            "pool/connection must be a SQLite path, 'sqlite:///path', ':memory:', a "
            "sqlite3.Connection, a postgresql:// URL, a psycopg connection or a psycopg pool"
        )


def _sqlite_dialect(connection: Any, prefix: str, schema_owner: Any) -> Dialect:
    from oracleagentmemory.core.store.engines.sqlite._sqlite import SQLiteDialect

    if schema_owner is not NOT_SET_MARKER:
        warnings.warn(
            "schema_owner is ignored: an embedded SQLite file has no schemas",
            UserWarning,
            stacklevel=5,
        )
    return SQLiteDialect(connection, prefix)


def _postgres_dialect(
    connection: Any, prefix: str, schema_owner: Any, read_connection: Any = None
) -> Dialect:
    from oracleagentmemory.core.store.engines.postgres._postgres import (
        PostgresDialect,
        check_identifier,
    )

    schema = (
        None if schema_owner is NOT_SET_MARKER else check_identifier(schema_owner, "schema_owner")
    )
    from oracleagentmemory.core.store.engines.postgres.citus import (  # noqa: F401
        _dialect_citus,  # the statements of a store distributed on Citus (its layout)
    )

    return PostgresDialect(connection, prefix, schema, read_connection)

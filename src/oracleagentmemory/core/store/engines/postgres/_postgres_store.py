"""The server backend: the database store on PostgreSQL with pgvector."""

from __future__ import annotations

from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore, _postgres_dialect
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._dialect import Dialect


class PostgresMemoryStore(OracleDBMemoryStore):
    """Messages, memories and profiles in PostgreSQL (pgvector), same semantics as SQLite.

    ``connection`` is a ``postgresql://`` URL (the store opens and owns a pool), a
    ``psycopg_pool.ConnectionPool`` (concurrent callers; if you close it while background
    extraction is pending, that work stays stored and resumes with the next client) or a
    ``psycopg.Connection`` (it names the database: the store opens its own pool to it, with
    its ``search_path``, and never touches it again). ``schema_owner`` names the
    PostgreSQL schema that holds the managed tables (default: the connection's current
    schema); an application role with read-write grants on it opens it with
    ``SchemaPolicy.REQUIRE_EXISTING``.

    ``read_connection`` (keyword only): a hot standby (streaming read replica) of the
    primary, in the forms ``connection`` takes. Searches, gets and lists go there once its
    replay has reached this store's last commit (read-your-writes, per store); else, and
    for every write and every read inside a write, to the primary. The in-process user
    cache reads the primary, so a search it ranks does too. A store whose ``connection``
    is itself a standby opens read-only: no migrations, no purge, and every write raises
    ``ReadOnlyStoreError`` (a PermissionError). See docs/scaling.md.
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
        *,
        read_connection: Any = None,
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
            read_connection=read_connection,
        )

    def _make_dialect(
        self, connection: Any, prefix: str, schema_owner: Any, read_connection: Any = None
    ) -> Dialect:
        return _postgres_dialect(connection, prefix, schema_owner, read_connection)

    def grant_access(self, role: str) -> None:
        """Give an application ``role`` read-write use of this store's managed tables.

        Run it as the schema owner; the role then opens the store with
        ``schema_owner=...`` and ``SchemaPolicy.REQUIRE_EXISTING`` (it cannot change DDL).
        """
        from oracleagentmemory.core.store.engines.postgres._postgres import (
            PostgresDialect,
            check_identifier,
        )

        dialect = self._dialect
        assert isinstance(dialect, PostgresDialect)
        role = check_identifier(role, "role")
        tables = dialect.managed_objects()
        with self._lock, dialect.transaction():
            if dialect.schema:
                dialect.execute(f"GRANT USAGE ON SCHEMA {dialect.schema} TO {role}")
            for table in tables:
                dialect.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {role}")
            for sequence in dialect.managed_sequences():
                dialect.execute(f"GRANT USAGE, SELECT ON SEQUENCE {sequence} TO {role}")

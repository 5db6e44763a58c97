"""PostgreSQL migrations: the statements of ``_postgres_schema`` run version by version, with
the steps that depend on what a store holds (the approximate index's dimension, keyword rows,
trigger and grant statements)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from oracleagentmemory.core.store._dialect import Tables
from oracleagentmemory.core.store.engines.postgres import (
    _postgres_changes as changes,
    _postgres_words as words,
)
from oracleagentmemory.core.store.engines.postgres._postgres_schema import MIGRATIONS


class PostgresDialect(Protocol):
    """What the migrations use of ``_postgres.PostgresDialect``."""

    schema: str | None
    _prefix: str
    tables: Tables

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
    def _fmt(self, sql: str) -> str: ...
    def _enable_ann(self, dim: int) -> None: ...
    def _has_index(self, name: str) -> bool: ...
    def _qualified(self, *names: str) -> list[str]: ...
    def create_keyword_index(self, rebuild: bool = True) -> None: ...


def migrate(dialect: PostgresDialect, from_version: int, to_version: int) -> None:
    """Run the schema's migrations after ``from_version`` up to ``to_version``."""
    if from_version == 0 and dialect.schema:
        exists = dialect.execute("SELECT 1 FROM pg_namespace WHERE nspname = ?", [dialect.schema])
        if not exists:  # IF NOT EXISTS would still need CREATE on the database
            dialect.execute(f"CREATE SCHEMA {dialect.schema}")
    old_keyword_index = f"{dialect._prefix}_chunks_tsv"
    rebuild_keywords = False
    for version in range(from_version + 1, to_version + 1):
        for stmt in MIGRATIONS[version]:
            dialect.execute(dialect._fmt(stmt))
        if version == 8:  # vectors enabled already: the side table gets their dimension
            typed = dialect.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = ?::regclass"
                " AND attname = 'vector'",
                [dialect.tables.chunks],
            )
            if typed and int(typed[0][0]) > 0:
                dialect._enable_ann(int(typed[0][0]))
            # Ranked as SQLite ranks: the rows are made again (at version 10, there).
            rebuild_keywords = bool(from_version) and dialect._has_index(old_keyword_index)
        if version == 10:
            keywords_to_side_table(dialect, old_keyword_index, rebuild_keywords)
        if version == 11:
            t = dialect.tables
            kw, totals, move = dialect._qualified(t.kw, t.kw_totals, t.kw_totals_move)
            for stmt in words.totals_trigger_sql(kw, totals, move, words.TOTAL_SHARDS):
                dialect.execute(stmt)
        if version in (12, 15):  # roles granted the records get the new table too
            for stmt in changes.grants_sql(
                dialect.execute, dialect.schema, dialect.tables, version
            ):
                dialect.execute(stmt)
        if version == 16:  # roles that update records' status update their validity too
            for stmt in validity_grants_sql(dialect):
                dialect.execute(stmt)


def keywords_to_side_table(dialect: PostgresDialect, old_index: str, rebuild: bool) -> None:
    """Migration 10: the chunks' keyword rows move to the narrow side table (or are made
    there again), with their GIN index; the chunks lose theirs."""
    t = dialect.tables
    if dialect._has_index(old_index):
        if not rebuild:
            dialect.execute(
                f"INSERT INTO {t.kw} (cid, rid, user_id, tsv, tsv_len) SELECT cid, rid,"
                f" user_id, tsv, tsv_len FROM {t.chunks} WHERE tsv IS NOT NULL"
            )
        dialect.create_keyword_index(rebuild=rebuild)
    qualify = f"{dialect.schema}." if dialect.schema else ""
    dialect.execute(f"DROP INDEX IF EXISTS {qualify}{old_index}")
    dialect.execute(
        f"ALTER TABLE {t.chunks} DROP COLUMN IF EXISTS tsv, DROP COLUMN IF EXISTS tsv_len"
    )


def validity_grants_sql(dialect: PostgresDialect) -> list[str]:
    """``GRANT UPDATE (valid_from, valid_until)`` to the roles (other than the owner) that may
    update the records' ``status`` (row security's policy roles hold column grants), so end
    users of a store secured before schema 16 still change statuses and add links."""
    rows = dialect.execute(
        "SELECT DISTINCT grantee FROM information_schema.column_privileges"
        " WHERE table_schema = COALESCE(?, current_schema()) AND table_name = ?"
        " AND column_name = 'status' AND privilege_type = 'UPDATE' AND grantee <> current_user",
        [dialect.schema, dialect.tables.records.rsplit(".", 1)[-1]],
    )
    return [
        f"GRANT UPDATE (valid_from, valid_until) ON {dialect.tables.records} TO "
        + '"'
        + str(role).replace('"', '""')
        + '"'
        for (role,) in rows
    ]

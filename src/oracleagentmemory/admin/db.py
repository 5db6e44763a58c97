"""A plain connection to a store's database, for the operator tables this package adds beside
the store's own (API keys) and for schema administration (version, drop).

SQL is written with ``?`` placeholders; PostgreSQL gets them as ``%s``. Names are validated
identifiers only; values always travel as parameters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from oracleagentmemory.admin.connect import Target, sqlite_path

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
DEFAULT_STORE_ID = "oam"
"""The store id used when none is given (the store's own default)."""


def check_ident(value: str, name: str) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ValueError(f"{name} must be an SQL identifier (letters, digits, _), got {value!r}")
    return value


class Database:
    """One autocommit connection (SQLite file or PostgreSQL URL) with ``?`` placeholders."""

    def __init__(self, target: Target, *, create: bool = True) -> None:
        self.target = target
        self.postgres = target.postgres
        self.schema = (
            check_ident(target.schema_owner, "schema_owner")
            if (target.schema_owner and self.postgres)
            else None
        )
        self._conn: Any
        if self.postgres:
            from oracleagentmemory.core.store.engines.postgres._postgres import connect_checked

            self._conn = connect_checked(target.dsn, autocommit=True)
        else:
            # The store's own rules: no file made unless ``create``; a path that cannot be
            # opened (a folder, no permission) named in the error.
            from oracleagentmemory.core.store.engines.sqlite._sqlite import (
                open_sqlite,
                require_database_file,
            )

            path = sqlite_path(target.dsn)
            if not create:
                require_database_file(path)
            self._conn, _ = open_sqlite(path)
            self._conn.execute("PRAGMA busy_timeout = 30000")

    def qualify(self, name: str) -> str:
        check_ident(name, "table name")
        return f"{self.schema}.{name}" if self.schema else name

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            sql = sql.replace("%", "%%").replace("?", "%s")
        cur = self._conn.execute(sql, tuple(params))
        return list(cur.fetchall()) if cur.description else []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All statements inside commit together, or none (SQLite takes the write lock first)."""
        if self.postgres:
            with self._conn.transaction():
                yield
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def table_names(self) -> list[str]:
        """Every table and view name in the database (or schema)."""
        if self.postgres:
            if self.schema:
                rows = self.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                    [self.schema],
                )
            else:
                rows = self.execute(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                )
        else:
            rows = self.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        return sorted(str(r[0]) for r in rows)

    def object_kinds(self) -> dict[str, str]:
        """Name -> 'table' / 'view' (SQLite virtual tables count as tables)."""
        if self.postgres:
            where = "table_schema = ?" if self.schema else "table_schema = current_schema()"
            rows = self.execute(
                f"SELECT table_name, table_type FROM information_schema.tables WHERE {where}",
                [self.schema] if self.schema else [],
            )
            return {str(n): ("view" if t == "VIEW" else "table") for n, t in rows}
        rows = self.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')")
        return {str(n): str(t) for n, t in rows}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

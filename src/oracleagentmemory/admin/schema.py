"""Schema administration: the reference's ``install-plsql`` / ``check-plsql`` /
``uninstall-plsql`` / ``upgrade-memory-store`` verbs, mapped to our engines.

The reference installs a PL/SQL package on an Oracle server. Here there is no server-side
code: "install" creates a store's tables, "check" verifies them, "upgrade" applies the
store's versioned migrations, and "uninstall --purge" drops stores.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from oracleagentmemory.admin.connect import Target, open_client, sqlite_path
from oracleagentmemory.admin.db import DEFAULT_STORE_ID, Database

_STORE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,15}$")


class StoreMissing(LookupError):
    """The named store has no schema in this database."""


def store_ids(db: Database) -> list[str]:
    """Ids of the stores in this database: every ``<id>_meta`` table holding a schema
    version."""
    out = []
    for name in db.table_names():
        if not name.endswith("_meta"):
            continue
        prefix = name[: -len("_meta")]
        if not _STORE_ID.match(prefix):
            continue
        if schema_version(db, prefix) is not None:
            out.append(prefix)
    return out


def schema_version(db: Database, store_id: str) -> int | None:
    """The schema version recorded by store ``store_id``, or None when it has no schema."""
    if f"{store_id}_meta" not in db.table_names():
        return None
    try:
        rows = db.execute(
            f"SELECT value FROM {db.qualify(store_id + '_meta')} WHERE key = 'schema_version'"
        )
    except Exception:
        return None
    return int(rows[0][0]) if rows else None


@dataclass(frozen=True)
class SchemaReport:
    store_id: str
    version_before: int | None
    version_after: int | None

    @property
    def created(self) -> bool:
        return self.version_before is None and self.version_after is not None


def _store_id(target: Target) -> str:
    return target.memory_store_id or DEFAULT_STORE_ID


def install(target: Target, *, embedder: str | None, search_strategy: str | None) -> SchemaReport:
    """Create the store's schema when missing (and migrate it when older); idempotent."""
    sid = _store_id(target)
    with Database(target) as db:
        before = schema_version(db, sid)
    open_client(target, embedder=embedder, search_strategy=search_strategy, create=True).close()
    with Database(target) as db:
        after = schema_version(db, sid)
    return SchemaReport(sid, before, after)


def check(target: Target, *, embedder: str | None, search_strategy: str | None) -> SchemaReport:
    """Open the store without changing it; raises when the schema is missing or outdated,
    or was written by another embedding model."""
    sid = _store_id(target)
    with Database(target, create=False) as db:
        version = schema_version(db, sid)
    if version is None:
        raise StoreMissing(f"no store {sid!r} in {target.shown}; run `oam install-plsql` first")
    open_client(target, embedder=embedder, search_strategy=search_strategy, create=False).close()
    return SchemaReport(sid, version, version)


def upgrade(target: Target, *, embedder: str | None, search_strategy: str | None) -> SchemaReport:
    """Apply the store's pending migrations; the store must exist."""
    if not target.memory_store_id:
        raise ValueError("upgrade-memory-store needs --memory-store-id")
    sid = target.memory_store_id
    with Database(target, create=False) as db:
        before = schema_version(db, sid)
    if before is None:
        raise StoreMissing(f"no store {sid!r} in {target.shown}; run `oam install-plsql` first")
    open_client(target, embedder=embedder, search_strategy=search_strategy, create=True).close()
    with Database(target) as db:
        after = schema_version(db, sid)
    return SchemaReport(sid, before, after)


def owned_objects(names: list[str], stores: list[str], store_id: str) -> list[str]:
    """The table / view names that belong to ``store_id``: those starting with ``<id>_``
    unless a longer store id (``<id>_x``) claims them."""
    longer = [s for s in stores if s != store_id and s.startswith(store_id + "_")]
    return [
        n
        for n in names
        if n.startswith(store_id + "_") and not any(n.startswith(s + "_") for s in longer)
    ]


def drop_stores(target: Target, store_id: str | None) -> dict[str, int]:
    """Drop one store (or every store, when ``store_id`` is None) with its data, in one
    transaction; returns the number of tables and views dropped per store."""
    dropped: dict[str, int] = {}
    with Database(target, create=False) as db:
        stores = store_ids(db)
        wanted = stores if store_id is None else [store_id]
        if store_id is not None and store_id not in stores:
            raise StoreMissing(f"no store {store_id!r} in {target.shown}")
        kinds = db.object_kinds()
        virtual = (
            set()
            if db.postgres
            else {
                str(r[0])
                for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                    " AND sql LIKE 'CREATE VIRTUAL%'"
                )
            }
        )
        with db.transaction():
            for sid in wanted:
                objs = owned_objects(sorted(kinds), stores, sid)
                views = [n for n in objs if kinds[n] == "view"]
                tables = [n for n in objs if kinds[n] != "view"]
                ordered = views + [n for n in tables if n in virtual]
                ordered += [n for n in tables if n not in virtual]
                cascade = " CASCADE" if db.postgres else ""
                for name in ordered:
                    kind = "VIEW" if kinds[name] == "view" else "TABLE"
                    db.execute(f"DROP {kind} IF EXISTS {db.qualify(name)}{cascade}")
                dropped[sid] = len(objs)
    if not target.postgres:
        for sid in dropped:  # the vector-index snapshot kept beside the file, if any
            shutil.rmtree(Path(sqlite_path(target.dsn) + "-oam-index") / sid, ignore_errors=True)
    return dropped

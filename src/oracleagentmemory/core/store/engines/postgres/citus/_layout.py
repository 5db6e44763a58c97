"""The store's tables distributed by user on a Citus coordinator (issue #50).

A store created on a database with the ``citus`` extension gets this layout right after its
tables are made (the schema's version is the single-node one; the layout is recorded in the
meta table under ``LAYOUT_KEY``). Every table holding a user's rows gains
``shard_user TEXT NOT NULL``, the row's ``user_id`` with ``''`` for rows without a user (a
distribution column cannot be NULL), takes it into every key and foreign key, and is
hash-distributed by it, co-located with the records: one user's rows sit on one shard. The
tables without a user are reference tables (a copy on every node). What Citus cannot run is
removed: the keyword totals' statement triggers ("could not find named tuplestore" on a
distributed table) and the change log (transaction ids are per node, with no global
snapshot).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from oracleagentmemory.core.store._dialect import SCHEMA_VERSION, Tables
from oracleagentmemory.core.store.schema._schema import LAYOUT, SchemaError

LAYOUT_KEY = LAYOUT
"""Meta key of a store's table layout; absent on a single-node store."""

CITUS_LAYOUT = "citus:user"
"""The layout value of a store distributed by user on Citus."""

SHARD_COLUMN = "shard_user"
"""The distribution column: ``COALESCE(user_id, '')``."""

Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def record_ids_table(tables: Tables) -> str:
    """The store-wide index of record ids (Citus only), distributed by id: ids are unique
    per store, not per user, and a lookup by id finds its user's shard here."""
    return f"{tables.records.rsplit('_', 1)[0]}_record_ids"


def has_citus(execute: Execute) -> bool:
    """Whether the database is a Citus coordinator (the ``citus`` extension is installed)."""
    rows = execute("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')", ())
    return bool(rows and rows[0][0])


def new_layout(execute: Execute) -> str | None:
    """The layout of a store created now: distributed by user on a Citus coordinator."""
    return CITUS_LAYOUT if has_citus(execute) else None


def lay_out(dialect: Any, layout: str) -> None:
    """``Dialect.lay_out`` on PostgreSQL: the new tables distributed by user."""
    if layout != CITUS_LAYOUT:
        raise ValueError(f"layout: {layout!r} is not one PostgreSQL serves")
    if not has_citus(dialect.execute):  # e.g. RECREATE of such a store on one node
        raise SchemaError(
            f"this store's tables have the {layout!r} layout (distributed by user on Citus), "
            "but this database has no citus extension: recreate it through its Citus coordinator"
        )
    distribute(dialect.execute, dialect.tables, dialect._prefix)
    dialect.use_layout(layout)


DIALECTS: dict[str, type] = {}
"""The dialect class of each layout (``_dialect_citus`` registers itself when imported)."""


def adopt(dialect: Any, layout: str | None) -> None:
    """A PostgreSQL dialect whose store is in ``layout`` sends that layout's statements."""
    if layout is None:
        return
    if getattr(dialect, "replica", None) is not None:
        raise ValueError(
            "read_connection: a store distributed by user on Citus reads its shards through the"
            " coordinator; a standby of the coordinator does not hold them (leave it out)"
        )
    if layout not in DIALECTS:  # the store's factory imports ``_dialect_citus``
        raise RuntimeError(f"no dialect for the {layout!r} layout: import citus._dialect_citus")
    if not has_citus(dialect.execute):
        raise SchemaError(
            f"this store's tables have the {layout!r} layout (distributed by user on Citus), "
            "but this database has no citus extension: open it through its Citus coordinator"
        )
    check_coordinator(dialect.execute)
    dialect.__class__ = DIALECTS[layout]


def check_coordinator(execute: Execute) -> None:
    """A store in the layout is opened through the coordinator only: its writes lock their
    users with advisory locks, which hold on the node that takes them (``_user_locks``)."""
    rows = execute("SELECT citus_is_coordinator()", ())
    if not (rows and rows[0][0]):
        raise ValueError(
            "connection: this is a worker of a Citus cluster; a store distributed by user"
            " orders its writes with per-user advisory locks on the coordinator (they hold on"
            " one node only): connect through the coordinator"
        )


def user_tables(t: Tables) -> dict[str, tuple[str, ...]]:
    """Each distributed table and the columns of its new primary key (``shard_user`` first)."""
    shard = SHARD_COLUMN
    return {
        t.records: (shard, "rid"),
        t.chunks: (shard, "cid"),
        t.ann: (shard, "cid"),
        t.ann_queue: (shard, "cid"),
        t.kw: (shard, "cid"),
        t.blobs: (shard, "rid"),
        t.sources: (shard, "rid", "message_id"),
        t.history: (shard, "memory_id", "version"),
        t.relations: (shard, "id"),
        t.pending: (shard, "id"),
        t.seq: (shard, "thread_key"),
        t.kw_totals: (shard, "shard"),
    }


def reference_tables(t: Tables) -> tuple[str, ...]:
    """The tables without a user: a copy on every node."""
    return (t.meta, t.owners)


def _constraints(execute: Execute, table: str) -> list[str]:
    rows = execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = ?::regclass"
        " AND contype IN ('p', 'u', 'f') ORDER BY contype DESC",
        (table,),
    )
    return [str(name) for (name,) in rows]


def distribute(execute: Execute, tables: Tables, prefix: str) -> None:
    """Turn a freshly created (empty) single-node schema into the Citus layout, in the
    caller's transaction. ``execute`` runs one statement with ``?`` placeholders."""
    t = tables
    shard = SHARD_COLUMN
    kw_trigger = f"{prefix}_kw_totals_move"
    for verb in ("ins", "upd", "del"):
        execute(f"DROP TRIGGER IF EXISTS {kw_trigger}_{verb} ON {t.kw}", ())
    execute(f"DROP TABLE IF EXISTS {t.changes}", ())
    execute(f"DELETE FROM {t.kw_totals}", ())  # the totals of no rows; per user from now on
    keys = user_tables(t)
    for table in keys:  # CASCADE: the side tables' foreign keys go with the chunks' key
        for name in _constraints(execute, table):
            execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name} CASCADE", ())
    for table, key in keys.items():
        execute(
            f"ALTER TABLE {table} ADD COLUMN {shard} TEXT NOT NULL,"
            f" ADD PRIMARY KEY ({', '.join(key)})",
            (),
        )
    execute(f"ALTER TABLE {t.records} ADD UNIQUE ({shard}, family, id)", ())
    for side in (t.ann, t.ann_queue, t.kw):
        execute(
            f"ALTER TABLE {side} ADD FOREIGN KEY ({shard}, cid)"
            f" REFERENCES {t.chunks} ({shard}, cid) ON DELETE CASCADE",
            (),
        )
    ids = record_ids_table(t)
    execute(
        f"CREATE TABLE IF NOT EXISTS {ids} (id TEXT NOT NULL, family TEXT NOT NULL,"
        f" {shard} TEXT NOT NULL, PRIMARY KEY (id, family))",
        (),
    )
    for table in reference_tables(t):
        execute("SELECT create_reference_table(?)", (table,))
    execute(f"INSERT INTO {t.meta} (key, value) VALUES (?, ?)", (LAYOUT_KEY, CITUS_LAYOUT))
    execute("SELECT create_distributed_table(?, ?, colocate_with => 'none')", (t.records, shard))
    for table in keys:
        if table != t.records:
            execute(
                "SELECT create_distributed_table(?, ?, colocate_with => ?)",
                (table, shard, t.records),
            )
    execute("SELECT create_distributed_table(?, 'id', colocate_with => 'none')", (ids,))


def create_distributed(dialect: Any) -> None:
    """Create a new store's schema on a Citus coordinator in the distributed layout: the
    single-node migrations up to the current version, then :func:`distribute`, in one
    transaction, without the rest of a store's opening (its meta rows, vectors, keyword
    index): the store does all that itself when it creates its schema on a coordinator
    (``lay_out``); this makes the bare layout for the tests that inspect it."""

    if not has_citus(dialect.execute):
        raise ValueError("connection: the database has no citus extension (not a coordinator)")
    with dialect.transaction():
        dialect.migrate(0, SCHEMA_VERSION)
        distribute(dialect.execute, dialect.tables, dialect._prefix)
        dialect.execute(
            f"INSERT INTO {dialect.tables.meta} (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )

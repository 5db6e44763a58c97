"""A full, engine-neutral dump of a store's tables, to prove that a failed call changed nothing."""

from __future__ import annotations

from typing import Any


def dump_store(store: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every managed table of ``store``, as sorted, comparable tuples."""
    d = store._dialect
    catch_up = getattr(d, "ann_catch_up", None)
    if catch_up is not None:  # PostgreSQL's background indexer: settled first, so a dump
        catch_up()  # shows what calls did, not how far the indexer's thread has got
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in d.managed_objects():
        if getattr(d, "native_vector_search", False):
            # PostgreSQL: each row as JSON text, a result type no re-embedding can change
            # under a prepared statement (the vector column's type can).
            rows = d.execute(f"SELECT to_jsonb(t)::text FROM {table} t")
        else:
            # The SQLite full-text table's rowid is its chunk id: dump it too.
            rows = d.execute(f"SELECT {'rowid, ' if table.endswith('_fts') else ''}* FROM {table}")
        out[table.rsplit(".", 1)[-1].lower()] = sorted(
            (tuple(_plain(v) for v in row) for row in rows), key=repr
        )
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, dict | list):
        return repr(value)
    return value

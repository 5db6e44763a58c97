"""Forgetting a user or a thread down to the bytes (``oam purge --user-id/--thread-id``).

A delete already removes everything the library keeps of the records (see
``docs/guides/forgetting.md``); on SQLite it also zeroes the freed pages and truncates the WAL.
PostgreSQL keeps the bytes of deleted rows in their pages until they are reused, so a purge
there rewrites the store's tables afterwards (:func:`vacuum_store`). An addition of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PurgeResult:
    """What :func:`purge` did: thread rows and user profiles deleted (0 or 1 each: the
    user's other data goes even without a profile), and the tables rewritten."""

    threads: int
    users: int
    vacuumed: tuple[str, ...]


def purge(
    client: Any, *, user_id: str | None = None, thread_id: str | None = None, vacuum: bool = True
) -> PurgeResult:
    """Delete ``thread_id`` and/or everything of ``user_id`` through ``client`` (an
    ``OracleAgentMemory``), then (``vacuum``) rewrite its store's tables with
    :func:`vacuum_store`, also when the data was deleted earlier."""
    if user_id is None and thread_id is None:
        raise ValueError("purge needs user_id or thread_id")
    for name, value in (("user_id", user_id), ("thread_id", thread_id)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string")
    if not isinstance(vacuum, bool):
        raise TypeError("vacuum must be a bool")
    threads = client.delete_thread(thread_id) if thread_id is not None else 0
    users = client.delete_user(user_id, cascade=True) if user_id is not None else 0
    vacuumed = tuple(vacuum_store(client.store)) if vacuum else ()
    return PurgeResult(threads, users, vacuumed)


def vacuum_store(store: Any) -> list[str]:
    """PostgreSQL: ``VACUUM (FULL, ANALYZE)`` of the store's tables (each is locked while it
    is rewritten), so no deleted row's bytes stay in their files; returns the tables.
    SQLite: nothing to do (its deletes zero what they free), returns []."""
    if not getattr(store, "deletes_leave_bytes", False):
        return []
    return list(store.vacuum())

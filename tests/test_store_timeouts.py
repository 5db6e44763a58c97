"""PostgreSQL: nothing waits forever (issue #50). The connections a store opens carry
``lock_timeout``, ``idle_in_transaction_session_timeout`` and TCP keepalives unless the URL
sets them; a write that waits past ``lock_timeout`` fails as a TimeoutError, nothing
written; ordinary writes of other users do not wait for one user's stuck transaction."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy
from oracleagentmemory.core.store.engines.postgres._postgres_connect import session_settings

from ._embedders import HashingEmbedder


def _open(url: str) -> Any:
    return PostgresMemoryStore(
        HashingEmbedder(), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )


def test_settings_fill_in_only_what_the_url_leaves_out() -> None:
    plain = session_settings("postgresql://u@h/db")
    assert plain["keepalives"] == 1 and plain["keepalives_idle"] == 30
    assert "-c lock_timeout=5000" in plain["options"]
    assert "-c idle_in_transaction_session_timeout=60000" in plain["options"]
    given = session_settings("postgresql://u@h/db?keepalives=0&options=-c%20lock_timeout%3D100")
    assert "keepalives" not in given
    assert given["options"].startswith("-c lock_timeout=100 ")
    assert given["options"].count("lock_timeout") == 1


def test_a_store_connection_carries_the_timeouts(
    pg_url: Callable[[str], str], monkeypatch: Any
) -> None:
    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", "2.5")
    store = _open(pg_url("timeouts"))
    try:
        shown = store._dialect.execute(
            "SELECT current_setting('lock_timeout'),"
            " current_setting('idle_in_transaction_session_timeout')"
        )[0]
        assert shown == ("2500ms", "1min")
    finally:
        store.close()


def test_a_lock_wait_past_the_timeout_is_a_timeout_error_and_others_go_on(
    pg_url: Callable[[str], str], monkeypatch: Any
) -> None:
    import psycopg

    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", "0.5")
    url = pg_url("stuck")
    store = _open(url)
    try:
        stuck_id = store.add(["u1's memory"], record_type="memory", user_ids="u1")[0]
        other_id = store.add(["u2's memory"], record_type="memory", user_ids="u2")[0]
        table = store._dialect.tables.records
        with psycopg.connect(url) as holder:  # one user's stuck transaction (a frozen node)
            holder.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE", [stuck_id])
            started = time.monotonic()
            with pytest.raises(TimeoutError):
                store.update("memory", stuck_id, text="never written")
            assert time.monotonic() - started < 5
            # Another user's update and delete, and a new memory, do not wait for it.
            done: list[int] = []
            worker = threading.Thread(
                target=lambda: done.extend(
                    [
                        store.update("memory", other_id, text="changed"),
                        len(store.add(["u3's"], record_type="memory", user_ids="u3")),
                        store.delete("memory", other_id),
                    ]
                )
            )
            worker.start()
            worker.join(10)
            assert done == [1, 1, 1]
            holder.rollback()
        record = store.get("memory", stuck_id)
        assert record is not None and record.content == "u1's memory"
    finally:
        store.close()


def test_opening_waits_past_lock_timeout_for_a_long_writer(
    pg_url: Callable[[str], str], monkeypatch: Any
) -> None:
    """Store-wide work (here: opening a store) waits its turn behind a writer that holds the
    store lock longer than ``lock_timeout``, where an ordinary write would give up."""
    import psycopg

    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", "0.5")
    url = pg_url("patient")
    first = _open(url)
    key = first._dialect._lock_key
    first.close()
    opened: list[Any] = []
    with psycopg.connect(url) as holder:  # a long write: the store lock held, shared
        holder.execute("SELECT pg_advisory_xact_lock_shared(%s)", [key])
        worker = threading.Thread(target=lambda: opened.append(_open(url)))
        worker.start()
        worker.join(2.0)  # four lock timeouts
        assert worker.is_alive() and not opened  # still waiting, not failed
        holder.rollback()
    worker.join(30)
    assert len(opened) == 1
    opened[0].close()

"""PostgreSQL: nothing waits forever (issue #50). The connections a store opens carry
``lock_timeout``, ``idle_in_transaction_session_timeout`` and TCP keepalives unless the URL
sets them; a write that waits past ``lock_timeout`` fails as a TimeoutError, nothing
written; ordinary writes of other users do not wait for one user's stuck transaction."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, SearchStrategy
from oracleagentmemory.core.store.engines.postgres._postgres_connect import session_settings

from ._embedders import HashingEmbedder
from ._images import PNG


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
    """Store-wide work (here: opening a store that adds the keyword index) waits its turn
    behind a writer that holds the store lock longer than ``lock_timeout``, where an
    ordinary write would give up."""
    import psycopg

    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", "0.5")
    url = pg_url("patient")
    first = _open(url)  # VECTOR: no keyword index
    key = first._dialect._lock_key
    assert not first._dialect.has_keyword_index()
    first.close()
    opened: list[Any] = []

    def open_hybrid() -> None:
        opened.append(
            PostgresMemoryStore(
                HashingEmbedder(),
                url,
                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                search_strategy=SearchStrategy.HYBRID,
            )
        )

    with psycopg.connect(url) as holder:  # a long write: the store lock held, shared
        holder.execute("SELECT pg_advisory_xact_lock_shared(%s)", [key])
        worker = threading.Thread(target=open_hybrid)
        worker.start()
        worker.join(2.0)  # four lock timeouts
        assert worker.is_alive() and not opened  # still waiting, not failed
        holder.rollback()
    worker.join(30)
    assert len(opened) == 1
    assert opened[0]._dialect.has_keyword_index()
    opened[0].close()


_HOLDER = """
import sys
from oracleagentmemory.core import PostgresMemoryStore
from oracleagentmemory.core.store.engines.postgres._postgres import PostgresDialect
from tests._embedders import HashingEmbedder

original = PostgresDialect.execute

def execute(self, sql, params=()):  # stops inside the update's transaction, holding it
    out = original(self, sql, params)
    if sql.lstrip().startswith("UPDATE") and "HOLD-HERE" in params:
        print("holding", flush=True)
        sys.stdin.readline()
    return out

PostgresDialect.execute = execute
store = PostgresMemoryStore(HashingEmbedder(), sys.argv[1])
print("updated", store.update("memory", sys.argv[2], text="HOLD-HERE"), flush=True)
store.close()
"""


def test_opening_a_current_store_does_not_wait_for_another_process_writing(
    pg_url: Callable[[str], str], monkeypatch: Any
) -> None:
    """A store whose schema is current opens under the shared store lock: another
    process's write transaction, held open (a frozen node), neither delays the open nor is
    stopped by it, and the opened store writes beside it."""
    import psycopg

    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", "0.5")
    url = pg_url("open_beside")
    first = _open(url)
    key = first._dialect._lock_key
    held_id = first.add(["u1's memory"], record_type="memory", user_ids="u1")[0]
    first.close()
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, url, held_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "holding"
        opened: list[Any] = []
        started = time.monotonic()
        worker = threading.Thread(target=lambda: opened.append(_open(url)))
        worker.start()
        worker.join(10)
        took = time.monotonic() - started
        assert opened, "opening waited for another process's write transaction"
        with psycopg.connect(url, autocommit=True) as probe:  # the writer still holds it
            got = probe.execute("SELECT pg_try_advisory_lock(%s)", [key]).fetchone()
            assert got is not None and got[0] is False
        assert took < 5, took
        store = opened[0]
        try:  # another user's write, through the store just opened
            new_id = store.add(["u2's memory"], record_type="memory", user_ids="u2")[0]
            assert store.get("memory", new_id) is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "updated 1"
            assert proc.wait(30) == 0
            record = store.get("memory", held_id)
            assert record is not None and record.content == "HOLD-HERE"
        finally:
            store.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_stuck_image_update_holds_only_its_image(
    pg_url: Callable[[str], str], monkeypatch: Any
) -> None:
    """An image's bytes rewritten by one user, stuck inside its transaction (a frozen node),
    lock that image's row, not the store: another update of the same image gives up at
    ``lock_timeout``; other users' images, threads and memories are written meanwhile."""
    monkeypatch.setenv("OAM_PG_LOCK_TIMEOUT_SECONDS", "0.5")
    url = pg_url("image_stuck")
    stuck, other = _open(url), _open(url)
    try:
        mine = stuck.add_image(PNG, mime_type="image/png", description="u1's cat", user_id="u1")
        theirs = other.add_image(PNG, mime_type="image/png", description="u2's dog", user_id="u2")
        release, holding = threading.Event(), threading.Event()
        original = stuck._dialect.execute

        def execute(sql: str, params: Any = ()) -> Any:
            out = original(sql, params)
            if "INSERT INTO" in sql and any(p == b"stuck bytes" for p in params):
                holding.set()
                release.wait(30)
            return out

        monkeypatch.setattr(stuck._dialect, "execute", execute)
        answer: list[int] = []
        writer = threading.Thread(
            target=lambda: answer.append(
                stuck.update_image_payload(mine, image=b"stuck bytes", mime_type="image/webp")
            )
        )
        writer.start()
        try:
            assert holding.wait(10)
            with pytest.raises(TimeoutError):  # the same image: its row is locked
                other.update_image_payload(mine, image=b"other bytes")
            started = time.monotonic()
            assert other.update_image_payload(theirs, image=PNG + b"2", mime_type="image/png") == 1
            new_image = other.add_image(PNG, mime_type="image/png", description="u3", user_id="u3")
            thread_id = other.create_thread_record(
                "t-u3", user_id="u3", agent_id=None, metadata=None, runtime_config=None
            )
            other.add(["u3's memory"], record_type="memory", user_ids="u3")
            assert other.delete("image", new_image) == 1
            assert time.monotonic() - started < 5
            assert thread_id == "t-u3"
        finally:
            release.set()
            writer.join(30)
        assert answer == [1]
        got = other.get("image", mine, include_bytes=True)
        assert got is not None and got.bytes == b"stuck bytes" and got.mime_type == "image/webp"
        got = other.get("image", theirs, include_bytes=True)
        assert got is not None and got.bytes == PNG + b"2"
    finally:
        stuck.close()
        other.close()

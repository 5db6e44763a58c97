"""A streaming hot standby (issue #50, read replicas): what the primary commits reaches the
standby once replay passes the primary's LSN, and the standby refuses writes."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from tools.pg_standby import current_lsn, replay_lsn

from .conftest_cluster import Replication

pytestmark = pytest.mark.slow


def test_standby_streams_from_primary(pg_standby: Replication) -> None:
    with psycopg.connect(pg_standby.standby_dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pg_is_in_recovery(), status FROM pg_stat_wal_receiver"
        ).fetchone()
    assert row == (True, "streaming")


def test_write_on_primary_is_visible_on_standby_after_replay(pg_standby: Replication) -> None:
    marker = uuid.uuid4().hex
    with psycopg.connect(pg_standby.primary_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS replicated (id text PRIMARY KEY, embedding vector(3))"
        )
        conn.execute("INSERT INTO replicated VALUES (%s, '[1,2,3]')", [marker])
    lsn = current_lsn(pg_standby.primary_dsn)
    pg_standby.standby.wait_for_replay(lsn)
    replayed = replay_lsn(pg_standby.standby_dsn)
    assert replayed is not None
    with psycopg.connect(pg_standby.standby_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT %s::pg_lsn >= %s::pg_lsn", [replayed, lsn]).fetchone() == (
            True,
        )
        row = conn.execute(
            "SELECT id, embedding <=> '[1,2,3]' FROM replicated WHERE id = %s", [marker]
        ).fetchone()
    assert row is not None
    assert row[0] == marker
    assert row[1] == pytest.approx(0.0, abs=1e-6)


def test_catch_up_after_many_writes(pg_standby: Replication) -> None:
    with psycopg.connect(pg_standby.primary_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bulk (n int)")
        conn.execute("INSERT INTO bulk SELECT generate_series(1, 20000)")
        expected = conn.execute("SELECT count(*) FROM bulk").fetchone()
    pg_standby.catch_up()
    with psycopg.connect(pg_standby.standby_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM bulk").fetchone() == expected


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO replicated VALUES ('refused', NULL)",
        "CREATE TABLE refused (x int)",
        "UPDATE replicated SET embedding = NULL",
    ],
)
def test_standby_refuses_writes(pg_standby: Replication, statement: str) -> None:
    with psycopg.connect(pg_standby.primary_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS replicated (id text PRIMARY KEY, embedding vector(3))"
        )
    pg_standby.catch_up()
    with (
        psycopg.connect(pg_standby.standby_dsn, autocommit=True) as conn,
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as caught,
    ):
        conn.execute(statement)
    assert "cannot execute" in str(caught.value)
    assert "in a read-only transaction" in str(caught.value)

"""A streaming-replication hot standby of a PostgreSQL primary, for tests.

``pg_basebackup -R`` copies a running primary into a new data directory (``-R`` writes
``standby.signal`` and ``primary_conninfo``); the copy starts on its own free port as a hot
standby that streams the primary's WAL and answers read-only queries. The primary is any
server reachable by DSN with replication allowed (PostgreSQL 16's defaults are enough:
``wal_level = replica``, ``max_wal_senders = 10``, and initdb's default ``pg_hba.conf`` lets
127.0.0.1 and the unix socket connect for replication), e.g. the pgserver server of the tests
(``server.get_uri()``) or :func:`start_primary`'s. The binaries are pgserver's.

    primary = start_primary(Path("/tmp/repl/primary"))
    standby = Standby.create(primary.dsn(), Path("/tmp/repl/standby"))
    primary.sql("CREATE TABLE t (x int)")
    standby.catch_up(primary.dsn())        # replay reached the primary's current LSN
    standby.stop(); primary.stop()

Command line: ``.venv/bin/python tools/pg_standby.py demo DIR`` starts a primary and a standby
under DIR, writes, waits for replay, and stops both.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``tools`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._pgnode import PgInstall, PgNode, own_dir, remove_tree, run, wait_until

PRIMARY_CONF = {
    "wal_level": "replica",
    "max_wal_senders": "10",
    "max_replication_slots": "10",
    "wal_keep_size": "'256MB'",  # a standby that falls behind can still catch up
    "hot_standby": "on",
}


def _query_one(dsn: str, sql: str, params: list[Any] | None = None) -> Any:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def current_lsn(primary_dsn: str) -> str:
    """The primary's current WAL position: ``pg_current_wal_lsn()``, or the insert position
    where that is further (a transaction committed with ``synchronous_commit = off`` is
    inserted but maybe not yet written; the WAL writer sends it within ``wal_writer_delay``)."""
    return str(
        _query_one(
            primary_dsn,
            "SELECT greatest(pg_current_wal_lsn(), pg_current_wal_insert_lsn())::text",
        )
    )


def replay_lsn(standby_dsn: str) -> str | None:
    """How far the standby has replayed (``pg_last_wal_replay_lsn()``), None before any."""
    value = _query_one(standby_dsn, "SELECT pg_last_wal_replay_lsn()::text")
    return None if value is None else str(value)


def wait_for_replay(standby_dsn: str, lsn: str, timeout: float = 30) -> None:
    """Block until the standby has replayed WAL up to ``lsn`` (TimeoutError otherwise)."""

    def replayed() -> bool:
        return bool(
            _query_one(
                standby_dsn,
                "SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, false)",
                [lsn],
            )
        )

    wait_until(replayed, timeout, f"the standby to replay up to {lsn}")


def start_primary(datadir: Path, install: PgInstall | None = None) -> PgNode:
    """initdb and start a primary that allows streaming replication from 127.0.0.1."""
    node = PgNode(install or PgInstall.pgserver(), datadir)
    node.initdb(PRIMARY_CONF)
    node.start()
    return node


class Standby:
    """A hot standby in ``datadir`` streaming from ``primary_dsn``."""

    def __init__(self, node: PgNode, primary_dsn: str) -> None:
        self.node = node
        self.primary_dsn = primary_dsn

    @classmethod
    def create(
        cls,
        primary_dsn: str,
        datadir: Path,
        *,
        install: PgInstall | None = None,
        slot: str | None = "test_standby",
        timeout: float = 120,
    ) -> Standby:
        """``pg_basebackup -R`` from the primary into ``datadir``, then start it (hot standby).

        ``slot``: a physical replication slot created by pg_basebackup (``-C -S``) so the
        primary keeps WAL the standby has not received; None for none.
        """
        node = PgNode(install or PgInstall.pgserver(), datadir)
        own_dir(node.datadir.parent)
        args: list[str | Path] = [
            "pg_basebackup",
            "-d",
            primary_dsn,
            "-D",
            node.datadir,
            "-R",  # standby.signal + primary_conninfo
            "-X",
            "stream",
            "-c",
            "fast",
            "--no-sync",
        ]
        if slot:
            args += ["-C", "-S", slot]
        run(node.install, args, timeout=timeout)
        # The copy carries the primary's settings (port, listen addresses, sockets): ours win.
        node.configure({"hot_standby": "on", "hot_standby_feedback": "on"})
        node.start()
        standby = cls(node, primary_dsn)
        wait_until(standby.is_streaming, 30, "the standby to start streaming")
        return standby

    @property
    def dsn(self) -> str:
        return self.node.dsn()

    def is_streaming(self) -> bool:
        """The standby is in recovery and its WAL receiver is connected to the primary."""
        return bool(
            _query_one(
                self.dsn,
                "SELECT pg_is_in_recovery() AND EXISTS "
                "(SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')",
            )
        )

    def wait_for_replay(self, lsn: str, timeout: float = 30) -> None:
        wait_for_replay(self.dsn, lsn, timeout)

    def catch_up(self, primary_dsn: str | None = None, timeout: float = 30) -> str:
        """Wait until the standby has replayed everything the primary has written so far;
        return that LSN."""
        lsn = current_lsn(primary_dsn or self.primary_dsn)
        self.wait_for_replay(lsn, timeout)
        return lsn

    def stop(self) -> None:
        self.node.stop()

    def drop_slot(self, slot: str = "test_standby") -> None:
        """Drop the primary's replication slot (after :meth:`stop`), so it stops keeping WAL."""
        _query_one(
            self.primary_dsn,
            "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots "
            "WHERE slot_name = %s AND NOT active",
            [slot],
        )

    def cleanup(self) -> None:
        """Stop and remove the data directory."""
        self.stop()
        remove_tree(self.node.datadir)
        self.node.log.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a primary and a streaming standby (demo)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="primary + standby under DIR: write, wait, read, stop")
    demo.add_argument("dir", type=Path)
    args = parser.parse_args(argv)
    base = args.dir.absolute()
    primary = start_primary(base / "primary")
    try:
        standby = Standby.create(primary.dsn(), base / "standby")
        try:
            primary.sql("CREATE TABLE demo (x int)")
            primary.sql("INSERT INTO demo VALUES (42)")
            lsn = standby.catch_up()
            rows = standby.node.sql("SELECT x FROM demo")
            print(f"primary {primary.dsn()} standby {standby.dsn} replayed {lsn}: {rows}")
        finally:
            standby.stop()
    finally:
        primary.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

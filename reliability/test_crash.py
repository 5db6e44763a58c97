"""Crash suite (``make reliability``, not part of ``make test``): kill -9 a writing process
again and again, then reopen the store and check what survived.

Per engine, ``OAM_CRASH_ROUNDS`` rounds (default 15) kill a writer of each kind: plain
adds, ten-record batches, memories added with their link, and three-message
``add_messages`` calls: 60 kills per engine by default. After every kill: every
acknowledged write is present, no batch is partial, no linked memory is missing its link
(or a link its memory), a thread's seq_nos are distinct, search still answers with finite
distances, and the database checks out (SQLite ``PRAGMA integrity_check`` and the FTS5
``integrity-check``; on PostgreSQL, whose server survives a client's kill, every unique
key read through its index equals the key read from the table alone; pgserver's build has
no ``amcheck``). The ``citus`` case runs the PostgreSQL writer against a store that
distributes itself on a Citus coordinator with two workers (``tests/conftest_cluster.py``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from reliability.crash_writer import open_store

ROUNDS = int(os.environ.get("OAM_CRASH_ROUNDS", "15"))
KINDS = ("plain", "batch", "linked", "messages")
ROOT = Path(__file__).resolve().parents[1]


def _run_and_kill(engine: str, conn: str, kind: str, start: int, delay: float) -> list[str]:
    """Start a writer, kill -9 it ``delay`` seconds after it is ready; its acknowledged ids."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "reliability.crash_writer", engine, conn, kind, str(start)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.strip() == "ready", f"writer did not start: {ready!r}"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acked: list[str] = []
    for line in proc.stdout.read().splitlines():
        with contextlib.suppress(ValueError, KeyError):  # a line cut by the kill: not acked
            acked += json.loads(line)["ids"]
    proc.stdout.close()
    return acked


def _check_database(engine: str, store: Any) -> None:
    d = store._dialect
    if engine == "sqlite":
        assert d.execute("PRAGMA integrity_check") == [("ok",)]
        fts = d.tables.fts
        d.execute(f"INSERT INTO {fts}({fts}) VALUES ('integrity-check')")
        return
    # pgserver's build has no amcheck: read each unique key once through its index only and
    # once through the table only; both must give the same rows.
    for table, key in (
        (d.tables.records, "rid"),
        (d.tables.records, "family, id"),
        (d.tables.chunks, "cid"),
        (d.tables.relations, "id"),
        (d.tables.seq, "thread_key"),
    ):
        sql = f"SELECT {key} FROM {table} ORDER BY {key}"
        by_index = _scan(d, sql, index=True)
        by_table = _scan(d, sql, index=False)
        assert by_index == by_table, f"{table} ({key}): index and table disagree"


def _scan(d: Any, sql: str, *, index: bool) -> list[Any]:
    on, off = ("on", "off") if index else ("off", "on")
    with d.snapshot():
        d.execute(f"SET LOCAL enable_seqscan = {off}")
        d.execute(f"SET LOCAL enable_indexscan = {on}")
        d.execute(f"SET LOCAL enable_indexonlyscan = {on}")
        d.execute("SET LOCAL enable_bitmapscan = off")
        return d.execute(sql)


def _verify(engine: str, conn: str, acked: set[str]) -> dict[str, int]:
    store = open_store(engine, conn)
    try:
        _check_database(engine, store)
        d = store._dialect
        t = d.tables
        present = {
            row[0]: row
            for row in d.execute(f"SELECT id, family, thread_id, seq_no FROM {t.records}")
        }
        lost = acked - set(present)
        assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {sorted(lost)[:5]}"
        groups: dict[str, list[str]] = defaultdict(list)
        for rid in present:
            if m := re.fullmatch(r"([bm]-\d+)-\d+", rid):
                groups[m.group(1)].append(rid)
        for prefix, members in groups.items():
            size = 10 if prefix.startswith("b-") else 3
            assert len(members) == size, f"partial batch {prefix}: {len(members)} of {size}"
        links = {r[0] for r in d.execute(f"SELECT id FROM {t.relations}")}
        linked = {rid for rid in present if rid.startswith("l-")}
        assert {f"rel-{rid}" for rid in linked} == links, "a memory without its link, or back"
        seqs = [row[3] for row in present.values() if row[1] == "message"]
        assert len(seqs) == len(set(seqs)), "a seq_no was handed out twice"
        hits = store.search("linked memory", 5)  # type: ignore[attr-defined]
        assert all(math.isfinite(dist) for _, dist in hits)
        return {"records": len(present), "links": len(links), "batches": len(groups)}
    finally:
        store.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("engine", ["sqlite", "postgres", "citus"])
def test_kill_9_during_writes(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if engine == "sqlite":
        conn = str(tmp_path / "crash.db")
    elif engine == "citus":  # a store distributed by user on a coordinator + 2 workers
        import psycopg

        dsn = request.getfixturevalue("citus_cluster").dsn
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("DROP SCHEMA IF EXISTS crash CASCADE")
            admin.execute("CREATE SCHEMA crash")
        conn = f"{dsn}?options=-csearch_path%3Dcrash%2Cpublic"
    else:
        server = request.getfixturevalue("pg_server")
        server.psql("DROP SCHEMA IF EXISTS crash CASCADE; CREATE SCHEMA crash;")
        conn = f"{server.get_uri()}&options=-csearch_path%3Dcrash%2Cpublic"
    writer = "postgres" if engine == "citus" else engine  # a Citus store opens as PostgreSQL
    rng = random.Random(20261201)
    acked: set[str] = set()
    kills = 0
    start = 0
    counts: dict[str, int] = {}
    for _ in range(ROUNDS):
        for kind in KINDS:
            got = _run_and_kill(writer, conn, kind, start, rng.uniform(0.05, 0.5))
            acked.update(got)
            kills += 1
            start += 1_000_000
            counts = _verify(writer, conn, acked)
    if engine == "citus":  # the writers' store distributed itself by user
        import psycopg

        with psycopg.connect(conn) as check:
            layout = check.execute("SELECT value FROM oam_meta WHERE key = 'layout'").fetchone()
        assert layout == ("citus:user",)
    print(f"\n{engine}: {kills} kills, {len(acked)} acknowledged writes kept, final {counts}")
    assert kills >= 50 or ROUNDS < 13

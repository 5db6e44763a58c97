"""``python -m bench memory-history``: what a memory's history (#51) costs on writes.

One store per engine (SQLite file, pgserver's PostgreSQL) loaded with ``n`` memories of the
synthetic corpus (``bench.data``; vectors given, no model), then the same writes timed with
the history on and off, alternating call by call on the same store: one-memory adds
(``store.add``, one record a call: group commit on SQLite, the one-statement insert on
PostgreSQL), content updates (new text with its vector given), metadata updates, and deletes.
"Off" is the same build with the dialect's ``keeps_history`` flag cleared, which is what an
older schema opened without upgrading runs: every history statement (the ``created`` row, the
PostgreSQL insert's history CTE, the update's version and ``updated_at``, the delete's erase
and tombstone) is skipped and nothing else changes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import data
from bench.common import log, machine, percentiles, save_results
from bench.doubles import LookupEmbedder

KINDS = ("add", "update content", "update metadata", "delete")


def _store(engine: str, conn: str) -> Any:
    from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, SQLiteMemoryStore
    from oracleagentmemory.core.dbsearch import SearchStrategy

    cls = SQLiteMemoryStore if engine == "sqlite" else PostgresMemoryStore
    lookup = LookupEmbedder({}, data.DIM)
    return cls(
        lookup,
        conn,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        vector_dim=data.DIM,
        search_strategy=SearchStrategy.HYBRID,
    )


def _load(store: Any, corpus: Any) -> float:
    t0 = time.perf_counter()
    for s in range(0, corpus.n, 1000):
        corpus.add_rows(store, s, min(corpus.n, s + 1000))
    return float(corpus.n / (time.perf_counter() - t0))


def _rounds(store: Any, corpus: Any, calls: int, rounds: int) -> dict[str, dict[str, Any]]:
    """Each kind of write ``calls`` times per mode and round, the two modes alternating call
    by call (which goes first alternating too), so drift and other load hit both alike."""
    d = store._dialect
    rng = np.random.default_rng(11)
    lat: dict[tuple[str, bool], list[float]] = {(k, on): [] for k in KINDS for on in (True, False)}
    made = 0

    def timed(kind: str, fn: Callable[[int, bool], None]) -> None:
        for i in range(calls):
            for on in (True, False) if i % 2 == 0 else (False, True):
                d.keeps_history = on
                s = time.perf_counter()
                fn(i, on)
                lat[(kind, on)].append(time.perf_counter() - s)

    for r in range(rounds):
        ids = {on: [f"h{made + 2 * i + on}" for i in range(calls)] for on in (True, False)}
        made += 2 * calls
        src = rng.integers(0, corpus.n, calls)

        def add(i: int, on: bool, ids: Any = ids, src: Any = src) -> None:
            store.add(
                [corpus.texts[src[i]]],
                record_type="memory",
                embeddings=[corpus.vectors[src[i]]],
                record_ids=[ids[on][i]],
                user_ids=[corpus.user_id(i % data.USERS)],
                metadata=[corpus.metadata[src[i]]],
            )

        def content(i: int, on: bool, ids: Any = ids, src: Any = src) -> None:
            j = (src[i] + 1) % corpus.n
            store.update("memory", ids[on][i], content=corpus.texts[j], embedding=corpus.vectors[j])

        def metadata(i: int, on: bool, ids: Any = ids, r: int = r) -> None:
            store.update("memory", ids[on][i], metadata={"round": r, "i": i})

        def delete(i: int, on: bool, ids: Any = ids) -> None:
            store.delete("memory", ids[on][i])

        timed("add", add)
        timed("update content", content)
        timed("update metadata", metadata)
        timed("delete", delete)
    d.keeps_history = True
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        row: dict[str, Any] = {}
        for on, name in ((True, "history"), (False, "without")):
            seconds = lat[(kind, on)]
            row[name] = {"per_s": len(seconds) / sum(seconds), **percentiles(seconds)}
        row["cost_pct"] = 100.0 * (row["history"]["p50"] / row["without"]["p50"] - 1.0)
        out[kind] = row
    return out


def main(
    *,
    n: int = 100_000,
    calls: int = 300,
    rounds: int = 4,
    engines: tuple[str, ...] = ("sqlite", "postgres"),
) -> dict[str, Any]:
    corpus = data.generate(n)
    res: dict[str, Any] = {
        "machine": machine(),
        "n": n,
        "calls": calls,
        "rounds": rounds,
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "engines": {},
    }
    with tempfile.TemporaryDirectory(prefix="oam-historybench-") as tmp:
        for engine in engines:
            server = None
            if engine == "sqlite":
                conn = str(Path(tmp) / "history.db")
            else:
                from bench.postgres import configured_server

                os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="oam-xdg-"))
                server = configured_server(Path(tmp) / "pg")
                server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
                conn = server.get_uri()
            try:
                store = _store(engine, conn)
                log(f"history: {engine}: loading {n:,} memories")
                load = _load(store, corpus)
                if engine == "postgres":
                    store._dialect.ann_catch_up()
                    store._dialect.execute("VACUUM ANALYZE")
                rows = _rounds(store, corpus, calls, rounds)
                versions = store._dialect.execute(
                    f"SELECT COUNT(*) FROM {store._dialect.tables.history}"
                )[0][0]
                store.close()
                res["engines"][engine] = {
                    "load_per_s": load,
                    "rows": rows,
                    "history_rows": int(versions),
                }
            finally:
                if server is not None:
                    server.cleanup()
    save_results("memory-history", res, _md(res))
    return res


def _md(res: dict[str, Any]) -> list[str]:
    lines = [
        "# What a memory's history costs on writes",
        "",
        f"`{res['command']}` ({res['started']}); {res['n']:,} memories per store, "
        f"{res['calls']} calls per write kind, mode and round, {res['rounds']} rounds "
        "(the modes alternating call by call; per s: calls over their summed latency). "
        "Machine: "
        + ", ".join(f"{k} {v}" for k, v in res["machine"].items() if k in ("cpu", "cores", "ram")),
        "",
        "| engine | write | with history: per s | p50 ms | p95 ms | without: per s | p50 ms "
        "| p95 ms | p50 cost |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for engine, e in res["engines"].items():
        for kind, row in e["rows"].items():
            h, w = row["history"], row["without"]
            lines.append(
                f"| {engine} | {kind} | {h['per_s']:,.0f} | {h['p50']:.2f} | {h['p95']:.2f} "
                f"| {w['per_s']:,.0f} | {w['p50']:.2f} | {w['p95']:.2f} "
                f"| {row['cost_pct']:+.0f}% |"
            )
    lines += [
        "",
        "Load (bulk adds of 1,000, history on): "
        + ", ".join(
            f"{engine} {e['load_per_s']:,.0f} records/s" for engine, e in res["engines"].items()
        ),
    ]
    return lines

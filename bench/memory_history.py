"""``python -m bench memory-history``: what a memory's history and validity (#51) cost on
writes and searches.

One store per engine (SQLite file, pgserver's PostgreSQL) loaded with ``n`` memories of the
synthetic corpus (``bench.data``; vectors given, no model), then the same writes timed with
history and validity on and off, alternating call by call on the same store: one-memory adds
(``store.add``, one record a call: group commit on SQLite, the one-statement insert on
PostgreSQL), content updates (new text with its vector given), metadata updates, status
changes (VALID -> INVALID -> VALID: the validity window ended and reopened), and deletes.
"Off" is the same build with the dialect's ``keeps_history`` and ``keeps_validity`` flags
cleared, which is what a schema 14 store opened without upgrading runs: every history
statement (the ``created`` row, the PostgreSQL insert's history CTE, the update's version and
``updated_at``, the delete's erase and tombstone) and every validity one (the insert's
``valid_from``, the status change's window) is skipped and nothing else changes.

Searches (HYBRID, a text query with its vector from the lookup embedder, k=10), per engine:
the default search beside ``as_of`` now (few rows excluded) and ``as_of`` the corpus' median
time (half the rows excluded), user-scoped and unscoped, the modes interleaved query by query.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tools.runtime_dir import ensure_runtime_dir

from bench import data
from bench.common import log, machine, percentiles, save_results
from bench.doubles import LookupEmbedder

KINDS = ("add", "update content", "update metadata", "update status", "delete")
SEARCHES = ("default", "as_of now", "as_of median")


def _store(engine: str, conn: str, corpus: Any) -> Any:
    from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, SQLiteMemoryStore
    from oracleagentmemory.core.dbsearch import SearchStrategy

    cls = SQLiteMemoryStore if engine == "sqlite" else PostgresMemoryStore
    lookup = LookupEmbedder(dict(zip(corpus.q_texts, corpus.q_vectors, strict=True)), data.DIM)
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
                d.keeps_history = d.keeps_validity = on
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

        def status(i: int, on: bool, ids: Any = ids) -> None:
            store.update("memory", ids[on][i], status="invalid" if i % 4 < 2 else "valid")

        def delete(i: int, on: bool, ids: Any = ids) -> None:
            store.delete("memory", ids[on][i])

        timed("add", add)
        timed("update content", content)
        timed("update metadata", metadata)
        timed("update status", status)
        timed("delete", delete)
    d.keeps_history = d.keeps_validity = True
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        row: dict[str, Any] = {}
        for on, name in ((True, "history"), (False, "without")):  # "history": and validity
            seconds = lat[(kind, on)]
            row[name] = {"per_s": len(seconds) / sum(seconds), **percentiles(seconds)}
        row["cost_pct"] = 100.0 * (row["history"]["p50"] / row["without"]["p50"] - 1.0)
        out[kind] = row
    return out


def _searches(store: Any, corpus: Any, rounds: int) -> dict[str, dict[str, Any]]:
    """Each query of the corpus ``rounds`` times per mode and scope, the modes interleaved
    query by query (their order rotating)."""
    from datetime import UTC, datetime

    median = datetime.fromisoformat(sorted(corpus.timestamps)[len(corpus.timestamps) // 2])
    as_of = {"default": None, "as_of now": datetime.now(UTC), "as_of median": median}
    lat: dict[tuple[str, str], list[float]] = {
        (scope, mode): [] for scope in ("user", "unscoped") for mode in SEARCHES
    }
    found: dict[tuple[str, str], int] = dict.fromkeys(lat, 0)
    for _ in range(rounds):
        for qi, text in enumerate(corpus.q_texts):
            for scope in ("user", "unscoped"):
                kwargs: dict[str, Any] = {"include_invalid_results": False}
                if scope == "user":
                    kwargs.update(user_id=corpus.user_id(int(corpus.q_users[qi])))
                    kwargs.update(exact_user_match=True)
                order = SEARCHES[qi % 3 :] + SEARCHES[: qi % 3]
                for mode in order:
                    then = as_of[mode]
                    extra = {} if then is None else {"as_of": then}
                    s = time.perf_counter()
                    hits = store.search(text, 10, **kwargs, **extra)
                    lat[(scope, mode)].append(time.perf_counter() - s)
                    found[(scope, mode)] += len(hits)
    out: dict[str, dict[str, Any]] = {}
    for scope in ("user", "unscoped"):
        row: dict[str, Any] = {}
        for mode in SEARCHES:
            seconds = lat[(scope, mode)]
            row[mode] = {
                "per_s": len(seconds) / sum(seconds),
                "hits_per_query": found[(scope, mode)] / len(seconds),
                **percentiles(seconds),
            }
        out[scope] = row
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

                ensure_runtime_dir()
                server = configured_server(Path(tmp) / "pg")
                server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
                conn = server.get_uri()
            try:
                store = _store(engine, conn, corpus)
                log(f"history: {engine}: loading {n:,} memories")
                load = _load(store, corpus)
                if engine == "postgres":
                    store._dialect.ann_catch_up()
                    store._dialect.execute("VACUUM ANALYZE")
                rows = _rounds(store, corpus, calls, rounds)
                log(f"history: {engine}: searches")
                searches = _searches(store, corpus, max(1, rounds // 2))
                versions = store._dialect.execute(
                    f"SELECT COUNT(*) FROM {store._dialect.tables.history}"
                )[0][0]
                store.close()
                res["engines"][engine] = {
                    "load_per_s": load,
                    "rows": rows,
                    "searches": searches,
                    "history_rows": int(versions),
                }
            finally:
                if server is not None:
                    server.cleanup()
    save_results("memory-history", res, _md(res))
    return res


def _md(res: dict[str, Any]) -> list[str]:
    lines = [
        "# What a memory's history and validity cost on writes and searches",
        "",
        f"`{res['command']}` ({res['started']}); {res['n']:,} memories per store, "
        f"{res['calls']} calls per write kind, mode and round, {res['rounds']} rounds "
        "(the modes alternating call by call; per s: calls over their summed latency). "
        "Machine: "
        + ", ".join(f"{k} {v}" for k, v in res["machine"].items() if k in ("cpu", "cores", "ram")),
        "",
        "Writes: history and validity on against both off, on the same store.",
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
        "Searches (HYBRID, k=10, a text query; `as_of now`: few rows excluded, `as_of "
        "median`: half the corpus excluded):",
        "",
        "| engine | scope | default p50 ms | p95 ms | as_of now p50 ms | p95 ms | vs default "
        "| as_of median p50 ms | p95 ms | vs default |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for engine, e in res["engines"].items():
        for scope, row in e.get("searches", {}).items():
            base, now, mid = row["default"], row["as_of now"], row["as_of median"]
            lines.append(
                f"| {engine} | {scope} | {base['p50']:.2f} | {base['p95']:.2f} "
                f"| {now['p50']:.2f} | {now['p95']:.2f} | {now['p50'] / base['p50']:.2f}x "
                f"| {mid['p50']:.2f} | {mid['p95']:.2f} | {mid['p50'] / base['p50']:.2f}x |"
            )
    lines += [
        "",
        "Load (bulk adds of 1,000, history on): "
        + ", ".join(
            f"{engine} {e['load_per_s']:,.0f} records/s" for engine, e in res["engines"].items()
        ),
    ]
    return lines

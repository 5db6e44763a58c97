"""PostgreSQL at server speed (``python -m bench postgres``): ours on PostgreSQL beside SQLite
and beside the bare-psycopg floor, all measured in one run on one pgserver.

**Writes.** Single-record ``store.add`` calls (a memory with a precomputed vector, a user of
100) from 1, 4 and 16 writers (1x1, 4x1, 4x4 processes x threads), each process one store
as a web-server worker holds one; the floor is the least a client can send for the same
rows: one pipelined transaction of two INSERTs (the record row, the chunk row with its
vector) into tables made ``LIKE`` ours (the same columns, keys and indexes), ids from
sequences. SQLite's 16 writers run in the same run. **Bulk**: ``store.add`` of
1,000-record lists against ``COPY`` of the same rows into the floor tables, one transaction
per 1,000.

**Searches** at N records (the synthetic corpus of ``bench.data``): the same rows, texts and
queries in a HYBRID store on each engine, every shape of ``bench speed``, p50 on each
engine, their ratio, and the top-10 overlap between the engines (the share of one engine's
ten ids the other returns too). Both engines are measured settled: SQLite's graph built,
PostgreSQL's index caught up and ``VACUUM ANALYZE`` run (what autovacuum does soon after a
load). Unscoped VECTOR also gives recall@10 against the exact
truth, through the approximate index (caught up first: its build time is reported), and the
previous design for comparison: pgvector's HNSW on the chunk table itself, queried as the
store did before.

Each shape runs every query once on each engine before the timed pass (a server in steady
state has its working set cached, as SQLite's in-process index is in memory), then waits for
the users PostgreSQL's cache reads in after those answers. The server is
configured as a dedicated one is: ``shared_buffers`` a quarter of the memory
(at most 4 GB), where pgserver starts with a desktop install's 128 MB, which holds neither
the users' covering index nor the chunks at 100k records.

Cold users: ``bench/postgres_cold.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from tools.runtime_dir import ensure_runtime_dir

from bench import data
from bench.common import log, machine, percentiles, save_results
from bench.doubles import LookupEmbedder
from bench.load import run_processes
from bench.postgres_common import K, _store, _unit, _wait_fills, shared_buffers_mb

WRITE_USERS = 100
PREVIOUS_MAX_N = 100_000
"""The largest search corpus the previous design's row is measured on."""


# ---------------------------------------------------------------------------- the floor


def make_floor_tables(url: str, prefix: str) -> None:
    """Tables ``LIKE`` the store's (columns, keys, indexes), with ids from sequences."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for kind, key in (("records", "rid"), ("chunks", "cid")):
            conn.execute(f"DROP TABLE IF EXISTS floor_{kind}")
            conn.execute(f"CREATE TABLE floor_{kind} (LIKE {prefix}_{kind} INCLUDING ALL)")
            conn.execute(f"CREATE SEQUENCE IF NOT EXISTS floor_{kind}_seq")
            conn.execute(
                f"ALTER TABLE floor_{kind} ALTER COLUMN {key}"
                f" SET DEFAULT nextval('floor_{kind}_seq')"
            )


def _floor_add(conn: Any, rid: str, user: str, vector: str) -> None:
    with conn.pipeline(), conn.transaction():
        conn.execute(
            "INSERT INTO floor_records (family, record_type, id, content, user_id, created_at,"
            " status) VALUES ('memory', 'memory', %s, %s, %s, %s, 'valid')",
            [rid, f"memory {rid}", user, "2026-12-02T00:00:00+00:00"],
        )
        conn.execute(
            "INSERT INTO floor_chunks (rid, chunk_index, chunk_text, vector)"
            " VALUES (currval('floor_records_seq'), 0, %s, %s)",
            [f"memory {rid}", vector],
        )


# ---------------------------------------------------------------------------- writers


def writer_main(cfg: dict[str, Any]) -> None:
    """One process: ``threads`` writer threads until ``end``; counts and latencies to out."""
    engine, conn_s, proc = cfg["engine"], cfg["conn"], cfg["proc"]
    store = None if engine == "floor" else _store(engine.split("-")[0], conn_s)
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def writer(t: int) -> None:
        import psycopg

        rng = np.random.default_rng(1000 * proc + t)
        vecs = _unit(rng, 64)
        texts = ["[" + ",".join(map(str, v.tolist())) + "]" for v in vecs]
        conn = psycopg.connect(conn_s, autocommit=True) if engine == "floor" else None
        mine: list[float] = []
        i = 0
        while time.time() < cfg["start_at"]:
            time.sleep(0.001)
        while time.time() < cfg["end_at"]:
            rid = f"{cfg['tag']}{proc}-{t}-{i}"
            user = f"u{(proc * 7 + t + i) % WRITE_USERS}"
            t0 = time.perf_counter()
            try:
                if conn is not None:
                    _floor_add(conn, rid, user, texts[i % 64])
                else:
                    assert store is not None
                    store.add(
                        [f"memory {rid}"],
                        record_type="memory",
                        record_ids=rid,
                        user_ids=user,
                        embeddings=[vecs[i % 64]],
                    )
                mine.append(time.perf_counter() - t0)
            except Exception as exc:  # counted, and a sample reported
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
            i += 1
        if conn is not None:
            conn.close()
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(cfg["threads"])]
    for th in threads:
        th.start()
    while time.time() < cfg["start_at"]:
        time.sleep(0.001)
    cpu0 = time.process_time()  # this process's CPU in the window (its indexer's included)
    for th in threads:
        th.join()
    cpu_s = time.process_time() - cpu0
    if store is not None:
        store.close()
    Path(cfg["out"]).write_text(json.dumps({"lat": lat, "errors": errors, "cpu_s": cpu_s}))


def _server_cpu(url: str) -> float:
    """CPU seconds of the server's exited backends so far (the postmaster's children; a
    writer's backend exits when its store closes)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    pid = int((Path(row[0]) / "postmaster.pid").read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[13:15]) / os.sysconf("SC_CLK_TCK")  # cutime, cstime


def _queued(url: str) -> int | None:
    """Chunks waiting for the approximate index (the indexer's lag), None without a queue."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('oam_ann_queue') IS NOT NULL").fetchone()
        if not row or not row[0]:
            return None
        got = conn.execute("SELECT COUNT(*) FROM oam_ann_queue").fetchone()
    return int(got[0]) if got else None


def _catch_up(url: str) -> float:
    """Seconds one store takes to index what the writers left queued (every row starts
    with the approximate index caught up)."""
    store = _store("postgres", url)
    try:
        t0 = time.perf_counter()
        store._dialect.ann_catch_up()
        return time.perf_counter() - t0
    finally:
        store.close()


def writers(
    engine: str, conn: str, procs: int, threads: int, seconds: float, work: Path, tag: str
) -> dict[str, Any]:
    start = time.time() + 4.0  # every process opens its store first
    cfgs = [
        {
            "engine": engine,
            "conn": conn,
            "proc": p,
            "threads": threads,
            "start_at": start,
            "end_at": start + seconds,
            "tag": f"{tag}{procs}x{threads}-",
            "out": str(work / f"w-{engine}-{tag}-{p}.json"),
        }
        for p in range(procs)
    ]
    server = engine != "sqlite"
    cpu0 = _server_cpu(conn) if server else 0.0
    parts = run_processes("bench.postgres", "writer", cfgs, seconds + 300)
    lat = [x for part in parts for x in part["lat"]]
    errors = [e for part in parts for e in part["errors"]]
    time.sleep(0.5)  # the closed stores' backends reaped
    done = max(len(lat), 1)
    server_ms = 1000 * (_server_cpu(conn) - cpu0) / done if server else None
    queued = _queued(conn) if engine == "postgres" else None
    caught_up = _catch_up(conn) if queued else None
    return {
        "engine": engine,
        "writers": f"{procs} x {threads}",
        "writes_per_s": len(lat) / seconds,
        "client_cpu_ms": 1000 * sum(part["cpu_s"] for part in parts) / done,
        "server_cpu_ms": server_ms,
        "queued_after": queued,
        "catch_up_s": caught_up,
        "ms": percentiles(lat),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:3],
    }


# ---------------------------------------------------------------------------- bulk


def bulk(engine: str, conn: str, corpus: Any, n: int) -> float:
    """Records/s of ``n`` records in 1,000-record transactions."""
    import psycopg

    uid = [corpus.user_id(u) for u in range(data.USERS)]
    t0 = time.perf_counter()
    if engine == "floor":
        with psycopg.connect(conn, autocommit=True) as c:
            for s in range(0, n, 1000):
                e = min(n, s + 1000)
                with c.transaction():
                    first = c.execute(
                        "SELECT nextval('floor_records_seq') FROM generate_series(1, %s)",
                        [e - s],
                    ).fetchall()
                    with c.cursor().copy(
                        "COPY floor_records (rid, family, record_type, id, content, user_id,"
                        " created_at, status, metadata) FROM STDIN"
                    ) as cp:
                        for (rid,), i in zip(first, range(s, e), strict=True):
                            cp.write_row(
                                [rid, "memory", "memory", f"b{i}", corpus.texts[i],
                                 uid[int(corpus.users[i])], "2026-12-02T00:00:00+00:00",
                                 "valid", json.dumps(corpus.metadata[i])]
                            )  # fmt: skip
                    with c.cursor().copy(
                        "COPY floor_chunks (rid, chunk_index, chunk_text, vector) FROM STDIN"
                    ) as cp:
                        for (rid,), i in zip(first, range(s, e), strict=True):
                            vec = "[" + ",".join(map(str, corpus.vectors[i].tolist())) + "]"
                            cp.write_row([rid, 0, corpus.texts[i], vec])
    else:
        store = _store(engine, conn)
        for s in range(0, n, 1000):
            corpus.add_rows(store, s, min(n, s + 1000), id_prefix="b", timestamps=False)
        store.close()
    return n / (time.perf_counter() - t0)


# ---------------------------------------------------------------------------- searches


def _load(store: Any, corpus: Any) -> float:
    t0 = time.perf_counter()
    for s in range(0, corpus.n, 1000):
        corpus.add_rows(store, s, min(corpus.n, s + 1000))
    return corpus.n / (time.perf_counter() - t0)


def _ids(hits: Any) -> list[int]:
    return [int(r.id[1:]) for r, _ in hits]


def searches(url: str, work: Path, n: int, budget_s: float) -> dict[str, Any]:
    from bench.speed import ann_wait
    from oracleagentmemory.core.store.search import _vector_branch

    corpus = data.generate(n)
    gt = data.ground_truth(corpus)
    qv, qt, qu = corpus.q_vectors, corpus.q_texts, corpus.q_users
    uid = [corpus.user_id(u) for u in range(data.USERS)]
    lookup = LookupEmbedder(dict(zip(qt, qv, strict=True)), data.DIM)
    out: dict[str, Any] = {"n": n, "rows": [], "build": {}}
    stores: dict[str, dict[str, Any]] = {}

    def graph_built(store: Any) -> float:
        """Seconds until the SQLite graph the store's first search starts is built (each
        store builds its own)."""
        store.search(None, K, query_vector=qv[0])
        t0 = time.perf_counter()
        ann_wait(store, n, {"ingest": [], "notes": []})
        return time.perf_counter() - t0

    for engine, conn in (("sqlite", str(work / "search.db")), ("postgres", url)):
        log(f"search rows: loading {n:,} records into {engine}")
        main = _store(engine, conn, "HYBRID", lookup)
        out["build"][f"{engine} store.add records/s (HYBRID)"] = _load(main, corpus)
        if engine == "postgres":
            t0 = time.perf_counter()
            main._dialect.ann_catch_up()
            out["build"]["postgres approximate index caught up after the load, s"] = (
                time.perf_counter() - t0
            )
            # What autovacuum would have done by the time a loaded store serves searches, and
            # the checkpoint that follows a load (else its writes land in the first rows).
            main._dialect.execute("VACUUM ANALYZE")
            main._dialect.execute("CHECKPOINT")
        else:
            out["build"]["sqlite HNSW graph built after the first search, s"] = graph_built(main)
        stores[engine] = {
            "HYBRID": main,
            "VECTOR": _store(engine, conn, "VECTOR", lookup),
            "KEYWORD": _store(engine, conn, "KEYWORD", lookup),
        }
        if engine == "sqlite":  # the VECTOR rows' store too, before they are timed
            out["build"]["sqlite HNSW graph of the VECTOR store built, s"] = graph_built(
                stores[engine]["VECTOR"]
            )
    shapes: list[tuple[str, str, Any, str | None]] = [
        ("VECTOR", "unscoped", lambda s, q: s.search(None, K, query_vector=qv[q]), "unscoped"),
        (
            "VECTOR",
            "user (exact)",
            lambda s, q: s.search(
                None, K, query_vector=qv[q], user_id=uid[qu[q]], exact_user_match=True
            ),
            "user",
        ),
        (
            "VECTOR",
            "metadata source=email (~25%)",
            lambda s, q: s.search(None, K, query_vector=qv[q], metadata_filter=data.FILTER_SOURCE),
            "source",
        ),
        (
            "VECTOR",
            "user (exact) + tags contain work",
            lambda s, q: s.search(
                None,
                K,
                query_vector=qv[q],
                user_id=uid[qu[q]],
                exact_user_match=True,
                metadata_filter=data.FILTER_TAG,
            ),
            "user+tag",
        ),
        (
            "KEYWORD",
            "user (exact)",
            lambda s, q: s.search(qt[q], K, user_id=uid[qu[q]], exact_user_match=True),
            None,
        ),
        (
            "HYBRID",
            "user (exact)",
            lambda s, q: s.search(qt[q], K, user_id=uid[qu[q]], exact_user_match=True),
            None,
        ),
    ]
    nq = len(qv)
    for strategy, scope, call, truth in shapes:
        row: dict[str, Any] = {"strategy": strategy, "scope": scope}
        answers: dict[str, dict[int, list[int]]] = {}
        for engine in ("sqlite", "postgres"):
            store = stores[engine][strategy]
            for q in range(nq):  # settled: every query once, so its pages are cached
                call(store, q)
            _wait_fills(store)  # the users read into PostgreSQL's cache after those answers
            lat, got = [], {}
            t_end = time.perf_counter() + budget_s
            q = 0
            while q < nq and (time.perf_counter() < t_end or q < 30):
                t0 = time.perf_counter()
                hits = call(store, q)
                lat.append(time.perf_counter() - t0)
                got[q] = _ids(hits)
                q += 1
            answers[engine] = got
            row[f"{engine}_ms"] = percentiles(lat)
            if truth is not None:
                row[f"{engine}_recall"] = float(
                    np.mean([len(set(got[q]) & set(gt[truth][q].tolist())) / K for q in got])
                )
        common = sorted(set(answers["sqlite"]) & set(answers["postgres"]))
        row["overlap"] = float(
            np.mean(
                [
                    len(set(answers["sqlite"][q]) & set(answers["postgres"][q]))
                    / max(1, len(answers["sqlite"][q]))
                    for q in common
                ]
            )
        )
        row["queries"] = len(common)
        out["rows"].append(row)
        log(f"{strategy} {scope}: {row}")
    if n <= PREVIOUS_MAX_N:  # a second graph on a 1M-row table takes most of an hour here
        _previous_design(stores["postgres"]["VECTOR"], qv, gt, out)
    _breadths(stores["postgres"]["VECTOR"], qv, gt, out)
    for engine_stores in stores.values():
        for store in engine_stores.values():
            store.close()
    del _vector_branch
    return out


BREADTHS = (64, 100, 128, 200, 300)
"""The ``hnsw.ef_search`` values the unscoped PostgreSQL row is timed at, beside the one the
store chooses for the graph's size."""


def _breadths(pg: Any, qv: Any, gt: Any, out: dict[str, Any]) -> None:
    """Unscoped VECTOR on PostgreSQL at each of ``BREADTHS`` (p50 and recall@10, every query
    run once before it is timed); into ``out``."""
    from oracleagentmemory.core.store.engines.postgres import _postgres_ann

    chosen = (_postgres_ann.MIN_EF, _postgres_ann.EF_1M)
    rows = []
    try:
        for ef in BREADTHS:
            _postgres_ann.MIN_EF = _postgres_ann.EF_1M = ef
            for q in range(len(qv)):
                pg.search(None, K, query_vector=qv[q])
            lat, rec = [], []
            for q in range(len(qv)):
                t0 = time.perf_counter()
                hits = pg.search(None, K, query_vector=qv[q])
                lat.append(time.perf_counter() - t0)
                rec.append(len(set(_ids(hits)) & set(gt["unscoped"][q].tolist())) / K)
            rows.append({"ef": ef, "ms": percentiles(lat), "recall": float(np.mean(rec))})
            log(f"unscoped at ef_search {ef}: {rows[-1]}")
    finally:
        _postgres_ann.MIN_EF, _postgres_ann.EF_1M = chosen
    out["breadths"] = rows
    with pg._dialect._conn() as conn, conn.transaction(force_rollback=True):
        sql, params = pg._dialect.ef_search_sql(2 * K)
        out["chosen_ef"] = int(conn.execute(sql, params).fetchone()[0])


def _previous_design(pg: Any, qv: Any, gt: Any, out: dict[str, Any]) -> None:
    """The previous design, HNSW on the chunk table queried in place, timed query by query
    beside ours; into ``out``."""
    d = pg._dialect
    t = d.tables
    t0 = time.perf_counter()
    d.execute(f"CREATE INDEX old_chunks_hnsw ON {t.chunks} USING hnsw (vector vector_cosine_ops)")
    out["build"]["previous design: HNSW on the chunk table built, s"] = time.perf_counter() - t0
    sql = (
        f"SELECT c.rid, (c.vector <=> ?::vector) AS dist FROM {t.chunks} c JOIN {t.records} r"
        " ON r.rid = c.rid WHERE r.record_type IN ('memory') AND c.vector IS NOT NULL"
        " ORDER BY (c.vector <=> ?::vector) LIMIT ?"
    )
    # Interleaved with ours, query by query, so both meet the same cache and machine; ours
    # both as a search (its Python included) and as what the previous design is timed as:
    # its ranking statement (which reads its records too), without the search's Python.
    ours_sql: list[tuple[str, list[Any]]] = []
    run_vector = d.execute_vector_query

    def spied(sql_: str, params_: Any) -> Any:
        ours_sql.append((sql_, list(params_)))
        return run_vector(sql_, params_)

    d.execute_vector_query = spied  # type: ignore[method-assign]
    pg.search(None, K, query_vector=qv[0])
    d.execute_vector_query = run_vector  # type: ignore[method-assign]
    first_sql, first_params = ours_sql[0]
    lat, rec, ours_full, ours_stmt = [], [], [], []
    for q in range(min(len(qv), 200)):
        v = d.vector_to_db(qv[q])
        t0 = time.perf_counter()
        rows = d.execute_vector_query(sql, [v, v, 40])
        found = [int(r[0]) for r in rows][:K]
        records = pg._reads.load(found)  # the search then read its records, as every search does
        lat.append(time.perf_counter() - t0)
        ids = {int(records[rid].id[1:]) for rid in found if rid in records}
        rec.append(len(ids & set(gt["unscoped"][q].tolist())) / K)
        t0 = time.perf_counter()
        pg.search(None, K, query_vector=qv[q])
        ours_full.append(time.perf_counter() - t0)
        unit = d.vector_to_db(qv[q] / float(np.linalg.norm(qv[q])))
        params = [unit, unit, first_params[2], unit, *first_params[4:]]
        t0 = time.perf_counter()
        d.execute_vector_query(first_sql, params)
        ours_stmt.append(time.perf_counter() - t0)
    d.execute("DROP INDEX old_chunks_hnsw")
    out["previous_unscoped_ms"] = percentiles(lat[10:])
    out["interleaved_unscoped_ms"] = percentiles(ours_full[10:])
    out["interleaved_unscoped_statement_ms"] = percentiles(ours_stmt[10:])
    out["previous_unscoped_recall"] = float(np.mean(rec))


def _md(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "# PostgreSQL at server speed",
        "",
        f"Machine: {m.get('CPU', '?')}, {m.get('cores', '?')} cores, {m.get('RAM', '?')};"
        f" PostgreSQL from pgserver ({res.get('server', '?')}), configured as a dedicated"
        f" server is (shared_buffers {res.get('shared_buffers', '?')}: a quarter of the"
        " memory, at most 4 GB; pgserver's default is 128 MB), server and clients on the"
        " same cores, so ratios within this run are what to read.",
        f"Run: `{res['command']}`, {res['started']}, {res['duration_s']:.0f} s.",
    ]
    if res["writes"]:
        lines += _write_md(res)
    return _search_md(res, lines)


def _write_md(res: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Writes: single-record `store.add`, and the bare-psycopg floor",
        "",
        "CPU per write: the writer processes' own (client, with a PostgreSQL store's"
        " background indexer) and the server's backends' (the indexer's batches included);"
        " queued after: chunks the approximate index had not taken in at the window's end"
        " (its indexer yields to writes that keep coming, up to a lag of"
        f" {res.get('lag_rows', 0):,} chunks); catch-up: the seconds one store then took to"
        " index them (each row starts caught up).",
        "",
        "| engine | processes x threads | writes/s | p50 / p99 ms | errors |"
        " client / server CPU ms per write | queued after | catch-up s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["writes"]:
        srv = r.get("server_cpu_ms")
        cpu = f"{r['client_cpu_ms']:.2f} / {'-' if srv is None else f'{srv:.2f}'}"
        queued = r.get("queued_after")
        caught = "-" if r.get("catch_up_s") is None else f"{r['catch_up_s']:.1f}"
        lines.append(
            f"| {r['engine']} | {r['writers']} | {r['writes_per_s']:.0f} |"
            f" {r['ms']['p50']:.2f} / {r['ms']['p99']:.2f} | {r['errors']} | {cpu} |"
            f" {'-' if queued is None else f'{queued:,}'} | {caught} |"
        )
    ratios = res.get("write_ratios", {})
    if ratios:
        lines += ["", *[f"- {k}: {v:.2f}" for k, v in ratios.items()]]
    lines += ["", "## Bulk: 1,000 records per transaction", "", "| what | records/s |", "|---|---|"]
    for k, v in res["bulk"].items():
        lines.append(f"| {k} | {v:.0f} |")
    return lines


def _search_md(res: dict[str, Any], lines: list[str]) -> str:
    s = res.get("search")
    if s:
        lines += [
            "",
            f"## Searches at {s['n']:,} records (one query at a time, k = 10)",
            "",
            "| strategy | scope | SQLite p50 ms | PostgreSQL p50 ms | PG / SQLite |"
            " top-10 overlap | recall@10 SQLite / PG |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in s["rows"]:
            a, b = r["sqlite_ms"]["p50"], r["postgres_ms"]["p50"]
            rec = (
                f"{r['sqlite_recall']:.3f} / {r['postgres_recall']:.3f}"
                if "sqlite_recall" in r
                else "-"
            )
            lines.append(
                f"| {r['strategy']} | {r['scope']} | {a:.2f} | {b:.2f} | {b / a:.2f} |"
                f" {r['overlap']:.3f} | {rec} |"
            )
    if s and "previous_unscoped_ms" in s:
        lines += [
            "",
            f"Previous design (HNSW on the chunk table, queried in place), unscoped VECTOR p50:"
            f" {s['previous_unscoped_ms']['p50']:.2f} ms at recall@10"
            f" {s.get('previous_unscoped_recall', float('nan')):.3f}, with the `hnsw.ef_search`"
            " a search of ours sets: its ranking statement and the read of its 10 records, as a"
            " search makes them; the search's own Python is not in it. Timed query by query"
            " beside it, ours: its ranking statement (which reads its records)"
            f" {s.get('interleaved_unscoped_statement_ms', {}).get('p50', float('nan')):.2f} ms,"
            " the whole search"
            f" {s.get('interleaved_unscoped_ms', {}).get('p50', float('nan')):.2f} ms.",
        ]
    if s and "breadths" in s:
        lines += [
            "",
            "Unscoped VECTOR on PostgreSQL by `hnsw.ef_search` (the store sets"
            f" {s['chosen_ef']} for this graph's size; the row above is at that setting):",
            "",
            "| ef_search | p50 ms | p99 ms | recall@10 |",
            "|---|---|---|---|",
            *[
                f"| {r['ef']} | {r['ms']['p50']:.2f} | {r['ms']['p99']:.2f} | {r['recall']:.3f} |"
                for r in s["breadths"]
            ],
        ]
    if s:
        lines += ["", *[f"- {k}: {v:.1f}" for k, v in s["build"].items()]]
    if res.get("cold"):
        from bench.postgres_cold import _cold_md

        lines += _cold_md(res["cold"])
    lines += ["", *[f"- {n}" for n in res["notes"]]]
    return "\n".join(lines) + "\n"


def configured_server(pgdata: Path) -> Any:
    """pgserver's PostgreSQL, restarted with the ``shared_buffers`` of a dedicated server
    (pgserver starts with the 128 MB default of a shared desktop install)."""
    import pgserver

    server = pgserver.get_server(str(pgdata), cleanup_mode="stop")
    server.psql(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers_mb()}MB';")
    server.cleanup()
    return pgserver.get_server(str(pgdata), cleanup_mode="stop")


def main(
    *,
    seconds: float = 10.0,
    search_n: int = 100_000,
    bulk_n: int = 20_000,
    budget_s: float = 3.0,
    writes: bool = True,
    name: str = "postgres",
    cold_n: tuple[int, ...] | None = None,
    cold_users: int = 200,
    cold_rounds: int = 1,
    cold_per_user: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """Every row (``writes=False``: the search rows alone, as for 1M records; ``cold_n``
    empty: no cold-user rows), saved as ``bench/results/<name>``."""
    started = time.time()
    t0 = time.perf_counter()
    from bench.postgres_cold import COLD_N, COLD_PER_USER, cold
    from oracleagentmemory.core.store.engines.postgres._postgres_ann import LAG_ROWS

    if cold_n is None:
        cold_n = COLD_N

    res: dict[str, Any] = {
        "lag_rows": LAG_ROWS,
        "machine": machine(),
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "writes": [],
        "bulk": {},
        "notes": [],
    }
    with tempfile.TemporaryDirectory(prefix="oam-pgbench-") as tmp:
        work = Path(tmp)
        ensure_runtime_dir()
        if cold_n:  # on a server of their own, started at pgserver's defaults
            res["cold"] = cold(
                work,
                tuple(cold_n),
                cold_per_user or COLD_PER_USER,
                max_users=cold_users,
                rounds=cold_rounds,
            )
        if not writes and not search_n:
            res["server"] = res.get("cold", {}).get("server", "?")
            res["shared_buffers"] = f"128MB, then {shared_buffers_mb()}MB"
            res["duration_s"] = time.perf_counter() - t0
            save_results(name, res, _md(res).splitlines())
            return res
        server = configured_server(work / "pg")
        try:
            server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
            url = server.get_uri()
            res["server"] = server.psql("SELECT version();").split("\n")[2].strip()[:40]
            res["shared_buffers"] = server.psql("SHOW shared_buffers;").split("\n")[2].strip()
            if writes:
                _write_rows(res, url, work, seconds, bulk_n)
            if search_n:
                server.psql("CREATE SCHEMA IF NOT EXISTS s;")
                res["search"] = searches(
                    f"{url}&options=-csearch_path%3Ds%2Cpublic", work, search_n, budget_s
                )
        finally:
            server.cleanup()
    res["duration_s"] = time.perf_counter() - t0
    save_results(name, res, _md(res).splitlines())
    return res


def _write_rows(res: dict[str, Any], url: str, work: Path, seconds: float, bulk_n: int) -> None:
    """The writer rows and the bulk rows, into ``res``."""
    _store("postgres", url).close()  # the schema, then the floor's copies of it
    make_floor_tables(url, "oam")
    sqlite_path = str(work / "writes.db")
    _store("sqlite", sqlite_path).close()
    for procs, threads in ((1, 1), (4, 1), (4, 4)):
        for engine, conn in (("postgres", url), ("floor", url), ("sqlite", sqlite_path)):
            if engine == "sqlite" and procs * threads != 16:
                continue
            log(f"writes: {engine} {procs} x {threads}")
            res["writes"].append(writers(engine, conn, procs, threads, seconds, work, "w"))
    by = {(r["engine"], r["writers"]): r["writes_per_s"] for r in res["writes"]}
    res["write_ratios"] = {
        "16 writers, ours PG / floor": by[("postgres", "4 x 4")] / by[("floor", "4 x 4")],
        "16 writers, ours PG / ours SQLite": by[("postgres", "4 x 4")] / by[("sqlite", "4 x 4")],
        "1 writer, ours PG / floor": by[("postgres", "1 x 1")] / by[("floor", "1 x 1")],
    }
    corpus = data.generate(bulk_n)
    for engine, conn in (("postgres", url), ("floor", url), ("sqlite", sqlite_path)):
        log(f"bulk: {engine}")
        res["bulk"][f"{engine}: {'COPY' if engine == 'floor' else 'store.add'}"] = bulk(
            engine, conn, corpus, bulk_n
        )
    res["bulk_ratio_pg_over_copy"] = res["bulk"]["postgres: store.add"] / res["bulk"]["floor: COPY"]
    res["notes"].append(f"bulk: ours PG / COPY = {res['bulk_ratio_pg_over_copy']:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "writer":
        writer_main(json.loads(sys.argv[2]))
    else:
        raise SystemExit("usage: python -m bench postgres")

"""``python -m bench citus``: a Citus cluster (issue #50) beside one PostgreSQL server.

A coordinator and 2 workers (``tools/citus_cluster.py``: Citus built once from the vendored
source, pgserver's PostgreSQL 16 + pgvector) and a single pgserver PostgreSQL, all on this
machine. The same ``n`` synthetic records (bench.data: 100 users, 384 dimensions, precomputed
vectors) are loaded into a store created on the coordinator (so distributed by user) and
into one on the single server. Then, on both:

- one-user VECTOR, KEYWORD and HYBRID searches (``exact_user_match=True``), ``calls`` each,
  interleaved query by query: p50 / p95 and the top-10 overlap;
- ``writers`` threads, each adding one memory at a time for its own user, for ``seconds``
  (``rounds`` times, alternating the engines): writes/s and p50 / p95 latency, once through
  one store (its group commit: one transaction at a time) and once through a store each
  (transactions of different users at once).

Every node shares this machine's cores: the figures are what the cluster's layout and its
coordinator hop cost, not what more machines would add. On Citus a write holds the store's
lock shared and its users' advisory locks (``citus/_user_locks``) and every vector search
ranks exactly (no HNSW); the single server has row locks and its approximate index.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import data
from bench.common import log, machine, percentiles, save_results
from bench.doubles import LookupEmbedder
from bench.replica import open_store

K = 10
KINDS = ("VECTOR", "KEYWORD", "HYBRID")
ENGINES = ("single", "citus")


def main(
    *,
    n: int = 20_000,
    calls: int = 200,
    writers: int = 16,
    seconds: float = 5.0,
    rounds: int = 2,
) -> dict[str, Any]:
    """Run the bench and write ``bench/results/citus.md`` / ``.json``."""
    for name, value in (("n", n), ("calls", calls), ("writers", writers), ("rounds", rounds)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from tools import citus_cluster
    from tools.pg_standby import start_primary

    install = citus_cluster.build()  # cached after the first build
    corpus = data.generate(n)
    users = [corpus.user_id(u) for u in range(data.USERS)]
    lookup = LookupEmbedder(dict(zip(corpus.q_texts, corpus.q_vectors, strict=True)), data.DIM)
    res: dict[str, Any] = {
        "machine": machine(),
        "n": n,
        "users": data.USERS,
        "calls": calls,
        "writers": writers,
        "seconds": seconds,
        "rounds": rounds,
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with tempfile.TemporaryDirectory(prefix="oam-citusbench-") as tmp:
        os.environ.setdefault("XDG_RUNTIME_DIR", str(Path(tmp) / "xdg"))
        Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True)
        cluster = citus_cluster.CitusCluster(Path(tmp) / "cluster", install, workers=2)
        single = None
        stores: list[Any] = []
        try:
            urls = {"citus": cluster.start()}
            single = start_primary(Path(tmp) / "single")
            single.sql("CREATE EXTENSION IF NOT EXISTS vector")
            urls["single"] = single.dsn()
            res["load_s"] = {}
            for engine in ENGINES:
                loader = open_store(urls[engine], lookup, "HYBRID")
                stores.append(loader)
                log(f"citus bench: loading {n:,} records on {engine}")
                t0 = time.perf_counter()
                for s in range(0, n, 1000):
                    corpus.add_rows(loader, s, min(n, s + 1000))
                if engine == "single":  # Citus has no approximate index to build
                    loader._dialect.ann_catch_up()
                res["load_s"][engine] = time.perf_counter() - t0
                loader._dialect.execute("ANALYZE")
                if engine == "citus":
                    res["layout"] = str(loader._dialect.layout)
            by = {e: {k: open_store(urls[e], lookup, k) for k in KINDS} for e in ENGINES}
            stores += [s for kinds in by.values() for s in kinds.values()]
            res["load_before"] = os.getloadavg()[0]
            res["searches"] = [_searches(by, kind, corpus, users, calls) for kind in KINDS]
            one = {e: [by[e]["VECTOR"]] for e in ENGINES}
            res["writes"] = _writes(one, writers, seconds, rounds)
            # A store each (each its own write queue, as API nodes are): the transactions of
            # different users run at once, up to the pool's connections.
            apart = {
                e: [open_store(urls[e], lookup, "VECTOR") for _ in range(writers)] for e in ENGINES
            }
            stores += [s for each in apart.values() for s in each]
            res["writes_apart"] = _writes(apart, writers, seconds, rounds, "apart-")
            res["load_after"] = os.getloadavg()[0]
        finally:
            for store in stores:
                store.close()
            if single is not None:
                single.stop()
            cluster.stop()
    save_results("citus", res, _md(res))
    return res


def _searches(
    by: dict[str, dict[str, Any]], kind: str, corpus: Any, users: list[str], calls: int
) -> dict[str, Any]:
    rng = random.Random(7)
    qs = [rng.randrange(len(corpus.q_texts)) for _ in range(calls)]

    def call(store: Any, q: int) -> list[str]:
        user = users[int(corpus.q_users[q])]
        hits = store.search(corpus.q_texts[q], K, user_id=user, exact_user_match=True)
        return [r.id for r, _ in hits]

    for q in qs[:20]:  # warm both
        for e in ENGINES:
            call(by[e][kind], q)
    lat: dict[str, list[float]] = {e: [] for e in ENGINES}
    same = 0.0
    for q in qs:
        got = {}
        for e in ENGINES:
            t0 = time.perf_counter()
            got[e] = call(by[e][kind], q)
            lat[e].append(time.perf_counter() - t0)
        same += len(set(got["single"]) & set(got["citus"])) / max(1, len(got["single"]))
    row: dict[str, Any] = {
        "kind": kind,
        **{e: percentiles(lat[e]) for e in ENGINES},
        "overlap": same / calls,
    }
    log(f"{kind}: single {row['single']['p50']:.2f} ms, citus {row['citus']['p50']:.2f} ms")
    return row


def _write_window(stores: list[Any], engine: str, writers: int, seconds: float, tag: str) -> Any:
    """``writers`` threads for ``seconds``; thread ``t`` writes through ``stores[t % len]``."""
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(writers + 1)

    def writer(t: int) -> None:
        rng = np.random.default_rng(t)
        vecs = rng.standard_normal((32, data.DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        mine: list[float] = []
        start.wait()
        end = time.perf_counter() + seconds
        i = 0
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            try:
                stores[t % len(stores)].add(
                    [f"writer {t} note {tag} {i}"],
                    record_type="memory",
                    user_ids=f"writer{t:02d}",
                    embeddings=[vecs[i % 32]],
                )
                mine.append(time.perf_counter() - t0)
            except Exception as exc:  # counted, and a sample reported
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
            i += 1
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(writers)]
    for th in threads:
        th.start()
    start.wait()
    t0 = time.perf_counter()
    for th in threads:
        th.join()
    return lat, errors, time.perf_counter() - t0


def _writes(
    by: dict[str, list[Any]], writers: int, seconds: float, rounds: int, tag: str = ""
) -> dict[str, Any]:
    """Each engine's ``writers`` threads writing through the stores ``by[engine]``."""
    out: dict[str, Any] = {}
    for e in ENGINES:
        _write_window(by[e], e, writers, 1.0, f"{tag}warm")
    acc: dict[str, dict[str, Any]] = {e: {"lat": [], "errors": [], "wall": 0.0} for e in ENGINES}
    for r in range(rounds):
        order = ENGINES if r % 2 == 0 else tuple(reversed(ENGINES))
        for e in order:
            lat, errors, wall = _write_window(by[e], e, writers, seconds, f"{tag}r{r}")
            acc[e]["lat"] += lat
            acc[e]["errors"] += errors
            acc[e]["wall"] += wall
    for e in ENGINES:
        a = acc[e]
        out[e] = {
            "writes": len(a["lat"]),
            "writes_per_s": len(a["lat"]) / a["wall"],
            "latency": percentiles(a["lat"]),
            "errors": len(a["errors"]),
            "error_sample": a["errors"][:3],
        }
        log(f"{writers} writers on {e}: {out[e]['writes_per_s']:.0f} writes/s")
    return out


def _md(res: dict[str, Any]) -> list[str]:
    w = res["writes"]
    lines = [
        "# A Citus cluster beside one PostgreSQL server",
        "",
        f"{res['started']}, `{res['command']}`, "
        f"{', '.join(f'{k} {v}' for k, v in res['machine'].items())}. "
        f"{res['n']:,} records over {res['users']} users in each store (precomputed vectors, "
        f"384 dimensions). *single*: one pgserver PostgreSQL 16. *citus*: a store created on "
        "the coordinator of a Citus 13.2.2 cluster (coordinator + 2 workers, 4 shards a "
        f"table; layout `{res['layout']}`). **All four servers run on this one machine and "
        "share its cores: this measures the cluster's overhead (layout, coordinator hop), "
        "not its scale.** Load average (1 min) "
        f"{res.get('load_before', float('nan')):.2f} before the rows, "
        f"{res.get('load_after', float('nan')):.2f} after. Load time (batches of 1,000; single "
        "includes building its HNSW index, which Citus has none of): single "
        f"{res['load_s']['single']:.1f} s, citus {res['load_s']['citus']:.1f} s.",
        "",
        f"One-user searches (`exact_user_match=True`, top {K}), {res['calls']} queries, the "
        "engines interleaved query by query. On Citus a vector search ranks the user's rows "
        "exactly on their shard (no HNSW); the single server uses its user cache / index.",
        "",
        "| search | single p50 ms | citus p50 ms | citus / single | single p95 ms "
        "| citus p95 ms | top-10 overlap |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in res["searches"]:
        a, b = row["single"], row["citus"]
        lines.append(
            f"| {row['kind']} | {a['p50']:.2f} | {b['p50']:.2f} | {b['p50'] / a['p50']:.2f}x "
            f"| {a['p95']:.2f} | {b['p95']:.2f} | {row['overlap']:.2f} |"
        )
    lines += [
        "",
        f"{res['writers']} writer threads in one process, each `store.add` of one memory for "
        f"its own user, {res['rounds']} windows of {res['seconds']:.0f} s per engine "
        "(alternating). On Citus an ordinary write holds the store's lock shared and its "
        "users' advisory locks (different users' writes run beside each other). **One store**: "
        "the threads share its write queue (group commit: one transaction at a time, of every "
        "queued write). **A store each**: each thread its own store (its own queue, as API "
        "nodes are; the stores of one process share a pool of 8 connections), so transactions "
        "of different users run at once.",
        "",
    ]
    lines += _write_table("one store", w)
    if "writes_apart" in res:
        lines += ["", *_write_table("a store each", res["writes_apart"])]
    return lines


def _write_table(title: str, w: dict[str, Any]) -> list[str]:
    s, c = w["single"], w["citus"]
    lines = [
        f"| {title}: engine | writes/s | p50 ms | p95 ms | errors |",
        "|---|---|---|---|---|",
    ]
    for name, x in (("single", s), ("citus", c)):
        lat = x["latency"]
        lines.append(
            f"| {name} | {x['writes_per_s']:.0f} | {lat['p50']:.2f} | {lat['p95']:.2f} "
            f"| {x['errors']} |"
        )
    lines.append(
        f"| citus / single | {c['writes_per_s'] / s['writes_per_s']:.2f}x "
        f"| {c['latency']['p50'] / s['latency']['p50']:.2f}x "
        f"| {c['latency']['p95'] / s['latency']['p95']:.2f}x | |"
    )
    return lines

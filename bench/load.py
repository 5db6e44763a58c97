"""Many processes on one store: a load test and the change-log catch-up (``python -m bench load``).

**Load**: ``processes`` worker processes, each one store (as a web server worker holds one)
with ``writers`` writer threads and ``readers`` reader threads, for ``duration`` seconds, on
SQLite and on PostgreSQL (a pgserver started for the run). Writers alternate a memory
(``store.add``, one record, a precomputed vector) and a message appended to ONE thread shared
by every writer of every process; readers run user-scoped VECTOR searches. Afterwards every
acknowledged id must be stored exactly once, nothing unacknowledged may be stored, and the
shared thread's ``seq_no``s must be exactly 1..M. Reported: writes/s, write and read
latency percentiles, errors.

**Catch-up**: a process holding the index of a 100k-record store searches right after
ANOTHER process wrote 1,000 records (as one transaction, and as 1,000 transactions); the
baseline measured in the same run is a full rebuild of the index, which is what every
foreign commit cost before the change log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tools.runtime_dir import ensure_runtime_dir

from bench.common import log, machine, percentiles

DIM = 384
USERS = 100
RESULTS = Path(__file__).resolve().parent / "results"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    return env


def run_processes(
    module: str, kind: str, cfgs: list[dict[str, Any]], timeout: float
) -> list[dict[str, Any]]:
    """One ``python -m <module> <kind> <cfg>`` process per config, all at once; each one's
    results, read from the JSON file its config names (``cfg["out"]``)."""
    running = [
        subprocess.Popen([sys.executable, "-m", module, kind, json.dumps(cfg)], env=_env())
        for cfg in cfgs
    ]
    for proc in running:
        proc.wait(timeout=timeout)
    return [json.loads(Path(cfg["out"]).read_text()) for cfg in cfgs]


def _open(engine: str, conn: str, policy: str = "require_existing") -> Any:
    from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, SQLiteMemoryStore

    cls = SQLiteMemoryStore if engine == "sqlite" else PostgresMemoryStore
    return cls(None, conn, schema_policy=SchemaPolicy(policy), vector_dim=DIM)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def prefill(engine: str, conn: str, n: int) -> float:
    """Create the store and add ``n`` records over ``USERS`` users; returns seconds."""
    store = _open(engine, conn, "create_if_necessary")
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for start in range(0, n, 2000):
        size = min(2000, n - start)
        store.add(
            ["prefill record"] * size,
            record_type="memory",
            user_ids=[f"u{(start + i) % USERS}" for i in range(size)],
            embeddings=_unit(rng, size),
        )
    seconds = time.perf_counter() - t0
    if engine == "sqlite":  # build the index once and leave a snapshot for the workers
        store.search(None, 10, query_vector=_unit(rng, 1)[0], user_id="u0", exact_user_match=True)
    store.close()
    return seconds


# ---------------------------------------------------------------------------- load worker


def worker_main(cfg: dict[str, Any]) -> None:
    """One process: ``writers`` + ``readers`` threads on one store, results to cfg["out"]."""
    store = _open(cfg["engine"], cfg["conn"])
    proc = cfg["proc"]
    tag = cfg["tag"]
    rng = np.random.default_rng(100 + proc)
    q = _unit(rng, 1)[0]
    # Warm, as a service is before it takes traffic: every user the readers will ask for,
    # twice (SQLite builds its index at the first; PostgreSQL caches a user at the second).
    for _ in range(2):
        for u in range(USERS):
            store.search(None, 10, query_vector=q, user_id=f"u{u}", exact_user_match=True)
    start, end = cfg["start_at"], cfg["start_at"] + cfg["duration"]
    out: dict[str, Any] = {"memories": [], "messages": [], "write_s": [], "read_s": []}
    errors: list[str] = []
    lock = threading.Lock()

    def writer(t: int) -> None:
        local = np.random.default_rng(1000 * proc + t)
        vecs = _unit(local, 256)

        def write(i: int) -> tuple[list[str], list[str]]:
            rid = f"{tag}w{proc}-{t}-{i}"
            if i % 2 == 0:
                store.add(
                    [f"memory {rid}"],
                    record_type="memory",
                    record_ids=rid,
                    user_ids=f"u{(proc * 7 + t + i) % USERS}",
                    embeddings=[vecs[i % 256]],
                )
                return [rid], []
            store.add(
                [f"message {rid}"],
                record_type="message",
                record_ids=rid,
                thread_ids=f"shared-{tag}",
                roles="user",
                user_ids="u0",
                embeddings=[vecs[i % 256]],
            )
            return [], [rid]

        _write_loop(write, start, end, out, errors, lock)

    def reader(t: int) -> None:
        queries = _unit(np.random.default_rng(5000 * proc + t), 64)

        def search(i: int) -> None:
            hits = store.search(
                None,
                10,
                query_vector=queries[i % 64],
                user_id=f"u{i % USERS}",
                exact_user_match=True,
            )
            assert all(np.isfinite(d) for _, d in hits)

        _read_loop(search, start, end, cfg.get("read_rate"), out, errors, lock)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(cfg["writers"])]
    threads += [threading.Thread(target=reader, args=(t,)) for t in range(cfg["readers"])]
    while time.time() < start:
        time.sleep(0.001)
    cpu0 = time.process_time()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out["cpu_s"] = time.process_time() - cpu0
    if cfg["engine"] == "sqlite":
        # Once every process stopped writing, this process's index (kept by its own writes
        # and catch-ups alone) must hold exactly the database's vectors.
        time.sleep(max(0.0, end + 3.0 - time.time()))
        store.search(None, 1, query_vector=q, user_id="u0", exact_user_match=True)
        d = store._dialect
        rows = d.execute(f"SELECT count(*) FROM {d.tables.chunks} WHERE vector IS NOT NULL")
        out["index_exact"] = len(store._keeper.index) == int(rows[0][0])
    store.close()
    out["errors"] = errors
    Path(cfg["out"]).write_text(json.dumps(out))


def _write_loop(
    write: Callable[[int], tuple[list[str], list[str]]],
    start: float,
    end: float,
    out: dict[str, Any],
    errors: list[str],
    lock: threading.Lock,
) -> None:
    """One writer thread: ``write(i)`` back to back from ``start`` to ``end``, each returning
    the (memory, message) ids it wrote; those ids to ``out["memories"]`` / ``out["messages"]``,
    latencies to ``out["write_s"]``, failures to ``errors``."""
    memories: list[str] = []
    messages: list[str] = []
    lat = []
    i = 0
    while time.time() < start:
        time.sleep(0.001)
    while time.time() < end:
        t0 = time.perf_counter()
        try:
            wrote_memories, wrote_messages = write(i)
            memories += wrote_memories
            messages += wrote_messages
            lat.append(time.perf_counter() - t0)
        except Exception as exc:
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
        i += 1
    with lock:
        out["memories"] += memories
        out["messages"] += messages
        out["write_s"] += lat


def _read_loop(
    search: Any,
    start: float,
    end: float,
    rate: float | None,
    out: dict[str, Any],
    errors: list[str],
    lock: threading.Lock,
) -> None:
    """One reader thread: ``search(i)`` from ``start`` to ``end``, paced at ``rate`` searches
    a second (None: back to back); latencies to ``out["read_s"]``, failures to ``errors``."""
    lat = []
    i = 0
    while time.time() < start:
        time.sleep(0.001)
    pace = 1.0 / rate if rate else 0.0
    due = start
    while time.time() < end:
        if pace:  # a paced reader: one search every ``pace`` seconds
            due += pace
            time.sleep(max(0.0, due - time.time()))
        t0 = time.perf_counter()
        try:
            search(i)
            lat.append(time.perf_counter() - t0)
        except Exception as exc:
            with lock:
                errors.append(f"read {type(exc).__name__}: {exc}"[:200])
        i += 1
    with lock:
        out["read_s"] += lat


def _tally(
    engine: str,
    cfg: dict[str, Any],
    parts: list[dict[str, Any]],
    stored: list[str],
    seqs_by_thread: list[list[int]],
) -> dict[str, Any]:
    """One load row from the worker processes' ``parts`` and what the database holds after
    them: rates, latencies, errors, and every acknowledged write checked (stored once, none
    unacknowledged, each shared thread's ``seq_no``s exactly 1..M)."""
    writes = [s for part in parts for s in part["write_s"]]
    reads = [s for part in parts for s in part["read_s"]]
    errors = [e for part in parts for e in part["errors"]]
    acked = {m for part in parts for m in part["memories"] + part["messages"]}
    cpu_s = sum(part["cpu_s"] for part in parts)
    return {
        "engine": engine,
        "processes": cfg["processes"],
        "writer_threads": cfg["processes"] * cfg["writers"],
        "reader_threads": cfg["processes"] * cfg["readers"],
        "read_rate": cfg.get("read_rate"),
        "duration_s": cfg["duration_s"],
        "prefill": cfg["prefill"],
        "writes": len(writes),
        "writes_per_s": len(writes) / cfg["duration_s"],
        "client_cpu_s": cpu_s,
        "writes_per_client_cpu_s": len(writes) / cpu_s if cpu_s else None,
        "write_ms": percentiles(writes),
        "reads": len(reads),
        "reads_per_s": len(reads) / cfg["duration_s"],
        "read_ms": percentiles(reads),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "lost": len(acked - set(stored)),
        "unacknowledged_stored": len(set(stored) - acked),
        "duplicated": len(stored) - len(set(stored)),
        "shared_thread_messages": sum(len(v) for v in seqs_by_thread),
        "seq_no_exact": all(sorted(v) == list(range(1, len(v) + 1)) for v in seqs_by_thread),
        "indexes_exact": all(part.get("index_exact", True) for part in parts),
    }


def mix_worker_main(cfg: dict[str, Any]) -> None:
    """One process of the client-level mix: ``writers`` threads, half on the process's
    client, half each on a client (and store, and connection) of its own, cycling through
    ``thread.add_messages`` (two messages into one of four threads every process shares),
    ``client.add_memory`` and a small ``store.add`` batch; ``readers`` threads search
    through the client. Users as in :func:`worker_main`'s rows, which this mix is compared
    with: memories spread over the ``USERS`` prefilled users, the shared threads' messages
    under one user, searches rotating over the users."""
    from bench.doubles import HashEmbedder
    from oracleagentmemory.core import OracleAgentMemory

    def client_of() -> tuple[Any, Any]:
        from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, SQLiteMemoryStore

        cls = SQLiteMemoryStore if cfg["engine"] == "sqlite" else PostgresMemoryStore
        store = cls(HashEmbedder(DIM), cfg["conn"], schema_policy=SchemaPolicy.REQUIRE_EXISTING)
        return store, OracleAgentMemory(store=store)

    proc, tag = cfg["proc"], cfg["tag"]
    shared = client_of()
    # Warm, as a service is before it takes traffic: the first search builds the process's
    # index of the whole store (seconds at 100k, four processes at once), not a write's cost.
    shared[1].search("warm", user_id="u0", max_results=1)
    start, end = cfg["start_at"], cfg["start_at"] + cfg["duration"]
    out: dict[str, Any] = {"memories": [], "messages": [], "write_s": [], "read_s": []}
    errors: list[str] = []
    lock = threading.Lock()
    own = {t: client_of() for t in range(cfg["writers"]) if t % 2}

    def writer(t: int) -> None:
        store, client = own.get(t, shared)
        threads = [client.get_thread(f"mix-{tag}-{k}") for k in range(4)]

        def write(i: int) -> tuple[list[str], list[str]]:
            rid = f"{tag}x{proc}-{t}-{i}"
            if i % 3 == 0:
                thread = threads[(proc + t + i) % 4]
                thread.add_messages(
                    [
                        {"role": "user", "content": f"question {rid}", "id": f"{rid}a"},
                        {"role": "assistant", "content": f"answer {rid}", "id": f"{rid}b"},
                    ]
                )
                return [], [f"{rid}a", f"{rid}b"]
            user = f"u{(proc * 7 + t + i) % USERS}"  # memories spread as in `load`'s rows
            if i % 3 == 1:
                client.add_memory(f"memory {rid}", user_id=user, memory_id=rid)
                return [rid], []
            ids = [f"{rid}-{j}" for j in range(3)]
            store.add(
                [f"note {x}" for x in ids], record_type="memory", record_ids=ids, user_ids=user
            )
            return ids, []

        _write_loop(write, start, end, out, errors, lock)

    def reader(t: int) -> None:
        client = shared[1]

        def search(i: int) -> None:
            client.search(f"memory {tag}x{proc}", user_id=f"u{i % USERS}", max_results=10)

        _read_loop(search, start, end, cfg.get("read_rate"), out, errors, lock)

    workers = [threading.Thread(target=writer, args=(t,)) for t in range(cfg["writers"])]
    workers += [threading.Thread(target=reader, args=(t,)) for t in range(cfg["readers"])]
    while time.time() < start:
        time.sleep(0.001)
    cpu0 = time.process_time()
    for th in workers:
        th.start()
    for th in workers:
        th.join()
    out["cpu_s"] = time.process_time() - cpu0
    for store, client in [*own.values(), shared]:
        client.close()
        store.close()
    out["errors"] = errors
    Path(cfg["out"]).write_text(json.dumps(out))


def mix(engine: str, conn: str, work: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """The client-level mix in ``processes`` processes, then every acknowledged write checked
    (each shared thread's seq_no 1..M)."""
    from bench.doubles import HashEmbedder
    from oracleagentmemory.core import OracleAgentMemory

    tag = cfg["tag"]
    store = _open(engine, conn)
    store.close()
    cls = type(store)
    store = cls(HashEmbedder(DIM), conn)
    client = OracleAgentMemory(store=store)
    for k in range(4):
        client.create_thread(thread_id=f"mix-{tag}-{k}", user_id="u-mix")
    client.close()
    store.close()
    start_at = time.time() + cfg["warmup_s"]
    wcfgs = [
        {
            **cfg,
            "engine": engine,
            "conn": conn,
            "proc": p,
            "start_at": start_at,
            "duration": cfg["duration_s"],
            "out": str(work / f"mix-{engine}-{tag}-{p}.json"),
        }
        for p in range(cfg["processes"])
    ]
    parts = run_processes("bench.load", "mix", wcfgs, cfg["warmup_s"] + cfg["duration_s"] + 600)
    store = _open(engine, conn)
    d = store._dialect
    rows = d.execute(
        f"SELECT id, family, thread_id, seq_no FROM {d.tables.records} WHERE id LIKE ?",
        [f"{tag}x%"],
    )
    store.close()
    by_thread: dict[str, list[int]] = {}
    for _, family, thread, seq in rows:
        if family == "message":
            by_thread.setdefault(str(thread), []).append(int(seq))
    row = _tally(engine, cfg, parts, [r[0] for r in rows], list(by_thread.values()))
    return {**row, "mix": "client calls"}


def load(engine: str, conn: str, work: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """Run the worker processes, then check every acknowledged write."""
    start_at = time.time() + cfg["warmup_s"]
    wcfgs = [
        {
            "engine": engine,
            "conn": conn,
            "proc": p,
            "writers": cfg["writers"],
            "readers": cfg["readers"],
            "start_at": start_at,
            "duration": cfg["duration_s"],
            "out": str(work / f"{engine}-{cfg['tag']}-{p}.json"),
            "tag": cfg["tag"],
            "read_rate": cfg.get("read_rate"),
        }
        for p in range(cfg["processes"])
    ]
    parts = run_processes("bench.load", "worker", wcfgs, cfg["warmup_s"] + cfg["duration_s"] + 600)
    store = _open(engine, conn)
    d = store._dialect
    rows = d.execute(
        f"SELECT id, family, seq_no FROM {d.tables.records} WHERE id LIKE ?",
        [f"{cfg['tag']}w%"],
    )
    store.close()
    seqs = [int(r[2]) for r in rows if r[1] == "message"]
    return _tally(engine, cfg, parts, [r[0] for r in rows], [seqs])


# ---------------------------------------------------------------------------- catch-up


def foreign_main(cfg: dict[str, Any]) -> None:
    """Another process: write ``count`` records, as one transaction or one per record."""
    store = _open("sqlite", cfg["conn"])
    rng = np.random.default_rng(cfg["seed"])
    vecs = _unit(rng, cfg["count"])
    users = [f"u{i % USERS}" for i in range(cfg["count"])]
    if cfg["one_transaction"]:
        store.add(["foreign"] * cfg["count"], record_type="memory", user_ids=users, embeddings=vecs)
    else:
        for vec, user in zip(vecs, users, strict=True):
            store.add(["foreign"], record_type="memory", user_ids=user, embeddings=[vec])
    store.close()


def catch_up(conn: str, n: int, count: int) -> dict[str, Any]:
    """Search latency right after another process wrote ``count`` records, against a full
    rebuild and a plain search, all in this process."""
    store = _open("sqlite", conn)
    rng = np.random.default_rng(7)
    queries = _unit(rng, 50)

    def search(i: int) -> float:
        t0 = time.perf_counter()
        store.search(None, 10, query_vector=queries[i % 50], user_id="u1", exact_user_match=True)
        return time.perf_counter() - t0

    for i in range(20):
        search(i)
    plain = [search(i) for i in range(30)]

    def foreign(one: bool, how_many: int, seed: int) -> None:
        cfg = {"conn": conn, "count": how_many, "one_transaction": one, "seed": seed}
        subprocess.run(
            [sys.executable, "-m", "bench.load", "foreign", json.dumps(cfg)],
            env=_env(),
            check=True,
            timeout=600,
        )

    foreign(True, 10, 1)  # the first catch-up of a process also imports and warms code paths
    search(0)
    rows: dict[str, Any] = {
        "n": len(store._keeper.index),
        "records": count,
        "plain_search_ms": percentiles(plain),
    }
    for label, one in (("one_transaction", True), ("one_per_record", False)):
        times = []
        for rep in range(3):
            index = store._keeper.index
            foreign(one, count, 100 + rep + (50 if one else 0))
            times.append(search(rep))
            assert store._keeper.index is index, "the index was rebuilt, not caught up"
        rows[f"catch_up_{label}_ms"] = [x * 1e3 for x in times]
    rebuilds = []
    for rep in range(3):  # what a foreign commit cost before: the index read again from SQL
        t0 = time.perf_counter()
        store._keeper.index = store._keeper.build()
        rebuilds.append(time.perf_counter() - t0 + search(rep))
    rows["full_rebuild_ms"] = [x * 1e3 for x in rebuilds]
    store.close()
    return rows


# ---------------------------------------------------------------------------- report


def _pace(row: dict[str, Any]) -> str:
    rate = row.get("read_rate")
    return f"at {rate:.0f}/s each" if rate else "free-running"


def _md(res: dict[str, Any]) -> str:
    lines = [
        "# Many processes on one store",
        "",
        f"Machine: {res['machine'].get('CPU', '?')}, {res['machine'].get('cores', '?')} cores, "
        f"{res['machine'].get('RAM', '?')}, SQLite {res['machine'].get('SQLite', '?')}; shared "
        f"with other jobs while this ran (load average {res.get('load_average', '?')} at the "
        "start), so figures are indicative.",
        f"Run: `{res['command']}`, {res['started']}, {res['duration_s']:.0f} s.",
        "",
    ]
    cu = res.get("catch_up")
    if cu:
        best = min(cu["catch_up_one_transaction_ms"])
        lines += [
            "## Catch-up on another process's writes",
            "",
            f"A process holding the index of {cu['n']:,} records searches right after another "
            f"process wrote {cu['records']:,} records (best of 3; all 3 listed):",
            "",
            "| what | ms |",
            "|---|---|",
            f"| plain user-scoped search (p50) | {cu['plain_search_ms']['p50']:.2f} |",
            "| catch-up + search, 1,000 records in one transaction | "
            + " / ".join(f"{x:.1f}" for x in cu["catch_up_one_transaction_ms"])
            + " |",
            "| catch-up + search, 1,000 single-record transactions | "
            + " / ".join(f"{x:.1f}" for x in cu["catch_up_one_per_record_ms"])
            + " |",
            "| baseline: full index rebuild + search (what a foreign commit cost before) | "
            + " / ".join(f"{x:.0f}" for x in cu["full_rebuild_ms"])
            + " |",
            "",
            f"Catch-up is x{min(cu['full_rebuild_ms']) / best:.0f} faster than the rebuild.",
            "",
        ]
    if res.get("load"):
        lines += [
            "## Load: writers and readers in several processes",
            "",
            "| engine | prefill | processes x writer threads (+ reader threads) | s | writes/s | "
            "writes per client CPU-s | write p50 / p99 ms | reads/s | read p50 / p99 ms | "
            "errors | lost | duplicated | unacked stored | shared-thread seq_no 1..M | "
            "every process's index = database |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in res["load"]:
            lines.append(
                f"| {r['engine']}{' (client mix)' if r.get('mix') else ''} | {r['prefill']:,} |"
                f" {r['processes']} x "
                f"{r['writer_threads'] // r['processes']} (+{r['reader_threads']} "
                f"{_pace(r)}) | "
                f"{r['duration_s']} | {r['writes_per_s']:.0f} | "
                f"{r['writes_per_client_cpu_s'] or 0:.0f} | {r['write_ms']['p50']:.1f} / "
                f"{r['write_ms']['p99']:.1f} | {r['reads_per_s']:.0f} | "
                f"{r['read_ms']['p50']:.1f} / {r['read_ms']['p99']:.1f} | {r['errors']} | "
                f"{r['lost']} | {r['duplicated']} | {r['unacknowledged_stored']} | "
                f"{'yes' if r['seq_no_exact'] else 'NO'} ({r['shared_thread_messages']:,}) | "
                f"{('yes' if r['indexes_exact'] else 'NO') if r['engine'] == 'sqlite' else 'n/a'} |"
            )
        lines += [
            "",
            "Writes are single-record `store.add` calls, alternating a memory and a message "
            "appended to one thread shared by every writer; readers run user-scoped VECTOR "
            "searches, either paced (a fixed number of searches a second each, as a service's "
            "readers would be) or free-running (back to back: they take whatever CPU the "
            "writers leave, so reads and writes trade off). *Writes per client CPU-s* divides "
            "the writes by the CPU time the client processes used, readers included (SQLite "
            "runs inside them; PostgreSQL's server time is not counted): a figure less "
            "sensitive to other jobs on a shared machine. *Every process's index = database*: "
            "once all writers stopped, each process's in-memory index, kept by its own writes "
            "and change-log catch-ups alone, held exactly the database's vectors.",
            "",
            "*Client mix* rows write the way a web app does: each writer thread cycles through "
            "`thread.add_messages` (two messages into one of four threads every process "
            "shares), `client.add_memory` and a 3-record `store.add`; half the threads use "
            "their process's client, half a client (store, connection) of their own; one "
            "paced reader per process searches through the client. A write is one call. "
            "Users as in the single-record rows: memories over the prefilled users, the "
            "shared threads' messages under one user, searches rotating over the users. "
            "Every process is warmed (its index built, its users searched) before the clock "
            "starts.",
            "",
        ]
    for note in res.get("notes", []):
        lines.append(f"- {note}")
    return "\n".join(lines) + "\n"


def main(
    *,
    duration_s: int = 30,
    processes: int = 4,
    writers: int = 4,
    readers: int = 1,
    read_rate: float = 50.0,
    sqlite_prefill: int = 100_000,
    postgres_prefill: int = 10_000,
    engines: tuple[str, ...] = ("sqlite", "postgres"),
    name: str = "load",
) -> dict[str, Any]:
    started = time.time()
    t0 = time.perf_counter()
    res: dict[str, Any] = {
        "machine": machine(),
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "load": [],
        "notes": [],
        "load_average": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    cfg = {"processes": processes, "writers": writers, "readers": readers, "duration_s": duration_s}
    from oracleagentmemory.core.store.vectors import _ann_index
    from oracleagentmemory.core.store.vectors._vector_index import ANN_MIN_ROWS

    if _ann_index.available():
        res["notes"].append(
            "SQLite's approximate index (extra [ann], hnswlib) is installed and on: a scope of "
            f"{ANN_MIN_ROWS:,}+ rows (here u0, whose shared thread grows past it) "
            "makes every process build and then maintain its own HNSW graph of the store"
        )
    else:
        res["notes"].append(
            "SQLite's approximate index is off (extra [ann] not installed, or "
            f"{_ann_index.ENV_SWITCH}=off): every search is exact"
        )
    with tempfile.TemporaryDirectory(prefix="oam-load-") as tmp:
        work = Path(tmp)
        if "sqlite" in engines:
            path = str(work / "load.db")
            log(f"sqlite: prefilling {sqlite_prefill:,} records")
            seconds = prefill("sqlite", path, sqlite_prefill)
            res["notes"].append(f"sqlite prefill: {sqlite_prefill:,} records in {seconds:.1f} s")
            log("sqlite: catch-up rows")
            res["catch_up"] = catch_up(path, sqlite_prefill, 1000)
            log("sqlite: client mix")
            res["load"].append(
                mix(
                    "sqlite",
                    path,
                    work,
                    {
                        **cfg,
                        "tag": "c",
                        "read_rate": read_rate,
                        "prefill": sqlite_prefill,
                        "warmup_s": 15,
                    },
                )
            )
            for tag, rate in (("s", read_rate), ("f", None)):
                log(f"sqlite: load, readers {'paced' if rate else 'free-running'}")
                res["load"].append(
                    load(
                        "sqlite",
                        path,
                        work,
                        {
                            **cfg,
                            "tag": tag,
                            "read_rate": rate,
                            "prefill": sqlite_prefill,
                            "warmup_s": 15,
                        },
                    )
                )
        if "postgres" in engines:
            try:
                import pgserver
            except ImportError as exc:
                res["notes"].append(f"postgres skipped: {exc}")
            else:
                ensure_runtime_dir()
                server = pgserver.get_server(str(work / "pg"), cleanup_mode="stop")
                try:
                    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
                    url = server.get_uri()
                    log(f"postgres: prefilling {postgres_prefill:,} records")
                    res["notes"].append(
                        f"postgres prefill: {postgres_prefill:,} records in "
                        f"{prefill('postgres', url, postgres_prefill):.1f} s"
                    )
                    log("postgres: client mix")
                    res["load"].append(
                        mix(
                            "postgres",
                            url,
                            work,
                            {
                                **cfg,
                                "tag": "k",
                                "read_rate": read_rate,
                                "prefill": postgres_prefill,
                                "warmup_s": 10,
                            },
                        )
                    )
                    for tag, rate in (("p", read_rate), ("q", None)):
                        log(f"postgres: load, readers {'paced' if rate else 'free-running'}")
                        res["load"].append(
                            load(
                                "postgres",
                                url,
                                work,
                                {
                                    **cfg,
                                    "tag": tag,
                                    "read_rate": rate,
                                    "prefill": postgres_prefill,
                                    "warmup_s": 10,
                                },
                            )
                        )
                finally:
                    server.cleanup()
        if "citus" in engines:
            # The same load on a store that distributes itself on a Citus coordinator with
            # two workers, started here (Citus built from the vendored source, cached).
            root = str(Path(__file__).resolve().parent.parent)
            if root not in sys.path:
                sys.path.insert(0, root)
            from tools import citus_cluster

            ensure_runtime_dir()
            cluster = citus_cluster.CitusCluster(work / "citus", citus_cluster.build(), workers=2)
            try:
                url = cluster.start()
                log(f"citus: prefilling {postgres_prefill:,} records")
                res["notes"].append(
                    f"citus prefill: {postgres_prefill:,} records in "
                    f"{prefill('citus', url, postgres_prefill):.1f} s"
                )
                log("citus: load, readers paced")
                res["load"].append(
                    load(
                        "citus",
                        url,
                        work,
                        {
                            **cfg,
                            "tag": "c",
                            "read_rate": read_rate,
                            "prefill": postgres_prefill,
                            "warmup_s": 10,
                        },
                    )
                )
            finally:
                cluster.stop()
    res["started"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
    res["duration_s"] = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))
    text = _md(res)
    (RESULTS / f"{name}.md").write_text(text)
    print(text)
    return res


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker_main(json.loads(sys.argv[2]))
    elif sys.argv[1] == "mix":
        mix_worker_main(json.loads(sys.argv[2]))
    elif sys.argv[1] == "foreign":
        foreign_main(json.loads(sys.argv[2]))
    else:
        raise SystemExit(f"unknown command {sys.argv[1]!r}")

"""Command line of the benchmark harness: ``python -m bench --help``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import data, report
from bench.common import library_state, log, machine

RESULTS = Path(__file__).resolve().parent / "results"

PROFILES: dict[str, dict[str, Any]] = {
    # make bench-quick: under 3 minutes on a 2-core machine.
    "quick": {
        "sizes": [10_000, 100_000],
        "peer_sizes": {
            "sqlite-vec": [10_000],
            "sqlite-vec-partition": [10_000],
            "chromadb": [10_000],
            "lancedb": [10_000],
        },
        "budget_s": 1.5,
        "peer_budget_s": 1.5,
        "client_cap": 20_000,
        "chat_calls": 300,
        "locomo_conversations": 2,
        "pruning_questions": 10,
        "ours_timeout_s": 300,
        "peer_timeout_s": 120,
    },
    # make bench: the full run (about 15 minutes here).
    "full": {
        "sizes": [10_000, 100_000, 1_000_000],
        "peer_sizes": {
            "sqlite-vec": [10_000, 100_000],
            "sqlite-vec-partition": [10_000, 100_000],
            "chromadb": [10_000, 100_000],
            "lancedb": [10_000, 100_000],
        },
        "budget_s": 4.0,
        "peer_budget_s": 4.0,
        "client_cap": 100_000,
        "chat_calls": 1000,
        "locomo_conversations": None,
        "pruning_questions": 40,
        "ours_timeout_s": 3600,  # the HNSW graph at 1M takes about 10 minutes on 2 cores
        "peer_timeout_s": 400,
    },
}


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("ANONYMIZED_TELEMETRY", "False")
    return env


def run_worker(
    system: str, folder: Path, work: Path, cfg: dict[str, Any], timeout: float
) -> tuple[dict[str, Any] | None, str | None]:
    """One system at one size in its own process; (results, None) or (None, why not)."""
    out = work / f"{system}.json"
    cmd = [sys.executable, "-m", "bench", "worker", system, str(folder), str(work), str(out)]
    cmd.append(json.dumps(cfg))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, timeout=timeout, env=_env(), stdout=subprocess.PIPE, text=True)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s (time bound of this run)"
    if proc.returncode != 0 or not out.exists():
        return (
            None,
            f"worker failed (exit {proc.returncode}) after {time.perf_counter() - t0:.0f} s",
        )
    with open(out) as f:
        return json.load(f), None


def speed(profile: dict[str, Any], work_root: Path, only_peers: list[str] | None) -> dict[str, Any]:
    from bench import peers

    res: dict[str, Any] = {
        "ingest": [],
        "search": [],
        "resources": [],
        "reopen": [],
        "notes": [],
        "sizes": profile["sizes"],
    }
    peer_names = [p for p in peers.PEERS if only_peers is None or p in only_peers]
    reasons = {p: peers.available(p) for p in peer_names}
    for p, why in reasons.items():
        if why:
            res["notes"].append(f"peer {p} skipped: {why}")
            log(f"peer {p} skipped: {why}")
    for n in profile["sizes"]:
        folder = work_root / f"data-{n}"
        t0 = time.perf_counter()
        log(f"== N = {n:,}: generating seeded data and exact float64 ground truth")
        corpus = data.generate(n)
        data.save(corpus, folder)
        for scope, arr in data.ground_truth(corpus).items():
            import numpy as np

            np.save(folder / f"gt_{scope.replace('+', '_')}.npy", arr)
        del corpus
        log(f"   data ready in {time.perf_counter() - t0:.1f} s")
        cfg = {
            "budget_s": profile["budget_s"],
            "client_cap": profile["client_cap"],
            "chat_calls": profile["chat_calls"],
        }
        work = work_root / f"ours-{n}"
        out, why = run_worker("ours", folder, work, cfg, profile["ours_timeout_s"])
        if out is None:
            res["notes"].append(f"ours at N={n:,}: {why}")
        else:
            _merge(res, out)
        shutil.rmtree(work, ignore_errors=True)
        for p in peer_names:
            if reasons[p] or n not in profile["peer_sizes"].get(p, []):
                continue
            pcfg = {"budget_s": profile["peer_budget_s"]}
            work = work_root / f"{p}-{n}"
            log(f"-- peer {p} at N = {n:,}")
            out, why = run_worker(p, folder, work, pcfg, profile["peer_timeout_s"])
            if out is None:
                res["notes"].append(f"peer {p} at N={n:,}: {why}")
            else:
                _merge(res, out)
            shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    return res


def _merge(res: dict[str, Any], out: dict[str, Any]) -> None:
    for key in ("ingest", "search", "resources", "notes"):
        for row in out.get(key, []):
            if isinstance(row, dict):
                row.setdefault("n", out["n"])
            res[key].append(row)
    if "library" in out:
        res.setdefault("library_by_n", {})[str(out["n"])] = out["library"]
    if "reopen" in out:
        out["reopen"].setdefault("system", "ours")
        res["reopen"].append(out["reopen"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    default_data = str(
        Path(__file__).resolve().parent.parent.parent / "shared/data/locomo/locomo_dev.json"
    )
    for name in ("quick", "full"):
        p = sub.add_parser(name, help=f"the {name} run: speed, peers and LoCoMo")
        p.add_argument("--data", default=default_data, help="LoCoMo JSON file")
        p.add_argument("--name", default=name, help="results file stem under bench/results/")
        p.add_argument("--sizes", type=int, nargs="*", help="override corpus sizes")
        p.add_argument("--peers", nargs="*", help="only these peers")
        p.add_argument("--skip-locomo", action="store_true")
        p.add_argument("--skip-speed", action="store_true")
        p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    p = sub.add_parser("speed", help="speed only")
    p.add_argument("--profile", default="quick", choices=sorted(PROFILES))
    p.add_argument("--sizes", type=int, nargs="*")
    p.add_argument("--peers", nargs="*")
    p.add_argument("--name", default="speed")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    p = sub.add_parser("locomo", help="LoCoMo retrieval quality only")
    p.add_argument("--data", default=default_data)
    p.add_argument("--conversations", type=int, default=None, help="first N conversations")
    p.add_argument("--name", default="locomo")
    p.add_argument(
        "--pruning-questions", type=int, default=40, help="questions of the pruning rows"
    )
    p = sub.add_parser(
        "postgres", help="PostgreSQL beside SQLite and the bare-psycopg floor: writes, searches"
    )
    p.add_argument("--seconds", type=float, default=10.0, help="seconds per writer row")
    p.add_argument("--search-n", type=int, default=100_000, help="records of the search rows")
    p.add_argument("--bulk-n", type=int, default=20_000, help="records of the bulk rows")
    p.add_argument("--budget", type=float, default=3.0, help="seconds per search row and engine")
    p.add_argument("--searches-only", action="store_true", help="no writer or bulk rows")
    p.add_argument("--name", default="postgres", help="results file name")
    p.add_argument(
        "--cold-n",
        type=int,
        nargs="*",
        default=[100_000],
        help="store sizes of the cold-user rows (none: no cold rows; 100000 1000000: the sweep)",
    )
    p.add_argument("--cold-users", type=int, default=200, help="users timed per cold row")
    p.add_argument(
        "--cold-rounds", type=int, default=1, help="cold rows repeated (new server, new load)"
    )
    p.add_argument(
        "--cold-per-user", type=int, nargs="*", default=None, help="records per user (500 2000)"
    )
    p = sub.add_parser("embedders", help="the default embedder's two engines beside the floor")
    p.add_argument("--n", type=int, default=384)
    p = sub.add_parser("cold-start", help="a fresh process: imports, oam --help, first search")
    p.add_argument("--n", type=int, default=100_000, help="records of the store searched")
    p.add_argument("--runs", type=int, default=7, help="fresh processes per row (median)")
    p.add_argument("--import-n", type=int, default=1000, help="messages of the oam import rows")
    p.add_argument("--rounds", type=int, default=3, help="interleaved import/embedder rounds")
    p = sub.add_parser("window-cap", help="LoCoMo recall of window vectors with a capped prefix")
    p.add_argument("--data", type=Path, default=None, help="LoCoMo dev file")
    p = sub.add_parser("window-mix", help="LoCoMo recall of window vectors mixed from own vectors")
    p.add_argument("--data", type=Path, default=None, help="LoCoMo dev file")
    p = sub.add_parser("window-late", help="LoCoMo recall of late-chunked window vectors")
    p.add_argument("--data", type=Path, default=None, help="LoCoMo dev file")
    p = sub.add_parser("row-security", help="PostgreSQL row security: p50 with and without")
    p.add_argument("--n", type=int, default=20_000, help="records in the store")
    p.add_argument("--calls", type=int, default=300, help="calls per row")
    p = sub.add_parser("memory-history", help="history and validity: write and search costs")
    p.add_argument("--n", type=int, default=100_000, help="memories in each store")
    p.add_argument("--calls", type=int, default=300, help="calls per write kind, mode, round")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--engines", nargs="+", default=["sqlite", "postgres"])
    p = sub.add_parser("forget", help="what forgetting costs a delete on SQLite")
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 20_000])
    p.add_argument("--messages", type=int, default=100, help="messages of the deleted thread")
    p.add_argument("--rounds", type=int, default=15)
    p = sub.add_parser("replica", help="PostgreSQL read replica: search p50 and routing")
    p.add_argument("--n", type=int, default=20_000, help="records in the store")
    p.add_argument("--calls", type=int, default=300, help="calls per row")
    p = sub.add_parser("citus", help="Citus cluster beside one PostgreSQL: searches, writers")
    p.add_argument("--n", type=int, default=20_000, help="records in each store")
    p.add_argument("--calls", type=int, default=200, help="queries per search kind")
    p.add_argument("--writers", type=int, default=16, help="writer threads")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per writer window")
    p.add_argument("--rounds", type=int, default=2, help="writer windows per engine")
    p = sub.add_parser("load", help="many processes on one store: load test and catch-up")
    p.add_argument("--duration", type=int, default=30, help="seconds of load per engine")
    p.add_argument("--processes", type=int, default=4)
    p.add_argument("--writers", type=int, default=4, help="writer threads per process")
    p.add_argument("--readers", type=int, default=1, help="reader threads per process")
    p.add_argument("--read-rate", type=float, default=50.0, help="searches/s per paced reader")
    p.add_argument("--sqlite-prefill", type=int, default=100_000)
    p.add_argument("--postgres-prefill", type=int, default=10_000)
    p.add_argument("--engines", nargs="*", default=["sqlite", "postgres", "citus"])
    p.add_argument("--name", default="load")
    p = sub.add_parser("llm", help="memory extraction on LoCoMo through an LLM (make bench-llm)")
    from bench import llm as bench_llm

    bench_llm.add_arguments(p)
    p = sub.add_parser("links", help="automatic links on 50 hand-written pairs of memories")
    from bench import links as bench_links

    bench_links.add_arguments(p)
    p = sub.add_parser("invalid-links", help="INVALID memories from automatic links on LoCoMo")
    from bench import invalid_links as bench_invalid

    bench_invalid.add_arguments(p)
    p = sub.add_parser("side-by-side", help="this tree against another commit, interleaved")
    from bench import side_by_side

    side_by_side.add_arguments(p)
    p = sub.add_parser("memory-peers", help="agent-memory peers (mem0, LangGraph) beside ours")
    from bench import memory_peers

    memory_peers.add_arguments(p)
    p = sub.add_parser("langgraph-cpu", help="our LangGraph adapter's CPU against the client's")
    from bench import langgraph_cpu

    langgraph_cpu.add_arguments(p)
    p = sub.add_parser("hybrid-messages", help="HYBRID beside VECTOR over chat messages")
    from bench import hybrid_messages

    hybrid_messages.add_arguments(p)
    p = sub.add_parser("report", help="re-render bench/results/<name>.md from its JSON")
    p.add_argument("name")
    w = sub.add_parser("worker")
    w.add_argument("system")
    w.add_argument("folder")
    w.add_argument("work")
    w.add_argument("out")
    w.add_argument("cfg")
    r = sub.add_parser("reopen")
    r.add_argument("path")
    r.add_argument("qfile")
    r.add_argument("user")
    r = sub.add_parser("write-one")
    r.add_argument("path")
    r.add_argument("user")
    r = sub.add_parser("peer-reopen")
    r.add_argument("peer")
    r.add_argument("work")
    r.add_argument("qfile")
    r.add_argument("user")
    args = ap.parse_args(argv)
    threads = getattr(args, "threads", None)
    if threads is not None:
        # Workers inherit this; one BLAS thread by default: the floor and the peers' figures
        # in shared/data are single-threaded, and on a shared 2-core machine a second BLAS
        # thread makes latencies jump whenever another process runs.
        for var in BLAS_THREADS:
            os.environ[var] = str(threads)

    if args.cmd == "worker":
        cfg = json.loads(args.cfg)
        if args.system == "ours":
            from bench import speed as sp

            out = sp.run(Path(args.folder), Path(args.work), cfg)
        else:
            from bench import peers

            out = peers.run(args.system, Path(args.folder), Path(args.work), cfg)
        with open(args.out, "w") as f:
            json.dump(out, f)
        return 0
    if args.cmd == "reopen":
        from bench import speed as sp

        sp.reopen_main(args.path, args.qfile, args.user)
        return 0
    if args.cmd == "write-one":
        from bench import speed as sp

        sp.write_one_main(args.path, args.user)
        return 0
    if args.cmd == "peer-reopen":
        from bench import peers

        peers.reopen_main(args.peer, args.work, args.qfile, args.user)
        return 0
    if args.cmd == "links":
        return bench_links.main(args)
    if args.cmd == "invalid-links":
        return bench_invalid.main(args)
    if args.cmd == "postgres":
        from bench import postgres

        postgres.main(
            seconds=args.seconds,
            search_n=args.search_n,
            bulk_n=args.bulk_n,
            budget_s=args.budget,
            writes=not args.searches_only,
            name=args.name,
            cold_n=tuple(args.cold_n),
            cold_users=args.cold_users,
            cold_rounds=args.cold_rounds,
            cold_per_user=tuple(args.cold_per_user) if args.cold_per_user else None,
        )
        return 0
    if args.cmd == "embedders":
        from bench import embedders

        embedders.main(n=args.n)
        return 0
    if args.cmd == "window-cap":
        from bench import window_cap

        window_cap.main(*([args.data] if args.data else []))
        return 0
    if args.cmd == "window-mix":
        from bench import window_mix

        window_mix.main(*([args.data] if args.data else []))
        return 0
    if args.cmd == "window-late":
        from bench import window_late

        window_late.main(*([args.data] if args.data else []))
        return 0
    if args.cmd == "cold-start":
        from bench import cold_start

        cold_start.main(n=args.n, runs=args.runs, import_n=args.import_n, rounds=args.rounds)
        return 0
    if args.cmd == "row-security":
        from bench import row_security

        row_security.main(n=args.n, calls=args.calls)
        return 0
    if args.cmd == "memory-history":
        from bench import memory_history

        memory_history.main(
            n=args.n, calls=args.calls, rounds=args.rounds, engines=tuple(args.engines)
        )
        return 0
    if args.cmd == "forget":
        from bench import forget

        forget.main(sizes=tuple(args.sizes), messages=args.messages, rounds=args.rounds)
        return 0
    if args.cmd == "replica":
        from bench import replica

        replica.main(n=args.n, calls=args.calls)
        return 0
    if args.cmd == "citus":
        from bench import citus

        citus.main(
            n=args.n,
            calls=args.calls,
            writers=args.writers,
            seconds=args.seconds,
            rounds=args.rounds,
        )
        return 0
    if args.cmd == "load":
        from bench import load

        load.main(
            duration_s=args.duration,
            processes=args.processes,
            writers=args.writers,
            readers=args.readers,
            read_rate=args.read_rate,
            sqlite_prefill=args.sqlite_prefill,
            postgres_prefill=args.postgres_prefill,
            engines=tuple(args.engines),
            name=args.name,
        )
        return 0
    if args.cmd == "llm":
        return bench_llm.main(args)
    if args.cmd == "side-by-side":
        return side_by_side.run(args)
    if args.cmd == "memory-peers":
        return memory_peers.run(args)
    if args.cmd == "langgraph-cpu":
        return langgraph_cpu.run(args)
    if args.cmd == "hybrid-messages":
        return hybrid_messages.run(args)
    if args.cmd == "report":
        with open(RESULTS / f"{args.name}.json") as f:
            loaded = json.load(f)
        print(report.write(loaded, RESULTS, args.name))
        return 0

    started = time.time()
    t0 = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine(),
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "library": library_state(),
    }
    if args.cmd in ("quick", "full", "speed"):
        profile = dict(PROFILES[args.cmd if args.cmd != "speed" else args.profile])
        if args.sizes:
            profile["sizes"] = args.sizes
        results["profile"] = profile
    with tempfile.TemporaryDirectory(prefix="oam-bench-") as tmp:
        if args.cmd == "speed" or (args.cmd in ("quick", "full") and not args.skip_speed):
            results["speed"] = speed(profile, Path(tmp), args.peers)
        if args.cmd == "locomo" or (args.cmd in ("quick", "full") and not args.skip_locomo):
            from bench import locomo

            convs = (
                args.conversations
                if args.cmd == "locomo"
                else PROFILES[args.cmd]["locomo_conversations"]
            )
            path = Path(args.data)
            if path.exists():
                pruning = (
                    args.pruning_questions
                    if args.cmd == "locomo"
                    else (PROFILES[args.cmd]["pruning_questions"])
                )
                results["locomo"] = locomo.run(
                    path, convs, Path(tmp) / "locomo", pruning_questions=pruning
                )
                results["locomo"]["library"] = library_state()
            else:
                results["locomo_skipped"] = f"LoCoMo data not found at {path}"
                log(results["locomo_skipped"])
    results["started"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
    results["duration_s"] = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / f"{args.name}.json", "w") as f:
        json.dump(results, f, indent=1, default=str)
    with open(RESULTS / f"{args.name}.json") as f:  # render what was saved (string keys)
        saved = json.load(f)
    print(report.write(saved, RESULTS, args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())

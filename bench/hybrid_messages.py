"""HYBRID beside VECTOR over chat messages, in one run (issue #53).

``python -m bench hybrid-messages [--rounds 3] [--questions 0] [--profile thread|users]``

Two SQLite stores of LoCoMo messages (``bench/memory_workload.py``, the precomputed e5
vectors given, no model runs): *thread*, one user's first 600 turns as one thread; *users*,
10,000 messages over 50 users (one thread each, 5 real conversations and distractor users
holding copies of their turns). Each store is written once, then opened twice, VECTOR and
HYBRID, and every LoCoMo question of the store's real users is asked of both in turn
(``client.search(q, user_id=u, max_results=10, record_types=["message"])``, the agent's
message search) for ``--rounds`` rounds, the two strategies interleaved query by query so
load drifts hit both alike. Rows: p50 / p95 and CPU per search per strategy, HYBRID / VECTOR
of each, R@10 by LoCoMo turn. ``--profile`` prints HYBRID's cProfile on that store instead.
Results: ``bench/results/hybrid-messages.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import memory_workload
from bench.common import RESULTS, log, machine

ROOT = Path(__file__).resolve().parent.parent
THREAD_USER = "u03"
"""The real user whose conversation (629 turns) gives the thread's first 600 messages."""
THREAD_MESSAGES = 600
K = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=int, default=3, help="passes over the questions")
    p.add_argument("--questions", type=int, default=0, help="first N questions (0: all)")
    p.add_argument("--profile", choices=["thread", "users"], default=None)
    p.add_argument("--stores", nargs="*", choices=["thread", "users"], default=["thread", "users"])
    p.add_argument(
        "--engine", choices=["sqlite", "postgres"], default="sqlite", help="(a pgserver)"
    )
    p.add_argument("--name", default="hybrid-messages")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def workload() -> tuple[dict[str, Any], Any, Any]:
    """The 10k / 50-user workload and its vectors (``bench/.cache``, computed once)."""
    work = ROOT / "bench" / ".cache" / "memory-peers-10000-50"
    if not (work / "workload.json").exists():
        memory_workload.write(work, n=10_000, users=50)
    wl = json.loads((work / "workload.json").read_text())
    return wl, np.load(work / "doc_vectors.npy"), np.load(work / "query_vectors.npy")


def corpora(wl: dict[str, Any]) -> dict[str, tuple[list[list[int]], list[dict[str, Any]]]]:
    """Store name -> (ingest batches of record indices, questions)."""
    records = wl["records"]
    first = [i for i, r in enumerate(records) if r["user"] == THREAD_USER][:THREAD_MESSAGES]
    kept = set(first)
    thread_batches = [[i for i in b if i in kept] for b in wl["batches"]]
    dias = {records[i]["dia"] for i in first}
    thread_qs = [
        q for q in wl["questions"] if q["user"] == THREAD_USER and all(g in dias for g in q["gold"])
    ]
    return {
        "thread": ([b for b in thread_batches if b], thread_qs),
        "users": (wl["batches"], wl["questions"]),
    }


def build(path: Path | str, wl: dict[str, Any], batches: list[list[int]], emb: Any) -> None:
    client = open_client(path, emb, "VECTOR")
    threads: dict[str, Any] = {}
    try:
        for batch in batches:
            recs = [wl["records"][i] for i in batch]
            user = recs[0]["user"]
            th = threads.get(user)
            if th is None:
                th = threads[user] = client.create_thread(user_id=user)
            th.add_messages(
                [{"id": r["id"], "role": "user", "content": r["text"]} for r in recs],
                index_texts=[r["text"] for r in recs],
            )
    finally:
        client.close()


def open_client(path: Path | str, emb: Any, strategy: str) -> Any:
    """A client on the SQLite file ``path``, or on the PostgreSQL URI ``path``."""
    from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy, SearchStrategy

    return OracleAgentMemory(
        connection=str(path),
        embedder=emb,
        search_strategy=SearchStrategy[strategy],
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )


def search(client: Any, q: dict[str, Any]) -> list[str]:
    res = client.search(q["text"], user_id=q["user"], max_results=K, record_types=["message"])
    return [r.record.id for r in res]


def measure(
    path: Path | str, emb: Any, qs: list[dict[str, Any]], dia_of: dict[str, str], rounds: int
) -> dict[str, Any]:
    clients = {s: open_client(path, emb, s) for s in ("VECTOR", "HYBRID")}
    lat: dict[str, list[float]] = {s: [] for s in clients}
    cpu: dict[str, float] = {s: 0.0 for s in clients}
    recall: dict[str, list[float]] = {s: [] for s in clients}
    try:
        for q in qs[:10]:  # warm-up
            for c in clients.values():
                search(c, q)
        for rnd in range(rounds):
            for i, q in enumerate(qs):
                order = list(clients) if (i + rnd) % 2 == 0 else list(clients)[::-1]
                for s in order:
                    t, c = time.perf_counter(), time.process_time()
                    ids = search(clients[s], q)
                    lat[s].append((time.perf_counter() - t) * 1e3)
                    cpu[s] += time.process_time() - c
                    if rnd == 0:
                        got = {dia_of[r] for r in ids if r in dia_of}
                        recall[s].append(sum(g in got for g in q["gold"]) / len(q["gold"]))
    finally:
        for c in clients.values():
            c.close()
    out: dict[str, Any] = {}
    for s, ms in lat.items():
        ms.sort()
        out[s] = {
            "p50_ms": statistics.median(ms),
            "p95_ms": ms[min(len(ms) - 1, int(0.95 * len(ms)))],
            "recall_at_10": sum(recall[s]) / len(recall[s]),
            "cpu_us": cpu[s] / len(ms) * 1e6,
            "searches": len(ms),
        }
    out["ratio_p50"] = out["HYBRID"]["p50_ms"] / out["VECTOR"]["p50_ms"]
    out["ratio_p95"] = out["HYBRID"]["p95_ms"] / out["VECTOR"]["p95_ms"]
    out["ratio_cpu"] = out["HYBRID"]["cpu_us"] / out["VECTOR"]["cpu_us"]
    return out


def profile(path: Path | str, emb: Any, qs: list[dict[str, Any]]) -> None:
    client = open_client(path, emb, "HYBRID")
    try:
        for q in qs[:10]:
            search(client, q)
        prof = cProfile.Profile()
        prof.enable()
        for q in qs:
            search(client, q)
        prof.disable()
    finally:
        client.close()
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(45)


def markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "# HYBRID beside VECTOR over chat messages",
        "",
        f"`{res['command']}`",
        "",
        f"Host: {m.get('CPU', '?')}, {m.get('cores', '?')} cores, {m.get('RAM', '?')},"
        f" Python {m.get('Python', '?')}, SQLite {m.get('SQLite', '?')}."
        f" Engine: {res.get('postgres', 'SQLite')}. Load average"
        f" (1/5/15 min) at start {res['load_start']}, at end {res['load_end']}."
        f" {res['rounds']} rounds, VECTOR and HYBRID interleaved query by query on the same"
        " file; user-scoped top-10 message search, precomputed e5 vectors (no model time).",
        "",
        "| store | questions | VECTOR p50 / p95 ms | HYBRID p50 / p95 ms |"
        " HYBRID / VECTOR p50 (p95) | CPU us/search VECTOR / HYBRID (ratio) |"
        " R@10 VECTOR / HYBRID |",
        "|---|---|---|---|---|---|---|",
    ]
    labels = {
        "thread": f"one thread of {THREAD_MESSAGES} messages (one user)",
        "users": "10,000 messages over 50 users",
    }
    for name, r in res["stores"].items():
        v, h = r["VECTOR"], r["HYBRID"]
        lines.append(
            f"| {labels[name]} | {r['questions']} | {v['p50_ms']:.2f} / {v['p95_ms']:.2f} |"
            f" {h['p50_ms']:.2f} / {h['p95_ms']:.2f} |"
            f" **{r['ratio_p50']:.2f}x** ({r['ratio_p95']:.2f}x) |"
            f" {v['cpu_us']:,.0f} / {h['cpu_us']:,.0f} ({r['ratio_cpu']:.2f}x) |"
            f" {v['recall_at_10']:.3f} / {h['recall_at_10']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    wl, docs, qvecs = workload()
    emb = memory_workload.LookupEmbedder(
        {r["text"]: v for r, v in zip(wl["records"], docs, strict=True)},
        {q["text"]: v for q, v in zip(wl["questions"], qvecs, strict=True)},
    )
    dia_of = {r["id"]: r["dia"] for r in wl["records"]}
    res: dict[str, Any] = {
        "command": " ".join(["python -m bench hybrid-messages", *sys.argv[2:]]),
        "machine": machine(),
        "load_start": load_average(),
        "rounds": args.rounds,
        "engine": args.engine,
        "stores": {},
    }
    with tempfile.TemporaryDirectory(prefix="oam-hybrid-messages-") as tmp:
        pg = None
        if args.engine == "postgres":
            from bench.memory_peers import Postgres

            pg = Postgres(Path(tmp) / "pgdata")
            res["postgres"] = f"PostgreSQL {pg.version} (pgserver, on the same cores)"
        try:
            return _run_stores(args, res, wl, emb, dia_of, Path(tmp), pg)
        finally:
            if pg is not None:
                pg.close()


def _run_stores(
    args: argparse.Namespace,
    res: dict[str, Any],
    wl: dict[str, Any],
    emb: Any,
    dia_of: dict[str, str],
    tmp: Path,
    pg: Any,
) -> int:
    for name, (batches, qs) in corpora(wl).items():
        if name != args.profile if args.profile else name not in args.stores:
            continue
        if args.questions:
            qs = qs[: args.questions]
        path: Path | str = tmp / f"{name}.sqlite" if pg is None else pg.database(name)
        log(f"-- {name}: writing {sum(map(len, batches)):,} messages")
        build(path, wl, batches, emb)
        if args.profile:
            profile(path, emb, qs)
            return 0
        log(f"-- {name}: {len(qs)} questions x {args.rounds} rounds")
        r = measure(path, emb, qs, dia_of, args.rounds)
        r["questions"] = len(qs)
        res["stores"][name] = r
        log(f"   VECTOR {r['VECTOR']['p50_ms']:.2f} ms, HYBRID {r['HYBRID']['p50_ms']:.2f} ms")
    res["load_end"] = load_average()
    text = markdown(res)
    print(text)
    out = RESULTS / f"{args.name}.md"
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    log(f"written to {out.relative_to(ROOT)}")
    return 0

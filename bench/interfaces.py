"""Interface overhead: the REST ``/v1/search`` route and the MCP ``search_memories`` tool
against the in-process ``client.search`` on the same 100k-record SQLite store.

The store holds N memories of 100 users with seeded random 384-d vectors (recorded as the
bundled model's, so every path embeds the query text with the same model: the rows differ
only by what the interface adds). Each row runs the same query texts, one at a time after a
warm-up, scoped to one user (the default path of every interface). REST goes through uvicorn
in a subprocess over a kept-alive local socket with httpx; MCP through the SDK's stdio client
session to ``oam mcp``. Results: ``bench/results/interfaces.md`` and ``.json``.

    python -m bench.interfaces [--records 100000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import log, machine, percentiles, save_results

WORDS = [
    "trip",
    "flight",
    "hotel",
    "allergy",
    "peanuts",
    "coffee",
    "tea",
    "meeting",
    "project",
    "deadline",
    "sister",
    "birthday",
    "concert",
    "museum",
    "garden",
    "recipe",
    "train",
    "budget",
    "doctor",
    "dentist",
    "gym",
]


def build_store(db: str, n: int, seed: int = 7) -> list[str]:
    from oracleagentmemory.core import OracleAgentMemory

    rng = np.random.default_rng(seed)
    users = [f"user{i:03d}" for i in range(100)]
    with OracleAgentMemory(connection=db) as mem:
        dim = mem.store.embedder.embedding_dimension
        for start in range(0, n, 5000):
            m = min(5000, n - start)
            vecs = rng.standard_normal((m, dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            texts = [" ".join(rng.choice(WORDS, 6)) for _ in range(m)]
            mem.store.add(
                texts,
                record_type="memory",
                embeddings=list(vecs),
                user_ids=[users[(start + i) % 100] for i in range(m)],
            )
    return users


def queries(count: int, seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 4)) for _ in range(count)]


def timed(fn: Any, items: list[Any], warmup: int = 10) -> dict[str, float]:
    for it in items[:warmup]:
        fn(it)
    lat = []
    for it in items:
        t0 = time.perf_counter()
        fn(it)
        lat.append(time.perf_counter() - t0)
    return percentiles(lat)


def run_inprocess(db: str, qs: list[tuple[str, str]]) -> dict[str, float]:
    from oracleagentmemory.core import OracleAgentMemory

    with OracleAgentMemory(connection=db) as mem:
        return timed(lambda q: mem.search(q[1], user_id=q[0], max_results=10), qs)


def run_rest(db: str, qs: list[tuple[str, str]]) -> dict[str, float]:
    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests._servers import new_key, running_server

    key = new_key(db, admin=True)
    with (
        running_server(db, timeout=300) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c,
    ):

        def call(q: tuple[str, str]) -> None:
            r = c.post("/v1/search", json={"query": q[1], "user_id": q[0], "max_results": 10})
            assert r.status_code == 200, r.text

        return timed(call, qs)


def run_mcp(db: str, qs: list[tuple[str, str]]) -> dict[str, float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    user = qs[0][0]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "oracleagentmemory.cli", "mcp", "--dsn", db, "--user-id", user],
    )

    async def go() -> dict[str, float]:
        async with Client(params) as c:
            for _, q in qs[:10]:
                await c.call_tool("search_memories", {"query": q})
            lat = []
            for _, q in qs:
                t0 = time.perf_counter()
                res = await c.call_tool("search_memories", {"query": q})
                lat.append(time.perf_counter() - t0)
                assert not res.is_error
            return percentiles(lat)

    return asyncio.run(go())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.interfaces")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="oam-bench-if-") as tmp:
        db = str(Path(tmp) / "bench.db")
        t0 = time.perf_counter()
        users = build_store(db, args.records)
        log(f"built {args.records} records in {time.perf_counter() - t0:.1f} s")
        texts = queries(args.queries)
        qs = [(users[i % len(users)], t) for i, t in enumerate(texts)]
        one_user = [(users[0], t) for t in texts]
        rows = {
            "in-process client.search (one user)": run_inprocess(db, qs),
            "REST POST /v1/search (uvicorn, 1 worker)": run_rest(db, qs),
            "in-process client.search (MCP's user)": run_inprocess(db, one_user),
            "MCP search_memories (stdio session)": run_mcp(db, one_user),
        }
    base, rest = (
        rows["in-process client.search (one user)"],
        rows["REST POST /v1/search (uvicorn, 1 worker)"],
    )
    mbase, mcp = (
        rows["in-process client.search (MCP's user)"],
        rows["MCP search_memories (stdio session)"],
    )
    out = {
        "records": args.records,
        "queries": args.queries,
        "machine": machine(),
        "rows": rows,
        "overhead_ms": {
            "rest_p50": rest["p50"] - base["p50"],
            "rest_p99": rest["p99"] - base["p99"],
            "mcp_p50": mcp["p50"] - mbase["p50"],
            "mcp_p99": mcp["p99"] - mbase["p99"],
        },
    }
    lines = [
        f"# Interface overhead at {args.records:,} records ({args.queries} queries, k = 10)",
        "",
        "| row | p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|",
    ]
    for name, p in rows.items():
        lines.append(f"| {name} | {p['p50']:.2f} | {p['p95']:.2f} | {p['p99']:.2f} |")
    o = out["overhead_ms"]
    lines += [
        "",
        f"REST overhead over the in-process call: p50 {o['rest_p50']:+.2f} ms, "
        f"p99 {o['rest_p99']:+.2f} ms (target: under 2 ms at p50).",
        f"MCP round trip overhead: p50 {o['mcp_p50']:+.2f} ms, p99 {o['mcp_p99']:+.2f} ms.",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in out["machine"].items()),
        "(shared with other work: absolute figures are noisy, the differences hold "
        "within one run).",
    ]
    save_results("interfaces", out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())

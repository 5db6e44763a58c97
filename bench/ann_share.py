"""Exact scan against the HNSW graph for ONE scope of a larger store, by the scope's share.

``python -m bench.ann_share [--n 100000]``: the bench corpus's clustered vectors, one user
holding a given share of the rows, user-scoped top-10 queries answered by the exact scan and
through a graph of the whole store (the graph is switched on for every share here, whatever
the store's own rule says). A graph serves one scope at the price of a graph over every row
(its build, its memory, one insertion per write), so the store uses it for a scope only where
the gain is large (``ANN_MIN_SHARE``, ``ANN_SCOPE_ROWS`` in ``_vector_index``). Writes
``bench/results/ann-share.md``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from bench import data
from bench.common import machine


def main() -> None:
    from oracleagentmemory.core.store.vectors import _vector_index as vi

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--shares", type=float, nargs="*", default=[0.1, 0.2, 0.35, 0.5])
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    vi.ANN_MIN_SHARE = 0.0  # measure the graph at every share
    corpus = data.generate(args.n)
    rng = np.random.default_rng(0)
    rows = []
    for share in args.shares:
        users = np.where(rng.random(args.n) < share, "big", "other").tolist()
        index = vi.VectorIndex(data.DIM)
        index.add_columns(
            corpus.vectors,
            list(range(1, args.n + 1)),
            ["memory"] * args.n,
            users,
            [None] * args.n,
            [None] * args.n,
            [True] * args.n,
            [None] * args.n,
            unit=True,
        )
        kw = {"record_types": ["memory"], "exact": {"user": "big"}, "prefer": {}}
        queries = corpus.q_vectors[:200]
        os.environ["OAM_VECTOR_ANN"] = "off"
        exact_ms, exact_hits = [], []
        for q in queries:
            t0 = time.perf_counter()
            exact_hits.append(index.search(q, 10, valid_only=True, now=time.time(), **kw))
            exact_ms.append((time.perf_counter() - t0) * 1e3)
        os.environ["OAM_VECTOR_ANN"] = "on"
        t0 = time.perf_counter()
        index.search(queries[0], 10, valid_only=True, now=time.time(), **kw)
        index.ann_maintain(wait=True)
        build_s = time.perf_counter() - t0
        graph_ms, recall = [], []
        for q, want in zip(queries, exact_hits, strict=True):
            t0 = time.perf_counter()
            got = index.search(q, 10, valid_only=True, now=time.time(), **kw)
            graph_ms.append((time.perf_counter() - t0) * 1e3)
            recall.append(len({r for r, _ in got} & {r for r, _ in want}) / max(1, len(want)))
        row = (
            share,
            users.count("big"),
            float(np.median(exact_ms[20:])),
            float(np.median(graph_ms[20:])),
            float(np.mean(recall)),
            build_s,
        )
        rows.append(row)
        print(
            f"share {share}: {row[1]:,} rows, exact {row[2]:.2f} ms, graph {row[3]:.2f} ms, "
            f"recall {row[4]:.3f}, graph build {row[5]:.1f} s",
            flush=True,
        )
        index.ann_close()
    out = Path(__file__).resolve().parent / "results" / "ann-share.md"
    where = ", ".join(f"{k} {v}" for k, v in machine().items())
    lines = [
        "# One scope of a larger store: exact scan against the graph, by the scope's share",
        "",
        f"Machine: {where}. Store of {args.n:,} bench-corpus vectors; one user holds the "
        "share; 200 user-scoped top-10 queries (p50 over the last 180). The graph covers the "
        "whole store. Shared 2-core machine: the ratio is what this measures.",
        "",
        "| scope share | scope rows | exact p50 ms | graph p50 ms | graph recall@10 | "
        "graph build s (whole store) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s:.2f} | {n:,} | {e:.2f} | {g:.2f} | {r:.3f} | {b:.1f} |" for s, n, e, g, r, b in rows
    ]
    out.write_text("\n".join(lines) + "\n")
    print(out)


if __name__ == "__main__":
    main()

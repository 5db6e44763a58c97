"""Where the HNSW graph starts to pay: the vector index's exact scan against its graph path
on the same rows, at growing candidate-set sizes (``ANN_MIN_ROWS`` is chosen from this).

Structured corpus of ``bench.data`` (first N rows), 400 queries one at a time after warm-up,
k = 10, one BLAS thread; recall@10 of the graph path against the exact scan of the same
index. Results: ``bench/results/ann-threshold.md`` and ``.json``.

    python -m bench.ann_threshold [--sizes 2000 5000 10000 20000 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from bench import data
from bench.common import log, machine, percentiles

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    from oracleagentmemory.core.store.vectors import _ann_index, _vector_index

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sizes", type=int, nargs="*", default=[2000, 5000, 10000, 20000, 50000])
    args = p.parse_args()
    chosen = _vector_index.ANN_MIN_ROWS
    _vector_index.ANN_MIN_ROWS = 1  # measure the graph path at every size
    corpus = data.generate(max(args.sizes))
    rows = []
    for n in args.sizes:
        index = _vector_index.VectorIndex(data.DIM)
        index.add_columns(
            np.ascontiguousarray(corpus.vectors[:n]), list(range(1, n + 1)), ["memory"] * n,
            ["u"] * n, [None] * n, [None] * n, [True] * n, [None] * n, unit=True,
        )  # fmt: skip
        t0 = time.perf_counter()
        index.ann_maintain(wait=True)
        build = time.perf_counter() - t0
        kw = {"record_types": ["memory"], "exact": {}, "prefer": {}, "valid_only": False}
        found: dict[str, list[set[int]]] = {}
        lat: dict[str, dict[str, float]] = {}
        for mode in ("on", "off"):
            os.environ[_ann_index.ENV_SWITCH] = mode
            for q in corpus.q_vectors[:10]:
                index.search(q, 10, now=time.time(), **kw)
            times, sets = [], []
            for q in corpus.q_vectors:
                t0 = time.perf_counter()
                hits = index.search(q, 10, now=time.time(), **kw)
                times.append(time.perf_counter() - t0)
                sets.append({rid for rid, _ in hits})
            found[mode], lat[mode] = sets, percentiles(times)
        os.environ[_ann_index.ENV_SWITCH] = "on"
        recall = float(np.mean([len(a & b) / 10 for a, b in zip(*found.values(), strict=True)]))
        row = {
            "n": n,
            "exact_p50": lat["off"]["p50"],
            "graph_p50": lat["on"]["p50"],
            "recall": recall,
            "build_s": build,
        }
        rows.append(row)
        log(
            f"n={n:,}: exact {row['exact_p50']:.3f} ms, graph {row['graph_p50']:.3f} ms "
            f"(recall {recall:.3f}), build {build:.1f} s"
        )
        index.ann_close()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ann-threshold.json").write_text(
        json.dumps({"machine": machine(), "rows": rows}, indent=1)
    )
    lines = [
        "# Exact scan against the HNSW graph, by candidate-set size",
        "",
        f"Machine: {', '.join(f'{k} {v}' for k, v in machine().items())}. "
        "Shared 2-core machine: absolute times are noisy, the "
        "crossing point is what this measures. The store uses the graph from "
        f"`ANN_MIN_ROWS` = {chosen:,} candidates (see the module).",
        "",
        "| candidate rows | exact p50 ms | graph p50 ms | graph recall@10 vs exact | graph "
        "build s (background, all cores) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['n']:,} | {r['exact_p50']:.3f} | {r['graph_p50']:.3f} | {r['recall']:.3f} | "
        f"{r['build_s']:.1f} |"
        for r in rows
    ]
    (RESULTS / "ann-threshold.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""What every agent-memory worker shares (stdlib + numpy only: it runs in the peers' own
virtualenvs too): read the workload ``bench/memory_workload.py`` wrote, drive one system
through it, and print one JSON result.

A system is two callables: ``ingest(batch)`` stores one ingest batch (one user session: a
list of record dicts with their ``vector``) and ``search(user, text, vector)`` returns the
record ids of the user-scoped top 10, best first. The driver times ingest (wall and CPU),
then 10 warm-up searches, then every question once (wall p50/p95, CPU per search), and
scores R@10 by LoCoMo turn within the question's user; a hit of another user is a leak.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

K = 10
WARMUP = 10


class Workload:
    def __init__(self, folder: Path) -> None:
        wl = json.loads((folder / "workload.json").read_text())
        self.records: list[dict[str, Any]] = wl["records"]
        self.batches: list[list[int]] = wl["batches"]
        self.questions: list[dict[str, Any]] = wl["questions"]
        self.docs = np.load(folder / "doc_vectors.npy")
        self.qvecs = np.load(folder / "query_vectors.npy")
        self.by_id = {r["id"]: r for r in self.records}
        self.doc_table = {r["text"]: v for r, v in zip(self.records, self.docs, strict=True)}
        self.query_table = {q["text"]: v for q, v in zip(self.questions, self.qvecs, strict=True)}
        # A system may strip a text before it embeds it (mem0 trims queries): same vector.
        for table in (self.doc_table, self.query_table):
            table.update({t.strip(): v for t, v in list(table.items()) if t.strip() not in table})
        self.limit = int(os.environ.get("BENCH_QUESTIONS", "0")) or len(self.questions)

    def vector(self, text: str, *, query: bool | None = None) -> np.ndarray:
        """The precomputed vector of ``text``: a query's when ``query`` (or, None, when
        ``text`` is a question: the two sets of texts do not overlap), else a record's."""
        if query is None:
            query = text in self.query_table or text.strip() in self.query_table
        table = self.query_table if query else self.doc_table
        return table[text] if text in table else table[text.strip()]


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM), MiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def drive(
    wl: Workload,
    ingest: Callable[[list[dict[str, Any]]], None],
    search: Callable[[str, str, np.ndarray], Sequence[str]],
    finish: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Ingest every batch, then search every question; the figures of one system."""
    n = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in wl.batches:
        recs = [dict(wl.records[i], vector=wl.docs[i]) for i in batch]
        ingest(recs)
        if (n + len(recs)) // 2000 > n // 2000:
            print(f"  ingested {n + len(recs):,} records", file=sys.stderr, flush=True)
        n += len(recs)
    if finish is not None:
        finish()
    ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - c0
    qs = list(zip(wl.questions, wl.qvecs, strict=True))[: wl.limit]
    for q, v in qs[:WARMUP]:
        search(q["user"], q["text"], v)
    lat: list[float] = []
    recalls: list[float] = []
    leaks = short = 0
    c0 = time.process_time()
    for q, v in qs:
        t = time.perf_counter()
        ids = list(search(q["user"], q["text"], v))[:K]
        lat.append(time.perf_counter() - t)
        if len(lat) % 250 == 0:
            print(f"  searched {len(lat)} questions", file=sys.stderr, flush=True)
        got = set()
        for rid in ids:
            rec = wl.by_id.get(rid)
            if rec is None or rec["user"] != q["user"]:
                leaks += 1
            else:
                got.add(rec["dia"])
        short += len(ids) < K
        gold = q["gold"]
        recalls.append(sum(g in got for g in gold) / len(gold))
    search_cpu = time.process_time() - c0
    ms = sorted(x * 1e3 for x in lat)
    return {
        "records": n,
        "ingest_s": ingest_s,
        "ingest_rate": n / ingest_s,
        "ingest_cpu_us": ingest_cpu / n * 1e6,
        "questions": len(qs),
        "p50_ms": statistics.median(ms),
        "p95_ms": ms[min(len(ms) - 1, int(0.95 * len(ms)))],
        "search_cpu_us": search_cpu / len(qs) * 1e6,
        "recall_at_10": sum(recalls) / len(recalls),
        "leaked_hits": leaks,
        "short_lists": short,
        "peak_rss_mb": peak_rss_mb(),
    }


def main(run: Callable[[str, Workload, str | None], dict[str, Any]]) -> None:
    """``worker.py SYSTEM FOLDER OUT [PG_URI]``: runs ``run`` and writes its JSON to OUT."""
    system, folder, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    uri = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    result = run(system, Workload(folder), uri)
    out.write_text(json.dumps(result))

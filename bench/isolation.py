"""A hostile neighbour's cost to another user: REST search latency of one user alone, then
while another user keeps sending the heaviest requests the limits allow.

The store holds N memories of 100 users (seeded random vectors recorded as the bundled
model's, as in ``bench.interfaces``). "Bob" runs the same search queries, one at a time, in
each row; "Alice" meanwhile loops on searches with the largest metadata filter allowed
(``MAX_FILTER_TERMS`` exact-match keys, all matching her records), on appending the largest
message allowed (``MAX_REQUEST_TEXT`` characters, embedded by the bundled model), or on both.
One uvicorn worker, one run: the ratios to the baseline row are the figures to read.
Results: ``bench/results/isolation.md`` and ``.json``.

    python -m bench.isolation [--records 20000] [--queries 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import log, machine, percentiles, save_results
from bench.interfaces import build_store, queries


def _heavy(
    base: str, key: str, user: str, kinds: set[str], stop: threading.Event, counts: dict[str, int]
) -> list[threading.Thread]:
    import httpx

    from oracleagentmemory.core.store._limits import MAX_FILTER_TERMS, MAX_REQUEST_TEXT

    big_filter = {f"k{i}": i for i in range(MAX_FILTER_TERMS)}
    text = (
        "A very long diary entry about travels, trains and museums. " * (MAX_REQUEST_TEXT // 59 + 1)
    )[:MAX_REQUEST_TEXT]
    headers = {"Authorization": f"Bearer {key}"}

    def loop(kind: str, call: Callable[[httpx.Client], httpx.Response]) -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=600) as c:
            while not stop.is_set():
                r = call(c)
                assert r.status_code in (200, 201), r.text
                counts[kind] = counts.get(kind, 0) + 1

    with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
        c.post(
            "/v1/memories",
            json={"content": "matches the big filter", "user_id": user, "metadata": big_filter},
        )
        tid = c.post("/v1/threads", json={"user_id": user}).json()["id"]
    calls: dict[str, Callable[[httpx.Client], httpx.Response]] = {
        "filter": lambda c: c.post(
            "/v1/search",
            json={"query": "trip hotel", "user_id": user, "metadata_filter": big_filter},
        ),
        "message": lambda c: c.post(
            f"/v1/threads/{tid}/messages", json={"messages": [{"role": "user", "content": text}]}
        ),
    }
    threads = [
        threading.Thread(target=loop, args=(k, calls[k]), daemon=True) for k in sorted(kinds)
    ]
    for t in threads:
        t.start()
    return threads


def main(argv: list[str] | None = None) -> int:
    import httpx

    ap = argparse.ArgumentParser(prog="python -m bench.isolation")
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests._servers import new_key, running_server

    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="oam-bench-iso-") as tmp:
        db = str(Path(tmp) / "bench.db")
        users = build_store(db, args.records)
        bob, alice = users[0], users[1]
        bob_key, alice_key = new_key(db, bob), new_key(db, alice)
        qs = queries(args.queries)
        with (
            running_server(db, timeout=300) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {bob_key}"}, timeout=600
            ) as c,
        ):

            def bob_searches() -> dict[str, float]:
                for q in qs[:10]:
                    c.post("/v1/search", json={"query": q, "user_id": bob})
                lat = []
                for q in qs:
                    t0 = time.perf_counter()
                    r = c.post("/v1/search", json={"query": q, "user_id": bob, "max_results": 10})
                    lat.append(time.perf_counter() - t0)
                    assert r.status_code == 200, r.text
                return percentiles(lat)

            for name, kinds in (
                ("bob alone", set()),
                ("alice: largest filter, looped", {"filter"}),
                ("alice: largest message, looped", {"message"}),
                ("alice: both, looped", {"filter", "message"}),
                ("bob alone, again", set()),
            ):
                stop = threading.Event()
                counts: dict[str, int] = {}
                threads = _heavy(base, alice_key, alice, kinds, stop, counts) if kinds else []
                time.sleep(1.0 if kinds else 0)
                rows[name] = {**bob_searches(), "alice_requests": dict(counts)}
                stop.set()
                for t in threads:
                    t.join(timeout=600)
                log(f"{name}: p50 {rows[name]['p50']:.1f} p99 {rows[name]['p99']:.1f} ms")
    base_p99 = (rows["bob alone"]["p99"] + rows["bob alone, again"]["p99"]) / 2
    out = {
        "records": args.records,
        "queries": args.queries,
        "machine": machine(),
        "rows": rows,
        "p99_ratio": {k: v["p99"] / base_p99 for k, v in rows.items()},
    }
    lines = [
        f"# A neighbour's heaviest requests ({args.records:,} records, REST, 1 worker)",
        "",
        "Bob's `POST /v1/search` latency (his query embedded by the bundled model), alone and "
        "while Alice loops on the largest requests the limits allow.",
        "",
        "| row | bob p50 ms | bob p99 ms | p99 / alone | alice's requests meanwhile |",
        "|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        done = ", ".join(f"{n} {k}" for k, n in sorted(r["alice_requests"].items())) or "-"
        lines.append(
            f"| {name} | {r['p50']:.1f} | {r['p99']:.1f} | {out['p99_ratio'][name]:.2f} | {done} |"
        )
    lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in out["machine"].items())]
    save_results("isolation", out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())

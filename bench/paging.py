"""What a one-item page costs (issue 48, class 3): ``GET /v1/threads/{id}/messages?limit=1``
on a 20,000-message thread beside the same on a 10-message thread, through ``oam serve`` (one
worker) on SQLite and on PostgreSQL (pgserver); then another user's list (``GET
/v1/memories?limit=10``) alone and while 16 clients loop on the long thread's one-item page.

``--before-src DIR`` runs every row a second time with the servers (and the store they read,
written by that code) importing ``oracleagentmemory`` from ``DIR`` (e.g. ``git archive HEAD
src | tar -x -C /tmp/old`` then ``--before-src /tmp/old/src``): the before/after figures of
one run on one machine. Results: ``bench/results/paging.md`` and ``.json``.

    python -m bench.paging [--messages 20000] [--reps 30] [--engines sqlite,postgres]
                           [--before-src DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tools.runtime_dir import ensure_runtime_dir

from bench.common import log, machine, percentiles, save_results

ROOT = Path(__file__).resolve().parents[1]
NEIGHBOURS = 16


def build(dsn: str, messages: int) -> None:
    """Alice's long thread (``messages``) and short one (10), and bob's 200 memories."""
    from oracleagentmemory.core import OracleAgentMemory

    with OracleAgentMemory(
        connection=dsn,
        embedder=None,
        search_strategy="keyword",
        schema_policy="create_if_necessary",
    ) as mem:
        long = mem.create_thread(thread_id="long", user_id="alice", agent_id="a")
        for start in range(0, messages, 1000):
            long.add_messages(
                [
                    {
                        "role": "user" if i % 2 else "assistant",
                        "content": f"Message {i}: the train to Kyoto leaves at {i % 24}:15.",
                    }
                    for i in range(start, min(messages, start + 1000))
                ]
            )
        short = mem.create_thread(thread_id="short", user_id="alice", agent_id="a")
        short.add_messages([{"role": "user", "content": f"Short message {i}."} for i in range(10)])
        for i in range(200):
            mem.add_memory(f"Bob's note {i}: buy oat milk.", user_id="bob")


@contextmanager
def source(src: str | None) -> Iterator[dict[str, str]]:
    """The environment of subprocesses that import ``oracleagentmemory`` from ``src``."""
    env = dict(os.environ)
    # This tree's own src/ when none is named: the rows never depend on what is installed.
    env["PYTHONPATH"] = os.pathsep.join([src or str(ROOT / "src"), str(ROOT)])
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # running_server's child inherits it
    try:
        yield env
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def timed(c: Any, path: str, params: dict[str, Any], reps: int) -> dict[str, Any]:
    for _ in range(2):
        c.get(path, params=params)
    lat, size = [], 0
    for _ in range(reps):
        t0 = time.perf_counter()
        r = c.get(path, params=params)
        lat.append(time.perf_counter() - t0)
        assert r.status_code == 200, r.text
        size = len(r.content)
    return {**percentiles(lat), "bytes": size, "items": len(r.json()["items"])}


def measure(dsn: str, src: str | None, messages: int, reps: int) -> dict[str, Any]:
    import httpx
    from tests._servers import new_key, running_server

    with source(src) as env:
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "bench.paging", "--build", dsn, "--messages", str(messages)],
            check=True,
            env=env,
            cwd=ROOT,
        )
        built = time.perf_counter() - t0
        alice, bob = new_key(dsn, "alice"), new_key(dsn, "bob")
        rows: dict[str, Any] = {"build_s": built}
        serve = ("--embedder", "none", "--search-strategy", "keyword")
        with (
            running_server(dsn, *serve, timeout=300) as base,
            httpx.Client(
                base_url=base, timeout=600, headers={"Authorization": f"Bearer {alice}"}
            ) as a,
            httpx.Client(
                base_url=base, timeout=600, headers={"Authorization": f"Bearer {bob}"}
            ) as b,
        ):
            long, short = "/v1/threads/long/messages", "/v1/threads/short/messages"
            rows["limit=1, long thread"] = timed(a, long, {"limit": 1}, reps)
            rows["limit=1, long thread, last message"] = timed(
                a, long, {"limit": 1, "offset": messages - 1}, reps
            )
            rows["limit=1, 10-message thread"] = timed(a, short, {"limit": 1}, reps)
            rows["limit=100, long thread"] = timed(a, long, {"limit": 100}, reps)
            bob_list = ("/v1/memories", {"user_id": "bob", "limit": 10})
            rows["bob's list, alone"] = timed(b, *bob_list, reps)
            stop, done = threading.Event(), [0]

            def loop() -> None:
                with httpx.Client(
                    base_url=base, timeout=600, headers={"Authorization": f"Bearer {alice}"}
                ) as c:
                    while not stop.is_set():
                        assert c.get(long, params={"limit": 1}).status_code == 200
                        done[0] += 1

            threads = [threading.Thread(target=loop, daemon=True) for _ in range(NEIGHBOURS)]
            for t in threads:
                t.start()
            time.sleep(1.0)
            started, before = time.perf_counter(), done[0]
            rows[f"bob's list, {NEIGHBOURS} clients on the long thread"] = timed(b, *bob_list, reps)
            rate = (done[0] - before) / (time.perf_counter() - started)
            rows[f"bob's list, {NEIGHBOURS} clients on the long thread"]["their_rps"] = rate
            stop.set()
            for t in threads:
                t.join(timeout=600)
    return rows


@contextmanager
def postgres_urls() -> Iterator[Any]:
    import pgserver

    ensure_runtime_dir()
    server = pgserver.get_server(
        tempfile.mkdtemp(prefix="oam-bench-paging-pg-"), cleanup_mode="stop"
    )
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")

    def url(schema: str) -> str:
        server.psql(f"CREATE SCHEMA {schema};")
        return f"{server.get_uri()}&options=-csearch_path%3D{schema}%2Cpublic"

    try:
        yield url
    finally:
        server.cleanup()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.paging")
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--before-src", default=None)
    ap.add_argument("--build", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build:
        build(args.build, args.messages)
        return 0
    sys.path.insert(0, str(ROOT))
    variants = [("after", None)] + ([("before", args.before_src)] if args.before_src else [])
    engines = args.engines.split(",")
    out: dict[str, Any] = {
        "messages": args.messages,
        "reps": args.reps,
        "machine": machine(),
        "rows": {},
    }
    with tempfile.TemporaryDirectory(prefix="oam-bench-paging-") as tmp:
        pg = postgres_urls() if "postgres" in engines else None
        urls = pg.__enter__() if pg else None
        try:
            for engine in engines:
                for name, src in variants:
                    dsn = (
                        str(Path(tmp) / f"{name}.db")
                        if engine == "sqlite"
                        else urls(f"paging_{name}")
                    )  # type: ignore[misc]
                    log(f"{engine} {name}: building {args.messages:,} messages")
                    rows = measure(dsn, src, args.messages, args.reps)
                    out["rows"][f"{engine} {name}"] = rows
                    for row, r in rows.items():
                        if isinstance(r, dict):
                            log(f"{engine} {name} | {row}: p50 {r['p50']:.1f} ms")
        finally:
            if pg:
                pg.__exit__(None, None, None)
    lines = [
        f"# A one-item page ({args.messages:,}-message thread, REST, 1 worker)",
        "",
        "`GET /v1/threads/{id}/messages` and another user's `GET /v1/memories?limit=10`"
        f" through `oam serve` (`--embedder none --search-strategy keyword`), {args.reps}"
        f' timed requests a row after 2 unmeasured. "{NEIGHBOURS} clients": bob\'s list while'
        f' {NEIGHBOURS} clients loop on the long thread\'s `limit=1` page. "before": the code'
        ' that loaded the whole list and sliced it in Python; "after": `LIMIT`/`OFFSET` and'
        " `COUNT(*)` in SQL.",
        "",
        "| engine | code | row | p50 ms | p99 ms | bytes | items |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, rows in out["rows"].items():
        engine, code = variant.split()
        for row, r in rows.items():
            if not isinstance(r, dict):
                continue
            extra = f" ({r['their_rps']:.0f} of their requests/s)" if "their_rps" in r else ""
            lines.append(
                f"| {engine} | {code} | {row}{extra} | {r['p50']:.1f} | "
                f"{r['p99']:.1f} | {r['bytes']} | {r['items']} |"
            )
    lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in out["machine"].items())]
    save_results("paging", out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())

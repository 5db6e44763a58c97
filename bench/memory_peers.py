"""Agent-memory peers beside ours, on one workload, in one run.

``python -m bench memory-peers [--n 10000] [--users 50] [--systems ...] [--no-postgres]``

Every system is given the same LoCoMo messages and the same precomputed e5 vectors
(``bench/memory_workload.py``: 10,000 records over 50 users, one thread or namespace per
user, ingested one session per call; 995 user-scoped top-10 searches) and is measured by the
same driver (``bench/peer_envs/workload_io.py``): ingest rate, search p50/p95, CPU per
search and per record, LoCoMo R@10 through the system's own search, hits of another user,
short result lists, peak RSS. Each system runs in its own process; the peers in their own
virtualenvs under ``bench/.peer-venvs/`` (created on first use from the pinned
``bench/peer_envs/<peer>.txt``, so the library's dependencies do not grow):

- ``ours-vector`` / ``ours-hybrid``: our client on SQLite, VECTOR / HYBRID.
- ``ours-langgraph``: the same client through our LangGraph adapter (``AgentMemoryStore``).
- ``lg-inmemory``: LangGraph's ``InMemoryStore`` (in this process's memory: not durable).
- ``mem0-qdrant``: mem0 OSS, ``infer=False``, its default vector store (Qdrant, local mode).
- with PostgreSQL (one pgserver, a database per system): ``ours-pg``, ``lg-postgres``
  (LangGraph's ``PostgresStore``, pgvector HNSW) and ``mem0-pgvector`` (pgvector HNSW).

A system that cannot run (its virtualenv cannot be built offline, no PostgreSQL) is
skipped with the reason. Results: ``bench/results/<name>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.runtime_dir import ensure_runtime_dir

ROOT = Path(__file__).resolve().parent.parent
ENVS_DIR = ROOT / "bench" / "peer_envs"
VENVS = ROOT / "bench" / ".peer-venvs"

# system -> (virtualenv: "ours" = the repository's, worker script, needs PostgreSQL)
SERVER_ONLY = {"ours-vector-e5prefix"}
"""Rows only a run through the embedding server has (given vectors carry no prefixes)."""

SYSTEMS: dict[str, tuple[str, str, bool]] = {
    "ours-vector": ("ours", "ours_worker.py", False),
    "ours-hybrid": ("ours", "ours_worker.py", False),
    "ours-langgraph": ("ours", "ours_worker.py", False),
    "ours-vector-e5prefix": ("ours", "ours_worker.py", False),
    "lg-inmemory": ("langgraph", "langgraph_worker.py", False),
    "mem0-qdrant": ("mem0", "mem0_worker.py", False),
    "ours-pg": ("ours", "ours_worker.py", True),
    "lg-postgres": ("langgraph", "langgraph_worker.py", True),
    "mem0-pgvector": ("mem0", "mem0_worker.py", True),
}

LABELS = {
    "ours-vector": "ours VECTOR (SQLite)",
    "ours-hybrid": "ours HYBRID (SQLite)",
    "ours-langgraph": "ours through our LangGraph adapter (SQLite, VECTOR)",
    "ours-vector-e5prefix": "ours VECTOR (SQLite), e5's `query: `/`passage: ` prefixes sent",
    "lg-inmemory": "LangGraph `InMemoryStore`",
    "mem0-qdrant": "mem0 OSS `infer=False`, local Qdrant",
    "ours-pg": "ours VECTOR (PostgreSQL)",
    "lg-postgres": "LangGraph `PostgresStore` (pgvector)",
    "mem0-pgvector": "mem0 OSS `infer=False`, pgvector",
}

DURABLE = {
    "ours-vector": "yes (SQLite WAL)",
    "ours-hybrid": "yes (SQLite WAL)",
    "ours-langgraph": "yes (SQLite WAL)",
    "ours-vector-e5prefix": "yes (SQLite WAL)",
    "lg-inmemory": "**no** (process memory)",
    "mem0-qdrant": "yes (Qdrant local files + SQLite history)",
    "ours-pg": "yes",
    "lg-postgres": "yes",
    "mem0-pgvector": "yes (+ SQLite history)",
}

EXACT = {
    "ours-vector": "exact",
    "ours-hybrid": "exact vector + keyword, fused",
    "ours-langgraph": "exact",
    "ours-vector-e5prefix": "exact",
    "lg-inmemory": "exact (scores every item under the prefix)",
    "mem0-qdrant": "exact (local mode scans)",
    "ours-pg": "exact (per-user)",
    "lg-postgres": "HNSW, then the namespace filter",
    "mem0-pgvector": "HNSW, then the user filter",
}


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=10_000, help="records (default 10,000)")
    p.add_argument("--users", type=int, default=50, help="users (default 50)")
    p.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=list(SYSTEMS))
    p.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL rows")
    p.add_argument("--questions", type=int, default=0, help="first N questions (0: all)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per system")
    p.add_argument("--name", default=None, help="results name (default memory-peers, or"
                   " memory-peers-server with --embed-server)")  # fmt: skip
    p.add_argument(
        "--embed-server",
        choices=["off", "cached", "live"],
        default="off",
        help="off: every system is given the vectors; cached / live: every system embeds"
        " through one local OpenAI-wire server of our bundled e5 (bench/embed_server.py),"
        " answering from the bench's vector cache or always from the model",
    )


# ------------------------------------------------------------------ virtualenvs


def peer_python(env: str) -> Path:
    """The Python of the peer virtualenv ``env``, created and installed from its pinned
    requirements on first use (and again when they change)."""
    if env == "ours":
        return Path(sys.executable)
    req = ENVS_DIR / f"{env}.txt"
    digest = hashlib.sha1(req.read_bytes()).hexdigest()
    venv = VENVS / env
    py = venv / "bin" / "python"
    stamp = venv / ".installed"
    if py.exists() and stamp.exists() and stamp.read_text() == digest:
        return py
    print(f"creating {venv.relative_to(ROOT)} from {req.relative_to(ROOT)}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", str(req)],
        check=True,
    )
    stamp.write_text(digest)
    return py


# ------------------------------------------------------------------ PostgreSQL


class Postgres:
    """One pgserver (the repository's ``postgres`` extra), one database per system."""

    def __init__(self, folder: Path) -> None:
        ensure_runtime_dir()
        import pgserver
        import psycopg

        self.server = pgserver.get_server(str(folder), cleanup_mode="stop")
        self.uri: str = self.server.get_uri()
        with psycopg.connect(self.uri) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        self.version = str(row[0]) if row else "?"

    def database(self, name: str) -> str:
        import psycopg

        db = name.replace("-", "_")
        with psycopg.connect(self.uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db}")
            conn.execute(f"CREATE DATABASE {db}")
        uri = self.uri.replace("/postgres?", f"/{db}?", 1)
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return uri

    def close(self) -> None:
        self.server.cleanup()


# ------------------------------------------------------------------ the run


def run_system(
    system: str,
    folder: Path,
    uri: str | None,
    questions: int,
    timeout: int,
    server: Any = None,
) -> dict[str, Any]:
    env, script, _ = SYSTEMS[system]
    out = folder / f"{system}.json"
    res: dict[str, Any] = {"system": system, "load_before": load_average()}
    try:
        py = peer_python(env)
    except Exception as exc:  # offline, or a wheel missing for this Python
        res["skipped"] = f"its virtualenv could not be built: {exc}"
        return res
    worker_env = {**os.environ, "BENCH_QUESTIONS": str(questions), "MEM0_TELEMETRY": "False"}
    if env == "ours":
        worker_env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
    else:
        worker_env.pop("PYTHONPATH", None)
    worker_env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if server is not None:
        worker_env["BENCH_EMBED_URL"] = server.api_base
        worker_env["BENCH_EMBED_MODEL"] = server.models[0]
        before = server.stats()
    cmd = [str(py), str(ENVS_DIR / script), system, str(folder), str(out), uri or ""]
    print(f"-- {system}", flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            timeout=timeout,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env=worker_env,
        )
    except subprocess.TimeoutExpired:
        res["skipped"] = f"did not finish in {timeout} s"
        return res
    res["wall_s"] = time.perf_counter() - t0
    res["load_after"] = load_average()
    if proc.returncode != 0 or not out.exists():
        tail = "\n".join(proc.stdout.strip().splitlines()[-6:])
        res["skipped"] = f"exit {proc.returncode}: {tail}"
        print(tail, flush=True)
        return res
    res.update(json.loads(out.read_text()))
    if server is not None:
        after = server.stats()
        res["server"] = {k: after[k] - before[k] for k in after}
    print(f"   {res['ingest_rate']:,.0f} rec/s, p50 {res['p50_ms']:.2f} ms, "
          f"R@10 {res['recall_at_10']:.3f}, load {res['load_after']}", flush=True)  # fmt: skip
    return res


def _x(value: float, base: float | None) -> str:
    return "" if not base else f" ({value / base:.2f}x)"


def _server_cell(r: dict[str, Any]) -> str:
    """Embedding calls a system made: requests, inputs (queries among them), server CPU."""
    sv = r["server"]
    return (
        f" {sv['requests']:,} / {sv['inputs']:,} ({sv['queries']:,}) |"
        f" {sv['cpu_s'] * 1e6 / max(1, r['records'] + r['questions']):,.0f} |"
    )


def table(rows: list[dict[str, Any]], base: str) -> str:
    ref = next((r for r in rows if r["system"] == base and "skipped" not in r), None)
    served = any("server" in r for r in rows)
    extra = (
        " embedding requests / inputs (of them sent as `query: `) |"
        " server CPU us per record + question |"
        if served
        else ""
    )
    lines = [
        "| system | durable | search | ingest rec/s (x ours) | search p50 ms (x ours) |"
        " p95 ms | CPU us/search (x ours) | CPU us/record (x ours) | R@10 |"
        " short lists / other users' hits | peak RSS MB |" + extra + " load before / after |",
        "|---|---|---|---|---|---|---|---|---|---|---|" + "---|---|" * served + "---|",
    ]
    for r in rows:
        name = LABELS[r["system"]]
        if "skipped" in r:
            lines.append(f"| {name} | skipped: {r['skipped'][:160]} |" + " |" * (10 + 2 * served))
            continue
        g = (lambda k: ref[k]) if ref else (lambda k: None)
        lines.append(
            f"| {name} | {DURABLE[r['system']]} | {EXACT[r['system']]} |"
            f" {r['ingest_rate']:,.0f}{_x(r['ingest_rate'], g('ingest_rate'))} |"
            f" {r['p50_ms']:.2f}{_x(r['p50_ms'], g('p50_ms'))} | {r['p95_ms']:.2f} |"
            f" {r['search_cpu_us']:,.0f}{_x(r['search_cpu_us'], g('search_cpu_us'))} |"
            f" {r['ingest_cpu_us']:,.0f}{_x(r['ingest_cpu_us'], g('ingest_cpu_us'))} |"
            f" {r['recall_at_10']:.3f} | {r['short_lists']} / {r['leaked_hits']} |"
            f" {r['peak_rss_mb']:.0f} |" + (_server_cell(r) if served else "")
            + f" {r['load_before']} / {r['load_after']} |"
        )  # fmt: skip
    return "\n".join(lines)


def _how_embedded(res: dict[str, Any]) -> str:
    server = res.get("server")
    if not server:
        return "the same precomputed e5 vectors given to every system"
    how = (
        "answering from the bench's e5 vector cache (the model's own vectors, computed once;"
        f" the model embedded {server['computed']:,} texts in this run, so its time is"
        " mostly not in these figures)"
        if server["mode"] == "cached"
        else "the model computing every input"
    )
    return (
        "every system embedding its records and queries itself through one local"
        " OpenAI-wire embedding server (`bench/embed_server.py`: our bundled"
        f" multilingual-e5-small, 384-d) {how}; server CPU is its request threads' CPU"
        " (HTTP, JSON, model), not counted in a system's own CPU columns"
    )


def markdown(res: dict[str, Any]) -> str:
    rows = {r["system"]: r for r in res["rows"]}
    embedded = [rows[s] for s in SYSTEMS if s in rows and not SYSTEMS[s][2]]
    pg = [rows[s] for s in SYSTEMS if s in rows and SYSTEMS[s][2]]
    m = res["machine"]
    head = (
        f"Host: {m.get('CPU', '?')}, {m.get('cores', '?')} cores, {m.get('RAM', '?')},"
        f" {m.get('OS', '?')}; Python {m.get('Python', '?')}, SQLite {m.get('SQLite', '?')}."
        f" Load average (1/5/15 min) at start {res['load_start']},"
        f" at end {res['load_end']}. Workload: {res['records']:,} LoCoMo records over"
        f" {res['users']} users (5 real conversations + distractor users holding copies of"
        f" their turns), one session per ingest call, {res['questions']} user-scoped top-10"
        f" searches, {_how_embedded(res)}; one process per system, run one after another."
        " Ratios are against ours VECTOR on the same engine kind, in this run."
    )
    title = "Agent-memory peers" + (", one embedding server" if res.get("server") else "")
    parts = [f"# {title}\n\n`{res['command']}`\n\n{head}\n"]
    parts.append("## Embedded / in-process\n\n" + table(embedded, "ours-vector"))
    if pg:
        parts.append(
            f"## PostgreSQL ({res.get('postgres', '?')}, pgserver, one database per system)\n\n"
            + table(pg, "ours-pg")
        )
    parts.append("Versions: " + "; ".join(
        f"{r['system']}: {r['version']}" for r in res["rows"] if "version" in r))  # fmt: skip
    return "\n\n".join(parts) + "\n"


def run(args: argparse.Namespace) -> int:
    from bench import memory_workload
    from bench.common import machine

    served = args.embed_server != "off"
    name = args.name or ("memory-peers-server" if served else "memory-peers")
    systems = [
        s
        for s in args.systems
        if not (args.no_postgres and SYSTEMS[s][2]) and (served or s not in SERVER_ONLY)
    ]
    res: dict[str, Any] = {
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "machine": machine(),
        "load_start": load_average(),
        "records": args.n,
        "users": args.users,
        "rows": [],
    }
    with tempfile.TemporaryDirectory(prefix="oam-memory-peers-") as tmp:
        folder = Path(tmp)
        memory_workload.write(folder, n=args.n, users=args.users)
        nq = len(json.loads((folder / "workload.json").read_text())["questions"])
        res["questions"] = min(nq, args.questions) if args.questions else nq
        pg: Postgres | None = None
        server: Any = None
        try:
            if served:
                from bench.embed_server import EmbeddingServer

                server = EmbeddingServer(cache=args.embed_server == "cached").__enter__()
                wl = json.loads((folder / "workload.json").read_text())
                server.warm(
                    [r["text"] for r in wl["records"]], [q["text"] for q in wl["questions"]]
                )
            for system in systems:
                uri = None
                if SYSTEMS[system][2]:
                    if pg is None:
                        try:
                            pg = Postgres(folder / "pgdata")
                            res["postgres"] = f"PostgreSQL {pg.version}"
                        except Exception as exc:
                            res["rows"].append(
                                {"system": system, "skipped": f"no PostgreSQL: {exc}"}
                            )
                            continue
                    uri = pg.database(system)
                res["rows"].append(
                    run_system(system, folder, uri, args.questions, args.timeout, server)
                )
        finally:
            if pg is not None:
                pg.close()
            if server is not None:
                res["server"] = {"mode": args.embed_server, **server.stats()}
                server.__exit__(None, None, None)
    res["load_end"] = load_average()
    text = markdown(res)
    print(text)
    out = ROOT / "bench" / "results" / f"{name}.md"
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    print(f"written to {out.relative_to(ROOT)}")
    return 0

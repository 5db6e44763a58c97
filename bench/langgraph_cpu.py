"""CPU of our LangGraph adapter (``AgentMemoryStore``) against the client's own calls.

``python -m bench langgraph-cpu [--n 3000] [--searches 600] [--rounds 3] [--profile put|search]``

The same LoCoMo messages (``bench/memory_workload.py``, precomputed e5 vectors given through
a lookup embedder, so no model runs) go one item per call into two SQLite stores: through
the client (``client.add_memory(text, user_id=u)``) and through the adapter
(``store.put(("memories", u), key, {"text": text})``, ``index={"fields": ["text"]}``,
``user_id_from=1``); then the same user-scoped top-10 searches through each
(``client.search(q, user_id=u, max_results=10, record_types=["memory"])`` against
``store.search(("memories", u), query=q, limit=10)``). CPU is ``time.process_time`` over all
the ops of a phase, per op; the phases alternate client/adapter ``--rounds`` times (fresh
stores each round) and the medians are compared. The target: adapter / client <= 1.3 for
both. ``--profile`` prints the adapter's cProfile of one phase instead (top 30 by tottime).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

from bench import memory_workload
from bench.common import log

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=3000, help="items put per store (default 3000)")
    p.add_argument("--users", type=int, default=10)
    p.add_argument("--searches", type=int, default=600, help="searches per phase")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--profile", choices=["put", "search"], default=None)
    p.add_argument("--name", default="langgraph-cpu")
    p.add_argument("--strict", action="store_true", help="exit 1 when a ratio misses the target")
    p.add_argument(
        "--before",
        type=Path,
        default=None,
        help="another langgraph.py (e.g. the adapter before a change): measured as a third side",
    )
    p.add_argument(
        "--before-src",
        type=Path,
        default=None,
        help="a src/ tree of older code (e.g. `git archive REV src | tar -x -C DIR`): each round"
        " runs this tree and that one in turn, each in its own process",
    )
    p.add_argument(
        "--inner-rounds", type=int, default=3, help="with --before-src: rounds in each process"
    )
    p.add_argument("--json-out", type=Path, default=None, help=argparse.SUPPRESS)


def _setup(n: int, users: int) -> tuple[dict[str, Any], Any]:
    work = ROOT / "bench" / ".cache" / f"memory-peers-{n}-{users}"
    if not (work / "workload.json").exists():
        memory_workload.write(work, n=n, users=users)
    wl = json.loads((work / "workload.json").read_text())
    docs = np.load(work / "doc_vectors.npy")
    qv = np.load(work / "query_vectors.npy")
    emb = memory_workload.LookupEmbedder(
        {r["text"]: v for r, v in zip(wl["records"], docs, strict=True)},
        {q["text"]: v for q, v in zip(wl["questions"], qv, strict=True)},
    )
    return wl, emb


def _client(folder: Path, name: str, emb: Any) -> Any:
    from oracleagentmemory.core import OracleAgentMemory, SearchStrategy

    return OracleAgentMemory(
        connection=str(folder / f"{name}.sqlite"),
        embedder=emb,
        search_strategy=SearchStrategy.VECTOR,
    )


def _adapter_class(path: Path | None) -> Any:
    """``AgentMemoryStore`` of this tree, or of the module file ``path``."""
    if path is None:
        from oracleagentmemory.integrations.langgraph import AgentMemoryStore

        return AgentMemoryStore
    spec = importlib.util.spec_from_file_location("oam_langgraph_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AgentMemoryStore


def _phases(client: Any, adapter: Any, wl: dict[str, Any], searches: int) -> dict[str, Any]:
    """The put and search ops of one side (``adapter``: an ``AgentMemoryStore`` class, or
    None for the client's own calls): {phase: (function, op count)}."""
    recs = wl["records"]
    qs = wl["questions"][:searches]
    if adapter is not None:
        store = adapter(client, index={"fields": ["text"]}, user_id_from=1)

        def put() -> None:
            for r in recs:
                store.put(("memories", r["user"]), r["id"], {"text": r["text"]})

        def search() -> None:
            for q in qs:
                store.search(("memories", q["user"]), query=q["text"], limit=10)
    else:

        def put() -> None:
            for r in recs:
                client.add_memory(r["text"], user_id=r["user"])

        def search() -> None:
            for q in qs:
                client.search(q["text"], user_id=q["user"], max_results=10,
                              record_types=["memory"])  # fmt: skip

    return {"put": (put, len(recs)), "search": (search, len(qs))}


def _cpu(fn: Callable[[], None], ops: int) -> float:
    """CPU microseconds per op of ``fn`` (all ``ops`` of it)."""
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) / ops * 1e6


def measure(
    n: int, users: int, searches: int, rounds: int, before: Path | None = None
) -> dict[str, Any]:
    wl, emb = _setup(n, users)
    classes: dict[str, Any] = {"client": None, "adapter": _adapter_class(None)}
    if before is not None:
        classes["adapter before"] = _adapter_class(before)
    cpu: dict[str, dict[str, list[float]]] = {s: {"put": [], "search": []} for s in classes}
    with tempfile.TemporaryDirectory(prefix="oam-lg-cpu-") as tmp:
        for i in range(rounds):
            order = list(classes) if i % 2 == 0 else list(reversed(classes))
            for side in order:
                client = _client(Path(tmp), f"{side.replace(' ', '-')}-{i}", emb)
                ph = _phases(client, classes[side], wl, searches)
                for phase in ("put", "search"):
                    fn, ops = ph[phase]
                    cpu[side][phase].append(_cpu(fn, ops))
                client.close()
                done = ", ".join(f"{p} {cpu[side][p][-1]:.0f} us/op" for p in ("put", "search"))
                log(f"round {i + 1}/{rounds} {side}: {done}")
    med = {s: {p: statistics.median(v) for p, v in d.items()} for s, d in cpu.items()}
    phases = ("put", "search")
    ratio = {p: med["adapter"][p] / med["client"][p] for p in phases}
    ratio_before = (
        None if before is None else {p: med["adapter before"][p] / med["client"][p] for p in phases}
    )
    return {
        "before": None if before is None else str(before),
        "ratio_before": ratio_before,
        "n": n,
        "users": users,
        "searches": min(searches, len(wl["questions"])),
        "rounds": rounds,
        "cpu_us": cpu,
        "median_us": med,
        "ratio": ratio,
        "target": TARGET,
    }


def markdown(res: dict[str, Any], load: str) -> str:
    med, ratio, rb = res["median_us"], res["ratio"], res.get("ratio_before")
    sides = list(res["cpu_us"])
    head = "| op | client CPU us/op | adapter CPU us/op | adapter / client | target |"
    if rb:
        head += " adapter before us/op | before / client |"
    lines = [head + f" runs ({'; '.join(sides)}) |", "|---|" + "---|" * (head.count("|") - 1)]
    for p in ("put", "search"):
        runs = "; ".join(" ".join(f"{v:.0f}" for v in res["cpu_us"][s][p]) for s in sides)
        ok = "ok" if ratio[p] <= res["target"] else "MISSED"
        row = (f"| {p} | {med['client'][p]:.0f} | {med['adapter'][p]:.0f} |"
               f" {ratio[p]:.2f} | <= {res['target']} ({ok}) |")  # fmt: skip
        if rb:
            row += f" {med['adapter before'][p]:.0f} | {rb[p]:.2f} |"
        lines.append(f"{row} {runs} |")
    return (
        f"LangGraph adapter CPU against the client's own calls: {res['n']:,} items over"
        f" {res['users']} users put one per call, {res['searches']} user-scoped top-10 searches,"
        f" SQLite, VECTOR, precomputed e5 vectors; `time.process_time` per op, median of"
        f" {res['rounds']} alternating rounds (medians). Load (1/5/15 min) before / after: {load}."
        + (" `adapter before`: the adapter before this change, same run." if rb else "")
        + "\n\n"
        + "\n".join(lines)
    )


def profile(n: int, users: int, searches: int, phase: str) -> None:
    wl, emb = _setup(n, users)
    with tempfile.TemporaryDirectory(prefix="oam-lg-prof-") as tmp:
        client = _client(Path(tmp), "adapter", emb)
        ph = _phases(client, _adapter_class(None), wl, searches)
        if phase == "search":
            ph["put"][0]()
        fn, _ = ph[phase]
        prof = cProfile.Profile()
        prof.runcall(fn)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        client.close()


def _tree_round(src: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """``--inner-rounds`` rounds of this bench on the code of the ``src`` tree, in a fresh
    process."""
    cmd = [sys.executable, "-m", "bench", "langgraph-cpu", "--rounds", str(args.inner_rounds),
           "--n", str(args.n),
           "--users", str(args.users), "--searches", str(args.searches),
           "--json-out", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    return cast(dict[str, Any], json.loads(out.read_text()))


def measure_trees(args: argparse.Namespace, before_src: Path) -> dict[str, Any]:
    """``--before-src``: rounds alternate this tree and ``before_src``, a process each; per
    round and tree the adapter / client ratio of each phase (both sides in one process, the
    medians of its inner rounds)."""
    trees = {"this tree": ROOT / "src", "before": before_src.resolve()}
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="oam-lg-trees-") as tmp:
        for i in range(args.rounds):
            for tree in list(trees) if i % 2 == 0 else list(reversed(trees)):
                res = _tree_round(trees[tree], args, Path(tmp) / f"{i}-{tree[:4]}.json")
                runs[tree].append(res)
                log(f"round {i + 1}/{args.rounds} {tree}: put {res['ratio']['put']:.2f},"
                    f" search {res['ratio']['search']:.2f}")  # fmt: skip
    return {"trees": {t: str(p) for t, p in trees.items()}, "runs": runs, "n": args.n,
            "users": args.users, "rounds": args.rounds, "inner_rounds": args.inner_rounds,
            "target": TARGET}  # fmt: skip


def markdown_trees(res: dict[str, Any], load: str) -> str:
    lines = [
        "| op | code | client CPU us/op | adapter CPU us/op | adapter / client (median) |"
        " spread (max / min) | per-round adapter / client | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in ("put", "search"):
        for tree, rounds in res["runs"].items():
            ratios = [r["ratio"][p] for r in rounds]
            client = statistics.median(r["median_us"]["client"][p] for r in rounds)
            adapter = statistics.median(r["median_us"]["adapter"][p] for r in rounds)
            med = statistics.median(ratios)
            ok = "ok" if med <= res["target"] else "MISSED"
            lines.append(
                f"| {p} | {tree} | {client:.0f} | {adapter:.0f} | {med:.2f} |"
                f" {max(ratios) / min(ratios):.2f} | {' '.join(f'{x:.2f}' for x in ratios)} |"
                f" <= {res['target']} ({ok}) |"
            )
    return (
        "LangGraph adapter CPU against the client's own calls, this tree and"
        f" `{res['trees']['before']}`"
        f" in turn ({res['rounds']} rounds, each tree's round a fresh process of"
        f" {res['inner_rounds']} alternating client / adapter rounds, its ratio that of their"
        f" medians): {res['n']:,} items over {res['users']} users"
        " put one per call, user-scoped top-10 searches, SQLite, VECTOR, precomputed e5 vectors;"
        f" `time.process_time` per op. Load (1/5/15 min) before / after: {load}.\n\n"
        + "\n".join(lines)
    )


def run(args: argparse.Namespace) -> int:
    from bench.memory_peers import load_average

    if args.profile:
        profile(args.n, args.users, args.searches, args.profile)
        return 0
    before = load_average()
    if args.before_src is not None:
        res = measure_trees(args, args.before_src)
        load = f"{before} / {load_average()}"
        res["load"] = load
        text = markdown_trees(res, load)
        print(text)
        out = ROOT / "bench" / "results" / f"{args.name}.md"
        out.write_text(f"# LangGraph adapter CPU\n\n{text}\n")
        out.with_suffix(".json").write_text(json.dumps(res, indent=1))
        print(f"written to {out.relative_to(ROOT)}")
        return 0
    res = measure(args.n, args.users, args.searches, args.rounds, args.before)
    load = f"{before} / {load_average()}"
    res["load"] = load
    if args.json_out is not None:  # one round for --before-src
        args.json_out.write_text(json.dumps(res))
        return 0
    text = markdown(res, load)
    print(text)
    out = ROOT / "bench" / "results" / f"{args.name}.md"
    out.write_text(f"# LangGraph adapter CPU\n\n{text}\n")
    out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    print(f"written to {out.relative_to(ROOT)}")
    missed = [p for p, r in res["ratio"].items() if r > TARGET]
    if missed:
        print(f"adapter / client above {TARGET} for: {', '.join(missed)}")
    return 1 if missed and args.strict else 0

"""``python -m bench forget``: what forgetting (#51) costs a delete on SQLite.

One SQLite store per size, loaded with ``n`` memories of the synthetic corpus (``bench.data``;
vectors given, no model; HYBRID, so the FTS5 keyword indexes exist), then the same delete
timed in four modes, alternating round by round on the same store: ``delete_thread`` of a
thread of ``messages`` messages (written before each delete, untimed). The modes add the
forgetting steps one at a time: ``before`` (none: the delete as it was), ``secure_delete``
(the pragma alone), ``+ optimize`` (the FTS5 indexes merged in the delete's transaction) and
``after`` (everything: with the WAL checkpoint and truncation after the commit, and the
vector-index snapshot dropped), which is what the store does.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import data
from bench.common import log, machine, percentiles, save_results
from bench.doubles import LookupEmbedder

MODES = ("before", "secure_delete", "+ optimize", "after")


def _store(path: str) -> Any:
    from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
    from oracleagentmemory.core.dbsearch import SearchStrategy

    return SQLiteMemoryStore(
        LookupEmbedder({}, data.DIM),
        path,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        vector_dim=data.DIM,
        search_strategy=SearchStrategy.HYBRID,
    )


def _mode(store: Any, mode: str) -> None:
    """Switch the forgetting steps of ``store`` to those of ``mode`` (instance attributes
    shadow the dialect's and the keeper's methods; removing them restores the store's)."""
    d, keeper = store._dialect, store._keeper
    d.conn.execute(f"PRAGMA secure_delete={'OFF' if mode == 'before' else 'ON'}")
    for obj, name, on in (
        (d, "forget_inside", mode in ("+ optimize", "after")),
        (d, "forget_after", mode == "after"),
        (keeper, "mark_forgotten", mode == "after"),
        (keeper, "drop_snapshot", mode == "after"),
    ):
        if on:
            obj.__dict__.pop(name, None)
        else:
            setattr(obj, name, lambda: None)


def _rounds(store: Any, corpus: Any, messages: int, rounds: int) -> dict[str, Any]:
    lat: dict[str, list[float]] = {m: [] for m in MODES}
    rng = np.random.default_rng(5)
    for r in range(rounds):
        order = MODES if r % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            thread = f"bench-{r}-{mode}"
            src = rng.integers(0, corpus.n, messages)
            store.add(
                [corpus.texts[i] for i in src],
                record_type="message",
                embeddings=[corpus.vectors[i] for i in src],
                thread_ids=thread,
                user_ids="forget-bench",
            )
            _mode(store, mode)
            t0 = time.perf_counter()
            store.delete_thread(thread)
            lat[mode].append(time.perf_counter() - t0)
    _mode(store, "after")
    out = {m: percentiles(lat[m]) for m in MODES}
    for m in MODES:
        out[m]["ratio"] = out[m]["p50"] / out["before"]["p50"]
    return out


def main(*, sizes: tuple[int, ...] = (1_000, 20_000), messages: int = 100, rounds: int = 15) -> Any:
    res: dict[str, Any] = {
        "machine": machine(),
        "messages": messages,
        "rounds": rounds,
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "sizes": {},
        "load_before": os.getloadavg(),
    }
    corpus = data.generate(max(sizes))
    with tempfile.TemporaryDirectory(prefix="oam-forgetbench-") as tmp:
        for n in sizes:
            store = _store(str(Path(tmp) / f"forget-{n}.db"))
            log(f"forget: loading {n:,} memories")
            for s in range(0, n, 1000):
                corpus.add_rows(store, s, min(n, s + 1000))
            res["sizes"][str(n)] = _rounds(store, corpus, messages, rounds)
            store.close()
    res["load_after"] = os.getloadavg()
    save_results("forget", res, _md(res))
    return res


def _md(res: dict[str, Any]) -> list[str]:
    lines = [
        "# What forgetting costs a delete (SQLite)",
        "",
        f"`{res['command']}` ({res['started']}); `delete_thread` of a {res['messages']}-message "
        f"thread in a store of N memories (HYBRID: FTS5 indexes on), {res['rounds']} rounds, "
        "the modes alternating round by round on the same store. Machine: "
        + ", ".join(f"{k} {v}" for k, v in res["machine"].items() if k in ("cpu", "cores", "ram")),
        "",
        "| N | mode | p50 ms | p95 ms | p50 / before |",
        "|---:|---|---:|---:|---:|",
    ]
    for n, rows in res["sizes"].items():
        for mode in MODES:
            row = rows[mode]
            lines.append(
                f"| {int(n):,} | {mode} | {row['p50']:.1f} | {row['p95']:.1f} "
                f"| {row['ratio']:.2f} |"
            )
    lines += [
        "",
        "`before`: no forgetting step; `secure_delete`: the pragma alone; `+ optimize`: with "
        "the FTS5 merge; `after`: with the WAL checkpoint (TRUNCATE) and the snapshot drop too, "
        "what the store does.",
        "",
        "Load average (1, 5, 15 min) before: "
        + ", ".join(f"{x:.1f}" for x in res["load_before"])
        + "; after: "
        + ", ".join(f"{x:.1f}" for x in res["load_after"])
        + " (2 cores shared: the ratios, measured in the same run, are what holds).",
    ]
    return lines

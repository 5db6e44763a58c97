"""This tree against another commit, in one run: the speed profile of each, interleaved.

``python -m bench side-by-side REV`` checks ``REV`` out into a temporary git worktree, then
runs ``python -m bench speed --profile quick --peers none`` there and here in turn
(``--rounds`` times each, before/after/before/after, so drift of the machine hits both), and
prints every latency and ingest figure of ours side by side: each run's value, the median of
each side, their ratio (after / before), and the spread of each side's runs (max / min), which
is the noise a ratio has to beat. The table is written to ``bench/results/<name>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
Figures = dict[tuple[str, ...], float]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rev", help="the commit to compare with (e.g. HEAD~1)")
    p.add_argument("--rounds", type=int, default=2, help="runs of each side (default 2)")
    p.add_argument("--name", default="side_by_side")


def _speed(tree: Path, name: str) -> dict[str, Any]:
    """One quick speed run of the package in ``tree``; returns its results' ``speed``."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    cmd = [sys.executable, "-m", "bench", "speed", "--profile", "quick", "--peers", "none"]
    subprocess.run([*cmd, "--name", name], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    out = tree / "bench" / "results" / f"{name}.json"
    speed: dict[str, Any] = json.loads(out.read_text())["speed"]
    for suffix in ("json", "md", "png"):
        (tree / "bench" / "results" / f"{name}.{suffix}").unlink(missing_ok=True)
    return speed


def figures(speed: dict[str, Any]) -> Figures:
    """Ours' comparable figures of one run: search p50 (ms) and ingest rate (records/s)."""
    out: Figures = {}
    for row in speed.get("search", []):
        if row.get("system") == "ours" and row.get("p50") is not None:
            out[("search p50 ms", f"{row['n']:,}", row["query"], row["scope"])] = row["p50"]
    for row in speed.get("ingest", []):
        if row.get("system") == "ours" and row.get("rate"):
            out[("ingest records/s", f"{row['n']:,}", row["what"], "")] = row["rate"]
    return out


def table(before: list[Figures], after: list[Figures]) -> str:
    """The side-by-side markdown table of the runs' figures."""
    keys = [k for k in before[0] if all(k in r for r in (*before, *after))]
    head = (
        "| figure | N | what | scope | before runs | after runs | before median |"
        " after median | after / before | spread before | spread after |"
    )
    lines = [head, "|" + "---|" * 11]
    for key in keys:
        b = [r[key] for r in before]
        a = [r[key] for r in after]
        mb, ma = statistics.median(b), statistics.median(a)
        cells = [
            *key,
            " ".join(f"{v:,.3g}" for v in b),
            " ".join(f"{v:,.3g}" for v in a),
            f"{mb:,.3g}",
            f"{ma:,.3g}",
            f"{ma / mb:.2f}",
            f"{max(b) / min(b):.2f}",
            f"{max(a) / min(a):.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    rev = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    before: list[Figures] = []
    after: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="oam-side-by-side-") as tmp:
        tree = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=ROOT,
                       check=True, capture_output=True)  # fmt: skip
        try:
            for i in range(args.rounds):
                print(f"round {i + 1}/{args.rounds}: {rev} (before)", flush=True)
                before.append(figures(_speed(tree, f"sbs_before_{i}")))
                print(f"round {i + 1}/{args.rounds}: this tree, HEAD {head} (after)", flush=True)
                after.append(figures(_speed(ROOT, f"sbs_after_{i}")))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                           check=False, capture_output=True)  # fmt: skip
    text = (
        f"# Side by side: {rev} (before) and this tree at HEAD {head} (after)\n\n"
        f"`python -m bench side-by-side {args.rev} --rounds {args.rounds}`: the quick speed"
        " profile of each, interleaved before/after; spread = max / min of one side's runs"
        " (the noise a ratio has to beat).\n\n" + table(before, after) + "\n"
    )
    print(text)
    out = ROOT / "bench" / "results" / f"{args.name}.md"
    out.write_text(text)
    print(f"written to {out.relative_to(ROOT)}")
    return 0

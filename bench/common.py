"""Shared helpers: timing, percentiles, memory and disk figures, the machine, progress bars,
result files."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

T = TypeVar("T")

RESULTS = Path(__file__).resolve().parent / "results"
"""Where every benchmark writes its ``<name>.json`` and ``<name>.md``."""

try:  # the bench extra installs tqdm; without it the harness still runs, silently
    from tqdm import tqdm as _tqdm
except ImportError:  # pragma: no cover
    _tqdm = None


def progress(it: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """A progress bar on stderr (tqdm) around ``it``."""
    if _tqdm is None:
        yield from it
        return
    yield from _tqdm(
        it, desc=desc, total=total, unit=unit, leave=False, file=sys.stderr, mininterval=0.5
    )


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    VmHWM (this process image's high-water mark) rather than ``getrusage().ru_maxrss``:
    Linux carries ru_maxrss across fork + exec, so a worker started by a big parent would
    report the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def disk_mb(path: Path) -> float:
    """Size of a file with its SQLite side files, or of a whole directory tree."""
    path = Path(path)
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
    total = 0
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            total += p.stat().st_size
    return total / 2**20


def percentiles(lat_s: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 / mean in milliseconds."""
    a = np.asarray(lat_s, dtype=np.float64) * 1e3
    if a.size == 0:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan"), "mean": float("nan")}
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "mean": float(a.mean())}


def time_queries(
    fn: Callable[[int], T],
    order: Sequence[int],
    *,
    desc: str,
    budget_s: float,
    min_queries: int = 30,
    warmup: int = 10,
) -> tuple[list[float], dict[int, T]]:
    """Run ``fn(query_index)`` one query at a time over ``order`` after ``warmup`` unmeasured
    calls (taken from the end of ``order``); stop once ``budget_s`` is spent and at least
    ``min_queries`` were measured. Returns per-query seconds and each measured result."""
    for qi in order[-warmup:]:
        fn(qi)
    lat: list[float] = []
    results: dict[int, T] = {}
    start = time.perf_counter()
    for count, qi in enumerate(progress(order, desc, total=len(order), unit="q")):
        t0 = time.perf_counter()
        res = fn(qi)
        lat.append(time.perf_counter() - t0)
        results[qi] = res
        if count + 1 >= min_queries and time.perf_counter() - start > budget_s:
            break
    return lat, results


def recall_at_k(found: Iterable[int], truth: NDArray[np.int64], k: int = 10) -> float:
    """|found ∩ truth| / min(k, |truth|); 1.0 when the truth is empty."""
    t = set(truth.tolist()[:k])
    if not t:
        return 1.0
    return len(t & set(list(found)[:k])) / len(t)


def machine() -> dict[str, str]:
    """CPU model, cores, RAM, OS, Python, numpy and its BLAS."""
    cpu = "unknown"
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu == "unknown":
                    cpu = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    fl = set(line.split(":", 1)[1].split())
                    flags = " ".join(x for x in ("avx2", "avx512f", "fma") if x in fl)
    except OSError:
        pass
    ram = "unknown"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    ram = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                    break
    except OSError:
        pass
    blas = "unknown"
    try:
        cfg: Any = np.show_config(mode="dicts")
        b = cfg["Build Dependencies"]["blas"]
        blas = f"{b.get('name')} {b.get('version')}"
    except Exception:
        pass
    threads = ", ".join(
        f"{v}={os.environ[v]}"
        for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        if v in os.environ
    )
    import sqlite3

    return {
        "CPU": f"{cpu} ({flags or 'no avx2'})",
        "cores": str(os.cpu_count()),
        "RAM": ram,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": sys.version.split()[0],
        "numpy": f"{np.__version__}, BLAS: {blas}"
        + (f", {threads}" if threads else ", default BLAS threads"),
        "SQLite": sqlite3.sqlite_version,
    }


def fmt(x: Any, digits: int = 2) -> str:
    """Compact number formatting for tables (NaN/None -> '-')."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        if x != x:
            return "-"
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        if abs(x) >= 100:
            return f"{x:.0f}"
        if abs(x) >= 10:
            return f"{x:.1f}"
        return f"{x:.{digits}f}" if abs(x) >= 0.1 else f"{x:.3f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def library_state() -> dict[str, Any]:
    """Which library code ran: git HEAD, files changed against it, and a content hash of
    the installed package's sources (workers record theirs, so a tree edited during a run
    shows up as different fingerprints)."""
    import hashlib
    import subprocess

    import oracleagentmemory

    pkg = Path(oracleagentmemory.__file__).resolve().parent
    h = hashlib.sha1()
    for p in sorted(pkg.rglob("*.py")):
        h.update(str(p.relative_to(pkg)).encode())
        h.update(p.read_bytes())
    state: dict[str, Any] = {"fingerprint": h.hexdigest()[:12]}
    try:
        root = pkg.parent.parent
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if head.returncode == 0:
            state["head"] = head.stdout.strip()
            state["changed"] = [line[3:] for line in dirty.stdout.splitlines() if line.strip()]
    except OSError:
        pass
    return state


def save_results(name: str, data: Any, lines: Sequence[str]) -> None:
    """Write ``RESULTS/<name>.json`` (every figure) and ``<name>.md`` (the table ``lines``),
    and print the table."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2))
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

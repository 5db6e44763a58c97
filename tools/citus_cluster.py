"""A Citus cluster for tests: Citus built once from the vendored source, then a coordinator
and workers on free ports, each a PostgreSQL 16 of the ``pgserver`` wheel with Citus and
pgvector.

Build (``build()``): ``citus-<version>.tar.gz`` from the vendor directory (``../shared/vendor``
from the repository root, or ``$CITUS_SOURCE``: that directory or the tarball itself), checked
against the ``SHA256SUMS`` beside it, is configured against pgserver's ``pg_config``
(``--without-libcurl --without-lz4 --without-zstd``), compiled and installed into a staging
directory, which is laid over a *copy* of pgserver's ``pginstall/`` (the virtualenv's copy is
never written). The result lives in a cache directory keyed by the tarball's sha256 and the
pgserver version: ``~/.cache/recallwell-test/citus-<key>`` (``$CITUS_CACHE_DIR`` replaces
``~/.cache/recallwell-test``). It is built in a temporary directory and renamed into place, under
a lock file, so concurrent test processes build it once and never see half a build.

Cluster (``start()`` / ``stop()``): a coordinator and ``workers`` workers (2 by default) in a
cluster directory, each with ``shared_preload_libraries = 'citus'``, ``CREATE EXTENSION citus``
and ``CREATE EXTENSION vector`` on every node, ``citus_set_coordinator_host`` and
``citus_add_node`` for each worker. ``start`` returns the coordinator's DSN.

Command line (from the repository root, with the project's virtualenv)::

    .venv/bin/python tools/citus_cluster.py build
    .venv/bin/python tools/citus_cluster.py start /tmp/citus   # prints the coordinator DSN
    .venv/bin/python tools/citus_cluster.py stop /tmp/citus

Test infrastructure only; Citus (AGPL-3.0) is never part of the project's wheel.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``tools`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._pgnode import PgInstall, PgNode, make_readable, own_dir, pgserver_package_dir

REPO_ROOT = Path(__file__).resolve().parent.parent
CITUS_TARBALL = "citus-13.2.2.tar.gz"
CONFIGURE_FLAGS = ("--without-libcurl", "--without-lz4", "--without-zstd")
CLUSTER_FILE = "cluster.json"
NODE_CONF = {
    "shared_preload_libraries": "'citus'",
    # Citus commits multi-node writes with two-phase commit.
    "max_prepared_transactions": "100",
    # 4 shards a table (Citus's default is 32): the tests make many small stores, and 4
    # still puts every table's shards on both workers.
    "citus.shard_count": "4",
}

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# build


def vendor_tarball() -> Path:
    """The Citus source tarball: ``$CITUS_SOURCE`` (a directory or the tarball) or
    ``<repo>/../shared/vendor/citus-*.tar.gz``."""
    source = os.environ.get("CITUS_SOURCE")
    where = Path(source) if source else REPO_ROOT.parent / "shared" / "vendor"
    tarball = where if where.is_file() else where / CITUS_TARBALL
    if not tarball.is_file():
        raise FileNotFoundError(
            f"Citus source not found: {tarball} (set CITUS_SOURCE to the vendor directory "
            "or to the tarball)"
        )
    return tarball


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_tarball(tarball: Path) -> str:
    """Check ``tarball`` against the ``SHA256SUMS`` beside it; return its sha256."""
    sums = tarball.parent / "SHA256SUMS"
    if not sums.is_file():
        raise FileNotFoundError(f"{sums} is missing: the Citus source cannot be verified")
    expected = None
    for line in sums.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == tarball.name:
            expected = parts[0].lower()
    if expected is None:
        raise ValueError(f"{sums} has no line for {tarball.name}")
    actual = sha256_of(tarball)
    if actual != expected:
        raise ValueError(f"{tarball}: sha256 {actual}, but {sums} says {expected}")
    return actual


def cache_key(tarball: Path | None = None) -> str:
    """``<first 16 hex of the tarball's sha256>-pgserver<version>``."""
    tarball = tarball or vendor_tarball()
    return f"{sha256_of(tarball)[:16]}-pgserver{importlib.metadata.version('pgserver')}"


def default_cache_dir(tarball: Path | None = None) -> Path:
    root = os.environ.get("CITUS_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "recallwell-test"
    return base / f"citus-{cache_key(tarball)}"


def missing_build_tools() -> str | None:
    """Why Citus cannot be built here (no C compiler, no make), or None if it can."""
    missing = []
    if not (shutil.which("gcc") or shutil.which("cc")):
        missing.append("a C compiler (gcc or cc)")
    if not shutil.which("make"):
        missing.append("make")
    return f"Citus cannot be built: {' and '.join(missing)} not on PATH" if missing else None


def installed(cache_dir: Path) -> PgInstall | None:
    """The finished build in ``cache_dir``, or None."""
    root = cache_dir / "pgserver" / "pginstall"
    libs = cache_dir / "pgserver.libs"
    if (cache_dir / "BUILD_INFO.json").is_file() and (root / "lib/postgresql/citus.so").is_file():
        return PgInstall(root, libs if libs.is_dir() else None)
    return None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _sh(cmd: list[str], cwd: Path, log_file: Path, env: dict[str, str]) -> None:
    with log_file.open("a") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    if proc.returncode != 0:
        tail = log_file.read_text(errors="replace")[-6000:]
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")


def build(
    cache_dir: Path | None = None, *, jobs: int | None = None, log: Log = _stderr
) -> PgInstall:
    """Build Citus once into ``cache_dir`` (default :func:`default_cache_dir`) and return the
    installation: pgserver's PostgreSQL with citus.so and pgvector. A finished build is reused."""
    tarball = vendor_tarball()
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(tarball)
    found = installed(cache_dir)
    if found is not None:
        return found
    reason = missing_build_tools()
    if reason:
        raise RuntimeError(reason)
    with _file_lock(cache_dir.parent / f"{cache_dir.name}.lock"):
        found = installed(cache_dir)  # another process finished it while we waited
        if found is not None:
            return found
        sha = verify_tarball(tarball)
        started = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}.tmp-", dir=cache_dir.parent))
        try:
            _build_into(work, tarball, jobs or int(os.environ.get("CITUS_BUILD_JOBS", "2")), log)
            info = {
                "citus_tarball": tarball.name,
                "sha256": sha,
                "pgserver": importlib.metadata.version("pgserver"),
                "build_seconds": round(time.monotonic() - started, 1),
                "configure_flags": list(CONFIGURE_FLAGS),
            }
            (work / "BUILD_INFO.json").write_text(json.dumps(info, indent=2) + "\n")
            if cache_dir.exists():  # a broken leftover (no BUILD_INFO.json): replace it
                shutil.rmtree(cache_dir)
            os.rename(work, cache_dir)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        log(f"citus: built into {cache_dir} in {time.monotonic() - started:.0f} s")
    make_readable(cache_dir)
    done = installed(cache_dir)
    assert done is not None
    return done


def _build_into(work: Path, tarball: Path, jobs: int, log: Log) -> None:
    pkg = pgserver_package_dir()
    venv_install = PgInstall.pgserver()
    pg_config = venv_install.bin("pg_config")
    build_log = work / "build.log"
    env = venv_install.env()
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []

    log(f"citus: building {tarball.name} against {pg_config} (log: {build_log})")
    src = work / "src"
    src.mkdir()
    with tarfile.open(tarball) as tar:
        tar.extractall(src, filter="data")
    (top,) = [p for p in src.iterdir() if p.is_dir()]
    _sh(
        ["./configure", f"PG_CONFIG={pg_config}", *CONFIGURE_FLAGS],
        cwd=top,
        log_file=build_log,
        env=env,
    )
    _sh([*nice, "make", f"-j{jobs}"], cwd=top, log_file=build_log, env=env)
    stage = work / "stage"
    _sh(["make", "install", f"DESTDIR={stage}"], cwd=top, log_file=build_log, env=env)

    # Lay the staged files over a copy of pgserver's install; the copy keeps pgserver's layout
    # (pgserver/pginstall beside pgserver.libs), so the binaries' $ORIGIN rpath finds libpq.
    target = work / "pgserver" / "pginstall"
    shutil.copytree(pkg / "pginstall", target, symlinks=True)
    if venv_install.libs is not None:
        shutil.copytree(venv_install.libs, work / "pgserver.libs", symlinks=True)
    staged = stage / venv_install.root.resolve().relative_to("/")
    if not staged.is_dir():
        raise RuntimeError(f"make install staged nothing under {staged}")
    shutil.copytree(staged, target, symlinks=True, dirs_exist_ok=True)
    for needed in (
        "lib/postgresql/citus.so",
        "share/postgresql/extension/citus.control",
        "lib/postgresql/vector.so",
        "share/postgresql/extension/vector.control",
    ):
        if not (target / needed).is_file():
            raise RuntimeError(f"the Citus install lacks {needed}")
    shutil.rmtree(src)
    shutil.rmtree(stage)


# ---------------------------------------------------------------------------------------------
# cluster


class CitusCluster:
    """A coordinator and workers under ``cluster_dir`` (``coordinator/``, ``worker1/``, ...)."""

    def __init__(self, cluster_dir: Path, install: PgInstall, workers: int = 2) -> None:
        self.cluster_dir = Path(cluster_dir).absolute()
        self.install = install
        self.coordinator = PgNode(install, self.cluster_dir / "coordinator")
        self.workers = [
            PgNode(install, self.cluster_dir / f"worker{i}") for i in range(1, workers + 1)
        ]

    @property
    def nodes(self) -> list[PgNode]:
        return [self.coordinator, *self.workers]

    @property
    def dsn(self) -> str:
        """The coordinator's DSN: what an application connects to."""
        return self.coordinator.dsn()

    @property
    def worker_dsns(self) -> list[str]:
        return [w.dsn() for w in self.workers]

    def start(self) -> str:
        """initdb and start every node, create the extensions, register the workers."""
        own_dir(self.cluster_dir)
        try:
            for node in self.nodes:
                node.initdb(NODE_CONF)
                node.start()
                node.sql("CREATE EXTENSION citus")
                node.sql("CREATE EXTENSION vector")
            self._save()
            self.coordinator.sql(
                "SELECT citus_set_coordinator_host('127.0.0.1', %s)", [self.coordinator.port]
            )
            for worker in self.workers:
                self.coordinator.sql("SELECT citus_add_node('127.0.0.1', %s)", [worker.port])
        except BaseException:
            self.stop()
            raise
        return self.dsn

    def _save(self) -> None:
        state = {
            "install": str(self.install.root),
            "libs": str(self.install.libs) if self.install.libs else None,
            "coordinator": self.coordinator.port,
            "workers": [w.port for w in self.workers],
            "dsn": self.dsn,
        }
        (self.cluster_dir / CLUSTER_FILE).write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, cluster_dir: Path) -> CitusCluster:
        """The cluster :meth:`start` left in ``cluster_dir``."""
        state = json.loads((Path(cluster_dir) / CLUSTER_FILE).read_text())
        install = PgInstall(Path(state["install"]), Path(state["libs"]) if state["libs"] else None)
        cluster = cls(cluster_dir, install, workers=len(state["workers"]))
        cluster.coordinator.port = state["coordinator"]
        for worker, port in zip(cluster.workers, state["workers"], strict=True):
            worker.port = port
        return cluster

    def stop(self) -> None:
        """Stop every node that runs (workers first)."""
        errors = []
        for node in reversed(self.nodes):
            try:
                node.stop()
            except Exception as exc:  # stop the others anyway
                errors.append(f"{node.datadir}: {exc}")
        if errors:
            raise RuntimeError("; ".join(errors))


def start(cluster_dir: Path, *, install: PgInstall | None = None, workers: int = 2) -> str:
    """Start a cluster in ``cluster_dir`` (building Citus if needed); the coordinator's DSN."""
    return CitusCluster(Path(cluster_dir), install or build(), workers).start()


def stop(cluster_dir: Path) -> None:
    """Stop the cluster :func:`start` left in ``cluster_dir``."""
    if (Path(cluster_dir) / CLUSTER_FILE).exists():
        CitusCluster.load(Path(cluster_dir)).stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="build Citus into the cache (once); print its path")
    p_build.add_argument("--cache-dir", type=Path)
    p_start = sub.add_parser("start", help="start a cluster; print the coordinator's DSN")
    p_start.add_argument("cluster_dir", type=Path)
    p_start.add_argument("--workers", type=int, default=2)
    p_stop = sub.add_parser("stop", help="stop the cluster in CLUSTER_DIR")
    p_stop.add_argument("cluster_dir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "build":
        print(build(args.cache_dir).root.parent.parent)
    elif args.command == "start":
        print(start(args.cluster_dir, workers=args.workers))
    else:
        stop(args.cluster_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One PostgreSQL node for test infrastructure: initdb, start on a free TCP port, SQL, stop.

The binaries are pgserver's (the wheel the tests already use) or a copy of them with more
extensions laid over (``tools/citus_cluster.py``). PostgreSQL refuses to run as root, so when
this process is root every server command runs as the ``pgserver`` system user, the same user
pgserver itself creates and uses. Nodes listen on 127.0.0.1 only, with no unix socket (long
temporary paths would overflow a socket name), and trust authentication: test data only.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_AS = "pgserver"  # the system user pgserver runs its servers as when started by root


def pgserver_package_dir() -> Path:
    """The installed ``pgserver`` package (its ``pginstall/`` holds PostgreSQL 16)."""
    spec = importlib.util.find_spec("pgserver")  # not imported: it sets up runtime dirs
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("the pgserver package is not installed")
    return Path(spec.origin).resolve().parent


@dataclass(frozen=True)
class PgInstall:
    """A PostgreSQL installation: ``root/bin``, ``root/lib``, ``root/share`` (a pginstall)."""

    root: Path
    libs: Path | None = None  # pgserver.libs: libpq for psql, pg_basebackup and citus.so

    @classmethod
    def pgserver(cls) -> PgInstall:
        pkg = pgserver_package_dir()
        libs = pkg.parent / "pgserver.libs"
        return cls(pkg / "pginstall", libs if libs.is_dir() else None)

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def env(self) -> dict[str, str]:
        """The environment server commands run with: ``lib/`` (libpq for extensions linked to it,
        e.g. citus.so) and pgserver.libs on LD_LIBRARY_PATH."""
        env = dict(os.environ)
        paths = [str(self.root / "lib")]
        if self.libs is not None:
            paths.append(str(self.libs))
        if env.get("LD_LIBRARY_PATH"):
            paths.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(paths)
        for var in ("PGHOST", "PGPORT", "PGDATA", "PGUSER", "PGDATABASE", "PGSERVICE"):
            env.pop(var, None)
        return env


def run_user() -> str | None:
    """The system user server commands run as: ``pgserver`` when we are root, else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(RUN_AS)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/bash", RUN_AS], check=True, capture_output=True)
    return RUN_AS


def user_kwargs() -> dict[str, Any]:
    """``subprocess`` keyword arguments that drop to :func:`run_user` (nothing if not root)."""
    user = run_user()
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def make_traversable(path: Path) -> None:
    """Let the server user reach ``path``: add o+x to each parent directory that lacks it (what
    pgserver does for its own data directories, but execute only)."""
    if os.geteuid() != 0:
        return
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


def make_readable(tree: Path) -> None:
    """Let the server user read and execute an installation tree (g+rX, o+rX)."""
    if os.geteuid() != 0:
        return
    make_traversable(tree)
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
            if os.path.islink(name):
                continue
            mode = os.stat(name).st_mode
            extra = stat.S_IRGRP | stat.S_IROTH
            if stat.S_ISDIR(mode) or mode & stat.S_IXUSR:
                extra |= stat.S_IXGRP | stat.S_IXOTH
            if mode & extra != extra:
                os.chmod(name, mode | extra)


def own_dir(path: Path) -> None:
    """Create ``path`` and give it to the server user (mode 0700), reachable from /."""
    path.mkdir(parents=True, exist_ok=True)
    make_traversable(path)
    user = run_user()
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o700)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(
    install: PgInstall,
    args: Sequence[str | Path],
    *,
    as_server_user: bool = True,
    timeout: float = 300,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run one of the installation's programs; on failure the error carries its output."""
    cmd = [str(install.bin(str(args[0]))), *map(str, args[1:])]
    kwargs = user_kwargs() if as_server_user else {}
    proc = subprocess.run(
        cmd,
        env=install.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
        **kwargs,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}".rstrip()
        )
    return proc


class PgNode:
    """A PostgreSQL server in ``datadir`` on ``127.0.0.1:port`` (its log beside it)."""

    def __init__(self, install: PgInstall, datadir: Path, port: int | None = None) -> None:
        self.install = install
        self.datadir = Path(datadir).absolute()
        self.port = port if port is not None else free_port()

    @property
    def log(self) -> Path:
        return self.datadir.parent / f"{self.datadir.name}.log"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def initdb(self, conf: Mapping[str, str] | None = None) -> None:
        """A fresh cluster (superuser ``postgres``, trust auth; initdb's default pg_hba.conf
        already lets 127.0.0.1 connect for replication) with ``conf`` appended."""
        own_dir(self.datadir.parent)
        run(
            self.install,
            [
                "initdb",
                "-D",
                self.datadir,
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-instructions",
            ],
        )
        self.configure(conf or {})

    def configure(self, conf: Mapping[str, str]) -> None:
        """Append settings to postgresql.conf (later lines win)."""
        base = {
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": "''",
            "fsync": "off",  # test data: nothing to keep across a crash
            "full_page_writes": "off",
            "shared_buffers": "'32MB'",
            "max_connections": "100",
            "logging_collector": "off",
        }
        lines = [f"{key} = {value}" for key, value in {**base, **conf}.items()]
        with (self.datadir / "postgresql.conf").open("a") as fh:
            fh.write("\n# tools/_pgnode.py\n" + "\n".join(lines) + "\n")

    def start(self, timeout: float = 60) -> None:
        """Start on :attr:`port` and wait until it accepts connections."""
        proc = run(
            self.install,
            [
                "pg_ctl",
                "-D",
                self.datadir,
                "-l",
                self.log,
                "-o",
                f"-p {self.port}",
                "-w",
                "-t",
                str(int(timeout)),
                "start",
            ],
            timeout=timeout + 30,
            check=False,
        )
        if proc.returncode != 0:
            tail = self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""
            raise RuntimeError(
                f"PostgreSQL in {self.datadir} did not start on port {self.port}:\n"
                f"{proc.stdout}{proc.stderr}\n--- log ---\n{tail}"
            )

    def is_running(self) -> bool:
        if not (self.datadir / "postmaster.pid").exists():
            return False
        proc = run(self.install, ["pg_ctl", "-D", self.datadir, "status"], check=False)
        return proc.returncode == 0

    def stop(self, mode: str = "fast") -> None:
        """Stop the server if it runs (``immediate`` if ``fast`` does not finish in 60 s)."""
        if not self.datadir.exists() or not self.is_running():
            return
        proc = run(
            self.install,
            ["pg_ctl", "-D", self.datadir, "-m", mode, "-w", "-t", "60", "stop"],
            check=False,
        )
        if proc.returncode != 0 and self.is_running():
            run(self.install, ["pg_ctl", "-D", self.datadir, "-m", "immediate", "stop"])

    def sql(self, statement: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement in autocommit and return its rows (none for a command)."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            cur = conn.execute(statement, params)
            return list(cur.fetchall()) if cur.description is not None else []


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll ``predicate()`` until it is true; TimeoutError naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)

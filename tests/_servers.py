"""Start ``oam serve`` in a subprocess on a free local port and wait until it is ready."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

OAM = [sys.executable, "-m", "oracleagentmemory.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def oam(
    *args: str, input: str | None = None, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``oam`` in a subprocess; returns the completed process."""
    proc = subprocess.run(
        [*OAM, *args],
        capture_output=True,
        text=True,
        input=input,
        env={**os.environ, **(env or {})},
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"oam {args} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def new_key(dsn: str, *users: str, admin: bool = False) -> str:
    args = ["keys", "create", "--dsn", dsn]
    for u in users:
        args += ["--user", u]
    if admin:
        args.append("--admin")
    return oam(*args).stdout.strip().splitlines()[-1]


@contextlib.contextmanager
def running_server(
    dsn: str, *extra: str, log: Path | None = None, timeout: float = 90.0
) -> Iterator[str]:
    """``oam serve --dsn DSN`` on a free port; yields its base URL once ``/readyz`` answers
    200, stops it afterwards."""
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        [*OAM, "serve", "--dsn", dsn, "--port", str(port), *extra],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"oam serve exited with {proc.returncode}")
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("oam serve was not ready (/readyz) in time")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()  # type: ignore[union-attr]

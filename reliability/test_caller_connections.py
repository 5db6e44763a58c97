"""The request-per-connection pattern (issue 23), many times over: each request opens a
connection, appends messages and closes it while background extraction runs. A run that
touched a closed connection crashed its process (SIGSEGV); every run here must exit 0 with
no traceback, on SQLite files and on PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "_request_per_connection.py"
RUNS = 10
REQUESTS = 60


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_request_per_connection_never_crashes(engine: str, tmp_path: Path, pg_server: Any) -> None:
    for run in range(RUNS):
        if engine == "sqlite":
            target = str(tmp_path / f"run{run}.db")
        else:
            schema = f"callers_{run}"
            pg_server.psql(f"CREATE SCHEMA IF NOT EXISTS {schema};")
            target = f"{pg_server.get_uri()}&options=-csearch_path%3D{schema}%2Cpublic"
        done = subprocess.run(
            [sys.executable, str(SCRIPT), target, str(REQUESTS)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        assert done.returncode == 0, (run, done.returncode, done.stderr[-3000:])
        assert "Traceback" not in done.stderr, (run, done.stderr[-3000:])

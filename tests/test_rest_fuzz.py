"""Fuzz the REST server from its own OpenAPI document with schemathesis (a real uvicorn
subprocess): every response must be one the document declares, and none may be a 500."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")
pytest.importorskip("schemathesis", reason="schemathesis (dev extra) is not installed")

from ._servers import new_key, running_server

pytestmark = pytest.mark.slow  # servers or programs in subprocesses: make test, not test-quick

MAX_EXAMPLES = int(os.environ.get("OAM_FUZZ_EXAMPLES", "15"))
"""Examples per operation and phase (``make test-fuzz`` raises it)."""


def test_openapi_fuzz(tmp_path: Path) -> None:
    db = str(tmp_path / "fuzz.db")
    key = new_key(db, admin=True)
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert exe, "schemathesis is installed with the dev extra"
    with running_server(db, "--embedder", "none", "--search-strategy", "keyword") as base:
        proc = subprocess.run(
            [
                exe,
                "run",
                f"{base}/openapi.json",
                "--checks",
                "not_a_server_error,status_code_conformance,"
                "content_type_conformance,response_schema_conformance",
                "-H",
                f"Authorization: Bearer {key}",
                "--max-examples",
                str(MAX_EXAMPLES),
                "--seed",
                "1",
                "--workers",
                "1",
                "--no-color",
                "--suppress-health-check",
                "all",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
        )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert "Tested: " in proc.stdout and " passed" in proc.stdout, tail

"""The TypeScript client (clients/typescript) stays in step with the server it is typed from.

- ``clients/typescript/openapi.json`` is exactly what ``tools/export_openapi.py`` writes from
  the server's code today (the document ``oam serve`` serves at ``/openapi.json``);
- ``clients/typescript/src/schema.ts`` is exactly what the locked ``openapi-typescript``
  generates from it (``npm run check:schema``);
- the package's version is the Python distribution's.

Regenerate both files with::

    .venv/bin/python tools/export_openapi.py clients/typescript/openapi.json
    cd clients/typescript && npm run generate

The client's own tests (node:test, against a live ``oam serve``) are run by ``make
test-typescript``, part of ``make test``; they are not run again from here.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import oracleagentmemory

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "clients" / "typescript"
REGENERATE = (
    "regenerate: .venv/bin/python tools/export_openapi.py clients/typescript/openapi.json "
    "&& (cd clients/typescript && npm run generate)"
)


def test_the_checked_in_document_is_the_servers() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "export_openapi.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    checked_in = (PACKAGE / "openapi.json").read_text(encoding="utf-8")
    assert proc.stdout == checked_in, (
        "clients/typescript/openapi.json differs from the server's OpenAPI document; " + REGENERATE
    )


def test_the_document_is_written_the_same_way_twice() -> None:
    document = json.loads((PACKAGE / "openapi.json").read_text(encoding="utf-8"))
    assert document["info"]["version"] == oracleagentmemory.__version__
    assert all(
        path == "/healthz" or path == "/readyz" or path.startswith("/v1/")
        for path in document["paths"]
    )


@pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node and npm are not on PATH: the generated TypeScript types cannot be checked",
)
def test_the_generated_types_are_the_documents() -> None:
    if not (PACKAGE / "node_modules" / "openapi-typescript").is_dir():
        # make test-typescript (before pytest in make test) installs them; alone, do it here.
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=PACKAGE,
            check=True,
            capture_output=True,
            timeout=600,
        )
    proc = subprocess.run(
        ["npm", "run", "--silent", "check:schema"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, (
        "clients/typescript/src/schema.ts is not what openapi-typescript generates from "
        f"openapi.json ({proc.stdout[-500:]}{proc.stderr[-1000:]}); {REGENERATE}"
    )


def test_the_package_version_is_the_distributions() -> None:
    package = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((PACKAGE / "package-lock.json").read_text(encoding="utf-8"))
    assert package["name"] == lock["name"] == "recallwell"
    assert package["version"] == lock["version"] == oracleagentmemory.__version__, (
        "bump clients/typescript/package.json with the distribution (npm version --no-git-tag"
        "-version X, which updates package-lock.json too)"
    )
    assert package.get("dependencies", {}) == {}, "the client has no runtime dependency"


def test_make_test_runs_the_typescript_tests() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test_line = re.search(r"^test:(.*)$", makefile, re.MULTILINE)
    assert test_line is not None and "test-typescript" in test_line[1].split()
    target = makefile.split("\ntest-typescript:", 1)[1].split("\n\n", 1)[0]
    assert "npm ci" in target and "npm test" in target and "OAM_BIN=" in target

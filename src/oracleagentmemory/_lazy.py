"""Packages that re-export names import their modules on first use (PEP 562).

``import oracleagentmemory.core`` then costs almost nothing, and ``from oracleagentmemory.core
import OracleAgentMemory`` imports only what that class needs: a one-shot command (``oam
--help``) or a process that never builds an LLM does not load httpx, pydantic or the LLM
adapters. A package lists the names of each home module and imports the same names under
``TYPE_CHECKING`` (so type checkers see them); the first access imports the home module and
keeps the value in the package, so later accesses are plain attribute reads.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps each home module to
    the names it defines that the package exports; ``namespace`` is the package's
    ``globals()``."""
    homes = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__

"""Record which names ``from <module> import <name>`` finds in the reference SDK, so that
``tests/test_reference_names.py`` can check each imports from the same module here.

Run with the reference installed (it imports without a database), from the project root:

    python3.11 -m venv /tmp/ref && /tmp/ref/bin/pip install oracleagentmemory==26.8.0
    /tmp/ref/bin/python tools/reference_names.py > tests/golden/reference_names.json

It reads names only, from outside: ``dir()`` of every public module, each object's kind and
defining module. A name is recorded when code written for the reference could rely on it:

* it is in the module's ``__all__``;
* it is a class or function the SDK defines in a public module (any module path without a
  ``_``-prefixed part), or one that a public module exports in its ``__all__``, wherever it
  is imported from;
* it is a public module of the SDK;
* it is a constant or type alias of the SDK, except Oracle Database internals (SQL text,
  column names: names ending in ``_SQL`` or ``_COLUMN``), ``logger`` and ``TYPE_CHECKING``;
* it is a class of a private module that this SDK also has (``KEEP_PRIVATE``).

Left out: objects of the standard library and third-party packages (``json``, ``Any``,
``numpy``, ``oracledb``) and helpers of the reference's private modules. For each name the
file keeps where it comes from (``home``: its defining public module, or null), so the test
can also check that a re-export is the same object as the original.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from typing import Any

KEEP_PRIVATE = {"ExtractedMemory", "MemoryLinkTargetCandidate", "NOT_SET_MARKER"}
"""Names defined in the reference's private modules that this SDK defines too."""
SKIP_VALUES = {"logger", "TYPE_CHECKING"}


def _public(module: str) -> bool:
    return module.startswith("oracleagentmemory") and not any(
        part.startswith("_") for part in module.split(".")[1:]
    )


def _record(mod: Any, name: str, api: dict[int, str]) -> dict[str, Any] | None:
    obj = getattr(mod, name)
    exported = name in getattr(mod, "__all__", ())
    if inspect.ismodule(obj):
        if _public(obj.__name__):
            return {"kind": "module", "home": obj.__name__}
        return None
    if inspect.isclass(obj) or inspect.isfunction(obj):
        home = getattr(obj, "__module__", "") or ""
        kind = "class" if inspect.isclass(obj) else "function"
        if _public(home):
            return {"kind": kind, "home": home, "home_name": obj.__qualname__}
        if id(obj) in api:  # defined in a private module, exported by a public one
            return {"kind": kind, "home": api[id(obj)], "home_name": name}
        if exported or (home.startswith("oracleagentmemory") and name in KEEP_PRIVATE):
            return {"kind": kind, "home": None}
        return None
    if exported:
        return {"kind": "value", "home": None}
    if name in SKIP_VALUES or name.endswith(("_SQL", "_COLUMN")) or _foreign(name, obj):
        return None
    if type(obj).__module__.startswith(("oracleagentmemory", "typing", "types", "builtins")):
        return {"kind": "value", "home": None}
    return None


def _foreign(name: str, obj: Any) -> bool:
    """An object of the standard library imported under its own name (``Literal``,
    ``Lock``), or one of the reference's lazy third-party modules (``litellm``)."""
    import builtins
    import collections.abc
    import threading
    import typing

    if type(obj).__name__ == "LazyLoader":
        return True
    return any(
        getattr(m, name, None) is obj for m in (typing, threading, collections.abc, builtins)
    )


def main() -> int:
    import oracleagentmemory

    out: dict[str, dict[str, Any]] = {}
    names = ["oracleagentmemory"] + [
        m.name for m in pkgutil.walk_packages(oracleagentmemory.__path__, "oracleagentmemory.")
    ]
    public = [n for n in names if _public(n)]
    api: dict[int, str] = {}  # objects some public module exports -> the first such module
    for module in public:
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", ()):
            api.setdefault(id(getattr(mod, name)), module)
    for module in public:
        mod = importlib.import_module(module)
        entries = {}
        for name in sorted(dir(mod)):
            if name.startswith("_") and name != "__version__":
                continue
            rec = _record(mod, name, api)
            if rec is not None:
                entries[name] = rec
        out[module] = entries
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The source tree keeps one responsibility a file and shows its architecture in its folders.

No file in ``src/`` is over 800 lines; no folder holds more than 15 modules; every package
says in its docstring what it owns; no module of ``src/oracleagentmemory`` or ``bench`` is in
an import cycle, counting late (function-level) and ``if TYPE_CHECKING:`` imports
(``tools/import_cycles.py``, run here in process); and imports go one way: the table below
says which package may import which (the engine-neutral store never names an engine, the
store never reaches up into the client, ...). ``docs/architecture.md`` says which room holds
what."""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src/oracleagentmemory"
MAX_LINES = 800
MAX_MODULES = 15
"""Python files (``__init__.py`` included) one folder of ``src/`` may hold."""
CROWDED = {
    "apis": (18, "the reference's public API modules: their paths are the contract"),
}
"""Folders allowed more than ``MAX_MODULES``: (their most, why). They may shrink, not grow."""

# Import directions. A pattern names modules relative to ``oracleagentmemory``: ``a.b`` is the
# module or package ``a.b`` and everything below it, ``a.b.*`` only the modules directly in
# package ``a.b`` (its ``__init__`` included, not its subpackages), ``=a.b`` that one module.
NEUTRAL_STORE = [
    "core.store.*",
    "core.store.schema",
    "core.store.vectors",
    "core.store.search",
    "core.store.writes",
]
STORE_PARTS = ["core.store.schema", "core.store.vectors", "core.store.search", "core.store.writes"]
MAY_NOT_IMPORT: list[tuple[list[str], list[str], str]] = [
    (
        NEUTRAL_STORE,
        ["core.store.engines"],
        "the engine-neutral store names no engine: what differs, it asks the dialect object",
    ),
    (["core.store.engines.sqlite"], ["core.store.engines.postgres"], "engines are strangers"),
    (["core.store.engines.postgres"], ["core.store.engines.sqlite"], "engines are strangers"),
    (
        ["core.store.schema"],
        ["core.store.vectors", "core.store.search", "core.store.writes"],
        "the tables and the rows are below every path that reads or writes them",
    ),
    (
        ["core.store.vectors"],
        ["core.store.search", "core.store.writes"],
        "the vector index is below the searches and writes that use it",
    ),
    (["core.store.search"], ["core.store.writes"], "search and writes are siblings"),
    (["core.store.writes"], ["core.store.search"], "search and writes are siblings"),
    (
        [*STORE_PARTS, "core.store.engines"],
        ["=core.store._sql_store"],
        "the facade is on top: nothing below it names it",
    ),
]
"""(importers, what they may not import, why)."""
ONLY_IMPORT: list[tuple[list[str], list[str], str]] = [
    (
        ["core.store"],
        [
            "=_notset",
            "apis",
            "core.store",
            "core._shared",
            "=core.dbschemapolicy",
            "=core.dbsearch",
            "=core.retention",
            "=core.oraclememorystore",
            "=core.oracledbmemorystore",
        ],
        "the store is below the client: it knows the API, its own settings and base classes",
    ),
    (["core._shared"], ["=_notset", "core._shared"], "the shared helpers sit below everything"),
    (["apis"], ["apis", "=_notset", "=_lazy", "=_async"], "the API knows no implementation"),
    (
        ["core.llms", "core.embedders"],
        [
            "core.llms",
            "core.embedders",
            "apis",
            "observability",
            "core._shared",
            "=core.imageinputlimitconfig",
            "=_lazy",
            "=_notset",
        ],
        "model adapters know nothing of stores, threads or the client",
    ),
]
"""(importers, all they may import, why)."""
ENGINE_PICKERS = [
    "core.store.engines",
    "=core",
    "=core.oracledbmemorystore",
    "core.deepsec",
    "admin",
]
"""The only modules that import an engine: the engines themselves, the factory that picks one
from a connection (``OracleDBMemoryStore``), the lazy exports of ``SQLiteMemoryStore`` and
``PostgresMemoryStore``, PostgreSQL's row-security administration and the admin CLI."""
EXCEPTIONS: dict[tuple[str, str], str] = {
    (
        "core.store.engines.postgres._postgres_words",
        "core.store.engines.sqlite._sqlite_words",
    ): "PostgreSQL stems text with SQLite FTS5's own tokenizer (an in-memory SQLite database, "
    "not the SQLite store), so both engines stem and count words alike",
}
"""Edges (importer, imported) allowed against the rules above, each with its reason."""


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "tools/import_cycles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_source_file_is_over_800_lines() -> None:
    too_long = {}
    for path in sorted((ROOT / "src").rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        if any(part.endswith(".egg-info") for part in path.parts):
            continue
        lines = path.read_bytes().count(b"\n")
        if lines > MAX_LINES:
            too_long[str(path.relative_to(ROOT))] = lines
    assert not too_long, f"files over {MAX_LINES} lines: {too_long}"


def test_no_import_cycle_in_src_or_bench() -> None:
    found = _tool().find_cycles([ROOT / "src/oracleagentmemory", ROOT / "bench"])
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_counts_late_and_type_only_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "b.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from pkg.a import thing
            """
        )
    )
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("def late():\n    from pkg import c\n")
    (package / "a.py").write_text("from pkg import b\nfrom pkg import d\n")
    tool = _tool()
    assert tool.find_cycles([package]) == [["pkg.a", "pkg.b", "pkg.c", "pkg.d"]]
    # Only the imports that run: a -> d -> c -> a (the late import) is still a cycle.
    assert tool.find_cycles([package], type_checking=False) == [["pkg.a", "pkg.c", "pkg.d"]]


def _matches(module: str, pattern: str) -> bool:
    if pattern.startswith("="):
        return module == pattern[1:]
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return module == base or module.rpartition(".")[0] == base
    return module == pattern or module.startswith(pattern + ".")


def _any(module: str, patterns: Sequence[str]) -> bool:
    return any(_matches(module, p) for p in patterns)


def import_direction_errors(
    root: Path,
    may_not: Sequence[tuple[list[str], list[str], str]],
    only: Sequence[tuple[list[str], list[str], str]],
    pickers: Sequence[str],
    exceptions: Mapping[tuple[str, str], str],
    engines: str = "core.store.engines",
) -> list[str]:
    """Every import under package ``root`` that breaks a rule (module names relative to the
    package), and every exception no import needs any more."""
    tool = _tool()
    known = tool.modules(root)
    top = root.name
    strip = len(top) + 1

    def rel(name: str) -> str:
        return "" if name == top else name[strip:]

    errors: list[str] = []
    used: set[tuple[str, str]] = set()
    for name, path in sorted(known.items()):
        a = rel(name)
        for target in sorted(tool.edges(name, path, known)):
            b = rel(target)
            why = []
            for importers, targets, reason in may_not:
                if _any(a, importers) and _any(b, targets):
                    why.append(reason)
            for importers, allowed, reason in only:
                if _any(a, importers) and not _any(b, allowed):
                    why.append(reason)
            if _matches(b, engines) and not _any(a, pickers):
                why.append("only the engines and the factory that picks one import an engine")
            if not why:
                continue
            if (a, b) in exceptions:
                used.add((a, b))
                continue
            errors.append(f"{a} -> {b}: {'; '.join(why)}")
    errors += [f"unused exception {a} -> {b}" for a, b in exceptions if (a, b) not in used]
    return errors


def test_imports_go_one_way() -> None:
    errors = import_direction_errors(SRC, MAY_NOT_IMPORT, ONLY_IMPORT, ENGINE_PICKERS, EXCEPTIONS)
    assert not errors, "imports against the layout:\n" + "\n".join(errors)


def test_the_direction_check_catches_a_forbidden_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for folder in ("core/store/search", "core/store/engines/sqlite"):
        (package / folder).mkdir(parents=True)
    for folder in ("", "core", "core/store", "core/store/search", "core/store/engines"):
        (package / folder / "__init__.py").write_text("")
    (package / "core/store/engines/sqlite/__init__.py").write_text("")
    (package / "core/store/engines/sqlite/_sqlite.py").write_text(
        "from pkg.core.store.search import _ok\n"
    )
    (package / "core/store/search/_ok.py").write_text("")
    (package / "core/store/search/_bad.py").write_text(
        "def late():\n    from pkg.core.store.engines.sqlite import _sqlite\n"
    )
    (package / "core/store/_facade.py").write_text("from pkg.core.store.search import _ok\n")
    errors = import_direction_errors(
        package, MAY_NOT_IMPORT, ONLY_IMPORT, ["core.store.engines"], {}
    )
    assert errors == [
        "core.store.search._bad -> core.store.engines.sqlite._sqlite: the engine-neutral "
        "store names no engine: what differs, it asks the dialect object; only the engines "
        "and the factory that picks one import an engine"
    ]
    # An exception lets the edge through; one that nothing needs is reported.
    allowed = {("core.store.search._bad", "core.store.engines.sqlite._sqlite"): "test"}
    assert not import_direction_errors(
        package, MAY_NOT_IMPORT, ONLY_IMPORT, ["core.store.engines"], allowed
    )
    stale = {("core.store._facade", "core.store.search._ok"): "test"}
    assert "unused exception core.store._facade -> core.store.search._ok" in (
        import_direction_errors(package, MAY_NOT_IMPORT, ONLY_IMPORT, ["core.store.engines"], stale)
    )


def test_no_folder_holds_more_than_15_modules() -> None:
    crowded = {}
    for folder in sorted({p.parent for p in SRC.rglob("*.py")}):
        count = len(list(folder.glob("*.py")))
        key = str(folder.relative_to(SRC))
        most = CROWDED[key][0] if key in CROWDED else MAX_MODULES
        if count > most:
            crowded[key] = count
    assert not crowded, f"folders over {MAX_MODULES} modules: {crowded}"


def test_every_package_says_what_it_owns() -> None:
    silent = []
    for init in sorted(SRC.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        if not doc or len(doc.split()) < 8:
            silent.append(str(init.relative_to(ROOT)))
    assert not silent, f"packages without a docstring saying what they own: {silent}"

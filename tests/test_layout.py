"""The source tree keeps one responsibility a file: no file in ``src/`` is over 800 lines, and no
module of ``src/oracleagentmemory`` or ``bench`` is in an import cycle, counting late
(function-level) and ``if TYPE_CHECKING:`` imports (``tools/import_cycles.py``, run here in
process). ``docs/architecture.md`` says which room holds what."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 800


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

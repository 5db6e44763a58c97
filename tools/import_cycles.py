"""Find import cycles among the modules of a source tree, late and type-only imports included.

Every ``import`` statement counts, wherever it is: a function-level import counts (it would
hide a cycle), and so does one under ``if TYPE_CHECKING:`` (a type-only back-reference plus
a late import is a cycle in all but name). ``--runtime-only`` leaves the ``TYPE_CHECKING``
imports out (the imports that run). An import of ``a.b.c`` is an edge to the module
``a.b.c`` (or, for ``from a.b import c`` where ``c`` is no module, to ``a.b``). Prints each
cycle (a strongly connected component) and exits 1 when there is one.

    python tools/import_cycles.py src/oracleagentmemory bench
    python tools/import_cycles.py --runtime-only src/oracleagentmemory

In-process: ``find_cycles(["src/oracleagentmemory", "bench"])`` returns the cycles.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``root`` (a package or a
    folder whose files are top-level modules of their own package). Hidden folders (a
    virtual environment such as ``bench/.peer-venvs``) and installed packages are not
    source."""
    base = root.parent
    out = {}
    for path in sorted(root.rglob("*.py")):
        inner = path.relative_to(root).parts[:-1]
        if any(p.startswith(".") or p == "site-packages" for p in inner):
            continue
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _nodes(tree: ast.AST, type_checking: bool = True) -> Iterator[ast.AST]:
    """Every node; without ``type_checking``, none of those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def edges(name: str, path: Path, known: dict[str, Path], type_checking: bool = True) -> set[str]:
    """The modules of ``known`` that module ``name`` (file ``path``) imports; ``type_checking``
    False leaves out the imports under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _nodes(tree, type_checking):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:
                    out.add(sub)
                elif target in known:
                    out.add(target)
    out.discard(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def find_cycles(roots: list[str | Path], type_checking: bool = True) -> list[list[str]]:
    """The import cycles among the modules under ``roots`` (each sorted; modules as dotted
    names); ``type_checking`` False counts only the imports that run."""
    known: dict[str, Path] = {}
    for root in roots:
        known.update(modules(Path(root)))
    graph = {name: edges(name, path, known, type_checking) for name, path in known.items()}
    return cycles(graph)


def main(argv: list[str]) -> int:
    runtime_only = "--runtime-only" in argv
    roots = [a for a in argv if a != "--runtime-only"]
    found = find_cycles(list(roots or ["src/oracleagentmemory"]), type_checking=not runtime_only)
    for component in found:
        print("import cycle: " + " <-> ".join(component))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Compile a metadata filter into a SQLite (JSON1) boolean expression.

The metadata column holds ``json.dumps(metadata, separators=(",", ":"), ensure_ascii=False,
allow_nan=False)`` text, or SQL NULL when a record has no metadata. The whole filter becomes one
SQL expression, so matching runs inside SQLite with no per-record Python work.

How the grammar's type strictness is kept in SQL: ``json_extract`` turns JSON ``true`` into
``1``, so every comparison first checks ``json_type`` ('null', 'true', 'false', 'integer',
'real', 'text', 'array', 'object'); numbers compare as SQL numbers, so ``1 = 1.0``. Deep equality
of lists and dicts is unrolled at compile time into a type check, a length / key-count check and
one comparison per element of the filter value. Array membership scans ``json_each`` and checks
its ``type`` and ``atom`` columns.

Every generated fragment evaluates to 0 or 1, never NULL (``IS`` comparisons, ``IFNULL``,
``EXISTS``), so ``NOT`` cannot be swallowed by three-valued logic. JSON paths use quoted labels
(``$."a.b"``) and are inlined as SQL string literals (constant paths let expression indexes on
``json_extract(col, '$."key"')`` apply); keys were validated to contain no ``"``, ``\\`` or
control characters, and ``'`` is doubled. Values are always ``?`` parameters.
"""

from __future__ import annotations

from typing import Any

from oracleagentmemory.core.store.search._filters import (
    And,
    ArrayContains,
    Condition,
    Equals,
    IsObject,
    JsonScalar,
    Not,
    Or,
    compile_metadata_filter,
)

__all__ = ["compile_sqlite_filter"]

_SqlPath = tuple[str | int, ...]


def _path_literal(path: _SqlPath) -> str:
    """Render ``path`` as a quoted-label JSON path inside an SQL string literal."""
    text = "$" + "".join(f"[{part}]" if isinstance(part, int) else f'."{part}"' for part in path)
    return "'" + text.replace("'", "''") + "'"


def _join(operator: str, parts: list[str]) -> str:
    """Join balanced, so long conjunctions stay well under SQLite's expression-depth limit;
    each part is copied once (linear in the parts' total length)."""
    out: list[str] = []
    glue = f" {operator} "

    def emit(lo: int, hi: int) -> None:
        if hi - lo == 1:
            out.append(parts[lo])
            return
        middle = (lo + hi) // 2
        out.append("(")
        emit(lo, middle)
        out.append(glue)
        emit(middle, hi)
        out.append(")")

    emit(0, len(parts))
    return "".join(out)


class _Compiler:
    """Walks a condition tree, collecting SQL text and positional parameters."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.params: list[Any] = []
        self._aliases = 0

    def _type(self, path: _SqlPath) -> str:
        return f"json_type({self.column}, {_path_literal(path)})"

    def _param(self, value: Any) -> str:
        self.params.append(value)
        return "?"

    def compile(self, condition: Condition) -> str:
        if isinstance(condition, And):
            if not condition.operands:
                return "1"
            return _join("AND", [self.compile(sub) for sub in condition.operands])
        if isinstance(condition, Or):
            if not condition.operands:
                return "0"
            return _join("OR", [self.compile(sub) for sub in condition.operands])
        if isinstance(condition, Not):
            return f"(NOT {self.compile(condition.operand)})"
        if isinstance(condition, IsObject):
            return f"({self._type(condition.path)} IS 'object')"
        if isinstance(condition, Equals):
            return self._equals(condition.path, condition.value)
        return self._array_contains(condition)

    def _equals(self, path: _SqlPath, value: Any) -> str:
        """Deep equality against a literal, unrolled over the literal's structure."""
        json_type = self._type(path)
        if value is None:
            return f"({json_type} IS 'null')"
        if isinstance(value, bool):
            return f"({json_type} IS '{'true' if value else 'false'}')"
        extracted = f"json_extract({self.column}, {_path_literal(path)})"
        if isinstance(value, int | float):
            return (
                f"(IFNULL({json_type} IN ('integer', 'real'), 0) "
                f"AND {extracted} IS {self._param(value)})"
            )
        if isinstance(value, str):
            return f"({json_type} IS 'text' AND {extracted} IS {self._param(value)})"
        if isinstance(value, list):
            parts = [
                f"({json_type} IS 'array')",
                f"(json_array_length({self.column}, {_path_literal(path)}) IS {len(value)})",
            ]
            parts += [self._equals((*path, index), item) for index, item in enumerate(value)]
            return _join("AND", parts)
        # A dict literal (only reachable inside lists): exactly the same key set, deep-equal.
        assert isinstance(value, dict)
        parts = [
            f"({json_type} IS 'object')",
            f"((SELECT count(*) FROM json_each({self.column}, {_path_literal(path)})) "
            f"IS {len(value)})",
        ]
        parts += [self._equals((*path, key), item) for key, item in value.items()]
        return _join("AND", parts)

    def _member(self, alias: str, values: tuple[JsonScalar, ...]) -> str:
        """Match one ``json_each`` row against any of ``values``, grouped by JSON type."""
        clauses: list[str] = []
        if any(value is None for value in values):
            clauses.append(f"{alias}.type = 'null'")
        for flag in (True, False):
            if any(value is flag for value in values):
                clauses.append(f"{alias}.type = '{'true' if flag else 'false'}'")
        numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if numbers:
            marks = ", ".join(self._param(number) for number in numbers)
            clauses.append(f"({alias}.type IN ('integer', 'real') AND {alias}.atom IN ({marks}))")
        texts = [value for value in values if isinstance(value, str)]
        if texts:
            marks = ", ".join(self._param(text) for text in texts)
            clauses.append(f"({alias}.type = 'text' AND {alias}.atom IN ({marks}))")
        return _join("OR", clauses)

    def _array_contains(self, condition: ArrayContains) -> str:
        alias = f"_oam_je{self._aliases}"
        self._aliases += 1
        path = _path_literal(condition.path)
        return (
            f"({self._type(condition.path)} IS 'array' AND EXISTS (SELECT 1 FROM "
            f"json_each({self.column}, {path}) AS {alias} "
            f"WHERE {self._member(alias, condition.values)}))"
        )


def compile_sqlite_filter(flt: dict[str, Any], column: str) -> tuple[str, list[Any]]:
    """Validate ``flt`` and compile it to a 0/1 SQLite expression over the JSON text ``column``.

    ``column`` is inserted verbatim (e.g. ``r.metadata``); the returned parameters belong to the
    ``?`` placeholders in order. Raises ``ValueError``/``TypeError`` before producing any SQL.
    """
    compiler = _Compiler(column)
    sql = compiler.compile(compile_metadata_filter(flt))
    return sql, compiler.params

"""Metadata filters compiled to PostgreSQL ``jsonb`` SQL, over the stored ``jsonb`` copy of
the metadata (``<column>_jb``, schema 18; the ``json`` column keeps the text as written).

jsonb already has the grammar's semantics: ``=`` compares numbers numerically, never equates
``true`` with ``1``, and compares objects by their exact key sets; ``@>`` tests array
membership with the same equality. Every fragment is wrapped so it yields true/false, never
NULL, which keeps ``NOT`` exact for missing fields.
"""

from __future__ import annotations

import json
from typing import Any

from oracleagentmemory.core.store.search._filters import (
    And,
    ArrayContains,
    Condition,
    Equals,
    IsObject,
    Not,
    Or,
    compile_metadata_filter,
)


def _value_at(column: str, params: list[Any], path: tuple[str, ...]) -> str:
    params.append(list(path))
    return f"({column} #> ?::text[])"


def _compile(node: Condition, column: str, params: list[Any]) -> str:
    if isinstance(node, Equals):
        at = _value_at(column, params, node.path)
        params.append(json.dumps(node.value, ensure_ascii=False, allow_nan=False))
        return f"COALESCE({at} = ?::jsonb, FALSE)"
    if isinstance(node, IsObject):
        at = _value_at(column, params, node.path)
        return f"COALESCE(jsonb_typeof({at}) = 'object', FALSE)"
    if isinstance(node, ArrayContains):
        # Parameters are positional: append them in the order the placeholders appear.
        is_array = f"jsonb_typeof({_value_at(column, params, node.path)}) = 'array'"
        alts = []
        for value in node.values:
            at = _value_at(column, params, node.path)
            params.append(json.dumps([value], ensure_ascii=False, allow_nan=False))
            alts.append(f"{at} @> ?::jsonb")
        return f"COALESCE({is_array} AND ({' OR '.join(alts)}), FALSE)"
    if isinstance(node, Not):
        return f"(NOT {_compile(node.operand, column, params)})"
    if isinstance(node, And):
        if not node.operands:
            return "TRUE"
        return "(" + " AND ".join(_compile(op, column, params) for op in node.operands) + ")"
    if isinstance(node, Or):
        if not node.operands:
            return "FALSE"
        return "(" + " OR ".join(_compile(op, column, params) for op in node.operands) + ")"
    raise TypeError(f"unknown filter node {node!r}")  # pragma: no cover


EXACT_METADATA = 18
"""The schema version from which metadata is ``json`` with a ``jsonb`` copy, ``<column>_jb``."""


def compile_postgres_filter(
    flt: dict[str, Any], column: str, version: int | None = None
) -> tuple[str, list[Any]]:
    """A boolean SQL expression (``?`` placeholders) for a validated filter over ``column``:
    its ``jsonb`` copy from schema 18 on (``version``, None: the current), before that
    ``column`` itself (``jsonb`` then)."""
    if version is None or version >= EXACT_METADATA:
        column = f"{column}_jb"
    params: list[Any] = []
    sql = _compile(compile_metadata_filter(flt), column, params)
    return sql, params

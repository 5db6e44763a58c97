"""LangGraph ``filter`` and namespace conditions as the store's metadata filters.

What the metadata-filter grammar (``core/store/search/_filters.py``) can say runs in SQL: plain
equality (nested dicts match recursively, lists exactly), ``$eq``, ``$ne`` and the namespace
labels. ``$gt``/``$gte``/``$lt``/``$lte`` (and ``$eq``/``$ne`` on an object) have no SQL
form there; they are checked in Python on the rows the SQL part returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.core.store.search._filters import json_equal, validate_metadata_filter
from oracleagentmemory.integrations._langgraph_codec import META, VALUE, label_positions

RANGE_OPERATORS = ("$gt", "$gte", "$lt", "$lte")
OPERATORS = ("$eq", "$ne", *RANGE_OPERATORS)
_MISSING: Any = object()


def _compare(op: str, value: Any, operand: Any) -> bool:
    """Range comparison: numbers with numbers, strings with strings; else no match."""
    is_num = isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(operand, str):
        if not isinstance(value, str):
            return False
    elif not is_num:
        return False
    if op == "$gt":
        return bool(value > operand)
    if op == "$gte":
        return bool(value >= operand)
    if op == "$lt":
        return bool(value < operand)
    return bool(value <= operand)


@dataclass(frozen=True, slots=True)
class Check:
    """One condition evaluated in Python: ``test`` on the value at ``path``."""

    path: tuple[str, ...]
    test: Callable[[Any], bool]

    def holds(self, value: dict[str, Any]) -> bool:
        current: Any = value
        for key in self.path:
            if not isinstance(current, dict) or key not in current:
                current = _MISSING
                break
            current = current[key]
        return self.test(current)


@dataclass
class ValueFilter:
    """A LangGraph ``filter`` split into its SQL part and its Python checks."""

    sql: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    def matches(self, value: dict[str, Any]) -> bool:
        return all(check.holds(value) for check in self.checks)


def _json(value: Any) -> Any:
    """Tuples as lists (JSON has arrays only)."""
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


def _equal_check(operand: Any, path: tuple[str, ...], *, negate: bool) -> Check:
    def test(v: Any) -> bool:
        return json_equal(v, operand) != negate if v is not _MISSING else negate

    return Check(path, test)


def _range_check(op: str, operand: Any, path: tuple[str, ...]) -> Check:
    def test(v: Any) -> bool:
        return v is not _MISSING and _compare(op, v, operand)

    return Check(path, test)


def _operators(
    ops: dict[str, Any], path: tuple[str, ...], out: dict[str, Any], checks: list[Check]
) -> None:
    where = "filter" + "".join(f"[{k!r}]" for k in path)
    plain = [k for k in ops if not k.startswith("$")]
    if plain:
        raise ValueError(f"{where}: mixes operators with plain keys {plain!r}")
    sql: Any = _MISSING
    for op, raw in ops.items():
        operand = _json(raw)
        if op in RANGE_OPERATORS:
            if isinstance(operand, bool) or not isinstance(operand, int | float | str):
                raise ValueError(f"{where}: {op} takes a number or a string, got {operand!r}")
            checks.append(_range_check(op, operand, path))
        elif op == "$eq":
            if isinstance(operand, dict) or sql is not _MISSING:
                checks.append(_equal_check(operand, path, negate=False))
            else:
                sql = operand
        elif op == "$ne":
            if isinstance(operand, dict) or sql is not _MISSING:
                checks.append(_equal_check(operand, path, negate=True))
            else:
                sql = {"$not": operand}
        else:
            raise ValueError(
                f"{where}: unsupported operator {op!r} (supported: {', '.join(OPERATORS)})"
            )
    if sql is not _MISSING:
        out[path[-1]] = sql


def _field(
    key: Any, expr: Any, path: tuple[str, ...], out: dict[str, Any], checks: list[Check]
) -> None:
    if not isinstance(key, str):
        raise TypeError(f"filter keys must be strings, got {type(key).__name__} {key!r}")
    path = (*path, key)
    if key.startswith("$"):
        where = "filter" + "".join(f"[{k!r}]" for k in path[:-1])
        raise ValueError(
            f"{where}: {key!r} is not a field; operators apply to a field, "
            "e.g. {'score': {'$gt': 1}}"
        )
    if isinstance(expr, dict) and any(isinstance(k, str) and k.startswith("$") for k in expr):
        _operators(expr, path, out, checks)
    elif isinstance(expr, dict):
        sub: dict[str, Any] = {}
        for k, v in expr.items():
            _field(k, v, path, sub, checks)
        out[key] = sub
    else:
        out[key] = _json(expr)


def value_filter(flt: Any) -> ValueFilter:
    """Translate and validate a LangGraph ``filter`` (None or a dict) before any query."""
    result = ValueFilter()
    if flt is None:
        return result
    if not isinstance(flt, dict):
        raise TypeError(f"filter must be a dict or None, got {type(flt).__name__}")
    for key, expr in flt.items():
        _field(key, expr, (), result.sql, result.checks)
    try:
        validate_metadata_filter({VALUE: result.sql})
    except (TypeError, ValueError) as exc:
        message = str(exc).replace(f"metadata_filter[{VALUE!r}]", "filter")
        raise ValueError(message.replace("metadata_filter", "filter")) from None
    return result


def scope_filter(
    prefix: Sequence[str] = (), suffix: Sequence[str] = (), values: ValueFilter | None = None
) -> dict[str, Any]:
    """The metadata filter of this adapter's items under ``prefix`` / ending with ``suffix``
    (wildcards skipped), matching the SQL part of ``values``."""
    info: dict[str, Any] = {}
    if prefix and (labels := label_positions(prefix)):
        info["prefix"] = labels
    if suffix and (labels := label_positions(suffix, from_end=True)):
        info["suffix"] = labels
    flt: dict[str, Any] = {META: info}
    if values is not None and values.sql:
        flt[VALUE] = values.sql
    return flt


def namespace_matches(namespace: tuple[str, ...], path: Sequence[str], match_type: str) -> bool:
    """LangGraph's prefix/suffix match with ``*`` wildcards (the namespace must be at least
    as long as the path)."""
    if len(namespace) < len(path):
        return False
    if not path:
        return True
    labels = namespace[: len(path)] if match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for n, p in zip(labels, path, strict=True))

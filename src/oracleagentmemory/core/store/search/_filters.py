"""Metadata-filter grammar: validation, a dialect-neutral condition tree, and a Python evaluator.

A filter is a dict whose entries are ANDed together:

* ``{"field": value}`` is an exact match: ``field`` must exist and equal ``value``. A nested dict
  (``{"review": {"status": "open"}}``) matches recursively: ``review`` must be an object whose
  listed keys match; other keys are allowed. Scalars and lists compare by deep equality (list
  order and length matter; a dict *inside a list* must have exactly the same keys).
* ``{"field": {"$op": operand, ...}}`` (every key starts with ``$``) applies operators, ANDed:
  ``$array_contains`` (a scalar, or a non-empty list of scalars that must ALL be present),
  ``$array_contains_any`` (at least one listed scalar is present) and ``$not`` (negates an
  operator dict or an exact-match value on the same field).

Semantics chosen here, so that every backend gives the same answer as :func:`metadata_matches`:

* Type strictness follows JSON, not Python: booleans never equal numbers (``True != 1``), numbers
  compare numerically whatever their representation (``1 == 1.0``), strings compare exactly
  (no case folding or coercion, ``"1" != 1``), and ``null`` equals ``null`` only. A key stored
  with a null value matches ``None``; a missing key does not.
* Negations (``$not``) match whenever the positive expression fails, which includes missing
  fields, and, for array membership, fields that are not arrays.
* The empty filter ``{}`` matches every record, including records without metadata.
* Records without metadata (``None`` / SQL NULL) behave like ``{}``: positive expressions fail,
  negations succeed.

Validation runs before any query, and every problem raises ``ValueError`` (``TypeError`` for a
filter that is not a dict) with a message starting with ``metadata_filter``. Beyond the grammar it
rejects what no backend can evaluate faithfully:

* keys must be non-empty strings without ``"``, ``\\``, control characters or lone surrogates,
  because keys become quoted JSON-path labels (``$."a.b"``) and SQLite matches those labels
  against the raw JSON text, with no escape processing;
* values must be JSON: ``str``, ``int`` (signed 64-bit, the widest a SQL parameter binds),
  finite ``float``, ``bool``, ``None``, ``list`` and ``dict`` with string keys; tuples, sets,
  NaN and infinities are refused rather than silently converted;
* nesting deeper than :data:`MAX_DEPTH` is refused, to keep recursion and SQL depth bounded;
* a filter of more than :data:`MAX_FILTER_TERMS` terms (conditions, values of literals and of
  array operands) or :data:`MAX_FILTER_CHARS` characters of keys and strings is refused, so
  one search cannot hold the store for long; validation stops as soon as the budget is spent
  (its work is linear in what it read, at most the budget).

Validation lowers a filter into a small tree of :data:`Condition` nodes over key paths. Both
:func:`metadata_matches` and the SQL compilers walk that tree, so a new dialect (for example
PostgreSQL ``jsonb``: ``jsonb_typeof(col #> path)``, ``col #> path = $1::jsonb``, ``@>``) is one
small module that translates six node types.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeGuard

from oracleagentmemory.core.store._limits import MAX_FILTER_CHARS, MAX_FILTER_TERMS

__all__ = [
    "MAX_DEPTH",
    "MAX_FILTER_CHARS",
    "MAX_FILTER_TERMS",
    "OPERATORS",
    "And",
    "ArrayContains",
    "Condition",
    "Equals",
    "IsObject",
    "JsonScalar",
    "MetadataFilter",
    "Not",
    "Or",
    "Path",
    "compile_metadata_filter",
    "condition_matches",
    "json_equal",
    "metadata_matches",
    "validate_metadata_filter",
]

MetadataFilter: TypeAlias = dict[str, Any]
Path: TypeAlias = tuple[str, ...]
JsonScalar: TypeAlias = str | int | float | bool | None

OP_ARRAY_CONTAINS = "$array_contains"
OP_ARRAY_CONTAINS_ANY = "$array_contains_any"
OP_NOT = "$not"
OPERATORS = frozenset({OP_ARRAY_CONTAINS, OP_ARRAY_CONTAINS_ANY, OP_NOT})

MAX_DEPTH = 32
"""Deepest nesting (of dicts, lists and ``$not``) a filter may use."""

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


# --------------------------------------------------------------------------- condition tree


@dataclass(frozen=True, slots=True)
class Equals:
    """The value at ``path`` deep-equals ``value`` (JSON; dicts compare with the exact key set)."""

    path: Path
    value: Any


@dataclass(frozen=True, slots=True)
class IsObject:
    """The value at ``path`` exists and is a JSON object (what a nested-dict match requires)."""

    path: Path


@dataclass(frozen=True, slots=True)
class ArrayContains:
    """The value at ``path`` is an array holding at least one of ``values`` (JSON scalars)."""

    path: Path
    values: tuple[JsonScalar, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """Logical negation; true where ``operand`` is false, including missing fields."""

    operand: Condition


@dataclass(frozen=True, slots=True)
class And:
    """All ``operands`` hold; the empty conjunction is true."""

    operands: tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """At least one of ``operands`` holds; the empty disjunction is false."""

    operands: tuple[Condition, ...]


Condition: TypeAlias = Equals | IsObject | ArrayContains | Not | And | Or


# --------------------------------------------------------------------------- validation/lowering


def _where(path: Path) -> str:
    """Render a location for error messages, e.g. ``metadata_filter['review']['status']``."""
    return "metadata_filter" + "".join(f"[{key!r}]" for key in path)


class _Budget:
    """What one filter may still spend: terms and characters (see the module docstring)."""

    __slots__ = ("chars", "terms")

    def __init__(self) -> None:
        self.terms = MAX_FILTER_TERMS
        self.chars = MAX_FILTER_CHARS

    def spend(self, path: Path, text: str | None = None, *, terms: int = 1) -> None:
        self.terms -= terms
        if text is not None:
            self.chars -= len(text)
        if self.terms < 0:
            raise ValueError(
                f"metadata_filter has more than {MAX_FILTER_TERMS} terms (conditions and "
                "values); that is the limit"
            )
        if self.chars < 0:
            raise ValueError(
                f"metadata_filter holds more than {MAX_FILTER_CHARS} characters of keys and "
                "strings; that is the limit"
            )


def _check_text(text: str, what: str, path: Path) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"{_where(path)}: {what} {text!r} is not valid Unicode (lone surrogate)"
        ) from None


def _check_key(key: object, path: Path, budget: _Budget) -> str:
    """Keys become quoted JSON-path labels, which cannot escape quotes or backslashes."""
    if not isinstance(key, str):
        raise ValueError(f"{_where(path)}: keys must be strings, got {type(key).__name__} {key!r}")
    budget.spend(path, key, terms=0)  # a key costs its characters; its value is the term
    if not key:
        raise ValueError(f"{_where(path)}: keys must be non-empty strings")
    _check_text(key, "key", path)
    for char in key:
        if char in '"\\' or unicodedata.category(char) == "Cc":
            raise ValueError(
                f"{_where(path)}: key {key!r} contains {char!r}; keys may not contain double "
                "quotes, backslashes or control characters (they cannot be expressed as JSON "
                "paths)"
            )
    return key


def _check_scalar(value: object, path: Path, budget: _Budget) -> TypeGuard[JsonScalar]:
    """Return whether ``value`` is a valid JSON scalar; raise if it is a scalar JSON cannot hold."""
    budget.spend(path, value if isinstance(value, str) else None)
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"{_where(path)}: integer {value} does not fit in 64 bits")
        return True
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{_where(path)}: {value!r} is not representable in JSON")
        return True
    if isinstance(value, str):
        _check_text(value, "string", path)
        if "\x00" in value:  # PostgreSQL cannot hold it, so no engine accepts it
            raise ValueError(f"{_where(path)}: string {value[:40]!r} contains NUL (U+0000)")
        return True
    return False


def _check_json_value(value: object, path: Path, depth: int, budget: _Budget) -> None:
    """Check a literal value (compared by deep equality) is plain JSON."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{_where(path)}: nested deeper than {MAX_DEPTH} levels")
    if _check_scalar(value, path, budget):
        return
    if isinstance(value, list):
        for item in value:
            _check_json_value(item, path, depth + 1, budget)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _check_key(key, path, budget)
            _check_json_value(item, path, depth + 1, budget)
        return
    raise ValueError(
        f"{_where(path)}: {type(value).__name__} value {value!r} is not JSON "
        "(use str, int, float, bool, None, list or dict)"
    )


def _is_operator_dict(value: dict[Any, Any], path: Path) -> bool:
    """A non-empty dict whose keys all start with ``$``; mixing is ambiguous, so it is refused."""
    dollar = [key for key in value if isinstance(key, str) and key.startswith("$")]
    if dollar and len(dollar) != len(value):
        plain = [key for key in value if key not in dollar]
        raise ValueError(
            f"{_where(path)}: mixes operators {dollar!r} with plain keys {plain!r}; "
            "use either an operator dict or a nested exact-match dict"
        )
    return bool(dollar)


def _join(kind: type[And] | type[Or], conditions: list[Condition]) -> Condition:
    return conditions[0] if len(conditions) == 1 else kind(tuple(conditions))


def _array_operand(op: str, operand: object, path: Path, budget: _Budget) -> tuple[JsonScalar, ...]:
    if isinstance(operand, list):
        if not operand:
            raise ValueError(f"{_where(path)}: {op} needs a non-empty list of values")
        items: list[object] = operand
    else:
        items = [operand]
    values: list[JsonScalar] = []
    for item in items:
        if not _check_scalar(item, path, budget):
            raise ValueError(
                f"{_where(path)}: {op} operands must be JSON scalars (str, int, float, bool, "
                f"None) or a list of them, got {type(item).__name__} {item!r}"
            )
        values.append(item)
    return tuple(values)


def _lower_operators(ops: dict[str, Any], path: Path, depth: int, budget: _Budget) -> Condition:
    conditions: list[Condition] = []
    for op, operand in ops.items():
        budget.spend(path)
        if op == OP_ARRAY_CONTAINS:
            values = _array_operand(op, operand, path, budget)
            conditions.extend(ArrayContains(path, (value,)) for value in values)
        elif op == OP_ARRAY_CONTAINS_ANY:
            conditions.append(ArrayContains(path, _array_operand(op, operand, path, budget)))
        elif op == OP_NOT:
            conditions.append(Not(_lower_field(operand, path, depth + 1, budget)))
        else:
            raise ValueError(
                f"{_where(path)}: unknown operator {op!r} "
                f"(supported: {', '.join(sorted(OPERATORS))})"
            )
    return _join(And, conditions)


def _lower_field(expr: object, path: Path, depth: int, budget: _Budget) -> Condition:
    """Lower the expression for one field: operator dict, nested dict, or literal value."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{_where(path)}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(expr, dict):
        if _is_operator_dict(expr, path):
            return _lower_operators(expr, path, depth, budget)
        conditions: list[Condition] = [IsObject(path)]
        for key, sub in expr.items():
            child = (*path, _check_key(key, path, budget))
            conditions.append(_lower_field(sub, child, depth + 1, budget))
        return _join(And, conditions)
    _check_json_value(expr, path, depth, budget)
    return Equals(path, expr)


def compile_metadata_filter(flt: object) -> Condition:
    """Validate ``flt`` and lower it to a :data:`Condition`; raises before any query runs."""
    if not isinstance(flt, dict):
        raise TypeError(f"metadata_filter must be a dict, got {type(flt).__name__}")
    conditions: list[Condition] = []
    budget = _Budget()
    for key, expr in flt.items():
        _check_key(key, (), budget)
        if key.startswith("$"):
            raise ValueError(
                f"metadata_filter: top-level key {key!r} is not allowed; operators apply to a "
                "field, e.g. {'field': {'$not': value}}, and entries are always ANDed"
            )
        conditions.append(_lower_field(expr, (key,), 1, budget))
    return And(()) if not conditions else _join(And, conditions)


def validate_metadata_filter(flt: object) -> dict[str, Any]:
    """Validate ``flt`` against the grammar and return it unchanged."""
    compile_metadata_filter(flt)
    assert isinstance(flt, dict)  # compile_metadata_filter raised otherwise
    return flt


# --------------------------------------------------------------------------- Python evaluator

_MISSING: Any = object()


def json_equal(left: object, right: object) -> bool:
    """Deep JSON equality: ``True != 1``, ``1 == 1.0``, dicts need the same key set."""
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) or isinstance(right, int | float):
        return isinstance(left, int | float) and isinstance(right, int | float) and left == right
    if isinstance(left, str) or isinstance(right, str):
        return isinstance(left, str) and isinstance(right, str) and left == right
    if isinstance(left, list | tuple):
        return (
            isinstance(right, list | tuple)
            and len(left) == len(right)
            and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
        )
    if isinstance(left, dict):
        return (
            isinstance(right, dict)
            and left.keys() == right.keys()
            and all(json_equal(value, right[key]) for key, value in left.items())
        )
    return False


def _resolve(metadata: dict[str, Any] | None, path: Path) -> Any:
    current: Any = {} if metadata is None else metadata
    for key in path:
        if not isinstance(current, dict) or key not in current:
            return _MISSING
        current = current[key]
    return current


def condition_matches(condition: Condition, metadata: dict[str, Any] | None) -> bool:
    """Evaluate a lowered condition against one record's metadata (``None`` acts as ``{}``)."""
    if isinstance(condition, And):
        return all(condition_matches(sub, metadata) for sub in condition.operands)
    if isinstance(condition, Or):
        return any(condition_matches(sub, metadata) for sub in condition.operands)
    if isinstance(condition, Not):
        return not condition_matches(condition.operand, metadata)
    value = _resolve(metadata, condition.path)
    if value is _MISSING:
        return False
    if isinstance(condition, Equals):
        return json_equal(value, condition.value)
    if isinstance(condition, IsObject):
        return isinstance(value, dict)
    if not isinstance(value, list | tuple):
        return False
    return any(json_equal(item, wanted) for wanted in condition.values for item in value)


def metadata_matches(metadata: dict[str, Any] | None, flt: dict[str, Any]) -> bool:
    """Whether a record's metadata satisfies ``flt``; the reference every backend must match."""
    return condition_matches(compile_metadata_filter(flt), metadata)

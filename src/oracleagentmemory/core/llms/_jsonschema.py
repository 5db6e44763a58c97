"""A small JSON Schema validator for the subset structured LLM output uses.

Supported keywords: ``type`` (one or a list), ``enum``, ``const``, ``properties``,
``required``, ``additionalProperties`` (bool or schema), ``minProperties``/``maxProperties``,
``items`` (one schema), ``prefixItems``, ``minItems``/``maxItems``, ``uniqueItems``,
``minLength``/``maxLength``, ``pattern``, ``minimum``/``maximum``,
``exclusiveMinimum``/``exclusiveMaximum`` (numbers), ``multipleOf``, ``anyOf``/``oneOf``/
``allOf``/``not``, and ``$ref`` to a local JSON pointer (``#/$defs/x``, ``#/definitions/x``).
Annotations (``title``, ``description``, ``default``, ``format``, ``examples``, ...) are
ignored, as the specification allows. Anything the model returns is a parsed JSON value, so
only JSON types need handling.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

_MAX_ERRORS = 5

_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


class SchemaError(ValueError):
    """The schema itself uses a keyword wrongly (not the model's fault)."""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    actual = _json_type(value)
    if name == "number":
        return actual in ("integer", "number")
    if name == "integer":
        return actual == "integer" or (
            actual == "number" and math.isfinite(value) and float(value).is_integer()
        )
    if name not in _TYPE_NAMES:
        raise SchemaError(f"unknown type {name!r} in schema")
    return actual == name


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    numeric = ("integer", "number")
    if _json_type(a) in numeric and _json_type(b) in numeric:
        return bool(a == b)
    return _json_type(a) == _json_type(b) and bool(a == b)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Validator:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.errors: list[str] = []

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise SchemaError(f"only local $ref are supported, got {ref!r}")
        node: Any = self.root
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise SchemaError(f"$ref {ref!r} does not resolve")
        return node

    def fail(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}")

    def valid(self, value: Any, schema: Any, path: str) -> bool:
        """Validate without recording errors (for anyOf/oneOf/not)."""
        saved = self.errors
        self.errors = []
        try:
            self.check(value, schema, path)
            return not self.errors
        finally:
            self.errors = saved

    def check(self, value: Any, schema: Any, path: str, depth: int = 0) -> None:
        if depth > 64:
            raise SchemaError("schema nesting too deep (a $ref cycle?)")
        if schema is True or schema == {}:
            return
        if schema is False:
            self.fail(path, "no value is allowed here")
            return
        if not isinstance(schema, Mapping):
            raise SchemaError(f"a schema must be an object or a bool, got {_short(schema)}")
        if "$ref" in schema:
            self.check(value, self.resolve(schema["$ref"]), path, depth + 1)
            if len(self.errors) >= _MAX_ERRORS:
                return

        types = schema.get("type")
        if types is not None:
            names = [types] if isinstance(types, str) else list(types)
            if not any(_is_type(value, name) for name in names):
                wanted = " or ".join(_TYPE_NAMES.get(n, n) for n in names)
                self.fail(path, f"expected {wanted}, got {_TYPE_NAMES.get(_json_type(value))}")
                return
        if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
            options = ", ".join(_short(o) for o in schema["enum"])
            self.fail(path, f"{_short(value)} is not one of {options}")
        if "const" in schema and not _same(value, schema["const"]):
            self.fail(path, f"must be {_short(schema['const'])}")

        for keyword in ("allOf", "anyOf", "oneOf"):
            if keyword in schema:
                self._combine(keyword, value, schema[keyword], path, depth)
        if "not" in schema and self.valid(value, schema["not"], path):
            self.fail(path, "matches a schema it must not match")

        kind = _json_type(value)
        if kind == "object":
            self._object(value, schema, path, depth)
        elif kind == "array":
            self._array(value, schema, path, depth)
        elif kind == "string":
            self._string(value, schema, path)
        elif kind in ("integer", "number"):
            self._number(value, schema, path)

    def _combine(self, keyword: str, value: Any, subs: Any, path: str, depth: int) -> None:
        if not isinstance(subs, list) or not subs:
            raise SchemaError(f"{keyword} must be a non-empty list of schemas")
        if keyword == "allOf":
            for sub in subs:
                self.check(value, sub, path, depth + 1)
            return
        matches = sum(1 for sub in subs if self.valid(value, sub, path))
        if keyword == "anyOf" and matches == 0:
            self.fail(path, "matches none of the allowed shapes (anyOf)")
        if keyword == "oneOf" and matches != 1:
            self.fail(path, f"must match exactly one allowed shape (oneOf), matches {matches}")

    def _object(
        self, value: dict[str, Any], schema: Mapping[str, Any], path: str, depth: int
    ) -> None:
        for name in schema.get("required", ()):
            if name not in value:
                self.fail(path, f"missing required property {name!r}")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{path}.{key}" if re.fullmatch(r"[A-Za-z_]\w*", key) else f"{path}[{key!r}]"
            if key in properties:
                self.check(item, properties[key], where, depth + 1)
            elif extra is False:
                self.fail(path, f"unexpected property {key!r}")
            elif extra is not True:
                self.check(item, extra, where, depth + 1)
            if len(self.errors) >= _MAX_ERRORS:
                return
        low, high = schema.get("minProperties"), schema.get("maxProperties")
        if low is not None and len(value) < low:
            self.fail(path, f"needs at least {low} properties")
        if high is not None and len(value) > high:
            self.fail(path, f"allows at most {high} properties")

    def _array(self, value: list[Any], schema: Mapping[str, Any], path: str, depth: int) -> None:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if low is not None and len(value) < low:
            self.fail(path, f"needs at least {low} items, got {len(value)}")
        if high is not None and len(value) > high:
            self.fail(path, f"allows at most {high} items, got {len(value)}")
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            if i < len(prefix):
                self.check(item, prefix[i], f"{path}[{i}]", depth + 1)
            elif "items" in schema:
                self.check(item, schema["items"], f"{path}[{i}]", depth + 1)
            if len(self.errors) >= _MAX_ERRORS:
                return
        if schema.get("uniqueItems"):
            for i in range(len(value)):
                if any(_same(value[i], value[j]) for j in range(i)):
                    self.fail(f"{path}[{i}]", "repeats an earlier item (uniqueItems)")
                    break

    def _string(self, value: str, schema: Mapping[str, Any], path: str) -> None:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if low is not None and len(value) < low:
            self.fail(path, f"must be at least {low} characters long")
        if high is not None and len(value) > high:
            self.fail(path, f"must be at most {high} characters long, got {len(value)}")
        pattern = schema.get("pattern")
        if pattern is not None and re.search(pattern, value) is None:
            self.fail(path, f"does not match the pattern {pattern!r}")

    def _number(self, value: float, schema: Mapping[str, Any], path: str) -> None:
        checks: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
            ("minimum", operator.ge, "must be >= {}"),
            ("maximum", operator.le, "must be <= {}"),
            ("exclusiveMinimum", operator.gt, "must be > {}"),
            ("exclusiveMaximum", operator.lt, "must be < {}"),
        )
        for keyword, ok, message in checks:
            bound = schema.get(keyword)
            if (
                isinstance(bound, int | float)
                and not isinstance(bound, bool)
                and not ok(value, bound)
            ):
                self.fail(path, message.format(bound))
        step = schema.get("multipleOf")
        if step and not math.isclose(value / step, round(value / step), abs_tol=1e-9):
            self.fail(path, f"must be a multiple of {step}")


def validation_errors(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Why ``value`` does not match ``schema`` (at most a few messages; empty when it does).

    Raises :class:`SchemaError` when the schema itself is malformed.
    """
    validator = _Validator(schema)
    validator.check(value, schema, "$")
    return validator.errors[:_MAX_ERRORS]


def check_schema(schema: object, name: str = "response_json_schema") -> dict[str, Any]:
    """``schema`` if it is a usable JSON Schema object; TypeError/ValueError naming ``name``."""
    if not isinstance(schema, dict):
        raise TypeError(f"{name} must be a dict (a JSON Schema), got {type(schema).__name__}")
    try:
        validation_errors(None, schema)  # walks type/enum/$ref at the top level
    except SchemaError as exc:
        raise ValueError(f"{name} is not a usable JSON Schema: {exc}") from exc
    return schema

"""Metadata filters: the Python evaluator, the SQLite compiler, and an independent spec must agree.

``spec_match`` below is written straight from the grammar without the condition tree, so the
property test checks the lowering as well as the SQL compiler.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from oracleagentmemory.core.store.engines.sqlite._filters_sqlite import compile_sqlite_filter
from oracleagentmemory.core.store.search._filters import (
    MAX_DEPTH,
    MAX_FILTER_CHARS,
    MAX_FILTER_TERMS,
    compile_metadata_filter,
    metadata_matches,
    validate_metadata_filter,
)

# --------------------------------------------------------------------------- helpers

T = TypeVar("T")


def dump(metadata: dict[str, Any] | None) -> str | None:
    if metadata is None:
        return None
    return json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def make_db(docs: list[dict[str, Any] | None]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, metadata TEXT)")
    conn.executemany(
        "INSERT INTO docs(id, metadata) VALUES (?, ?)",
        [(i, dump(meta)) for i, meta in enumerate(docs)],
    )
    return conn


def sql_ids(conn: sqlite3.Connection, flt: dict[str, Any]) -> set[int]:
    """Ids the SQL selects; also checks the expression is 0/1 (never NULL) and NOT-consistent."""
    sql, params = compile_sqlite_filter(flt, "d.metadata")
    rows = conn.execute(f"SELECT d.id, ({sql}) FROM docs AS d", params).fetchall()
    assert all(value in (0, 1) for _, value in rows), rows
    selected = {row[0] for row in conn.execute(f"SELECT d.id FROM docs AS d WHERE {sql}", params)}
    negated = {
        row[0] for row in conn.execute(f"SELECT d.id FROM docs AS d WHERE NOT ({sql})", params)
    }
    assert selected == {i for i, value in rows if value == 1}
    assert selected | negated == {i for i, _ in rows} and not selected & negated
    return selected


def spec_norm(value: Any) -> Any:
    """Canonical, hashable form encoding the JSON type rules: bool is not a number, 1 == 1.0."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("num", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("list", tuple(spec_norm(v) for v in value))
    assert isinstance(value, dict)
    return ("dict", frozenset((k, spec_norm(v)) for k, v in value.items()))


def spec_field(present: bool, actual: Any, expr: Any) -> bool:
    if isinstance(expr, dict) and expr and all(k.startswith("$") for k in expr):
        return all(spec_op(present, actual, op, arg) for op, arg in expr.items())
    if isinstance(expr, dict):
        return (
            present
            and isinstance(actual, dict)
            and all(spec_field(k in actual, actual.get(k), v) for k, v in expr.items())
        )
    return present and spec_norm(actual) == spec_norm(expr)


def spec_op(present: bool, actual: Any, op: str, arg: Any) -> bool:
    if op == "$not":
        return not spec_field(present, actual, arg)
    if not (present and isinstance(actual, list)):
        return False
    have = {spec_norm(item) for item in actual}
    hits = [spec_norm(w) in have for w in (arg if isinstance(arg, list) else [arg])]
    return all(hits) if op == "$array_contains" else any(hits)


def spec_match(metadata: dict[str, Any] | None, flt: dict[str, Any]) -> bool:
    doc = metadata or {}
    return all(spec_field(k in doc, doc.get(k), v) for k, v in flt.items())


# --------------------------------------------------------------------------- example-based tests

DOCS: list[dict[str, Any] | None] = [
    # 0
    {"source": "slack", "review": {"status": "open", "by": "ann"}, "tags": ["prod", "urgent"]},
    # 1
    {"source": "slack", "review": {"status": "closed"}, "tags": ["urgent", "prod"]},
    # 2
    {"source": "email", "tags": ["prod"], "count": 1, "flag": True},
    # 3
    {"source": "slack", "tags": "prod", "count": 1.0, "flag": 1},
    # 4
    None,
    # 5
    {},
    # 6
    {"a.b": "dotted", "a": {"b": "nested"}, "key with space": 7, "ünï": "códe", "n": None},
    # 7
    {"review": "open", "tags": [], "count": True, "nums": [1, 2.5, True, None, "1"]},
    # 8
    {"items": [{"k": 1, "v": [1, 2]}, {"k": 2}], "deep": {"x": {"y": {"z": [False]}}}},
    # 9
    {"n": 0, "flag": False, "tags": ["dev", "prod", "staging"], "nums": [1.0, False]},
]

EXAMPLES: list[tuple[dict[str, Any], set[int]]] = [
    ({}, set(range(len(DOCS)))),
    ({"source": "slack"}, {0, 1, 3}),
    ({"review": {"status": "open"}}, {0}),
    ({"review": {"status": "open", "by": "ann"}}, {0}),
    ({"review": {}}, {0, 1}),
    ({"tags": ["prod", "urgent"]}, {0}),
    ({"tags": ["urgent", "prod"]}, {1}),
    ({"tags": ["prod"]}, {2}),
    ({"tags": []}, {7}),
    ({"tags": {"$array_contains": "prod"}}, {0, 1, 2, 9}),
    (
        {
            "source": "slack",
            "review": {"status": "open"},
            "tags": {"$array_contains": "prod"},
        },
        {0},
    ),
    ({"tags": {"$array_contains": ["prod", "urgent"]}}, {0, 1}),
    ({"tags": {"$array_contains_any": ["urgent", "dev"]}}, {0, 1, 9}),
    ({"tags": {"$array_contains_any": "staging"}}, {9}),
    ({"tags": {"$array_contains": "prod", "$not": {"$array_contains": "urgent"}}}, {2, 9}),
    # $not over a scalar matches missing fields and other values.
    ({"source": {"$not": "slack"}}, {2, 4, 5, 6, 7, 8, 9}),
    # $not over array membership matches missing fields and non-arrays (doc 3: "prod" string).
    ({"tags": {"$not": {"$array_contains": "prod"}}}, {3, 4, 5, 6, 7, 8}),
    # $not over a nested dict.
    ({"review": {"$not": {"status": "open"}}}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
    ({"review": {"status": {"$not": "open"}}}, {1}),
    ({"tags": {"$not": ["prod", "urgent"]}}, set(range(len(DOCS))) - {0}),
    ({"tags": {"$not": {"$not": ["prod", "urgent"]}}}, {0}),
    # Type strictness: True != 1, 1 == 1.0, "1" != 1, None == null only when present.
    ({"count": 1}, {2, 3}),
    ({"count": 1.0}, {2, 3}),
    ({"count": True}, {7}),
    ({"flag": True}, {2}),
    ({"flag": 1}, {3}),
    ({"flag": False}, {9}),
    ({"n": 0}, {9}),
    ({"n": None}, {6}),
    ({"n": {"$not": None}}, set(range(len(DOCS))) - {6}),
    ({"nums": {"$array_contains": 1}}, {7, 9}),
    ({"nums": {"$array_contains": True}}, {7}),
    ({"nums": {"$array_contains": None}}, {7}),
    ({"nums": {"$array_contains": "1"}}, {7}),
    ({"nums": {"$array_contains": 2.5}}, {7}),
    ({"nums": {"$array_contains": [1.0, False]}}, {9}),
    ({"nums": {"$array_contains_any": [0, False]}}, {9}),
    ({"nums": [1, 2.5, True, None, "1"]}, {7}),
    ({"nums": [1, 2.5, 1, None, "1"]}, set()),
    ({"nums": [1, False]}, {9}),
    # Keys with dots, spaces and unicode are single labels, not paths.
    ({"a.b": "dotted"}, {6}),
    ({"a": {"b": "nested"}}, {6}),
    ({"a": {"b": "dotted"}}, set()),
    ({"key with space": 7}, {6}),
    ({"ünï": "códe"}, {6}),
    # Exact dict equality inside lists: same key set, deep-equal values.
    ({"items": [{"k": 1, "v": [1, 2]}, {"k": 2}]}, {8}),
    ({"items": [{"k": 1.0, "v": [1, 2.0]}, {"k": 2}]}, {8}),
    ({"items": [{"k": 1}, {"k": 2}]}, set()),
    ({"items": [{"k": 1, "v": [1, 2], "w": 0}, {"k": 2}]}, set()),
    ({"items": [{"k": 1, "v": [2, 1]}, {"k": 2}]}, set()),
    ({"deep": {"x": {"y": {"z": [False]}}}}, {8}),
    ({"deep": {"x": {"y": {"z": {"$array_contains": False}}}}}, {8}),
    ({"deep": {"x": {"y": {"z": {"$array_contains": 0}}}}}, set()),
    ({"deep": {"x": {"y": {"$not": {"z": [False]}}}}}, set()),
    ({"missing": {"$not": {"$array_contains_any": ["x"]}}}, set(range(len(DOCS)))),
    ({"missing": None}, set()),
]


@pytest.fixture(scope="module")
def conn() -> Iterator[sqlite3.Connection]:
    connection = make_db(DOCS)
    yield connection
    connection.close()


@pytest.mark.parametrize(("flt", "expected"), EXAMPLES, ids=[json.dumps(f) for f, _ in EXAMPLES])
def test_examples(conn: sqlite3.Connection, flt: dict[str, Any], expected: set[int]) -> None:
    assert validate_metadata_filter(flt) is flt
    assert {i for i, meta in enumerate(DOCS) if metadata_matches(meta, flt)} == expected
    assert {i for i, meta in enumerate(DOCS) if spec_match(meta, flt)} == expected
    assert sql_ids(conn, flt) == expected


def test_sql_uses_parameters_and_verbatim_column() -> None:
    sql, params = compile_sqlite_filter({"it's": "x'); DROP TABLE docs; --"}, "r.metadata")
    assert "DROP" not in sql and params == ["x'); DROP TABLE docs; --"]
    assert "json_type(r.metadata, '$.\"it''s\"')" in sql
    conn = make_db([{"it's": "x'); DROP TABLE docs; --"}, {"it's": "y"}])
    assert sql_ids(conn, {"it's": "x'); DROP TABLE docs; --"}) == {0}


def test_filters_at_the_size_limits_run_and_larger_ones_are_refused() -> None:
    """A filter of MAX_FILTER_TERMS terms compiles and runs (balanced AND keeps the SQL's
    depth logarithmic); one more term, or too many characters, is a ValueError."""
    big = list(range(MAX_FILTER_TERMS - 1))  # the list and its items: MAX_FILTER_TERMS terms
    conn = make_db([{"xs": big}, {"xs": [*big[:-1], -1]}])
    assert sql_ids(conn, {"xs": big}) == {0}
    wide = {f"k{i}": i for i in range(MAX_FILTER_TERMS)}
    conn = make_db([wide, {**wide, "k7": 8}])
    assert sql_ids(conn, wide) == {0}
    for over in (
        {"xs": [*big, 0]},
        {**wide, "one_more": 1},
        {"tags": {"$array_contains_any": list(range(MAX_FILTER_TERMS))}},
        {"a": {"$not": {"$not": {"$not": list(range(MAX_FILTER_TERMS))}}}},
        {"text": "x" * (MAX_FILTER_CHARS + 1)},
        {"k" * 200 + str(i): 1 for i in range(MAX_FILTER_CHARS // 200 + 1)},
    ):
        with pytest.raises(ValueError, match=r"^metadata_filter .*the limit"):
            validate_metadata_filter(over)
    # Refusal stops at the budget: a huge filter costs no more than a filter at the limit.
    huge = {f"key{i}": i for i in range(200_000)}
    with pytest.raises(ValueError, match="terms"):
        validate_metadata_filter(huge)


# --------------------------------------------------------------------------- validation

BAD_FILTERS: list[tuple[object, type[Exception], str]] = [
    (None, TypeError, "must be a dict"),
    ([("a", 1)], TypeError, "must be a dict"),
    ({"a": {"$foo": 1}}, ValueError, "unknown operator '$foo'"),
    ({"a": {"$and": [1]}}, ValueError, "unknown operator"),
    ({"a": {"$in": [1]}}, ValueError, "unknown operator"),
    ({"a": {"$not": {"$eq": 1}}}, ValueError, "unknown operator"),
    ({"a": {"b": {"$gt": 1}}}, ValueError, "unknown operator"),
    ({"$and": [{"a": 1}]}, ValueError, "top-level key '$and'"),
    ({"$not": {"a": 1}}, ValueError, "top-level key"),
    ({"a": {"$not": 1, "b": 2}}, ValueError, "mixes operators"),
    ({"a": {"$array_contains": []}}, ValueError, "non-empty list"),
    ({"a": {"$array_contains_any": []}}, ValueError, "non-empty list"),
    ({"a": {"$array_contains": {"x": 1}}}, ValueError, "JSON scalars"),
    ({"a": {"$array_contains": [[1]]}}, ValueError, "JSON scalars"),
    ({"a": {"$array_contains_any": [1, {"x": 1}]}}, ValueError, "JSON scalars"),
    ({"a": float("nan")}, ValueError, "not representable"),
    ({"a": [1, float("inf")]}, ValueError, "not representable"),
    ({"a": {"$array_contains": -math.inf}}, ValueError, "not representable"),
    ({"a": 2**64}, ValueError, "64 bits"),
    ({"a": (1, 2)}, ValueError, "not JSON"),
    ({"a": {1, 2}}, ValueError, "not JSON"),
    ({"a": b"x"}, ValueError, "not JSON"),
    ({"a": [{1: "x"}]}, ValueError, "keys must be strings"),
    ({1: "x"}, ValueError, "keys must be strings"),
    ({"": 1}, ValueError, "non-empty"),
    ({"a": {"": 1}}, ValueError, "non-empty"),
    ({'a"b': 1}, ValueError, "double quotes"),
    ({"a\\b": 1}, ValueError, "backslashes"),
    ({"a\nb": 1}, ValueError, "control characters"),
    ({"a": {"b\x00": 1}}, ValueError, "control characters"),
    ({"a": [{'q"': 1}]}, ValueError, "double quotes"),
    ({"a\ud800": 1}, ValueError, "surrogate"),
    ({"a": "\udfff"}, ValueError, "surrogate"),
]


@pytest.mark.parametrize(("flt", "error", "fragment"), BAD_FILTERS, ids=repr)
def test_validation_rejects(flt: object, error: type[Exception], fragment: str) -> None:
    for check in (
        validate_metadata_filter,
        compile_metadata_filter,
        lambda f: metadata_matches({}, f),
        lambda f: compile_sqlite_filter(f, "metadata"),
    ):
        with pytest.raises(error) as info:
            check(flt)
        assert str(info.value).startswith("metadata_filter"), str(info.value)
        assert fragment in str(info.value), str(info.value)


def test_validation_rejects_excessive_depth() -> None:
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = {"$not": deep}
    with pytest.raises(ValueError, match=r"^metadata_filter.*deeper"):
        validate_metadata_filter({"a": deep})
    nested: Any = 1
    for _ in range(MAX_DEPTH + 1):
        nested = [nested]
    with pytest.raises(ValueError, match=r"^metadata_filter.*deeper"):
        validate_metadata_filter({"a": nested})


def test_dollar_keys_are_plain_data_inside_list_values() -> None:
    flt = {"a": [{"$x": 1}]}
    conn = make_db([{"a": [{"$x": 1}]}, {"a": [{"$x": 2}]}])
    assert sql_ids(conn, flt) == {0}
    assert metadata_matches({"a": [{"$x": 1}]}, flt)


# --------------------------------------------------------------------------- property test

KEYS = ["a", "b", "tags", "x y", "c.d", "é"]
key_st = st.sampled_from(KEYS)
scalar_st = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.0, 1.0, 1.5, -2.5, 2.0]),
    st.sampled_from(["", "a", "b", "prod", "1", "true", "null", "x y"]),
)
value_st = st.recursive(
    scalar_st,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(key_st, children, max_size=3),
    max_leaves=8,
)
metadata_st = st.one_of(st.none(), st.dictionaries(key_st, value_st, max_size=4))


def collect(value: Any, path: tuple[str, ...], found: dict[tuple[str, ...], list[Any]]) -> None:
    """Index every value (and array element) by its dict path, so filters hit real data."""
    found.setdefault(path, []).append(value)
    if isinstance(value, dict):
        for key, sub in value.items():
            collect(sub, (*path, key), found)
    elif isinstance(value, list):
        found.setdefault((*path, "[]"), []).extend(value)


class FilterBuilder:
    """Draws valid filters biased towards one target document, so many filters select something.

    Hypothesis favours the simplest draws (0, the first element), so those pick known values.
    """

    def __init__(self, data: st.DataObject, docs: list[dict[str, Any] | None]) -> None:
        self.data = data
        self.target: dict[tuple[str, ...], list[Any]] = {}
        self.everywhere: dict[tuple[str, ...], list[Any]] = {}
        collect(self.draw(st.sampled_from([d for d in docs if d] or [{}])), (), self.target)
        for doc in docs:
            collect(doc or {}, (), self.everywhere)

    def draw(self, strategy: st.SearchStrategy[T]) -> T:
        return self.data.draw(strategy)

    def known(self, path: tuple[str, ...]) -> list[Any]:
        """Values seen at ``path``: mostly in the target document, sometimes in any document."""
        source = self.draw(st.sampled_from([self.target, self.target, self.everywhere]))
        return list(source.get(path, []))

    def value_at(self, path: tuple[str, ...]) -> Any:
        existing = self.known(path)
        if existing and self.draw(st.integers(0, 4)) < 4:
            return self.draw(st.sampled_from(existing))
        return self.draw(value_st)

    def scalar_at(self, path: tuple[str, ...]) -> Any:
        existing = [v for v in self.known((*path, "[]")) if not isinstance(v, list | dict)]
        if existing and self.draw(st.integers(0, 4)) < 4:
            return self.draw(st.sampled_from(existing))
        return self.draw(scalar_st)

    def scalars_at(self, path: tuple[str, ...]) -> list[Any]:
        return [self.scalar_at(path) for _ in range(self.draw(st.integers(1, 3)))]

    def keys_at(self, path: tuple[str, ...], min_size: int = 0) -> list[str]:
        known = sorted({k for v in self.known(path) if isinstance(v, dict) for k in v})
        pool = st.sampled_from(KEYS)
        if known and self.draw(st.integers(0, 4)) < 4:
            pool = st.sampled_from(known)
        return self.draw(st.lists(pool, min_size=min_size, max_size=2, unique=True))

    def operator(self, path: tuple[str, ...], depth: int) -> dict[str, Any]:
        kinds = ["contains", "contains_all", "any", "not"] if depth < 4 else ["contains", "any"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "contains":
            return {"$array_contains": self.scalar_at(path)}
        if kind == "contains_all":
            return {"$array_contains": self.scalars_at(path)}
        if kind == "any":
            scalars = self.scalars_at(path)
            return {"$array_contains_any": scalars if self.draw(st.booleans()) else scalars[0]}
        return {"$not": self.field(path, depth + 1)}

    def field(self, path: tuple[str, ...], depth: int) -> Any:
        kinds = ["value", "value", "value", "operator", "operator", "operators"]
        if depth < 4:
            kinds.append("nested")
        kind = self.draw(st.sampled_from(kinds))
        if kind == "value":
            return self.value_at(path)
        if kind == "operator":
            return self.operator(path, depth)
        if kind == "operators":
            merged: dict[str, Any] = {}
            for _ in range(self.draw(st.integers(2, 3))):
                merged.update(self.operator(path, depth))
            return merged
        return {key: self.field((*path, key), depth + 1) for key in self.keys_at(path)}

    def filter(self) -> dict[str, Any]:
        return {key: self.field((key,), 1) for key in self.keys_at((), min_size=1)}


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(docs=st.lists(metadata_st, min_size=2, max_size=8), data=st.data())
def test_sql_matches_evaluator(docs: list[dict[str, Any] | None], data: st.DataObject) -> None:
    flt = FilterBuilder(data, docs).filter()
    validate_metadata_filter(flt)
    conn = make_db(docs)
    try:
        expected = {i for i, meta in enumerate(docs) if metadata_matches(meta, flt)}
        assert expected == {i for i, meta in enumerate(docs) if spec_match(meta, flt)}
        assert sql_ids(conn, flt) == expected
    finally:
        conn.close()

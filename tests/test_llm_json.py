"""The tolerant JSON parser and the JSON Schema validator behind structured LLM output."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from oracleagentmemory.core.llms._jsonschema import check_schema, validation_errors
from oracleagentmemory.core.llms._jsontext import parse_json_text

# -- parser --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expect", "value"),
    [
        ('{"a": 1}', None, {"a": 1}),
        ("  \ufeff[1, 2]  ", None, [1, 2]),
        ('```json\n{"a": 1}\n```', None, {"a": 1}),
        ('```\n{"a": 1}\n```\nDone.', "object", {"a": 1}),
        ('Here: {"a": {"b": [1, 2]}} -- hope it helps {x}', "object", {"a": {"b": [1, 2]}}),
        ('<think>maybe {"wrong": 1}</think>\n{"a": 1}', "object", {"a": 1}),
        ('{"a": [1, 2,], }', "object", {"a": [1, 2]}),
        ('The list [1, 2] and the object {"k": "v"}', "object", {"k": "v"}),
        ('The list [1, 2] and the object {"k": "v"}', "array", [1, 2]),
        ('"just a string"', None, "just a string"),
        ('{"s": "brace } inside"} trailing', "object", {"s": "brace } inside"}),
        ('["<think></think>"]', "array", ["<think></think>"]),  # tags inside JSON are data
        ('<think>a</think>{"t": "<think>b</think>"}', "object", {"t": "<think>b</think>"}),
    ],
)
def test_parse_json_text(text: str, expect: str | None, value: Any) -> None:
    assert parse_json_text(text, expect) == value


@pytest.mark.parametrize(
    ("text", "expect", "match"),
    [
        ("", None, "empty"),
        ("<think>only thoughts</think>", None, "empty"),
        ("no json here at all", None, "does not contain a JSON value"),
        ('{"a": 1', "object", "does not contain a JSON object"),
        ("[1, 2]", "object", "JSON object"),
    ],
)
def test_parse_json_text_failures(text: str, expect: str | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_json_text(text, expect)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)


containers = st.lists(json_values, max_size=4) | st.dictionaries(st.text(), json_values, max_size=4)


@given(
    containers,
    st.sampled_from(["", "Sure:\n", "```json\n", "<think>x</think>"]),
    st.sampled_from(["", "\n```", " ok"]),
)
def test_parse_round_trips_wrapped_values(value: Any, before: str, after: str) -> None:
    text = before + json.dumps(value) + after
    assert parse_json_text(text, "object" if isinstance(value, dict) else "array") == value


# -- validator -----------------------------------------------------------------------------------

MEMORIES = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": 20},
                    "type": {"enum": ["memory", "fact", "preference", "guideline"]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "source_ids": {
                        "type": "array",
                        "items": {"type": "string"},
                        "uniqueItems": True,
                    },
                },
                "required": ["content", "type"],
                "additionalProperties": False,
            },
        },
        "summary": {"type": ["string", "null"]},
    },
    "required": ["memories"],
}


def test_valid_instance() -> None:
    value = {
        "memories": [
            {"content": "likes tea", "type": "preference", "confidence": 1, "source_ids": ["m1"]}
        ],
        "summary": None,
    }
    assert validation_errors(value, MEMORIES) == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "$: expected an object, got an array"),
        ({}, "$: missing required property 'memories'"),
        ({"memories": "x"}, "$.memories: expected an array, got a string"),
        (
            {"memories": [{"content": "", "type": "fact"}]},
            "$.memories[0].content: must be at least 1",
        ),
        ({"memories": [{"content": "x" * 21, "type": "fact"}]}, "must be at most 20 characters"),
        ({"memories": [{"content": "x", "type": "opinion"}]}, "'opinion' is not one of"),
        (
            {"memories": [{"content": "x", "type": "fact", "extra": 1}]},
            "unexpected property 'extra'",
        ),
        ({"memories": [{"content": "x", "type": "fact", "confidence": 2}]}, "must be <= 1"),
        (
            {"memories": [{"content": "x", "type": "fact", "confidence": True}]},
            "expected a number, got a boolean",
        ),
        ({"memories": [{"content": "x", "type": "fact", "source_ids": ["a", "a"]}]}, "uniqueItems"),
        ({"memories": [{"content": "x", "type": "fact"}] * 4}, "at most 3 items, got 4"),
        ({"memories": [], "summary": 3}, "$.summary: expected a string or null, got an integer"),
    ],
)
def test_invalid_instances(value: Any, message: str) -> None:
    errors = validation_errors(value, MEMORIES)
    assert any(message in error for error in errors), errors


def test_integer_number_and_bool_semantics() -> None:
    assert validation_errors(3.0, {"type": "integer"}) == []
    assert validation_errors(3.5, {"type": "integer"}) != []
    assert validation_errors(True, {"type": "integer"}) != []
    assert validation_errors(1, {"enum": [True]}) != []
    assert validation_errors(1.0, {"const": 1}) == []
    assert validation_errors(7, {"multipleOf": 2}) == ["$: must be a multiple of 2"]
    assert validation_errors(2, {"exclusiveMinimum": 2}) == ["$: must be > 2"]


def test_combinators_refs_and_patterns() -> None:
    schema = {
        "$defs": {"id": {"type": "string", "pattern": "^m[0-9]+$"}},
        "type": "object",
        "properties": {
            "ref": {"$ref": "#/$defs/id"},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "one": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            "all": {"allOf": [{"minLength": 2}, {"maxLength": 3}]},
            "neg": {"not": {"type": "null"}},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "free": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
    }
    ok = {
        "ref": "m12",
        "either": 3,
        "one": 1.5,
        "all": "abc",
        "neg": 0,
        "pair": ["a", 1],
        "free": {"x": 1},
    }
    assert validation_errors(ok, schema) == []
    bad = {"ref": "x1", "either": None, "one": 1, "all": "a", "neg": None}
    errors = validation_errors(bad, schema)
    assert len(errors) == 5
    assert any("pattern" in e for e in errors) and any("anyOf" in e for e in errors)
    assert any("oneOf" in e for e in errors) and any("must not match" in e for e in errors)
    assert validation_errors({"pair": [1, 1]}, schema) == [
        "$.pair[0]: expected a string, got an integer"
    ]
    assert validation_errors({"free": {"x": "1"}}, schema) == [
        "$.free.x: expected an integer, got a string"
    ]


def test_bool_schemas_and_unknown_keywords() -> None:
    assert validation_errors(5, True) == []  # type: ignore[arg-type]
    assert validation_errors({"a": 1}, {"properties": {"a": False}}) == [
        "$.a: no value is allowed here"
    ]
    assert validation_errors("x", {"type": "string", "format": "email", "description": "d"}) == []


def test_error_list_is_bounded() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    assert len(validation_errors(list(range(100)), schema)) == 5


def test_check_schema() -> None:
    assert check_schema(MEMORIES) is MEMORIES
    with pytest.raises(TypeError, match="response_json_schema"):
        check_schema([MEMORIES])
    with pytest.raises(ValueError, match="does not resolve"):
        check_schema({"$ref": "#/$defs/missing"})
    with pytest.raises(ValueError, match="unknown type"):
        check_schema({"type": "date"})
    with pytest.raises(ValueError, match="only local"):
        check_schema({"$ref": "https://example.com/schema.json"})

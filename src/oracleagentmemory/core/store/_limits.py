"""Input limits every engine enforces the same way, checked before anything is written.

One place for each rule, so SQLite and PostgreSQL accept and refuse exactly the same inputs:

* text (contents, ids, roles, queries, JSON strings and keys) may not hold NUL (U+0000, which
  PostgreSQL cannot store) or lone surrogates (not encodable as UTF-8);
* ids are at most :data:`MAX_ID_CHARS` characters (PostgreSQL's B-tree keys are bounded);
* metadata and other JSON is plain JSON no deeper than :data:`MAX_JSON_DEPTH` and no larger
  than :data:`MAX_JSON_BYTES`, checked iteratively (no recursion that a deep value could
  overflow); integers fit in 64 bits, floats are finite;
* integer arguments have one documented range each (the ``MAX_*`` constants below).

Every refusal is a ValueError (or TypeError for a wrong type) that names the argument.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from oracleagentmemory.core.retention import MAX_TTL_DAYS as RETENTION_MAX_TTL_DAYS

MAX_ID_CHARS: Final = 256
"""Longest record, scope, relation or store-object id, in characters."""
MAX_JSON_DEPTH: Final = 32
"""Deepest nesting of dicts and lists in metadata (and other stored JSON)."""
MAX_JSON_BYTES: Final = 256 * 1024
"""Largest metadata value (and other stored JSON), as UTF-8 JSON text."""
MAX_SEARCH_RESULTS: Final = 10_000
"""Largest ``k`` / ``max_results`` of one search."""
MAX_LIST_ROWS: Final = 2**31 - 1
"""Largest ``limit`` of a listing and ``last_n`` of a message window."""
MAX_SEQ_NO: Final = 2**63 - 1
"""Largest ``seq_no`` bound (a signed 64-bit integer)."""
MAX_NUM_HOPS: Final = 100
"""Deepest link expansion of one search (``num_hops``)."""
MAX_LINKED_RESULTS: Final = 10_000
"""Most linked records one search may attach (``max_linked_results``)."""
MAX_TTL_DAYS: Final = RETENTION_MAX_TTL_DAYS
"""Longest time to live, in days (year 1 to year 9999; MemoryRetentionConfig refuses more
too). Each record's expiry must also fall within year 9999 (``_time.expiry``)."""
MAX_TIMESTAMP_YEAR: Final = 9_999
"""Latest year of a timestamp (in UTC), the last a datetime can hold."""
MAX_BATCH_SIZE: Final = 100_000
"""Largest ``batch_size`` store option (rows per ``executemany``)."""
MAX_VECTOR_DIM: Final = 16_000
"""Largest vector dimension (pgvector's limit)."""
MAX_FILTER_TERMS: Final = 256
"""Most terms of one metadata filter: its conditions, operators and the values of its
literals and array operands (a filter of 256 exact-match keys is at the limit)."""
MAX_FILTER_CHARS: Final = 16_384
"""Most characters of keys and string values in one metadata filter."""
MAX_REQUEST_TEXT: Final = 64_000
"""Most characters of text one REST request or MCP tool call may ask the server to embed
(about 16,000 tokens; several seconds of the bundled model's time on two cores)."""
MAX_CALLER_CHUNK_CHARS: Final = 32_768
"""Longest caller-owned retrieval chunk (``index_texts`` lists are never re-split)."""
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


def check_text(value: str, name: str) -> str:
    """Refuse NUL characters and lone surrogates in a string (the same rule on every engine)."""
    if "\x00" in value:
        raise ValueError(f"{name} must not contain NUL characters (U+0000)")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name} is not valid Unicode: it contains a lone surrogate") from None
    return value


def check_id(value: Any, name: str) -> str:
    """A non-empty id string of at most :data:`MAX_ID_CHARS` characters."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be an empty string")
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"{name} is {len(value)} characters long; ids have at most {MAX_ID_CHARS}")
    return check_text(value, name)


def check_int(value: Any, name: str, minimum: int, maximum: int) -> int:
    """An int (not a bool) in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def _where(at: Any) -> str:
    """The name of a place in a JSON value: ``at`` is the name, or (parent place, key or
    index) pairs nested from it (built only when an error names it)."""
    steps: list[str] = []
    while isinstance(at, tuple):
        at, step = at
        steps.append(f"[{step[:40]!r}]" if isinstance(step, str) else f"[{step}]")
    return str(at) + "".join(reversed(steps))


def _text_ok(value: str) -> bool:
    """What :func:`check_text` accepts, without naming the string."""
    if "\x00" in value:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_json(value: Any, name: str, *, depth: int = 0) -> None:
    """Validate a JSON value without recursion: types, depth, text, integer and float ranges.

    Tuples count as lists (JSON has only arrays). Raises TypeError for a value JSON cannot
    hold, ValueError for one it could hold but no engine stores the same way.
    """
    stack: list[tuple[Any, int, Any]] = [(value, depth, name)]
    while stack:
        item, depth, at = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            if not _text_ok(item):
                check_text(item, _where(at))
        elif isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                raise ValueError(f"{_where(at)}: integer {item} does not fit in 64 bits")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"{_where(at)}: {item!r} is not representable in JSON")
        elif isinstance(item, dict | list | tuple):
            if depth >= MAX_JSON_DEPTH:
                raise ValueError(
                    f"{name} is nested deeper than {MAX_JSON_DEPTH} levels (the limit)"
                )
            if isinstance(item, dict):
                for key, sub in item.items():
                    if not isinstance(key, str):
                        raise TypeError(
                            f"{_where(at)} keys must be strings, got {type(key).__name__}"
                        )
                    if not _text_ok(key):
                        check_text(key, f"{_where(at)} key {key[:40]!r}")
                    stack.append((sub, depth + 1, (at, key)))
            else:
                stack.extend((sub, depth + 1, (at, i)) for i, sub in enumerate(item))
        else:
            raise TypeError(
                f"{_where(at)} must be JSON-serialisable: {type(item).__name__} is not "
                "(use str, int, float, bool, None, list or dict)"
            )


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
"""Compact JSON that keeps UTF-8 and refuses NaN (one encoder, not one per call)."""


def dumps_checked(value: Any, name: str, *, depth: int = 0) -> str:
    """Validate ``value`` with :func:`check_json` and return its compact JSON text.
    ``depth``: the level ``value`` will sit at inside the JSON that holds it."""
    check_json(value, name, depth=depth)
    text = _COMPACT(value)
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > MAX_JSON_BYTES:
        raise ValueError(f"{name} is {size} bytes of JSON; the limit is {MAX_JSON_BYTES} bytes")
    return text


class CheckedJson(dict[str, Any]):
    """A metadata dict with its JSON text already checked (``json``): the store writes that
    text as it is instead of walking the dict again. Make it only from :func:`dumps_checked`'s
    text of the same dict, or from parts each checked as that would (the LangGraph adapter's
    items, ``integrations/_langgraph_codec``); the dict must not change afterwards."""

    __slots__ = ("json",)

    def __init__(self, value: dict[str, Any], text: str) -> None:
        super().__init__(value)
        self.json = text

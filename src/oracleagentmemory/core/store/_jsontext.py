"""Decoding stored JSON columns, whatever their depth.

Writes are limited to :data:`~._limits.MAX_JSON_DEPTH` levels, but a row written before that
limit (or by another tool) may nest deeper than Python's recursive ``json`` decoder can go.
Such a value is decoded by a small iterative parser instead, so listing and search never fail
on it.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_SPACE = re.compile(r"[ \t\n\r]*")
_LITERALS = {"true": True, "false": False, "null": None}


def load_json_column(value: Any) -> Any:
    """A JSON column as Python values: engines return text (or already-decoded values)."""
    if not isinstance(value, str | bytes):
        return value
    text = value.decode("utf-8") if isinstance(value, bytes) else value
    try:
        return json.loads(text)
    except RecursionError:
        return loads_iterative(text)


def loads_iterative(text: str) -> Any:
    """Parse JSON text with an explicit stack (no recursion, any depth)."""
    # Each open container is [container, pending_key]; values attach to the top one.
    stack: list[list[Any]] = []
    result: Any = None
    pos = _SPACE.match(text, 0).end()  # type: ignore[union-attr]

    def attach(value: Any) -> None:
        nonlocal result
        if not stack:
            result = value
            return
        top = stack[-1]
        if isinstance(top[0], list):
            top[0].append(value)
        else:
            top[0][top[1]] = value

    while True:
        char = text[pos : pos + 1]
        if char == "{" or char == "[":
            container: Any = {} if char == "{" else []
            attach(container)
            stack.append([container, None])
            pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
            closing = "}" if char == "{" else "]"
            if text[pos : pos + 1] == closing:
                stack.pop()
                pos += 1
            elif char == "{":
                pos = _read_key(text, pos, stack[-1])
                continue
            else:
                continue
        elif char == '"':
            string, pos = scanstring(text, pos + 1)
            attach(string)
        elif char and (char == "-" or char.isdigit()):
            match = _NUMBER.match(text, pos)
            if match is None:
                raise ValueError(f"invalid JSON number at {pos}")
            number = match.group(0)
            attach(float(number) if match.group(1) or match.group(2) else int(number))
            pos = match.end()
        else:
            for word, literal in _LITERALS.items():
                if text.startswith(word, pos):
                    attach(literal)
                    pos += len(word)
                    break
            else:
                raise ValueError(f"invalid JSON at {pos}")
        # After a value: close containers or move to the next element.
        while True:
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if not stack:
                if pos == len(text):
                    return result
                raise ValueError(f"extra data in JSON at {pos}")
            char = text[pos : pos + 1]
            top = stack[-1]
            if char == ",":
                pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
                if isinstance(top[0], dict):
                    pos = _read_key(text, pos, top)
                break
            if char == ("]" if isinstance(top[0], list) else "}"):
                stack.pop()
                pos += 1
                continue
            raise ValueError(f"invalid JSON at {pos}")


def _read_key(text: str, pos: int, top: list[Any]) -> int:
    """Read ``"key":`` for the object on top of the stack; returns the value's position."""
    if text[pos : pos + 1] != '"':
        raise ValueError(f"expected an object key at {pos}")
    top[1], pos = scanstring(text, pos + 1)
    pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] != ":":
        raise ValueError(f"expected ':' at {pos}")
    return _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]

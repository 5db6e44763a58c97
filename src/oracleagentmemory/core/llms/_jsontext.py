"""Find the JSON value in a model's answer, tolerating the usual wrapping.

Models asked for JSON often answer with a code fence around it, a sentence before or after it,
a reasoning block (``<think>...</think>``) ahead of it (only a leading one is removed:
the same tags inside the JSON are data), or a trailing comma inside it. The
parser tries, in order: the whole text; each fenced block; then each ``{`` / ``[`` from the
left, decoding one value there and ignoring what follows. Each candidate is tried as is and
then with trailing commas removed. When ``expect`` names a JSON type (``"object"`` or
``"array"``), candidates of another type are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_LEADING_THINK = re.compile(r"\A\s*<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_MAX_STARTS = 50


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "scalar"


def _candidates(text: str) -> Iterator[str]:
    yield text
    for match in _FENCE.finditer(text):
        yield match.group(1).strip()


def _decode_prefix(text: str, start: int) -> Any:
    """Decode the JSON value starting at ``text[start]``; ignore anything after it."""
    decoder = json.JSONDecoder()
    try:
        return decoder.raw_decode(text, start)[0]
    except ValueError:
        # Retry on the balanced span with trailing commas removed.
        return decoder.raw_decode(_TRAILING_COMMA.sub(r"\1", text[start:]))[0]


def parse_json_text(text: str, expect: str | None = None) -> Any:
    """The JSON value in ``text`` (see the module docstring); ValueError when there is none.

    ``expect`` is ``"object"``, ``"array"`` or ``None`` (any JSON value).
    """
    cleaned = _LEADING_THINK.sub("", text.lstrip("\ufeff")).strip()
    if not cleaned:
        raise ValueError("the answer is empty")

    def fits(value: Any) -> bool:
        return expect is None or _kind(value) == expect

    for candidate in _candidates(cleaned):
        for variant in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
            try:
                value = json.loads(variant)
            except ValueError:
                continue
            if fits(value):
                return value
    starts = [i for i, ch in enumerate(cleaned) if ch in "{["][:_MAX_STARTS]
    for start in starts:
        try:
            value = _decode_prefix(cleaned, start)
        except ValueError:
            continue
        if fits(value):
            return value
    wanted = f"a JSON {expect}" if expect else "a JSON value"
    preview = cleaned if len(cleaned) <= 120 else cleaned[:117] + "..."
    raise ValueError(f"the answer does not contain {wanted}: {preview!r}")

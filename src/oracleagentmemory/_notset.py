"""The "argument omitted" marker: omitted and an explicit ``None`` differ throughout the API."""

from __future__ import annotations

from enum import Enum
from typing import Any, Final, Literal, TypeAlias, TypeGuard, TypeVar


class _NotSetType(Enum):
    NOT_SET = "NOT_SET"

    def __repr__(self) -> str:
        return "NOT_SET"

    def __bool__(self) -> bool:
        return False


NOT_SET_MARKER: Final = _NotSetType.NOT_SET
"""Sentinel default for parameters whose omission means something other than ``None``."""

NOT_SET: Final = NOT_SET_MARKER

NotSet: TypeAlias = Literal[_NotSetType.NOT_SET]

_T = TypeVar("_T")


def is_set(value: _T | NotSet) -> TypeGuard[_T]:
    """True when ``value`` was given by the caller (it may still be ``None``)."""
    return value is not NOT_SET_MARKER


def or_default(value: Any, default: Any) -> Any:
    """``default`` when ``value`` is the omitted marker, else ``value``."""
    return default if value is NOT_SET_MARKER else value

"""Layered configuration objects: field checks and the NOT_SET-aware base class.

Every field of a layered config defaults to ``NOT_SET_MARKER``: "inherit from the next broader
scope". Each field resolves on its own: operation value > stored thread value > client value >
SDK default::

    operation.merged_over(thread_config).merged_over(client_config).resolve()

``resolve()`` returns a ``Resolved*`` object whose fields are all concrete. ``to_json()`` and
``from_json()`` persist the explicitly set fields only, so a stored thread keeps inheriting
whatever it never set.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any, Self, TypeVar, cast

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet

_E = TypeVar("_E", bound=Enum)


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool, else TypeError."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def check_int(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` if it is an int (not a bool) within bounds, else TypeError / ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def check_float(name: str, value: Any, *, minimum: float, maximum: float = math.inf) -> float:
    """``value`` as a finite float within bounds (ints accepted), else TypeError / ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or not minimum <= number <= maximum:
        bound = f"between {minimum} and {maximum}" if math.isfinite(maximum) else f">= {minimum}"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return number


def check_optional_str(name: str, value: Any) -> str | None:
    """``value`` if it is a str or None, else TypeError."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    return value


def check_enum(name: str, value: Any, enum_type: type[_E]) -> _E:
    """A member of ``enum_type``: a member, or its value or name in any letter case."""
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str):
        for member in enum_type:
            if value.casefold() in (str(member.value).casefold(), member.name.casefold()):
                return member
        choices = ", ".join(str(member.value) for member in enum_type)
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    raise TypeError(f"{name} must be a {enum_type.__name__}, got {type(value).__name__}")


def _json_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


class LayeredConfig:
    """Behaviour shared by the layered configs (frozen dataclasses, fields default NOT_SET).

    Subclasses implement ``_check_field`` (validate and normalize one given value) and may
    override ``_check_fields`` for rules that involve several fields.
    """

    def __post_init__(self) -> None:
        for name, value in self.set_fields().items():
            object.__setattr__(self, name, self._check_field(name, value))
        self._check_fields()

    def _check_field(self, name: str, value: Any) -> Any:
        raise NotImplementedError

    def _check_fields(self) -> None:
        """Cross-field checks; the default has none."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The constructor fields, in signature order."""
        return _field_names(cls)

    def set_fields(self) -> dict[str, Any]:
        """The fields given explicitly (not NOT_SET), in signature order."""
        values = ((name, getattr(self, name)) for name in self.field_names())
        return {name: value for name, value in values if value is not NOT_SET_MARKER}

    def with_overrides(self, **changes: Any) -> Self:
        """A copy with the given fields replaced; NOT_SET values leave a field as it is.

        Lets flat keyword arguments (``create_thread(extract_memories=...)``) override the
        matching fields of a config object.
        """
        unknown = sorted(set(changes) - set(self.field_names()))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {', '.join(unknown)}")
        given = {name: value for name, value in changes.items() if value is not NOT_SET_MARKER}
        return cast(Self, dataclasses.replace(cast(Any, self), **given))

    def merged_over(self, broader: Self | NotSet | None) -> Self:
        """This config's set fields over ``broader``'s (NOT_SET or None: nothing to inherit)."""
        if broader is NOT_SET_MARKER or broader is None:
            return self
        if not isinstance(broader, type(self)):
            raise TypeError(f"cannot merge {type(self).__name__} over {type(broader).__name__}")
        return broader.with_overrides(**self.set_fields())

    def to_json(self) -> dict[str, Any]:
        """The explicitly set fields as a JSON-ready dict (enums as values, tuples as lists)."""
        return {name: _json_value(value) for name, value in self.set_fields().items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a config stored by :meth:`to_json`.

        Unknown keys are ignored, so a config stored by a newer release still loads.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"{cls.__name__}.from_json expects a mapping")
        names = set(cls.field_names())
        return cls(**{key: value for key, value in data.items() if key in names})

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.set_fields().items())
        return f"{type(self).__name__}({shown})"


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    # Read once per class: every write resolves a few configs, and dataclasses.fields
    # walks the class's field table on each call.
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(item.name for item in dataclasses.fields(cast(Any, cls)))
    return names

"""Memory-extraction and image-input configuration, layered from operation to SDK default.

Every field defaults to ``NOT_SET_MARKER``: "inherit from the next broader scope". Each field
resolves on its own: operation value > stored thread value > client value > SDK default::

    operation.merged_over(thread_config).merged_over(client_config).resolve()

``resolve()`` returns a ``Resolved*`` object whose fields are all concrete. ``to_json()`` and
``from_json()`` persist the explicitly set fields only, so a stored thread keeps inheriting
whatever it never set.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Final, Self, TypeVar, cast

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet

_E = TypeVar("_E", bound=Enum)


class MemoryExtractionMode(str, Enum):
    """When automatic extraction and image descriptions run.

    INLINE finishes the derived work before the write returns; BACKGROUND returns after the
    raw write and queues the work (best effort: derived records may appear later, or never).
    """

    INLINE = "INLINE"
    BACKGROUND = "BACKGROUND"


class MemoryLinkExtractionMode(str, Enum):
    """How automatic links between extracted memories are resolved."""

    DISABLED = "DISABLED"
    DURING_EXTRACTION = "DURING_EXTRACTION"
    POST_EXTRACTION = "POST_EXTRACTION"


class MemoryExtractionImageContext(str, Enum):
    """How images take part in automatic memory extraction.

    DISABLED leaves images and their descriptions out; IMAGE sends the image parts; CAPTION
    sends descriptions as text and needs one for every selected image; MEMORY is not
    supported yet.
    """

    DISABLED = "disabled"
    IMAGE = "image"
    CAPTION = "caption"
    MEMORY = "memory"


class BackgroundExtractionQueueFullBehavior(str, Enum):
    """What happens when background work (extraction, image captions) cannot be queued.

    DROP logs a warning and continues at once; WAIT_THEN_DROP waits up to the put timeout,
    then warns and continues; WAIT_THEN_RAISE waits, then raises TimeoutError.
    """

    DROP = "DROP"
    WAIT_THEN_DROP = "WAIT_THEN_DROP"
    WAIT_THEN_RAISE = "WAIT_THEN_RAISE"


# ------------------------------------------------------------------------------------------
# Field checks, shared with searchconfig: each error names the field.
# ------------------------------------------------------------------------------------------


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
        return tuple(item.name for item in dataclasses.fields(cast(Any, cls)))

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


# ------------------------------------------------------------------------------------------
# Memory extraction
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedMemoryExtractionConfig:
    """A memory-extraction configuration with every field resolved to a concrete value."""

    memory_extraction_window: int
    context_summary_update_frequency: int
    memory_extraction_frequency: int
    memory_extraction_token_limit: int
    extract_memories: bool
    enable_context_summary: bool
    memory_extraction_custom_instructions: str | None
    memory_link_extraction_custom_instructions: str | None
    memory_extraction_image_context: MemoryExtractionImageContext
    memory_extraction_inherit_message_metadata: bool | tuple[str, ...]
    extraction_mode: MemoryExtractionMode
    memory_link_extraction_mode: MemoryLinkExtractionMode
    memory_link_extraction_token_limit: int
    background_extraction_queue_full_behavior: BackgroundExtractionQueueFullBehavior
    background_extraction_queue_put_timeout_seconds: float


MEMORY_EXTRACTION_DEFAULTS: Final[Mapping[str, Any]] = {
    "memory_extraction_window": -1,
    "context_summary_update_frequency": -1,
    "memory_extraction_frequency": -1,
    "memory_extraction_token_limit": 100_000,
    "extract_memories": True,
    "enable_context_summary": True,
    "memory_extraction_custom_instructions": None,
    "memory_link_extraction_custom_instructions": None,
    "memory_extraction_image_context": MemoryExtractionImageContext.DISABLED,
    "memory_extraction_inherit_message_metadata": False,
    "extraction_mode": MemoryExtractionMode.BACKGROUND,
    "memory_link_extraction_mode": MemoryLinkExtractionMode.POST_EXTRACTION,
    "memory_link_extraction_token_limit": 100_000,
    "background_extraction_queue_full_behavior": BackgroundExtractionQueueFullBehavior.DROP,
    "background_extraction_queue_put_timeout_seconds": 300.0,
}
"""SDK defaults: the last layer of resolution."""


def _check_inherit_metadata(value: Any) -> bool | tuple[str, ...]:
    name = "memory_extraction_inherit_message_metadata"
    if isinstance(value, bool):
        return value
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a bool or a sequence of metadata keys (a list, not a str)")
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be str, got {type(key).__name__}")
    return tuple(value)


@dataclass(frozen=True, repr=False)
class MemoryExtractionConfig(LayeredConfig):
    """Grouped settings of automatic memory extraction (see the module docstring).

    Counts and windows are in messages, limits in tokens:

    * ``memory_extraction_window``: recent messages given to extraction; -1 uses only the
      newly added messages.
    * ``context_summary_update_frequency`` / ``memory_extraction_frequency``: messages
      between runs; values <= 0 run once per ``add_messages`` call.
    * ``memory_extraction_token_limit`` / ``memory_link_extraction_token_limit``: prompt
      budgets; values < 1 disable the limit.
    * ``memory_extraction_inherit_message_metadata``: True copies all source-message
      metadata into extracted memories, a list copies only those keys.
    * ``background_extraction_queue_put_timeout_seconds``: wait for queue capacity in the
      WAIT_THEN_* modes.
    """

    memory_extraction_window: int | NotSet = NOT_SET_MARKER
    context_summary_update_frequency: int | NotSet = NOT_SET_MARKER
    memory_extraction_frequency: int | NotSet = NOT_SET_MARKER
    memory_extraction_token_limit: int | NotSet = NOT_SET_MARKER
    extract_memories: bool | NotSet = NOT_SET_MARKER
    enable_context_summary: bool | NotSet = NOT_SET_MARKER
    memory_extraction_custom_instructions: str | NotSet | None = NOT_SET_MARKER
    memory_link_extraction_custom_instructions: str | NotSet | None = NOT_SET_MARKER
    memory_extraction_image_context: MemoryExtractionImageContext | NotSet = NOT_SET_MARKER
    memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSet = NOT_SET_MARKER
    extraction_mode: MemoryExtractionMode | NotSet = NOT_SET_MARKER
    memory_link_extraction_mode: MemoryLinkExtractionMode | NotSet = NOT_SET_MARKER
    memory_link_extraction_token_limit: int | NotSet = NOT_SET_MARKER
    background_extraction_queue_full_behavior: BackgroundExtractionQueueFullBehavior | NotSet = (
        NOT_SET_MARKER
    )
    background_extraction_queue_put_timeout_seconds: float | NotSet = NOT_SET_MARKER

    _ENUMS: ClassVar[Mapping[str, type[Enum]]] = {
        "memory_extraction_image_context": MemoryExtractionImageContext,
        "extraction_mode": MemoryExtractionMode,
        "memory_link_extraction_mode": MemoryLinkExtractionMode,
        "background_extraction_queue_full_behavior": BackgroundExtractionQueueFullBehavior,
    }

    def _check_field(self, name: str, value: Any) -> Any:
        if name in self._ENUMS:
            member = check_enum(name, value, self._ENUMS[name])
            if member is MemoryExtractionImageContext.MEMORY:
                raise ValueError(f"{name}=MEMORY (image-specific memories) is not supported yet")
            return member
        if name in ("extract_memories", "enable_context_summary"):
            return check_bool(name, value)
        if name.endswith("custom_instructions"):
            return check_optional_str(name, value)
        if name == "memory_extraction_inherit_message_metadata":
            return _check_inherit_metadata(value)
        if name == "background_extraction_queue_put_timeout_seconds":
            return check_float(name, value, minimum=0.0)
        number = check_int(name, value)
        if name == "memory_extraction_window" and number != -1 and number < 1:
            raise ValueError(f"{name} must be -1 (new messages only) or at least 1, got {number}")
        return number

    def resolve(self) -> ResolvedMemoryExtractionConfig:
        """Fill every unset field from the SDK defaults."""
        return ResolvedMemoryExtractionConfig(**{**MEMORY_EXTRACTION_DEFAULTS, **self.set_fields()})


# ------------------------------------------------------------------------------------------
# Image input limits
# ------------------------------------------------------------------------------------------

_MIB: Final = 1024 * 1024

IMAGE_INPUT_LIMIT_DEFAULTS: Final[Mapping[str, int]] = {
    "max_raw_image_bytes": 20 * _MIB,
    "max_images_per_llm_request": 20,
    "max_total_raw_image_bytes_per_llm_request": 50 * _MIB,
}
"""SDK defaults: the last layer of resolution."""

IMAGE_INPUT_ABSOLUTE_MAXIMA: Final[Mapping[str, int]] = {
    "max_raw_image_bytes": 64 * _MIB,
    "max_images_per_llm_request": 500,
    "max_total_raw_image_bytes_per_llm_request": 256 * _MIB,
}
"""Hard ceilings no configured value may exceed, at any scope."""


@dataclass(frozen=True)
class ResolvedImageInputLimitConfig:
    """Image input limits with every field resolved to a concrete value."""

    max_raw_image_bytes: int
    max_images_per_llm_request: int
    max_total_raw_image_bytes_per_llm_request: int


@dataclass(frozen=True, repr=False)
class ImageInputLimitConfig(LayeredConfig):
    """Limits on raw image size and on the images sent in one LLM request.

    Values must be at least 1 and at most :data:`IMAGE_INPUT_ABSOLUTE_MAXIMA`; validation
    cannot be turned off.
    """

    max_raw_image_bytes: int | NotSet = NOT_SET_MARKER
    max_images_per_llm_request: int | NotSet = NOT_SET_MARKER
    max_total_raw_image_bytes_per_llm_request: int | NotSet = NOT_SET_MARKER

    def _check_field(self, name: str, value: Any) -> Any:
        return check_int(name, value, minimum=1, maximum=IMAGE_INPUT_ABSOLUTE_MAXIMA[name])

    def _check_fields(self) -> None:
        single, total = self.max_raw_image_bytes, self.max_total_raw_image_bytes_per_llm_request
        if isinstance(single, int) and isinstance(total, int) and single > total:
            raise ValueError(
                "max_raw_image_bytes must not exceed max_total_raw_image_bytes_per_llm_request "
                f"({single} > {total})"
            )

    def resolve(self) -> ResolvedImageInputLimitConfig:
        """Fill every unset field from the SDK defaults."""
        return ResolvedImageInputLimitConfig(**{**IMAGE_INPUT_LIMIT_DEFAULTS, **self.set_fields()})

"""Configuration of automatic memory extraction, layered from operation to SDK default."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Final, TypedDict

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.core._shared._config import (
    LayeredConfig,
    check_bool,
    check_enum,
    check_float,
    check_int,
    check_optional_str,
)

MEMORY_EXTRACTION_WINDOW_DEFAULT: Final = -1
CONTEXT_SUMMARY_UPDATE_FREQUENCY_DEFAULT: Final = -1
MEMORY_EXTRACTION_FREQUENCY_DEFAULT: Final = -1
MEMORY_EXTRACTION_TOKEN_LIMIT_DEFAULT: Final = 100_000
MEMORY_LINKING_TOKEN_LIMIT_DEFAULT: Final = 100_000


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
    sends descriptions as text and needs one for every selected image; MEMORY (beyond the
    reference, where it is unsupported) labels each image and lets memories cite the images
    they are about, which become part of their provenance.
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
    "memory_extraction_window": MEMORY_EXTRACTION_WINDOW_DEFAULT,
    "context_summary_update_frequency": CONTEXT_SUMMARY_UPDATE_FREQUENCY_DEFAULT,
    "memory_extraction_frequency": MEMORY_EXTRACTION_FREQUENCY_DEFAULT,
    "memory_extraction_token_limit": MEMORY_EXTRACTION_TOKEN_LIMIT_DEFAULT,
    "extract_memories": True,
    "enable_context_summary": True,
    "memory_extraction_custom_instructions": None,
    "memory_link_extraction_custom_instructions": None,
    "memory_extraction_image_context": MemoryExtractionImageContext.DISABLED,
    "memory_extraction_inherit_message_metadata": False,
    "extraction_mode": MemoryExtractionMode.BACKGROUND,
    "memory_link_extraction_mode": MemoryLinkExtractionMode.POST_EXTRACTION,
    "memory_link_extraction_token_limit": MEMORY_LINKING_TOKEN_LIMIT_DEFAULT,
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
            return check_enum(name, value, self._ENUMS[name])
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


class _MemoryExtractionConfigArgumentValues(TypedDict):
    """Every ``MemoryExtractionConfig`` field of one call: a value, or ``NOT_SET_MARKER``."""

    extract_memories: Any
    enable_context_summary: Any
    memory_extraction_image_context: Any
    memory_extraction_window: Any
    context_summary_update_frequency: Any
    memory_extraction_frequency: Any
    memory_extraction_token_limit: Any
    memory_link_extraction_token_limit: Any
    memory_extraction_custom_instructions: Any
    memory_link_extraction_custom_instructions: Any
    memory_extraction_inherit_message_metadata: Any
    extraction_mode: Any
    memory_link_extraction_mode: Any
    background_extraction_queue_full_behavior: Any
    background_extraction_queue_put_timeout_seconds: Any


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside this package, for a warning raised by
    the function that calls this one (so the warning names the user's line)."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
        level += 1
    return level


def resolve_memory_extraction_config_argument(
    method_name: str,
    memory_extraction_config: MemoryExtractionConfig | NotSet,
    inline_values: Mapping[str, object],
) -> _MemoryExtractionConfigArgumentValues:
    """The extraction settings one call gives, from its ``memory_extraction_config`` or its
    inline (flat, deprecated) extraction parameters; every field absent from both is
    ``NOT_SET_MARKER``.

    Giving both is a ValueError; inline parameters alone emit a DeprecationWarning naming
    ``method_name``. Inline names that are not config fields are ignored.
    """
    given = memory_extraction_config is not NOT_SET_MARKER
    if given and not isinstance(memory_extraction_config, MemoryExtractionConfig):
        raise TypeError("memory_extraction_config must be a MemoryExtractionConfig")
    inline = {k: v for k, v in inline_values.items() if v is not NOT_SET_MARKER}
    if inline and given:
        raise ValueError(
            f"{method_name}(): pass memory_extraction_config or the inline extraction "
            f"parameters ({', '.join(sorted(inline))}), not both"
        )
    if inline:
        names = ", ".join(f"{k}=..." for k in inline)
        warnings.warn(
            f"inline memory extraction parameters of {method_name}() are deprecated; pass "
            f"memory_extraction_config=MemoryExtractionConfig({names}) instead",
            DeprecationWarning,
            stacklevel=_caller_stacklevel(),
        )
    out: dict[str, Any] = {}
    for name in _MemoryExtractionConfigArgumentValues.__annotations__:
        if name in inline:
            out[name] = inline[name]
        elif given:
            out[name] = getattr(memory_extraction_config, name)
        else:
            out[name] = NOT_SET_MARKER
    return out  # type: ignore[return-value]

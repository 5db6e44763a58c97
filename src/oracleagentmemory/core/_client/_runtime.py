"""Thread runtime configuration: which call arguments are settings, resolution, checks and
persistence.

Every setting resolves on its own: operation value > stored thread value > client value >
SDK default. Config objects (``MemoryExtractionConfig``, ``ImageInputLimitConfig``,
``MemorySearchConfig``) are flattened to one key per field (``"memory_extraction_config.
extraction_mode"``), so a field set at a narrower level never hides the broader levels' other
fields. The durable part of a thread's explicit settings is stored as JSON in its row.
"""

from __future__ import annotations

import functools
import inspect
from collections import ChainMap
from collections.abc import Mapping
from enum import Enum
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis._duck import check_llm
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.searchconfig import MemorySearchConfig

MAX_MESSAGE_TOKEN_LENGTH_DEFAULT: Final = 15_000
MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT: Final = 30_000
CONTEXT_CARD_TOKEN_LIMIT_DEFAULT: Final = 100_000
CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT: Final = 5

SDK_DEFAULTS: Final[dict[str, Any]] = {
    "max_message_token_length": MAX_MESSAGE_TOKEN_LENGTH_DEFAULT,
    "message_shortening_input_token_limit": MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT,
    "context_card_token_limit": CONTEXT_CARD_TOKEN_LIMIT_DEFAULT,
    "context_card_type_search_concurrency": CONTEXT_CARD_TYPE_SEARCH_CONCURRENCY_DEFAULT,
}
"""Thread settings with an SDK default (from the reference ``OracleThread`` signature)."""

EXTRACTION_FIELDS: Final = (
    "extract_memories",
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "memory_extraction_custom_instructions",
    "memory_extraction_inherit_message_metadata",
    "enable_context_summary",
)
"""Flat thread parameters that are fields of ``MemoryExtractionConfig``."""

THREAD_SETTINGS: Final = (
    "llm",
    "max_message_token_length",
    "message_shortening_input_token_limit",
    "memory_extraction_config",
    "image_input_limit_config",
    "search_config",
    "context_card_token_limit",
    "context_card_type_search_concurrency",
    *EXTRACTION_FIELDS,
)
"""Thread runtime settings a client call may carry (the rest of its arguments are not)."""

CONFIG_OBJECTS: Final = ("memory_extraction_config", "image_input_limit_config", "search_config")
RUNTIME_ONLY: Final = ("llm",)
"""Settings that are objects, never persisted (an LLM adapter holds credentials)."""


def _int_setting(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def _config_fields(config: Any) -> dict[str, Any]:
    """The explicitly set fields of a config object."""
    params = inspect.signature(type(config)).parameters
    out = {}
    for name in params:
        if name in ("self", "args", "kwargs"):
            continue
        value = getattr(config, name, NOT_SET_MARKER)
        if value is not NOT_SET_MARKER:
            out[name] = value
    return out


def flatten(settings: Mapping[str, Any], method: str | None = None) -> dict[str, Any]:
    """One level's explicit settings as flat keys (omitted values dropped); config objects
    of the wrong class are a TypeError, flat extraction values are checked (and normalized)
    as ``MemoryExtractionConfig`` checks its fields.

    With ``method`` (the public call the settings came from), a ``memory_extraction_config``
    together with inline extraction parameters is a ValueError and inline parameters alone
    warn that they are deprecated, as ``resolve_memory_extraction_config_argument`` says."""
    from oracleagentmemory.core.extractors.memoryextractionconfig import (
        MemoryExtractionConfig,
        resolve_memory_extraction_config_argument,
    )

    for name, cls in (
        ("memory_extraction_config", MemoryExtractionConfig),
        ("image_input_limit_config", ImageInputLimitConfig),
        ("search_config", MemorySearchConfig),
    ):
        value = settings.get(name, NOT_SET_MARKER)
        if value is not NOT_SET_MARKER and not isinstance(value, cls):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise TypeError(f"{name} must be {article} {cls.__name__}, got {type(value).__name__}")
    flat = {
        n: settings[n]
        for n in EXTRACTION_FIELDS
        if settings.get(n, NOT_SET_MARKER) is not NOT_SET_MARKER
    }
    if method is not None:  # "not both" (and the deprecation) before the values' checks
        resolve_memory_extraction_config_argument(
            method, settings.get("memory_extraction_config", NOT_SET_MARKER), flat
        )
    checked = MemoryExtractionConfig(**flat)  # the config's own checks, and its normal forms
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if value is NOT_SET_MARKER:
            continue
        if name in CONFIG_OBJECTS:
            for field, fvalue in _config_fields(value).items():
                out[f"{name}.{field}"] = fvalue
            out[f"{name}.__class__"] = type(value)
        elif name in EXTRACTION_FIELDS:
            pass  # folded below so the flat form wins over the config object
        elif name in SDK_DEFAULTS:
            out[name] = _int_setting(name, value)
        elif name == "llm" and value is not None:
            out[name] = check_llm(value, "llm")
        else:
            out[name] = value
    for name in flat:
        out[f"memory_extraction_config.{name}"] = getattr(checked, name)
    return out


def thread_settings(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime-setting arguments of a ``create_thread`` / ``get_thread`` /
    ``update_thread`` call, from its ``locals()``."""
    return {name: arguments[name] for name in THREAD_SETTINGS if name in arguments}


def to_json(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The durable part of flat settings, JSON-ready (objects and classes left out)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if key.endswith(".__class__") and isinstance(getattr(value, "KIND", None), str):
            out[key[: -len("__class__")] + "__kind__"] = value.KIND  # which config class
        if key.endswith(".__class__") or key in RUNTIME_ONLY:
            continue
        if isinstance(value, Enum):
            value = value.value
        if value is None or isinstance(value, str | int | float | bool | list | tuple):
            out[key] = list(value) if isinstance(value, tuple) else value
    return out


class ResolvedSettings:
    """Settings of one thread after resolution across the four levels."""

    def __init__(self, *levels: Mapping[str, Any]) -> None:
        self._chain = ChainMap(*[dict(level) for level in levels], dict(SDK_DEFAULTS))

    def get(self, name: str, default: Any = None) -> Any:
        return self._chain.get(name, default)

    def config(self, name: str, cls: type, **objects: Any) -> Any:
        """Rebuild a config object from the fields set at any level (others stay omitted);
        ``cls`` unless a level names the config's class; ``objects`` fill fields no level
        sets (objects that are never persisted, such as a pruner)."""
        prefix = f"{name}."
        fields = {
            k[len(prefix) :]: v
            for k, v in self._chain.items()
            if k.startswith(prefix) and not k.endswith(".__class__")
        }
        cls = self._chain.get(f"{name}.__class__", cls)
        params = _parameters(cls)
        kwargs = {}
        for field, value in {**objects, **fields}.items():
            if field not in params:
                continue
            kwargs[field] = value
        return _build(cls, kwargs)


def check_extraction(settings: ResolvedSettings, where: str) -> None:
    """Fail fast when extraction is asked for without an LLM (``where``: client or thread)."""
    llm = settings.get("llm")
    asked = settings.get("memory_extraction_config.extract_memories")
    if asked is True and llm is None:
        raise ValueError(
            f"extract_memories=True needs an llm ({where}); pass llm=... or "
            "MemoryExtractionConfig(extract_memories=False)"
        )


@functools.lru_cache(maxsize=256)
def _parameters(cls: type) -> Mapping[str, inspect.Parameter]:
    """The constructor parameters of a config class (read once: every write resolves some
    config objects, and ``inspect.signature`` costs tens of microseconds)."""
    return inspect.signature(cls).parameters


def _build(cls: type, kwargs: dict[str, Any]) -> Any:
    params = _parameters(cls)
    fixed = {}
    for name, value in kwargs.items():
        annotation = params[name].annotation
        fixed[name] = _coerce_enum(annotation, value)
    return cls(**fixed)


def _coerce_enum(annotation: Any, value: Any) -> Any:
    """Stored enum values come back as strings; let the config constructor take those too."""
    if not isinstance(value, str):
        return value
    candidates = annotation if isinstance(annotation, tuple) else (annotation,)
    for cand in candidates:
        if isinstance(cand, type) and issubclass(cand, Enum):
            try:
                return cand(value)
            except ValueError:
                continue
    return value

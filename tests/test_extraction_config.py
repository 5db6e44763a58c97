"""``resolve_memory_extraction_config_argument`` and the deprecated inline extraction
parameters of the client, ``create_thread`` and ``update_thread`` (both engines)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core import MemoryExtractionConfig, MemoryExtractionMode
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    resolve_memory_extraction_config_argument,
)

FIELDS = [
    "extract_memories",
    "enable_context_summary",
    "memory_extraction_image_context",
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "memory_link_extraction_token_limit",
    "memory_extraction_custom_instructions",
    "memory_link_extraction_custom_instructions",
    "memory_extraction_inherit_message_metadata",
    "extraction_mode",
    "memory_link_extraction_mode",
    "background_extraction_queue_full_behavior",
    "background_extraction_queue_put_timeout_seconds",
]


def test_nothing_given_is_every_field_not_set() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = resolve_memory_extraction_config_argument("create_thread", NOT_SET_MARKER, {})
    assert list(values) == FIELDS
    assert all(v is NOT_SET_MARKER for v in values.values())


def test_config_fields_come_through_and_unset_ones_stay_unset() -> None:
    config = MemoryExtractionConfig(
        extract_memories=True, extraction_mode=MemoryExtractionMode.INLINE
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = resolve_memory_extraction_config_argument(
            "create_thread", config, {"memory_extraction_frequency": NOT_SET_MARKER}
        )
    assert values["extract_memories"] is True
    assert values["extraction_mode"] is MemoryExtractionMode.INLINE
    assert values["memory_extraction_frequency"] is NOT_SET_MARKER


def test_inline_values_warn_and_unknown_names_are_ignored() -> None:
    with pytest.warns(DeprecationWarning, match=r"create_thread\(\)") as caught:
        values = resolve_memory_extraction_config_argument(
            "create_thread",
            NOT_SET_MARKER,
            {"extract_memories": False, "memory_extraction_frequency": 3, "bogus": 1},
        )
    assert caught[0].filename == __file__, "the warning points at the caller's line"
    assert values["extract_memories"] is False
    assert values["memory_extraction_frequency"] == 3
    assert "bogus" not in values
    assert values["memory_extraction_window"] is NOT_SET_MARKER


def test_config_and_inline_values_together_are_refused() -> None:
    with pytest.raises(ValueError, match="not both"):
        resolve_memory_extraction_config_argument(
            "update_thread", MemoryExtractionConfig(), {"extract_memories": True}
        )
    with pytest.raises(TypeError, match="memory_extraction_config"):
        resolve_memory_extraction_config_argument("create_thread", "config", {})  # type: ignore[arg-type]


def test_client_and_threads_apply_the_rule(make_client: Any) -> None:
    config = MemoryExtractionConfig(extract_memories=False)
    with pytest.raises(ValueError, match="not both"):
        make_client(memory_extraction_config=config, extract_memories=False)
    client = make_client()
    with pytest.raises(ValueError, match=r"create_thread\(\).*not both"):
        client.create_thread(
            user_id="u1", memory_extraction_config=config, memory_extraction_frequency=3
        )
    assert client.list_threads(user_id="u1") == [], "nothing was written"
    with pytest.warns(DeprecationWarning, match=r"create_thread\(\)") as caught:
        thread = client.create_thread(user_id="u1", memory_extraction_frequency=3)
    assert caught[0].filename == __file__
    assert thread.setting("memory_extraction_config.memory_extraction_frequency") == 3
    with pytest.raises(ValueError, match=r"update_thread\(\)"):
        client.update_thread(
            thread.thread_id, memory_extraction_config=config, extract_memories=False
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        client.update_thread(thread.thread_id, memory_extraction_config=config)

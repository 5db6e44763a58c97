"""Client and thread fixes found by probing (each test runs on every backend).

Readings chosen where the pages leave room:
- ``update_record_link``: "omitted values are kept" (page 001). A stored opposite that was
  given explicitly for a custom type is kept when ``relation_type`` changes to another custom
  type; one that was only derived (a built-in type's fixed inverse, or the custom type's own
  name, as ``link_records`` derives it) is derived again from the new type.
"""

from __future__ import annotations

import asyncio
import re
import uuid
import warnings
from typing import Any

import pytest

from oracleagentmemory.apis.message import ImageContent, ImageMimeType, TextContent
from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core import (
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemorySearchConfig,
    OracleThread,
    TopKMemorySearchConfig,
)
from oracleagentmemory.core._client._context_card import DEFAULT_SUMMARY_TOKEN_BUDGET

pytestmark = pytest.mark.filterwarnings("ignore:inline memory extraction:DeprecationWarning")

PNG = b"\x89PNG\r\n\x1a\n-test-bytes"


def _stored_thread(client: Any, thread_id: str, user_id: str = "u") -> Any:
    found = [r for r in client.list_threads(user_id=user_id) if r.id == thread_id]
    assert len(found) == 1
    return found[0]


def _message_with_image(client: Any) -> Any:
    thread = client.create_thread(thread_id="T", user_id="u")
    image = ImageContent(PNG, ImageMimeType.PNG, "a cat", id="im1")
    thread.add_messages([Message("user", [TextContent("look"), image])])
    return thread


def _image_bytes(records: list[Any]) -> list[Any]:
    return [p.bytes for r in records for p in r.content if isinstance(p, ImageContent)]


# ------------------------------------------------------------------ 1. list_messages bytes


def test_list_messages_loads_image_bytes_when_asked(make_client: Any) -> None:
    client = make_client()
    _message_with_image(client)
    assert _image_bytes(client.list_messages(thread_id="T")) == [None]
    assert _image_bytes(client.list_messages(thread_id="T", include_image_bytes=False)) == [None]
    assert _image_bytes(client.list_messages(thread_id="T", include_image_bytes=True)) == [PNG]
    loaded = asyncio.run(client.list_messages_async(thread_id="T", include_image_bytes=True))
    assert _image_bytes(loaded) == [PNG]


@pytest.mark.parametrize("value", ["bogus", 1, None, ["im1"]])
def test_list_messages_rejects_a_non_bool_include_image_bytes(make_client: Any, value: Any) -> None:
    client = make_client()
    _message_with_image(client)
    with pytest.raises(TypeError, match="include_image_bytes"):
        client.list_messages(thread_id="T", include_image_bytes=value)


# ------------------------------------------------------------------ 2. update_thread atomic


def test_failed_update_thread_writes_nothing(make_client: Any) -> None:
    client = make_client()  # no llm
    client.create_thread(thread_id="c1", user_id="u", metadata={"k": 1})
    before = _stored_thread(client, "c1")
    with pytest.raises(ValueError, match="extract_memories=True needs an llm"):
        client.update_thread("c1", metadata={"k": 2}, extract_memories=True)
    with pytest.raises(ValueError, match="needs an llm"):
        asyncio.run(client.update_thread_async("c1", extract_memories=True))
    after = _stored_thread(client, "c1")
    assert (after.runtime_config, after.metadata) == (before.runtime_config, before.metadata)
    assert client.get_thread("c1").thread_id == "c1"
    assert client.update_thread("c1", metadata={}).metadata == {}


# ------------------------------------------------------------------ 3. create_thread(None)


def test_create_thread_with_none_id_generates_one(make_client: Any) -> None:
    client = make_client()
    thread = client.create_thread(thread_id=None, user_id="u")
    assert isinstance(thread.thread_id, str)
    uuid.UUID(thread.thread_id)
    assert [r.id for r in client.list_threads(user_id="u")] == [thread.thread_id]
    thread.add_messages([{"role": "user", "content": "hello"}])
    assert [m.content for m in thread.get_messages()] == ["hello"]
    assert [r.thread_id for r in client.list_messages(user_id="u")] == [thread.thread_id]
    other = asyncio.run(client.create_thread_async(thread_id=None, user_id="u"))
    assert other.thread_id not in (None, thread.thread_id)
    assert client.get_thread(other.thread_id).thread_id == other.thread_id


def test_thread_constructor_with_none_id_generates_one(make_store: Any) -> None:
    thread = OracleThread(make_store(), thread_id=None, user_id="u")
    uuid.UUID(thread.thread_id)


# ------------------------------------------------------------------ 4. flat extraction kwargs

FLAT_BAD = [
    {"memory_extraction_window": -5},
    {"memory_extraction_window": "3"},
    {"memory_extraction_custom_instructions": 5},
    {"memory_extraction_inherit_message_metadata": 5},
    {"memory_extraction_inherit_message_metadata": ["a", 1]},
    {"memory_extraction_frequency": 1.5},
    {"memory_extraction_token_limit": True},
    {"context_summary_update_frequency": "x"},
    {"extract_memories": 1},
    {"enable_context_summary": "yes"},
]


def _config_error(kwargs: dict[str, Any]) -> tuple[type[BaseException], str]:
    try:
        MemoryExtractionConfig(**kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    raise AssertionError(f"MemoryExtractionConfig accepted {kwargs}")


def _raises_like_config(kwargs: dict[str, Any]) -> Any:
    kind, message = _config_error(kwargs)
    return pytest.raises(kind, match=f"^{re.escape(message)}$")


@pytest.mark.parametrize("kwargs", FLAT_BAD, ids=lambda kw: f"{kw}")
def test_flat_extraction_kwargs_are_checked_like_the_config(
    make_client: Any, kwargs: dict[str, Any]
) -> None:
    client = make_client()
    client.create_thread(thread_id="c1", user_id="u")
    before = _stored_thread(client, "c1").runtime_config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with _raises_like_config(kwargs):
            client.create_thread(thread_id="c2", user_id="u", **kwargs)
        with _raises_like_config(kwargs):
            asyncio.run(client.create_thread_async(thread_id="c3", user_id="u", **kwargs))
        with _raises_like_config(kwargs):
            client.update_thread("c1", metadata={"x": 1}, **kwargs)
        with _raises_like_config(kwargs):
            client.get_thread("c1", **kwargs)
    assert [r.id for r in client.list_threads(user_id="u")] == ["c1"]
    after = _stored_thread(client, "c1")
    assert (after.runtime_config, after.metadata) == (before, None)


def test_flat_extraction_kwargs_on_the_client_are_checked(make_client: Any) -> None:
    with _raises_like_config({"memory_extraction_custom_instructions": 5}):
        make_client(memory_extraction_custom_instructions=5)


def test_valid_flat_extraction_kwargs_are_still_stored(make_client: Any) -> None:
    client = make_client()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        thread = client.create_thread(
            thread_id="c1",
            user_id="u",
            memory_extraction_window=3,
            memory_extraction_inherit_message_metadata=("a", "b"),
        )
    assert thread.setting("memory_extraction_config.memory_extraction_window") == 3
    stored = _stored_thread(client, "c1").runtime_config
    assert stored["memory_extraction_config.memory_extraction_inherit_message_metadata"] == [
        "a",
        "b",
    ]


# ------------------------------------------------------------------ 5. config argument types

WRONG_CONFIGS = [
    ("image_input_limit_config", "ImageInputLimitConfig", {"max_raw_image_bytes": 5}),
    ("image_input_limit_config", "ImageInputLimitConfig", 5),
    ("image_input_limit_config", "ImageInputLimitConfig", MemoryExtractionConfig()),
    ("memory_extraction_config", "MemoryExtractionConfig", {"extract_memories": False}),
    ("memory_extraction_config", "MemoryExtractionConfig", "x"),
    ("memory_extraction_config", "MemoryExtractionConfig", ImageInputLimitConfig()),
    ("search_config", "MemorySearchConfig", {"token_budget": 5}),
    ("search_config", "MemorySearchConfig", None),
    ("search_config", "MemorySearchConfig", ImageInputLimitConfig()),
]


@pytest.mark.parametrize(("name", "cls", "value"), WRONG_CONFIGS, ids=lambda v: repr(v))
def test_config_arguments_of_the_wrong_type(
    make_client: Any, name: str, cls: str, value: Any
) -> None:
    expected = pytest.raises(TypeError, match=rf"{name} must be an? {cls}")
    with expected:
        make_client(name="other.db", **{name: value})
    client = make_client()
    client.create_thread(thread_id="c1", user_id="u")
    before = _stored_thread(client, "c1").runtime_config
    with pytest.raises(TypeError, match=rf"{name} must be an? {cls}"):
        client.create_thread(thread_id="c2", user_id="u", **{name: value})
    with pytest.raises(TypeError, match=rf"{name} must be an? {cls}"):
        client.update_thread("c1", metadata={"x": 1}, **{name: value})
    with pytest.raises(TypeError, match=rf"{name} must be an? {cls}"):
        asyncio.run(client.update_thread_async("c1", **{name: value}))
    with pytest.raises(TypeError, match=rf"{name} must be an? {cls}"):
        client.get_thread("c1", **{name: value})
    assert [r.id for r in client.list_threads(user_id="u")] == ["c1"]
    after = _stored_thread(client, "c1")
    assert (after.runtime_config, after.metadata) == (before, None)


def test_config_subclasses_are_still_accepted(make_client: Any) -> None:
    client = make_client(search_config=TopKMemorySearchConfig())
    thread = client.create_thread(thread_id="c1", user_id="u", search_config=MemorySearchConfig())
    assert thread.thread_id == "c1"


# ------------------------------------------------------------------ 6. one-element lists

MEMORY_LISTS = [
    ("metadata", [{"a": 1}]),
    ("memory_id", ["m2"]),
    ("user_id", ["u"]),
    ("agent_id", ["g"]),
    ("thread_id", ["t"]),
    ("timestamp", ["2024-01-01"]),
    ("ttl_days", [5]),
    ("link_metadata", [{"a": 1}]),
]


@pytest.mark.parametrize(("name", "value"), MEMORY_LISTS)
def test_add_memory_rejects_a_list_for_one_value(make_client: Any, name: str, value: Any) -> None:
    client = make_client()
    thread = client.create_thread(thread_id="T", user_id="u")
    with pytest.raises(TypeError, match=name):
        client.add_memory("x", **{name: value})
    with pytest.raises(TypeError, match=name):
        asyncio.run(client.add_memory_async("x", **{name: value}))
    with pytest.raises(TypeError, match=name):
        thread.add_memory("x", **{name: value})
    assert client.list_memories() == []


def test_profiles_images_links_and_threads_reject_list_metadata(make_client: Any) -> None:
    client = make_client()
    with pytest.raises(TypeError, match="metadata"):
        client.add_user("U", "x", metadata=[{"a": 1}])
    with pytest.raises(TypeError, match="metadata"):
        asyncio.run(client.add_agent_async("G", "x", metadata=[{"a": 1}]))
    assert client.list_users() == [] and client.list_agents() == []
    with pytest.raises(TypeError, match="metadata"):
        client.add_image(PNG, description="d", mime_type=ImageMimeType.PNG, metadata=[{"a": 1}])
    with pytest.raises(TypeError, match="metadata"):
        client.create_thread(thread_id="L", user_id="u", metadata=[{"a": 1}])
    with pytest.raises(TypeError, match="metadata"):
        OracleThread(client.store, thread_id="L", user_id="u", metadata=[{"a": 1}])
    assert client.list_threads(user_id="u") == []
    thread = client.create_thread(thread_id="T", user_id="u")
    with pytest.raises(TypeError, match="image_id"):
        thread.add_image(PNG, description="d", mime_type=ImageMimeType.PNG, image_id=["i"])
    assert client.list_images() == []
    client.add_memory("a", memory_id="a", user_id="u")
    client.add_memory("b", memory_id="b", user_id="u")
    with pytest.raises(TypeError, match="metadata"):
        client.link_records("a", "memory", "b", "memory", "supports", metadata=[{"a": 1}])
    with pytest.raises(TypeError, match="timestamp"):
        thread.link_records("a", "memory", "b", "memory", "supports", timestamp=["2024-01-01"])
    assert client.store.list_relations() == []


# ------------------------------------------------------------------ 7. link opposite kept


def _rel(client: Any, relation_id: str) -> tuple[str, str]:
    relation = client.store.get_relation(relation_id=relation_id)
    return (relation.relation_type, relation.opposite_relation_type)


def test_update_record_link_keeps_a_custom_opposite(make_client: Any) -> None:
    client = make_client()
    client.add_memory("a", memory_id="a", user_id="u")
    client.add_memory("b", memory_id="b", user_id="u")
    client.link_records(
        "a",
        "memory",
        "b",
        "memory",
        "inspires",
        opposite_relation_type="inspired_by",
        relation_id="r",
    )
    assert client.update_record_link("r", relation_type="motivates") == 1
    assert _rel(client, "r") == ("motivates", "inspired_by")
    thread = client.get_thread(client.create_thread(thread_id="T", user_id="u").thread_id)
    assert thread.update_record_link("r", relation_type="drives") == 1
    assert _rel(client, "r") == ("drives", "inspired_by")
    assert client.update_record_link("r", relation_type="supports") == 1
    assert _rel(client, "r") == ("supports", "is_supported_by")


def test_update_record_link_derives_an_opposite_that_was_derived(make_client: Any) -> None:
    client = make_client()
    for mid in ("a", "b", "c"):
        client.add_memory(mid, memory_id=mid, user_id="u")
    client.link_records("a", "memory", "b", "memory", "mentions", relation_id="sym")
    client.link_records("a", "memory", "c", "memory", "supports", relation_id="builtin")
    client.update_record_link("sym", relation_type="cites")
    client.update_record_link("builtin", relation_type="motivates")
    assert _rel(client, "sym") == ("cites", "cites")
    assert _rel(client, "builtin") == ("motivates", "motivates")


# ------------------------------------------------------------------ 8. get_summary docstring


def test_get_summary_docstring_names_the_true_default_budget() -> None:
    doc = OracleThread.get_summary.__doc__ or ""
    assert f"(default {DEFAULT_SUMMARY_TOKEN_BUDGET})" in doc

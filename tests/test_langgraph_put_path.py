"""The LangGraph adapter's put path (issue #53): the same ids, metadata text and ownership
checks as before, with less work: ids from one JSON encoding and a copied HMAC, the item's
metadata text assembled from parts already checked (the store does not walk it again), and
one ``get_many`` read for every id of a batch. Both engines where a store is involved.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")

from langgraph.store.base import PutOp

from oracleagentmemory.core.store._limits import MAX_JSON_BYTES, CheckedJson, dumps_checked
from oracleagentmemory.core.store.schema._planning import check_metadata
from oracleagentmemory.integrations._langgraph_codec import (
    check_value,
    checked_item_metadata,
    id_hasher,
    index_signature,
    item_ids,
    item_metadata,
    legacy_memory_id,
    memory_id,
)
from oracleagentmemory.integrations.langgraph import AgentMemoryStore

SECRET = bytes(range(32))

ID_CASES = [
    ("alice", None, ("memories", "alice"), "k"),
    (None, None, ("shared",), "tone"),
    ("bob", "helper", ("org", "acme", "bob"), 'quote " and \\ backslash'),
    ("zoë", "agent ✓", ("ünïcode", "日本語", "zoë"), "emoji 🙂 key"),
    ("u", "a", ("a", "b", "c", "d", "e", "f"), "x" * 300),
    ("u\u2028", None, ("tab\there", "nl\nthere"), "ctrl\u0001"),
    ("u", None, (), 'empty "namespace"'),
]


@pytest.mark.parametrize(("user", "agent", "namespace", "key"), ID_CASES)
def test_item_ids_are_the_reference_ids(
    user: str | None, agent: str | None, namespace: tuple[str, ...], key: str
) -> None:
    hasher = id_hasher(SECRET)
    ids = item_ids(hasher, user, agent, namespace, key)
    assert ids == (
        memory_id(SECRET, user, agent, namespace, key),
        legacy_memory_id(agent, namespace, key),
    )
    # The keyed hasher is copied, never updated: the next id is the same again.
    assert item_ids(hasher, user, agent, namespace, key) == ids
    assert item_ids(id_hasher(b"another secret"), user, agent, namespace, key)[0] != ids[0]


@pytest.mark.parametrize(
    "texts", [["one"], ["zoë ✓", 'q"uo\\te', "ctrl\u0001 \u2028"], [], ["日本語 🙂"] * 3]
)
def test_index_signature_is_the_reference_digest(texts: list[str]) -> None:
    raw = json.dumps(list(texts), ensure_ascii=False)
    assert index_signature(texts) == hashlib.sha256(raw.encode()).hexdigest()


VALUES = [
    {"text": "plain"},
    {"text": "zoë ✓ 日本語 🙂", "n": 3, "f": 1.5, "big": 2**62, "neg": -0.0},
    {"nested": {"list": [1, [2, [3, {"deep": None}]]], "t": True, "e": ""}},
    {"esc": 'quote " backslash \\ ctrl \u0001 sep \u2028', "": "empty key"},
    {},
]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("ttl", [None, 90.0])
@pytest.mark.parametrize("signature", [None, "ab" * 32])
def test_checked_metadata_is_the_fully_checked_text(
    value: dict[str, Any], ttl: float | None, signature: str | None
) -> None:
    namespace, key = ("memories", "zoë", "*x"), "clé 🙂"
    stamp = datetime.now(UTC).isoformat()
    value, content = check_value(value)
    fast = checked_item_metadata(
        namespace,
        key,
        value,
        content,
        created_at=stamp,
        updated_at=stamp,
        ttl_minutes=ttl,
        signature=signature,
    )
    full = item_metadata(
        namespace,
        key,
        value,
        created_at=stamp,
        updated_at=stamp,
        ttl_minutes=ttl,
        signature=signature,
    )
    assert type(fast) is CheckedJson and type(full) is CheckedJson
    assert fast.json == full.json == dumps_checked(dict(full), "value")
    assert dict(fast) == dict(full) == json.loads(fast.json)


def test_metadata_near_the_size_limit_is_measured_whole() -> None:
    stamp = datetime.now(UTC).isoformat()
    # The value alone fits (checked as the plan checks it); with the wrapper it does not.
    value, content = check_value({"text": "x" * (MAX_JSON_BYTES - 40)})
    with pytest.raises(ValueError, match="limit"):
        checked_item_metadata(
            ("ns",),
            "k",
            value,
            content,
            created_at=stamp,
            updated_at=stamp,
            ttl_minutes=None,
            signature="ab" * 32,
        )


def test_the_store_writes_checked_json_as_is_and_checks_plain_dicts() -> None:
    meta = {"a": [1, "ü"]}
    # Its own text, not walked nor encoded again (spaced here, so a re-encoding would show).
    assert check_metadata(CheckedJson(meta, '{"a": [1, "ü"]}')) == '{"a": [1, "ü"]}'
    assert check_metadata(meta) == '{"a":[1,"ü"]}'
    with pytest.raises(ValueError, match="metadata"):
        check_metadata({"a": float("nan")})
    with pytest.raises(TypeError, match="metadata"):
        check_metadata({"a": object()})


# ---------------------------------------------------------------------------- the store


def test_get_many_reads_live_records_of_one_type(client: Any) -> None:
    store = client.store
    ids = [f"m-{i}" for i in range(620)]  # more than one query's 500 ids
    store.add(
        contents=[f"memory {i}" for i in range(620)],
        record_type="memory",
        record_ids=ids,
        user_ids="alice",
    )
    store.add(contents=["a message"], record_type="message", record_ids=["msg-1"])
    store.add(
        contents=["gone"],
        record_type="memory",
        record_ids=["expired"],
        timestamps=["2001-01-01T00:00:00+00:00"],
        ttl_days=1,
        ttl_anchor="timestamp",
    )
    asked = [*ids, "m-3", "missing", "msg-1", "expired"]
    got = store.get_many("memory", asked)
    assert set(got) == set(ids)
    assert all(got[i].id == i and got[i].content == f"memory {i[2:]}" for i in ids[::50])
    assert store.get("memory", "expired") is None
    assert store.get_many("message", ["msg-1", "m-1"]).keys() == {"msg-1"}
    assert store.get_many("memory", []) == {}
    with pytest.raises(TypeError, match="record_ids"):
        store.get_many("memory", "m-1")
    with pytest.raises(ValueError, match="record_ids"):
        store.get_many("memory", ["bad\x00id"])


def test_a_batch_of_puts_reads_its_ids_once(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lg = AgentMemoryStore(client, index={"fields": ["text"]}, user_id_from=1)
    lg.put(("memories", "alice"), "old", {"text": "first"})
    created = lg.get(("memories", "alice"), "old")
    assert created is not None
    store = client.store
    calls: list[list[str]] = []
    real = store.get_many

    def counted(record_type: str, record_ids: list[str]) -> dict[str, Any]:
        calls.append(list(record_ids))
        return real(record_type, record_ids)

    def no_get(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a put reads through get_many only")

    monkeypatch.setattr(store, "get_many", counted)
    monkeypatch.setattr(store, "get", no_get)
    lg.batch(
        [
            PutOp(("memories", "alice"), "old", {"text": "second"}),
            PutOp(("memories", "alice"), "new", {"text": "third"}),
            PutOp(("memories", "bob"), "new", {"text": "fourth"}),
        ]
    )
    assert len(calls) == 1 and len(calls[0]) == 6  # the keyed and the old id of each
    monkeypatch.undo()
    old = lg.get(("memories", "alice"), "old")
    assert old is not None and old.value == {"text": "second"}
    assert old.created_at == created.created_at and old.updated_at > created.updated_at
    new = lg.get(("memories", "bob"), "new")
    assert new is not None and new.value == {"text": "fourth"}
    record = store.get_many(
        "memory", [item_ids(lg._planner.hasher, "bob", None, ("memories", "bob"), "new")[0]]
    )
    (rec,) = record.values()
    assert rec.user_id == "bob"
    assert rec.metadata == item_metadata(
        ("memories", "bob"),
        "new",
        {"text": "fourth"},
        created_at=rec.metadata["langgraph"]["created_at"],
        updated_at=rec.metadata["langgraph"]["updated_at"],
        ttl_minutes=None,
        signature=rec.metadata["langgraph"]["index_signature"],
    )


DEEP: dict[str, Any] = {}
_cur = DEEP
for _ in range(40):
    _cur["n"] = {}
    _cur = _cur["n"]


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ({"a": {"b": [1, 2, "x\x00"]}}, ValueError, "metadata['a']['b'][2] must not contain NUL"),
        ({"a": [float("nan")]}, ValueError, "metadata['a'][0]: nan is not representable"),
        ({"k": {"é\x00": 1}}, ValueError, "metadata['k'] key 'é\\x00' must not contain NUL"),
        ({"a": {1: 2}}, TypeError, "metadata['a'] keys must be strings, got int"),
        ({"a": [[[object()]]]}, TypeError, "metadata['a'][0][0][0] must be JSON-serialisable"),
        ({"a": 2**70}, ValueError, "metadata['a']: integer 1180591620717411303424 does not fit"),
        ({"a" * 60: {"b": "\ud800"}}, ValueError, f"metadata['{'a' * 40}']['b'] is not valid"),
        ({"y": ("t\x00",)}, ValueError, "metadata['y'][0] must not contain NUL"),
        ("x\x00", ValueError, "metadata must not contain NUL"),
        (DEEP, ValueError, "metadata is nested deeper than 32 levels"),
    ],
)
def test_json_errors_name_the_place(value: Any, error: type, message: str) -> None:
    """The walk names a place only when it refuses (no name built per item): the same
    names as before."""
    with pytest.raises(error) as info:
        dumps_checked(value, "metadata")
    assert str(info.value).startswith(message)
    assert dumps_checked({"ok": ["zoë", 1, 2.5, None, True, {"x": []}]}, "metadata") == (
        '{"ok":["zoë",1,2.5,null,true,{"x":[]}]}'
    )

"""Regression tests of issue 8 for threads: seq_no is never reused, a handle to a deleted
thread cannot write, and lone surrogates are refused with every embedder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION
from oracleagentmemory.core.store.engines.sqlite._sqlite import SQLiteDialect

from ._dump import dump_store
from ._embedders import HashingEmbedder


def seqs(store: Any, thread_id: str) -> list[int]:
    return [m.seq_no for m in store.list_thread_messages(thread_id)]


def test_seq_no_is_not_reused_after_the_newest_message_is_deleted(store: Any) -> None:
    ids = store.add(["a", "b", "c"], record_type="message", thread_ids="t", roles="user")
    assert store.delete("message", ids[-1]) == 1
    store.add(["d"], record_type="message", thread_ids="t", roles="user")
    assert seqs(store, "t") == [1, 2, 4]
    store.add(["x"], record_type="message", roles="user")  # a message without a thread
    [last] = store.add(["y"], record_type="message", roles="user")
    store.delete("message", last)
    store.add(["z"], record_type="message", roles="user")
    assert [m.seq_no for m in store.list("message", thread_id=None)] == [1, 3]


def test_seq_no_is_not_reused_after_the_newest_message_expires(store: Any) -> None:
    store.add(["a"], record_type="message", thread_ids="t", roles="user")
    old = (datetime.now(UTC) - timedelta(days=3)).isoformat()
    store.add(
        ["gone"],
        record_type="message",
        thread_ids="t",
        roles="user",
        timestamps=old,
        ttl_days=1,
        ttl_anchor="timestamp",
    )
    assert seqs(store, "t") == [1]  # expired: invisible at once
    assert store.purge_expired() == 1
    store.add(["b"], record_type="message", thread_ids="t", roles="user")
    assert seqs(store, "t") == [1, 3]


def test_a_deleted_thread_starts_over(store: Any) -> None:
    store.create_thread_record("t", user_id="u", agent_id=None, metadata=None, runtime_config={})
    store.add(["a", "b"], record_type="message", thread_ids="t", roles="user")
    store.delete_thread("t")
    store.add(["c"], record_type="message", thread_ids="t", roles="user")
    assert seqs(store, "t") == [1]


def test_upgrade_to_schema_3_keeps_the_high_water_marks(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    dialect = SQLiteDialect(str(path), "oam")
    with dialect.transaction():
        dialect.migrate(0, 2)
        dialect.execute("INSERT INTO oam_meta VALUES ('schema_version', '2')")
        dialect.execute("INSERT INTO oam_meta VALUES ('vector_dim', '64')")
        for seq in (1, 2, 7):
            dialect.execute(
                "INSERT INTO oam_records (rid, family, record_type, id, content, seq_no,"
                " thread_id, created_at) VALUES (?, 'message', 'message', ?, 'x', ?, 't', ?)",
                [seq, f"m{seq}", seq, datetime.now(UTC).isoformat()],
            )
    dialect.close()
    store = SQLiteMemoryStore(
        HashingEmbedder(), str(path), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    assert store._dialect.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    store.delete("message", "m7")
    store.add(["after"], record_type="message", thread_ids="t", roles="user")
    assert seqs(store, "t") == [1, 2, 8]
    store.close()


# ---------------------------------------------------------------------------- deleted threads


def test_a_handle_to_a_deleted_thread_cannot_write(client: Any) -> None:
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": "hello"}])
    stale = client.get_thread("t")
    assert client.delete_thread("t") == 1
    store = client.store
    before = dump_store(store)
    for write in (
        lambda: stale.add_messages([{"role": "user", "content": "orphan"}]),
        lambda: stale.add_memory("orphan memory"),
        lambda: stale.add_image(b"\x89PNG\r\n\x1a\n" + b"0" * 16, description="orphan image"),
        lambda: thread.add_messages([{"role": "user", "content": "orphan"}]),
    ):
        with pytest.raises(KeyError, match="'t'"):
            write()
    assert dump_store(store) == before
    assert client.search("orphan", user_id="u") == []
    # Recreating the thread makes handles usable again.
    client.create_thread(thread_id="t", user_id="u", agent_id="a")
    assert len(stale.add_messages([{"role": "user", "content": "back"}])) == 1


# ---------------------------------------------------------------------------- lone surrogates


def _embedder(request: pytest.FixtureRequest, which: str) -> Any:
    if which == "hashing":
        return HashingEmbedder()
    if which == "local":
        return request.getfixturevalue("local_embedder")
    from oracleagentmemory.core.embedders import Embedder

    from ._openai_server import FakeOpenAIServer

    server = FakeOpenAIServer(api_key="k")
    server.__enter__()
    request.addfinalizer(lambda: server.__exit__(None, None, None))
    return Embedder("test-embed", api_base=server.api_base, api_key="k")


@pytest.mark.parametrize("which", ["hashing", "local", "openai"])
def test_lone_surrogates_are_refused_with_every_embedder(
    make_client: Any, request: pytest.FixtureRequest, which: str
) -> None:
    embedder = _embedder(request, which)
    client = make_client(embedder=embedder, name=f"surrogates-{which}.db")
    thread = client.create_thread(user_id="u", agent_id="a")
    store = client.store
    before = dump_store(store)
    for name, call in (
        ("content", lambda: client.add_memory("bad \ud800 text")),
        ("content", lambda: thread.add_messages([{"role": "user", "content": "x\udfff"}])),
        ("query", lambda: client.search("q \ud800", user_id="u")),
        ("query", lambda: thread.search("\udc00")),
        ("contents", lambda: store.add(["\ud83d"], record_type="memory")),
        ("metadata", lambda: client.add_memory("fine", metadata={"k": "\ud800"})),
        ("role", lambda: thread.add_messages([{"role": "u\ud800", "content": "x"}])),
        ("information", lambda: client.add_user("u2", "\ud800")),
    ):
        with pytest.raises(ValueError, match=name):
            call()
    assert dump_store(store) == before
    if which != "hashing":  # the package's embedders name the offending text themselves
        with pytest.raises(ValueError, match=r"texts\[1\]"):
            embedder.embed(["fine", "bad \ud800"])

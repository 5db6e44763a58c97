"""Thread ownership at the root (issue 21), on every engine: a thread id belongs to the user of
its first write, whichever API wrote it; another user's write naming it is refused with nothing
written; reads, deletes and cascades through a thread id touch only its owner's rows (and
user-less ones); stores made before ownership existed are migrated, and ids several users
wrote are reported."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from oracleagentmemory.apis import PendingRecordBatch
from oracleagentmemory.core import SchemaPolicy
from oracleagentmemory.core.store._threads import ThreadOwnershipError

from ._images import PNG

MSG = {"record_type": "message", "roles": "user"}


def _ids(records: Any) -> list[str]:
    return [r.id for r in records]


def _bob_thread(store: Any) -> None:
    """Bob's conversation written the way the store tour writes it: messages, no thread row."""
    store.add(
        ["bob's secret plan", "bob's bank pin"],
        thread_ids="conv",
        user_ids="bob",
        record_ids=["b1", "b2"],
        **MSG,
    )


# ---------------------------------------------------------------------------- writes


@pytest.mark.parametrize("write", ["message", "memory", "fact", "thread_row", "image", "batch"])
def test_a_write_into_another_users_thread_is_refused(store: Any, write: str) -> None:
    _bob_thread(store)
    before = len(store.list("message", limit=None)) + len(store.list("memory", limit=None))
    with pytest.raises(ThreadOwnershipError, match="belongs to another user") as err:
        if write == "message":
            store.add(["hi"], thread_ids="conv", user_ids="alice", **MSG)
        elif write in ("memory", "fact"):
            store.add(["x"], record_type=write, thread_ids="conv", user_ids="alice")
        elif write == "thread_row":
            store.add([None], record_type="thread", record_ids="conv", user_ids="alice")
        elif write == "image":
            store.add_image(PNG, mime_type="image/png", user_id="alice", thread_id="conv")
        else:  # one batch: a harmless record beside the refused one, so none of it lands
            store.add(
                ["ok", "evil"],
                record_type="memory",
                record_ids=["ok", "evil"],
                thread_ids=["mine", "conv"],
                user_ids="alice",
            )
    assert isinstance(err.value, ValueError)
    assert "bob" not in str(err.value), "the refusal does not name the owner"
    after = len(store.list("message", limit=None)) + len(store.list("memory", limit=None))
    assert after == before
    assert store.thread_owner("conv") == ("bob", None)
    assert store.thread_owner("mine") is None
    assert store.list("image", limit=None) == []


def test_one_batch_cannot_mix_users_in_a_thread(store: Any) -> None:
    with pytest.raises(ThreadOwnershipError, match="one user"):
        store.add(["a", "b"], thread_ids="t", user_ids=["alice", "bob"], **MSG)
    with pytest.raises(ThreadOwnershipError, match="belongs to user 'alice'"):
        store.add_batches(
            [
                PendingRecordBatch(
                    contents=[None], record_type="thread", record_ids="t", user_ids="alice"
                ),
                PendingRecordBatch(
                    contents=["m"], record_type="memory", thread_ids="t", user_ids="bob"
                ),
            ]
        )
    assert store.thread_owner("t") is None
    assert store.list("memory", limit=None) == []


def test_the_owner_keeps_writing_and_user_less_rows_may_join(store: Any) -> None:
    store.add(["first"], thread_ids="t", user_ids="alice", agent_ids="a1", **MSG)
    assert store.thread_owner("t") == ("alice", "a1")
    store.add(["second"], thread_ids="t", user_ids="alice", agent_ids="a2", **MSG)
    store.add(["thread note"], record_type="guideline", thread_ids="t", record_ids="note")
    # The thread row, written later by the same user, sets the thread's agent.
    store.add([None], record_type="thread", record_ids="t", user_ids="alice", agent_ids="a2")
    assert store.thread_owner("t") == ("alice", "a2")
    assert [m.content for m in store.list_thread_messages("t")] == ["first", "second"]
    # A thread first written without a user belongs to no user: users cannot join it.
    store.add(["shared"], record_type="memory", thread_ids="open")
    assert store.thread_owner("open") == (None, None)
    with pytest.raises(ThreadOwnershipError):
        store.add(["mine now"], record_type="memory", thread_ids="open", user_ids="alice")
    store.add(["also shared"], record_type="memory", thread_ids="open")


def test_deleting_the_thread_frees_its_id(store: Any) -> None:
    _bob_thread(store)
    store.add(["note"], record_type="memory", thread_ids="conv", record_ids="n")  # user-less
    assert store.delete_thread("conv") == 0  # no thread row, but its rows go
    assert store.get("message", "b1") is None and store.get("memory", "n") is None
    assert store.thread_owner("conv") is None
    store.add(["alice reuses the id"], thread_ids="conv", user_ids="alice", **MSG)
    assert store.thread_owner("conv") == ("alice", None)
    assert [m.content for m in store.list_thread_messages("conv")] == ["alice reuses the id"]


def test_a_user_cascade_frees_the_users_thread_ids(store: Any) -> None:
    _bob_thread(store)
    store.add([None], record_type="thread", record_ids="bt", user_ids="bob")
    store.add(["alice's"], thread_ids="at", user_ids="alice", **MSG)
    store.delete("user_profile", "bob", cascade=True)
    assert store.thread_owner("conv") is None and store.thread_owner("bt") is None
    assert store.thread_owner("at") == ("alice", None)
    assert store.list("message", user_id="bob", limit=None) == []


def test_an_agent_cascade_deletes_only_the_owners_rows_of_its_threads(store: Any) -> None:
    store.add([None], record_type="thread", record_ids="t", user_ids="u", agent_ids="helper")
    store.add(["m"], thread_ids="t", user_ids="u", agent_ids="helper", record_ids="m1", **MSG)
    store.add(["note"], record_type="memory", thread_ids="t", record_ids="n")
    store.delete("agent_profile", "helper", cascade=True)
    assert store.get("thread", "t") is None and store.get("memory", "n") is None
    assert store.thread_owner("t") is None


# ---------------------------------------------------------------------------- migration


def _make_legacy(make_store: Any) -> Any:
    """A store as schema version 6 left it: no owners table, and a thread id ("shared") that
    two users wrote, beside ordinary threads. Written through a store opened with NO_CHECK,
    which does not check ownership on a schema that has no owners."""
    store = make_store(name="legacy.db")
    d = store._dialect
    with d.transaction():
        d.execute(f"DROP TABLE {d.tables.owners}")
        d.execute(f"UPDATE {d.tables.meta} SET value = '6' WHERE key = 'schema_version'")
    store.close()
    old = make_store(name="legacy.db", schema_policy=SchemaPolicy.NO_CHECK)
    assert old.thread_owner("anything") is None  # no owners: nothing is enforced
    old.add([None], record_type="thread", record_ids="shared", user_ids="alice")
    old.add(["alice 1"], thread_ids="shared", user_ids="alice", record_ids="a1", **MSG)
    old.add(["bob's secret"], thread_ids="shared", user_ids="bob", record_ids="b1", **MSG)
    old.add(
        ["bob's memory"], record_type="memory", thread_ids="shared", user_ids="bob", record_ids="bm"
    )
    old.add(["carol first"], thread_ids="loose", user_ids="carol", record_ids="c1", **MSG)
    old.add(["dave later"], thread_ids="loose", user_ids="dave", record_ids="d1", **MSG)
    old.add(["erin only"], thread_ids="plain", user_ids="erin", record_ids="e1", **MSG)
    old.close()
    return make_store(name="legacy.db")


def test_an_older_store_migrates_and_reports_shared_ids(
    make_store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="oracleagentmemory.store"):
        store = _make_legacy(make_store)
    report = [r.getMessage() for r in caplog.records if "several users" in r.getMessage()]
    assert len(report) == 1 and "'loose'" in report[0] and "'shared'" in report[0]
    assert store.thread_conflicts() == ["loose", "shared"]
    # Owners: the thread row's user, else the first writer.
    assert store.thread_owner("shared") == ("alice", None)
    assert store.thread_owner("loose") == ("carol", None)
    assert store.thread_owner("plain") == ("erin", None)
    # Reads through a thread show its owner's rows only ...
    assert _ids(store.list_thread_messages("shared")) == ["a1"]
    assert _ids(store.list_thread_messages("loose")) == ["c1"]
    # ... while each user still reaches their own rows through their own scope.
    assert _ids(store.list("message", user_id="bob", limit=None)) == ["b1"]
    # From now on, the rule holds.
    with pytest.raises(ThreadOwnershipError):
        store.add(["more"], thread_ids="shared", user_ids="bob", **MSG)
    store.add(["alice 2"], thread_ids="shared", user_ids="alice", record_ids="a2", **MSG)
    # Deleting the thread deletes its owner's rows, never another user's.
    assert store.delete_thread("shared") == 1
    assert store.get("message", "a2") is None
    assert store.get("message", "b1") is not None and store.get("memory", "bm") is not None
    # The owner's cascade leaves the other user's rows too.
    store.delete("user_profile", "carol", cascade=True)
    assert store.get("message", "c1") is None and store.get("message", "d1") is not None


def test_upgrading_without_shared_ids_reports_nothing(
    make_store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(name="clean.db")
    store.add(["x"], thread_ids="t", user_ids="u", **MSG)
    d = store._dialect
    with d.transaction():
        d.execute(f"DROP TABLE {d.tables.owners}")
        d.execute(f"UPDATE {d.tables.meta} SET value = '6' WHERE key = 'schema_version'")
    store.close()
    with caplog.at_level(logging.WARNING, logger="oracleagentmemory.store"):
        again = make_store(name="clean.db")
    assert not [r for r in caplog.records if "several users" in r.getMessage()]
    assert again.thread_owner("t") == ("u", None)
    assert again.thread_conflicts() == []


# ---------------------------------------------------------------------------- client, handle


def test_the_client_refuses_another_users_thread(make_client: Any) -> None:
    client = make_client()
    client.store.add(["bob's secret"], thread_ids="conv", user_ids="bob", **MSG)
    with pytest.raises(ThreadOwnershipError):
        client.create_thread(thread_id="conv", user_id="alice")
    with pytest.raises(ThreadOwnershipError):
        client.add_memory("x", user_id="alice", thread_id="conv")
    with pytest.raises(ThreadOwnershipError):
        client.add_image(PNG, user_id="alice", thread_id="conv", description="d")
    # The owner may make the thread row for it, and then reads it back through the handle.
    thread = client.create_thread(thread_id="conv", user_id="bob")
    assert [m.content for m in thread.get_messages()] == ["bob's secret"]
    # A handle's own overrides cannot move its rows to another user.
    with pytest.raises(ThreadOwnershipError):
        thread.add_memory("planted", user_id="alice")


def test_a_handle_touches_only_its_owners_rows(make_store: Any, make_client: Any) -> None:
    store = _make_legacy(make_store)
    store.add_image(
        PNG, mime_type="image/png", user_id="alice", thread_id="shared", image_id="alice-img"
    )
    d = store._dialect
    with d.transaction():  # bob's image from before owners existed
        d.execute(f"UPDATE {d.tables.records} SET user_id = 'bob' WHERE id = 'alice-img'")
    client = make_client(store=store)
    thread = client.get_thread("shared")
    assert [m.id for m in thread.get_messages()] == ["a1"]
    with pytest.raises(KeyError):
        thread.get_message("b1")
    with pytest.raises(KeyError):
        thread.update_message("b1", content="changed")
    assert thread.delete_message("b1") == 0
    assert thread.delete_memory("bm") == 0
    assert thread.list_images() == []
    assert thread.delete_image("alice-img") == 0
    assert store.get("message", "b1").content == "bob's secret"
    assert store.get("memory", "bm") is not None
    assert store.get("image", "alice-img") is not None
    assert "bob's secret" not in thread.get_context_card().content

"""Clearing a thread's messages (the framework adapters' ``clear``): one transaction that
takes the messages and their retrieval rows, and leaves the thread, its memories and its
numbering."""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.core._client.messages._thread_messages import clear_thread_messages


def test_clear_takes_the_messages_only(client: Any) -> None:
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    other = client.create_thread(thread_id="t2", user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": f"pineapple note {i}"} for i in range(5)])
    other.add_messages([{"role": "user", "content": "pineapple elsewhere"}])
    thread.add_memory("likes pineapple")
    assert clear_thread_messages(thread) == 5
    assert thread.get_messages() == []
    assert [m.content for m in other.get_messages()] == ["pineapple elsewhere"]
    hits = client.search("pineapple", user_id="u", record_types=["message", "memory"])
    assert sorted(h.record.content for h in hits) == ["likes pineapple", "pineapple elsewhere"]
    assert client.get_thread("t").thread_id == "t"
    thread.add_messages([{"role": "user", "content": "after"}])
    (after,) = client._store.list_thread_messages("t")
    assert after.seq_no == 6  # numbering goes on
    assert clear_thread_messages(thread) == 1
    assert clear_thread_messages(thread) == 0


def test_clear_is_one_transaction(client: Any, monkeypatch: Any) -> None:
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": f"m{i}"} for i in range(3)])
    store = client._store
    deleter = store._deletes
    real = deleter.delete_where
    calls = {"n": 0}

    def failing(where: str, params: Any, *args: Any) -> Any:
        real(where, params, *args)  # the rows are gone inside the transaction ...
        calls["n"] += 1
        raise RuntimeError("the database went away mid-delete")

    monkeypatch.setattr(deleter, "delete_where", failing)
    with pytest.raises(RuntimeError, match="went away"):
        clear_thread_messages(thread)
    monkeypatch.setattr(deleter, "delete_where", real)
    assert calls["n"] == 1
    assert [m.content for m in thread.get_messages()] == ["m0", "m1", "m2"]

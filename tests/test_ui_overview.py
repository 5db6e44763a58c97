"""The store's browsing reads (``store.overview``, used by the ``/ui`` memory browser) on
every engine: users from the data with their counts, a user's memories filtered and paged,
threads and a thread's messages paged, totals by family; and their bounds."""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.core.store._overview import MAX_OFFSET, MAX_PAGE_ROWS

PAST = "2001-01-01T00:00:00"  # with a 1-day TTL anchored on it: expired on arrival


def _expired_memory(client: Any, user_id: str, content: str = "gone") -> str:
    return str(
        client.add_memory(
            content, user_id=user_id, timestamp=PAST, ttl_days=1, ttl_anchor="timestamp"
        )
    )


def test_users_come_from_the_data_with_their_counts(client: Any) -> None:
    # No profiles at all for three of them: a store of imported users must list them.
    t = client.create_thread(thread_id="t-ann", user_id="ann", agent_id="concierge")
    t.add_messages([{"role": "user", "content": f"message {i}"} for i in range(3)])
    t.add_memory("Ann likes tea.", memory_type="preference")
    client.add_memory("Bo plays chess.", user_id="bo")
    client.create_thread(thread_id="t-cy", user_id="cy")
    client.add_user("dee", "Dee, a profile and nothing else.")
    client.add_memory("A memory of no user.")
    _expired_memory(client, "bo")
    _expired_memory(client, "eve")  # eve's only record has expired (not purged yet)
    ov = client.store.overview
    page = ov.users(limit=10)
    assert [u.user_id for u in page.items] == ["ann", "bo", "cy", "dee", "eve"]
    assert page.total == 5 and ov.count_users() == 5
    got = {u.user_id: (u.threads, u.messages, u.memories, u.has_profile) for u in page.items}
    assert got == {
        "ann": (1, 3, 1, False),
        "bo": (0, 0, 1, False),
        "cy": (1, 0, 0, False),
        "dee": (0, 0, 0, True),
        "eve": (0, 0, 0, False),
    }
    second = ov.users(limit=2, offset=2)
    assert [u.user_id for u in second.items] == ["cy", "dee"] and second.total == 5
    assert ov.users(limit=2, offset=5).items == []
    counts = ov.user_counts(["bo", "nobody"])
    assert counts["nobody"].memories == 0 and counts["bo"].memories == 1


def test_family_counts_leave_out_expired_rows(client: Any) -> None:
    t = client.create_thread(thread_id="t1", user_id="u1")
    t.add_messages([{"role": "user", "content": "hi"}, {"role": "user", "content": "ho"}])
    client.add_memory("a fact", user_id="u1", memory_type="fact")
    client.add_memory("a preference", user_id="u1", memory_type="preference")
    _expired_memory(client, "u1")
    counts = client.store.overview.family_counts()
    assert counts == {"thread": 1, "message": 2, "memory": 2}


def test_memories_are_filtered_and_paged(client: Any) -> None:
    t = client.create_thread(thread_id="trip", user_id="u1", agent_id="concierge")
    ids = {}
    for i, (kind, day) in enumerate(
        [
            ("fact", "2024-01-05"),
            ("preference", "2024-02-10"),
            ("fact", "2024-03-15"),
            ("guideline", "2024-03-20"),
            ("memory", "2024-04-01"),
        ]
    ):
        ids[i] = t.add_memory(f"memory {i}", memory_type=kind, timestamp=f"{day}T10:00:00")
    ids[5] = client.add_memory("untyped, no thread", user_id="u1", agent_id="other")
    client.update_memory(ids[2], status="invalid")
    client.add_memory("another user's fact", user_id="u2", memory_type="fact")
    ov = client.store.overview

    def contents(**kw: Any) -> list[str]:
        return [m.content for m in ov.memories(user_id="u1", limit=50, **kw).items]

    assert contents() == [
        "untyped, no thread",
        "memory 4",
        "memory 3",
        "memory 2",
        "memory 1",
        "memory 0",
    ]
    assert contents(newest_first=False)[0] == "memory 0"
    assert contents(record_types=["fact"]) == ["memory 2", "memory 0"]
    assert contents(record_types=["fact", "guideline"]) == ["memory 3", "memory 2", "memory 0"]
    assert contents(status="invalid") == ["memory 2"]
    assert "memory 2" not in contents(status="valid")
    assert contents(agent_id="other") == ["untyped, no thread"]
    assert contents(thread_id="trip", record_types=["memory"]) == ["memory 4"]
    assert contents(since="2024-03-01", until="2024-03-31") == ["memory 3", "memory 2"]
    assert contents(since="2024-03-20", until="2024-03-20") == ["memory 3"]
    page = ov.memories(user_id="u1", limit=2, offset=2)
    assert [m.content for m in page.items] == ["memory 3", "memory 2"] and page.total == 6
    assert ov.memories(user_id="u1", limit=2, record_types=["fact"]).total == 2
    by_type = ov.memory_type_counts("u1")
    assert by_type == {
        ("fact", "valid"): 1,
        ("fact", "invalid"): 1,
        ("preference", "valid"): 1,
        ("guideline", "valid"): 1,
        ("memory", "valid"): 2,
    }
    assert ov.agents_of("u1") == ["concierge", "other"]


def test_thread_messages_and_threads_are_paged(client: Any) -> None:
    t = client.create_thread(thread_id="long", user_id="u1", agent_id="a1")
    t.add_messages([{"role": "user", "content": f"message {i}"} for i in range(120)])
    client.create_thread(thread_id="short", user_id="u1")
    ov = client.store.overview
    first = ov.thread_messages("long", limit=50)
    assert first.total == 120 and [m.seq_no for m in first.items][:2] == [1, 2]
    last = ov.thread_messages("long", limit=50, offset=100)
    assert len(last.items) == 20 and last.items[-1].content == "message 119"
    newest = ov.thread_messages("long", limit=50, newest_first=True)
    assert newest.items[0].content == "message 119"
    seq = first.items[9].seq_no  # the 10th message
    assert ov.message_position("long", seq) == 9
    assert ov.message_position("long", seq, newest_first=True) == 110
    found = ov.messages_by_id([first.items[0].id, "no-such-message"])
    assert list(found) == [first.items[0].id]
    threads = ov.threads(user_id="u1", limit=10)
    assert [(s.thread.id, s.messages) for s in threads.items] == [("short", 0), ("long", 120)]
    assert threads.items[1].last_message_at is not None and threads.total == 2
    oldest = ov.threads(user_id="u1", limit=1, newest_first=False)
    assert [s.thread.id for s in oldest.items] == ["long"] and oldest.total == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"limit": 0}, ValueError, "limit"),
        ({"limit": MAX_PAGE_ROWS + 1}, ValueError, "limit"),
        ({"limit": 10, "offset": -1}, ValueError, "offset"),
        ({"limit": 10, "offset": MAX_OFFSET + 1}, ValueError, "offset"),
        ({"limit": "10"}, TypeError, "limit"),
        ({"limit": 10, "record_types": ["thread"]}, ValueError, "record_types"),
        ({"limit": 10, "status": "deleted"}, ValueError, "status"),
        ({"limit": 10, "since": "yesterday"}, ValueError, "since"),
        ({"limit": 10, "until": "2024-02-30"}, ValueError, "until"),
    ],
)
def test_bad_page_arguments_name_the_parameter(
    client: Any, kwargs: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        client.store.overview.memories(user_id="u1", **kwargs)

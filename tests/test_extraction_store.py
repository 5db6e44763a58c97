"""The store's extraction bookkeeping: pending work, provenance, thread summaries (both engines)."""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import ThreadSummaryRecord
from oracleagentmemory.core import SchemaPolicy
from oracleagentmemory.core.store._extraction import (
    SummaryWrite,
    owner_is_alive,
    process_owner,
)


def _thread(store: Any, thread_id: str = "t1") -> str:
    return store.create_thread_record(
        thread_id, user_id="u1", agent_id="a1", metadata=None, runtime_config=None
    )


def _messages(texts: list[str], thread_id: str = "t1") -> PendingRecordBatch:
    return PendingRecordBatch(
        contents=texts,
        record_type="message",
        thread_ids=thread_id,
        user_ids="u1",
        agent_ids="a1",
        roles="user",
    )


def _add(store: Any, texts: list[str], **kw: Any) -> tuple[list[str], Any]:
    args: dict[str, Any] = {
        "thread_id": "t1",
        "extract_every": -1,
        "summarize_every": None,
        "payload": {"v": 1},
        "owner": process_owner(),
    }
    args.update(kw)
    return store.add_messages_with_work(_messages(texts), **args)  # type: ignore[no-any-return]


def test_every_call_records_one_job_covering_its_messages(store: Any) -> None:
    _thread(store)
    ids, work = _add(store, ["a", "b"])
    assert len(ids) == 2 and work is not None
    assert work.payload == {
        "v": 1,
        "from_seq_no": 0,
        "through_seq_no": 2,
        "extract": True,
        "summarize": False,
    }
    _, second = _add(store, ["c"])
    assert (second.payload["from_seq_no"], second.payload["through_seq_no"]) == (2, 3)
    assert [w.id for w in store.list_pending_work()] == [work.id, second.id]
    state = store.get("thread", "t1").runtime_state
    assert state == {"memory_extraction": {"through_seq_no": 3}}


def test_frequency_accumulates_messages_across_calls(store: Any) -> None:
    _thread(store)
    assert _add(store, ["a"], extract_every=3)[1] is None
    assert _add(store, ["b"], extract_every=3)[1] is None
    _, work = _add(store, ["c"], extract_every=3)
    assert (work.payload["from_seq_no"], work.payload["through_seq_no"]) == (0, 3)
    assert _add(store, ["d"], extract_every=3)[1] is None


def test_turning_extraction_on_later_does_not_reprocess_history(store: Any) -> None:
    _thread(store)
    _add(store, ["old 1", "old 2"], extract_every=None)
    _, work = _add(store, ["new"])
    assert (work.payload["from_seq_no"], work.payload["through_seq_no"]) == (2, 3)


def test_summary_jobs_follow_the_stored_summary(store: Any) -> None:
    _thread(store)
    _, work = _add(store, ["a"], extract_every=None, summarize_every=2)
    assert work is None
    _, work = _add(store, ["b"], extract_every=None, summarize_every=2)
    assert work.payload["summarize"] is True and work.payload["extract"] is False
    store.save_thread_summary(SummaryWrite("t1", "u1", "a1", "about a and b", ("ab",), 2))
    assert _add(store, ["c"], extract_every=None, summarize_every=2)[1] is None
    record = store.get("thread_summary", "t1")
    assert isinstance(record, ThreadSummaryRecord)
    assert record.content == {"summary": "about a and b", "topics": ["ab"]}
    assert record._covered_through_seq_no == 2
    # An older summary never replaces a newer one.
    store.save_thread_summary(SummaryWrite("t1", "u1", "a1", "stale", (), 1))
    assert store.get("thread_summary", "t1").content["summary"] == "about a and b"


def test_no_thread_row_means_no_job(store: Any) -> None:
    ids, work = _add(store, ["a"], thread_id="t1")
    assert len(ids) == 1 and work is None


def test_commit_extraction_writes_memories_sources_summary_and_finishes_the_job(
    store: Any,
) -> None:
    _thread(store)
    (m1, m2), work = _add(store, ["I love tea", "and cats"])
    ids = store.commit_extraction(
        [
            PendingRecordBatch(
                contents=["Likes tea", "Has cats"],
                record_type="preference",
                user_ids="u1",
                thread_ids="t1",
            )
        ],
        sources=[[m1], [m1, m2]],
        summary=SummaryWrite("t1", "u1", "a1", "tea and cats", (), 2),
        done_work_id=work.id,
    )
    assert store.memory_sources(ids) == {ids[0]: (m1,), ids[1]: tuple(sorted([m1, m2]))}
    assert store.list_pending_work() == []
    assert store.get("thread_summary", "t1").content["summary"] == "tea and cats"
    # A duplicate found later merges its sources into the existing memory.
    (m3,), _ = _add(store, ["tea again"])
    store.commit_extraction([], merged_sources={ids[0]: [m3, m1], "gone": [m3]})
    assert store.memory_sources([ids[0]]) == {ids[0]: tuple(sorted([m1, m3]))}


def test_commit_extraction_is_one_transaction(store: Any) -> None:
    _thread(store)
    _, work = _add(store, ["x"])
    store.add(["dup"], record_type="memory", record_ids="m-x")
    with pytest.raises(ValueError, match="already exists"):
        store.commit_extraction(
            [PendingRecordBatch(contents=["dup"], record_type="memory", record_ids="m-x")],
            sources=[["whatever"]],
            done_work_id=work.id,
        )
    assert [w.id for w in store.list_pending_work()] == [work.id]


def test_deleting_a_memory_deletes_its_provenance(store: Any) -> None:
    _thread(store)
    (m1,), _ = _add(store, ["x"])
    (mid,) = store.commit_extraction(
        [PendingRecordBatch(contents=["fact"], record_type="fact")], sources=[[m1]]
    )
    store.delete("fact", mid)
    # The next memory may reuse the internal row id: it must not inherit provenance.
    (other,) = store.commit_extraction([PendingRecordBatch(contents=["y"], record_type="memory")])
    assert store.memory_sources([mid, other]) == {}


def test_cascading_message_delete_removes_only_memories_from_that_message_alone(
    store: Any,
) -> None:
    _thread(store)
    (a, b), _ = _add(store, ["a", "b"])
    only_a, both, manual = store.commit_extraction(
        [PendingRecordBatch(contents=["from a", "from a and b", "manual"], record_type="memory")],
        sources=[[a], [a, b], []],
    )
    assert store.delete_message_cascade("other-thread", a) == (0, 0)
    assert store.delete_message_cascade("t1", a) == (1, 1)
    assert store.get("memory", only_a) is None
    assert store.get("memory", both) is not None and store.get("memory", manual) is not None
    assert store.get("message", a) is None
    assert store.memory_sources([both]) == {both: (b,)}
    assert store.delete_message_cascade("t1", b) == (1, 1)
    assert store.get("memory", both) is None and store.get("memory", manual) is not None


def test_pending_work_claim_retry_finish(store: Any) -> None:
    _thread(store)
    _, work = _add(store, ["a"], owner="elsewhere:1:1")
    assert store.claim_pending_work(work.id, "someone-else", "me") is False
    assert store.claim_pending_work(work.id, "elsewhere:1:1", "me") is True
    assert store.list_pending_work()[0].owner == "me"
    assert store.retry_pending_work(work.id) == 1
    assert store.retry_pending_work(work.id) == 2
    store.finish_pending_work(work.id)
    assert store.list_pending_work() == []
    assert store.retry_pending_work(work.id) == 0


def test_owner_liveness() -> None:
    assert owner_is_alive(process_owner())
    assert not owner_is_alive(None)
    host = __import__("socket").gethostname()  # an owner from before leases: host:pid:start
    assert not owner_is_alive(f"{host}:999999999:1")
    assert not owner_is_alive(f"{host}:not-a-pid:1")
    assert owner_is_alive("some-other-host:1:1")


def test_a_version_2_schema_is_upgraded_in_place(make_store: Any) -> None:
    store = make_store(name="old.db")
    store.add(["kept"], record_type="memory", record_ids="m1")
    t = store._dialect.tables
    with store._dialect.transaction():
        store._dialect.execute(f"DROP TABLE {t.sources}")
        store._dialect.execute(f"DROP TABLE {t.pending}")
        store._dialect.execute(f"UPDATE {t.meta} SET value = '2' WHERE key = 'schema_version'")
    store.close()
    with pytest.raises(Exception, match="older"):
        make_store(name="old.db", schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    upgraded = make_store(name="old.db")
    assert upgraded.get("memory", "m1") is not None
    assert upgraded.list_pending_work() == []
    assert upgraded.memory_sources(["m1"]) == {}


def test_commit_for_a_deleted_thread_writes_nothing_and_finishes_the_job(store: Any) -> None:
    _thread(store)
    (m1,), work = _add(store, ["x"])
    store.delete_thread("t1")
    ids = store.commit_extraction(
        [PendingRecordBatch(contents=["orphan"], record_type="memory", thread_ids="t1")],
        sources=[[m1]],
        done_work_id=work.id,
        thread_id="t1",
    )
    assert ids == [] and store.list_records(("memory",)) == []
    assert store.list_pending_work() == []

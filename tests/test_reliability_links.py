"""Regression tests of issue 8 for links: one transaction for a memory and its link, links
never cross users unless asked, and linked results obey the search's scope."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import pytest

from ._dump import dump_store


@contextmanager
def counting_transactions(store: Any) -> Any:
    """Count the write transactions ``store`` opens inside the block."""
    dialect = store._dialect
    original = dialect.transaction
    opened: list[int] = []

    @contextmanager
    def counted(shared: bool = False) -> Any:
        opened.append(1)
        with original(shared):
            yield

    dialect.transaction = counted
    try:
        yield opened
    finally:
        dialect.transaction = original


def test_add_memory_with_a_link_is_one_transaction(client: Any) -> None:
    client.add_memory("The user lives in Rome.", memory_id="old", user_id="u")
    with counting_transactions(client.store) as opened:
        client.add_memory(
            "The user moved to Paris.",
            memory_id="new",
            user_id="u",
            memory_id_to_link="old",
            link_type="supersedes",
        )
    assert len(opened) == 1
    [link] = client.store.list_relations()
    assert (link.source_record_id, link.target_record_id) == ("new", "old")


def test_a_failing_link_leaves_no_memory(client: Any) -> None:
    client.add_memory("a", memory_id="a", user_id="u")
    client.add_memory("b", memory_id="b", user_id="u")
    client.link_records("a", "memory", "b", "memory", "supports", relation_id="taken")
    before = dump_store(client.store)
    with pytest.raises(ValueError, match="already exists"):
        client.add_memory(
            "c",
            memory_id="c",
            user_id="u",
            memory_id_to_link="a",
            link_type="refines",
            link_id="taken",
        )
    assert dump_store(client.store) == before


def test_store_writes_records_and_relations_together(store: Any) -> None:
    from oracleagentmemory.apis.batch import PendingRecordBatch

    store.add(["old"], record_type="fact", record_ids="f0", user_ids="u")
    ids, rels = store.add_with_relations(
        [
            PendingRecordBatch(
                contents=["x", "y"], record_type="fact", record_ids=["f1", "f2"], user_ids="u"
            )
        ],
        [
            {
                "source_record_ids": "f1",
                "source_record_types": "fact",
                "target_record_ids": "f2",
                "target_record_types": "fact",
                "relation_types": "supports",
            },
            {
                "source_record_ids": "f2",
                "source_record_types": "fact",
                "target_record_ids": "f0",
                "target_record_types": "fact",
                "relation_types": "supersedes",
            },
        ],
    )
    assert ids == ["f1", "f2"] and len(rels) == 2
    before = dump_store(store)
    with pytest.raises(ValueError, match="no fact record"):
        store.add_with_relations(
            [PendingRecordBatch(contents=["z"], record_type="fact", record_ids="f3", user_ids="u")],
            [
                {
                    "source_record_ids": "f3",
                    "source_record_types": "fact",
                    "target_record_ids": "ghost",
                    "target_record_types": "fact",
                    "relation_types": "supports",
                }
            ],
        )
    assert dump_store(store) == before


# ---------------------------------------------------------------------------- users


def test_links_across_users_need_an_explicit_opt_in(client: Any) -> None:
    client.add_memory("alice likes tea", memory_id="a1", user_id="alice")
    client.add_memory("bob likes coffee", memory_id="b1", user_id="bob")
    client.add_memory("nobody's fact", memory_id="n1")
    store = client.store
    before = dump_store(store)
    for target in ("b1", "n1"):
        with pytest.raises(ValueError, match="allow_cross_user=True"):
            client.link_records("a1", "memory", target, "memory", "supports")
    with pytest.raises(ValueError, match="allow_cross_user=True"):
        client.add_memory("x", user_id="alice", memory_id_to_link="b1", link_type="supports")
    with pytest.raises(ValueError, match="allow_cross_user=True"):
        store.add_relations("a1", "memory", "b1", "memory", "supports")
    assert dump_store(store) == before
    rid = client.link_records("a1", "memory", "b1", "memory", "supports", allow_cross_user=True)
    assert store.get_relation(relation_id=rid) is not None
    client.add_memory(
        "alice again",
        user_id="alice",
        memory_id_to_link="n1",
        link_type="refines",
        allow_cross_user=True,
    )


def test_linked_results_obey_the_search_scope(client: Any) -> None:
    client.add_memory("alice likes green tea", memory_id="a1", user_id="alice")
    client.add_memory("alice drinks tea daily", memory_id="a2", user_id="alice")
    client.add_memory("bob secret: tea allergy", memory_id="b1", user_id="bob")
    client.link_records("a1", "memory", "a2", "memory", "supports")
    client.link_records("a2", "memory", "b1", "memory", "supports", allow_cross_user=True)
    results = client.search("green tea", user_id="alice", max_results=1, num_hops=3)
    assert [r.id for r in results] == ["a1"]
    [(_, a2)] = results[0].record.linked_results
    assert a2.id == "a2"
    assert not a2.linked_results  # bob's record is neither attached nor reached through a2
    [(top, _)] = client.store.search(
        "green tea", 1, user_id="alice", exact_user_match=True, num_hops=3
    )
    assert [tuple(rec.linked_results) for _, rec in top.linked_results] == [()]
    # Without a user scope (a store search without exact match) the opted-in link is followed.
    [(top, _)] = client.store.search("green tea", 1, num_hops=3)
    [(_, a2)] = top.linked_results
    assert [rec.id for _, rec in a2.linked_results] == ["b1"]

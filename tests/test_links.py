"""Typed links between memories: storing, updating, deleting, and graph-expanded search."""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.apis.relations import MemoryLink
from oracleagentmemory.core import OracleSearchResult


@pytest.fixture
def facts(client: Any) -> Any:
    client.add_memory("The user lives in Rome.", memory_type="fact", memory_id="old", user_id="u")
    client.add_memory("The user moved to Paris.", memory_type="fact", memory_id="new", user_id="u")
    client.add_memory("The user likes cheese.", memory_id="m1", user_id="u")
    return client


def test_link_records_page_example(facts: Any) -> None:
    rid = facts.link_records("new", "fact", "m1", "memory", "supports", relation_id="relation-id")
    assert rid == "relation-id"
    link = facts.store.get_relation(relation_id="relation-id")
    assert isinstance(link, MemoryLink)
    assert (link.source_memory_id, link.target_memory_id, link.link_type) == (
        "new",
        "m1",
        "supports",
    )
    assert link.opposite_relation_type == "is_supported_by"
    assert facts.update_record_link("relation-id", relation_type="supersedes") == 1
    updated = facts.store.get_relation(relation_id="relation-id")
    assert (updated.relation_type, updated.opposite_relation_type) == (
        "supersedes",
        "is_superseded_by",
    )
    assert facts.update_record_link("missing", relation_type="supports") == 0
    assert facts.delete_record_link(relation_id="relation-id") == 1
    assert facts.delete_record_link(relation_id="relation-id") == 0


def test_one_relation_per_pair_and_memory_endpoints_only(facts: Any) -> None:
    facts.link_records("new", "fact", "old", "fact", "supersedes")
    with pytest.raises(ValueError, match="already linked"):
        facts.link_records("old", "fact", "new", "fact", "contradicts")  # other orientation
    with pytest.raises(ValueError, match="memory-like"):
        facts.link_records("new", "fact", "u", "user_profile", "supports")
    with pytest.raises(ValueError, match="no memory record"):
        facts.link_records("new", "fact", "ghost", "memory", "supports")
    with pytest.raises(ValueError, match="itself"):
        facts.link_records("new", "fact", "new", "fact", "supports")
    with pytest.raises(ValueError, match="opposite"):
        facts.link_records("m1", "memory", "old", "fact", "supports", opposite_relation_type="x")
    assert len(facts.store.list_relations()) == 1


def test_delete_by_endpoints_and_cascade_with_records(facts: Any) -> None:
    moved = facts.link_records(
        "new", "fact", "old", "fact", "supersedes", metadata={"why": "moved"}
    )
    custom = facts.link_records(
        "m1", "memory", "old", "fact", "mentions", timestamp="2026-01-01T00:00:00"
    )
    assert facts.store.get_relation(relation_id=custom).opposite_relation_type == "mentions"
    assert [r.id for r in facts.store.list_relations(metadata_filter={"why": "moved"})] == [moved]
    assert facts.update_record_link(custom, timestamp=None, metadata=None) == 1
    assert facts.store.get_relation(relation_id=custom).timestamp is None
    assert facts.delete_record_link("new", "fact", "old", "fact", "supersedes") == 1
    assert facts.delete_memory("old") == 1  # takes its remaining relation along
    assert facts.store.list_relations() == []


def test_add_memory_with_a_link(facts: Any) -> None:
    mid = facts.add_memory(
        "The user moved again, to Berlin.",
        memory_type="fact",
        memory_id="newer",
        user_id="u",
        memory_id_to_link="new",
        link_type="supersedes",
        link_id="l1",
        link_metadata={"n": 1},
    )
    link = facts.store.get_relation(relation_id="l1")
    assert (mid, link.source_record_id, link.target_record_id, link.metadata) == (
        "newer",
        "newer",
        "new",
        {"n": 1},
    )
    with pytest.raises(ValueError, match="memory_id_to_link"):
        facts.add_memory(
            "orphan", memory_id="orphan", memory_id_to_link="ghost", link_type="supports"
        )
    with pytest.raises(ValueError, match="link_type"):
        facts.add_memory("bad", memory_id="bad", memory_id_to_link="new", link_type="likes")
    assert {m.id for m in facts.list_memories()} == {"old", "new", "m1", "newer"}


def test_search_expands_links_by_hops(facts: Any) -> None:
    facts.link_records("new", "fact", "old", "fact", "supersedes")
    facts.link_records("old", "fact", "m1", "memory", "supports")
    plain = facts.search("Paris", user_id="u", max_results=1, record_types=["fact"])
    assert plain[0].id == "new" and plain[0].linked_results == []
    one = facts.search("Paris", user_id="u", max_results=1, record_types=["fact"], num_hops=1)
    [(relation, linked)] = one[0].linked_results
    assert (relation.relation_type, linked.id) == ("supersedes", "old")
    assert isinstance(linked, OracleSearchResult)
    assert "<relation_type>supersedes</relation_type>" in one[0].formatted_content
    two = facts.search("Paris", user_id="u", max_results=1, record_types=["fact"], num_hops=2)
    [(_, hop1)] = two[0].linked_results
    assert [r.id for _, r in hop1.linked_results] == ["m1"]
    capped = facts.search(
        "Paris", user_id="u", max_results=1, record_types=["fact"], num_hops=2, max_linked_results=1
    )
    [(_, hop1)] = capped[0].linked_results
    assert hop1.linked_results == []

"""Automatic links between memories: POST_EXTRACTION, DURING_EXTRACTION, autonomous_linking,
the INVALID status they set, and what is dropped from bad model answers."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from oracleagentmemory.core.extractors._link_prompts import link_schema
from oracleagentmemory.core.extractors._linking import read_link_answer, read_relation

from ._fake_model import fake_model, link_candidates
from ._llm_double import ScriptedLlm


def _config(mode: MemoryLinkExtractionMode, **kw: Any) -> MemoryExtractionConfig:
    return MemoryExtractionConfig(
        extraction_mode=kw.pop("extraction_mode", MemoryExtractionMode.INLINE),
        enable_context_summary=False,
        memory_link_extraction_mode=mode,
        **kw,
    )


def _links_of(client: Any) -> list[tuple[str, str, str]]:
    by_id = {m.id: m.content for m in client.list_memories(limit=None)}
    return sorted(
        (by_id.get(r.source_record_id, "?"), r.relation_type, by_id.get(r.target_record_id, "?"))
        for r in client.store.list_relations()
    )


def _moves(new: str, existing: str) -> str:
    """A link oracle for the tests: a later home supersedes an earlier one."""
    if "moved to" in new and "lives in" in existing:
        return "supersedes"
    return "none"


def _status(client: Any, content: str) -> RecordStatus:
    found = [m for m in client.list_memories(limit=None) if m.content == content]
    assert len(found) == 1, content
    return found[0].status


# --------------------------------------------------------------------------------------------
# POST_EXTRACTION (the default)
# --------------------------------------------------------------------------------------------


def test_post_extraction_links_supersede_and_search_hides_the_stale_memory(
    make_client: Any,
) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.POST_EXTRACTION)
    )
    thread = client.create_thread(user_id="u1", agent_id="a1")
    thread.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
    thread.add_messages([{"role": "user", "content": "Maria moved to Lisbon in 2024."}])

    assert _links_of(client) == [
        ("Maria moved to Lisbon in 2024.", "supersedes", "Maria lives in Boston.")
    ]
    assert _status(client, "Maria lives in Boston.") is RecordStatus.INVALID
    assert _status(client, "Maria moved to Lisbon in 2024.") is RecordStatus.VALID
    link_call = next(c for c in llm.calls if c.schema and "1" in c.schema["properties"])
    new, existing = link_candidates(link_call.last_user_text)
    assert new == "Maria moved to Lisbon in 2024."
    assert existing == {"1": "Maria lives in Boston."}
    assert link_call.schema == link_schema(1)

    found = [r.content for r in thread.search("Where does Maria live?", record_types=["fact"])]
    assert found == ["Maria moved to Lisbon in 2024."]
    everything = thread.search(
        "Where does Maria live?", record_types=["fact"], include_invalid_results=True
    )
    assert {r.content for r in everything} == {
        "Maria moved to Lisbon in 2024.",
        "Maria lives in Boston.",
    }
    assert [r.content for r in client.search("Maria", user_id="u1", record_types=["fact"])] == [
        "Maria moved to Lisbon in 2024."
    ]
    relation = client.store.list_relations()[0]
    assert relation.metadata == {"$agent_memory": {"link_origin": "post_extraction"}}
    stats = client.get_memory_extraction_stats()
    assert (stats.links, stats.invalidated) == (1, 1)


def test_post_extraction_in_background_and_with_custom_instructions(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm,
        memory_extraction_config=_config(
            MemoryLinkExtractionMode.POST_EXTRACTION,
            extraction_mode=MemoryExtractionMode.BACKGROUND,
            memory_link_extraction_custom_instructions="Cities matter most.",
        ),
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
    thread.add_messages([{"role": "user", "content": "Maria moved to Lisbon."}])
    thread.wait_for_memory_extraction(timeout=30)
    assert _status(client, "Maria lives in Boston.") is RecordStatus.INVALID
    link_call = next(c for c in llm.calls if c.schema and "1" in c.schema["properties"])
    assert "Cities matter most." in link_call.messages[0][1]


def test_contradicts_refines_and_supports_keep_both_memories_valid(make_client: Any) -> None:
    answers = {"Ana is vegan.": "contradicts", "Ana eats fish on Fridays.": "refines"}
    llm = ScriptedLlm(respond=fake_model(link_for=lambda new, old: answers.get(new, "none")))
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.POST_EXTRACTION)
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "Ana eats fish."}])
    thread.add_messages([{"role": "user", "content": "Ana is vegan."}])
    thread.add_messages([{"role": "user", "content": "Ana eats fish on Fridays."}])
    links = _links_of(client)
    assert ("Ana is vegan.", "contradicts", "Ana eats fish.") in links
    assert ("Ana eats fish on Fridays.", "refines", "Ana eats fish.") in links
    assert all(m.status is RecordStatus.VALID for m in client.list_memories(limit=None))


def test_duplicates_invalidate_the_older_memory(make_client: Any) -> None:
    llm = ScriptedLlm(
        respond=fake_model(
            link_for=lambda new, old: (
                "duplicates" if "coffee" in new and "coffee" in old else "none"
            )
        )
    )
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.POST_EXTRACTION)
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "Tom loves coffee."}])
    thread.add_messages(
        [{"role": "user", "content": "Coffee is what Tom likes best, black coffee."}]
    )
    assert _status(client, "Tom loves coffee.") is RecordStatus.INVALID
    assert _links_of(client)[0][1] == "duplicates"


def test_links_only_join_memories_of_the_same_user(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.POST_EXTRACTION)
    )
    other = client.create_thread(user_id="someone-else")
    other.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
    mine = client.create_thread(user_id="u1", agent_id="another-agent")
    mine.add_messages([{"role": "user", "content": "Maria lives in Porto."}])
    calls_before = len(llm.calls)
    third = client.create_thread(user_id="u1", agent_id="a-third")
    third.add_messages([{"role": "user", "content": "Maria moved to Lisbon."}])
    link_calls = [c for c in llm.calls[calls_before:] if c.schema and "1" in c.schema["properties"]]
    shown = link_candidates(link_calls[0].last_user_text)[1]
    assert list(shown.values()) == ["Maria lives in Porto."]  # u1's, across agents; not Boston
    assert _links_of(client) == [("Maria moved to Lisbon.", "supersedes", "Maria lives in Porto.")]
    assert _status(client, "Maria lives in Boston.") is RecordStatus.VALID


def test_a_thread_without_user_gets_no_automatic_links(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.POST_EXTRACTION)
    )
    thread = client.create_thread(user_id=None)
    thread.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
    thread.add_messages([{"role": "user", "content": "Maria moved to Lisbon."}])
    assert client.store.list_relations() == []
    assert all(not (c.schema and "1" in c.schema["properties"]) for c in llm.calls)


def test_disabled_mode_makes_no_link_calls(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.DISABLED)
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
    thread.add_messages([{"role": "user", "content": "Maria moved to Lisbon."}])
    assert len(llm.calls) == 2
    assert client.store.list_relations() == []


def test_the_link_token_limit_bounds_the_prompts(make_client: Any, caplog: Any) -> None:
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(
        llm=llm,
        memory_extraction_config=_config(
            MemoryLinkExtractionMode.POST_EXTRACTION, memory_link_extraction_token_limit=500
        ),
    )
    thread = client.create_thread(user_id="u1")
    for i in range(4):
        thread.add_messages([{"role": "user", "content": f"Maria visited city number {i}."}])
    link_calls = [c for c in llm.calls if c.schema and "1" in c.schema["properties"]]
    sizes = [len(c.schema["properties"]) for c in link_calls]
    assert sizes == [1, 2, 2]  # a third candidate would take the last prompt over 500 tokens
    with caplog.at_level(logging.WARNING, logger="oracleagentmemory.linking"):
        client2 = make_client(
            name="tiny.db",
            llm=llm,
            memory_extraction_config=_config(
                MemoryLinkExtractionMode.POST_EXTRACTION, memory_link_extraction_token_limit=10
            ),
        )
        t2 = client2.create_thread(user_id="u1")
        t2.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
        before = len(llm.calls)
        t2.add_messages([{"role": "user", "content": "Maria moved to Lisbon."}])
    assert len(llm.calls) == before + 1  # the extraction only
    assert "token limit (10) is spent" in caplog.text


def test_bad_link_answers_are_dropped_with_a_log_line(make_client: Any, caplog: Any) -> None:
    answers = iter(
        [
            {"1": "obliterates", "2": "supersedes", "7": "supersedes"},  # unknown, ok, no such
            "not json at all",
            "still not json",
        ]
    )

    def respond(call: Any) -> Any:
        if call.schema and all(k.isdigit() for k in call.schema["properties"]):
            return next(answers)
        return fake_model()(call)

    llm = ScriptedLlm(respond=respond)
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.POST_EXTRACTION)
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages(
        [
            {"role": "user", "content": "Maria lives in Boston."},
            {"role": "user", "content": "Maria lives near the harbour."},
        ]
    )
    with caplog.at_level(logging.WARNING):
        thread.add_messages([{"role": "user", "content": "Maria moved to Lisbon."}])
        thread.add_messages([{"role": "user", "content": "Maria moved again."}])
    assert "unknown relation 'obliterates'" in caplog.text
    assert "'7' names no candidate" in caplog.text
    assert "nothing from this call is kept" in caplog.text
    assert len(client.store.list_relations()) == 1
    assert len(client.list_memories(limit=None)) == 4  # memories are stored regardless


def test_an_llm_failure_during_linking_keeps_the_memories(make_client: Any, caplog: Any) -> None:
    def respond(call: Any) -> Any:
        if call.schema and all(k.isdigit() for k in call.schema["properties"]):
            return RuntimeError("link service down")
        return fake_model()(call)

    client = make_client(
        llm=ScriptedLlm(respond=respond),
        memory_extraction_config=_config(MemoryLinkExtractionMode.POST_EXTRACTION),
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
    with caplog.at_level(logging.WARNING):
        thread.add_messages([{"role": "user", "content": "Maria moved to Lisbon."}])
    assert "stored without links" in caplog.text
    assert len(client.list_memories(limit=None)) == 2
    assert client.get_memory_extraction_stats().failed == 0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("Supersedes", "supersedes"), ("is-refined", None), (" same ", "duplicates"), (None, "none")],
)
def test_relation_names_are_read_leniently(raw: Any, expected: Any) -> None:
    assert read_relation(raw) == expected


def test_link_answers_in_other_shapes() -> None:
    listed = read_link_answer({"links": [{"number": "#2", "relation": "refines"}, 5]}, 2)
    assert listed.relations == {2: "refines"}
    assert "a link item of type int was dropped" in listed.problems
    assert read_link_answer(["x"], 1).relations == {}
    clash = read_link_answer([{"memory": 1, "relation": "supports"}, {"id": 1, "type": "none"}], 1)
    assert clash.relations == {1: "supports"} and clash.problems


# --------------------------------------------------------------------------------------------
# DURING_EXTRACTION
# --------------------------------------------------------------------------------------------


def test_during_extraction_decides_links_in_the_extraction_call(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(
        llm=llm,
        memory_extraction_config=_config(
            MemoryLinkExtractionMode.DURING_EXTRACTION,
            memory_link_extraction_custom_instructions="Prefer supersedes for moves.",
        ),
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "Maria lives in Boston."}])
    assert len(llm.calls) == 1  # no separate link call
    llm.push(
        {
            "memories": [
                {
                    "type": "fact",
                    "content": "Maria moved to Lisbon.",
                    "sources": [1],
                    "links": [
                        {"target": "E1", "relation": "supersedes"},
                        {"target": "E9", "relation": "supports"},  # names nothing
                        {"target": "E1", "relation": "refines"},  # a second link to E1
                    ],
                },
                {
                    "type": "fact",
                    "content": "Maria has a cat.",
                    "sources": [1],
                    "links": [{"target": "E1", "relation": "is_related_to"}],
                },
            ]
        }
    )
    thread.add_messages([{"role": "user", "content": "Maria moved to Lisbon with her cat."}])
    assert len(llm.calls) == 2
    call = llm.calls[1]
    assert '<memory number="E1"' in call.last_user_text and "Maria lives in Boston." in call.text
    assert "Prefer supersedes for moves." in call.messages[0][1]
    item = call.schema["properties"]["memories"]["items"]["properties"]
    assert item["links"]["items"]["properties"]["target"]["enum"] == ["E1"]
    assert _links_of(client) == [("Maria moved to Lisbon.", "supersedes", "Maria lives in Boston.")]
    assert _status(client, "Maria lives in Boston.") is RecordStatus.INVALID
    assert client.store.list_relations()[0].metadata == {
        "$agent_memory": {"link_origin": "during_extraction"}
    }


def test_during_extraction_without_existing_memories_asks_for_no_links(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(
        llm=llm, memory_extraction_config=_config(MemoryLinkExtractionMode.DURING_EXTRACTION)
    )
    client.create_thread(user_id="u1").add_messages([{"role": "user", "content": "Hi, I'm Maria."}])
    item = llm.calls[0].schema["properties"]["memories"]["items"]["properties"]
    assert "links" not in item and "<existing_memories>" not in llm.calls[0].text


# --------------------------------------------------------------------------------------------
# add_memory(autonomous_linking=True)
# --------------------------------------------------------------------------------------------


def test_autonomous_linking_on_the_client(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm, memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    client.add_memory("Maria lives in Boston.", user_id="u1", memory_id="old", memory_type="fact")
    client.add_memory("Maria lives in Boston too.", user_id="u2", memory_id="other-user")
    new = client.add_memory(
        "Maria moved to Lisbon.", user_id="u1", memory_id="new", autonomous_linking=True
    )
    assert new == "new"
    assert _links_of(client) == [("Maria moved to Lisbon.", "supersedes", "Maria lives in Boston.")]
    assert client.store.get("fact", "old").status is RecordStatus.INVALID
    assert client.store.get("memory", "other-user").status is RecordStatus.VALID
    assert "Maria lives in Boston too." not in llm.calls[-1].text
    assert client.store.list_relations()[0].metadata == {
        "$agent_memory": {"link_origin": "autonomous_linking"}
    }


def test_autonomous_linking_on_a_thread_with_an_explicit_link_too(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm, memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    thread = client.create_thread(user_id="u1")
    thread.add_memory("Maria lives in Boston.", memory_id="old")
    thread.add_memory("Maria likes Lisbon.", memory_id="liked")
    thread.add_memory(
        "Maria moved to Lisbon.",
        memory_id="new",
        autonomous_linking=True,
        memory_id_to_link="liked",
        link_type="supports",
    )
    assert _links_of(client) == [
        ("Maria moved to Lisbon.", "supersedes", "Maria lives in Boston."),
        ("Maria moved to Lisbon.", "supports", "Maria likes Lisbon."),
    ]
    shown = link_candidates(llm.calls[-1].last_user_text)[1]
    assert "Maria likes Lisbon." not in shown.values()  # the explicit target is not asked about


def test_autonomous_linking_needs_an_llm_and_a_user_and_writes_nothing_on_failure(
    make_client: Any,
) -> None:
    plain = make_client()
    with pytest.raises(ValueError, match="needs an llm"):
        plain.add_memory("x", user_id="u1", autonomous_linking=True)
    llm = ScriptedLlm([RuntimeError("down")])
    client = make_client(
        name="c2.db",
        llm=llm,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    with pytest.raises(ValueError, match="needs a user_id"):
        client.add_memory("x", autonomous_linking=True)
    with pytest.raises(TypeError, match="autonomous_linking must be a bool"):
        client.add_memory("x", user_id="u1", autonomous_linking="yes")
    client.add_memory("Maria lives in Boston.", user_id="u1", memory_id="old")
    with pytest.raises(RuntimeError, match="down"):
        client.add_memory("Maria moved.", user_id="u1", memory_id="new", autonomous_linking=True)
    assert [m.id for m in client.list_memories(limit=None)] == ["old"]
    assert client.store.list_relations() == []


def test_autonomous_linking_with_no_candidates_makes_no_call(make_client: Any) -> None:
    llm = ScriptedLlm([])
    client = make_client(
        llm=llm, memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    assert client.add_memory("First memory.", user_id="u1", autonomous_linking=True)
    assert llm.calls == []


def test_a_failed_invalidation_removes_its_link(make_client: Any, monkeypatch: Any) -> None:
    llm = ScriptedLlm(respond=fake_model(link_for=_moves))
    client = make_client(
        llm=llm, memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    client.add_memory("Maria lives in Boston.", user_id="u1", memory_id="old")
    store = client.store

    def broken_update(*args: Any, **kwargs: Any) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(store, "update", broken_update)
    with pytest.raises(OSError, match="disk full"):
        client.add_memory("Maria moved to Lisbon.", user_id="u1", autonomous_linking=True)
    monkeypatch.undo()
    assert [m.id for m in client.list_memories(limit=None)] == ["old"]
    assert store.list_relations() == []
    assert store.get("memory", "old").status is RecordStatus.VALID

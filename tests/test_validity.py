"""Validity and ``as_of`` search (#51, parts 1, 2 and 4): a memory is true from its event time
(else its creation; an extracted one from its newest source message) until it is superseded
or invalidated; ``search(..., as_of=...)`` ranks what was true then, whatever its status now,
in every strategy, scope and filter, on both engines."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oracleagentmemory.apis import RecordStatus
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    SchemaPolicy,
    SQLiteMemoryStore,
)
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.extractors import MemoryLinkExtractionMode
from oracleagentmemory.core.llms import Llm

from ._embedders import HashingEmbedder
from ._fake_model import fake_model
from ._openai_server import FakeOpenAIServer, response_schema

JAN_2024 = "2024-01-01T00:00:00+00:00"
JUN_2025 = "2025-06-01T00:00:00+00:00"
BEFORE_MOVE = datetime(2024, 6, 1, tzinfo=UTC)
AFTER_MOVE = datetime(2026, 1, 1, tzinfo=UTC)
QUERY = "where does Alice live"


def _texts(results: list[Any]) -> list[str]:
    return [r.content if hasattr(r, "content") else r[0].content for r in results]


def _alice(store: Any) -> tuple[str, str]:
    """Paris (true from 2024), then Lisbon (from mid 2025) superseding it."""
    paris = store.add(
        ["Alice lives in Paris"], record_type="fact", user_ids="alice", timestamps=JAN_2024
    )[0]
    lisbon = store.add(
        ["Alice lives in Lisbon"], record_type="fact", user_ids="alice", timestamps=JUN_2025
    )[0]
    store.add_relations(lisbon, "fact", paris, "fact", "supersedes")
    store.update("fact", paris, status=RecordStatus.INVALID)
    return paris, lisbon


@pytest.mark.parametrize("strategy", list(SearchStrategy))
def test_as_of_ranks_what_was_true_then_in_every_strategy(
    make_store: Any, strategy: SearchStrategy
) -> None:
    store = make_store(search_strategy=strategy)
    _alice(store)
    store.add(["Bob lives in Rome"], record_type="fact", user_ids="bob", timestamps=JAN_2024)
    scoped = {"user_id": "alice", "exact_user_match": True, "include_invalid_results": False}
    assert _texts(store.search(QUERY, 5, **scoped)) == ["Alice lives in Lisbon"]
    assert _texts(store.search(QUERY, 5, **scoped, as_of=BEFORE_MOVE)) == ["Alice lives in Paris"]
    assert _texts(store.search(QUERY, 5, **scoped, as_of=AFTER_MOVE)) == ["Alice lives in Lisbon"]
    assert store.search(QUERY, 5, **scoped, as_of=datetime(2023, 1, 1)) == []
    # Unscoped, preferred scope, metadata filter: the same rule.
    unscoped = _texts(store.search(QUERY, 5, as_of=BEFORE_MOVE))
    assert "Alice lives in Lisbon" not in unscoped and "Alice lives in Paris" in unscoped
    preferred = _texts(store.search(QUERY, 5, user_id="alice", as_of=BEFORE_MOVE))
    assert "Alice lives in Lisbon" not in preferred
    assert store.search(QUERY, 5, metadata_filter={"k": "v"}, as_of=BEFORE_MOVE) == []
    # A naive datetime is UTC; anything else is refused before the search.
    assert _texts(store.search(QUERY, 5, **scoped, as_of=datetime(2024, 6, 1))) == [
        "Alice lives in Paris"
    ]
    with pytest.raises(TypeError, match="as_of"):
        store.search(QUERY, 5, as_of="2024-06-01")


def test_as_of_with_metadata_filter_masks_and_scopes(make_store: Any) -> None:
    store = make_store()
    old = store.add(
        ["Alice works at Acme"],
        record_type="fact",
        user_ids="alice",
        timestamps=JAN_2024,
        metadata={"topic": "work"},
    )[0]
    new = store.add(
        ["Alice works at Globex"],
        record_type="fact",
        user_ids="alice",
        timestamps=JUN_2025,
        metadata={"topic": "work"},
    )[0]
    store.add(["Alice likes jazz"], record_type="fact", user_ids="alice", timestamps=JAN_2024)
    store.add_relations(new, "fact", old, "fact", "supersedes")
    flt = {"topic": "work"}
    for scope in ({}, {"user_id": "alice", "exact_user_match": True}):
        # Twice: the second search reads the filter's cached mask.
        for _ in range(2):
            then = store.search("Alice works", 5, metadata_filter=flt, as_of=BEFORE_MOVE, **scope)
            assert _texts(then) == ["Alice works at Acme"]
            now = store.search("Alice works", 5, metadata_filter=flt, **scope)
            assert sorted(_texts(now)) == ["Alice works at Acme", "Alice works at Globex"]


def test_validity_columns_follow_status_changes_and_timestamps(make_store: Any) -> None:
    store = make_store()
    d = store._core.dialect
    (mid,) = store.add(["Alice owns a cat"], record_type="memory", user_ids="alice")

    def window() -> tuple[float | None, float | None]:
        row = d.execute(
            f"SELECT valid_from, valid_until FROM {d.tables.records} WHERE id = ?", [mid]
        )
        return row[0][0], row[0][1]

    start, until = window()
    assert start is not None and until is None
    assert abs(start - datetime.now(UTC).timestamp()) < 60
    store.update("memory", mid, status=RecordStatus.INVALID)
    _, until = window()
    assert until is not None and until >= start
    # True again: from now on, open-ended.
    store.update("memory", mid, status=RecordStatus.VALID)
    again, until = window()
    assert until is None and again >= start
    # A new event time moves when it became true.
    store.update("memory", mid, timestamp=JAN_2024)
    assert window()[0] == datetime.fromisoformat(JAN_2024).timestamp()
    # Messages are true from their time on; deleted records are gone from as_of too.
    (msg,) = store.add(
        ["Alice said hello"], record_type="message", thread_ids="t1", user_ids="alice",
        roles="user", timestamps=JAN_2024,
    )  # fmt: skip
    assert _texts(store.search("Alice said hello", 5, as_of=BEFORE_MOVE, record_types={"message"}))
    store.delete("message", msg)
    assert not store.search("Alice said hello", 5, as_of=BEFORE_MOVE, record_types={"message"})


def test_changing_a_link_into_supersedes_records_a_version_and_ends_validity(client: Any) -> None:
    old = client.add_memory("Alice lives in Paris", user_id="alice", timestamp=JAN_2024)
    new = client.add_memory("Alice lives in Lisbon", user_id="alice", timestamp=JUN_2025)
    link = client.link_records(new, "memory", old, "memory", "supports")
    assert [v.change for v in client.get_memory_history(old)] == ["created"]
    client.update_record_link(link, relation_type="supersedes")
    history = client.get_memory_history(old)
    assert [v.change for v in history] == ["created", "superseded"]
    assert history[-1].superseded_by == new
    then = client.search(QUERY, user_id="alice", as_of=BEFORE_MOVE)
    assert _texts([r.record for r in then]) == ["Alice lives in Paris"]
    later = client.search(QUERY, user_id="alice", as_of=AFTER_MOVE)
    assert _texts([r.record for r in later]) == ["Alice lives in Lisbon"]


def test_client_and_thread_search_as_of_sync_and_async(client: Any) -> None:
    _alice_by_client(client)
    thread = client.create_thread(user_id="alice", agent_id="a1")
    for search, kwargs in ((client.search, {"user_id": "alice"}), (thread.search, {})):
        now = search(QUERY, **kwargs)
        assert _texts([r.record for r in now])[0] == "Alice lives in Lisbon"
        assert "Alice lives in Paris" not in _texts([r.record for r in now])
        then = search(QUERY, **kwargs, as_of=BEFORE_MOVE)
        assert [r.content for r in then] == ["Alice lives in Paris"]  # rendered in full
    then = asyncio.run(client.search_async(QUERY, user_id="alice", as_of=BEFORE_MOVE))
    assert [r.content for r in then] == ["Alice lives in Paris"]
    then = asyncio.run(thread.search_async(QUERY, as_of=BEFORE_MOVE))
    assert [r.content for r in then] == ["Alice lives in Paris"]


def _alice_by_client(client: Any) -> None:
    scope = {"user_id": "alice", "agent_id": "a1"}
    old = client.add_memory("Alice lives in Paris", **scope, timestamp=JAN_2024)
    new = client.add_memory("Alice lives in Lisbon", **scope, timestamp=JUN_2025)
    client.link_records(new, "memory", old, "memory", "supersedes")
    client.update_memory(old, status="invalid")


# ---------------------------------------------------------------- extraction over HTTP

KEY = "sk-test"
MODEL = "memory-model"


def _moves(new: str, existing: str) -> str:
    """The link judge: a new city for Alice supersedes the old one."""
    return "supersedes" if "Lisbon" in new and "Paris" in existing else "none"


def _model_reply(body: dict[str, Any]) -> str:
    call = SimpleNamespace(
        schema=response_schema(body), messages=[(m["role"], m["content"]) for m in body["messages"]]
    )
    answer = fake_model(link_for=_moves)(call)
    return answer if isinstance(answer, str) else json.dumps(answer)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, models=(MODEL,)) as srv:
        yield srv


def test_extraction_that_contradicts_an_older_fact_supersedes_it(
    make_client: Any, server: FakeOpenAIServer
) -> None:
    """Alice moves from Paris to Lisbon: the link judge (over the real OpenAI wire) says the
    new fact supersedes the old; the default search answers Lisbon, ``as_of`` before the
    move Paris; each memory is true from its message's time."""
    server.replies.extend([_model_reply] * 32)
    llm = Llm(MODEL, api_base=server.api_base, api_key=KEY)
    llm.retry_base_delay = 0.01  # type: ignore[attr-defined]
    client = make_client(
        llm=llm,
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
        ),
    )
    thread = client.create_thread(user_id="alice")
    thread.add_messages([{"role": "user", "content": "I live in Paris", "timestamp": JAN_2024}])
    thread.add_messages([{"role": "user", "content": "I moved to Lisbon", "timestamp": JUN_2025}])
    facts = {m.content: m for m in client.list_memories(user_id="alice")}
    assert set(facts) == {"I live in Paris", "I moved to Lisbon"}
    assert facts["I live in Paris"].status is RecordStatus.INVALID
    history = client.get_memory_history(facts["I live in Paris"].id)
    assert history[-2].change == "superseded" or history[-1].change == "superseded"
    store = client.store
    d = store._core.dialect
    rows = dict(
        (r[0], (r[1], r[2]))
        for r in d.execute(f"SELECT content, valid_from, valid_until FROM {d.tables.records}"
                           " WHERE family = 'memory'")
    )  # fmt: skip
    move = datetime.fromisoformat(JUN_2025).timestamp()
    assert rows["I live in Paris"] == (datetime.fromisoformat(JAN_2024).timestamp(), move)
    assert rows["I moved to Lisbon"] == (move, None)
    now = thread.search("where do I live", record_types=["fact"])
    assert [r.content for r in now] == ["I moved to Lisbon"]
    then = thread.search("where do I live", record_types=["fact"], as_of=BEFORE_MOVE)
    assert [r.content for r in then] == ["I live in Paris"]


# ---------------------------------------------------------------- migration


def test_a_schema_15_store_migrates_its_validity(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = SQLiteMemoryStore(
        HashingEmbedder(), str(path), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    _alice(store)
    t = store._core.dialect.tables
    store.close()
    # Back to schema 15: no validity columns.
    with sqlite3.connect(path) as conn:
        conn.execute(f"DROP INDEX {t.records}_valid_from")
        conn.execute(f"DROP INDEX {t.records}_valid_until")
        conn.execute(f"ALTER TABLE {t.records} DROP COLUMN valid_from")
        conn.execute(f"ALTER TABLE {t.records} DROP COLUMN valid_until")
        conn.execute(f"UPDATE {t.meta} SET value = '15' WHERE key = 'schema_version'")
    old = SQLiteMemoryStore(HashingEmbedder(), str(path), schema_policy=SchemaPolicy.NO_CHECK)
    with pytest.raises(ValueError, match="as_of"):
        old.search(QUERY, 5, as_of=BEFORE_MOVE)
    assert _texts(old.search(QUERY, 5, include_invalid_results=False)) == ["Alice lives in Lisbon"]
    old.close()
    store = SQLiteMemoryStore(
        HashingEmbedder(), str(path), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    try:
        assert _texts(store.search(QUERY, 5, as_of=BEFORE_MOVE)) == ["Alice lives in Paris"]
        assert _texts(store.search(QUERY, 5, as_of=AFTER_MOVE)) == ["Alice lives in Lisbon"]
    finally:
        store.close()


def test_export_and_import_carry_validity(
    make_client: Any, request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    import io

    from oracleagentmemory.admin.connect import Target
    from oracleagentmemory.admin.portable import export_store, import_store

    from .conftest import backend_connection

    source = make_client(name="source.db")
    _alice_by_client(source)
    # Ended by an INVALID status alone (no link): its end is the change's time, kept as is.
    gone = source.add_memory("Alice has a dog", user_id="alice", agent_id="a1")
    source.update_memory(gone, status="invalid")
    out = io.StringIO()
    export_store(source, Target(backend_connection(request, backend, tmp_path, "source.db")), out)
    lines = [json.loads(ln) for ln in out.getvalue().splitlines()]
    windows = {ln["content"]: ln["valid_until"] for ln in lines if ln.get("kind") == "record"}
    assert windows["Alice lives in Paris"] == datetime.fromisoformat(JUN_2025).isoformat()
    assert windows["Alice lives in Lisbon"] is None and windows["Alice has a dog"] is not None
    target = make_client(name="target.db")
    import_store(target, iter(out.getvalue().splitlines()))

    def window(client: Any) -> dict[str, tuple[float, float | None]]:
        d = client.store._core.dialect
        rows = d.execute(
            f"SELECT content, valid_from, valid_until FROM {d.tables.records}"
            " WHERE family = 'memory'"
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    assert window(target) == window(source)
    for client in (source, target):
        then = client.search(QUERY, user_id="alice", as_of=BEFORE_MOVE)
        assert then[0].content == "Alice lives in Paris"
    # A malformed time is refused before anything is written.
    bad = out.getvalue().replace('"valid_until": null', '"valid_until": "someday"', 1)
    with pytest.raises(Exception, match="valid_until"):
        import_store(make_client(name="bad.db"), iter(bad.splitlines()))


def test_extracted_memories_start_at_their_newest_message_and_merges_are_versions(
    store: Any,
) -> None:
    from oracleagentmemory.apis import PendingRecordBatch

    m1, m2 = store.add(
        ["I like tea", "I have cats"],
        record_type="message",
        thread_ids="t1",
        user_ids="u1",
        roles="user",
        timestamps=[JAN_2024, JUN_2025],
    )
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
    )
    d = store._core.dialect
    rows = d.execute(f"SELECT id, valid_from FROM {d.tables.records} WHERE family = 'memory'")
    since = dict(rows)
    assert since[ids[0]] == datetime.fromisoformat(JAN_2024).timestamp()
    assert since[ids[1]] == datetime.fromisoformat(JUN_2025).timestamp()  # the newest source
    # A duplicate found later merges its sources: a ``merged`` version naming all of them.
    (m3,) = store.add(
        ["tea again"], record_type="message", thread_ids="t1", user_ids="u1", roles="user"
    )
    store.commit_extraction([], merged_sources={ids[0]: [m3, m1]})
    history = store.memory_history(ids[0])
    assert [v.change for v in history] == ["created", "merged"]
    assert history[-1].changed == ("sources",)
    assert history[-1].source_message_ids == tuple(sorted([m1, m3]))
    assert history[-1].content == "Likes tea"
    # Nothing new to merge: no version.
    store.commit_extraction([], merged_sources={ids[0]: [m1]})
    assert len(store.memory_history(ids[0])) == 2


def test_a_schema_15_store_migrates_on_both_engines(make_store: Any, backend: str) -> None:
    if backend == "citus":
        pytest.skip(
            "a store distributed on Citus is created at schema 16 or later:"
            " older migrations run on one node only"
        )
    store = make_store(name="old.db")
    _alice(store)
    d = store._core.dialect
    t = d.tables
    with store._core.lock, d.transaction():  # back to schema 15: no validity columns
        if d.native_vector_search:  # PostgreSQL drops the indexes with the columns
            d.execute(f"ALTER TABLE {t.records} DROP COLUMN valid_from, DROP COLUMN valid_until")
        else:
            for stmt in (
                f"DROP INDEX {t.records}_valid_from",
                f"DROP INDEX {t.records}_valid_until",
                f"ALTER TABLE {t.records} DROP COLUMN valid_from",
                f"ALTER TABLE {t.records} DROP COLUMN valid_until",
            ):
                d.execute(stmt)
        d.execute(f"UPDATE {t.meta} SET value = '15' WHERE key = 'schema_version'")
    store.close()
    again = make_store(name="old.db")
    assert _texts(again.search(QUERY, 5, as_of=BEFORE_MOVE)) == ["Alice lives in Paris"]
    assert _texts(again.search(QUERY, 5, as_of=AFTER_MOVE)) == ["Alice lives in Lisbon"]
    d = again._core.dialect
    rows = d.execute(f"SELECT content, valid_from, valid_until FROM {d.tables.records}")
    move = datetime.fromisoformat(JUN_2025).timestamp()
    assert {r[0]: (r[1], r[2]) for r in rows} == {
        "Alice lives in Paris": (datetime.fromisoformat(JAN_2024).timestamp(), move),
        "Alice lives in Lisbon": (move, None),
    }


def test_a_memory_written_invalid_was_never_true(make_store: Any) -> None:
    store = make_store()
    (mid,) = store.add(
        ["Alice drinks green tea"], record_type="memory", user_ids="alice",
        statuses=RecordStatus.INVALID,
    )  # fmt: skip
    now = datetime.now(UTC)
    assert not store.search("green tea", 5, as_of=now, record_types={"memory"})
    store.update("memory", mid, status=RecordStatus.VALID)  # true from then on
    assert _texts(store.search("green tea", 5, as_of=datetime.now(UTC), record_types={"memory"}))


def test_as_of_links_only_records_true_then(client: Any) -> None:
    old = client.add_memory("Alice lives in Paris", user_id="alice", timestamp=JAN_2024)
    client.add_memory(
        "Alice moved to Lisbon", user_id="alice", timestamp=JUN_2025,
        memory_id_to_link=old, link_type="supersedes",
    )  # fmt: skip
    then = client.search(QUERY, user_id="alice", as_of=BEFORE_MOVE, num_hops=1)
    paris = [r.record for r in then if r.record.id == old]
    assert paris and not paris[0].linked_results
    now = client.search(QUERY, user_id="alice", num_hops=1)
    assert any(r.record.linked_results for r in now)


@pytest.mark.parametrize("how", ["delete the successor", "delete the link", "change the link"])
def test_a_memory_no_longer_superseded_is_true_again(client: Any, how: str) -> None:
    old = client.add_memory("Alice lives in Paris", user_id="alice", timestamp=JAN_2024)
    new = client.add_memory("Alice lives in Lisbon", user_id="alice", timestamp=JUN_2025)
    link = client.link_records(new, "memory", old, "memory", "supersedes")
    later = client.search(QUERY, user_id="alice", as_of=AFTER_MOVE)
    assert "Alice lives in Paris" not in _texts([r.record for r in later])
    if how == "delete the successor":
        client.delete_memory(new)
    elif how == "delete the link":
        client.delete_record_link(relation_id=link)
    else:
        client.update_record_link(link, relation_type="supports")
    later = client.search(QUERY, user_id="alice", as_of=AFTER_MOVE)
    assert "Alice lives in Paris" in _texts([r.record for r in later])


def test_a_supersedes_link_turned_around_supersedes_the_other_end(client: Any) -> None:
    old = client.add_memory("Alice lives in Paris", user_id="alice", timestamp=JAN_2024)
    new = client.add_memory("Alice lives in Lisbon", user_id="alice", timestamp=JUN_2025)
    link = client.link_records(new, "memory", old, "memory", "supersedes")
    later = _texts([r.record for r in client.search(QUERY, user_id="alice", as_of=AFTER_MOVE)])
    assert later == ["Alice lives in Lisbon"]
    client.update_record_link(link, relation_type="superseded_by")  # Lisbon superseded by Paris
    later = _texts([r.record for r in client.search(QUERY, user_id="alice", as_of=AFTER_MOVE)])
    assert later == ["Alice lives in Paris"]


def test_a_superseded_memory_made_valid_again_stays_superseded(client: Any) -> None:
    old = client.add_memory("Alice lives in Paris", user_id="alice", timestamp=JAN_2024)
    new = client.add_memory("Alice lives in Lisbon", user_id="alice", timestamp=JUN_2025)
    client.link_records(new, "memory", old, "memory", "supersedes")
    client.update_memory(old, status=RecordStatus.INVALID)
    client.update_memory(old, status=RecordStatus.VALID)
    now = _texts([r.record for r in client.search(QUERY, user_id="alice", as_of=datetime.now(UTC))])
    assert now == ["Alice lives in Lisbon"]


def test_a_link_removed_while_another_supersedes_the_same_memory_keeps_it_superseded(
    pg_url: Any,
) -> None:
    """PostgreSQL, two writers: a supersedes link deleted while another transaction adds a
    new one to the same memory (holding the memory's row, as a link insert does) must not
    leave the memory true: the re-check reads the links after the other commits."""
    import threading

    import psycopg

    from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy

    url = pg_url("supersede_race")
    store = PostgresMemoryStore(
        HashingEmbedder(), url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    try:
        paris = store.add(
            ["Alice lives in Paris"], record_type="memory", user_ids="alice", timestamps=JAN_2024
        )[0]
        lisbon, porto = store.add(
            ["Alice lives in Lisbon", "Alice lives in Porto"],
            record_type="memory",
            user_ids="alice",
            timestamps=[JUN_2025, "2025-09-01T00:00:00+00:00"],
        )
        first = store.add_relations(lisbon, "memory", paris, "memory", "supersedes")[0]
        t = store._dialect.tables
        with psycopg.connect(url) as other:  # the other writer, inside its transaction
            other.execute(f"SELECT 1 FROM {t.records} WHERE id = %s FOR UPDATE", [paris])
            other.execute(
                f"INSERT INTO {t.relations} (id, source_record_id, source_record_type,"
                " target_record_id, target_record_type, relation_type, opposite_relation_type,"
                " timestamp, metadata, created_at) SELECT 'second', %s, source_record_type,"
                " target_record_id, target_record_type, relation_type, opposite_relation_type,"
                f" timestamp, metadata, created_at FROM {t.relations} WHERE id = %s",
                [porto, first],
            )
            worker = threading.Thread(target=store.delete_relations, args=(first,))
            worker.start()
            worker.join(0.5)
            assert worker.is_alive()  # waits for the other writer's row
            other.commit()
            worker.join(10)
            assert not worker.is_alive()
        until = store._dialect.execute(
            f"SELECT valid_until FROM {t.records} WHERE id = ?", [paris]
        )[0][0]
        assert until is not None  # Porto still supersedes Paris
        now = store.search(QUERY, 5, as_of=AFTER_MOVE, record_types={"memory"})
        assert "Alice lives in Paris" not in _texts(now)
    finally:
        store.close()

"""A thread's messages get a keyword-only row (the two previous messages + the message) on
every backend: keyword search finds a message by words two messages back, and the row is
never embedded, re-embedded, exported as a chunk or kept past a content update."""

from __future__ import annotations

import json
from typing import Any

from oracleagentmemory.core.store.schema._rows import KEYWORD_ROW_INDEX

TURNS = [
    "We adopted a greyhound last spring.",
    "That is lovely news!",
    "He sleeps on the sofa all day.",
    "Mine does the same thing.",
]


def _thread(make_client: Any, **kwargs: Any) -> tuple[Any, Any]:
    kwargs.setdefault("search_strategy", "hybrid")
    client = make_client(**kwargs)
    thread = client.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": t} for t in TURNS[:2]])
    thread.add_messages([{"role": "user", "content": t} for t in TURNS[2:]])
    return client, thread


def _search(make_client: Any, strategy: str, query: str) -> list[Any]:
    """Messages found for ``query`` by a client on the same store with ``strategy``."""
    other = make_client(search_strategy=strategy)
    return [r for r, _ in other.store.search(query, 10, record_types={"message"})]


def _keyword_rows(store: Any) -> dict[str, tuple[str, bool]]:
    """Message id -> (its keyword-only row's text, whether that row has a vector)."""
    d = store._dialect
    t = d.tables
    rows = d.execute(
        f"SELECT r.id, c.chunk_text, c.vector IS NOT NULL FROM {t.chunks} c JOIN {t.records} r"
        f" ON r.rid = c.rid WHERE c.chunk_index = {KEYWORD_ROW_INDEX}"
    )
    return {str(i): (str(text), bool(has)) for i, text, has in rows}


def test_keyword_search_reaches_a_message_two_messages_back(make_client: Any) -> None:
    client, thread = _thread(make_client)
    ids = [m.id for m in thread.get_messages()]
    found = _search(make_client, "keyword", "greyhound")
    # The first message has the word; the second through its window (the message before
    # it); the third only through its keyword row; the fourth is three messages away.
    assert sorted(r.id for r in found) == sorted(ids[:3])
    rows = _keyword_rows(client.store)
    assert set(rows) == set(ids[2:]), "a row for each message with two before it"
    assert rows[ids[2]] == ("\n".join(TURNS[:3]), False)
    assert rows[ids[3]] == ("\n".join(TURNS[1:4]), False), "across add_messages calls too"


def test_the_keyword_row_is_never_a_vector(make_client: Any) -> None:
    client, thread = _thread(make_client)
    ids = [m.id for m in thread.get_messages()]
    found = _search(make_client, "vector", "greyhound")
    assert len(found) == len(ids), "vector search ranks each message once"
    store = client.store
    assert store.reembed(store.embedder) == len(ids), "re-embedding skips keyword rows"
    assert all(not has for _, has in _keyword_rows(store).values())
    assert len(_keyword_rows(store)) == 2


def test_updates_keep_the_row_for_a_new_vector_and_drop_it_for_new_content(
    make_client: Any,
) -> None:
    client, thread = _thread(make_client)
    ids = [m.id for m in thread.get_messages()]
    store = client.store
    vector = store.embedder.embed(["new vector"], is_query=False)[0]
    assert store.update("message", ids[2], embedding=vector) == 1
    assert ids[2] in _keyword_rows(store)
    assert store.update("message", ids[3], content="Mine prefers the floor.") == 1
    assert ids[3] not in _keyword_rows(store), "its window held the old content"
    found = _search(make_client, "keyword", "greyhound")
    assert ids[2] in {r.id for r in found}


def test_an_export_carries_the_row_and_an_import_restores_it(
    make_client: Any, request: Any, backend: str, tmp_path: Any
) -> None:
    from oracleagentmemory.cli import main

    from .conftest import backend_connection

    source = backend_connection(request, backend, tmp_path, "source.db")
    client, thread = _thread(
        make_client, connection=source, embedder=None, search_strategy="keyword"
    )  # the CLI opens it without a model
    ids = [m.id for m in thread.get_messages()]
    out = tmp_path / "export.jsonl"
    plain = ["--embedder", "none", "--search-strategy", "keyword"]
    assert main(["export", "--dsn", source, "--out", str(out), *plain]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    by_id = {x.get("id"): x for x in lines if x.get("kind") == "record"}
    assert by_id[ids[2]]["keyword_text"] == "\n".join(TURNS[:3])
    assert "keyword_text" not in by_id[ids[1]]
    assert all(x.get("index_texts", []).count("\n".join(TURNS[:3])) == 0 for x in by_id.values()), (
        "not a chunk of its own"
    )
    target = backend_connection(request, backend, tmp_path, "target.db")
    assert main(["import", "--dsn", target, str(out), *plain]) == 0
    restored = make_client(connection=target, embedder=None, search_strategy="keyword")
    assert _keyword_rows(restored.store) == _keyword_rows(client.store)


def test_an_import_refuses_a_bad_keyword_text_before_writing(
    make_client: Any, request: Any, backend: str, tmp_path: Any
) -> None:
    from oracleagentmemory.cli import main

    from .conftest import backend_connection

    source = backend_connection(request, backend, tmp_path, "source.db")
    _, thread = _thread(make_client, connection=source, embedder=None, search_strategy="keyword")
    third = thread.get_messages()[2].id
    out = tmp_path / "export.jsonl"
    plain = ["--embedder", "none", "--search-strategy", "keyword"]
    assert main(["export", "--dsn", source, "--out", str(out), *plain]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    for bad in (123, "x" * 40_000):
        edited = tmp_path / "edited.jsonl"
        edited.write_text(
            "".join(
                json.dumps({**x, "keyword_text": bad} if x.get("id") == third else x) + "\n"
                for x in lines
            )
        )
        target = backend_connection(request, backend, tmp_path, "target.db")
        assert main(["import", "--dsn", target, str(edited), *plain]) != 0
        client = make_client(connection=target, embedder=None, search_strategy="keyword")
        assert client.store.list_records(["message", "thread"], limit=None) == []

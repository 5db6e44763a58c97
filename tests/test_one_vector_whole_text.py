"""One explicit vector stands for the whole retrieval text (page 000, "Store write semantics").

"One vector means one vector for the whole retrieval text. The store does not split that
text for the explicit vector": a long text given with one vector is one retrieval row (its
whole text, that vector), so a later one-vector embedding-only update matches the record's
rows, and keyword search still finds any word of the text. Several vectors keep their
meaning: one per caller-owned chunk.
"""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.core.store._limits import MAX_CALLER_CHUNK_CHARS
from oracleagentmemory.core.store.schema._rows import KEYWORD_ROW_INDEX

DIM = 64  # the hashing test embedder's dimension
LONG = " ".join(f"word{i}" for i in range(300))  # several chunks for the store's chunker


def unit(i: int) -> list[float]:
    v = [0.0] * DIM
    v[i] = 1.0
    return v


def rows(store: Any, record_id: str) -> list[tuple[int, str | None, bool]]:
    """The record's retrieval rows: (chunk index, text, has a vector), keyword row left out."""
    d = store._dialect
    t = d.tables
    found = d.execute(
        f"SELECT c.chunk_index, c.chunk_text, c.vector IS NOT NULL FROM {t.chunks} c"
        f" JOIN {t.records} r ON r.rid = c.rid WHERE r.id = ? ORDER BY c.chunk_index",
        [record_id],
    )
    return [(int(i), tx, bool(v)) for i, tx, v in found if int(i) != KEYWORD_ROW_INDEX]


def nearest(store: Any, vector: list[float]) -> str:
    return str(store.search(None, 1, query_vector=vector)[0][0].id)


def _write_long(store: Any, route: str) -> None:
    """Record ``m``: ``LONG`` with the one vector ``unit(1)``, written through ``route``."""
    if route == "contents":
        store.add([LONG], record_type="memory", record_ids="m", embeddings=[unit(1)])
    elif route == "index_texts":
        store.add(
            ["short"],
            record_type="memory",
            record_ids="m",
            index_texts=[LONG],
            embeddings=[unit(1)],
        )
    elif route == "update":
        store.add(["x"], record_type="memory", record_ids="m")
        store.update("memory", "m", text=LONG, embedding=unit(1))
    else:
        from oracleagentmemory.apis.memorystore import PendingRecordBatch

        batch = PendingRecordBatch(
            contents=[LONG], record_type="memory", record_ids="m", embeddings=[unit(1)]
        )
        store.add_batches([batch])


@pytest.mark.parametrize("route", ["contents", "index_texts", "update", "add_batches"])
def test_one_vector_gives_one_row_with_the_whole_text(
    make_store: Any, backend: str, route: str
) -> None:
    store = make_store()
    assert len(store._core.chunker.split(LONG)) > 1  # the store would cut it without a vector
    _write_long(store, route)
    assert rows(store, "m") == [(0, LONG, True)]
    assert nearest(store, unit(1)) == "m"


@pytest.mark.parametrize("route", ["contents", "index_texts", "update"])
def test_a_one_vector_embedding_only_update_is_accepted(
    make_store: Any, backend: str, route: str
) -> None:
    store = make_store()
    store.add(["other"], record_type="memory", record_ids="o", embeddings=[unit(5)])
    _write_long(store, route)
    assert store.update("memory", "m", embedding=unit(2)) == 1
    assert rows(store, "m") == [(0, LONG, True)]
    assert nearest(store, unit(2)) == "m"
    assert nearest(store, unit(5)) == "o"
    # Two vectors do not match the one row.
    with pytest.raises(ValueError, match="2 vector"):
        store.update("memory", "m", embedding=[unit(3), unit(4)])


@pytest.mark.parametrize("strategy", [SearchStrategy.KEYWORD, SearchStrategy.HYBRID])
def test_keyword_search_finds_a_word_from_the_end_of_the_text(
    make_store: Any, backend: str, strategy: SearchStrategy
) -> None:
    store = make_store(search_strategy=strategy)

    def found(word: str) -> list[str]:
        hits = [r.id for r, _ in store.search(word, 3)]
        # HYBRID fuses the vector branch too: the record need only be among the hits.
        return hits if strategy is SearchStrategy.KEYWORD else [h for h in hits if h == "m"]

    store.add(["filler text"], record_type="memory", record_ids="f")
    store.add([LONG], record_type="memory", record_ids="m", embeddings=[unit(1)])
    assert rows(store, "m") == [(0, LONG, True)]
    assert found("word299") == ["m"]
    assert found("word0") == ["m"]
    store.update("memory", "m", embedding=unit(2))
    assert found("word299") == ["m"]
    tail = LONG + " zanzibar"
    store.update("memory", "m", text=tail, embedding=unit(3))
    assert rows(store, "m") == [(0, tail, True)]
    assert found("zanzibar") == ["m"]


def test_several_vectors_keep_one_per_caller_chunk(make_store: Any, backend: str) -> None:
    store = make_store()
    chunks = ["alpha part", "beta part", "gamma part"]
    store.add(
        ["body"],
        record_type="memory",
        record_ids="m",
        index_texts=[chunks],
        embeddings=[[unit(1), unit(2), unit(3)]],
    )
    assert rows(store, "m") == [(0, chunks[0], True), (1, chunks[1], True), (2, chunks[2], True)]
    assert store.update("memory", "m", embedding=[unit(4), unit(5), unit(6)]) == 1
    assert [tx for _, tx, _ in rows(store, "m")] == chunks
    with pytest.raises(ValueError, match="1 vector"):
        store.update("memory", "m", embedding=unit(7))
    # Several vectors for store-chunked text are still refused: the boundaries are not explicit.
    with pytest.raises(ValueError, match="matching list of index text chunks"):
        store.add([LONG], record_type="memory", embeddings=[[unit(1), unit(2)]])
    with pytest.raises(ValueError, match="matching list of index text chunks"):
        store.update("memory", "m", text=LONG, embedding=[unit(1), unit(2)])


def test_without_a_vector_a_long_text_is_still_chunked(make_store: Any, backend: str) -> None:
    store = make_store()
    store.add([LONG], record_type="memory", record_ids="m")
    found = rows(store, "m")
    assert len(found) == len(store._core.chunker.split(LONG)) > 1
    assert all(has_vector for _, _, has_vector in found)


def test_a_text_too_long_for_one_row_keeps_the_vector_on_each_chunk(
    make_store: Any, backend: str
) -> None:
    """Past ``MAX_CALLER_CHUNK_CHARS`` (PostgreSQL's keyword index bounds a row) the text is
    cut, each chunk holding the one vector; a one-vector update still matches it."""
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    huge = " ".join(f"w{i}" for i in range(MAX_CALLER_CHUNK_CHARS // 4)) + " zanzibar"
    assert len(huge) > MAX_CALLER_CHUNK_CHARS
    store.add([huge], record_type="memory", record_ids="m", embeddings=[unit(1)])
    assert len(rows(store, "m")) > 1
    assert [r.id for r, _ in store.search("zanzibar", 3)] == ["m"]
    assert store.update("memory", "m", embedding=unit(2)) == 1
    assert all(has_vector for _, _, has_vector in rows(store, "m"))
    d = store._dialect
    blobs = [
        b
        for (b,) in d.execute(
            f"SELECT {d.vector_read_sql('c.vector')} FROM {d.tables.chunks} c"
            f" JOIN {d.tables.records} r ON r.rid = c.rid WHERE r.id = ?",
            ["m"],
        )
    ]
    assert (d.vectors_from_db(blobs, DIM) == unit(2)).all()


def test_rows_holding_copies_of_one_vector_take_a_one_vector_update(
    make_store: Any, backend: str
) -> None:
    """A record whose chunks each hold one caller vector (as stores wrote a long text given
    one vector before) accepts a one-vector embedding-only update."""
    store = make_store()
    chunks = ["alpha part", "beta part", "gamma part"]
    store.add(
        ["body"],
        record_type="memory",
        record_ids="m",
        index_texts=[chunks],
        embeddings=[[unit(1)] * 3],
    )
    assert store.update("memory", "m", embedding=unit(2)) == 1
    assert [tx for _, tx, _ in rows(store, "m")] == chunks
    assert nearest(store, unit(2)) == "m"


def test_add_messages_with_one_vector_writes_one_row(make_client: Any, backend: str) -> None:
    """The client's message route (``embeddings`` through ``store_kwargs``) agrees."""
    client = make_client(search_strategy=SearchStrategy.KEYWORD)
    thread = client.create_thread(user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": "prelude about kayaks"}])
    [mid] = thread.add_messages([{"role": "user", "content": LONG}], embeddings=[unit(1)])
    assert rows(client.store, mid) == [(0, LONG, True)]
    assert client.store.update("message", mid, embedding=unit(2)) == 1
    assert mid in [r.id for r in thread.search("word299", record_types=["message"])]

"""A word longer than PostgreSQL's longest lexeme (2,046 bytes) is written and searched on
both engines alike: PostgreSQL keeps its first 2,046 bytes in rows and queries, so such a
word still finds itself, and a query holding one never fails (it raised "word is too long in
tsquery" there)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import PostgresMemoryStore, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy

from ._embedders import HashingEmbedder
from ._pg_helpers import needs_postgres

OPTIONS: dict[str, Any] = {
    "schema_policy": "create_if_necessary",
    "search_strategy": SearchStrategy.KEYWORD,
}

LONG = "é" + "b" * 2999  # 3,001 characters, 3,002 bytes
TWIN = LONG[:2100] + "c" * 900  # LONG's first 2,046 bytes and more, another word


@pytest.mark.parametrize("strategy", [SearchStrategy.KEYWORD, SearchStrategy.HYBRID])
def test_a_word_past_the_longest_lexeme_finds_itself(make_store, strategy) -> None:  # type: ignore[no-untyped-def]
    store = make_store(search_strategy=strategy)
    store.add(
        ["c1", "c2", "c3"],
        index_texts=[[f"hello {LONG} world"], ["hello there"], ["nothing here"]],
        record_type="memory",
        user_ids="u",
        record_ids=["c1", "c2", "c3"],
    )
    alone = [r.id for r, _ in store.search(LONG, 5, user_id="u")]
    assert alone[0] == "c1"
    both = [r.id for r, _ in store.search(f"hello {LONG}", 5, user_id="u")]
    assert both[:2] == ["c1", "c2"]


@needs_postgres
def test_keyword_scores_with_long_words_are_the_same_on_both_engines(
    tmp_path: Path, pg_url: Callable[[str], str]
) -> None:
    """The same ids at the same distances on SQLite and PostgreSQL: the long word's share
    of BM25 included (two rows holding it, one of them twice)."""
    texts = [f"hello {LONG} world", "hello there", f"{LONG} {LONG}", "nothing", f"say {TWIN}"]
    got = []
    for store in (
        SQLiteMemoryStore(HashingEmbedder(), str(tmp_path / "a.db"), **OPTIONS),
        PostgresMemoryStore(HashingEmbedder(), pg_url("long_words"), **OPTIONS),
    ):
        try:
            store.add(texts, index_texts=[[t] for t in texts], record_type="memory",
                      user_ids="u", record_ids=["a", "b", "c", "d", "e"])  # fmt: skip
            got.append(
                [
                    [(r.id, d) for r, d in store.search(q, 5, user_id="u")]
                    for q in (f"hello {LONG}", TWIN)
                ]
            )
        finally:
            store.close()
    (both, twin), (pg_both, pg_twin) = got
    assert [i for i, _ in both] == ["c", "a", "b"] or [i for i, _ in both] == ["a", "c", "b"]
    assert [i for i, _ in twin] == ["e"]  # the same first 2,046 bytes, another word
    for sqlite, pg in ((both, pg_both), (twin, pg_twin)):
        assert [i for i, _ in sqlite] == [i for i, _ in pg]
        for (_, a), (_, b) in zip(sqlite, pg, strict=True):
            assert a == pytest.approx(b, abs=1e-9)

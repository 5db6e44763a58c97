"""Keyword counts read while another connection commits (SQLite), and held counts of a prefix
two users share: a search answers from one state of the table, never raises."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.engines.sqlite import _sqlite_words
from oracleagentmemory.core.store.search import _keyword_branch
from oracleagentmemory.core.store.search._keyword import idf

from ._embedders import HashingEmbedder


def _open(path: Path, strategy: SearchStrategy = SearchStrategy.HYBRID) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(
        HashingEmbedder(),
        str(path),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=strategy,
    )


def _ids(got: list[tuple[object, float]]) -> list[tuple[str, float]]:
    return [(r.id, round(d, 6)) for r, d in got]  # type: ignore[attr-defined]


def test_idf_of_more_hits_than_rows_is_the_floor() -> None:
    assert idf(3, 10) == idf(3, 3) == 1e-6
    assert idf(10, 3) > 0.5


def test_a_commit_between_the_vector_and_keyword_branches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection adds rows after the HYBRID search's vector branch caught up and
    before its keyword branch: the keyword branch reads its counts and postings from one
    state (the counts were once keyed by the vector branch's older state: idf(3, 10) raised)."""
    db = tmp_path / "race.db"
    store, other = _open(db), _open(db)
    store.add(
        ["apple river", "stone cloud", "garden lamp"],
        record_type="message",
        record_ids=["a0", "a1", "a2"],
        user_ids="alice",
        thread_ids="alice-t0",
        roles="user",
    )
    scope = {"user_id": "alice", "exact_user_match": True}
    store.search("zebra apple", 5, **scope)  # alice's totals (3 rows) known for this state
    hits = _keyword_branch.KeywordBranch.hits

    def commit_then_hits(self, *a, **kw):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(_keyword_branch.KeywordBranch, "hits", hits)
        other.add(
            [f"zebra {i}" for i in range(10)],
            record_type="message",
            record_ids=[f"z{i}" for i in range(10)],
            user_ids="alice",
            thread_ids="alice-t1",
            roles="user",
        )
        return hits(self, *a, **kw)

    monkeypatch.setattr(_keyword_branch.KeywordBranch, "hits", commit_then_hits)
    try:
        raced = store.search("zebra apple", 5, **scope)
        assert any(r.id.startswith("z") for r, _ in raced)  # the keyword branch saw the commit
        fresh = _open(db)
        try:
            assert _ids(store.search("zebra apple", 5, **scope)) == _ids(
                fresh.search("zebra apple", 5, **scope)
            )
        finally:
            fresh.close()
    finally:
        store.close()
        other.close()


def test_held_counts_serve_only_the_user_they_were_read_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice and bob share a prefix (forced); bob's rows hold no word, so the postings read in
    for alice hold only alice's rows: their counts are alice's, not bob's."""
    monkeypatch.setattr(_sqlite_words, "user_prefix", lambda user: "zzzzzz")
    store = _open(tmp_path / "collide.db", SearchStrategy.KEYWORD)
    try:
        store.add(
            [f"apple {i}" for i in range(10)],
            record_type="message",
            record_ids=[f"a{i}" for i in range(10)],
            user_ids="alice",
            thread_ids="alice-t0",
            roles="user",
        )
        store.add(
            ["😀 🎉", "👍"],
            record_type="message",
            record_ids=["b0", "b1"],
            user_ids="bob",
            thread_ids="bob-t0",
            roles="user",
        )
        for _ in range(3):
            assert store.search("apple", 5, user_id="alice", exact_user_match=True)
        assert store.search("apple", 5, user_id="bob", exact_user_match=True) == []
    finally:
        store.close()

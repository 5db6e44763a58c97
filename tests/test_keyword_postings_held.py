"""SQLite: a user's keyword postings held in process (#53, ``_sqlite_postings``).

From a user's second search in one state of the store, the user's postings come from
arrays held in process instead of the user-word table: the same scores, and never stale
(a write of this store or another connection's commit drops them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core.store.engines.sqlite import _sqlite_postings, _sqlite_words
from oracleagentmemory.core.store.engines.sqlite._sqlite import SQLiteDialect
from oracleagentmemory.core.store.engines.sqlite._sqlite_words import user_prefix

from .test_keyword_user_words import _fill, _open

QUERIES = [
    "river violin",
    "garden",
    "pottery museum sunset",
    "nothingmatches",
    "rivers river garden",
]


def _dialect(s: Any) -> SQLiteDialect:
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    return d


def _from_table(s: Any, terms: list[str], user: str) -> Any:
    """The scores read from the user-word table (nothing held)."""
    words = _dialect(s).words
    with pytest.MonkeyPatch.context() as m:
        m.setattr(type(words), "_held_postings", lambda self, *args: None)
        return words.scores(terms, user)


def test_held_postings_score_as_the_table(tmp_path: Path) -> None:
    s = _open(tmp_path / "k.db")
    _fill(s, 400)
    words = _dialect(s).words
    prefix = user_prefix("alice")
    for query in QUERIES:
        terms = query.split()
        first = words.scores(terms, "alice")
        assert first == _from_table(s, terms, "alice")
        assert words.scores(terms, "alice") == first  # the second search reads the user in
        assert words._held.get(words._exact_key, prefix) is not None
        assert words.scores(terms, "alice") == first
    assert any(words.scores(q.split(), "alice") for q in QUERIES)
    s.close()


def test_held_counts_are_the_users_document_counts_unless_a_prefix_is_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held postings whose rows are all the user's answer the document counts (no
    statement): the same scores as the table's. Where another user's identifier shares
    the prefix (forced here), its rows are held too: the counts come from SQL, and the
    scores are still the user's alone."""
    for shared in (False, True):
        if shared:
            monkeypatch.setattr(_sqlite_words, "user_prefix", lambda user: "zzzzzz")
        s = _open(tmp_path / f"k{shared}.db")
        _fill(s, 300)
        words = _dialect(s).words
        asked: list[int] = []
        count = type(words).doc_counts

        def counted(
            self: Any, terms: Any, *a: Any, asked: list[int] = asked, count: Any = count, **kw: Any
        ) -> Any:
            asked.append(len(terms))
            return count(self, terms, *a, **kw)

        monkeypatch.setattr(type(words), "doc_counts", counted)
        for query in QUERIES:
            terms = query.split()
            first = words.scores(terms, "alice")
            assert words.scores(terms, "alice") == first == _from_table(s, terms, "alice")
        held = words._held.get(words._exact_key, _sqlite_words.user_prefix("alice"))
        assert held is not None and held.only_user is not shared
        # Unshared: SQL counted only for the first search (before the postings were held).
        assert len(asked) == (2 * len(QUERIES) if shared else 1) + len(QUERIES)
        monkeypatch.setattr(type(words), "doc_counts", count)
        s.close()


def test_a_write_drops_what_is_held(tmp_path: Path) -> None:
    s = _open(tmp_path / "k.db")
    _fill(s, 200)
    other = _open(tmp_path / "k.db")
    for _ in range(3):
        s.search("zebrafinch", 5, user_id="alice", exact_user_match=True)
    words = _dialect(s).words
    assert words._held.get(words._exact_key, user_prefix("alice")) is not None
    assert s.search("zebrafinch", 5, user_id="alice", exact_user_match=True) == []
    # Another connection commits a matching row: the next search finds it.
    other.add(["a zebrafinch sang"], record_type="memory", record_ids=["z1"], user_ids="alice")
    got = s.search("zebrafinch", 5, user_id="alice", exact_user_match=True)
    assert [r.id for r, _ in got] == ["z1"]
    for _ in range(3):
        s.search("zebrafinch", 5, user_id="alice", exact_user_match=True)
    # This store's own write, too.
    s.add(["zebrafinch again"], record_type="memory", record_ids=["z2"], user_ids="alice")
    got = s.search("zebrafinch", 5, user_id="alice", exact_user_match=True)
    assert sorted(r.id for r, _ in got) == ["z1", "z2"]
    other.close()
    s.close()


def test_a_large_user_is_read_in_only_after_enough_searches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite_postings, "TOKENS_PER_SEARCH", 200)
    s = _open(tmp_path / "k.db")
    _fill(s, 400)
    words = _dialect(s).words
    _, tokens = words.user_totals("alice")
    due_at = 1 + tokens // 200
    assert due_at > 3
    prefix = user_prefix("alice")
    for i in range(1, due_at + 1):
        words.scores(["river"], "alice")
        held = words._held.get(words._exact_key, prefix)
        assert (held is not None) == (i >= due_at), i
    s.close()


def test_a_user_too_large_to_hold_is_never_read_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _open(tmp_path / "k.db")
    _fill(s, 400)
    words = _dialect(s).words
    _, tokens = words.user_totals("alice")
    monkeypatch.setattr(_sqlite_postings, "HELD_POSTINGS_MAX", tokens - 1)
    reads: list[str] = []
    make = _sqlite_postings.Postings.__init__

    def spy(self: Any, found: Any, skip: int) -> None:
        reads.append("read")
        make(self, found, skip)

    monkeypatch.setattr(_sqlite_postings.Postings, "__init__", spy)
    want = _from_table(s, ["river"], "alice")
    for _ in range(5):
        assert words.scores(["river"], "alice") == want
    assert reads == []
    # Within the limit, the user is read in once, however often it is searched.
    monkeypatch.setattr(_sqlite_postings, "HELD_POSTINGS_MAX", 10 * tokens)
    words._held.clear()
    for _ in range(5):
        assert words.scores(["river"], "alice") == want
    assert reads == ["read"]
    s.close()


@pytest.mark.parametrize("rows_per_record", [1, 3])
def test_held_bm25_sums_as_the_postings_read_out(rows_per_record: int) -> None:
    """``Postings.bm25`` (each row's place and each record's id kept between searches)
    answers as ``bm25_sum`` over the same stems' postings: records of one row each and
    records of several rows (chunks: their best row counts), ties included."""
    rng = np.random.default_rng(rows_per_record)
    bits = 24
    records = rng.choice(10_000, 300, replace=False)
    keys = sorted(
        (int(r) << bits) | c
        for r in records
        for c in range(int(rng.integers(1, rows_per_record + 1)))
    )
    stems = [f"s{i}" for i in range(12)]
    found = []
    for stem in stems:
        held = [k for k in keys if rng.random() < 0.3]
        by_counts: dict[tuple[int, int], list[int]] = {}
        for k in held:
            by_counts.setdefault((int(rng.integers(3, 6)), int(rng.integers(1, 3))), []).append(k)
        for (length, n), rows in by_counts.items():
            found.append((f"pfx{stem}.{length}.{n}", ",".join(map(str, rows))))
    postings = _sqlite_postings.Postings(found, 3)
    for _ in range(20):
        asked = list(rng.choice(stems, int(rng.integers(1, 6)), replace=False))
        weights = [float(w) for w in rng.choice([0.5, 1.0, 1.7], len(asked))]
        want = _sqlite_postings.bm25_sum([postings.of(s) for s in asked], weights, 4.2, bits)
        assert list(postings.bm25(asked, weights, 4.2, bits)) == list(want)

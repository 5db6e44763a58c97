"""SQLite: a user-scoped keyword query is answered from the user-word table (one token per
stem, user and counts), ranked with FTS5's own bm25() formula and the statistics of that
user's rows, so it returns exactly what FTS5's query returns over a copy of the store that
holds only that user's rows, down to the distances: through adds, deletes, updates, other
scopes, filters, odd text, an index made by an older version, and a store that lacks the
table."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION
from oracleagentmemory.core.store.engines.sqlite import _sqlite_words
from oracleagentmemory.core.store.engines.sqlite._sqlite import SQLiteDialect
from oracleagentmemory.core.store.engines.sqlite._sqlite_words import (
    CHUNK_BITS,
    MAX_RECORD_ID,
    Stemmer,
    row_key,
    user_prefix,
    user_words,
    varints,
)

WORDS = [
    *[
        "running",
        "runs",
        "ran",
        "runner",
        "apple",
        "apples",
        "river",
        "stone",
        "cloud",
        "garden",
        "violin",
        "harbor",
    ],
    *[
        "maple",
        "copper",
        "généralisation",
        "café",
        "naïve",
        "Zürich",
        "straße",
        "ÉCOLE",
        "yes",
        "yesterday",
    ],
    *[
        "yellow",
        "ines",
        "in",
        "ine",
        "foo_bar",
        "x_y_z",
        "2024",
        "3rd",
        "emoji🙂",
        "l'été",
        "co-op",
        "e-mail",
        "O'Brien",
    ],
]
QUERIES = [
    "running",
    "run apple",
    "what did they say about the river and the stone?",
    "cafe naive",
    "zurich strasse",
    "ecole",
    "yes yesterday yellow",
    "ines",
    "in",
    "2024 3rd",
    "ete",
    "coop e mail",
    "obrien o brien",
    "généralisation generalization",
    "apple apples apple",
    '"quoted" a* NEAR(x y) col:x -x ^x',
    "nothing-matches-this",
]
PHRASE_QUERIES = ["foo_bar", "x_y_z cloud"]  # a term of several tokens: FTS5 answers
USERS = ["alice", "bob", "carol", None]


def _open(path: Path, **kw: Any) -> SQLiteMemoryStore:
    kw.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
    return SQLiteMemoryStore(None, str(path), search_strategy=SearchStrategy.KEYWORD, **kw)


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = list(rng.choice(WORDS, int(rng.integers(1, 14))))
        sep = rng.choice([" ", "  ", ", ", "\n", " - "])
        out.append(str(sep).join(words) + str(rng.choice(["", ".", "!", "?"])))
    return out


def _fill(s: SQLiteMemoryStore, n: int, seed: int = 1, start: int = 0) -> None:
    s.add(
        _texts(n, seed),
        record_type="memory",
        record_ids=[f"m{start + i}" for i in range(n)],
        user_ids=[USERS[i % len(USERS)] for i in range(n)],
        agent_ids=[f"a{i % 2}" for i in range(n)],
        thread_ids=[f"{USERS[i % len(USERS)]}-t{i % 5}" for i in range(n)],  # a user's own
        metadata=[{"keep": i % 3 == 0} for i in range(n)],
    )


_REFERENCES: dict[tuple[int, str | None, int], SQLiteMemoryStore] = {}
_REFERENCE_DIRS: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _references_removed() -> Iterator[None]:
    """The reference copies are closed and their files removed after this module."""
    yield
    for ref in _REFERENCES.values():
        ref.close()
    _REFERENCES.clear()
    for made in _REFERENCE_DIRS:
        shutil.rmtree(made, ignore_errors=True)
    _REFERENCE_DIRS.clear()


def _reference(s: SQLiteMemoryStore, user: str | None) -> SQLiteMemoryStore:
    """A copy of the store whose main full-text table holds ``user``'s rows alone (made
    again after each write to ``s``)."""
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    key = (id(s), user, d.conn.total_changes)
    if key not in _REFERENCES:
        made = Path(tempfile.mkdtemp(prefix="oam-kwref-"))
        _REFERENCE_DIRS.append(made)
        path = made / "ref.db"
        with sqlite3.connect(path) as copy:
            d.conn.backup(copy)
            t = d.tables
            copy.execute(
                f"DELETE FROM {t.fts} WHERE rowid IN (SELECT c.cid FROM {t.chunks} c"
                f" JOIN {t.records} r ON r.rid = c.rid WHERE r.user_id IS NOT ?)",
                (user,),
            )
        _REFERENCES[key] = _open(path)
    return _REFERENCES[key]


def _engine(s: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch, **search: Any) -> Any:
    """The same search answered by FTS5's own bm25() over the main table of a copy of the
    store that holds only the searched user's rows."""
    ref = _reference(s, search["user_id"])
    with monkeypatch.context() as m:
        m.setattr(SQLiteDialect, "keyword_scores", lambda self, terms, exact, local=None: None)
        return ref.search(**search)


def _same(s: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch, **search: Any) -> int:
    answered: list[bool] = []
    scores = _sqlite_words.UserWords.scores

    def spy(self: Any, terms: Any, user: Any) -> Any:
        out = scores(self, terms, user)
        answered.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(_sqlite_words.UserWords, "scores", spy)
        got = s.search(**search)
    if search["query"] not in PHRASE_QUERIES:
        assert answered and all(answered), "the user-word table answered"
    want = _engine(s, monkeypatch, **search)
    assert [r.id for r, _ in got] == [r.id for r, _ in want], search
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15), search
    return len(got)


def _all_user_searches(**extra: Any) -> Iterator[dict[str, Any]]:
    for query in QUERIES + PHRASE_QUERIES:
        for user in USERS:
            yield {
                "query": query,
                "k": 25,
                "user_id": user,
                "exact_user_match": True,
                **extra,
            }


def _uses_words(s: SQLiteMemoryStore, query: str, user: str | None) -> bool:
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    from oracleagentmemory.core.store.search._keyword import query_terms

    return d.words.scores(query_terms(query), user) is not None


def test_user_scoped_results_equal_the_engines_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _open(tmp_path / "k.db")
    _fill(s, 400)
    found = 0
    for search in _all_user_searches():
        found += _same(s, monkeypatch, **search)
    assert found > 500  # the queries do match
    assert _uses_words(s, "running apple", "alice")
    assert not _uses_words(s, "foo_bar", "alice")
    s.close()


def test_other_scopes_filters_and_preferences_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _open(tmp_path / "k.db")
    _fill(s, 400)
    for extra in (
        {"agent_id": "a1", "exact_agent_match": True},
        {"agent_id": "a0"},  # preferred, not required
        {"thread_id": "alice-t3", "exact_thread_match": True},
        {"metadata_filter": {"keep": True}},
        {"k": 3},
    ):
        for search in _all_user_searches(**extra):
            _same(s, monkeypatch, **search)
    s.close()


def test_deletes_and_updates_are_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _open(tmp_path / "k.db")
    _fill(s, 300)
    for i in range(0, 300, 4):
        s.delete("memory", f"m{i}")
    for i in range(1, 300, 7):
        s.update("memory", f"m{i}", text="yellow harbor harbor ines " * (i % 3 + 1))
    _fill(s, 50, seed=9, start=1000)
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    gone = s.search("yellow harbor", 300, user_id="bob", exact_user_match=True)
    assert not {r.id for r, _ in gone} & {f"m{i}" for i in range(0, 300, 4)}
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    words = d.words.table
    fts = d.tables.fts
    assert d.execute(f"SELECT count(*) FROM {words}") == d.execute(f"SELECT count(*) FROM {fts}")
    s.close()


def test_a_shared_user_prefix_only_shares_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite_words, "user_prefix", lambda user: "same00")
    s = _open(tmp_path / "k.db")
    _fill(s, 300)
    for search in _all_user_searches():
        got = s.search(**search)
        assert all(r.user_id == search["user_id"] for r, _ in got)
        _same(s, monkeypatch, **search)
    s.close()


def test_remembered_document_counts_on_a_large_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite_words, "DF_CACHE_MIN_ROWS", 0)
    s = _open(tmp_path / "k.db")
    _fill(s, 300)
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    assert d.words._df  # remembered
    # Far more rows than the drift allows: every count is taken again.
    _fill(s, 300, seed=5, start=5000)
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    # Within the drift, a remembered count stands (a bounded approximation).
    s.search("violin", 5, user_id="alice", exact_user_match=True)
    before = dict(d.words._df)
    s.add(["violin"], record_type="memory", record_ids=["one"], user_ids=["alice"])
    s.search("violin", 5, user_id="alice", exact_user_match=True)
    key = ("alice", "violin")
    assert d.words._df[key][0] == before[key][0]
    # Another store on the same file, in this process, uses what this one counted.
    other = _open(tmp_path / "k.db")
    other_dialect = other._dialect
    assert isinstance(other_dialect, SQLiteDialect)
    assert other_dialect.words._df is d.words._df
    other.close()
    s.close()


def test_manual_sync_and_rebuild(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracleagentmemory.core.dbsearch import SearchIndexSyncMode

    s = _open(tmp_path / "k.db", search_index_sync=SearchIndexSyncMode.MANUAL)
    _fill(s, 120)
    assert s.search("river", 5, user_id="alice", exact_user_match=True) == []
    s.sync_search_index()
    assert s.search("river", 5, user_id="alice", exact_user_match=True)
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    s.close()


def _version_4_store(path: Path) -> None:
    """A store as the previous version wrote it: no user-word table."""
    s = _open(path)
    _fill(s, 200)
    s.close()
    con = sqlite3.connect(path)
    con.execute("DROP TABLE oam_words_fts")
    con.execute("UPDATE oam_meta SET value = '4' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def _schema_version(path: Path) -> str:
    con = sqlite3.connect(path)
    (version,) = con.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'").fetchone()
    con.close()
    return str(version)


def test_an_older_store_gains_the_table_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.db"
    _version_4_store(path)
    s = _open(path)
    assert _uses_words(s, "river", "alice")
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    s.close()
    # Version 6 keeps SDKs that would leave the table stale from opening the store.
    assert _schema_version(path) == str(SCHEMA_VERSION)


def _version_5_store(path: Path) -> None:
    """A store as version 5 wrote it: the user-word table keyed by chunk id."""
    s = _open(path)
    _fill(s, 200)
    s.close()
    con = sqlite3.connect(path)
    rows = con.execute(
        "SELECT c.cid, w.words FROM oam_words_fts w JOIN oam_chunks c"
        f" ON (c.rid << {CHUNK_BITS}) | c.chunk_index = w.rowid"
    ).fetchall()
    con.execute("DELETE FROM oam_words_fts")
    con.executemany("INSERT INTO oam_words_fts (rowid, words) VALUES (?, ?)", rows)
    con.execute("UPDATE oam_meta SET value = '5' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def _words_keys(path: Path) -> tuple[set[int], set[int], set[int]]:
    """The user-word table's rowids, the chunk ids, and the chunks' row keys."""
    con = sqlite3.connect(path)
    keys = {r for (r,) in con.execute("SELECT rowid FROM oam_words_fts")}
    cids = {c for (c,) in con.execute("SELECT cid FROM oam_chunks")}
    rows = con.execute("SELECT rid, chunk_index FROM oam_chunks").fetchall()
    con.close()
    return keys, cids, {row_key(rid, i) for rid, i in rows}


def test_a_version_5_table_is_rebuilt_keyed_by_record_on_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.db"
    _version_5_store(path)
    keys, cids, _ = _words_keys(path)
    assert keys == cids
    s = _open(path)
    assert _uses_words(s, "river", "alice")
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    s.close()
    keys, cids, row_keys = _words_keys(path)
    assert keys == row_keys and keys != cids
    assert _schema_version(path) == str(SCHEMA_VERSION)


def test_a_version_5_table_opened_without_upgrade_is_kept_as_version_5_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.db"
    _version_5_store(path)
    s = _open(path, schema_policy=SchemaPolicy.NO_CHECK)
    assert not _uses_words(s, "river", "alice")  # never read in version 5's layout
    _fill(s, 40, seed=3, start=500)
    s.update("memory", "m1", text="yellow harbor ines")
    s.delete("memory", "m2")
    hits = s.search("yellow harbor", 100, user_id="bob", exact_user_match=True)
    assert "m1" in {r.id for r, _ in hits} and all(r.user_id == "bob" for r, _ in hits)
    s.close()
    keys, cids, _ = _words_keys(path)
    assert keys == cids  # still keyed by chunk id, and complete
    s = _open(path)  # the upgrade rebuilds it
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    s.close()


def test_records_of_many_chunks_rank_by_their_best_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _open(tmp_path / "k.db")
    rng = np.random.default_rng(7)
    long_texts = [" ".join(rng.choice(WORDS, int(rng.integers(400, 1500)))) for _ in range(40)]
    s.add(
        long_texts + _texts(60, 8),
        record_type="memory",
        record_ids=[f"m{i}" for i in range(100)],
        user_ids=[USERS[i % 2] for i in range(100)],
    )
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    (most,) = d.execute("SELECT max(chunk_index) FROM oam_chunks")[0]
    assert most >= 2  # several chunks per long record
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    for k in (1, 3, 100):
        _same(s, monkeypatch, query="river stone", k=k, user_id="alice", exact_user_match=True)
    s.delete("memory", "m0")
    s.update("memory", "m2", text="violin " * 2000)
    for search in _all_user_searches():
        _same(s, monkeypatch, **search)
    s.close()


def test_row_keys() -> None:
    assert row_key(1, 0) == 1 << CHUNK_BITS
    assert row_key(5, 3) >> CHUNK_BITS == 5 and row_key(5, 3) & ((1 << CHUNK_BITS) - 1) == 3
    assert row_key(MAX_RECORD_ID, (1 << CHUNK_BITS) - 1) == 2**63 - 1
    for rid, index in ((MAX_RECORD_ID + 1, 0), (1, 1 << CHUNK_BITS), (1, -1)):
        with pytest.raises(ValueError, match="at most"):
            row_key(rid, index)


def test_a_store_without_the_table_asks_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.db"
    _version_4_store(path)
    s = _open(path, schema_policy=SchemaPolicy.NO_CHECK)  # may not create anything
    assert not _uses_words(s, "river", "alice")
    hits = s.search("river stone", 10, user_id="alice", exact_user_match=True)
    assert hits and all(r.user_id == "alice" for r, _ in hits)
    s.add(["river"], record_type="memory", record_ids=["new"], user_ids=["alice"])
    hits = s.search("river", 100, user_id="alice", exact_user_match=True)
    assert "new" in {r.id for r, _ in hits}
    s.close()


def test_stems_are_the_engines_and_long_pieces_are_not_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    con = sqlite3.connect(":memory:", isolation_level=None)
    stemmer = Stemmer(con, "t")
    con.execute(
        "CREATE VIRTUAL TABLE ref USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')"
    )
    con.execute("CREATE VIRTUAL TABLE ref_v USING fts5vocab(ref, instance)")
    long_piece = "Generalizations" * 10
    texts = [*_texts(200, 4), long_piece + " running", "", "   ", "🙂 ... --", "a\u2028b\x1fc"]
    con.executemany("INSERT INTO ref (rowid, x) VALUES (?, ?)", enumerate(texts))
    want: list[list[str]] = [[] for _ in texts]
    for doc, term in con.execute("SELECT doc, term FROM ref_v ORDER BY doc, offset"):
        want[doc].append(term)
    assert stemmer.stems(texts) == want
    assert stemmer.stems(texts) == want  # from the cache
    assert long_piece not in stemmer._cache and "running" in stemmer._cache
    # A cache too small for one call's pieces starts again and loses none of them.
    monkeypatch.setattr(_sqlite_words, "STEM_CACHE_MAX", 40)
    small = Stemmer(con, "s")
    assert small.stems(texts[:3]) == want[:3]
    assert small.stems(texts) == want
    assert small.stems(texts[:3]) == want[:3]


def test_tokens_and_totals() -> None:
    p = user_prefix("alice")
    assert len(p) == 6 and p == user_prefix("alice") != user_prefix("bob")
    assert user_prefix(None) != user_prefix("")
    assert user_words(p, ["run", "appl", "run"]) == f"{p}run.6.2 {p}appl.6.1"
    assert varints(bytes([0x05, 0x81, 0x00, 0xFF, 0x7F])) == [5, 128, 16383]
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(a, b)")
    rng = np.random.default_rng(0)
    rows = [(" ".join(["w"] * int(rng.integers(1, 400))), "x y z") for _ in range(300)]
    con.executemany("INSERT INTO f (a, b) VALUES (?, ?)", rows)
    con.commit()  # FTS5 writes its totals when the transaction ends
    (blob,) = con.execute("SELECT block FROM f_data WHERE id = 1").fetchone()
    assert varints(blob) == [300, sum(len(a.split()) for a, _ in rows), 900]


def test_a_rolled_back_first_write_leaves_no_missing_scratch_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stemmer's scratch tables live in the temp schema; made inside a transaction that
    # rolls back, they vanish with it, and the next write makes them again.
    s = _open(tmp_path / "k.db")
    add = SQLiteDialect.keyword_index_add

    def fail_after(self: SQLiteDialect, rows: Any) -> None:
        add(self, rows)
        raise RuntimeError("fail inside the write")

    with monkeypatch.context() as m:
        m.setattr(SQLiteDialect, "keyword_index_add", fail_after)
        with pytest.raises(RuntimeError):
            s.add(["river stone"], record_type="memory", record_ids=["x"], user_ids=["alice"])
    s.add(["river stone"], record_type="memory", record_ids=["y"], user_ids=["alice"])
    hits = s.search("river", 5, user_id="alice", exact_user_match=True)
    assert [r.id for r, _ in hits] == ["y"]
    assert _uses_words(s, "river", "alice")
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    d.conn.execute("DROP TABLE temp.oam_words_inst")
    d.conn.execute("BEGIN")
    assert _uses_words(s, "stone", "alice")  # the vocabulary table made inside this one
    d.conn.execute("ROLLBACK")
    assert _uses_words(s, "stone", "alice")  # ... and again after it rolled back
    s.close()


def test_ties_and_filters_widen_the_candidates_until_the_answer_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 500 equal-scoring memories: the answer is decided by record order alone, whatever
    # the candidate rounds saw; a filter keeping every 37th makes the rounds widen.
    s = _open(tmp_path / "k.db")
    n = 500
    s.add(
        ["apple pie"] * n,
        record_type="memory",
        record_ids=[f"m{i:03d}" for i in range(n)],
        user_ids=["alice"] * n,
        metadata=[{"keep": i % 37 == 5} for i in range(n)],
    )
    for k in (1, 5, 13):
        got = s.search("apple", k, user_id="alice", exact_user_match=True)
        assert [r.id for r, _ in got] == [f"m{i:03d}" for i in range(k)]
        kept = s.search(
            "apple", k, user_id="alice", exact_user_match=True, metadata_filter={"keep": True}
        )
        assert [r.id for r, _ in kept] == [f"m{i:03d}" for i in range(5, n, 37)][:k]
        _same(s, monkeypatch, query="apple", k=k, user_id="alice", exact_user_match=True,
              metadata_filter={"keep": True})  # fmt: skip
    s.close()

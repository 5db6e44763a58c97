"""PostgreSQL's keyword rows: FTS5's stems as a tsvector, scope lexemes, BM25's weights.

Pure functions (no server): the literals PostgreSQL parses, and the stems SQLite's own
tokenizer gives, so both engines count the same words."""

from __future__ import annotations

from oracleagentmemory.core.store.engines.postgres import _postgres_words as words
from oracleagentmemory.core.store.engines.sqlite._sqlite_words import SCOPE_TOKENS, idf


def test_a_chunk_row_holds_fts5_stems_with_their_counts_and_its_scope() -> None:
    w = words.Words("t")
    tsv, length = w.row("Running runs, the runner RAN!", ("u1", None, "th"))
    assert tsv is not None
    stems = w.stems(["Running runs, the runner RAN!"])[0]
    assert stems == ["run", "run", "the", "runner", "ran"]  # porter, as FTS5 stems
    assert length == len(stems) + SCOPE_TOKENS
    assert "'run':1,2" in tsv and "'runner':4" in tsv
    scope = words.scope_lexemes("u1", None, "th")
    assert len(scope) == 3 and all(lex.startswith("@") for lex in scope)
    assert all(f"'{lex}'" in tsv for lex in scope)
    assert w.row("", ("u1", None, None)) == (None, None)


def test_literals_quote_what_postgres_would_read_as_syntax() -> None:
    assert words.tsvector_literal(["it's", "a\\b"]) == "'it''s':1 'a\\\\b':2"
    assert words.tsquery_literal(["x", "y"]) == "'x' | 'y'"
    assert words.tsquery_literal(["x"], ["@u1"]) == "('x') & '@u1'"


def test_positions_are_capped_as_a_tsvector_caps_them() -> None:
    tsv = words.tsvector_literal(["w"] * 300)
    assert tsv.count(",") == words.MAX_POSITIONS - 1


def test_document_counts_are_remembered_only_on_large_stores() -> None:
    w = words.Words("t")
    calls: list[list[str]] = []

    def count(stems: list[str]) -> list[int]:
        calls.append(stems)
        return [5 for _ in stems]

    small = w.weights(["a", "b"], 100, 1000, count)
    assert small == [idf(100, 5)] * 2
    w.weights(["a", "b"], 100, 1000, count)
    assert len(calls) == 2  # counted afresh below DF_CACHE_MIN_ROWS
    rows = words.DF_CACHE_MIN_ROWS
    w.weights(["a"], rows, 10 * rows, count)
    w.weights(["a"], rows + 1, 10 * rows, count)  # within the drift: remembered
    assert len(calls) == 3
    w.weights(["a"], 2 * rows, 20 * rows, count)  # the store doubled: counted again
    assert len(calls) == 4

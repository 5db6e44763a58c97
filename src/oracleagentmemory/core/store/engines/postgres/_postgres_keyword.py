"""PostgreSQL: a keyword query's scores, with the statistics of what the caller may see.

A user-scoped ranking (the ``exact`` scope names a user) counts its statistics over that
user's keyword rows alone: the row count, the average row length and each stem's document
count. A cached user's rows are scored in process with their own statistics
(``_user_words``); otherwise one statement counts them over the user's rows (found through
the user's scope lexeme in the GIN index), under row security too, since they are the
caller's own. Nothing another user writes, deletes or may see moves that ranking. An
unscoped ranking uses the store-wide totals (remembered document counts, ``_postgres_words``),
and under row security (``core.deepsec``) the statistics of the rows the caller may see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from oracleagentmemory.core.store._dialect import LocalScores, Tables
from oracleagentmemory.core.store.engines.postgres import _postgres_words as words
from oracleagentmemory.core.store.search._keyword import exact_scope_tokens, idf
from oracleagentmemory.core.store.search._search_sql import exact_sql, same_as


class PostgresDialect(Protocol):
    """What of the PostgreSQL dialect a keyword query uses (``_postgres`` imports this)."""

    tables: Tables
    words: words.Words

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


def keyword_scores(
    d: PostgresDialect,
    terms: list[str],
    exact: Mapping[str, str | None],
    local: LocalScores | None = None,
) -> list[tuple[int, float]] | None:
    """Every record of the exact scope matching ``terms``, ``(rid, score)`` best first:
    FTS5's BM25 (see ``_postgres_words``) with the statistics of what the caller may see."""
    stems = d.words.query_stems(terms)
    if not stems:
        return []
    # A user-scoped ranking uses the statistics of that user's rows alone (row count,
    # average length, each stem's document count): nothing another user writes moves
    # it. A cached user's rows are scored in process with their own statistics;
    # otherwise one statement counts them over the user's rows (under row security
    # too: they are the caller's own).
    if "user" in exact:
        if local is not None:
            return local(stems)
        return _scored(d, stems, exact, _statistics(d, stems, (exact["user"],)))
    # No snapshot around the statements: a write landing between them moves the
    # statistics by its few rows, as it would between two searches.
    t = d.tables
    function = t.kw_documents

    def counts(of: list[str]) -> tuple[list[str], list[str]]:
        """Select-list items counting the keyword rows of each stem, and their params."""
        item = f"(SELECT COUNT(*) FROM {t.kw} WHERE tsv @@ ?::tsquery)"
        return [item] * len(of), [words.tsquery_literal([s]) for s in of]

    # Under row security (core.deepsec) an unscoped ranking uses the statistics of the
    # rows the caller may see (its own policies apply to the counts), never the
    # store-wide totals; whether the policies' function exists is asked with the totals,
    # in the same round trip. So are the document counts this search will likely need,
    # unless the last search found that function (it may be gone since).
    guess = [] if d.words.secured else d.words.uncounted(stems)
    items, queries = counts(guess)
    totals = d.execute(
        f"SELECT COALESCE(SUM(rows), 0), COALESCE(SUM(tokens), 0),"
        f" to_regprocedure(?) IS NOT NULL{''.join(f', {i}' for i in items)}"
        f" FROM {t.kw_totals}",
        [f"{function}(text[])", *queries],
    )[0]
    rows, tokens, secured = int(totals[0]), int(totals[1]), bool(totals[2])
    d.words.secured = secured
    if secured:
        return _scored(d, stems, exact, _statistics(d, stems, ()))
    counted = dict(zip(guess, map(int, totals[3:]), strict=True))
    if rows <= 0:
        return []

    def count(missing: list[str]) -> list[int]:
        rest = [s for s in missing if s not in counted]
        if rest:
            items, queries = counts(rest)
            got = d.execute(f"SELECT {', '.join(items)}", queries)[0]
            counted.update(zip(rest, map(int, got), strict=True))
        return [counted[s] for s in missing]

    weights = d.words.weights(stems, rows, tokens, count)
    return _scored(d, stems, exact, (weights, tokens / rows))


def _statistics(
    d: PostgresDialect, stems: list[str], user: tuple[str | None, ...]
) -> tuple[list[float], float] | None:
    """(each stem's idf, average row length) over the keyword rows of ``user`` (one
    value), or of every row the caller may see (none), counted in one statement; None
    where there are none."""
    where, params = "TRUE", list[Any]()
    for value in user:
        cond, params = same_as("user_id", value)
        lexeme = words.tsquery_literal([f"@{exact_scope_tokens({'user': value})[0]}"])
        where, params = f"tsv @@ ?::tsquery AND {cond}", [lexeme, *params]
    sql, stem_params = words.statistics_sql(d.tables.kw, stems, where)
    got = d.execute(sql, [*stem_params, *params])[0]
    rows, tokens = int(got[0]), int(got[1])
    if rows <= 0:
        return None
    return [idf(rows, int(df)) for df in got[2:]], tokens / rows


def _scored(
    d: PostgresDialect,
    stems: list[str],
    exact: Mapping[str, str | None],
    statistics: tuple[list[float], float] | None,
) -> list[tuple[int, float]]:
    """The records of the exact scope matching ``stems``, scored in SQL with these
    statistics (each stem's idf, the average row length)."""
    if statistics is None:
        return []
    weights, average = statistics
    t = d.tables
    scope = [f"@{token}" for token in exact_scope_tokens(exact)]
    records: str | None = t.records
    if set(exact) == {"user"}:  # checked on the chunk's own copy: no record read
        cond, params = same_as("c.user_id", exact["user"])
        conds, records = [cond], None
    else:
        conds, params = exact_sql(exact)
    found = d.execute(
        words.score_sql(t.kw, records, " AND ".join(["1 = 1", *conds])),
        [average, stems, weights, words.tsquery_literal(stems, scope), *params],
    )
    return [(int(rid), float(score)) for rid, score in found]

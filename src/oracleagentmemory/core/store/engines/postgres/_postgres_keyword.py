"""PostgreSQL: a keyword query's scores, with the statistics of what the caller may see.

A user-scoped ranking (the ``exact`` scope names a user) counts its statistics over that
user's keyword rows alone: the row count, the average row length and each stem's document
count. A cached user's rows are scored in process with their own statistics
(``_user_words``); otherwise the scoring statement counts them itself (one round trip,
not two: issue #54): the rows and their lengths in the index on (user, length), each stem's
document count over the user's rows holding a stem (found through the stems and the user's
scope lexeme in the GIN index), under row security too, since they are the caller's own.
Nothing another user writes, deletes or may see moves that ranking. An unscoped ranking uses
the store-wide totals (remembered document counts, ``_postgres_words``), and under row security
(``core.deepsec``) the statistics of the rows the caller may see. Below them, the keyword
rows writes keep (upserts, removals, rebuild) and the totals' moves for schemas older than
11.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from oracleagentmemory.core.store._dialect import KeywordRow, LocalScores, Tables, chunked
from oracleagentmemory.core.store.engines.postgres import _postgres_words as words
from oracleagentmemory.core.store.search._keyword import exact_scope_tokens, idf
from oracleagentmemory.core.store.search._search_sql import exact_sql, same_as


class PostgresDialect(Protocol):
    """What of the PostgreSQL dialect a keyword query uses (``_postgres`` imports this)."""

    tables: Tables
    words: words.Words
    layout: str | None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def execute_nowait(self, sql: str, params: Sequence[Any] = ()) -> None: ...
    def joined(self, left: str, right: str) -> str: ...
    def keyword_index_add(self, rows: Sequence[KeywordRow]) -> None: ...
    def user_shard(self, alias: str, user: str | None) -> tuple[str, list[Any]]: ...
    @property
    def _hand_totals(self) -> bool: ...


def keyword_scores(
    d: PostgresDialect,
    terms: list[str],
    exact: Mapping[str, str | None],
    local: LocalScores | None = None,
) -> Sequence[tuple[int, float]] | None:
    """Every record of the exact scope matching ``terms``, ``(rid, score)`` best first:
    FTS5's BM25 (see ``_postgres_words``) with the statistics of what the caller may see."""
    stems = d.words.query_stems(terms)
    if not stems:
        return []
    # A user-scoped ranking uses the statistics of that user's rows alone (row count,
    # average length, each stem's document count): nothing another user writes moves
    # it. A cached user's rows are scored in process with their own statistics;
    # otherwise the scoring statement counts them over the user's rows (under row
    # security too: they are the caller's own).
    if "user" in exact:
        scored = local(stems) if local is not None else None
        if scored is not None:
            return scored
        if d.layout is not None:  # distributed: the statistics, then the scores, each routed
            return _scored(d, stems, exact, _statistics(d, stems, (exact["user"],)))
        return _scored_for_user(d, stems, exact)
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
    sums, source = "COALESCE(SUM(rows), 0), COALESCE(SUM(tokens), 0)", f" FROM {t.kw_totals}"
    if d.layout is not None:  # distributed: each sum a subquery planned on its own
        sums = ", ".join(f"(SELECT COALESCE(SUM({c}), 0){source})" for c in ("rows", "tokens"))
        source = ""
    totals = d.execute(
        f"SELECT {sums}, to_regprocedure(?) IS NOT NULL{''.join(f', {i}' for i in items)}{source}",
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


def _user_rows(d: PostgresDialect, user: str | None) -> tuple[str, list[Any], list[str]]:
    """The condition (and its parameters) on keyword rows that finds ``user``'s: their own
    user column (and, distributed, their shard), read in the index on (user, length); and
    the user's scope lexeme, with which the GIN index finds those of them holding a stem."""
    cond, params = same_as("user_id", user)
    shard, shard_params = d.user_shard(d.tables.kw, user)
    lexeme = f"@{exact_scope_tokens({'user': user})[0]}"
    return f"{cond}{shard}", [*params, *shard_params], [lexeme]


def _statistics(
    d: PostgresDialect, stems: list[str], user: tuple[str | None, ...]
) -> tuple[list[float], float] | None:
    """(each stem's idf, average row length) over the keyword rows of ``user`` (one
    value), or of every row the caller may see (none), counted in one statement; None
    where there are none."""
    where, params, scope = _user_rows(d, user[0]) if user else ("TRUE", list[Any](), [])
    sql, stem_params = words.statistics_sql(d.tables.kw, stems, where, scope)
    got = d.execute(sql, [*params, *stem_params, *params])[0]
    rows, tokens = int(got[0]), int(got[1])
    if rows <= 0:
        return None
    return [idf(rows, int(df)) for df in got[2:]], tokens / rows


def _scope_of(
    d: PostgresDialect, stems: list[str], exact: Mapping[str, str | None]
) -> tuple[str | None, str, list[Any], str]:
    """How a scored statement keeps to the exact scope: the records to join (None: a
    user-only scope is checked on the chunk's own copy), the conditions and their
    parameters, and the ``tsquery`` (the stems and the scope's lexemes)."""
    scope = [f"@{token}" for token in exact_scope_tokens(exact)]
    records: str | None = d.tables.records
    if set(exact) == {"user"}:
        cond, params = same_as("c.user_id", exact["user"])
        conds, records = [cond], None
    else:
        conds, params = exact_sql(exact)
    if "user" in exact:  # a distributed layout: the user's shard alone
        shard, shard_params = d.user_shard("c", exact["user"])
        conds, params = [*conds, f"TRUE{shard}"], [*params, *shard_params]
    return records, " AND ".join(["1 = 1", *conds]), params, words.tsquery_literal(stems, scope)


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
    records, where, params, query = _scope_of(d, stems, exact)
    same_shard = d.joined("r", "c")
    head = [weights, stems, average, stems] if same_shard else [average, stems, weights]
    found = d.execute(
        words.score_sql(d.tables.kw, records, where, same_shard=same_shard),
        [*head, query, *params],
    )
    return [(int(rid), float(score)) for rid, score in found]


def _scored_for_user(
    d: PostgresDialect, stems: list[str], exact: Mapping[str, str | None]
) -> list[tuple[int, float]]:
    """:func:`_scored` with the statistics of the exact user's keyword rows, counted in
    the same statement (a user's first search: one round trip, not two)."""
    records, where, params, query = _scope_of(d, stems, exact)
    rows, rows_params, scope = _user_rows(d, exact["user"])
    sql, matched = words.scored_with_statistics_sql(d.tables.kw, records, stems, rows, scope, where)
    each = [words.tsquery_literal([s]) for s in stems]
    found = d.execute(sql, [*matched, *rows_params, *rows_params, *each, stems, query, *params])
    return [(int(rid), float(score)) for rid, score in found]


# ---------------------------------------------------------------- the rows writes keep


def add(d: PostgresDialect, rows: Sequence[KeywordRow]) -> None:
    """Inside a write: the keyword rows of ``rows`` (chunk id, ..., text, scope), upserted."""
    values = [(row[0], *d.words.row(row[3], (row[4], row[5], row[6]))) for row in rows if row[3]]
    if not values:
        return
    marks = ",".join(["(?::bigint, ?::tsvector, ?::int)"] * len(values))
    d.execute(
        f"INSERT INTO {d.tables.kw} (cid, rid, user_id, tsv, tsv_len) SELECT v.cid,"
        f" c.rid, c.user_id, v.tsv, v.len FROM (VALUES {marks}) v (cid, tsv, len)"
        f" JOIN {d.tables.chunks} c ON c.cid = v.cid ON CONFLICT (cid) DO UPDATE"
        " SET tsv = excluded.tsv, tsv_len = excluded.tsv_len",
        [x for row in values for x in row],
    )
    if d._hand_totals:
        move_totals(d, len(values), sum(int(v[2] or 0) for v in values))


def _add_to_totals(d: PostgresDialect, source: str, params: Sequence[Any]) -> None:
    """Inside a write: add ``source`` (a VALUES or SELECT giving this backend's shard,
    rows and tokens) to the keyword index's totals."""
    totals = d.tables.kw_totals
    d.execute_nowait(
        f"INSERT INTO {totals} (shard, rows, tokens) {source} ON CONFLICT (shard) DO UPDATE"
        f" SET rows = {totals}.rows + excluded.rows,"
        f" tokens = {totals}.tokens + excluded.tokens",
        params,
    )


def move_totals(d: PostgresDialect, rows: int, tokens: int) -> None:
    """Inside a write: the keyword index gained ``rows`` rows of ``tokens`` tokens."""
    if rows or tokens:
        _add_to_totals(d, f"VALUES (pg_backend_pid() % {words.TOTAL_SHARDS}, ?, ?)", [rows, tokens])


def remove(d: PostgresDialect, chunk_ids: Sequence[int]) -> None:
    """The rows themselves leave with the chunk rows the store deletes; the totals move
    (by the triggers of version 11, by hand before)."""
    if chunk_ids and d._hand_totals:
        _add_to_totals(
            d,
            f"SELECT pg_backend_pid() % {words.TOTAL_SHARDS}, -COUNT(*),"
            f" -COALESCE(SUM(tsv_len), 0) FROM {d.tables.kw} WHERE cid = ANY(?)",
            [list(chunk_ids)],
        )


def rebuild(d: PostgresDialect) -> None:
    """Every keyword row made again from the chunks."""
    t = d.tables
    d.execute(f"DELETE FROM {t.kw}")
    d.execute(f"DELETE FROM {t.kw_totals}")
    rows = d.execute(
        f"SELECT c.cid, c.rid, c.chunk_index, c.chunk_text, r.user_id, r.agent_id,"
        f" r.thread_id FROM {t.chunks} c JOIN {t.records} r ON r.rid = c.rid{d.joined('r', 'c')}"
        " WHERE c.chunk_text IS NOT NULL AND c.chunk_text != '' ORDER BY c.cid"
    )
    for part in chunked(rows, 2000):
        d.keyword_index_add([tuple(row) for row in part])

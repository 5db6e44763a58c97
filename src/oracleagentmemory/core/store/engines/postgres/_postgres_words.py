"""PostgreSQL: keyword search ranked exactly as the embedded store ranks it (FTS5's BM25).

A store moved from SQLite to PostgreSQL must answer the same. So PostgreSQL's own text
search (its stemmer, stop words and ``ts_rank``) is not used for ranking. Each chunk's text
is tokenized by the SQLite store's FTS5 tokenizer (``porter unicode61 remove_diacritics
2``, run in an in-memory SQLite database, see ``_sqlite_words.Stemmer``). The stems are
stored as a ``tsvector`` literal: a stem's positions count its occurrences, and a GIN index
finds the chunks holding a stem. Three more lexemes (``@`` and a hash of the user, the agent,
the thread) let an exactly scoped query intersect its words with its scope inside the index,
as SQLite's scope column does inside FTS5. ``tsv_len`` is the row length FTS5 would count:
the stems, plus the three scope tokens of SQLite's scope column. The rows live on their own
narrow table, ``<prefix>_kw`` (chunk id, record id, user, ``tsv``, ``tsv_len``; schema
version 10; its index on (user) holding each row's length, 17), written with their chunks
and deleted with them: a query reads one row per matching chunk, and a narrow table stays
in the buffer cache where the chunks (vectors inline) do not. A user-only scope is checked
on the row's own user, reading no record.

Scores are FTS5's ``bm25()`` formula. A user-scoped ranking takes its statistics from that
user's rows alone, as on SQLite (``_postgres_keyword``); any other takes the store-wide ones
(under row security, those of the rows the caller may see):
- the number of indexed rows and their total length, kept in ``<prefix>_kw_totals``. That
  table is one row per shard (``pg_backend_pid() % TOTAL_SHARDS``), so concurrent writers
  rarely wait on one row;
- each stem's document count, counted through the GIN index, and remembered on large stores
  while the totals drift by less than 1%, for at most a minute (as on SQLite).

A stem occurring more than ``MAX_POSITIONS`` times in one chunk counts as that many (the
limit of a ``tsvector``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from oracleagentmemory.core.store.engines.sqlite._sqlite_words import (
    DF_CACHE_MAX,
    DF_CACHE_MIN_ROWS,
    SCOPE_TOKENS,
    Stemmer,
    still_fresh,
)
from oracleagentmemory.core.store.search._keyword import K1, B, idf, scope_tokens

TOTAL_SHARDS = 64
MAX_POSITIONS = 255
MAX_POSITION = 16383
MAX_LEXEME_BYTES = 2046
"""PostgreSQL's longest lexeme (UTF-8 bytes). A longer stem becomes its first bytes (cut at a
character's end), ``#`` and a hash of the whole stem, in rows and queries alike: it still
finds itself, and two long stems that differ past the cut stay two words (``#`` never occurs
in a stem: the tokenizer separates on it)."""


def _lexeme(stem: str) -> str:
    """``stem`` as a lexeme PostgreSQL takes (see ``MAX_LEXEME_BYTES``)."""
    raw = stem.encode()
    if len(raw) <= MAX_LEXEME_BYTES:
        return stem
    tag = "#" + hashlib.blake2b(raw, digest_size=8).hexdigest()
    return raw[: MAX_LEXEME_BYTES - len(tag)].decode(errors="ignore") + tag


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def scope_lexemes(user_id: str | None, agent_id: str | None, thread_id: str | None) -> list[str]:
    """The lexemes that stand for a chunk's scope (``@`` never occurs in a stem, so they
    never match a query word and are not counted in the row length)."""
    return ["@" + token for token in scope_tokens(user_id, agent_id, thread_id).split()]


def tsvector_literal(stems: Sequence[str], scope: Sequence[str] = ()) -> str:
    """A ``tsvector`` whose lexemes are ``stems``, each with one position per occurrence,
    and the ``scope`` lexemes (no position)."""
    where: dict[str, list[int]] = {}
    for i, stem in enumerate(stems, start=1):
        where.setdefault(stem, []).append(min(i, MAX_POSITION))
    parts = [
        f"{_quoted(stem)}:{','.join(map(str, positions[:MAX_POSITIONS]))}"
        for stem, positions in where.items()
    ]
    return " ".join([*parts, *map(_quoted, scope)])


def tsquery_literal(stems: Sequence[str], scope: Sequence[str] = ()) -> str:
    """A ``tsquery`` matching a chunk holding any of ``stems`` and every ``scope`` lexeme
    (so an exactly scoped query intersects posting lists inside the GIN index, as SQLite's
    scope column does inside FTS5)."""
    words = " | ".join(map(_quoted, stems))
    return " & ".join([f"({words})", *map(_quoted, scope)]) if scope else words


class Words:
    """The stemmer and the remembered document counts of one PostgreSQL store."""

    def __init__(self, prefix: str) -> None:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._stemmer = Stemmer(conn, prefix)
        self._lock = threading.Lock()
        self._df: dict[str, tuple[int, int, int, float]] = {}
        self._totals: tuple[int, int] | None = None
        """The store's (rows, tokens) as the last search read them."""
        self.secured: bool | None = None
        """Whether the last search found the owner's document-count function (row
        security); None before the first."""

    def stems(self, texts: Sequence[str]) -> list[list[str]]:
        with self._lock:
            return self._stemmer.stems(texts)

    def row(
        self, text: str | None, scope: tuple[str | None, str | None, str | None]
    ) -> tuple[str | None, int | None]:
        """(tsvector literal, row length) of a chunk's text in ``scope`` (user, agent,
        thread); (None, None) for no text."""
        if not text:
            return None, None
        (stems,) = self.stems([text])
        lexemes = [_lexeme(stem) for stem in stems]
        return tsvector_literal(lexemes, scope_lexemes(*scope)), len(stems) + SCOPE_TOKENS

    def query_stems(self, terms: Sequence[str]) -> list[str]:
        """The distinct stems of a query's terms, in order (each cut as rows cut it)."""
        seen: dict[str, None] = {}
        for stems in self.stems(list(terms)):
            for stem in stems:
                seen.setdefault(_lexeme(stem), None)
        return list(seen)

    def uncounted(self, stems: Sequence[str]) -> list[str]:
        """Those of ``stems`` whose document count :meth:`weights` will likely have to count:
        not remembered, or not fresh by the totals the last search read. A search counts
        them with its totals, in one round trip (``weights`` counts any other it needs)."""
        if self._totals is None:
            return list(stems)
        known = self._remembered(stems, *self._totals, time.monotonic())
        return [s for s in stems if s not in known]

    def _remembered(
        self, stems: Sequence[str], rows: int, tokens: int, now: float
    ) -> dict[str, int]:
        """The document counts of ``stems`` remembered and still fresh by these totals."""
        known: dict[str, int] = {}
        if rows >= DF_CACHE_MIN_ROWS:
            for stem in stems:
                hit = self._df.get(stem)
                if hit is not None and still_fresh(hit, rows, tokens, now):
                    known[stem] = hit[0]
        return known

    def weights(self, stems: Sequence[str], rows: int, tokens: int, count: Any) -> list[float]:
        """Each stem's FTS5 idf; ``count(stems)`` counts the document frequencies not
        remembered."""
        self._totals = (rows, tokens)
        now = time.monotonic()
        known = self._remembered(stems, rows, tokens, now)
        missing = [s for s in stems if s not in known]
        if missing:
            for stem, df in zip(missing, count(missing), strict=True):
                known[stem] = int(df)
                if rows >= DF_CACHE_MIN_ROWS:
                    if len(self._df) >= DF_CACHE_MAX:
                        self._df.clear()
                    self._df[stem] = (int(df), rows, tokens, now)
        return [idf(rows, known[s]) for s in stems]


def statistics_sql(
    kw: str, stems: Sequence[str], rows: str, scope: Sequence[str] = ()
) -> tuple[str, list[str]]:
    """The rows, tokens and each stem's document count of the keyword rows where ``rows``:
    the statistics of one user's ranking. The rows and tokens come from the index on
    (user) holding each row's length, without reading a row; the document counts from the
    rows holding one of ``stems`` (with every ``scope`` lexeme), found in the GIN index: a
    user's first search reads the rows it scores, not every row of the user. Parameters:
    ``rows``' own, then those returned, then ``rows``' again."""
    items = "".join(
        f", COUNT(*) FILTER (WHERE tsv @@ ?::tsquery) AS d{i}" for i in range(len(stems))
    )
    counts = "".join(f", d.d{i}" for i in range(len(stems)))
    sql = (
        f"SELECT u.n, u.tok{counts} FROM (SELECT COUNT(*) AS n, COALESCE(SUM(tsv_len), 0)"
        f" AS tok FROM {kw} WHERE {rows}) u, (SELECT 0 AS z{items} FROM {kw}"
        f" WHERE tsv @@ ?::tsquery AND {rows}) d"
    )
    return sql, [*(tsquery_literal([s]) for s in stems), tsquery_literal(stems, scope)]


def score_sql(
    chunks: str,
    records: str | None,
    where: str,
    average: str = "?::float8",
    idf: str = "?::float8[]",
    same_shard: str = "",
) -> str:
    """Every matching record's best chunk score, best first. Parameters: the average row
    length, the stems (``text[]``), their idf (``float8[]``), the ``tsquery``, then those of
    ``where`` (conditions over chunks ``c``, and records ``r`` unless ``records`` is None).
    ``average`` and ``idf`` may be expressions instead (no parameter then) over the
    statistics ``st`` of :func:`scored_with_statistics_sql`. ``same_shard``: the join's more
    conditions on a distributed layout (then ``average`` and ``idf`` are parameters)."""
    tf = "cardinality(u.positions)"
    joined = f" JOIN {records} r ON r.rid = c.rid{same_shard}" if records is not None else ""
    if same_shard:  # distributed: Citus cannot plan unnest's two arrays across shards
        # Parameters: the idf, the stems, the average row length, the stems, the tsquery.
        return (
            f"SELECT c.rid, MAX(s.score) AS score FROM {chunks} c{joined}"
            " CROSS JOIN LATERAL (SELECT SUM((?::float8[])[array_position(?::text[],"
            f" u.lexeme)] * ({tf} * {K1 + 1.0}) / ({tf} + {K1} * (1 - {B} + {B} * c.tsv_len"
            " / ?::float8))) AS score FROM unnest(c.tsv) u WHERE u.lexeme = ANY(?::text[])) s"
            f" WHERE c.tsv @@ ?::tsquery AND {where} GROUP BY c.rid ORDER BY score DESC, c.rid"
        )
    stats = " CROSS JOIN st" if "st." in average else ""
    return (
        f"SELECT c.rid, MAX(s.score) AS score FROM {chunks} c{stats}{joined}"
        f" CROSS JOIN LATERAL (SELECT SUM(w.idf * ({tf} * {K1 + 1.0}) / ({tf} + {K1}"
        f" * (1 - {B} + {B} * c.tsv_len / {average}))) AS score FROM unnest(c.tsv) u"
        f" JOIN unnest(?::text[], {idf}) w (stem, idf) ON w.stem = u.lexeme) s"
        f" WHERE c.tsv @@ ?::tsquery AND {where} GROUP BY c.rid ORDER BY score DESC, c.rid"
    )


def scored_with_statistics_sql(
    kw: str,
    records: str | None,
    stems: Sequence[str],
    rows: str,
    scope: Sequence[str],
    where: str,
) -> tuple[str, list[str]]:
    """:func:`score_sql` with the statistics of the keyword rows where ``rows`` counted in
    the same statement (FTS5's idf, :func:`~._keyword.idf`, in SQL): one round trip, not
    two. The rows holding a stem (``m``: with every ``scope`` lexeme, found in the GIN
    index) are read once, for their stems' document counts and for the scores (``where``
    keeps those scored to a narrower scope); the rows and tokens come from the index on
    (user) holding each row's length, as in :func:`statistics_sql`. Parameters: those
    returned (the query of ``m``), ``rows``' (for ``m``, then for the totals), the stems'
    ``tsquery`` each, then the stems (``text[]``), the scored ``tsquery``, then ``where``'s.
    No rows where ``rows`` holds none."""
    counts = "".join(
        f", COUNT(*) FILTER (WHERE tsv @@ ?::tsquery) AS d{i}" for i in range(len(stems))
    )
    matched = (
        f"m AS MATERIALIZED (SELECT rid, user_id, tsv, tsv_len FROM {kw}"
        f" WHERE tsv @@ ?::tsquery AND {rows})"
    )
    counted = (
        f"st AS MATERIALIZED (SELECT u.n, u.tok{''.join(f', d.d{i}' for i in range(len(stems)))}"
        f" FROM (SELECT COUNT(*) AS n, COALESCE(SUM(tsv_len), 0) AS tok FROM {kw}"
        f" WHERE {rows}) u, (SELECT 0 AS z{counts} FROM m) d)"
    )
    # PostgreSQL's ``ln`` and Python's ``math.log`` of the same doubles: the same idf.
    ratio = "ln((st.n - st.d{i} + 0.5::float8) / (st.d{i} + 0.5::float8))"
    idf = ", ".join(
        f"CASE WHEN {ratio.format(i=i)} > 0 THEN {ratio.format(i=i)} ELSE 1e-6::float8 END"
        for i in range(len(stems))
    )
    sql = score_sql(
        "m",
        records,
        f"st.n > 0 AND {where}",
        average="(st.tok::float8 / NULLIF(st.n, 0))",
        idf=f"ARRAY[{idf}]::float8[]",
    )
    return f"WITH {matched}, {counted} {sql}", [tsquery_literal(stems, scope)]


def totals_trigger_sql(kw: str, totals: str, function: str, shards: int) -> list[str]:
    """Migration 11: the keyword totals kept by the database, one statement-level trigger per
    verb on the keyword rows (cascaded deletes included), in a function of the table owner
    (SECURITY DEFINER): a writer, an end user under row security included, moves the totals
    by exactly the rows it wrote, and cannot write them otherwise. ``kw``, ``totals`` and
    ``function`` are schema-qualified. Then the totals are counted afresh from the rows."""
    move = (
        f"INSERT INTO {totals} (shard, rows, tokens) SELECT pg_backend_pid() % {shards},"
        " {rows}, {tokens} FROM {source} ON CONFLICT (shard) DO UPDATE"
        f" SET rows = {totals}.rows + excluded.rows, tokens = {totals}.tokens + excluded.tokens"
    )
    added = move.format(
        rows="count(*)", tokens="COALESCE(sum(tsv_len), 0)", source="new_rows HAVING count(*) > 0"
    )
    removed = move.format(
        rows="-count(*)", tokens="-COALESCE(sum(tsv_len), 0)", source="old_rows HAVING count(*) > 0"
    )
    changed = move.format(
        rows="0",
        tokens="(SELECT COALESCE(sum(tsv_len), 0) FROM new_rows)"
        " - (SELECT COALESCE(sum(tsv_len), 0) FROM old_rows)",
        source="(SELECT 1) one",
    )
    name = function.rsplit(".", 1)[-1]
    return [
        f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql"
        " SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ BEGIN"
        f" IF TG_OP = 'INSERT' THEN {added}; ELSIF TG_OP = 'DELETE' THEN {removed};"
        f" ELSE {changed}; END IF; RETURN NULL; END $$",
        f"REVOKE ALL ON FUNCTION {function}() FROM PUBLIC",
        f"DROP TRIGGER IF EXISTS {name}_ins ON {kw}",
        f"DROP TRIGGER IF EXISTS {name}_del ON {kw}",
        f"DROP TRIGGER IF EXISTS {name}_upd ON {kw}",
        f"CREATE TRIGGER {name}_ins AFTER INSERT ON {kw} REFERENCING NEW TABLE AS new_rows"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        f"CREATE TRIGGER {name}_del AFTER DELETE ON {kw} REFERENCING OLD TABLE AS old_rows"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        f"CREATE TRIGGER {name}_upd AFTER UPDATE ON {kw} REFERENCING OLD TABLE AS old_rows"
        f" NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        f"DELETE FROM {totals}",
        f"INSERT INTO {totals} (shard, rows, tokens) SELECT 0, count(*),"
        f" COALESCE(sum(tsv_len), 0) FROM {kw}",
    ]

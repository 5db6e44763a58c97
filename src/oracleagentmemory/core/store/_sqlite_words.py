"""SQLite: keyword search inside one user's share of a large store, ranked as FTS5 ranks it.

FTS5's ``bm25()`` pays for a user-scoped query store-wide: it counts every document of each
query word and looks up the length of every match one row at a time, so one user's query
in a store of a million chunks costs tens of milliseconds, most of it other users' data.

The *user-word table* (``<prefix>_words_fts``) holds, for every indexed chunk, one token per
distinct word stem of its text::

    <user prefix><stem>.<row length>.<occurrences>

so one user's postings for a stem are one narrow range of the token dictionary, and each
token already carries what ``bm25()`` looks up per row. Scores are computed here with
FTS5's formula and the main table's store-wide statistics (row count, average row length,
each word's document count), so a user-scoped query ranks as the main table ranks it.

A row's rowid is its chunk's record id and position (:func:`row_key`), so the scores name
records without a lookup in the chunk table: only the best records are read, and only from
the record table (schema version 6; version 5 keyed rows by chunk id, see ``legacy``).

Stems come from the main table's own tokenizer (FTS5 runs it on a scratch table in the temp
schema), so no word is stemmed differently here. The row length counts every column of the
main table, as ``bm25()`` does: the text's tokens plus the scope column's three.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import numpy as np

from oracleagentmemory.core.store._dialect import KeywordRow, Tables

TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The main full-text table's tokenizer."""
WORDS_TOKENIZE = "unicode61 remove_diacritics 0 tokenchars '.'"
"""The user-word table's: its tokens are already stems; ``.`` joins a stem to its counts
(the main tokenizer splits on ``.``, so no stem contains one)."""
SCOPE_TOKENS = 3
"""Tokens in the main table's scope column of every row (user, agent, thread)."""
K1, B = 1.2, 0.75
"""FTS5's ``bm25()`` constants."""
PREFIX_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"
PREFIX_LEN = 6
"""Base-36 characters of a user prefix. Two users sharing one only share candidates: the
store keeps a result only when its record's user is the one asked for."""
DF_CACHE_MIN_ROWS = 20_000
"""Below this many rows, document counts are counted afresh for every query (it is cheap)."""
DF_DRIFT = 0.01
DF_MAX_AGE_S = 60.0
"""A remembered document count is used while the store's row and token totals stay within
1% of what they were when it was counted, for at most this long."""
DF_CACHE_MAX = 20_000
STEM_CACHE_MAX = 200_000
STEM_PIECE_MAX = 64
"""Whitespace-separated pieces of text longer than this are stemmed without being remembered."""
REBUILD_BATCH = 5_000
POSTINGS_PER_QUERY = 100
"""Stems whose postings one statement reads (a compound SELECT of one part per stem)."""
CHUNK_BITS = 24
"""Low bits of a row's rowid that hold its chunk's position in its record."""
MAX_RECORD_ID = (1 << (63 - CHUNK_BITS)) - 1


_DOC_COUNTS: dict[tuple[str, str], dict[str, tuple[int, int, int, float]]] = {}
"""Remembered document counts per (database file, table), shared by the stores of a process."""


def user_prefix(user_id: str | None) -> str:
    """The fixed-length prefix that makes a stem one user's token."""
    raw = b"\x00none" if user_id is None else user_id.encode()
    h = int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")
    out = []
    for _ in range(PREFIX_LEN):
        h, r = divmod(h, len(PREFIX_CHARS))
        out.append(PREFIX_CHARS[r])
    return "".join(out)


def user_words(prefix: str, stems: Sequence[str]) -> str:
    """The user-word column of one chunk whose text tokenizes to ``stems``."""
    length = len(stems) + SCOPE_TOKENS
    return " ".join(f"{prefix}{stem}.{length}.{n}" for stem, n in Counter(stems).items())


def row_key(rid: int, chunk_index: int) -> int:
    """The rowid of a chunk's row: its record id and its position in the record."""
    if not 0 <= chunk_index < 1 << CHUNK_BITS or not 0 <= rid <= MAX_RECORD_ID:
        raise ValueError(
            f"a record may hold at most {1 << CHUNK_BITS} chunks and a record id may be at most"
            f" {MAX_RECORD_ID} (record {rid}, chunk {chunk_index})"
        )
    return (rid << CHUNK_BITS) | chunk_index


def varints(blob: bytes) -> list[int]:
    """SQLite's big-endian variable-length integers, as FTS5 stores its totals."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def idf(rows: int, hits: int) -> float:
    """FTS5's inverse document frequency (never below 1e-6)."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def still_fresh(known: tuple[int, int, int, float], rows: int, tokens: int, now: float) -> bool:
    """Whether a remembered ``(document count, rows, tokens, when)`` may still be used: the
    totals moved by at most ``DF_DRIFT`` since, within ``DF_MAX_AGE_S``."""
    _, at_rows, at_tokens, at = known
    return (
        abs(rows - at_rows) <= DF_DRIFT * rows
        and abs(tokens - at_tokens) <= DF_DRIFT * tokens
        and now - at <= DF_MAX_AGE_S
    )


T = TypeVar("T")


def with_temp_objects(
    conn: sqlite3.Connection, name: str, make: Sequence[str], run: Callable[[], T]
) -> T:
    """``run()``, first making the temp-schema objects ``make`` when ``name`` is missing:
    on first use, and again after a transaction that made them rolled back (which takes
    them with it)."""
    try:
        return run()
    except sqlite3.OperationalError:
        bare = name.split(".", 1)[1]
        if conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = ?", (bare,)).fetchone():
            raise
        for sql in make:
            conn.execute(sql)
        return run()


class Stemmer:
    """The main table's tokenizer, run by FTS5 on a scratch table in the temp schema.

    Each whitespace-separated piece of text is tokenized once and remembered: the tokenizer
    never joins characters across white space, so a text's tokens are its pieces' tokens in
    order."""

    def __init__(self, conn: sqlite3.Connection, prefix: str) -> None:
        self._conn = conn
        self._table = f"temp.{prefix}_stem_scratch"
        self._vocab = f"temp.{prefix}_stem_scratch_v"
        self._make = (
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._table} USING fts5(x,"
            f" tokenize='{TOKENIZE}')",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._vocab}"
            f" USING fts5vocab(temp, {prefix}_stem_scratch, instance)",
        )
        self._cache: dict[str, tuple[str, ...]] = {}

    def _tokenize(self, pieces: list[str]) -> list[tuple[str, ...]]:
        insert = f"INSERT INTO {self._table} (rowid, x) VALUES (?, ?)"
        with_temp_objects(
            self._conn,
            self._table,
            self._make,
            lambda: self._conn.executemany(insert, enumerate(pieces)),
        )
        out: list[list[str]] = [[] for _ in pieces]
        try:
            for doc, term in self._conn.execute(
                f"SELECT doc, term FROM {self._vocab} ORDER BY doc, offset"
            ):
                out[doc].append(term)
        finally:
            self._conn.execute(f"DELETE FROM {self._table}")
        return [tuple(tokens) for tokens in out]

    def stems(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens, as the main full-text table indexes them."""
        pieces = [text.split() for text in texts]
        cache = self._cache
        wanted = {p for ps in pieces for p in ps}
        missing = [p for p in wanted if p not in cache]
        if missing and len(cache) + len(missing) > STEM_CACHE_MAX:
            cache.clear()  # full: start again, with every piece of these texts
            missing = list(wanted)
        found = {p: cache[p] for p in wanted if p in cache}
        if missing:
            for piece, tokens in zip(missing, self._tokenize(missing), strict=True):
                found[piece] = tokens
                if len(piece) <= STEM_PIECE_MAX:
                    cache[piece] = tokens
        return [[token for p in ps for token in found[p]] for ps in pieces]


class UserWords:
    """The user-word table of one store: upkeep, and user-scoped BM25 scores."""

    def __init__(self, conn: sqlite3.Connection, tables: Tables, database: str | None) -> None:
        self._conn = conn
        self._tables = tables
        self.table = tables.words_fts
        self._bare = self.table.rsplit(".", 1)[-1]
        self._stemmer = Stemmer(conn, tables.prefix)
        self._inst_vocab = f"temp.{tables.prefix}_words_inst"
        self._make_vocab = (
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._inst_vocab}"
            f" USING fts5vocab({tables.schema or 'main'}, {self._bare}, instance)",
        )
        self._exists: bool | None = None
        self.legacy = False
        """The table is version 5's, keyed by chunk id (a store opened without upgrading it):
        kept up to date as that version keeps it, never read."""
        # An in-memory database is its connection's own: nothing to share.
        self._df = {} if database is None else _DOC_COUNTS.setdefault((database, tables.fts), {})

    # ------------------------------------------------------------------ upkeep

    def exists(self) -> bool:
        if not self._exists:  # absent is looked up again: another process may add it
            schema = f"{self._tables.schema}." if self._tables.schema else ""
            self._exists = bool(
                self._conn.execute(
                    f"SELECT 1 FROM {schema}sqlite_master WHERE type = 'table' AND name = ?",
                    (self._bare,),
                ).fetchone()
            )
        return self._exists

    def forget(self) -> None:
        """The table may have been dropped or created: look again before the next use."""
        self._exists = None
        self._df.clear()

    def create(self) -> None:
        """Create the table, empty (:meth:`rebuild` fills it)."""
        self._conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        self._conn.execute(
            f'CREATE VIRTUAL TABLE {self.table} USING fts5(words, tokenize="{WORDS_TOKENIZE}")'
        )
        self._exists = True

    def add(self, rows: Sequence[KeywordRow]) -> None:
        if not rows or not self.exists():
            return
        stems = self._stemmer.stems([row[3] for row in rows])
        self._conn.executemany(
            f"INSERT INTO {self.table} (rowid, words) VALUES (?, ?)",
            [
                (
                    cid if self.legacy else row_key(rid, index),
                    user_words(user_prefix(user), s),
                )
                for (cid, rid, index, _, user, _, _), s in zip(rows, stems, strict=True)
            ],
        )

    def remove(self, chunk_ids: Sequence[int]) -> None:
        """Drop the rows of these chunks (still in the chunk table)."""
        if not chunk_ids or not self.exists():
            return
        if self.legacy:
            self._conn.executemany(
                f"DELETE FROM {self.table} WHERE rowid = ?", [(c,) for c in chunk_ids]
            )
            return
        self._conn.execute(
            f"DELETE FROM {self.table} WHERE rowid IN (SELECT (c.rid << {CHUNK_BITS})"
            f" | c.chunk_index FROM json_each(?) j CROSS JOIN {self._tables.chunks} c"
            " ON c.cid = j.value)",
            (json.dumps(list(chunk_ids)),),
        )

    def rebuild(self) -> None:
        if not self.exists():
            return
        t = self._tables
        self._conn.execute(f"DELETE FROM {self.table}")
        after = -1
        while True:
            batch = self._conn.execute(
                f"SELECT c.cid, c.rid, c.chunk_index, c.chunk_text, r.user_id FROM {t.chunks} c"
                f" JOIN {t.records} r ON r.rid = c.rid WHERE c.cid > ?"
                " AND c.chunk_text IS NOT NULL AND c.chunk_text != ''"
                " ORDER BY c.cid LIMIT ?",
                (after, REBUILD_BATCH),
            ).fetchall()
            if not batch:
                return
            self.add([(*row, None, None) for row in batch])
            after = batch[-1][0]

    # ------------------------------------------------------------------ search

    def _postings(self, ranges: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
        """For each ``[low, high)`` range, each token in it with its rows, comma-separated:
        one walk of the user's postings of a stem (a row holds a stem's token once)."""
        one = f"SELECT {{i}}, term, group_concat(doc) FROM {self._inst_vocab}"
        one += " WHERE term >= ? AND term < ? GROUP BY term"
        rows: list[tuple[int, str, str]] = []
        for first in range(0, len(ranges), POSTINGS_PER_QUERY):  # SQLite: 500 per compound
            part = ranges[first : first + POSTINGS_PER_QUERY]
            sql = " UNION ALL ".join(one.format(i=first + i) for i in range(len(part)))
            params = [bound for pair in part for bound in pair]
            rows += with_temp_objects(
                self._conn,
                self._inst_vocab,
                self._make_vocab,
                partial(self._fetch, sql, params),
            )
        out: list[list[tuple[str, str]]] = [[] for _ in ranges]
        for i, term, docs in rows:
            out[i].append((term, docs))
        return out

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._conn.execute(sql, params).fetchall()

    def _totals(self) -> tuple[int, int]:
        """(rows, tokens in every column) of the main full-text table."""
        row = self._conn.execute(
            f"SELECT block FROM {self._tables.fts}_data WHERE id = 1"
        ).fetchone()
        if row is None or not row[0]:
            return 0, 0
        values = varints(row[0])
        return values[0], sum(values[1:])

    def _doc_count(self, term: str, rows: int, tokens: int) -> int:
        """How many main-table rows hold ``term`` in their text (remembered on large stores)."""
        now = time.monotonic()
        if rows >= DF_CACHE_MIN_ROWS:
            known = self._df.get(term)
            if known is not None and still_fresh(known, rows, tokens, now):
                return known[0]
        fts = self._tables.fts
        (df,) = self._conn.execute(
            f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?",
            ('chunk_text : "' + term.replace('"', '""') + '"',),
        ).fetchone()
        if rows >= DF_CACHE_MIN_ROWS:
            if len(self._df) >= DF_CACHE_MAX:
                self._df.clear()
            self._df[term] = (int(df), rows, tokens, now)
        return int(df)

    def scores(self, terms: Sequence[str], user_id: str | None) -> list[tuple[int, float]] | None:
        """Every record of ``user_id``'s prefix with a chunk matching a term, as ``(rid,
        bm25)`` (higher is better) of its best chunk, best first and ties by record id; a
        chunk's score is the main table's ``bm25()`` of the query ``chunk_text : (t1 OR t2
        ...)``. None when this table cannot answer (absent, version 5's, or a term is several
        tokens, a phrase): the caller asks FTS5."""
        if self.legacy or not self.exists():
            return None
        stems = self._stemmer.stems(terms)
        if any(len(s) > 1 for s in stems):
            return None
        rows, tokens = self._totals()
        if not rows:
            return []
        avgdl = tokens / rows
        prefix = user_prefix(user_id)
        asked = [(term, stem[0]) for term, stem in zip(terms, stems, strict=True) if stem]
        if not asked:
            return []
        ranges = [(f"{prefix}{stem}.", f"{prefix}{stem}/") for _, stem in asked]
        keys: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for (term, _), (low, _), found in zip(asked, ranges, self._postings(ranges), strict=True):
            if not found:
                continue
            n = len(found)
            tf, length, per_token = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
            for i, (token, docs) in enumerate(found):
                row_length, _, occurrences = token[len(low) :].partition(".")
                tf[i], length[i] = float(occurrences), float(row_length)
                per_token[i] = docs.count(",") + 1
            weight = idf(rows, self._doc_count(term, rows, tokens))
            score = weight * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * length / avgdl)))
            docs_of = ",".join([docs for _, docs in found])
            keys.append(np.fromstring(docs_of, dtype=np.int64, sep=","))
            values.append(np.repeat(score, per_token))
        if not keys:
            return []
        ids, where = np.unique(np.concatenate(keys), return_inverse=True)
        totals = np.bincount(where, weights=np.concatenate(values), minlength=len(ids))
        # Keys ascend, so each record's chunks are one run: keep its best.
        rids = ids >> CHUNK_BITS
        starts = np.flatnonzero(np.concatenate(([True], rids[1:] != rids[:-1])))
        best = np.maximum.reduceat(totals, starts)
        rids = rids[starts]
        order = np.lexsort((rids, -best))
        return list(zip(rids[order].tolist(), best[order].tolist(), strict=True))

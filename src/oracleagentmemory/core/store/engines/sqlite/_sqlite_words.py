"""SQLite: keyword search inside one user's share of a large store, ranked as FTS5 ranks it.

FTS5's ``bm25()`` pays for a user-scoped query store-wide: it counts every document of each
query word and looks up the length of every match one row at a time, so one user's query
in a store of a million chunks costs tens of milliseconds, most of it other users' data.

The *user-word table* (``<prefix>_words_fts``) holds, for every indexed chunk, one token per
distinct word stem of its text::

    <user prefix><stem>.<row length>.<occurrences>

so one user's postings for a stem are one narrow range of the token dictionary, and each
token already carries what ``bm25()`` looks up per row. Scores are computed here with
FTS5's formula and the statistics of that user's rows of the main table (row count, average
row length, each word's document count): a user-scoped query ranks as FTS5 would rank it in
a store holding only that user's rows, so nothing another user writes moves its scores.

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
from functools import lru_cache, partial
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store._dialect import KeywordRow, Tables
from oracleagentmemory.core.store.engines.sqlite._sqlite_postings import (
    EMPTY,
    Postings,
    PostingsCache,
    bm25_sum,
    parse,
)
from oracleagentmemory.core.store.search._keyword import K1, B, idf, scope_token

TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The main full-text table's tokenizer."""
WORDS_TOKENIZE = "unicode61 remove_diacritics 0 tokenchars '.'"
"""The user-word table's: its tokens are already stems; ``.`` joins a stem to its counts
(the main tokenizer splits on ``.``, so no stem contains one)."""
SCOPE_TOKENS = 3
"""Tokens in the main table's scope column of every row (user, agent, thread)."""
PREFIX_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"
PREFIX_LEN = 6
"""Base-36 characters of a user prefix. Two users sharing one only share candidates: the
store keeps a result only when its record's user is the one asked for."""
DF_CACHE_MIN_ROWS = 20_000
"""Below this many rows, document counts are counted afresh for every query (it is cheap),
or read from the user's held postings where they hold the user's rows alone (``scores``)."""
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


DocCounts = dict[tuple[str | None, str], tuple[int, int, int, float]]
"""Remembered ``(user, term) -> (document count, user's rows, user's tokens, when)``."""
_DOC_COUNTS: dict[tuple[str, str], DocCounts] = {}
"""Remembered document counts per (database file, table), shared by the stores of a process."""
BYTE_VALUES = bytes(range(128))
"""``instr(BYTE_VALUES, byte) - 1`` is a byte's value (below 128) in SQL."""


@lru_cache(maxsize=4096)
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


def first_varint(blob: bytes) -> int:
    """The first of a row's column sizes (FTS5's ``_docsize``): its text's tokens."""
    return varints(blob)[0] if blob else 0


def phrase_count(stems: Sequence[str], phrase: Sequence[str]) -> int:
    """Occurrences of ``phrase`` (a run of stems) in ``stems``, as FTS5 counts a phrase's
    instances in a row."""
    n = len(phrase)
    if n == 1:
        return stems.count(phrase[0])
    first = phrase[0]
    return sum(
        1
        for i in range(len(stems) - n + 1)
        if stems[i] == first and list(stems[i : i + n]) == list(phrase)
    )


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
            # Contentless: nothing is stored but the index, and 'delete-all' empties it
            # without reading rows back (a search's new words cost a third less).
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._table} USING fts5(x,"
            f" tokenize='{TOKENIZE}', content='')",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._vocab}"
            f" USING fts5vocab(temp, {prefix}_stem_scratch, instance)",
        )
        bare = f"{prefix}_stem_scratch"
        self._empty = f"INSERT INTO {self._table} ({bare}) VALUES ('delete-all')"
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
            self._conn.execute(self._empty)
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

    def __init__(
        self,
        conn: sqlite3.Connection,
        tables: Tables,
        database: str | None,
        version: Callable[[], int] | None = None,
    ) -> None:
        """``version``: the connection's ``PRAGMA data_version`` (read here by default)."""
        self._conn = conn
        self._version = version or self._read_version
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
        self._df: DocCounts = (
            {} if database is None else _DOC_COUNTS.setdefault((database, tables.fts), {})
        )
        conn.create_function("oam_first_varint", 1, first_varint, deterministic=True)
        self._epoch = 0
        """Moved by every write of this connection to the tables (``data_version`` does not
        move for them)."""
        self._exact_key: tuple[int, int] | None = None
        self._exact: dict[tuple[str, str | None, str], int] = {}
        """A user's totals and document counts, exact for the state ``_exact_key`` names."""
        self._held = PostingsCache()
        """Prefixes' postings, held for the state ``_exact_key`` names."""

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
        self._epoch += 1
        self._df.clear()

    def create(self) -> None:
        """Create the table, empty (:meth:`rebuild` fills it)."""
        self._conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        self._conn.execute(
            f'CREATE VIRTUAL TABLE {self.table} USING fts5(words, tokenize="{WORDS_TOKENIZE}")'
        )
        self._exists = True
        self._epoch += 1

    def add(self, rows: Sequence[KeywordRow]) -> None:
        self._epoch += 1  # the main table's rows were written too
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
        self._epoch += 1
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
        self._epoch += 1
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

    def _user_match(self, user_id: str | None) -> str:
        return f'scope : "{scope_token("user", user_id)}"'

    def _read_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _known(self) -> dict[tuple[str, str | None, str], int] | None:
        """Counts that stay exact while nothing is written: none inside a transaction (it
        may roll back), forgotten when another connection commits or this one writes."""
        if self._conn.in_transaction:
            return None
        key = (self._version(), self._epoch)
        if key != self._exact_key:
            self._exact_key, self._exact = key, {}
        return self._exact

    def user_totals(
        self, user_id: str | None, known: dict[tuple[str, str | None, str], int] | None = None
    ) -> tuple[int, int]:
        """(rows, tokens in every column) of ``user_id``'s rows of the main full-text table:
        the row sizes FTS5 keeps (``_docsize``), summed in SQL (a size below 128 is its one
        byte); the scope column's tokens are ``SCOPE_TOKENS`` a row."""
        if known is not None and ("rows", user_id, "") in known:
            return known[("rows", user_id, "")], known[("tokens", user_id, "")]
        fts = self._tables.fts
        rows, tokens = self._conn.execute(
            f"SELECT count(*), total(CASE WHEN length(sz) = 2 THEN instr(?, substr(sz, 1, 1))"
            f" - 1 ELSE oam_first_varint(sz) END) FROM {fts}_docsize WHERE id IN"
            f" (SELECT rowid FROM {fts} WHERE {fts} MATCH ?)",
            (BYTE_VALUES, self._user_match(user_id)),
        ).fetchone()
        rows, tokens = int(rows), int(tokens) + SCOPE_TOKENS * int(rows)
        if known is not None:
            known[("rows", user_id, "")], known[("tokens", user_id, "")] = rows, tokens
        return rows, tokens

    def doc_counts(
        self,
        terms: Sequence[str],
        user_id: str | None,
        rows: int,
        tokens: int,
        exact: dict[tuple[str, str | None, str], int] | None = None,
    ) -> list[int]:
        """How many of ``user_id``'s rows of the main table hold each term (a phrase where
        it is several tokens) in their text; remembered for a user of many rows while that
        user's totals drift by less than ``DF_DRIFT``."""
        now = time.monotonic()
        known: dict[str, int] = {}
        if exact is not None:
            for term in terms:
                if ("df", user_id, term) in exact:
                    known[term] = exact[("df", user_id, term)]
        if rows >= DF_CACHE_MIN_ROWS:
            for term in terms:
                hit = self._df.get((user_id, term))
                if hit is not None and still_fresh(hit, rows, tokens, now):
                    known[term] = hit[0]
        missing = list(dict.fromkeys(t for t in terms if t not in known))
        fts = self._tables.fts
        scope = self._user_match(user_id)
        for first in range(0, len(missing), POSTINGS_PER_QUERY):
            part = missing[first : first + POSTINGS_PER_QUERY]
            one = f"(SELECT count(*) FROM {fts} WHERE {fts} MATCH ?)"
            got = self._conn.execute(
                f"SELECT {', '.join([one] * len(part))}",
                ['chunk_text : "' + t.replace('"', '""') + f'" AND {scope}' for t in part],
            ).fetchone()
            for term, df in zip(part, got, strict=True):
                known[term] = int(df)
                if exact is not None:
                    exact[("df", user_id, term)] = int(df)
                if rows >= DF_CACHE_MIN_ROWS:
                    if len(self._df) >= DF_CACHE_MAX:
                        self._df.clear()
                    self._df[(user_id, term)] = (int(df), rows, tokens, now)
        return [known[t] for t in terms]

    def scores(
        self, terms: Sequence[str], user_id: str | None
    ) -> Sequence[tuple[int, float]] | None:
        """Every record of ``user_id``'s prefix with a chunk matching a term, as ``(rid,
        bm25)`` (higher is better) of its best chunk, best first and ties by record id; a
        chunk's score is ``bm25()`` of the query ``chunk_text : (t1 OR t2 ...)`` with the
        statistics of ``user_id``'s rows. None when this table cannot answer (absent,
        version 5's, or a term is several tokens, a phrase): :meth:`scoped_scores` does."""
        if self.legacy or not self.exists():
            return None
        stems = self._stemmer.stems(terms)
        if any(len(s) > 1 for s in stems):
            return None
        exact = self._known()
        rows, tokens = self.user_totals(user_id, exact)
        if not rows:
            return []
        avgdl = tokens / rows
        prefix = user_prefix(user_id)
        asked = [(term, stem[0]) for term, stem in zip(terms, stems, strict=True) if stem]
        if not asked:
            return []
        counts_held = rows < DF_CACHE_MIN_ROWS
        held = (
            self._held_postings(prefix, tokens, user_id, counts_held) if exact is not None else None
        )
        if held is not None and held.only_user == (user_id,) and counts_held:
            # Every held row is one of the user's: a stem's rows are the rows holding it,
            # the count doc_counts takes afresh below DF_CACHE_MIN_ROWS (above it, a
            # remembered count may stand: see doc_counts).
            counts = {term: held.rows_with(stem) for term, stem in asked}
        else:
            counts = dict(
                zip(
                    [t for t, _ in asked],
                    self.doc_counts([t for t, _ in asked], user_id, rows, tokens, exact),
                    strict=True,
                )
            )
        weights = [idf(rows, counts[term]) for term, _ in asked]
        if held is not None:
            return held.bm25([stem for _, stem in asked], weights, avgdl, CHUNK_BITS)
        ranges = [(f"{prefix}{stem}.", f"{prefix}{stem}/") for _, stem in asked]
        postings = [parse(found) if found else EMPTY for found in self._postings(ranges)]
        return bm25_sum(postings, weights, avgdl, CHUNK_BITS)

    def _held_postings(
        self, prefix: str, tokens: int, user_id: str | None, counts: bool = False
    ) -> Postings | None:
        """The prefix's postings held in process for the store's present state (read in
        when due: see ``_sqlite_postings``), or None. Read in with ``counts``, they are
        told whether every row they hold is one of ``user_id``'s rows of the main table
        (no other user's identifier shares the prefix): then their counts are the user's
        document counts."""
        state = self._exact_key
        held = self._held.get(state, prefix)
        if held is None and self._held.due(state, prefix, tokens):
            high = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            sql = (
                f"SELECT term, group_concat(doc) FROM {self._inst_vocab}"
                " WHERE term >= ? AND term < ? GROUP BY term"
            )
            found = with_temp_objects(
                self._conn,
                self._inst_vocab,
                self._make_vocab,
                partial(self._fetch, sql, [prefix, high]),
            )
            held = Postings(found, len(prefix))
            if counts and held.rows_within(self._user_rows(user_id)):
                held.only_user = (user_id,)  # that user's alone: not another's of the prefix
            self._held.put(state, prefix, held)
        return held

    def _user_rows(self, user_id: str | None) -> NDArray[np.int64]:
        """The row keys of ``user_id``'s rows of the main table (its scope token's)."""
        fts = self._tables.fts
        found = self._conn.execute(
            f"SELECT (c.rid << {CHUNK_BITS}) | c.chunk_index FROM {fts} f"
            f" JOIN {self._tables.chunks} c ON c.cid = f.rowid WHERE {fts} MATCH ?",
            (self._user_match(user_id),),
        ).fetchall()
        return np.fromiter((row[0] for row in found), dtype=np.int64, count=len(found))

    def scoped_scores(self, terms: Sequence[str], user_id: str | None) -> list[tuple[int, float]]:
        """What :meth:`scores` answers, for any query and inside a write: ``user_id``'s
        matching rows of the main table, their text stemmed again and scored here with the
        statistics of that user's rows (FTS5's ``bm25()`` would use the whole store's)."""
        fts, chunks = self._tables.fts, self._tables.chunks
        exact = self._known()
        rows, tokens = self.user_totals(user_id, exact)
        if not rows:
            return []
        words = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        found = self._conn.execute(
            f"SELECT c.rid, f.chunk_text FROM {fts} f JOIN {chunks} c ON c.cid = f.rowid"
            f" WHERE {fts} MATCH ? ORDER BY c.rid",
            (f"chunk_text : ({words}) AND {self._user_match(user_id)}",),
        ).fetchall()
        if not found:
            return []
        phrases = self._stemmer.stems(terms)
        counts = self.doc_counts(terms, user_id, rows, tokens, exact)
        weights = [idf(rows, df) for df in counts]
        avgdl = tokens / rows
        best: dict[int, float] = {}
        for (rid, _text), stems in zip(
            found, self._stemmer.stems([r[1] for r in found]), strict=True
        ):
            norm = K1 * (1 - B + B * (len(stems) + SCOPE_TOKENS) / avgdl)
            score = 0.0
            for phrase, weight in zip(phrases, weights, strict=True):
                tf = phrase_count(stems, phrase) if phrase else 0
                if tf:
                    score += weight * (tf * (K1 + 1.0)) / (tf + norm)
            if score > best.get(rid, -math.inf):
                best[rid] = score
        return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))

"""PostgreSQL: the keyword rows of cached users, in process, scored as the server scores them.

Beside a cached user's vectors (``_user_vectors``) the cache keeps their keyword rows: for
each stem, the user's chunks holding it (the chunk's record, the stem's occurrences, the
row's length), read from the rows' ``tsvector`` as arrays the server makes (each row's
lexemes and their position counts, :func:`rows_sql`; no text to parse). A user-scoped
keyword query is then scored here with the formula of ``_postgres_words.score_sql``
(FTS5's BM25) and the statistics of the same rows (the user's row count, average row
length and each stem's document count, as on SQLite: nothing another user writes moves the
scores), instead of the server reading every matching row. The same change log keeps the
rows exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store.search._keyword import K1, B, idf

DEAD_SHARE = 0.5
"""A user whose rows are more than this share removed is read again from the server."""
STEM_BYTES, POSTING_BYTES, ROW_BYTES = 250, 28, 40
"""What a user's rows hold in memory, about (``tracemalloc``: 500 rows of 12 words, 1,900
stems and 5,400 postings, 0.61 MB): per distinct stem, per posting, per row."""


class _Rows:
    """One user's keyword rows."""

    def __init__(self) -> None:
        self.rid: list[int] = []
        self.length: list[int] = []
        self.alive: list[bool] = []
        self.dead = 0
        self.post: dict[str, tuple[list[int], list[int]]] = {}
        """stem -> (rows holding it, its occurrences in each)."""
        self.arrays: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] = {}
        """``post`` as arrays, made when a query first needs them (dropped when one grows)."""
        self.rows_of: dict[int, list[int]] = {}
        self.postings = 0
        self._columns: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]] | None
        self._columns = None
        """``rid``, ``length`` and ``alive`` as arrays (made by a query, dropped by a change)."""

    def columns(self) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]:
        if self._columns is None:
            self._columns = (
                np.asarray(self.rid, dtype=np.int64),
                np.asarray(self.length, dtype=np.float64),
                np.asarray(self.alive, dtype=np.bool_),
            )
        return self._columns

    def add(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Add keyword rows as :func:`rows_sql` reads them (after its user column)."""
        self._columns = None
        post, arrays, rows_of = self.post, self.arrays, self.rows_of
        row = len(self.rid)
        for rid, length, stems, counts in rows:
            self.rid.append(int(rid))
            self.length.append(int(length))
            self.alive.append(True)
            rows_of.setdefault(int(rid), []).append(row)
            for stem, tf in zip(stems, counts, strict=True):
                if not tf:
                    continue  # scope lexemes (no position): never a query's stem
                got = post.get(stem)
                if got is None:
                    got = post[stem] = ([], [])
                got[0].append(row)
                got[1].append(tf)
                self.postings += 1
                if arrays:
                    arrays.pop(stem, None)
            row += 1

    def nbytes(self) -> int:
        """The memory these rows hold, estimated (:data:`STEM_BYTES`...)."""
        return (
            STEM_BYTES * len(self.post) + POSTING_BYTES * self.postings + ROW_BYTES * len(self.rid)
        )

    def remove(self, rids: Iterable[int]) -> None:
        for rid in rids:
            for row in self.rows_of.pop(rid, ()):
                if self.alive[row]:
                    self.alive[row] = False
                    self.dead += 1
                    self._columns = None

    def _arrays(self, stem: str) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        got = self.arrays.get(stem)
        if got is None:
            listed = self.post.get(stem)
            if listed is None:
                return None
            got = (np.asarray(listed[0], dtype=np.int64), np.asarray(listed[1], dtype=np.float64))
            self.arrays[stem] = got
        return got

    def scores(self, stems: Sequence[str]) -> list[tuple[int, float]]:
        """Every matching record's best chunk score, best first (ties by record), with the
        statistics of these rows alone."""
        rids, length, alive = self.columns()
        count = int(alive.sum()) if self.dead else rids.size
        if count == 0:
            return []
        average = float(length[alive].sum() if self.dead else length.sum()) / count
        total = np.zeros(rids.size, dtype=np.float64)
        matched = np.zeros(rids.size, dtype=np.bool_)
        for stem in stems:
            got = self._arrays(stem)
            if got is None:
                continue
            rows, tf = got
            weight = idf(count, int(alive[rows].sum()) if self.dead else rows.size)
            norm = K1 * (1 - B + B * length[rows] / average)
            total[rows] += weight * (tf * (K1 + 1.0)) / (tf + norm)
            matched[rows] = True
        if self.dead:
            matched &= alive
        rows = np.flatnonzero(matched)
        if rows.size == 0:
            return []
        rid = rids[rows]
        score = total[rows]
        # Each record's best chunk, then best first, ties by record id.
        order = np.lexsort((-score, rid))
        rid, score = rid[order], score[order]
        first = np.ones(rid.size, dtype=np.bool_)
        first[1:] = rid[1:] != rid[:-1]
        rid, score = rid[first], score[first]
        order = np.lexsort((rid, -score))
        return list(zip(rid[order].tolist(), score[order].tolist(), strict=True))


class UserWords:
    """The keyword rows of the cached users, by user."""

    def __init__(self) -> None:
        self._users: dict[str, _Rows] = {}

    def has(self, user: str) -> bool:
        return user in self._users

    def load(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Add rows :func:`rows_sql` read to the users already here (others' are not kept)."""
        by_user: dict[str, list[tuple[Any, ...]]] = {}
        for user, *row in rows:
            if user in self._users:
                by_user.setdefault(user, []).append(tuple(row))
        for user, found in by_user.items():
            self._users[user].add(found)

    def put(self, user: str, rows: _Rows) -> None:
        """Keep ``rows`` (:func:`read`) as ``user``'s."""
        self._users[user] = rows

    def remove(self, rids: Sequence[int]) -> list[str]:
        """Forget the rows of ``rids``; the users now mostly removed rows (read them again)."""
        stale = []
        for user, kept in self._users.items():
            kept.remove(rids)
            if kept.dead > max(256, DEAD_SHARE * len(kept.rid)):
                stale.append(user)
        for user in stale:
            del self._users[user]
        return stale

    def scores(self, user: str, stems: Sequence[str]) -> list[tuple[int, float]]:
        return self._users[user].scores(stems)

    def nbytes(self) -> int:
        """The memory the users' rows hold, estimated."""
        return sum(kept.nbytes() for kept in self._users.values())

    def forget(self, user: str) -> None:
        self._users.pop(user, None)

    def clear(self) -> None:
        self._users = {}


def rows_sql(kw: str, where: str) -> str:
    """The keyword rows (``k``) where ``where`` (after an ``AND``), in the order they were
    written: ``(user, rid, length, stems, occurrences)``, the last two arrays in the same
    order (the ``tsvector``'s lexemes; a scope lexeme occurs 0 times: it has no position)."""
    return (
        "SELECT k.user_id, k.rid, k.tsv_len, tsvector_to_array(k.tsv),"
        " ARRAY(SELECT COALESCE(cardinality(u.positions), 0) FROM unnest(k.tsv) u)"
        f" FROM {kw} k WHERE k.tsv_len IS NOT NULL{where} ORDER BY k.cid"
    )


def read(rows: Iterable[tuple[Any, ...]]) -> _Rows:
    """One user's rows, as :func:`rows_sql` read them, their columns made (:meth:`_Rows.columns`:
    off the user's first search, which would otherwise make them)."""
    kept = _Rows()
    kept.add(row[1:] for row in rows)
    kept.columns()
    return kept

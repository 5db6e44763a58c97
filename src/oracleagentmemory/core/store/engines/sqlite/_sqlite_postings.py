"""SQLite: a user's keyword postings held in process, and the BM25 sum over them (#53).

The user-word table (``_sqlite_words``) gives a user's postings of a stem as tokens
``<prefix><stem>.<row length>.<occurrences>`` with their rows; reading and parsing them cost
most of a user-scoped keyword query. A prefix searched again while the store has not changed
(the same ``PRAGMA data_version`` and the same count of this connection's writes, the key
under which ``UserWords`` already keeps a user's exact totals) has all its postings read in
once, as three arrays ordered by stem (row key, occurrences, row length) and each stem's
slice, and later queries take their stems' slices from there: the same rows, in the same
order, so the same scores. Any change drops every prefix held.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store.search._fusion import RankedArrays
from oracleagentmemory.core.store.search._keyword import K1, B

Posting = tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]
"""One stem's postings: row keys, the stem's occurrences in each row, each row's length."""

HELD_POSTINGS_MAX = 1_000_000
"""Postings held over every prefix (about 24 MB of arrays); least recently used go first."""
TERMS_HELD_MAX = 4096
"""Stems whose BM25 terms a prefix keeps (dropped together past this)."""
TOKENS_PER_SEARCH = 5_000
"""A prefix is read in once it was searched ``1 + its user's tokens // TOKENS_PER_SEARCH``
times (at least twice) in one state of the store: a large user is read in only when the
searches since the last change would have paid for it."""


def parse(found: Sequence[tuple[str, str]]) -> Posting:
    """The postings of ``(token, comma-separated rows)`` pairs whose tokens end in
    ``.<row length>.<occurrences>``; rows in the given order."""
    n = len(found)
    tf, length, per_token = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    for i, (token, docs) in enumerate(found):
        _, row_length, occurrences = token.rsplit(".", 2)
        tf[i], length[i] = float(occurrences), float(row_length)
        per_token[i] = docs.count(",") + 1
    keys = np.fromstring(",".join([docs for _, docs in found]), dtype=np.int64, sep=",")
    return keys, np.repeat(tf, per_token), np.repeat(length, per_token)


def bm25_sum(
    postings: Sequence[Posting], weights: Sequence[float], avgdl: float, chunk_bits: int
) -> Sequence[tuple[int, float]]:
    """Each record's best row score, as ``(rid, score)`` best first, ties by record id: a
    row scores the sum over the query's stems of FTS5's BM25 term (``weights``: their IDF)."""
    keys: list[NDArray[np.int64]] = []
    values: list[NDArray[np.float64]] = []
    for (rows, tf, length), weight in zip(postings, weights, strict=True):
        if rows.size == 0:
            continue
        keys.append(rows)
        values.append(_term(weight, tf, length, avgdl))
    if not keys:
        return []
    ids, where = np.unique(np.concatenate(keys), return_inverse=True)
    totals = np.bincount(where, weights=np.concatenate(values), minlength=len(ids))
    return _best_per_record(ids, totals, chunk_bits)


def _term(weight: float, tf: NDArray[np.float64], length: NDArray[np.float64], avgdl: float) -> Any:
    """One stem's BM25 term in each row holding it (FTS5's)."""
    return weight * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * length / avgdl)))


def _best_per_record(ids: NDArray[np.int64], totals: NDArray[Any], chunk_bits: int) -> RankedArrays:
    """Row keys (ascending, distinct) and their scores -> each record's best, best first
    (ties by record id)."""
    # Keys ascend, so each record's rows are one run: keep its best.
    rids = ids >> chunk_bits
    first = rids[1:] != rids[:-1]
    if bool(first.all()):  # one row a record (the usual)
        best = totals
    else:
        starts = np.flatnonzero(np.concatenate(([True], first)))
        best = np.maximum.reduceat(totals, starts)
        rids = rids[starts]
    # Best first; rids ascend, so a stable sort breaks ties on the smaller id.
    order = np.argsort(-best, kind="stable")
    return RankedArrays(rids[order], best[order])  # pairs made only for those read


EMPTY: Posting = (np.empty(0, np.int64), np.empty(0), np.empty(0))


class Postings:
    """Every posting of one prefix, by stem."""

    def __init__(self, found: Sequence[tuple[str, str]], skip: int) -> None:
        """``found``: the prefix's ``(token, rows)`` pairs; ``skip`` its length."""
        found = sorted(found)  # one stem's tokens are then adjacent ('.' ends every stem)
        self._keys, self._tf, self._length = parse(found) if found else EMPTY
        per_token = [docs.count(",") + 1 for _, docs in found]
        self._slices: dict[str, tuple[int, int]] = {}
        at = 0
        for (token, _), rows in zip(found, per_token, strict=True):
            stem = token[skip:].partition(".")[0]
            lo = self._slices.get(stem, (at, at))[0]
            at += rows
            self._slices[stem] = (lo, at)
        self.size = at
        self._rows: NDArray[np.int64] | None = None
        """The distinct row keys, ascending (made by the first :meth:`bm25`)."""
        self._row_of: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        """Each posting's place in ``_rows``."""
        self._terms: dict[tuple[str, float, float], NDArray[np.float64]] = {}
        self.only_user: tuple[str | None] | None = None
        """``(user_id,)`` when every row held is one of that user's (set by the reader for
        the user it read in for; see :meth:`rows_within`): then :meth:`rows_with` is that
        user's document count, and no other user's of the same prefix."""
        self._record_of: NDArray[np.int64] | None = None
        """Each distinct row's record id where every record has one row (else empty),
        for ``_record_bits`` (made by the first :meth:`bm25`)."""
        self._record_bits = 0

    def bm25(
        self, stems: Sequence[str], weights: Sequence[float], avgdl: float, chunk_bits: int
    ) -> Sequence[tuple[int, float]]:
        """What :func:`bm25_sum` answers over these stems' postings (the same sums, in the
        same order), each row's place among the prefix's distinct rows and each stem's
        terms kept from the searches before (the store's state fixes them)."""
        if self._rows is None:
            self._rows, self._row_of = np.unique(self._keys, return_inverse=True)
        places: list[NDArray[np.int64]] = []
        values: list[NDArray[np.float64]] = []
        for stem, weight in zip(stems, weights, strict=True):
            got = self._slices.get(stem)
            if got is None or got[0] == got[1]:
                continue
            lo, hi = got
            key = (stem, weight, avgdl)
            term = self._terms.get(key)
            if term is None:
                if len(self._terms) >= TERMS_HELD_MAX:
                    self._terms.clear()
                term = self._terms[key] = _term(weight, self._tf[lo:hi], self._length[lo:hi], avgdl)
            places.append(self._row_of[lo:hi])
            values.append(term)
        if not places:
            return []
        where = np.concatenate(places)
        totals: NDArray[np.float64] = np.bincount(  # type: ignore[assignment]  # weighted
            where, weights=np.concatenate(values), minlength=self._rows.size
        )
        # Every term is above 0 (an IDF of at least 1e-6, a stem in the row): the rows
        # matched are those with a total.
        matched = totals.nonzero()[0]
        if self._record_of is None or self._record_bits != chunk_bits:
            rids = self._rows >> chunk_bits
            self._record_bits = chunk_bits
            # One row a record (the usual): a row's total is its record's best.
            one_each = rids.size < 2 or bool((rids[1:] != rids[:-1]).all())
            self._record_of = rids if one_each else np.empty(0, dtype=np.int64)
        if self._record_of.size:
            best = totals[matched]
            order = np.argsort(-best, kind="stable")  # rids ascend: ties on the smaller id
            return RankedArrays(self._record_of[matched][order], best[order])
        return _best_per_record(self._rows[matched], totals[matched], chunk_bits)

    def rows_within(self, rows: NDArray[np.int64]) -> bool:
        """Whether every row held is among ``rows`` (row keys)."""
        return bool(np.isin(self._keys, rows).all())

    def rows_with(self, stem: str) -> int:
        """How many rows hold ``stem`` (a stem is one token of a row: one posting each)."""
        lo, hi = self._slices.get(stem, (0, 0))
        return hi - lo

    def of(self, stem: str) -> Posting:
        """The stem's postings, as the user-word table's range of that stem gives them."""
        got = self._slices.get(stem)
        if got is None:
            return EMPTY
        lo, hi = got
        return self._keys[lo:hi], self._tf[lo:hi], self._length[lo:hi]


class PostingsCache:
    """The prefixes held for one state of the store (see the module docstring)."""

    def __init__(self) -> None:
        self._state: Hashable = None
        self._held: OrderedDict[str, Postings] = OrderedDict()
        self._held_size = 0
        self._searches: dict[str, int] = {}

    def _at(self, state: Hashable) -> None:
        if state != self._state:
            self._state = state
            self._held.clear()
            self._held_size = 0
            self._searches = {}

    def get(self, state: Hashable, prefix: str) -> Postings | None:
        """The prefix's postings if held in ``state``."""
        self._at(state)
        got = self._held.get(prefix)
        if got is not None:
            self._held.move_to_end(prefix)
        return got

    def due(self, state: Hashable, prefix: str, tokens: int) -> bool:
        """Count a search of ``prefix`` (whose user has ``tokens`` tokens) in ``state``;
        whether it is time to read the prefix in (once per state: a prefix read in and
        then dropped, or too large to hold, is not read again until the store changes)."""
        self._at(state)
        if tokens > HELD_POSTINGS_MAX:  # more postings than may be held: never read in
            return False
        seen = self._searches[prefix] = self._searches.get(prefix, 0) + 1
        return seen == max(2, 1 + tokens // TOKENS_PER_SEARCH)

    def put(self, state: Hashable, prefix: str, postings: Postings) -> None:
        self._at(state)
        if postings.size > HELD_POSTINGS_MAX:
            return
        self._held[prefix] = postings
        self._held_size += postings.size
        while self._held_size > HELD_POSTINGS_MAX:
            _, dropped = self._held.popitem(last=False)
            self._held_size -= dropped.size

    def clear(self) -> None:
        self._at(object())

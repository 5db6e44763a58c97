"""A scope's thread neighbours as row offsets, and what one scoped search saw of its rows.

A HYBRID search reads each vector hit with the messages around it in its thread
(``search/_follow_ups``). Over one scope's rows (a posting list: a user's rows, say) the
neighbours never change between writes, so they are worked out once: for each of the
scope's message rows, the place in the posting list of the message ``1 .. steps`` positions
before and after it in its thread (:class:`ThreadTable`). What changes with each search (its
products, the rows its conditions let through, its hits) is kept by the search
(:class:`Scan`), so the follow-ups are a few array operations over the posting list, with
no second gather or product.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

THREAD_TABLES_MAX = 64
"""Tables an index keeps, least recently used first out: a scope's thread table and its
keyword conditions' sorted ids are one each (so 32 scopes that use both)."""


class ThreadTable(NamedTuple):
    """One posting list's thread neighbours (rows as places in that list)."""

    placed: NDArray[np.bool_]
    """Whether the row is a live message with a thread position (only those are read)."""
    before: NDArray[np.int64]
    """``(rows, steps)``: the place of the message ``s + 1`` positions earlier, or -1."""
    after: NDArray[np.int64]
    """``(rows, steps)``: the place of the message ``s + 1`` positions later, or -1."""


class Scan(NamedTuple):
    """What one scoped search computed over its posting list ``pos``."""

    source: object
    """The query as given (the same object asks again without a comparison)."""
    query: NDArray[np.float32]
    """The unit query."""
    conditions: tuple[object, ...]
    """The search's types, exact and preferred scope, and validity flag."""
    unmasked: bool
    """Whether the search had no mask of allowed rows (a metadata filter, ``as_of``)."""
    scope_key: tuple[int, int]
    """The scope column and code whose posting list ``pos`` is."""
    pos: NDArray[np.int64]
    rids: NDArray[np.int64]
    product: NDArray[np.float32]
    """``vecs[pos] @ query``."""
    passes: NDArray[np.bool_] | None
    """The rows the search's conditions let through (None: all)."""
    hits: list[tuple[int, float]]
    """The answer, as returned."""
    hit_rid: NDArray[np.int64]
    hit_dist: NDArray[np.float64]
    hit_at: NDArray[np.int64]
    """Each hit's place in ``pos`` (its only row)."""


def build_table(
    keys: NDArray[np.int64], placed: NDArray[np.bool_], steps: int
) -> ThreadTable | None:
    """The table of a posting list whose rows have thread positions ``keys`` (``(thread
    code << 40) + seq``; read only where ``placed``); None when two placed rows share a
    position (a record of several rows: the caller reads neighbours row by row)."""
    at = np.flatnonzero(placed)
    order = at[np.argsort(keys[at], kind="stable")]
    sorted_keys = keys[order]
    if sorted_keys.size > 1 and not bool((sorted_keys[1:] > sorted_keys[:-1]).all()):
        return None
    size = keys.size
    before = np.full((size, steps), -1, dtype=np.int64)
    after = np.full((size, steps), -1, dtype=np.int64)
    if order.size:
        for s in range(1, steps + 1):
            for out, wanted in ((before, keys[at] - s), (after, keys[at] + s)):
                i = np.minimum(np.searchsorted(sorted_keys, wanted), sorted_keys.size - 1)
                found = sorted_keys[i] == wanted
                out[at[found], s - 1] = order[i[found]]
    return ThreadTable(placed, before, after)


class ScanRows(NamedTuple):
    """A search's posting list as the follow-ups read it (``VectorIndex.scan_rows``)."""

    rid: NDArray[np.int64]
    readable: NDArray[np.bool_]
    """A live message with a thread position that the search's conditions let through."""
    value: NDArray[np.float64]
    """Similarity, ``dot - preference penalties`` (summed as SQL sums them, in double)."""
    before: NDArray[np.int64]
    after: NDArray[np.int64]
    hit_at: NDArray[np.int64]
    hit_rid: NDArray[np.int64]
    hit_sim: NDArray[np.float64]
    """The hits' similarities, ``1 - distance`` (as the follow-ups take them)."""

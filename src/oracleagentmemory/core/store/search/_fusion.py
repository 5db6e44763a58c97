"""Fusion of ranked branches (hybrid search) and second-stage re-scoring, shared by engines.

Branch hits are ``(id, similarity)`` pairs, higher = better, best first. Every number here was
chosen by leave-one-conversation-out cross-validation on LoCoMo (dev), never on the split it is
reported on: see docs/retrieval-quality.md and ``bench/tuning.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

Hits = Sequence[tuple[int, float]]


class RankedArrays(Sequence[tuple[int, float]]):
    """``(id, value)`` pairs in rank order, held as two arrays: a pair is made only when
    read (a branch that ranked in arrays hands its ranking on as it is)."""

    __slots__ = ("ids", "values")

    def __init__(self, ids: NDArray[np.int64], values: NDArray[np.float64]) -> None:
        self.ids = ids
        self.values = values

    def __len__(self) -> int:
        return int(self.ids.size)

    @overload
    def __getitem__(self, i: int) -> tuple[int, float]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, float]]: ...
    def __getitem__(self, i: int | slice) -> tuple[int, float] | list[tuple[int, float]]:
        if isinstance(i, slice):
            return list(zip(self.ids[i].tolist(), self.values[i].tolist(), strict=True))
        return int(self.ids[i]), float(self.values[i])

    def __iter__(self) -> Iterator[tuple[int, float]]:
        return zip(self.ids.tolist(), self.values.tolist(), strict=True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RankedArrays({list(self)!r})"


def _columns(hits: Hits) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``hits``' ids and values as arrays."""
    if isinstance(hits, RankedArrays):
        return hits.ids, hits.values
    if not hits:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    rids, values = zip(*hits, strict=True)
    return np.array(rids, dtype=np.int64), np.array(values, dtype=np.float64)


SCORE = "score"
"""Convex combination of min-max normalised similarities (keeps how far apart candidates are)."""
RANK = "rank"
"""Weighted reciprocal-rank fusion: sum of ``weight / (rrf_k + rank)``."""


def _minmax(hits: Hits, span: float = 0.0) -> dict[int, float]:
    """Scores shifted to start at 0 and divided by their spread, or by ``span`` when the
    spread is smaller: a branch whose candidates barely differ does not have its noise
    stretched to the whole [0, 1] range (with ``span`` 0, every candidate of equal scores
    gets 1)."""
    if not hits:
        return {}
    values = [s for _, s in hits]
    lo, hi = min(values), max(values)
    spread = max(hi - lo, span)
    if spread < 1e-12:
        return {rid: 1.0 for rid, _ in hits}
    return {rid: (s - lo) / spread for rid, s in hits}


def fuse(
    branches: Sequence[tuple[Hits, float]],
    k: int,
    kind: str = SCORE,
    rrf_k: int = 60,
    spans: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` best ids over weighted branches, as ``(id, fused score)`` descending.

    ``SCORE``: each branch is min-max normalised over its own candidates (a spread smaller
    than the branch's entry of ``spans`` counts as that span) and a record missing from a
    branch scores 0 there; fused = sum of weight * normalised score (in [0, 1] when the
    weights sum to 1). ``RANK``: fused = sum of weight / (rrf_k + 1-based rank). Ties break on
    the smaller id, so the order is deterministic.
    """
    if kind not in (SCORE, RANK):
        raise ValueError(f"kind must be {SCORE!r} or {RANK!r}, got {kind!r}")
    fused: dict[int, float] = {}
    for b, (hits, weight) in enumerate(branches):
        if kind == SCORE:
            span = spans[b] if spans is not None else 0.0
            for rid, s in _minmax(hits, span).items():
                fused[rid] = fused.get(rid, 0.0) + weight * s
        else:
            for rank, (rid, _) in enumerate(hits, start=1):
                fused[rid] = fused.get(rid, 0.0) + weight / (rrf_k + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def fuse_distances(
    vector_hits: Hits,
    keyword_hits: Hits,
    k: int,
    vector_weight: float,
    keyword_span: float,
) -> list[tuple[int, float]]:
    """``fuse`` (``SCORE``) of a vector branch and a keyword branch given as distances
    (cosine; ``1 / (1 + bm25)``), their similarities ``1 - d`` and ``1 / max(d, 1e-12) -
    1``, the keyword spread at least ``keyword_span``: the same answer, in array
    operations (each sum formed as ``fuse`` forms it: 0.0, plus the vector share, plus the
    keyword share)."""
    rv, dv = _columns(vector_hits)
    rk, dk = _columns(keyword_hits)
    # Each branch's ids are distinct: a keyword id is found among the vector ids (sorted
    # once) or added after them. The order comes from (fused, id) alone.
    fv = _share(1.0 - dv, vector_weight, 0.0)
    fk = _share(1.0 / np.maximum(dk, 1e-12) - 1.0, 1.0 - vector_weight, keyword_span)
    if rv.size and rk.size:
        by_id = np.argsort(rv)
        at = by_id[np.minimum(np.searchsorted(rv, rk, sorter=by_id), rv.size - 1)]
        both = rv[at] == rk
        fv[at[both]] = fv[at[both]] + fk[both]
        only = ~both
        rids, fused = np.concatenate([rv, rk[only]]), np.concatenate([fv, fk[only]])
    else:
        rids, fused = (rv, fv) if rv.size else (rk, fk)
    top = np.lexsort((rids, -fused))[:k]
    return list(zip(rids[top].tolist(), fused[top].tolist(), strict=True))


def _share(sims: NDArray[np.float64], weight: float, span: float) -> NDArray[np.float64]:
    """A branch's share of the fused score, ``0.0 + weight * normalised similarity``, as
    ``fuse`` forms it (``_minmax``: Python's min and max, NaN included)."""
    if not sims.size:
        return sims
    values = sims.tolist()
    lo = min(values)
    spread = max(max(values) - lo, span)
    normed = np.ones(sims.size) if spread < 1e-12 else (sims - lo) / spread
    return 0.0 + weight * normed


def rescore(
    candidates: Hits, second: Mapping[int, float], weight: float
) -> list[tuple[int, float]]:
    """Blend a second-stage similarity into ranked candidates, as ``(id, score)`` descending.

    Both the first-stage scores and ``second`` (a similarity per candidate id; a candidate
    without one gets the lowest) are min-max normalised over the candidates; score =
    ``weight * second + (1 - weight) * first``.
    """
    if not candidates:
        return []
    first = _minmax(candidates)
    floor = min(second.values()) if second else 0.0
    second_n = _minmax([(rid, second.get(rid, floor)) for rid, _ in candidates])
    blended = {rid: weight * second_n[rid] + (1.0 - weight) * first[rid] for rid, _ in candidates}
    return sorted(blended.items(), key=lambda kv: (-kv[1], kv[0]))


def boost(
    candidates: Hits, boosted: set[int] | frozenset[int], weight: float
) -> list[tuple[int, float]]:
    """Add ``weight`` to the score of each candidate in ``boosted``, as ``(id, score)``
    descending (ties on the smaller id)."""
    if not boosted or weight == 0:
        return list(candidates)
    out = [(rid, s + weight if rid in boosted else s) for rid, s in candidates]
    return sorted(out, key=lambda kv: (-kv[1], kv[0]))

"""The keyword branch's span (``_hybrid.KEYWORD_SPAN``): BM25 scores closer together than it
do not decide a hybrid ranking by themselves; wide spreads fuse exactly as before."""

from __future__ import annotations

import pytest

from oracleagentmemory.core.store.search._fusion import SCORE, fuse
from oracleagentmemory.core.store.search._hybrid import KEYWORD_SPAN, hybrid_rank


def _kw(*scores: float) -> list[tuple[int, float]]:
    """Keyword hits as the store passes them: ids 1.. with distance 1 / (1 + bm25)."""
    return [(i, 1.0 / (1.0 + s)) for i, s in enumerate(scores, start=1)]


def test_a_small_bm25_spread_leaves_the_order_to_the_vectors() -> None:
    vector = [(2, 0.10), (1, 0.14), (3, 0.30)]  # cosine distances: 2 is clearly closest
    keyword = _kw(0.35, 0.20, 0.0)  # a tiny store: every word common, BM25 near zero
    assert next(r for r, _ in hybrid_rank(vector, keyword, 3, "q", dict, keyword_span=0.0)) == 1
    ranked = hybrid_rank(vector, keyword, 3, "q", dict)
    assert [r for r, _ in ranked] == [2, 1, 3]
    assert all(0.0 <= d <= 1.0 for _, d in ranked)


def test_a_wide_bm25_spread_fuses_as_without_a_span() -> None:
    vector = [(2, 0.10), (1, 0.14), (3, 0.30)]
    keyword = _kw(12.0, 3.0, 0.5)  # spread 11.5 > KEYWORD_SPAN: the span changes nothing
    assert KEYWORD_SPAN < 11.5
    assert hybrid_rank(vector, keyword, 3, "q", dict) == hybrid_rank(
        vector, keyword, 3, "q", dict, keyword_span=0.0
    )


def test_fuse_divides_by_the_larger_of_spread_and_span() -> None:
    hits = [(1, 3.0), (2, 2.0), (3, 1.0)]
    assert fuse([(hits, 1.0)], 3, SCORE) == [(1, 1.0), (2, 0.5), (3, 0.0)]
    assert fuse([(hits, 1.0)], 3, SCORE, spans=[4.0]) == [(1, 0.5), (2, 0.25), (3, 0.0)]
    assert fuse([(hits, 1.0)], 3, SCORE, spans=[1.0]) == fuse([(hits, 1.0)], 3, SCORE)
    same = [(1, 2.0), (2, 2.0)]
    assert fuse([(same, 1.0)], 2, SCORE) == [(1, 1.0), (2, 1.0)]  # no span: equal = 1
    assert fuse([(same, 1.0)], 2, SCORE, spans=[5.0]) == [(1, 0.0), (2, 0.0)]
    with pytest.raises(ValueError):
        fuse([(hits, 1.0)], 3, "median")

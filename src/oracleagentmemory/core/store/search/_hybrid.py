"""HYBRID ranking: fuse the vector and keyword branches, then prefer records from the period a
query names. Every constant here was chosen by leave-one-conversation-out cross-validation on
LoCoMo (dev): see docs/retrieval-quality.md and ``bench/tuning.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from oracleagentmemory.core.store._dates import in_any_of, query_periods
from oracleagentmemory.core.store.search._fusion import boost, fuse_distances

HYBRID_CANDIDATES = 50
"""Each branch contributes its best ``max(HYBRID_CANDIDATES, k)`` records."""
HYBRID_VECTOR_WEIGHT = 0.5
"""Share of the vector branch in the score fusion (the keyword branch gets the rest); 0.3
before the vector branch read messages with their follow-ups (``_follow_ups``)."""
DATE_BOOST = 0.3
"""Added to the fused score (in [0, 1]) of a candidate written in a period the query names."""
DATE_SLACK_DAYS = 7
"""A record up to this many days after the named period still counts as in it."""
DATE_POOL = 25
"""The date preference reorders only the best ``max(k, DATE_POOL)`` fused candidates."""
KEYWORD_SPAN = 5.0
"""The keyword branch's BM25 scores are normalised by their spread, or by this when the
spread is smaller, so query words that barely tell the candidates apart do not outweigh the
vector branch. In a small store FTS5's document frequencies make every word common: its IDF
falls to near zero and the few thousandths of a point left between candidates are noise.
(PostgreSQL's ``ts_rank_cd`` has no IDF; its dialect keeps the spread as it is.)"""


def hybrid_rank(
    vector_hits: Sequence[tuple[int, float]],
    keyword_hits: Sequence[tuple[int, float]],
    k: int,
    query: str | None,
    times_of: Callable[[list[int]], dict[int, str | None]],
    vector_weight: float = HYBRID_VECTOR_WEIGHT,
    keyword_span: float = KEYWORD_SPAN,
) -> list[tuple[int, float]]:
    """The ``k`` best records as ``(id, distance)``, distance ascending in [0, 1].

    ``vector_hits`` carry cosine distances, ``keyword_hits`` ``1 / (1 + bm25)``; they are
    fused as min-max normalised similarities (``_fusion.fuse``; BM25 spreads below
    ``keyword_span`` count as that span). When ``query`` names a
    calendar period, candidates whose time (``times_of``: record timestamp, else creation
    time, ISO-8601) falls in it gain ``DATE_BOOST``; scores are then divided by
    ``1 + DATE_BOOST`` so that distances stay in [0, 1].
    """
    periods = query_periods(query) if query else []
    pool = max(k, DATE_POOL) if periods else k
    fused = fuse_distances(vector_hits, keyword_hits, pool, vector_weight, keyword_span)
    if not periods:
        return [(rid, 1.0 - score) for rid, score in fused]
    times = times_of([rid for rid, _ in fused])
    named = in_any_of(periods, DATE_SLACK_DAYS)
    inside = {rid for rid, _ in fused if named(_parse(times.get(rid)))}
    ranked = boost(fused, inside, DATE_BOOST)[:k]
    return [(rid, 1.0 - score / (1.0 + DATE_BOOST)) for rid, score in ranked]


def _parse(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None

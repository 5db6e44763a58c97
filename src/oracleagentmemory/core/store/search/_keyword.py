"""Keyword-query handling and rank fusion, shared by every engine."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from oracleagentmemory.core.store.search._hybrid import HYBRID_VECTOR_WEIGHT, hybrid_rank

_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 64
K1, B = 1.2, 0.75
"""FTS5's ``bm25()`` constants (both engines score keyword rows in process with them)."""


def idf(rows: int, hits: int) -> float:
    """FTS5's inverse document frequency (never below 1e-6; ``hits`` above ``rows``, counts
    read at two moments of a changing table, counts as ``rows``)."""
    hits = min(hits, rows)
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves""".split()  # noqa: SIM905 - a word list reads best as text
)
"""English function words, dropped from keyword queries: they match most documents, so they
cost the most to score and say the least about relevance."""


def query_terms(query: str) -> list[str]:
    """Distinct lower-cased word tokens of a natural-language query, in order, without
    stop words (unless the query has nothing else)."""
    seen: dict[str, None] = {}
    for tok in _TOKEN.findall(query.lower()):
        seen.setdefault(tok, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    content = [t for t in seen if t not in STOP_WORDS]
    return content or list(seen)


def fuse_scores(
    vector_hits: Sequence[tuple[int, float]],
    keyword_hits: Sequence[tuple[int, float]],
    k: int,
    vector_weight: float = HYBRID_VECTOR_WEIGHT,
) -> list[tuple[int, float]]:
    """Convex combination of min-max normalised branch scores, as (id, distance) ascending.

    Vector hits carry cosine distances, keyword hits ``1 / (1 + bm25)``; each list is turned
    back into similarities and scaled to [0, 1] over its own candidates, so neither scale
    dominates. A record missing from a branch scores 0 there. Distance = 1 - fused score.
    """
    return hybrid_rank(vector_hits, keyword_hits, k, None, lambda rids: {}, vector_weight)


@lru_cache(maxsize=4096)
def scope_token(dim: str, value: str | None) -> str:
    """A word that stands for one scope value inside a full-text index.

    Letting the full-text engine intersect the query's terms with the scope's token keeps a
    user-scoped keyword search proportional to that user's matches, not everyone's. Digits
    after one letter survive every tokenizer and stemmer unchanged.
    """
    raw = b"\x00none" if value is None else value.encode()
    return f"{dim[0]}{int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), 'big')}"


def scope_tokens(user_id: str | None, agent_id: str | None, thread_id: str | None) -> str:
    """The scope column of one indexed chunk."""
    return " ".join(
        (
            scope_token("user", user_id),
            scope_token("agent", agent_id),
            scope_token("thread", thread_id),
        )
    )


def exact_scope_tokens(exact: Mapping[str, str | None]) -> list[str]:
    """Tokens every hit must carry for a search with these exact scope filters."""
    return [scope_token(dim, value) for dim, value in exact.items()]

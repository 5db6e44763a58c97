"""Search strategy and search-index refresh settings."""

from __future__ import annotations

from enum import Enum


class SearchStrategy(Enum):
    """How ``search()`` ranks records.

    VECTOR ranks by cosine distance between the query vector and stored vectors. KEYWORD ranks
    by full-text match over the stored search text (no embedder needed). HYBRID fuses both
    rankings.
    """

    VECTOR = "vector"
    HYBRID = "hybrid"
    KEYWORD = "keyword"


class SearchIndexSyncMode(Enum):
    """When new or changed search text becomes visible to keyword / hybrid search.

    ON_COMMIT (default): at commit. MANUAL: only after an explicit ``sync_search_index()``.
    AUTO: asynchronous refresh; supported with HYBRID only.
    """

    AUTO = "auto"
    MANUAL = "manual"
    ON_COMMIT = "on_commit"

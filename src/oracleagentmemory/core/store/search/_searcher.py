"""One search, from its arguments to ranked records: the search part of the SQL store.

The strategy picks the branches: VECTOR ranks by cosine distance (``_vector_branch``),
KEYWORD by the full-text score (``_keyword_branch``), HYBRID fuses both (``_hybrid``), the
vector scan running beside the keyword query when the index is large, and its messages read
with the messages that follow them (``_follow_ups``). Then the hits'
records are loaded in one read, non-finite distances dropped, and links followed
(``_relations``) within the search's exact scope.
"""

from __future__ import annotations

import builtins
import dataclasses
import math
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.records import Record
from oracleagentmemory.core._shared._end_user import current_end_user
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store._limits import (
    MAX_LINKED_RESULTS,
    MAX_NUM_HOPS,
    MAX_SEARCH_RESULTS,
    check_text,
)
from oracleagentmemory.core.store._reads import Reader
from oracleagentmemory.core.store._relations import Links
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store.schema._planning import as_vector, check_positive_int
from oracleagentmemory.core.store.schema._validity import check_as_of
from oracleagentmemory.core.store.search._filters import validate_metadata_filter
from oracleagentmemory.core.store.search._follow_ups import FollowUps
from oracleagentmemory.core.store.search._hybrid import HYBRID_CANDIDATES, hybrid_rank
from oracleagentmemory.core.store.search._keyword_branch import KeywordBranch
from oracleagentmemory.core.store.search._search_sql import ScopeSpec, search_types
from oracleagentmemory.core.store.search._user_vectors import one_search
from oracleagentmemory.core.store.search._vector_branch import VectorBranch


class Searcher:
    """The search part: validation, strategy dispatch, fusion, loading and links."""

    def __init__(
        self,
        core: StoreCore,
        reader: Reader,
        links: Links,
        vectors: VectorBranch,
        keywords: KeywordBranch,
    ) -> None:
        self._core = core
        self._reader = reader
        self._links = links
        self._vectors = vectors
        self._keywords = keywords
        self._follow_ups = FollowUps(core, vectors)

    def search(
        self,
        query: str | None,
        k: int,
        *,
        query_vector: Any,
        thread_id: str | None,
        user_id: str | None,
        agent_id: str | None,
        exact_user_match: bool,
        exact_agent_match: bool,
        exact_thread_match: bool,
        record_types: set[str] | None,
        metadata_filter: dict[str, Any] | None,
        num_hops: int,
        max_linked_results: int,
        include_invalid_results: bool,
        as_of: datetime | None = None,
    ) -> builtins.list[tuple[Record, float]]:
        """Validate the arguments, embed a text query, rank by the store's strategy, load
        the records and attach their links. ``as_of``: the records true then, whatever
        their status now (``schema/_validity``)."""
        core = self._core
        check_positive_int(k, "k", maximum=MAX_SEARCH_RESULTS)
        if (query is None) == (query_vector is None):
            raise ValueError("give exactly one of query and query_vector")
        if query is not None:
            if not isinstance(query, str):
                raise TypeError("query must be a string")
            if not query.strip():
                raise ValueError("query must contain at least one non-whitespace character")
            check_text(query, "query")
        qvec: NDArray[np.float32] | None = None
        if query_vector is not None:
            if core.strategy is SearchStrategy.KEYWORD:
                raise ValueError("query_vector: keyword search takes a text query, not a vector")
            qvec = as_vector(query_vector, "query_vector")
            if core.vector_dim is not None and qvec.shape[0] != core.vector_dim:
                raise ValueError(
                    f"query_vector has dimension {qvec.shape[0]}, the store's is {core.vector_dim}"
                )
        scope = ScopeSpec.resolve(
            thread_id, user_id, agent_id, exact_user_match, exact_agent_match, exact_thread_match
        )
        types = search_types(record_types)
        flt = None if metadata_filter is None else validate_metadata_filter(metadata_filter)
        check_positive_int(num_hops, "num_hops", minimum=0, maximum=MAX_NUM_HOPS)
        check_positive_int(
            max_linked_results, "max_linked_results", minimum=0, maximum=MAX_LINKED_RESULTS
        )
        if not isinstance(include_invalid_results, bool):
            raise TypeError("include_invalid_results must be a bool")
        valid_only = not include_invalid_results
        then = check_as_of(as_of)
        if then is not None:
            if not core.dialect.keeps_validity:
                raise ValueError(
                    "as_of: this store's schema predates validity (version 16); open it with"
                    " SchemaPolicy.CREATE_IF_NECESSARY to upgrade it"
                )
            scope = dataclasses.replace(scope, as_of=then)
            valid_only = False
        strategy = core.strategy
        if qvec is None and query is not None and strategy is not SearchStrategy.KEYWORD:
            if core.embedder is None:
                raise ValueError(
                    f"query: {strategy} search needs an embedder to embed a text query; "
                    "pass query_vector instead"
                )
            qvec = core.embed([query], is_query=True)[0]

        # As an end user (core._shared._end_user) the search's statements share one transaction:
        # one role switch, not one per statement.
        one_transaction = core.dialect.snapshot() if current_end_user() else nullcontext()
        # A user the in-process cache ranks is searched on the primary: the cache's
        # watermark is the primary's (a read replica may be behind it).
        pinned = core.dialect.primary_reads() if self._cached(scope) else nullcontext()
        # Records a ranking statement read with its hits (a vector or keyword search ranked
        # in SQL reads them in the same statement); the others are loaded after.
        loaded: dict[int, Record] = {}
        with core.lock, pinned, one_transaction, one_search():
            core.check_open()
            if strategy is SearchStrategy.VECTOR:
                assert qvec is not None
                rank = partial(
                    self._vectors.branch, qvec, k, types, scope, flt, valid_only, parallel=False
                )
                hits: Sequence[tuple[int, float]] = rank(loaded=loaded, check_later=True)()
                users = self._vectors.users
                check = users.pending_check()
                if check:
                    # Ranked from the cache before asking the log: the log comes back with
                    # the records; a commit since means ranking again, caught up. Records
                    # read that no commit since touched still serve the new ranking (the
                    # final load reads only the others: often none).
                    answers, records = self._reader.load_after(check, [r for r, _ in hits])
                    with users.lock:
                        changed = users.settle(answers)
                    if changed is not None:
                        loaded.update((r, rec) for r, rec in records.items() if r not in changed)
                    if changed is None or changed:
                        hits = rank(loaded=loaded)()
            elif strategy is SearchStrategy.KEYWORD:
                assert query is not None
                hits = self._keywords.hits(
                    query, k, types, scope, flt, valid_only, loaded, check_later=True
                )
            else:
                n = max(HYBRID_CANDIDATES, k)
                # Ranked beside the keyword branch where there is one (a text query).
                vector_branch = (
                    self._vectors.branch(
                        qvec, n, types, scope, flt, valid_only, parallel=query is not None
                    )
                    if qvec is not None
                    else None
                )
                try:
                    # The vector branch caught its index up: the keyword candidates'
                    # conditions are read there (SQL where it cannot tell).
                    held = (
                        partial(
                            self._vectors.conditions,
                            types=types,
                            scope=scope,
                            flt=flt,
                            valid_only=valid_only,
                        )
                        if qvec is not None
                        else None
                    )
                    keyword_hits = (
                        self._keywords.hits(query, n, types, scope, flt, valid_only, held=held)
                        if query is not None
                        else []
                    )
                finally:
                    vector_hits = vector_branch() if vector_branch is not None else []
                reranked: Sequence[tuple[int, float]] = vector_hits
                if qvec is not None and self._vectors.may_hold("message", scope):
                    reranked = self._follow_ups.rerank(
                        qvec, vector_hits, n, types, scope, flt, valid_only
                    )
                hits = hybrid_rank(
                    reranked,
                    keyword_hits,
                    k,
                    query,
                    self._times_of,
                    keyword_span=core.dialect.keyword_span,
                )
            records = loaded | self._reader.load([rid for rid, _ in hits if rid not in loaded])
            # A vector written before vectors were validated may be degenerate: never let a
            # non-finite distance out.
            found = [
                (records[rid], dist) for rid, dist in hits if rid in records and math.isfinite(dist)
            ]
            linked = self._links.expand_links(
                [r for r, _ in found],
                num_hops,
                max_linked_results,
                not valid_only,
                scope.exact,
                scope.as_of,
            )
        return [(record, dist) for record, (_, dist) in zip(linked, found, strict=True)]

    def _cached(self, scope: ScopeSpec) -> bool:
        """Whether the in-process user cache holds the search's exact user."""
        users = self._vectors.users
        with users.lock:
            return users.cached_index(scope.exact.get("user") if scope.exact else None) is not None

    def _times_of(self, rids: builtins.list[int]) -> dict[int, str | None]:
        """Each record's time for date-aware ranking: its timestamp, else its creation."""
        marks = ",".join("?" * len(rids))
        d = self._core.dialect
        rows = d.execute(
            f"SELECT rid, COALESCE(event_ts, created_at) FROM {d.tables.records}"
            f" WHERE rid IN ({marks})",
            rids,
        )
        return {int(rid): ts for rid, ts in rows}

"""HYBRID's follow-ups over the vector search's own scan (#53, second round): the thread
neighbours as places in the searched user's rows (``VectorIndex.scan_rows``, a table kept
until the next write) and the search's products, scored by ``follow_up_scores_at``, answer
as the neighbours read row by row (``VectorIndex.thread_neighbours`` with
``follow_up_scores``) through deleted, invalidated and later-written messages, memories
carrying a thread id, another user's thread and a preferred thread."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search._follow_ups import (
    FOLLOW_UPS,
    follow_up_scores,
    follow_up_scores_at,
)
from oracleagentmemory.core.store.search._search_sql import ScopeSpec

from .test_follow_ups_in_process import _messages, _vectors, threads_searched


def _both(store: Any, query: Any, scope: ScopeSpec, valid_only: bool) -> tuple[Any, Any]:
    """The scan's answer and the row-by-row one, for one search's 50 best."""
    types = ["message", "memory"]
    with store._core.lock:
        hits = store._vectors.branch(query, 50, types, scope, None, valid_only)()
        rids = [rid for rid, _ in hits]
        sims = [(rid, 1.0 - dist) for rid, dist in hits]
        rows = store._vectors.scan_rows(query, hits, FOLLOW_UPS, types, scope, None, valid_only)
        assert rows is not None, scope
        mine = follow_up_scores_at(sims, rows, 50)
        found = store._vectors.neighbours(
            query, rids, FOLLOW_UPS, FOLLOW_UPS, types, scope, None, valid_only
        )
        assert found is not None
        theirs = follow_up_scores(sims, *found, 50)
    return mine, theirs


def test_the_scan_answers_as_the_rows_read_one_by_one(
    make_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, rng, q = threads_searched(make_store, monkeypatch, 54)
    queries = [q, *np.asarray(_vectors(rng, 4), dtype=np.float32)]
    scopes = [ScopeSpec({"user": "u"}, {}), ScopeSpec({"user": "u"}, {"thread": "t1"})]
    blended = 0
    for moved in (False, True):
        if moved:  # written after the tables were built, and rows moved under them
            _messages(store, rng, "u", "t0", 12)
            _messages(store, rng, "v", "t2", 5)
            store.delete("message", "t0-5")
            store.update("message", "t0-9", status=RecordStatus.INVALID)
            store.update("message", "t1-3", status=RecordStatus.INVALID)
        for scope in scopes:
            for valid_only in (True, False):
                for query in queries:
                    mine, theirs = _both(store, query, scope, valid_only)
                    assert [r for r, _ in mine] == [r for r, _ in theirs]
                    for (_, a), (_, b) in zip(mine, theirs, strict=True):
                        assert math.isclose(a, b, rel_tol=0, abs_tol=1e-6)
                    hit_sims = dict(
                        (rid, 1.0 - d)
                        for rid, d in store._vectors.branch(
                            query, 50, ["message", "memory"], scope, None, valid_only
                        )()
                    )
                    blended += sum(
                        rid not in hit_sims or abs(s - hit_sims[rid]) > 1e-9 for rid, s in mine
                    )
    assert blended > 100  # the follow-ups moved scores (not just the hits given back)


def test_another_search_between_gives_no_scan(
    make_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan is the last search's: asked for other hits, or by another query, it is
    not used (the rows are then read one by one)."""
    from oracleagentmemory.core.store.search import _user_vectors

    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    rng = np.random.default_rng(8)
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    _messages(store, rng, "u", "t0", 30)
    scope = ScopeSpec({"user": "u"}, {})
    q1, q2 = np.asarray(_vectors(rng, 2), dtype=np.float32)
    for _ in range(2):  # PostgreSQL: the user read into the cache
        store.search(None, 5, query_vector=q1.tolist(), user_id="u", exact_user_match=True)
        store._vectors.users.wait_filled()
    with store._core.lock:
        hits = store._vectors.branch(q1, 10, ["message"], scope, None, True)()
        scan = store._vectors.scan_rows
        assert scan(q1, hits, 2, ["message"], scope, None, True) is not None
        assert scan(q1.copy(), list(hits), 2, ["message"], scope, None, True) is not None
        assert scan(q2, hits, 2, ["message"], scope, None, True) is None
        assert scan(q1, hits[::-1], 2, ["message"], scope, None, True) is None
        assert scan(q1, hits[:5], 2, ["message"], scope, None, True) is None
        assert scan(q1, hits, 2, ["message", "memory"], scope, None, True) is None
        assert scan(q1, hits, 2, ["message"], scope, {"a": 1}, True) is None
        store._vectors.branch(q2, 10, ["message"], scope, None, True)()
        assert scan(q1, hits, 2, ["message"], scope, None, True) is None


def test_top_rows_are_the_first_distinct_records() -> None:
    """The scan's hits and their rows (``_top_unique_at``): the nearest row of each record,
    the ``k`` nearest records, none filtered out (infinite), as a walk down the rows sorted
    by distance takes them; with records of several rows and filtered rows or without."""
    from oracleagentmemory.core.store.vectors._vector_index import _top_unique_at

    rng = np.random.default_rng(21)
    for _ in range(3000):
        n, k = int(rng.integers(1, 300)), int(rng.integers(1, 60))
        dist = rng.permutation(n).astype(np.float64) / n  # distinct: one order
        if rng.random() < 0.3:
            dist[rng.random(n) < 0.3] = np.inf
        spread = [n, 3 * n, n // 4 + 1][int(rng.integers(0, 3))]
        rids = rng.integers(0, spread, n).astype(np.int64)
        if rng.random() < 0.5:
            rids = rng.permutation(n).astype(np.int64)  # one row a record
        want: dict[int, tuple[float, int]] = {}
        for i in np.argsort(dist, kind="stable").tolist():
            if dist[i] == np.inf or len(want) == k:
                break
            want.setdefault(int(rids[i]), (float(dist[i]), i))
        hits, at = _top_unique_at(dist, rids, k)
        assert hits == [(r, d) for r, (d, _) in want.items()]
        assert at == [i for _, i in want.values()]


def test_conditions_from_an_earlier_scan_apply_the_askers_time() -> None:
    """A search's kept scan answers a later search's keyword conditions (PostgreSQL's user
    cache: another search may not have replaced it yet): a record that expired between the
    two is refused at the later search's time, as the row-by-row check refuses it."""
    from oracleagentmemory.core.store.vectors._vector_index import IndexRow, VectorIndex

    dim = 8
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((40, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = VectorIndex(dim)
    index.add(
        [
            IndexRow(i + 1, vecs[i], "memory", "u0", None, None, True, 100.0 if i == 3 else None)
            for i in range(40)
        ]
    )
    ask = {"record_types": ["memory"], "exact": {"user": "u0"}, "prefer": {}, "valid_only": True}
    index.search(vecs[3], 5, now=50.0, **ask)  # the scan kept, at time 50
    early = index.record_conditions([4, 5], now=50.0, **ask)
    late = index.record_conditions([4, 5], now=150.0, **ask)  # rid 4 expired at 100
    assert early is not None and late is not None
    assert early[0].tolist() == [True, True]
    assert late[0].tolist() == [False, True]

"""HYBRID reads a message with the messages that follow it (``core/store/search/_follow_ups.py``).

The vectors are given, so each record's similarity to the query is known exactly: the query
is axis 0, a record's similarity is its first coordinate. In thread ``t`` the question turn
``m1`` (similarity 0) is followed by its answer ``m2`` (0.9) and by ``m3`` (0); sixty other
records (0.25) fill the vector branch's candidates, so ``m1`` is not among its own best and
can only come back as the message before a hit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search._follow_ups import FOLLOW_UP_WEIGHT, follow_up_rank

from .test_store_contract import DIM, ids

FILLERS = 60


def _vec(sim: float, axis: int) -> list[float]:
    """A unit vector with similarity ``sim`` to axis 0, the rest on ``axis``."""
    v = np.zeros(DIM)
    v[0] = sim
    v[axis] = np.sqrt(1.0 - sim * sim)
    return v.tolist()


def _fill(
    store: Any, *, with_thread: bool = True, metadata: Any = None, fillers: bool = True
) -> None:
    if with_thread:
        store.add(
            ["the question", "the answer", "an aside"],
            record_type="message",
            record_ids=["m1", "m2", "m3"],
            thread_ids="t",
            user_ids="u",
            roles=["user", "assistant", "user"],
            embeddings=[_vec(0.0, 1), _vec(0.9, 2), _vec(0.0, 3)],
            metadata=metadata,
        )
    if not fillers:
        return
    store.add(
        [f"other {i}" for i in range(FILLERS)],
        record_type="message",
        record_ids=[f"x{i}" for i in range(FILLERS)],
        thread_ids=[f"o{i}" for i in range(FILLERS)],
        user_ids="u",
        roles="user",
        embeddings=[_vec(0.25, 4 + i % (DIM - 4)) for i in range(FILLERS)],
        metadata={"keep": True},
    )


def _search(store: Any, **kwargs: Any) -> list[str]:
    return ids(store.search(None, 5, query_vector=_vec(1.0, 1), **kwargs))


def test_a_message_comes_back_with_the_answer_after_it(make_store: Any) -> None:
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    _fill(store)
    got = _search(store)
    # m2: (0.9 + 0.7 * 0) / 1.7 = 0.53; m1: (0 + 0.7 * 0.9) / 1.7 = 0.37; fillers 0.25.
    assert got[:2] == ["m2", "m1"]
    assert "m3" not in got
    vector = make_store(search_strategy=SearchStrategy.VECTOR)
    assert _search(vector)[0] == "m2"
    assert "m1" not in _search(vector)  # VECTOR ranks by each record's own distance


def test_a_follow_up_the_search_cannot_return_does_not_count(make_store: Any) -> None:
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    _fill(store, metadata=[{"keep": True}, {"keep": False}, {"keep": True}])
    assert "m1" not in _search(store, metadata_filter={"keep": True})
    assert _search(store)[:2] == ["m2", "m1"]
    store.update("message", "m2", status=RecordStatus.INVALID)
    assert "m1" not in _search(store, include_invalid_results=False)
    assert _search(store, include_invalid_results=True)[:2] == ["m2", "m1"]


def test_follow_ups_stay_in_their_thread_and_scope(make_store: Any) -> None:
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    _fill(store)
    # Another user's thread whose second message matches: m1's neighbours are its own.
    store.add(
        ["q", "a"],
        record_type="message",
        record_ids=["n1", "n2"],
        thread_ids="t-other",
        user_ids="v",
        roles=["user", "assistant"],
        embeddings=[_vec(0.0, 5), _vec(0.95, 6)],
    )
    got = ids(store.search(None, 5, query_vector=_vec(1.0, 1), user_id="u", exact_user_match=True))
    assert got[:2] == ["m2", "m1"]
    assert not {"n1", "n2"} & set(got)
    got = ids(store.search(None, 5, query_vector=_vec(1.0, 1), user_id="v", exact_user_match=True))
    assert got == ["n2", "n1"]
    # Memories have no thread order: they keep their own similarity.
    store.add(["a memory"], record_type="memory", record_ids="mem", embeddings=[_vec(0.3, 7)])
    # n2 0.95 (no follow-up), m2 0.53, n1 0.39, m1 0.37, mem 0.3, fillers 0.25.
    assert _search(store) == ["n2", "m2", "n1", "m1", "mem"]


def test_follow_up_rank_blends_the_best_follow_up() -> None:
    w = FOLLOW_UP_WEIGHT
    hits = [(2, 0.9), (9, 0.3)]
    sims = {1: 0.0, 3: 0.1, 4: 0.95}
    ranked = follow_up_rank(hits, sims, {1: [2, 3], 2: [3, 4]}, 10)
    assert [rid for rid, _ in ranked] == [2, 1, 9]
    assert ranked[0][1] == pytest.approx((0.9 + w * 0.95) / (1 + w))
    assert ranked[1][1] == pytest.approx((0.0 + w * 0.9) / (1 + w))
    assert ranked[2][1] == pytest.approx(0.3)  # no follow-ups: its own
    assert follow_up_rank(hits, sims, {}, 1) == [(2, 0.9)]
    # A follow-up whose similarity is unknown (not visible) or not finite is skipped; a
    # candidate whose own is not finite goes last.
    assert follow_up_rank([(5, 0.5)], {}, {5: [6]}, 3) == [(5, 0.5)]
    assert follow_up_rank([(5, 0.5)], {6: float("nan")}, {5: [6]}, 3) == [(5, 0.5)]
    nan_first = follow_up_rank([(7, float("nan")), (5, 0.5)], {}, {}, 3)
    assert nan_first[0] == (5, 0.5) and nan_first[1][0] == 7


def test_messages_written_after_the_index_was_built_get_follow_ups(
    make_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The search skips the neighbour read while its index (SQLite's, or PostgreSQL's cache of
    # the user, here on from the first search) has never held a message: once messages
    # arrive, the index caught up by the search must say so.
    from oracleagentmemory.core.store.search import _user_vectors

    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    store.add(
        [f"memory {i}" for i in range(FILLERS)],
        record_type="memory",
        record_ids=[f"x{i}" for i in range(FILLERS)],
        user_ids="u",
        embeddings=[_vec(0.25, 4 + i % (DIM - 4)) for i in range(FILLERS)],
    )

    def search() -> list[str]:
        return ids(
            store.search(None, 5, query_vector=_vec(1.0, 1), user_id="u", exact_user_match=True)
        )

    assert search()[0].startswith("x")
    store._vectors.users.wait_filled()  # PostgreSQL: the user read in after that answer
    assert search()[0].startswith("x")  # PostgreSQL: now from the cache
    _fill(store, with_thread=True, fillers=False)
    assert search()[:2] == ["m2", "m1"]

"""HYBRID's follow-ups read a hit's thread neighbours from the in-process index (#53): the
same messages, positions and similarities as the statement that read them before
(``FollowUps._read``), on SQLite's index and PostgreSQL's user cache, through what moves rows
under the index: messages written after it was built (their positions read when a search
first needs them), a deleted message, an invalidated one, another user's thread, memories carrying a
thread id, a preferred thread."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search._follow_ups import FOLLOW_UPS
from oracleagentmemory.core.store.search._search_sql import ScopeSpec

from ._embedders import HashingEmbedder
from .test_store_contract import DIM


def _vectors(rng: np.random.Generator, n: int) -> list[list[float]]:
    v = rng.standard_normal((n, DIM))
    out: list[list[float]] = (v / np.linalg.norm(v, axis=1, keepdims=True)).tolist()
    return out


def _messages(store: Any, rng: np.random.Generator, user: str, thread: str, n: int) -> None:
    start = getattr(store, "_test_count", 0)
    store._test_count = start + n
    store.add(
        [f"message {start + i}" for i in range(n)],
        record_type="message",
        record_ids=[f"{thread}-{start + i}" for i in range(n)],
        thread_ids=thread,
        user_ids=user,
        roles="user",
        embeddings=_vectors(rng, n),
    )


def _by_rid(found: Any) -> dict[int, tuple[int, float]]:
    """rid -> (seq, best similarity) of a neighbour read (the index's positions are
    ``(thread code << 40) + seq``, the statement's ``(thread, seq)``)."""
    positions, rids, sims = found
    if isinstance(positions, np.ndarray):
        positions = [(None, key & ((1 << 40) - 1)) for key in positions.tolist()]
        rids, sims = rids.tolist(), sims.tolist()
    out: dict[int, tuple[int, float]] = {}
    for (_, seq), rid, sim in zip(positions, rids, sims, strict=True):
        if rid not in out or sim > out[rid][1]:
            out[rid] = (int(seq), sim)
    return out


def threads_searched(
    make_store: Any, monkeypatch: pytest.MonkeyPatch, seed: int
) -> tuple[Any, np.random.Generator, NDArray[np.float32]]:
    """A HYBRID store of user u's two 40-message threads and three memories of t0, searched
    twice (PostgreSQL: the user in the cache): the store, its generator, the query."""
    from oracleagentmemory.core.store.search import _user_vectors

    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    rng = np.random.default_rng(seed)
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    for thread in ("t0", "t1"):
        _messages(store, rng, "u", thread, 40)
    store.add(
        ["a memory of t0"] * 3,
        record_type="memory",
        record_ids=["mem0", "mem1", "mem2"],
        thread_ids="t0",
        user_ids="u",
        embeddings=_vectors(rng, 3),
    )
    q = np.asarray(_vectors(rng, 1)[0], dtype=np.float32)
    store.search(None, 5, query_vector=q.tolist(), user_id="u", exact_user_match=True)
    store._vectors.users.wait_filled()  # PostgreSQL: the user read into the cache
    store.search(None, 5, query_vector=q.tolist(), user_id="u", exact_user_match=True)
    return store, rng, q


def test_in_process_neighbours_are_the_statements(
    make_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, rng, q = threads_searched(make_store, monkeypatch, 53)
    # Written after the index was built, then moved under it.
    _messages(store, rng, "u", "t0", 12)
    _messages(store, rng, "v", "t2", 5)
    store.delete("message", "t0-5")
    store.update("message", "t0-9", status=RecordStatus.INVALID)

    types = ["message", "memory"]
    scopes = [
        ScopeSpec({"user": "u"}, {}),
        ScopeSpec({"user": "u"}, {"thread": "t1"}),
    ]
    if store._core.dialect.native_vector_search is False:
        scopes.append(ScopeSpec({}, {"user": "u"}))  # SQLite's index holds every row
    in_process = 0
    for scope in scopes:
        for valid_only in (True, False):
            for query in (q, *np.asarray(_vectors(rng, 3), dtype=np.float32)):
                with store._core.lock:
                    hits = store._vectors.branch(query, 50, types, scope, None, valid_only)()
                    rids = [rid for rid, _ in hits]
                    got = store._vectors.neighbours(
                        query, rids, FOLLOW_UPS, FOLLOW_UPS, types, scope, None, valid_only
                    )
                    want = store._search._follow_ups._read(
                        query, rids, types, scope, None, valid_only
                    )
                assert got is not None, scope
                in_process += 1
                mine, theirs = _by_rid(got), _by_rid(want)
                assert mine.keys() == theirs.keys()
                assert len(theirs) > 20
                for rid, (seq, sim) in theirs.items():
                    assert mine[rid][0] == seq
                    assert math.isclose(mine[rid][1], sim, rel_tol=0, abs_tol=1e-6)
    assert in_process == 2 * 4 * len(scopes)


def test_a_metadata_filter_reads_the_neighbours_in_sql(make_store: Any) -> None:
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    rng = np.random.default_rng(5)
    _messages(store, rng, "u", "t0", 10)
    scope = ScopeSpec({"user": "u"}, {})
    q = np.asarray(_vectors(rng, 1)[0], dtype=np.float32)
    with store._core.lock:
        assert store._vectors.neighbours(q, [1], 2, 2, ["message"], scope, {"a": 1}, True) is None


def test_a_snapshot_saved_before_thread_positions_still_gives_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index snapshot without the ``seq`` column (saved before #53's positions) loads with
    every position unknown; the first search that needs some reads them."""
    from oracleagentmemory.core.store.vectors import _index_keeper

    monkeypatch.setattr(_index_keeper, "SNAPSHOT_MIN_ROWS", 10)
    path = tmp_path / "m.db"
    rng = np.random.default_rng(9)

    def open_store() -> SQLiteMemoryStore:
        return SQLiteMemoryStore(
            HashingEmbedder(),
            str(path),
            schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
            search_strategy=SearchStrategy.HYBRID,
        )

    store = open_store()
    _messages(store, rng, "u", "t0", 30)
    q = np.asarray(_vectors(rng, 1)[0], dtype=np.float32)
    store.search(None, 5, query_vector=q.tolist(), user_id="u", exact_user_match=True)
    store.close()
    snapshot = Path(str(path) + "-oam-index") / "oam"
    token = json.loads((snapshot / "index.json").read_text())["token"]
    (snapshot / f"seq-{token}.npy").unlink()

    store = open_store()
    try:
        scope = ScopeSpec({"user": "u"}, {})
        with store._core.lock:
            hits = store._vectors.branch(q, 10, ["message"], scope, None, True)()
            assert store._keeper._saved_stamp is not None  # the snapshot, not a rebuild
            rids = [rid for rid, _ in hits]
            got = store._vectors.neighbours(q, rids, 2, 2, ["message"], scope, None, True)
            want = store._search._follow_ups._read(q, rids, ["message"], scope, None, True)
        assert got is not None
        mine, theirs = _by_rid(got), _by_rid(want)
        assert len(theirs) > 10
        assert {rid: seq for rid, (seq, _) in mine.items()} == {
            rid: seq for rid, (seq, _) in theirs.items()
        }
    finally:
        store.close()

"""The in-process vector index against a brute-force model, under interleaved appends,
removals, clustering and scoped searches (its caches are kept up incrementally)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from oracleagentmemory.core.store.vectors._vector_index import IndexRow, VectorIndex

DIM = 8
USERS = ["u0", "u1", "u2", None]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 80), st.sampled_from(USERS)),
        st.tuples(st.just("bulk"), st.integers(65, 320), st.sampled_from(USERS)),
        st.tuples(st.just("scatter"), st.integers(17, 40), st.none()),
        st.tuples(st.just("remove"), st.integers(0, 200), st.none()),
        st.tuples(st.just("cluster"), st.none(), st.none()),
        st.tuples(st.just("index"), st.none(), st.sampled_from(USERS)),
        st.tuples(st.just("search"), st.integers(0, 10**6), st.sampled_from(USERS)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_index_matches_brute_force(steps: list[tuple[str, int | None, str | None]]) -> None:
    index = VectorIndex(DIM)
    model: dict[int, tuple[np.ndarray, str | None]] = {}
    next_rid = 1
    for op, arg, user in steps:
        if op in ("add", "bulk"):
            count = 1 if op == "add" else int(arg or 0)
            rows = []
            for _ in range(count):
                rng = np.random.default_rng(next_rid)
                vec = rng.standard_normal(DIM).astype(np.float32)
                vec /= np.linalg.norm(vec)
                rows.append(IndexRow(next_rid, vec, "memory", user, None, None, True, None))
                model[next_rid] = (vec, user)
                next_rid += 1
            index.add(rows)
        elif op == "scatter":  # single rows alternating users: many short runs per user
            for i in range(int(arg or 0)):
                rng = np.random.default_rng(next_rid)
                vec = rng.standard_normal(DIM).astype(np.float32)
                vec /= np.linalg.norm(vec)
                owner = USERS[i % len(USERS)]
                index.add([IndexRow(next_rid, vec, "memory", owner, None, None, True, None)])
                model[next_rid] = (vec, owner)
                next_rid += 1
        elif op == "remove":
            gone = [rid for rid in model if rid % 7 == (arg or 0) % 7][:3]
            index.remove(gone)
            for rid in gone:
                del model[rid]
        elif op == "cluster":
            index.cluster()
        elif op == "index":  # the posting lists a fill of PostgreSQL's user cache makes
            index.index_scopes("user", [] if user is None else [user, "nobody"])
        else:
            q = np.random.default_rng(arg).standard_normal(DIM).astype(np.float32)
            q /= np.linalg.norm(q)
            exact = {} if user is None else {"user": user}
            got = index.search(
                q, 5, record_types=["memory"], exact=exact, prefer={}, valid_only=False, now=0.0
            )
            pool = [
                (rid, 1.0 - float(v @ q))
                for rid, (v, u) in model.items()
                if user is None or u == user
            ]
            want = sorted(pool, key=lambda x: x[1])[:5]
            assert [d for _, d in got] == pytest.approx([d for _, d in want], abs=1e-4)
            assert {rid for rid, _ in got} <= set(model)
    assert len(index) == len(model)


def test_a_clustered_scope_with_scattered_rows_is_read_exactly() -> None:
    """Most of the user's rows in one long run, twenty more scattered after it: the search
    reads the run through a view and gathers the rest."""
    index = VectorIndex(DIM)
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((340, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    owners = ["u0"] * 300 + ["u0", "u1"] * 20
    index.add(
        [IndexRow(i + 1, vecs[i], "memory", owners[i], None, None, True, None) for i in range(300)]
    )
    for i in range(300, 340):
        index.add([IndexRow(i + 1, vecs[i], "memory", owners[i], None, None, True, None)])
    q = vecs[333] + vecs[5]
    q /= np.linalg.norm(q)
    got = index.search(
        q, 10, record_types=["memory"], exact={"user": "u0"}, prefer={}, valid_only=False, now=0.0
    )
    mine = [i for i in range(340) if owners[i] == "u0"]
    want = sorted(((i + 1, 1.0 - float(vecs[i] @ q)) for i in mine), key=lambda x: x[1])[:10]
    assert [rid for rid, _ in got] == [rid for rid, _ in want]
    assert [d for _, d in got] == pytest.approx([d for _, d in want], abs=1e-5)


def _rows(start: int, count: int, user: str) -> list[IndexRow]:
    rng = np.random.default_rng(start)
    vecs = rng.standard_normal((count, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [
        IndexRow(start + i, vecs[i], "memory", user, None, None, True, None) for i in range(count)
    ]


def test_scopes_indexed_at_once_match_the_lazy_scan_and_survive_others_bulk_appends() -> None:
    """``index_scopes`` caches what a search's scan would find; a bulk append of another
    user keeps a user's cached posting list (and its contiguous copy), one of the same user
    drops it."""
    index = VectorIndex(DIM)
    rid = 1
    for _ in range(20):  # interleaved short runs: a search reads a user through a copy
        for user in ("u0", "u1", "u2"):
            index.add(_rows(rid, 15, user))
            rid += 15
    index.index_scopes("user", ["u0", "u1", "unknown"])
    code = {u: index._codes["user"][u] for u in ("u0", "u1", "u2")}
    indexed = {u: index._posting_cache[(0, code[u])].copy() for u in ("u0", "u1")}
    assert (0, code["u2"]) not in index._posting_cache
    index._posting_cache.clear()
    for user in ("u0", "u1"):
        assert np.array_equal(indexed[user], index._posting(0, code[user]))
        assert indexed[user].dtype == np.int64 and indexed[user].size == 300
    q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    for user in ("u0", "u1"):  # makes u0's and u1's contiguous copies
        index.search(
            q, 5, record_types=["memory"], exact={"user": user}, prefer={}, valid_only=False, now=0
        )
    assert {(0, code["u0"]), (0, code["u1"])} <= set(index._blocks)
    index.add(_rows(rid, 100, "u2"))  # a bulk append of u2 alone
    rid += 100
    assert {(0, code["u0"]), (0, code["u1"])} <= set(index._posting_cache)
    assert {(0, code["u0"]), (0, code["u1"])} <= set(index._blocks)
    index.add(_rows(rid, 100, "u1"))  # of u1: its list and copy go, u0's stay
    assert (0, code["u1"]) not in index._posting_cache
    assert (0, code["u1"]) not in index._blocks
    assert (0, code["u0"]) in index._posting_cache and (0, code["u0"]) in index._blocks
    got = index.search(
        q, 400, record_types=["memory"], exact={"user": "u1"}, prefer={}, valid_only=False, now=0
    )
    assert len(got) == 400

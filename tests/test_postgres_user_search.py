"""PostgreSQL's user-scoped vector search: a user's chunks are ranked in their covering index
(user, type), then the search's other conditions are checked on the best of them. The
answers must be those of ranking every row that passes, on SQLite too, whatever the
conditions keep; and a store of schema version 8 gains the chunks' user and type."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core import PostgresMemoryStore, SQLiteMemoryStore
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION
from oracleagentmemory.core.store.search import _user_vectors, _vector_branch

from ._pg_helpers import needs_postgres, unit_vectors

pytestmark = needs_postgres

DIM = 16


def _vectors(n: int, seed: int) -> np.ndarray:
    return unit_vectors(n, seed, DIM)


def _fill(store: Any, n: int) -> None:
    """Memories of four users (and none), every tenth one long enough for several chunks,
    some expired, some invalid, with metadata a filter can keep few of; messages of the
    same users, which a memory search must not return."""
    vecs = _vectors(n, 1)
    store.add(
        [f"memory {i}" for i in range(n)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[None if i % 9 == 0 else f"u{i % 4}" for i in range(n)],
        agent_ids=[f"a{i % 3}" for i in range(n)],
        embeddings=list(vecs),
        metadata=[{"rare": i % 37 == 0, "n": i, "tags": [f"g{i % 50}"]} for i in range(n)],
        timestamps=["2001-01-01T00:00:00+00:00" if i % 11 == 0 else None for i in range(n)],
        ttl_days=[1 if i % 11 == 0 else None for i in range(n)],
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
        statuses=[RecordStatus.INVALID if i % 13 == 0 else RecordStatus.VALID for i in range(n)],
    )
    store.add(
        [f"message {i}" for i in range(n // 2)],
        record_type="message",
        record_ids=[f"x{i}" for i in range(n // 2)],
        thread_ids=[f"t{i % 4}" for i in range(n // 2)],
        user_ids=[f"u{i % 4}" for i in range(n // 2)],
        roles="user",
        embeddings=list(_vectors(n // 2, 2)),
    )


def _near(n: int, seed: int) -> np.ndarray:
    """Unit vectors within a narrow cone: their distances to its axis differ by less than
    one preference penalty, so a preferred dimension reorders them."""
    rng = np.random.default_rng(seed)
    v = np.tile(_vectors(1, 77), (n, 1)) + 0.08 * rng.normal(size=(n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def engines(pg_url: Callable[[str], str], tmp_path: Path) -> Any:
    stores = [
        SQLiteMemoryStore(
            None, str(tmp_path / "u.db"), vector_dim=DIM, schema_policy="create_if_necessary"
        ),
        PostgresMemoryStore(None, pg_url("u"), vector_dim=DIM, schema_policy="create_if_necessary"),
    ]
    for store in stores:
        _fill(store, 600)
        store.add(
            [f"close {i}" for i in range(300)],
            record_type="memory",
            record_ids=[f"p{i}" for i in range(300)],
            user_ids="p",
            agent_ids=[f"a{i % 10}" for i in range(300)],
            embeddings=list(_near(300, 8)),
        )
    yield stores
    for store in stores:
        store.close()


def _same(stores: list[Any], q: np.ndarray, **kwargs: Any) -> list[str]:
    k = kwargs.pop("k", 10)
    got = [s.search(None, k, query_vector=q.tolist(), **kwargs) for s in stores]
    ids = [[r.id for r, _ in hits] for hits in got]
    assert ids[0] == ids[1], kwargs
    np.testing.assert_allclose([d for _, d in got[0]], [d for _, d in got[1]], atol=1e-5)
    return ids[1]


CASES: list[dict[str, Any]] = [
    {"user_id": "u1", "exact_user_match": True},
    {"user_id": None, "exact_user_match": True},
    {"user_id": "u2", "exact_user_match": True, "include_invalid_results": False},
    {"user_id": "u3", "exact_user_match": True, "agent_id": "a1", "exact_agent_match": True},
    {"user_id": "u1", "exact_user_match": True, "metadata_filter": {"rare": True}},
    {"user_id": "u2", "exact_user_match": True, "metadata_filter": {"n": 598}},
    {"user_id": "u1", "exact_user_match": True, "record_types": {"memory"}},
    {"user_id": "u0", "exact_user_match": True, "record_types": {"message"}, "k": 40},
    {"user_id": "nobody", "exact_user_match": True},
    # Preferred dimensions (as thread.search prefers its thread): a penalty for the others.
    {"user_id": "u1", "exact_user_match": True, "agent_id": "a2"},
    {"user_id": "u0", "exact_user_match": True, "thread_id": "t0", "record_types": {"message"}},
    {
        "user_id": "u3",
        "exact_user_match": True,
        "agent_id": "a0",
        "metadata_filter": {"rare": True},
    },
    {"user_id": "u2", "exact_user_match": True, "agent_id": "a1", "thread_id": "t2", "k": 30},
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_user_scoped_answers_match_sqlite(engines: list[Any], case: dict[str, Any]) -> None:
    for q in _vectors(6, 9):
        ids = _same(engines, q, **dict(case))
        if case["user_id"] == "nobody":
            assert ids == []
    # Expired (every 11th) and other users' records never come back.
    hits = engines[1].search(None, 200, query_vector=_vectors(1, 3)[0].tolist(), user_id="u1",
                             exact_user_match=True)  # fmt: skip
    assert hits and all(r.user_id == "u1" for r, _ in hits)
    assert all(int(r.id[1:]) % 11 for r, _ in hits if r.id.startswith("m"))


def test_user_scoped_answers_from_the_in_process_cache_match_sqlite(
    engines: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same cases ranked from PostgreSQL's cache of users' vectors (``_user_vectors``),
    every user cached from their first search."""
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    for case in CASES:
        for q in _vectors(3, 9):
            _same(engines, q, **dict(case))
    users = engines[1]._vectors.users
    users.wait_filled()
    assert users.index is not None and {"u0", "u1", "u2", "u3"} <= users._users


def test_preferences_far_down_the_ranking_widen_until_final(
    engines: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A preferred agent's records rank first however far they are: more chunks are read
    until no unread one could beat the k-th result (then, past the cap, every row)."""
    scope = {"user_id": "p", "exact_user_match": True, "agent_id": "a3"}
    for q in [*_near(4, 9), *_vectors(2, 21)]:
        for k in (5, 10):
            want = _same(engines, q, k=k, **scope)
            assert len(want) == k
            monkeypatch.setattr(_vector_branch, "NATIVE_USER_FETCH_MAX", 40)
            assert _same(engines, q, k=k, **scope) == want
            monkeypatch.undo()
    near = _same(engines, _near(1, 9)[0], k=10, **scope)
    assert {int(i[1:]) % 10 for i in near} == {3}  # a3 holds 30 of them: all ten are a3's


def test_a_filter_that_keeps_almost_nothing_widens_then_ranks_the_passing_rows(
    engines: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few of a user's best chunks pass: more are ranked, then (at the cap) the rows that
    pass are ranked directly. Both give the exact answer."""
    q = _vectors(1, 4)[0]
    flt = {"tags": {"$array_contains_any": ["g37"]}}  # 12 memories, of which u1 has 6
    want = _same(engines, q, user_id="u1", exact_user_match=True, metadata_filter=flt)
    assert want and {int(i[1:]) % 50 for i in want} == {37}
    monkeypatch.setattr(_vector_branch, "NATIVE_USER_FETCH_MAX", 40)
    assert _same(engines, q, user_id="u1", exact_user_match=True, metadata_filter=flt) == want


def test_chunks_carry_their_records_user_and_type(engines: list[Any]) -> None:
    d = engines[1]._dialect
    t = d.tables
    wrong = d.execute(
        f"SELECT COUNT(*) FROM {t.chunks} c JOIN {t.records} r ON r.rid = c.rid WHERE"
        " c.user_id IS DISTINCT FROM r.user_id OR c.record_type IS DISTINCT FROM r.record_type"
    )
    assert wrong == [(0,)]
    engines[1].update("memory", "m5", content="a new text for memory five", embedding=[1.0] * DIM)
    assert d.execute(
        f"SELECT DISTINCT c.user_id, c.record_type FROM {t.chunks} c JOIN {t.records} r"
        " ON r.rid = c.rid WHERE r.id = 'm5'"
    ) == [("u1", "memory")]


def test_a_version_8_store_gains_the_chunks_user_and_type(pg_url: Callable[[str], str]) -> None:
    url = pg_url("v8")
    store = PostgresMemoryStore(None, url, vector_dim=DIM, schema_policy="create_if_necessary")
    _fill(store, 60)
    t = store._dialect.tables
    q = _vectors(1, 5)[0].tolist()
    before = [r.id for r, _ in store.search(None, 5, query_vector=q, user_id="u2",
                                            exact_user_match=True)]  # fmt: skip
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX oam_chunks_user")
        conn.execute(f"ALTER TABLE {t.chunks} DROP COLUMN user_id, DROP COLUMN record_type")
        conn.execute(f"UPDATE {t.meta} SET value = '8' WHERE key = 'schema_version'")
    store = PostgresMemoryStore(None, url, vector_dim=DIM, schema_policy="create_if_necessary")
    try:
        d = store._dialect
        version = d.execute(f"SELECT value FROM {t.meta} WHERE key = 'schema_version'")
        assert version == [(str(SCHEMA_VERSION),)]
        assert d.execute(f"SELECT COUNT(*) FROM {t.chunks} WHERE record_type IS NULL") == [(0,)]
        assert d.execute(
            "SELECT 1 FROM pg_indexes WHERE indexname = 'oam_chunks_user'"
            " AND schemaname = current_schema()"
        ) == [(1,)]
        after = store.search(None, 5, query_vector=q, user_id="u2", exact_user_match=True)
        assert [r.id for r, _ in after] == before
    finally:
        store.close()

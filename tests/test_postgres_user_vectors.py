"""PostgreSQL's in-process cache of users' vectors (``_user_vectors``) and the change log it
reads (``_postgres_changes``): a store that ranks a user in memory answers as if it ranked
in SQL, after any write any other store (process) commits, in whatever order those commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core import PostgresMemoryStore
from oracleagentmemory.core.store.engines.postgres import _postgres_changes
from oracleagentmemory.core.store.search import _user_vectors

from ._embedders import HashingEmbedder
from ._pg_helpers import needs_postgres, unit_vectors

pytestmark = needs_postgres

DIM = 16


def _vectors(n: int, seed: int) -> np.ndarray:
    return unit_vectors(n, seed, DIM)


def _open(url: str) -> PostgresMemoryStore:
    return PostgresMemoryStore(None, url, vector_dim=DIM, schema_policy="create_if_necessary")


@pytest.fixture
def pair(pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Two stores on one database (two processes' worth of caches), 300 memories of u1 and
    u2; the cache takes every user from their first search."""
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    url = pg_url("uv")
    a, b = _open(url), _open(url)
    a.add(
        [f"memory {i}" for i in range(300)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(300)],
        user_ids=[f"u{1 + i % 2}" for i in range(300)],
        embeddings=list(_vectors(300, 1)),
        metadata=[{"g": i % 7} for i in range(300)],
    )
    yield a, b, url
    a.close()
    b.close()


def _ids(store: Any, q: np.ndarray, k: int = 10, **kwargs: Any) -> list[str]:
    kwargs.setdefault("user_id", "u1")
    hits = store.search(None, k, query_vector=q.tolist(), exact_user_match=True, **kwargs)
    return [r.id for r, _ in hits]


def _in_sql(store: Any, q: np.ndarray, **kwargs: Any) -> list[str]:
    """The answer of ranking in SQL (the cache set aside for one search)."""
    users = store._vectors.users
    saved, users.for_user = users.for_user, lambda user, **kw: None
    try:
        return _ids(store, q, **kwargs)
    finally:
        users.for_user = saved


def _cached(store: Any, user: str = "u1") -> bool:
    users = store._vectors.users
    users.wait_filled()  # a user is read in after the answer, on the cache's thread
    return users.index is not None and user in users._users


def test_the_cache_answers_what_sql_answers(pair: Any) -> None:
    a, _, _ = pair
    for q in _vectors(5, 2):
        want = _in_sql(a, q)
        assert _ids(a, q) == want and len(want) == 10
        assert _ids(a, q, user_id="u2") == _in_sql(a, q, user_id="u2")
        flt = {"g": 3}
        assert _ids(a, q, metadata_filter=flt) == _in_sql(a, q, metadata_filter=flt)
        assert _ids(a, q, agent_id="none", exact_agent_match=True) == []
        valid = {"include_invalid_results": False}
        assert _ids(a, q, **valid) == _in_sql(a, q, **valid)
    assert _cached(a) and _cached(a, "u2")


def test_writes_of_another_store_are_seen_at_once(pair: Any) -> None:
    a, b, _ = pair
    q = _vectors(1, 3)[0]
    _ids(a, q)
    assert _cached(a)
    # Added: a record right at the query, for u1 and for a user not cached.
    b.add(["new"], record_type="memory", record_ids=["n1"], user_ids="u1", embeddings=[q])
    b.add(["other"], record_type="memory", record_ids=["n2"], user_ids="u9", embeddings=[q])
    got = _ids(a, q)
    assert got[0] == "n1" and "n2" not in got
    assert got == _in_sql(a, q)
    # Invalidated, then deleted.
    b.update("memory", "n1", status=RecordStatus.INVALID)
    assert "n1" not in _ids(a, q, include_invalid_results=False)
    assert "n1" in _ids(a, q)  # the store's default: invalid records too
    b.delete("memory", "n1")
    assert "n1" not in _ids(a, q)
    # Metadata changed: a cached filter must not answer from before the change.
    flt = {"flag": True}
    assert _ids(a, q, metadata_filter=flt) == []
    second = _ids(a, q)[1]
    b.update("memory", second, metadata={"flag": True})
    assert _ids(a, q, metadata_filter=flt) == [second]
    # A new vector for a cached record moves it.
    far = _ids(a, q, k=300)[-1]
    b.update("memory", far, content="moved", embedding=q.tolist())
    assert _ids(a, q)[0] == far
    assert _ids(a, q) == _in_sql(a, q)
    assert _cached(a)


def test_a_commit_after_the_cache_snapshot_is_never_missed(pair: Any) -> None:
    """A write that began before the cache's snapshot and commits after it (a higher xid
    committing first, a lower one later) is still caught up on."""
    a, b, url = pair
    q = _vectors(1, 4)[0]
    t = a._dialect.tables
    target = _ids(a, q)[0]
    rid = int(a._dialect.execute(f"SELECT rid FROM {t.records} WHERE id = ?", [target])[0][0])
    with psycopg.connect(url) as slow:
        # The slow writer moves the best record's vector far away, but waits to commit.
        far = "[" + ",".join(str(float(x)) for x in -q) + "]"
        slow.execute(f"UPDATE {t.chunks} SET vector = %s::vector WHERE rid = %s", [far, rid])
        slow.execute(f"INSERT INTO {t.changes} (rids) VALUES (%s)", [[rid]])
        # Meanwhile a later transaction commits and the cache catches up past it.
        b.add(["later"], record_type="memory", record_ids=["l1"], user_ids="u1",
              embeddings=[_vectors(1, 40)[0]])  # fmt: skip
        assert _ids(a, q)[0] == target
        slow.commit()
    assert target not in _ids(a, q)
    assert _ids(a, q) == _in_sql(a, q)


def test_a_log_that_cannot_tell_drops_the_cache(pair: Any) -> None:
    a, b, _ = pair
    q = _vectors(1, 5)[0]
    _ids(a, q)
    assert _cached(a)
    index = a._vectors.users.index
    # Pruned past the cache's snapshot: rebuilt, and still right.
    d = a._dialect
    d.execute(
        f"INSERT INTO {d.tables.meta} (key, value) VALUES (?, ?)",
        [_postgres_changes.FLOOR_KEY, str(2**40)],
    )
    b.add(["x"], record_type="memory", record_ids=["x1"], user_ids="u1", embeddings=[q])
    assert _ids(a, q)[0] == "x1"
    assert a._vectors.users.index is not index
    d.execute(f"DELETE FROM {d.tables.meta} WHERE key = ?", [_postgres_changes.FLOOR_KEY])
    # A write that touched every record (a NULL row): dropped too.
    _ids(a, q)
    assert _cached(a)
    index = a._vectors.users.index
    b._dialect.execute(f"INSERT INTO {d.tables.changes} (rids) VALUES (NULL)")
    assert _ids(a, q) == _in_sql(a, q)
    assert a._vectors.users.index is not index


def test_every_write_logs_what_it_touched(pair: Any) -> None:
    a, _, _ = pair
    d = a._dialect
    t = d.tables

    def logged() -> int:
        return int(d.execute(f"SELECT COUNT(*) FROM {t.changes}")[0][0])

    before = logged()
    a.add(["y"], record_type="memory", record_ids=["y1"], user_ids="u1", embeddings=[[1.0] * DIM])
    a.update("memory", "y1", metadata={"k": 1})
    a.delete("memory", "y1")
    assert logged() == before + 3
    rids = [row[0] for row in d.execute(f"SELECT rids FROM {t.changes} ORDER BY xid")[-3:]]
    assert rids[0] == rids[1] == rids[2] and len(rids[0]) == 1
    with pytest.raises(ValueError):  # a failed write logs nothing
        a.add(["z"], record_type="memory", record_ids=["m1"], user_ids="u1",
              embeddings=[[1.0] * DIM])  # fmt: skip
    assert logged() == before + 3


def test_pruning_keeps_recent_rows_and_raises_the_floor(
    pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _, _ = pair
    d = a._dialect
    t = d.tables
    d.execute(f"INSERT INTO {t.changes} (xid, rids) VALUES ('3'::xid8, '{{1}}')")
    count = int(d.execute(f"SELECT COUNT(*) FROM {t.changes}")[0][0])
    with d.transaction():  # transaction ids here are far below KEEP_XIDS: nothing goes
        d.execute(_postgres_changes.prune_sql(t.changes, t.meta))
    assert int(d.execute(f"SELECT COUNT(*) FROM {t.changes}")[0][0]) == count
    now = int(d.execute("SELECT pg_current_xact_id()::text::bigint")[0][0])
    monkeypatch.setattr(_postgres_changes, "KEEP_XIDS", now - 10)
    with d.transaction():
        d.execute(_postgres_changes.prune_sql(t.changes, t.meta))
    assert int(d.execute(f"SELECT COUNT(*) FROM {t.changes}")[0][0]) == count - 1
    floor = d.execute(f"SELECT value FROM {t.meta} WHERE key = ?", [_postgres_changes.FLOOR_KEY])
    assert floor and int(floor[0][0]) > 3
    low = d.execute(f"SELECT MIN(xid::text::bigint) FROM {t.changes}")[0][0]
    assert int(low) >= int(floor[0][0])  # what is kept lies above the floor


def test_a_user_too_small_or_searched_once_is_ranked_in_sql(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _open(pg_url("small"))
    try:
        store.add(["a", "b"], record_type="memory", user_ids="s",
                  embeddings=list(_vectors(2, 6)))  # fmt: skip
        q = _vectors(1, 7)[0]
        for _ in range(3):
            assert len(_ids(store, q, user_id="s")) == 2
        assert store._vectors.users.index is None  # two chunks: below MIN_ROWS
        monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
        store._vectors.users.drop()
        _ids(store, q, user_id="s")
        assert store._vectors.users.index is None  # one search: not yet
        _ids(store, q, user_id="s")
        assert _cached(store, "s")
    finally:
        store.close()


def test_a_full_cache_keeps_its_users_until_they_idle(
    pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget of two users: a third is ranked in SQL (the same answers) while the two keep
    being searched, and takes the place of the one idle longest once they have idled; the
    cache never starts again empty to take a user in."""
    a, b, _url = pair
    a.add([f"u3 memory {i}" for i in range(150)], record_type="memory", user_ids="u3",
          embeddings=list(_vectors(150, 10)))  # fmt: skip
    monkeypatch.setattr(_user_vectors, "MAX_BYTES", 300 * 4 * DIM)
    q = _vectors(1, 9)[0]
    want = {u: _in_sql(a, q, user_id=u) for u in ("u1", "u2", "u3")}
    assert _ids(a, q, user_id="u1") == want["u1"]
    assert _ids(a, q, user_id="u2") == want["u2"]
    users = a._vectors.users
    assert _cached(a, "u1") and _cached(a, "u2")
    index = users.index
    for _ in range(3):
        assert _ids(a, q, user_id="u3") == want["u3"]
        assert not _cached(a, "u3") and users.index is index
    assert _ids(a, q, user_id="u2") == want["u2"]  # u2 was searched last
    monkeypatch.setattr(_user_vectors, "IDLE_S", 0.0)
    assert _ids(a, q, user_id="u3") == want["u3"]
    assert _cached(a, "u3") and _cached(a, "u2") and not _cached(a, "u1")
    assert users.index is index and len(index) == 300
    b.add(["new"], record_type="memory", record_ids="n1", user_ids="u1",
          embeddings=[q])  # fmt: skip
    assert _ids(a, q, user_id="u1")[0] == "n1"  # the user who left is ranked afresh
    assert _ids(a, q, user_id="u3") == want["u3"]


WORDS = ["river", "mountain", "coffee", "violin", "garden", "rocket", "naïve", "straße", "東京"]


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)))) for _ in range(n)]


@pytest.fixture
def keyword_pair(pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Two HYBRID stores on one database, 300 short texts of u1 and u2 (some long enough
    for several chunks); every user cached from their first search."""
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    url = pg_url("kwc")
    stores = [
        PostgresMemoryStore(
            HashingEmbedder(DIM),
            url,
            vector_dim=DIM,
            schema_policy="create_if_necessary",
            search_strategy=s,
        )
        for s in ("KEYWORD", "HYBRID", "KEYWORD")
    ]
    texts = _texts(300, 1)
    texts[7] = " ".join(["coffee garden"] * 400)  # several chunks
    stores[0].add(
        texts,
        record_type="memory",
        record_ids=[f"m{i}" for i in range(300)],
        user_ids=[f"u{1 + i % 2}" for i in range(300)],
    )
    yield stores
    for s in stores:
        s.close()


def _text_hits(store: Any, query: str, **kwargs: Any) -> list[tuple[str, float]]:
    kwargs.setdefault("user_id", "u1")
    hits = store.search(query, 10, exact_user_match=True, **kwargs)
    return [(r.id, d) for r, d in hits]


def _text_in_sql(store: Any, query: str, **kwargs: Any) -> list[tuple[str, float]]:
    users = store._vectors.users
    saved = users.words_for, users.for_user
    users.words_for = users.for_user = lambda user, **kw: None
    try:
        return _text_hits(store, query, **kwargs)
    finally:
        users.words_for, users.for_user = saved


def _close(got: list[tuple[str, float]], want: list[tuple[str, float]], atol: float) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    np.testing.assert_allclose([d for _, d in got], [d for _, d in want], atol=atol)


QUERIES = ["coffee", "river mountain", "naïve straße", "東京 violin rocket", "garden coffee"]


def test_keyword_scores_from_the_cache_match_the_servers(keyword_pair: Any) -> None:
    kw, hybrid, other = keyword_pair
    # BM25 in float64 on both sides; HYBRID's vector distances are float32 in process.
    for store, atol in ((kw, 1e-12), (hybrid, 1e-6)):
        for query in QUERIES:
            q_sql = _text_in_sql(store, query)
            assert q_sql, query
            _close(_text_hits(store, query), q_sql, atol)
            u2 = _text_in_sql(store, query, user_id="u2")
            _close(_text_hits(store, query, user_id="u2"), u2, atol)
        store._vectors.users.wait_filled()
        assert store._vectors.users.words.has("u1")
    # Another store's writes: new rows, a new text, a deletion.
    other.add(["coffee coffee coffee"], record_type="memory", record_ids=["c1"], user_ids="u1")
    other.update("memory", "m2", content="violin violin violin violin")
    other.delete("memory", "m4")
    for store, atol in ((kw, 1e-12), (hybrid, 1e-6)):
        got = _text_hits(store, "coffee")
        assert got[0][0] == "c1"
        _close(got, _text_in_sql(store, "coffee"), atol)
        assert _text_hits(store, "violin")[0][0] == "m2"
        _close(_text_hits(store, "violin"), _text_in_sql(store, "violin"), atol)
        assert all(i != "m4" for q in QUERIES for i, _ in _text_hits(store, q))


def test_a_search_catches_up_once_for_both_branches(keyword_pair: Any) -> None:
    _, hybrid, _ = keyword_pair
    _text_hits(hybrid, "coffee")
    hybrid._vectors.users.wait_filled()  # u1 read in after that answer
    ran: list[str] = []
    d = hybrid._dialect
    real = d.execute

    def counted(sql: str, params: Any = ()) -> Any:
        ran.append(sql)
        return real(sql, params)

    d.execute = counted
    _text_hits(hybrid, "garden river")
    assert sum("pg_current_snapshot" in sql for sql in ran) == 1, ran


def test_a_store_made_again_under_the_same_name_is_read_afresh(pair: Any) -> None:
    a, _, url = pair
    q = _vectors(1, 8)[0]
    assert _ids(a, q)
    again = PostgresMemoryStore(None, url, vector_dim=DIM, schema_policy="recreate")
    try:
        # The same record numbers again, other vectors: a cache of the old store would rank
        # them by the old ones.
        again.add([f"fresh {i}" for i in range(60)], record_type="memory",
                  record_ids=[f"f{i}" for i in range(60)], user_ids="u1",
                  embeddings=list(_vectors(60, 9)))  # fmt: skip
        got = _ids(a, q)
        assert got == _in_sql(a, q) and len(got) == 10 and got[0].startswith("f")
    finally:
        again.close()


def test_vectors_read_in_binary_are_the_stored_floats(pair: Any) -> None:
    """The cache reads vectors as ``vector_send``'s bytes: the same float32s as their text."""
    a = pair[0]
    d = a._dialect
    t = d.tables
    rows = d.execute(f"SELECT {d.vector_read_sql('vector')}, vector FROM {t.chunks} ORDER BY cid")
    assert rows and isinstance(rows[0][0], bytes)
    binary = d.vectors_from_db([r[0] for r in rows], DIM)
    text = d.vectors_from_db([r[1] for r in rows], DIM)
    assert binary.dtype == np.float32 and binary.shape == (len(rows), DIM)
    np.testing.assert_array_equal(binary, text)
    with pytest.raises(ValueError, match="dimensions"):
        d.vectors_from_db([r[0] for r in rows], DIM + 1)

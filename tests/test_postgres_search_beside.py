"""PostgreSQL: a user's search ranked in SQL, made cheaper (issue #54).

A hybrid search of a user not in the in-process cache ranks its vector branch on the
branch thread, on a connection of its own, while its keyword statement runs on the
caller's; the answer is the one the same search gives ranked on one thread. A ranking over
messages and every memory type reads the user's range of the (user, type) index once
instead of descending it once per type. Both engines' answers are compared.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from oracleagentmemory.core import PostgresMemoryStore, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search import _user_vectors
from oracleagentmemory.core.store.search._search_sql import chunk_types_sql

from ._embedders import HashingEmbedder
from ._pg_helpers import needs_postgres

pytestmark = needs_postgres

DIM = 16
USERS = 6
PER_USER = 120
WORDS = ["river", "mountain", "coffee", "violin", "garden", "rocket", "lamp", "window",
         "bridge", "apple", "desk", "cloud", "stone", "naïve", "東京"]  # fmt: skip
TYPES = ["memory", "fact", "preference", "guideline"]
QUERIES = ["coffee river", "violin garden stone", "東京 lamp", "apple"]


def _text(i: int) -> str:
    words = [WORDS[(i * 5 + j * 3) % len(WORDS)] for j in range(1 + i % 5)]
    return " ".join([*words, f"n{i}"])  # no two alike: no ties between the engines


def _fill(store: Any) -> None:
    n = USERS * PER_USER
    for t, rtype in enumerate(TYPES):  # every memory type, interleaved users
        ids = [i for i in range(n) if i % len(TYPES) == t]
        store.add(
            [_text(i) for i in ids],
            record_type=rtype,
            record_ids=[f"m{i}" for i in ids],
            user_ids=[f"u{i % USERS}" for i in ids],
        )
    store.add(  # and messages, so the default types' condition has them all
        [_text(10_000 + i) for i in range(40)],
        record_type="message",
        record_ids=[f"msg{i}" for i in range(40)],
        thread_ids="t1",
        user_ids="u1",
        roles="user",
    )


def _open(cls: Any, where: str, strategy: str = "HYBRID") -> Any:
    return cls(
        HashingEmbedder(DIM),
        where,
        vector_dim=DIM,
        schema_policy="create_if_necessary",
        search_strategy=SearchStrategy[strategy],
    )


@pytest.fixture(scope="module")
def stores(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The same rows in a PostgreSQL schema and a SQLite file."""
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS search_beside CASCADE")
        conn.execute("CREATE SCHEMA search_beside")
    url = f"{pg_server.get_uri()}&options=-csearch_path%3Dsearch_beside%2Cpublic"
    path = str(tmp_path_factory.mktemp("beside") / "s.db")
    for cls, where in ((PostgresMemoryStore, url), (SQLiteMemoryStore, path)):
        store = _open(cls, where)
        _fill(store)
        store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")  # the plans of a store whose statistics are read
    yield url, path


@pytest.fixture(autouse=True)
def ranked_in_sql(monkeypatch: pytest.MonkeyPatch) -> None:
    """No user is read into the in-process cache: every search here is ranked in SQL."""
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 10**9)


def _answers(store: Any, **kw: Any) -> list[list[tuple[str, float]]]:
    out = []
    for u in range(USERS):
        for q in QUERIES:
            hits = store.search(q, 10, user_id=f"u{u}", exact_user_match=True, **kw)
            out.append([(r.id, round(d, 5)) for r, d in hits])
    return out


def _threads_of_rankings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads that send the vector rankings from now on (the list fills as they do)."""
    seen: list[str] = []
    execute = psycopg.Cursor.execute

    def traced(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        if "<=>" in str(query):
            seen.append(threading.current_thread().name)
        return execute(cur, query, params, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", traced)
    return seen


def test_hybrid_ranks_its_vector_branch_beside_the_keyword_statement(
    stores: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pg = _open(PostgresMemoryStore, stores[0])
    try:
        threads = _threads_of_rankings(monkeypatch)
        beside = _answers(pg)
        assert threads and all(t.startswith("oam-vector-branch") for t in threads), threads
        # The same searches ranked on the caller's thread alone: the same answers.
        monkeypatch.setattr(type(pg._core.dialect), "reads_beside", lambda self: False)
        threads.clear()
        alone = _answers(pg)
        assert threads and not any(t.startswith("oam-vector-branch") for t in threads)
        assert beside == alone and any(beside)
    finally:
        pg.close()


def test_only_outside_a_transaction_and_an_end_users_scope(stores: tuple[str, str]) -> None:
    pg = _open(PostgresMemoryStore, stores[0])
    try:
        d = pg._core.dialect
        assert d.reads_beside()
        with d.snapshot():  # a connection bound to this thread: its statements stay on it
            assert not d.reads_beside()
        assert d.reads_beside()
    finally:
        pg.close()


def test_searches_from_many_threads_get_the_answers_of_one(
    stores: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight threads search at once: one at a time ranks on the branch thread, the others
    on their own; every answer is the one a single thread gets."""
    pg = _open(PostgresMemoryStore, stores[0])
    try:
        expected = _answers(pg)
        threads = _threads_of_rankings(monkeypatch)
        got: list[Any] = [None] * 8
        errors: list[BaseException] = []
        start = threading.Barrier(8)

        def run(i: int) -> None:
            try:
                start.wait()
                got[i] = _answers(pg)
            except BaseException as exc:  # reported below
                errors.append(exc)

        workers = [threading.Thread(target=run, args=(i,), name=f"searcher-{i}") for i in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert not errors, errors
        assert all(g == expected for g in got)
        # Some ranked beside, some on their own thread (the branch thread was busy).
        assert any(t.startswith("oam-vector-branch") for t in threads)
        assert any(t.startswith("searcher-") for t in threads)
        _one_at_a_time(pg)
    finally:
        pg.close()


def _one_at_a_time(store: Any) -> None:
    """The branch thread takes one search's ranking at a time: exactly one permit is
    left once the searches ended (a permit given back to another semaphore than the one
    taken made it two, and two searches queued there)."""
    idle = store._vectors._idle
    assert idle.acquire(blocking=False)
    try:
        assert not idle.acquire(blocking=False)
    finally:
        idle.release()


def test_one_search_at_a_time_on_the_branch_thread(
    stores: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pg = _open(PostgresMemoryStore, stores[0])
    try:
        for _ in range(3):  # the first use makes the thread; later ones reuse it
            _answers(pg)
            _one_at_a_time(pg)
        # A hybrid search given a vector and no text has no keyword statement to run
        # beside: it ranks on its own thread.
        threads = _threads_of_rankings(monkeypatch)
        pg.search(None, 10, query_vector=[1.0] * DIM, user_id="u1", exact_user_match=True)
        assert threads and not any(t.startswith("oam-vector-branch") for t in threads)
    finally:
        pg.close()
    # Closed: no branch thread is made again for a search that was under way.
    assert pg._vectors._beside(lambda: []) is None and pg._vectors.pool is None


def test_a_ranking_of_most_types_reads_the_users_range_once(
    stores: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages and every memory type: the (user, type) index is read on the user alone
    (one descent), the types checked on its rows; a narrower set leaves the type to the
    index condition where the planner finds it worth it. All answer as SQLite does."""
    url, path = stores
    assert "IS TRUE" in chunk_types_sql("c.record_type", ["message", *TYPES])
    assert "IS TRUE" not in chunk_types_sql("c.record_type", TYPES)
    assert "IS TRUE" not in chunk_types_sql("c.record_type", ["message"])
    pg = _open(PostgresMemoryStore, url, "VECTOR")
    lite = _open(SQLiteMemoryStore, path, "VECTOR")
    sent: list[tuple[str, Any]] = []
    execute = psycopg.Cursor.execute

    def traced(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        if "<=>" in str(query):
            sent.append((str(query), params))
        return execute(cur, query, params, **kw)

    try:
        for types in (None, set(TYPES), {"message"}):
            monkeypatch.setattr(psycopg.Cursor, "execute", traced)
            sent.clear()
            kw = {"user_id": "u1", "exact_user_match": True, "record_types": types}
            for q in QUERIES:
                on_pg, on_lite = (_ranked(store.search(q, 10, **kw)) for store in (pg, lite))
                assert on_pg == on_lite and on_pg, (types, q)
            monkeypatch.undo()
            if types is None:  # the default: messages, memories, profiles
                conds = _index_conditions(url, sent[0])
                assert conds == ["(user_id = 'u1'::text)"], conds
            else:  # the planner may use the type in the index (its choice, by statistics)
                assert "IS TRUE" not in sent[0][0] and "c.record_type IN" in sent[0][0]
    finally:
        pg.close()
        lite.close()


def _ranked(hits: list[Any]) -> list[tuple[float, str]]:
    """An answer as (distance to 5 places, id), ties in id order, the last distance's
    ties left out (the engines' distances differ in float rounding, so ties are cut
    differently)."""
    got = sorted((round(d, 5), r.id) for r, d in hits)
    return [hit for hit in got if hit[0] < got[-1][0]] if got else []


def _index_conditions(url: str, statement: tuple[str, Any]) -> list[str]:
    """The index conditions of the chunks' scans in ``statement``'s plan."""
    out: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if str(node.get("Index Name", "")).startswith("oam_chunks") and "Index Cond" in node:
            out.append(node["Index Cond"])
        for child in node.get("Plans", ()):
            walk(child)

    query, params = statement
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        row = conn.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()
        assert row is not None
        plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
        walk(plan[0]["Plan"])
    return out

"""PostgreSQL: a vector search reads its hits' records in the ranking statement itself (one
round trip, not a ranking then a load). The records it returns must be the records ``get``
returns, on every path the ranking takes: a user's covering index, the exact ranking of a
scope, the approximate index with its queue, and the widening rounds of each."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core import PostgresMemoryStore
from oracleagentmemory.core.store.search import _keyword_branch, _user_vectors, _vector_branch

from ._pg_helpers import needs_postgres, unit_vectors

pytestmark = needs_postgres

DIM = 8


def _vectors(n: int, seed: int) -> np.ndarray:
    return unit_vectors(n, seed, DIM)


@pytest.fixture
def store(pg_url: Callable[[str], str]) -> Iterator[Any]:
    s = PostgresMemoryStore(
        None, pg_url("reads"), vector_dim=DIM, schema_policy="create_if_necessary"
    )
    n = 300
    s.add(
        [f"memory {i} " + "long " * (400 if i % 25 == 0 else 0) for i in range(n)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % 3}" if i % 7 else None for i in range(n)],
        agent_ids=[f"a{i % 2}" for i in range(n)],
        embeddings=list(_vectors(n, 1)),
        metadata=[{"n": i, "odd": bool(i % 2), "deep": {"x": [i, "é"]}} for i in range(n)],
        timestamps=[f"2024-01-{1 + i % 28:02d}T10:00:00+00:00" for i in range(n)],
        statuses=[RecordStatus.INVALID if i % 13 == 0 else RecordStatus.VALID for i in range(n)],
    )
    s.add(
        [f"message {i}" for i in range(40)],
        record_type="message",
        record_ids=[f"x{i}" for i in range(40)],
        thread_ids="t1",
        user_ids="u1",
        roles="user",
        embeddings=list(_vectors(40, 2)),
    )
    s._dialect.ann_catch_up()
    # Chunks written after the graph's last batch wait in its queue: the search ranks them too.
    s.add(
        ["late memory"],
        record_type="memory",
        record_ids=["late"],
        user_ids="u1",
        embeddings=[_vectors(1, 3)[0]],
    )
    yield s
    s.close()


SEARCHES: list[dict[str, Any]] = [
    {},
    {"user_id": "u1", "exact_user_match": True},
    {"user_id": None, "exact_user_match": True},
    {"user_id": "u2", "exact_user_match": True, "metadata_filter": {"odd": True}},
    {"user_id": "u0", "exact_user_match": True, "agent_id": "a1"},
    {"agent_id": "a0", "exact_agent_match": True},
    {"metadata_filter": {"odd": False}},
    {"thread_id": "t1", "exact_thread_match": True, "record_types": {"message"}},
    {"include_invalid_results": True, "k": 30},
]


def _statements(store: Any) -> list[str]:
    """Every statement the store's engine runs from now on, in order."""
    d = store._dialect
    ran: list[str] = []
    for name in ("execute", "execute_vector_query"):
        real = getattr(d, name)

        def counted(sql: str, params: Any = (), real: Any = real) -> Any:
            ran.append(sql)
            return real(sql, params)

        setattr(d, name, counted)
    real_all = d.execute_all

    def all_at_once(statements: Any) -> Any:
        ran.append(" ;; ".join(sql for sql, _ in statements))  # one round trip
        return real_all(statements)

    d.execute_all = all_at_once
    return ran


@pytest.mark.parametrize("case", SEARCHES, ids=[str(c) for c in SEARCHES])
def test_the_records_a_search_returns_are_the_stored_records(
    store: Any, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    kwargs = dict(case)
    k = kwargs.pop("k", 10)
    for q in [*_vectors(4, 9), _vectors(1, 3)[0]]:
        hits = store.search(None, k, query_vector=q.tolist(), **kwargs)
        assert hits
        for record, _ in hits:
            assert record == store.get(record.record_type, record.id)
    # The widening rounds (a few rows at a time) read records the same way.
    monkeypatch.setattr(_vector_branch, "NATIVE_USER_FETCH_MAX", 40)
    q = _vectors(1, 4)[0].tolist()
    for record, _ in store.search(None, k, query_vector=q, **kwargs):
        assert record == store.get(record.record_type, record.id)


@pytest.mark.parametrize("case", SEARCHES[:3], ids=[str(c) for c in SEARCHES[:3]])
def test_a_vector_search_is_one_statement(
    store: Any, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 10**9)  # ranked in SQL
    q = _vectors(1, 5)[0].tolist()
    want = [(r.id, d) for r, d in store.search(None, 10, query_vector=q, **case)]
    ran = _statements(store)
    got = store.search(None, 10, query_vector=q, **case)
    assert [(r.id, d) for r, d in got] == want
    assert len(ran) == 1, ran


def _lookups(plan: dict[str, Any], table: str) -> int:
    """How many times the scans of ``table`` in ``plan`` (``EXPLAIN (ANALYZE, FORMAT
    JSON)``) ran: one lookup a loop."""
    mine = int(plan.get("Actual Loops", 0)) if plan.get("Relation Name") == table else 0
    return mine + sum(_lookups(child, table) for child in plan.get("Plans", ()))


def test_a_user_scoped_vector_search_reads_the_records_of_its_best_k_alone(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranked in SQL, a user's first search without preferences reads 4k chunks from the
    user's covering index but the records of the best k alone (their conditions pass: no
    other record could enter the answer); ``test_postgres_user_search`` checks the answers
    where one of them fails."""
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 10**9)  # ranked in SQL
    d = store._dialect
    sent: list[tuple[str, Any]] = []
    real = d.execute

    def execute(sql: str, params: Any = ()) -> Any:
        sent.append((sql, params))
        return real(sql, params)

    monkeypatch.setattr(d, "execute", execute)
    checked = 0
    for q in _vectors(8, 11):
        sent.clear()
        hits = store.search(None, 10, query_vector=q.tolist(), user_id="u1", exact_user_match=True)
        assert len(hits) == 10
        if len(sent) != 1:  # a best record failed its conditions: every row's record read
            continue
        sql, params = sent[0]
        plan = real("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)[0][0][0]["Plan"]
        assert _lookups(plan, d.tables.records) == 10, json.dumps(plan, indent=1)
        checked += 1
    assert checked >= 4


def test_a_cached_users_search_is_the_log_then_the_records(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranked from the in-process cache (``_user_vectors``), then one round trip asks the
    change log what was committed since and reads the hits' records; a commit in between
    (another store's) costs a second ranking, caught up."""
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    case = {"user_id": "u1", "exact_user_match": True}
    q = _vectors(1, 5)[0].tolist()
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 10**9)
    want = [(r.id, d) for r, d in store.search(None, 10, query_vector=q, **case)]
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    store.search(None, 10, query_vector=q, **case)  # u1 read in after this answer
    store._vectors.users.wait_filled()
    ran = _statements(store)
    got = store.search(None, 10, query_vector=q, **case)
    assert [r.id for r, _ in got] == [i for i, _ in want]
    np.testing.assert_allclose([d for _, d in got], [d for _, d in want], atol=1e-6)
    assert len(ran) == 1 and "pg_current_snapshot" in ran[0] and " ;; " in ran[0], ran
    other = PostgresMemoryStore(
        None, store._dialect._pool, vector_dim=DIM, schema_policy="create_if_necessary"
    )
    try:
        other.add(["near"], record_type="memory", record_ids=["near"], user_ids="u1",
                  embeddings=[q])  # fmt: skip
    finally:
        other.close()
    ran.clear()
    got = store.search(None, 10, query_vector=q, **case)
    # After a quiet spell: the check with the records, the rows written since, the new hit.
    assert got[0][0].id == "near" and len(ran) == 3, ran


def test_a_cached_search_keeps_the_records_no_commit_touched(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While commits keep coming, the rows written since come with the check: a commit in
    between that leaves the hits as they were costs nothing more than the check's round
    trip; one that changes a hit has that record read again."""
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    case = {"user_id": "u1", "exact_user_match": True}
    q = _vectors(1, 5)[0].tolist()
    want = store.search(None, 10, query_vector=q, **case)  # u1 read in after this answer
    store._vectors.users.wait_filled()
    other = PostgresMemoryStore(
        None, store._dialect._pool, vector_dim=DIM, schema_policy="create_if_necessary"
    )
    ran = _statements(store)
    try:
        far = (-np.asarray(q)).tolist()  # the least similar vector there is
        for name in ("far", "farther"):
            other.add([name], record_type="memory", record_ids=[name], user_ids="u1",
                      embeddings=[far])  # fmt: skip
            ran.clear()
            got = store.search(None, 10, query_vector=q, **case)
        # The first commit after a quiet spell has its rows read after the check; the next
        # comes with it.
        assert [(r.id, r.content) for r, _ in got] == [(r.id, r.content) for r, _ in want]
        assert len(ran) == 1 and ran[0].count(" ;; ") == 2, ran  # log, new rows, records
        hit = want[0][0]
        other.update(hit.record_type, hit.id, metadata={"changed": "meanwhile"})
        ran.clear()
        got = store.search(None, 10, query_vector=q, **case)
    finally:
        other.close()
    assert [r.id for r, _ in got] == [r.id for r, _ in want]
    assert got[0][0].metadata == {"changed": "meanwhile"} and len(ran) == 2, ran


@pytest.fixture
def keyword_store(pg_url: Callable[[str], str]) -> Iterator[Any]:
    s = PostgresMemoryStore(
        None, pg_url("kw"), search_strategy="KEYWORD", schema_policy="create_if_necessary"
    )
    words = ["river", "mountain", "coffee", "violin", "garden", "rocket"]
    s.add(
        [f"{words[i % 6]} {words[(i // 6) % 6]} note {i}" for i in range(120)],
        record_type="memory",
        record_ids=[f"k{i}" for i in range(120)],
        user_ids=[f"u{i % 3}" for i in range(120)],
        metadata=[{"n": i, "odd": bool(i % 2)} for i in range(120)],
        statuses=[RecordStatus.INVALID if i % 13 == 0 else RecordStatus.VALID for i in range(120)],
    )
    yield s
    s.close()


KEYWORD_SEARCHES = [SEARCHES[0], SEARCHES[1], SEARCHES[3]]


@pytest.mark.parametrize("case", KEYWORD_SEARCHES, ids=[str(c) for c in KEYWORD_SEARCHES])
def test_keyword_search_reads_its_records_with_the_candidates(
    keyword_store: Any, case: dict[str, Any]
) -> None:
    """The totals and the document counts in one statement, the scores in a second (a
    one-user search's: both in one statement, the counts over that user's keyword rows,
    `test_keyword_score_isolation`), the candidates' conditions and records in the next
    (and any widening round): no load after."""
    for query in ("river coffee", "violin", "garden rocket mountain"):
        ran = _statements(keyword_store)
        hits = keyword_store.search(query, 10, **case)
        assert hits
        if case.get("exact_user_match"):  # one user's ranking: that user's statistics
            scores, *checks = ran
            assert "SUM(tsv_len)" in scores and "user_id" in scores, scores
        else:  # the statistics of the whole store, kept by the database
            totals, scores, *checks = ran
            assert "SUM(tokens)" in totals and "COUNT(*)" in totals
        assert "MAX(s.score)" in scores
        # Each check round (more when ties straddle the cut) reads its candidates' records.
        assert checks and all("r.content" in sql for sql in checks), "\n".join(ran)
        for record, _ in hits:
            assert record == keyword_store.get(record.record_type, record.id)


def test_a_cached_users_keyword_search_is_the_log_with_the_records(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scored from the cached user's keyword rows, then one round trip asks the change log
    what was committed since and reads the candidates' records; a commit in between
    (another store's) scores again, caught up."""
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    url = pg_url("kw_cached")

    def opened() -> Any:
        return PostgresMemoryStore(
            None, url, vector_dim=DIM, search_strategy="KEYWORD",
            schema_policy="create_if_necessary",
        )  # fmt: skip

    store, other = opened(), opened()
    words = ["river", "mountain", "coffee", "violin", "garden", "rocket"]
    store.add(
        [f"{words[i % 6]} {words[(i // 6) % 6]} note {i}" for i in range(120)],
        record_type="memory",
        record_ids=[f"k{i}" for i in range(120)],
        user_ids=[f"u{i % 3}" for i in range(120)],
        embeddings=list(_vectors(120, 4)),
    )
    case = {"user_id": "u1", "exact_user_match": True}
    users = store._vectors.users
    try:
        want = [(r.id, d) for r, d in store.search("violin coffee", 10, **case)]
        assert users.wait_filled(30) and users.words.has("u1")  # read in after that answer
        ran = _statements(store)
        got = store.search("violin coffee", 10, **case)
        assert [(r.id, d) for r, d in got] == want
        assert len(ran) == 1 and "pg_current_snapshot" in ran[0] and " ;; " in ran[0], ran
        other.add(["violin violin coffee"], record_type="memory", record_ids=["new"],
                  user_ids="u1", embeddings=[_vectors(1, 5)[0]])  # fmt: skip
        ran.clear()
        got = store.search("violin coffee", 10, **case)
        # The check with the records, the commit's rows, the new answer's records.
        assert got[0][0].id == "new" and 2 <= len(ran) <= 4, ran
        saved = users.words_for
        users.words_for = lambda user, **kw: None
        try:
            in_sql = store.search("violin coffee", 10, **case)
        finally:
            users.words_for = saved
        assert [r.id for r, _ in got] == [r.id for r, _ in in_sql]
        np.testing.assert_allclose([d for _, d in got], [d for _, d in in_sql], atol=1e-12)
    finally:
        store.close()
        other.close()


def test_a_wide_round_leaves_the_records_to_the_load(
    store: Any, keyword_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ranking round over more rows than ``RECORDS_WITH_RANKING_MAX`` reads no record
    columns (a widening round may read thousands of rows): the search loads its records
    after, and returns the same answer."""
    searches = [
        (store, lambda s, **kw: s.search(None, 10, query_vector=_vectors(1, 6)[0].tolist(), **kw)),
        (keyword_store, lambda s, **kw: s.search("river garden", 10, **kw)),
    ]
    for s, search in searches:
        for case in KEYWORD_SEARCHES:
            want = search(s, **case)
            monkeypatch.setattr(_vector_branch, "RECORDS_WITH_RANKING_MAX", 0)
            monkeypatch.setattr(_keyword_branch, "RECORDS_WITH_RANKING_MAX", 0)
            ran = _statements(s)
            got = search(s, **case)
            monkeypatch.undo()
            assert got == want
            assert any("r.rid IN" in sql and "r.content" not in sql for sql in ran) or not got
            assert not any("r.content" in sql for sql in ran)


def test_the_graph_search_setting_stays_in_its_transaction(store: Any) -> None:
    """``hnsw.ef_search`` is set for the search's own transaction: a pooler in transaction
    mode may hand the next transaction's server connection to another client."""
    assert store.search(None, 10, query_vector=_vectors(1, 7)[0].tolist())
    for _ in range(3):
        with store._dialect._pool.connection() as conn:
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == ("40",)


@pytest.mark.parametrize(
    "scope",
    [
        {"agent_id": "a1", "exact_agent_match": True},
        {"metadata_filter": {"odd": True}},
        {"include_invalid_results": False},
    ],
)
def test_a_selective_user_search_ranks_the_users_chunks_once(
    pg_url: Any, monkeypatch: pytest.MonkeyPatch, scope: dict[str, Any]
) -> None:
    """Conditions that fail for some of the best k (an exact agent, a filter, INVALID
    records) read every row's record in the same statement: the user's chunks are ranked
    once, not again (a review found two scans of the covering index a search)."""
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 10**9)
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")
    store = PostgresMemoryStore(
        None, pg_url("sel"), vector_dim=DIM, schema_policy="create_if_necessary"
    )
    try:
        n = 400
        store.add(
            [f"m {i}" for i in range(n)],
            record_type="memory",
            record_ids=[f"m{i}" for i in range(n)],
            user_ids="u",
            agent_ids=[f"a{i % 2}" for i in range(n)],
            embeddings=list(unit_vectors(n, 1, DIM)),
            metadata=[{"odd": i % 2 == 1} for i in range(n)],
            statuses=[RecordStatus.INVALID if i % 5 == 0 else RecordStatus.VALID for i in range(n)],
        )
        d = store._dialect
        real = d.execute
        sent: list[str] = []

        def counting(sql: str, params: Any = ()) -> Any:
            sent.append(sql)
            return real(sql, params)

        monkeypatch.setattr(d, "execute", counting)
        rankings = []
        for q in unit_vectors(10, 7, DIM):
            sent.clear()
            hits = store.search(
                None, 10, query_vector=q.tolist(), user_id="u", exact_user_match=True, **scope
            )
            assert len(hits) == 10
            rankings.append(sum("WITH g AS" in s for s in sent))
        assert rankings == [1] * 10, rankings
    finally:
        store.close()

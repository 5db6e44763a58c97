"""PostgreSQL: users read into the search cache at open (issue #54) and the planner's
statistics refreshed after large writes (issue #53), on a real server.

The pass at open (``_user_vectors.UserVectors.prefill``) reads the users of the most recent
records first, within its budget, off the request's thread; a user it read is ranked in
process from their first search, and answers as SQL does, whatever another store commits
while the pass reads. It stops when the store closes or the interpreter exits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg
import pytest

from oracleagentmemory.core import PostgresMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.engines.postgres import _postgres_ann
from oracleagentmemory.core.store.search import _user_vectors

from ._embedders import HashingEmbedder
from ._pg_helpers import needs_postgres, unit_vectors

pytestmark = needs_postgres

DIM = 16
USERS = 6
PER_USER = 200
PER_USER_BYTES = PER_USER * 4 * DIM


def _open(url: str) -> PostgresMemoryStore:
    return PostgresMemoryStore(None, url, vector_dim=DIM, schema_policy="create_if_necessary")


def _open_searching(url: str, strategy: str) -> PostgresMemoryStore:
    """A store with an embedder, searching by ``strategy`` (its pass at open under way)."""
    return PostgresMemoryStore(
        HashingEmbedder(DIM),
        url,
        vector_dim=DIM,
        schema_policy="create_if_necessary",
        search_strategy=SearchStrategy[strategy],
    )


def _load(url: str) -> None:
    """``USERS`` users of ``PER_USER`` memories, interleaved; u4's written last of all."""
    store = _open(url)
    n = USERS * PER_USER
    order = [i for i in range(n) if i % USERS != 4] + [i for i in range(n) if i % USERS == 4]
    store.add(
        [f"memory {i}" for i in order],
        record_type="memory",
        record_ids=[f"m{i}" for i in order],
        user_ids=[f"u{i % USERS}" for i in order],
        embeddings=list(unit_vectors(n, 1, DIM)[order]),
    )
    store.close()


@pytest.fixture
def url(pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")
    got = pg_url("prefill")
    _load(got)
    return got


def _budget(monkeypatch: pytest.MonkeyPatch, users: float) -> None:
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, str(users * PER_USER_BYTES / 2**20))


def _ids(store: Any, user: str, q: np.ndarray) -> list[tuple[str, float]]:
    hits = store.search(None, 10, query_vector=q.tolist(), user_id=user, exact_user_match=True)
    return [(r.id, d) for r, d in hits]


def _in_sql(store: Any, user: str, q: np.ndarray) -> list[tuple[str, float]]:
    users = store._vectors.users
    saved, users.for_user = users.for_user, lambda user, **kw: None
    try:
        return _ids(store, user, q)
    finally:
        users.for_user = saved


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b, abs=1e-5)


def test_the_pass_at_open_reads_the_most_recent_users_within_its_budget(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _budget(monkeypatch, 2.5)
    store = _open(url)
    users = store._vectors.users
    try:
        assert users.wait_filled(30)
        # u4 wrote last; then the users of the last records before it, by their last rid.
        assert users.prefilled == ["u4", "u5"], users.prefilled
        assert users.index_bytes() == 2 * PER_USER_BYTES
        # Their posting lists are made by the pass, not by their first search.
        index = users.index
        assert index is not None
        for user in ("u4", "u5"):
            code = index._codes["user"][user]
            rows = index._posting_cache[(0, code)]
            assert rows.size == PER_USER
            assert (index.scope[rows, 0] == code).all()
        sent: list[str] = []
        execute = psycopg.Cursor.execute

        def traced(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            if threading.current_thread() is threading.main_thread():
                sent.append(str(query))
            return execute(cur, query, params, **kw)

        q = unit_vectors(1, 7, DIM)[0]
        monkeypatch.setattr(psycopg.Cursor, "execute", traced)
        got = _ids(store, "u4", q)  # u4's first search: ranked in process
        monkeypatch.undo()
        assert not any("<=>" in s for s in sent), sent
        assert any("pg_current_snapshot" in s for s in sent), sent
        _same(got, _in_sql(store, "u4", q))
        assert "u0" not in users._users  # beyond the budget: ranked in SQL as before
    finally:
        store.close()


def test_a_commit_made_while_the_pass_reads_is_not_missed(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _open(url)  # (reads no user in: the fixture's budget is 0)
    _budget(monkeypatch, 100)
    install = _user_vectors.UserVectors._install_many
    moved = unit_vectors(1, 9, DIM)[0]

    def late(self: Any, *args: Any) -> Any:
        other.add(["late"], record_type="memory", record_ids=["late"], user_ids="u4",
                  embeddings=[moved])  # fmt: skip
        other.delete("memory", "m10")  # u4's
        other.update("memory", "m16", embedding=(-moved).tolist())  # u4's
        self._catch_up()  # as another user's search meanwhile: the cache's snapshot is now
        return install(self, *args)

    monkeypatch.setattr(_user_vectors.UserVectors, "_install_many", late)
    store = _open(url)
    try:
        assert store._vectors.users.wait_filled(30)
        monkeypatch.setattr(_user_vectors.UserVectors, "_install_many", install)
        assert "u4" in store._vectors.users._users
        got = _ids(store, "u4", moved)
        _same(got, _in_sql(store, "u4", moved))
        assert got[0][0] == "late" and "m10" not in [i for i, _ in got]
    finally:
        store.close()
        other.close()


@pytest.mark.parametrize("strategy", ["KEYWORD", "HYBRID"])
def test_a_prefilled_users_first_keyword_search_costs_what_a_warm_one_costs(
    url: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass reads each user's keyword rows with their vectors: a prefilled user's first
    KEYWORD or HYBRID search is scored in process (no keyword row read or counted in SQL),
    asks for no fill after, and answers as SQL does."""
    _budget(monkeypatch, 100)
    store = _open_searching(url, strategy)
    users = store._vectors.users
    try:
        assert users.wait_filled(30)
        assert "u4" in users.prefilled
        sent: list[tuple[str, str]] = []
        returned = [0]
        execute, fetchall = psycopg.Cursor.execute, psycopg.Cursor.fetchall

        def traced(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            sent.append((threading.current_thread().name, str(query)))
            return execute(cur, query, params, **kw)

        def counted(cur: Any) -> Any:
            rows = fetchall(cur)
            if threading.current_thread() is threading.main_thread():
                returned[0] += len(rows)
            return rows

        monkeypatch.setattr(psycopg.Cursor, "execute", traced)
        monkeypatch.setattr(psycopg.Cursor, "fetchall", counted)
        # Scored in SQL: the statistics of u4's keyword rows, then the scores, then the
        # records; from the cache: the log's check, then the records.
        got = store.search("10", 10, user_id="u4", exact_user_match=True)
        assert users.wait_filled(30)
        monkeypatch.undo()
        mine = [q for thread, q in sent if thread == threading.main_thread().name]
        heads = [q[:60] for q in mine]
        assert len(mine) <= {"KEYWORD": 2, "HYBRID": 3}[strategy], heads
        assert not any("oam_kw" in q for q in mine), heads
        assert returned[0] <= 20, returned
        assert not [q for thread, q in sent if thread.startswith("oam-user-cache")]  # no fill
        assert users.words.has("u4")
        if strategy == "KEYWORD":
            assert got and got[0][0].id == "m10"
        saved = users.words_for, users.for_user
        users.words_for = users.for_user = lambda user, **kw: None  # type: ignore[method-assign]
        try:
            want = store.search("10", 10, user_id="u4", exact_user_match=True)
        finally:
            users.words_for, users.for_user = saved  # type: ignore[method-assign]
        _same([(r.id, d) for r, d in got], [(r.id, d) for r, d in want])
    finally:
        store.close()


class _MainThreadTrace:
    """The statements the request's thread sends and the rows it fetches, per search."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        self.rows = 0
        self.others: list[str] = []
        execute, fetchall = psycopg.Cursor.execute, psycopg.Cursor.fetchall
        trace = self

        def traced(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            if threading.current_thread() is threading.main_thread():
                trace.sent.append(str(query))
            else:
                trace.others.append(str(query))
            return execute(cur, query, params, **kw)

        def counted(cur: Any) -> Any:
            rows = fetchall(cur)
            if threading.current_thread() is threading.main_thread():
                trace.rows += len(rows)
            return rows

        monkeypatch.setattr(psycopg.Cursor, "execute", traced)
        monkeypatch.setattr(psycopg.Cursor, "fetchall", counted)

    def take(self) -> tuple[list[str], int, list[str]]:
        got = self.sent, self.rows, self.others
        self.sent, self.rows, self.others = [], 0, []
        return got


@pytest.mark.parametrize("strategy", ["VECTOR", "HYBRID"])
def test_a_prefilled_users_first_search_does_what_their_second_does(
    url: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user the pass read in: their first search sends the statements their second sends
    (the log's check and the hits' records; no ranking in SQL, no keyword row), fetches as
    many rows, asks for no fill and builds nothing in the index (their posting list is the
    pass's): what is left of a first search's cost is the search itself."""
    _budget(monkeypatch, 100)
    store = _open_searching(url, strategy)
    users = store._vectors.users
    q = unit_vectors(1, 7, DIM)[0]

    def search() -> list[str]:
        if strategy == "VECTOR":
            hits = store.search(None, 10, query_vector=q.tolist(), user_id="u4",
                                exact_user_match=True)  # fmt: skip
        else:
            hits = store.search("10", 10, user_id="u4", exact_user_match=True)
        return [r.id for r, _ in hits]

    try:
        assert users.wait_filled(30)
        assert "u4" in users.prefilled
        index = users.index
        assert index is not None
        built = set(index._posting_cache)
        words = users.words._users.get("u4")
        columns = None if words is None else words._columns
        assert (words is None) == (strategy == "VECTOR") and (words is None or columns)
        trace = _MainThreadTrace(monkeypatch)
        first = search()
        assert users.wait_filled(30)
        first_sent, first_rows, first_others = trace.take()
        # Nothing made for the user's first search: their posting list and keyword columns
        # are the pass's.
        assert set(index._posting_cache) == built
        assert words is None or words._columns is columns
        second = search()
        assert users.wait_filled(30)
        second_sent, second_rows, second_others = trace.take()
        monkeypatch.undo()
        heads = [s[:60] for s in first_sent]
        assert first_sent == second_sent, (heads, [s[:60] for s in second_sent])
        assert len(first_sent) <= {"VECTOR": 2, "HYBRID": 3}[strategy], heads
        assert not any("<=>" in s or "oam_kw" in s for s in first_sent), heads
        assert first_rows == second_rows <= 10 + 1, (first_rows, second_rows)
        assert not first_others and not second_others  # no fill, no catch-up thread work
        assert first == second and len(first) == 10
    finally:
        store.close()


def test_the_pass_stops_at_exit_and_at_close(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _budget(monkeypatch, 100)
    monkeypatch.setattr(_user_vectors, "PREFILL_STEP_ROWS", 1)  # one user a step
    install = _user_vectors.UserVectors._install_many

    def then_exit(self: Any, *args: Any) -> Any:
        self.stop_taking_jobs()  # what the exit hook (core._shared._exit_gate) calls
        return install(self, *args)

    monkeypatch.setattr(_user_vectors.UserVectors, "_install_many", then_exit)
    store = _open(url)
    try:
        assert store._vectors.users.wait_filled(30)
        assert store._vectors.users.prefilled == ["u4"]  # the step running ends; no other
    finally:
        store.close()
    monkeypatch.setattr(_user_vectors.UserVectors, "_install_many", install)
    store = _open(url)
    users = store._vectors.users
    store.close()  # at once: a step under way ends, none follows, nothing stays cached
    assert users.index is None and not users._futures
    assert not [t for t in threading.enumerate() if t.name.startswith("oam-user-cache")]


def test_the_pass_waits_for_a_pause_in_the_searches(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a search of the process runs, the pass reads no user (up to its longest wait);
    once they pause it reads them all, and the users it read answer as SQL does."""
    _budget(monkeypatch, 100)
    monkeypatch.setattr(_user_vectors, "PREFILL_YIELD_MAX_S", 60.0)
    reads: list[float] = []
    install = _user_vectors.UserVectors._install_many

    def noted(self: Any, *args: Any) -> Any:
        reads.append(time.monotonic())
        return install(self, *args)

    monkeypatch.setattr(_user_vectors.UserVectors, "_install_many", noted)
    with _user_vectors.one_search():  # a search under way (another store's, say)
        store = _open(url)
        users = store._vectors.users
        assert not users.wait_filled(1.0)
        assert users.prefilled == [] and not reads
        resumed = time.monotonic()
    try:
        assert users.wait_filled(30)
        assert reads and min(reads) >= resumed
        assert sorted(users.prefilled) == [f"u{i}" for i in range(USERS)]
        q = unit_vectors(1, 9, DIM)[0]
        _same(_ids(store, "u2", q), _in_sql(store, "u2", q))
    finally:
        store.close()


def test_under_searches_without_a_pause_the_pass_reads_a_user_a_longest_wait(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches that never pause (one always under way) slow the pass to one user read a
    ``PREFILL_YIELD_MAX_S``: each read it starts beside them makes them wait (the server's
    cores, the interpreter), so it starts few; once they pause, it reads the rest."""
    _budget(monkeypatch, 100)
    monkeypatch.setattr(_user_vectors, "PREFILL_STEP_ROWS", 1)  # one user a step
    with _user_vectors.one_search():  # a search always under way
        store = _open(url)
        users = store._vectors.users
        time.sleep(0.6)
        read_meanwhile = len(users.prefilled)
    try:
        assert read_meanwhile <= 3, read_meanwhile  # a read a 0.25 s at most (6 at 0.05 s)
        assert users.wait_filled(30)
        assert sorted(users.prefilled) == [f"u{i}" for i in range(USERS)]
    finally:
        store.close()


def test_the_budget_setting(pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_url("prefill_setting")
    for bad in ("lots", "-1", "inf"):
        monkeypatch.setenv(_user_vectors.PREFILL_ENV, bad)
        with pytest.raises(ValueError, match=_user_vectors.PREFILL_ENV):
            _open(url)
    with psycopg.connect(url) as conn:  # refused before anything was written
        # (in this test's own schema: another test may have made one in public)
        made = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename = 'oam_records'"
        ).fetchone()
        assert made == (0,)
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")
    _load(url)
    store = _open(url)
    try:
        assert store._vectors.users.wait_filled(30)
        assert store._vectors.users.prefilled == [] and store._vectors.users.index is None
    finally:
        store.close()


def _last_analyze(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT relname, last_analyze FROM pg_stat_all_tables"
            " WHERE relid IN ('oam_records'::regclass, 'oam_chunks'::regclass)"
        ).fetchall()
    return {str(name): when for name, when in rows}


def _mod_since_analyze(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT n_mod_since_analyze FROM pg_stat_all_tables"
            " WHERE relid = 'oam_records'::regclass"
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _load_big(url: str, n: int) -> None:
    store = _open(url)
    with psycopg.connect(url, autocommit=True) as conn:  # what is analyzed is the store's
        for table in ("oam_records", "oam_chunks"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    vectors = unit_vectors(n, 3, DIM)
    for s in range(0, n, 1000):
        store.add(
            [f"memory {i}" for i in range(s, s + 1000)],
            record_type="memory",
            record_ids=[f"b{i}" for i in range(s, s + 1000)],
            user_ids=[f"u{i % 3}" for i in range(s, s + 1000)],
            embeddings=list(vectors[s : s + 1000]),
        )
    store.close()


def test_a_bulk_load_leaves_fresh_statistics(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load analyzes the tables it grew (on the store's thread, or at its close), so
    the next search is planned with their size, not with an empty table's."""
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")
    url = pg_url("analyze_load")
    _load_big(url, 3000)
    got = _last_analyze(url)
    assert got["oam_records"] is not None and got["oam_chunks"] is not None, got
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'oam_records'::regclass")
        assert float(row.fetchone()[0]) >= 2000  # type: ignore[index]


def test_changes_a_closed_store_left_are_analyzed_by_the_next_open(
    pg_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")
    url = pg_url("analyze_open")
    monkeypatch.setattr(_postgres_ann, "ANALYZE_MIN_ROWS", 10**9)  # this load: none
    _load_big(url, 2000)
    assert _last_analyze(url)["oam_records"] is None
    deadline = time.monotonic() + 20  # the closed connections' counts reach the server
    while _mod_since_analyze(url) < 2000 and time.monotonic() < deadline:
        time.sleep(0.1)
    monkeypatch.undo()
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")
    store = _open(url)
    try:
        deadline = time.monotonic() + 20
        while store._dialect.indexer.analyzed == 0 and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.05)
        assert store._dialect.indexer.analyzed == 1  # type: ignore[attr-defined]
        assert _last_analyze(url)["oam_records"] is not None
        # Few changes since: no further pass.
        store.add(["one more"], record_type="memory", record_ids=["x"], user_ids="u1",
                  embeddings=[unit_vectors(1, 4, DIM)[0]])  # fmt: skip
    finally:
        store.close()
    assert store._dialect.indexer.analyzed == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("strategy", ["KEYWORD", "HYBRID"])
def test_a_user_forgotten_by_the_cache_mid_search_is_scored_in_sql(
    url: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread's catch-up may forget a user's keyword rows (mostly deleted) after a
    search of that user chose the cache and before it scores: the search then scores in
    SQL and answers as SQL does (it raised KeyError)."""
    _budget(monkeypatch, 100)
    store = _open_searching(url, strategy)
    users = store._vectors.users
    words = store._core.dialect.words
    stems = words.query_stems

    def forgetting(terms: list[str]) -> Any:
        with users.lock:
            users.words.forget("u4")  # what a catch-up does to a user mostly deleted
        return stems(terms)

    try:
        assert users.wait_filled(30)
        assert users.words.has("u4")
        monkeypatch.setattr(words, "query_stems", forgetting)
        got = store.search("10", 10, user_id="u4", exact_user_match=True)
        monkeypatch.setattr(words, "query_stems", stems)
        saved = users.words_for, users.for_user
        users.words_for = users.for_user = lambda user, **kw: None  # type: ignore[method-assign]
        try:
            want = store.search("10", 10, user_id="u4", exact_user_match=True)
        finally:
            users.words_for, users.for_user = saved  # type: ignore[method-assign]
        assert got
        _same([(r.id, d) for r, d in got], [(r.id, d) for r, d in want])
    finally:
        store.close()


def test_close_is_prompt_while_the_pass_reads_keyword_rows_beside_searches(
    pg_url: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() while the pass at open parses a large user's keyword rows and the process
    searches without pause: the pass stops between parts, not after the user (a review
    measured 9.1 s when it waited through every part)."""
    url = pg_url("close")
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")

    def opened() -> PostgresMemoryStore:
        return _open_searching(url, "HYBRID")

    s = opened()
    s.add([f"apple banana item{i}" for i in range(4000)], record_type="memory", user_ids="u0")
    s.close()
    monkeypatch.delenv(_user_vectors.PREFILL_ENV)
    with _user_vectors.one_search():  # another thread's search, never ending
        s = opened()
        time.sleep(1.0)
        t0 = time.monotonic()
        s.close()
        took = time.monotonic() - t0
    assert took < 3.0, took


def test_a_fill_asked_for_beside_the_pass_goes_first(
    pg_url: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under searches that never pause, a fill asked for while the pass at open reads a step
    of users is not kept behind the rest of that step's waits (a review measured 19 s in a
    HYBRID store: five waits a 500-row user's keyword rows, 16 users a step)."""
    url = pg_url("fillfirst")
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")

    def opened() -> PostgresMemoryStore:
        return _open_searching(url, "HYBRID")

    s = opened()
    words = [
        "apple",
        "banana",
        "cherry",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
    ]
    rng = np.random.default_rng(0)
    for u in range(14):
        s.add(
            [" ".join(rng.choice(words, 6)) + f" item{i}" for i in range(600)],
            record_type="memory",
            user_ids=f"u{u}",
        )
    s.close()
    monkeypatch.delenv(_user_vectors.PREFILL_ENV)
    with _user_vectors.one_search():  # a search always under way
        s = opened()
        try:
            users = s._vectors.users
            time.sleep(0.5)
            t0 = time.monotonic()
            with users.lock:
                users._submit("u0", True)  # the fill a user's second search asks for
            while "u0" not in users._users and time.monotonic() - t0 < 60:
                time.sleep(0.01)
            waited = time.monotonic() - t0
        finally:
            s.close()
    assert waited < 3.0, waited


def test_the_pass_parses_outside_the_lock_and_never_copies_the_matrix(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every search asks the cache under its lock, so what the pass does under it is
    short: the rows are parsed before the lock is taken, a join holds at most a step's
    rows (one user at least), and the matrix is made once, for the whole plan, while empty
    (a doubling copy under the lock held searches up to 0.6 s at 100k records)."""
    from oracleagentmemory.core.store.vectors import _index_keeper, _vector_rows

    monkeypatch.setattr(_user_vectors, "PREFILL_STEP_ROWS", 2 * PER_USER)
    allocs: list[tuple[int, int]] = []
    parsed_locked: list[bool] = []
    joined: list[int] = []
    cache: list[Any] = []
    alloc = _vector_rows.IndexRows._alloc
    columns_of = _index_keeper.IndexKeeper.columns_of
    plan = _user_vectors.UserVectors._prefill_plan
    install_many = _user_vectors.UserVectors._install_many

    def counted_alloc(rows: Any, cap: int) -> None:
        allocs.append((rows._n, cap))
        alloc(rows, cap)

    def planning(users: Any, *args: Any) -> None:
        cache.append(users)  # before any row is read
        plan(users, *args)

    def parsing(keeper: Any, rows: Any, dim: int) -> Any:
        parsed_locked.append(cache[0].lock.locked())
        return columns_of(keeper, rows, dim)

    def joining(users: Any, step: Any, state: Any, answers: Any, *args: Any) -> Any:
        joined.append(sum(len(a) for a in answers))  # the rows of one hold of the lock
        return install_many(users, step, state, answers, *args)

    monkeypatch.setattr(_vector_rows.IndexRows, "_alloc", counted_alloc)
    monkeypatch.setattr(_user_vectors.UserVectors, "_prefill_plan", planning)
    monkeypatch.setattr(_index_keeper.IndexKeeper, "columns_of", parsing)
    monkeypatch.setattr(_user_vectors.UserVectors, "_install_many", joining)
    _budget(monkeypatch, USERS)
    store = _open(url)
    try:
        assert store._vectors.users.wait_filled(30)
        assert sorted(cache[0].prefilled) == [f"u{i}" for i in range(USERS)]
        assert allocs and all(n == 0 for n, _ in allocs), allocs  # made while empty: no copy
        assert allocs[-1][1] >= USERS * PER_USER
        assert len(parsed_locked) == USERS and not any(parsed_locked)
        assert joined == [2 * PER_USER] * (USERS // 2), joined  # a step a join
    finally:
        store.close()


def test_the_reservation_stays_within_the_cache(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget larger than the cache (``OAM_USER_CACHE_PREFILL_MB`` has no ceiling)
    reserves no more rows than the cache may hold; memory refused leaves the pass to grow
    the matrix as users join."""
    from oracleagentmemory.core.store.vectors import _vector_rows

    most = 4_000  # rows: more than an empty index's first 1,024, less than the plan's 12,400
    monkeypatch.setattr(_user_vectors, "MAX_BYTES", most * 4 * DIM)
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "1000000")
    caps: list[int] = []
    alloc = _vector_rows.IndexRows._alloc

    def counted_alloc(rows: Any, cap: int) -> None:
        caps.append(cap)
        alloc(rows, cap)

    monkeypatch.setattr(_vector_rows.IndexRows, "_alloc", counted_alloc)
    store = _open(url)
    try:
        assert store._vectors.users.wait_filled(30)
        assert caps[-1] == most and max(caps) == most, caps
        assert len(store._vectors.users.prefilled) == USERS
    finally:
        store.close()

    def refused(rows: Any, cap: int) -> None:
        if rows._n == 0 and cap > 1024:
            raise MemoryError
        alloc(rows, cap)

    monkeypatch.setattr(_vector_rows.IndexRows, "_alloc", refused)
    store = _open(url)
    try:
        assert store._vectors.users.wait_filled(30)
        assert len(store._vectors.users.prefilled) == USERS  # read in all the same
    finally:
        store.close()

"""PostgreSQL: a user's first searches read what a search ranked in SQL reads (issue #54).

The in-process cache of users' rows (``_user_vectors``) is filled after the answer of a
user's second search, on the cache's own thread: no request reads a user's history (every
vector, every keyword row). These tests count the statements each search sends from the
request's thread, the rows they return and the rows their scans read (``EXPLAIN ANALYZE``
of the same statements), and check that the fill reads through the users' indexes, counts
each search once, and misses no commit made while it reads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from oracleagentmemory.core import PostgresMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search import _user_vectors

from ._embedders import HashingEmbedder
from ._pg_helpers import needs_postgres

pytestmark = needs_postgres

DIM = 16
USERS = 10
PER_USER = 300
WORDS = ["river", "mountain", "coffee", "violin", "garden", "rocket", "naïve", "straße", "東京",
         "lamp", "window", "bridge", "apple", "desk", "cloud", "stone"]  # fmt: skip
SCANS = {"Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan"}
BRANCH = ("oam-vector-branch_0",)


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(1 + i % 6))


@pytest.fixture(scope="module")
def url(pg_server: Any) -> Iterator[str]:
    """One store's tables for the module: ``USERS`` users of ``PER_USER`` memories each,
    written interleaved (as live writes land), analyzed."""
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS first_search CASCADE")
        conn.execute("CREATE SCHEMA first_search")
    got = f"{pg_server.get_uri()}&options=-csearch_path%3Dfirst_search%2Cpublic"
    store = _open(got, "HYBRID")
    n = USERS * PER_USER
    store.add(
        [_text(i) for i in range(n)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % USERS}" for i in range(n)],
    )
    store.close()
    with psycopg.connect(got, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    yield got


def _open(url: str, strategy: str) -> PostgresMemoryStore:
    return PostgresMemoryStore(
        HashingEmbedder(DIM),
        url,
        vector_dim=DIM,
        schema_policy="create_if_necessary",
        search_strategy=SearchStrategy[strategy],
    )


class _Trace:
    """Every statement psycopg sends while on, with its thread and the rows it returned."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._of: dict[int, dict[str, Any]] = {}
        """The statement each live cursor sent last (cursors have no room for it)."""
        self.on = True
        execute = psycopg.Cursor.execute
        fetchall = psycopg.Cursor.fetchall
        trace = self

        def traced_execute(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            if not trace.on:
                return execute(cur, query, params, **kw)
            got = {"thread": threading.current_thread().name, "sql": str(query),
                   "params": params, "returned": 0}  # fmt: skip
            with trace._lock:
                trace.sent.append(got)
            trace._of[id(cur)] = got
            return execute(cur, query, params, **kw)

        def traced_fetchall(cur: Any) -> Any:
            rows = fetchall(cur)
            got = trace._of.pop(id(cur), None)
            if got is not None:
                got["returned"] += len(rows)
            return rows

        monkeypatch.setattr(psycopg.Cursor, "execute", traced_execute)
        monkeypatch.setattr(psycopg.Cursor, "fetchall", traced_fetchall)

    def take(self) -> list[dict[str, Any]]:
        with self._lock:
            got, self.sent = self.sent, []
        return got


def _rows_read(trace: _Trace, url: str, statements: list[dict[str, Any]]) -> tuple[int, set[str]]:
    """The rows the scans of ``statements`` read (returned and filtered out, every loop),
    run again under ``EXPLAIN ANALYZE`` (not traced) with sequential scans off, and the
    tables any of them still scanned whole (no index could serve it)."""
    total, scanned = 0, set()

    def walk(node: dict[str, Any]) -> None:
        nonlocal total
        if node.get("Node Type") in SCANS:
            total += int(node.get("Actual Loops", 1)) * (
                int(node.get("Actual Rows", 0)) + int(node.get("Rows Removed by Filter", 0))
            )
            if node["Node Type"] == "Seq Scan":
                scanned.add(node["Relation Name"])
        for child in node.get("Plans", ()):
            walk(child)

    trace.on = False
    with psycopg.connect(url, autocommit=True) as conn:
        # What the users' indexes can serve, whatever this small table's planner prefers.
        conn.execute("SET enable_seqscan = off")
        for s in statements:
            if not s["sql"].lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + s["sql"], s["params"])
            got = row.fetchone()
            assert got is not None
            plan = got[0]
            walk((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
    trace.on = True
    return total, scanned


def _search(store: Any, user: str, query: str = "coffee river") -> list[tuple[str, float]]:
    hits = store.search(query, 10, user_id=user, exact_user_match=True)
    return [(r.id, d) for r, d in hits]


@pytest.fixture
def small_users(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)  # the users here are cached


@pytest.fixture(autouse=True)
def no_prefill(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores here read no user in at open: a user the pass at open has not reached yet
    is searched as these tests search (``test_postgres_prefill`` tests the pass)."""
    monkeypatch.setenv(_user_vectors.PREFILL_ENV, "0")


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_a_users_first_searches_read_no_history(
    url: str, strategy: str, small_users: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first and second search of a user: a few statements from the request's
    thread, a few rows back, no table scanned whole, none of the user's history read; the
    cache's fill after the second reads the user's rows through indexes, off the request."""
    store = _open(url, strategy)
    trace = _Trace(monkeypatch)
    me = threading.current_thread().name
    users = store._vectors.users
    try:
        _search(store, "u0")  # the store's own first use (pool, catalog): not a user's
        users.wait_filled()
        trace.take()
        for nth in (1, 2):
            _search(store, "u3")
            users.wait_filled()
            sent = trace.take()
            # The request's: its own thread's and the branch thread's (HYBRID ranks the
            # vector branch there while its keyword statement runs here).
            mine = [s for s in sent if s["thread"] in (me, *BRANCH)]
            fill = [s for s in sent if s["thread"].startswith("oam-user-cache")]
            heads = [s["sql"][:70] for s in mine]
            assert 1 <= len(mine) <= {"VECTOR": 1, "KEYWORD": 2, "HYBRID": 5}[strategy], heads
            # What ranking in SQL returns: HYBRID's 50 vector hits, a score per record
            # matching (about half of this user's), the candidates' conditions, the records.
            assert sum(s["returned"] for s in mine) <= 3 * PER_USER, heads
            # None brings back as many rows as the user has (as reading them in would).
            assert all(s["returned"] < PER_USER for s in mine), heads
            read, scanned = _rows_read(trace, url, mine)
            assert not scanned, scanned
            # Ranking in SQL reads the user's chunks in their index (twice over for
            # HYBRID's wider rounds), the scores' keyword rows, the candidates' records.
            assert read <= {"VECTOR": 2, "KEYWORD": 3, "HYBRID": 5}[strategy] * PER_USER, read
            assert bool(fill) == (nth == 2), fill  # the fill: after the second, off-request
        # What the fill read: the user's rows, through the users' indexes.
        assert sum(s["returned"] for s in fill) >= PER_USER
        read, scanned = _rows_read(trace, url, fill)
        assert not scanned, scanned
        assert read <= 4 * PER_USER + 50, read
        assert "u3" in users._users
        assert users.words.has("u3") == (strategy != "VECTOR")
        # The third search is ranked in process: the log's check (VECTOR: in one pipeline
        # with the records), the keyword candidates' conditions, the records.
        _search(store, "u3")
        mine = [s for s in trace.take() if s["thread"] in (me, *BRANCH)]
        assert len(mine) <= {"VECTOR": 2, "KEYWORD": 2, "HYBRID": 3}[strategy], mine
        assert "pg_current_snapshot" in mine[0]["sql"], mine
    finally:
        store.close()


def test_each_search_counts_once_and_a_first_catch_up_forgets_no_count(
    url: str, small_users: None
) -> None:
    """A HYBRID search asks the cache from both branches: one count. A user searched once
    before the cache's first catch-up still counts that search."""
    store = _open(url, "HYBRID")
    users = store._vectors.users
    try:
        _search(store, "u1")
        users.wait_filled()
        assert "u1" not in users._users and users._searches.get("u1") == 1
        _search(store, "u2")  # u2: once
        _search(store, "u1")  # u1: twice, read in after the answer
        users.wait_filled()
        assert "u1" in users._users
        _search(store, "u1")  # ranked from the cache: its first catch-up
        _search(store, "u2")  # u2: twice
        users.wait_filled()
        assert "u2" in users._users and users.words.has("u2")
    finally:
        store.close()


def test_a_commit_made_while_the_fill_reads_is_not_missed(
    url: str, small_users: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another store writes, updates and deletes the user's records after the fill read
    them and before it joins the cache: the cache answers as SQL does."""
    store, other = _open(url, "HYBRID"), _open(url, "HYBRID")
    users = store._vectors.users
    install = _user_vectors.UserVectors._install

    def late(self: Any, *args: Any) -> None:
        other.add(["coffee coffee coffee river"], record_type="memory", record_ids=["late"],
                  user_ids="u5")  # fmt: skip
        other.update("memory", "m15", content="violin")
        other.delete("memory", "m25")
        install(self, *args)

    try:
        _search(store, "u5")
        monkeypatch.setattr(_user_vectors.UserVectors, "_install", late)
        _search(store, "u5")
        users.wait_filled()
        monkeypatch.undo()
        assert "u5" in users._users and users.words.has("u5")
        got = _search(store, "u5")
        saved = users.words_for, users.for_user
        users.words_for = users.for_user = lambda user, **kw: None  # type: ignore[method-assign]
        try:
            want = _search(store, "u5")
        finally:
            users.words_for, users.for_user = saved  # type: ignore[method-assign]
        assert [i for i, _ in got] == [i for i, _ in want]
        assert got[0][0] == "late" and "m25" not in [i for i, _ in got]
        for (_, a), (_, b) in zip(got, want, strict=True):
            assert a == pytest.approx(b, abs=1e-6)
    finally:
        other.delete("memory", "late")
        other.update("memory", "m15", content=_text(15))
        store.close()
        other.close()


def test_the_keyword_rows_the_fill_reads_score_as_the_server_does(
    url: str, small_users: None
) -> None:
    """Stems with a quote, accents, CJK, several occurrences in a row: read as arrays from
    the server (no text to parse), scored as SQL scores them."""
    store = _open(url, "KEYWORD")
    users = store._vectors.users
    try:
        texts = ["it's o'clock it's", "naïve naïve straße 東京", "l'été déjà vu", "a\\b c'\\d"]
        store.add(texts, record_type="memory", record_ids=[f"q{i}" for i in range(4)],
                  user_ids="u7")  # fmt: skip
        queries = ["it's", "naïve 東京", "l'été", "c'\\d", "coffee garden"]
        sql = {q: _search(store, "u7", q) for q in queries}
        _search(store, "u7")
        users.wait_filled()
        assert users.words.has("u7")
        for q in queries:
            got = _search(store, "u7", q)
            assert [i for i, _ in got] == [i for i, _ in sql[q]], q
            for (_, a), (_, b) in zip(got, sql[q], strict=True):
                assert a == pytest.approx(b, abs=1e-12)
    finally:
        for i in range(4):
            store.delete("memory", f"q{i}")
        store.close()


def test_a_keyword_first_search_reads_the_rows_it_scores(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KEYWORD ranked in SQL takes the user's row count and length from the index on
    (user, length), reading no row, and reads the rows holding the query's word once, for
    their document count and their scores: not every row of the user (schema version 17).
    Its scores are those SQLite's FTS5 gives (``test_postgres_backend``)."""
    store = _open(url, "KEYWORD")
    trace = _Trace(monkeypatch)
    me = threading.current_thread().name
    holding = sum("violin" in _text(i).split() for i in range(6, USERS * PER_USER, USERS))
    assert 0 < holding < PER_USER // 3
    try:
        _search(store, "u0")  # the store's own first use
        trace.take()
        hits = _search(store, "u6", "violin")
        mine = [s for s in trace.take() if s["thread"] == me]
    finally:
        store.close()
    assert len(hits) == min(10, holding)
    scans: list[tuple[str, str, int]] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("Node Type") in SCANS:
            rows = int(node.get("Actual Rows", 0)) + int(node.get("Rows Removed by Filter", 0))
            where = node.get("Index Name") or node.get("Relation Name", "")
            scans.append((node["Node Type"], where, int(node.get("Actual Loops", 1)) * rows))
        for child in node.get("Plans", ()):
            walk(child)

    trace.on = False
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        for s in mine:
            plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + s["sql"], s["params"])
            got = plan.fetchone()
            assert got is not None
            walk((got[0] if isinstance(got[0], list) else json.loads(got[0]))[0]["Plan"])
    lengths = [n for kind, where, n in scans if where.endswith("_kw_user_len")]
    assert ("Index Only Scan", PER_USER) in [
        (kind, n) for kind, where, n in scans if where.endswith("_kw_user_len")
    ], scans
    heap = sum(n for kind, where, n in scans if where.endswith("_kw") and kind != "Index Only Scan")
    assert heap <= holding, (heap, holding, scans)
    assert lengths, scans

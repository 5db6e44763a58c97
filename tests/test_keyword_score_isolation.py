"""Keyword scores depend only on what the caller may see (issue 48, class 2).

BM25 weighs a word by how many rows hold it (document frequency), among how many rows, of
what average length. Counted over the whole store, another user's writes moved a user's own
scores: Alice could tell whether anyone else wrote a word, and Bob could push her matches
down. A user-scoped ranking now counts these over that user's rows alone, so Alice's
distances and order for her own records are the same whatever other users store, change or
delete: checked for KEYWORD and HYBRID, on SQLite, PostgreSQL (the server's statements and
the in-process cache of a user's keyword rows) and PostgreSQL under row security, through
the Python API and REST, with other users' rows of the same words, of other words, of many
chunks, without a user, in growing numbers, updated and deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import psycopg
import pytest

from oracleagentmemory.core import (
    PostgresMemoryStore,
    SchemaPolicy,
    SQLiteMemoryStore,
    deepsec as ds,
)
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.engines.sqlite._sqlite import SQLiteDialect
from oracleagentmemory.core.store.search._keyword import query_terms

from ._embedders import HashingEmbedder
from .test_store_contract_rls import POLICIES, PolicyStore

ALICE_TEXTS = [
    "green tea by the river",
    "the river garden and the violin",
    "violin lessons in Lisbon on Tuesday",
    "harbor walk, green tea, harbor lights",
    "Lisbon harbor ferry",
    "a garden of maple trees",
    "tea tea tea: the tea_time ritual",
    "quiet evening",
    "river stone river stone river",
    "copper kettle for green tea",
]
SAME_WORDS = ["tea", "river", "garden", "violin", "harbor", "lisbon", "green", "maple"]
OTHER_WORDS = ["saturn", "quartz", "falcon", "ember", "nimbus", "tundra", "zephyr", "orbit"]
QUERIES = [
    "tea",
    "river garden",
    "violin harbor lisbon",
    "green tea kettle",
    "maple",
    "tea_time",  # several tokens: a phrase
    "saturn quartz",  # only other users' words
    "what did I say about the harbor?",
]
ENGINES = ["sqlite", "postgres", "postgres-rls"]
STRATEGIES = [SearchStrategy.KEYWORD, SearchStrategy.HYBRID]


def _texts(words: list[str], n: int, seed: int, long: bool = False) -> list[str]:
    out = []
    for i in range(n):
        size = 700 + i if long else 1 + (i * 7 + seed) % 9  # a long text is several chunks
        out.append(" ".join(words[(i * 3 + j * (seed + 1)) % len(words)] for j in range(size)))
    return out


@pytest.fixture(params=ENGINES)
def open_store(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: HashingEmbedder
) -> Iterator[Callable[[SearchStrategy], Any]]:
    made: list[Any] = []
    engine = str(request.param)

    def factory(strategy: SearchStrategy) -> Any:
        kw: dict[str, Any] = {
            "search_strategy": strategy,
            "schema_policy": SchemaPolicy.CREATE_IF_NECESSARY,
        }
        if engine == "sqlite":
            store: Any = SQLiteMemoryStore(embedder, str(tmp_path / "m.db"), **kw)
            made.append(store)
            return store
        url = request.getfixturevalue("pg_url")(f"kw{len(made)}")
        store = PostgresMemoryStore(embedder, url, **kw)
        made.append(store)
        if engine == "postgres":
            return store
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT current_schema()").fetchone()
            assert row is not None
            schema = str(row[0])
            store_id = store._core.store_id
            ds.add_deep_data_security_policies(conn, schema, store_id, POLICIES)
        return PolicyStore(store, url, schema, store_id)  # alice's calls run as alice

    yield factory
    for store in made:
        store.close()


def _answers(store: Any, k: int = 50) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for query in QUERIES:
        got = store.search(query, k, user_id="alice", exact_user_match=True)
        assert all(r.user_id == "alice" for r, _ in got), query
        out[query] = [(r.id, float(d)) for r, d in got]
    return out


def _stems(query: str) -> list[str]:
    from oracleagentmemory.core.store.engines.postgres._postgres_words import Words

    return [s for stems in Words("x").stems(query_terms(query)) for s in stems]


def _same(got: dict[str, Any], want: dict[str, Any], step: str) -> None:
    """Same records, same distances (to float rounding: PostgreSQL may score in SQL or in
    process), same order (equal distances in record order either way)."""
    for query in want:
        a, b = got[query], want[query]
        assert {i for i, _ in a} == {i for i, _ in b}, (step, query)
        mine, theirs = dict(a), dict(b)
        for rid, dist in theirs.items():
            assert mine[rid] == pytest.approx(dist, rel=1e-9, abs=1e-12), (step, query, rid)
        for (x, dx), (y, dy) in zip(a, b, strict=True):
            assert x == y or abs(dx - dy) < 1e-9, (step, query)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_a_users_scores_ignore_what_other_users_store(
    open_store: Callable[[SearchStrategy], Any], strategy: SearchStrategy
) -> None:
    store = open_store(strategy)
    store.add(
        ALICE_TEXTS,
        record_type="memory",
        user_ids="alice",
        record_ids=[f"a{i}" for i in range(len(ALICE_TEXTS))],
    )
    alone = _answers(store)
    assert sum(len(v) for v in alone.values()) > 15  # the queries do match
    if strategy is SearchStrategy.KEYWORD:
        assert len({round(d, 6) for _, d in alone["tea"]}) > 1  # ranked, not all equal
    seed = 0
    bobs: list[str] = []
    for words in (SAME_WORDS, OTHER_WORDS):
        for n in (1, 10, 50):
            seed += 1
            ids = [f"b{seed}-{i}" for i in range(n)]
            store.add(_texts(words, n, seed), record_type="memory", user_ids="bob",
                      record_ids=ids)  # fmt: skip
            bobs += ids
            _same(_answers(store), alone, f"bob +{n} of {words[0]}")
    # Bob's records of many chunks, records of no user, a third user's.
    store.add(_texts(SAME_WORDS, 3, 9, long=True), record_type="memory", user_ids="bob",
              record_ids=["long-0", "long-1", "long-2"])  # fmt: skip
    bobs += ["long-0", "long-1", "long-2"]
    store.add(_texts(SAME_WORDS, 20, 11), record_type="memory",
              record_ids=[f"g{i}" for i in range(20)])  # fmt: skip
    store.add(_texts(SAME_WORDS, 20, 12), record_type="memory", user_ids="carol",
              record_ids=[f"c{i}" for i in range(20)])  # fmt: skip
    _same(_answers(store), alone, "long, global and carol's")
    for i, rid in enumerate(bobs[:12]):
        store.update("memory", rid, text=" ".join(SAME_WORDS[: 1 + i % 8]) * 3)
    _same(_answers(store), alone, "bob's updates")
    for rid in bobs:
        store.delete("memory", rid)
    _same(_answers(store), alone, "bob's deletes")
    # Alice's own writes do move her scores (the statistics are hers).
    store.add(_texts(SAME_WORDS, 30, 21), record_type="memory", user_ids="alice",
              record_ids=[f"a-more{i}" for i in range(30)])  # fmt: skip
    moved = _answers(store)
    assert moved["tea"] != alone["tea"]


def test_a_users_scores_are_those_of_a_store_holding_only_their_rows(
    open_store: Callable[[SearchStrategy], Any], tmp_path: Path, embedder: HashingEmbedder
) -> None:
    """The model: FTS5's bm25() over a store with Alice's rows alone (no other user's)."""
    store = open_store(SearchStrategy.KEYWORD)
    store.add(ALICE_TEXTS, record_type="memory", user_ids="alice",
              record_ids=[f"a{i}" for i in range(len(ALICE_TEXTS))])  # fmt: skip
    store.add(_texts(SAME_WORDS, 40, 3), record_type="memory", user_ids="bob",
              record_ids=[f"b{i}" for i in range(40)])  # fmt: skip
    alone = SQLiteMemoryStore(embedder, str(tmp_path / "alone.db"),
                              search_strategy=SearchStrategy.KEYWORD,
                              schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)  # fmt: skip
    alone.add(ALICE_TEXTS, record_type="memory", user_ids="alice",
              record_ids=[f"a{i}" for i in range(len(ALICE_TEXTS))])  # fmt: skip
    with pytest.MonkeyPatch.context() as m:  # FTS5's own bm25(), over Alice's rows alone
        m.setattr(SQLiteDialect, "keyword_scores", lambda self, terms, exact, local=None: None)
        want = _answers(alone)
    alone.close()
    if not isinstance(store, SQLiteMemoryStore):  # PostgreSQL ORs a phrase's words
        want = {q: a for q, a in want.items() if len(query_terms(q)) == len(_stems(q))}
    for step in ("against FTS5 over Alice's rows", "again (PostgreSQL: her cached rows)"):
        got = _answers(store)
        _same({q: got[q] for q in want}, want, step)


class _Undo(Exception):
    pass


def test_inside_a_write_the_scores_are_the_users_own(tmp_path: Path) -> None:
    """SQLite: inside a write transaction (FTS5 holding its newest rows in memory) a
    user-scoped query is scored in process from the main table, with the same statistics:
    Bob's rows written in that transaction move nothing of Alice's."""
    s = SQLiteMemoryStore(None, str(tmp_path / "w.db"), search_strategy=SearchStrategy.KEYWORD,
                          schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)  # fmt: skip
    s.add(ALICE_TEXTS, record_type="memory", user_ids="alice")
    d = s._dialect
    assert isinstance(d, SQLiteDialect)
    outside = {q: d.keyword_scores(query_terms(q), {"user": "alice"}) for q in QUERIES}
    bob_rows = [(10_000 + i, 10_000 + i, 0, text, "bob", None, None)
                for i, text in enumerate(_texts(SAME_WORDS, 30, 5))]  # fmt: skip
    with pytest.raises(_Undo), d.transaction():
        d.keyword_index_add(bob_rows)
        assert d.words.user_totals("bob")[0] == 30  # the transaction's rows are counted
        inside = {q: d.keyword_scores(query_terms(q), {"user": "alice"}) for q in QUERIES}
        raise _Undo  # rolled back
    assert d.words.user_totals("bob") == (0, 0)
    for query in QUERIES:
        a, b = inside[query], outside[query]
        assert a is not None and b is not None
        assert [r for r, _ in a] == [r for r, _ in b], query
        for (_, x), (_, y) in zip(a, b, strict=True):
            assert x == pytest.approx(y, rel=1e-12), query
    assert outside["tea"]
    s.close()


def test_over_rest_a_one_user_key_sees_the_same_scores(tmp_path: Path) -> None:
    """``oam serve`` (keyword store, SQLite): what Alice's key reads does not move while Bob's
    key writes and deletes memories of the same words."""
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    import httpx

    from ._servers import new_key, running_server

    db = str(tmp_path / "rest.db")
    SQLiteMemoryStore(None, db, search_strategy=SearchStrategy.KEYWORD,
                      schema_policy=SchemaPolicy.CREATE_IF_NECESSARY).close()  # fmt: skip
    keys = {u: new_key(db, u) for u in ("alice", "bob")}
    with running_server(db, "--embedder", "none", "--search-strategy", "keyword") as base:

        def client(who: str) -> httpx.Client:
            auth = {"Authorization": f"Bearer {keys[who]}"}
            return httpx.Client(base_url=base, timeout=60, headers=auth)

        def answers(alice: httpx.Client) -> dict[str, list[tuple[str, float]]]:
            out = {}
            for query in QUERIES:
                r = alice.post(
                    "/v1/search",
                    json={
                        "query": query,
                        "user_id": "alice",
                        "max_results": 50,
                        "strategy": "keyword",
                    },
                )
                assert r.status_code == 200, r.text
                out[query] = [(x["record"]["id"], x["distance"]) for x in r.json()["results"]]
            return out

        with client("alice") as alice, client("bob") as bob:
            for text in ALICE_TEXTS:
                r = alice.post("/v1/memories", json={"content": text, "user_id": "alice"})
                assert r.status_code == 201, r.text
            alone = answers(alice)
            assert sum(len(v) for v in alone.values()) > 15
            made = []
            for n, seed in ((1, 1), (10, 2)):
                for text in _texts(SAME_WORDS, n, seed):
                    r = bob.post("/v1/memories", json={"content": text, "user_id": "bob"})
                    assert r.status_code == 201, r.text
                    made.append(r.json()["id"])
                _same(answers(alice), alone, f"bob +{n} over REST")
            for rid in made:
                assert bob.delete(f"/v1/memories/{rid}").status_code == 200
            _same(answers(alice), alone, "bob's deletes over REST")


def test_sqlite_remembered_statistics_follow_every_write(tmp_path: Path) -> None:
    """SQLite remembers a user's statistics while nothing is written: a write of this
    store, of another store on the same file (another connection), or one rolled back, is
    followed at the next search, as a store opened afresh answers."""
    path = str(tmp_path / "r.db")

    def opened() -> SQLiteMemoryStore:
        return SQLiteMemoryStore(None, path, search_strategy=SearchStrategy.KEYWORD,
                                 schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)  # fmt: skip

    a, b = opened(), opened()
    a.add(ALICE_TEXTS, record_type="memory", user_ids="alice")
    first = _answers(a)
    steps: list[tuple[str, Callable[[], Any]]] = [
        (
            "another connection adds",
            lambda: b.add(
                _texts(SAME_WORDS, 5, 1),
                user_ids="alice",
                record_type="memory",
                record_ids=[f"x{i}" for i in range(5)],
            ),
        ),
        (
            "this store adds",
            lambda: a.add(_texts(SAME_WORDS, 7, 2), user_ids="alice", record_type="memory"),
        ),
        ("another connection deletes", lambda: b.delete("memory", "x0")),
        ("another connection updates", lambda: b.update("memory", "x1", text="tea " * 9)),
    ]
    seen = [first]
    for step, write in steps:
        _answers(a)  # remembered
        write()
        fresh = opened()
        _same(_answers(a), _answers(fresh), step)
        seen.append(_answers(fresh))
        fresh.close()
    assert all(x["tea"] != y["tea"] for x, y in pairwise(seen))
    a.close()
    b.close()

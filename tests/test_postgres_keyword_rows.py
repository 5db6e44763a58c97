"""PostgreSQL's keyword rows live on a narrow side table (schema version 10): written with
their chunks, gone with them, and moved there (or made again) when an older store opens."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from oracleagentmemory.core import PostgresMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION

from ._embedders import HashingEmbedder

pytestmark = pytest.mark.skipif(
    "postgres" not in os.environ.get("OAM_TEST_BACKENDS", "sqlite,postgres"),
    reason="OAM_TEST_BACKENDS excludes postgres",
)

TEXTS = [
    "coffee with oat milk every morning",
    "running along the river at dawn",
    "the runner ran a marathon in Zürich",
    "budget planning meeting on Monday",
    "green tea and a walk in the mountains",
    "coffee beans from a small roaster",
]
QUERIES = ["coffee", "running river", "marathon Zürich", "tea mountains walk", "budget"]


def _store(url: str) -> Any:
    return PostgresMemoryStore(
        HashingEmbedder(16), url, schema_policy="create_if_necessary",
        search_strategy=SearchStrategy.KEYWORD,
    )  # fmt: skip


def _answers(store: Any) -> list[list[tuple[str, float]]]:
    return [
        [(r.id, round(dist, 9)) for r, dist in store.search(q, 10, **scope)]
        for q in QUERIES
        for scope in ({}, {"user_id": "u1", "exact_user_match": True})
    ]


def _fill(store: Any) -> None:
    store.add(
        TEXTS, record_type="memory", record_ids=[f"m{i}" for i in range(len(TEXTS))],
        user_ids=[f"u{i % 2}" for i in range(len(TEXTS))],
    )  # fmt: skip


def _count(d: Any, sql: str) -> int:
    return int(d.execute(sql)[0][0])


def test_rows_are_written_with_their_chunks_and_leave_with_them(
    pg_url: Callable[[str], str],
) -> None:
    store = _store(pg_url("kw"))
    try:
        _fill(store)
        d, t = store._dialect, store._dialect.tables
        assert _count(d, f"SELECT COUNT(*) FROM {t.kw}") == len(TEXTS)
        wrong = f"SELECT COUNT(*) FROM {t.kw} k JOIN {t.chunks} c ON c.cid = k.cid"
        assert _count(d, wrong + " WHERE k.user_id IS DISTINCT FROM c.user_id") == 0
        store.delete("memory", "m0")
        store.update("memory", "m1", content="swimming in the lake")
        assert _count(d, f"SELECT COUNT(*) FROM {t.kw}") == len(TEXTS) - 1
        assert [r.id for r, _ in store.search("swimming", 3)] == ["m1"]
        assert store.search("dawn", 3) == []
        assert d.execute(f"SELECT SUM(rows) FROM {t.kw_totals}") == [(len(TEXTS) - 1,)]
    finally:
        store.close()


@pytest.mark.parametrize("version", [9, 7])
def test_an_older_store_gets_its_keyword_rows_on_the_side_table(
    pg_url: Callable[[str], str], version: int
) -> None:
    """From version 9 the rows are copied over; from 7 (an older row format) made again.
    Either way the answers and the BM25 totals are what they were."""
    url = pg_url(f"v{version}")
    store = _store(url)
    _fill(store)
    before = _answers(store)
    d, t = store._dialect, store._dialect.tables
    totals = d.execute(f"SELECT SUM(rows), SUM(tokens) FROM {t.kw_totals}")
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:  # back to the chunks' own column
        conn.execute(f"ALTER TABLE {t.chunks} ADD COLUMN tsv tsvector, ADD COLUMN tsv_len int")
        filler = "k.tsv, k.tsv_len" if version == 9 else "'''stale'':1'::tsvector, 1"
        conn.execute(
            f"UPDATE {t.chunks} c SET (tsv, tsv_len) = (SELECT {filler} FROM {t.kw} k"
            " WHERE k.cid = c.cid)"
        )
        conn.execute(f"CREATE INDEX oam_chunks_tsv ON {t.chunks} USING gin (tsv)")
        conn.execute(f"DROP TABLE {t.kw}")
        conn.execute(f"UPDATE {t.meta} SET value = '{version}' WHERE key = 'schema_version'")
    store = _store(url)
    try:
        d = store._dialect
        got = d.execute(f"SELECT value FROM {t.meta} WHERE key = 'schema_version'")
        assert got == [(str(SCHEMA_VERSION),)]
        assert _answers(store) == before
        assert d.execute(f"SELECT SUM(rows), SUM(tokens) FROM {t.kw_totals}") == totals
        assert _count(d, f"SELECT COUNT(*) FROM {t.kw}") == len(TEXTS)
        columns = d.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'oam_chunks'"
            " AND table_schema = current_schema() AND column_name LIKE 'tsv%'"
        )
        assert columns == []
        assert d.has_keyword_index()
    finally:
        store.close()

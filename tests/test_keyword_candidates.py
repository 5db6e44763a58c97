"""A SQLite keyword query joins only its best-scored chunks to their records first and widens
until the answer is the full one: with filters that reject most candidates, scope
preferences that reorder them, and chunks of one record, it returns exactly what joining
every match returns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search import _keyword_branch

WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "garden",
    "lamp",
    "violin",
    "harbor",
    "maple",
    "copper",
]


@pytest.fixture
def store(tmp_path: Path) -> SQLiteMemoryStore:
    s = SQLiteMemoryStore(
        None,
        str(tmp_path / "k.db"),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.KEYWORD,
    )
    rng = np.random.default_rng(3)
    n = 600
    texts = [" ".join(rng.choice(WORDS, int(rng.integers(2, 9)))) for _ in range(n)]
    s.add(
        texts,
        record_type="memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % 3}" for i in range(n)],
        agent_ids=[f"a{i % 2}" for i in range(n)],
        metadata=[{"keep": i % 17 == 0} for i in range(n)],
    )
    return s


QUERIES = [
    {"query": "apple violin", "max_results": 10},
    {"query": "stone", "max_results": 10, "user_id": "u1", "exact_user_match": True},
    {"query": "river lamp", "max_results": 10, "metadata_filter": {"keep": True}},
    {"query": "garden maple", "max_results": 10, "user_id": "u2", "agent_id": "a1"},
    {
        "query": "cloud harbor copper",
        "max_results": 25,
        "user_id": "u0",
        "exact_user_match": True,
        "metadata_filter": {"keep": True},
    },
    {"query": "nothing-matches-this", "max_results": 10},
]


def _answers(store: SQLiteMemoryStore) -> list[list[tuple[str, float]]]:
    out = []
    for q in QUERIES:
        args = dict(q)
        hits = store.search(args.pop("query"), args.pop("max_results"), **args)
        out.append([(r.id, round(d, 9)) for r, d in hits])
    return out


def test_candidate_limit_returns_the_full_answer(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    full_sql: list[str] = []
    monkeypatch.setattr(type(store._dialect), "keyword_hits_scoped", False)
    full = _answers(store)
    monkeypatch.setattr(type(store._dialect), "keyword_hits_scoped", True)
    monkeypatch.setattr(_keyword_branch, "KEYWORD_CANDIDATES", 5)
    monkeypatch.setattr(_keyword_branch, "KEYWORD_CANDIDATES_MAX", 80)
    execute = store._dialect.execute

    def spy(sql: str, params: object = ()) -> object:
        if "MATERIALIZED" in sql:
            full_sql.append(sql)
        return execute(sql, params)  # type: ignore[arg-type]

    monkeypatch.setattr(store._dialect, "execute", spy)
    limited = _answers(store)
    assert limited == full
    assert any("LIMIT 10" in s for s in full_sql)  # the narrow first pass ran
    assert any("LIMIT 80" in s for s in full_sql)  # and widened where it had to
    assert sum(len(a) for a in full) > 40

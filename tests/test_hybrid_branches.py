"""A hybrid search on a large in-process index runs its vector scan on the store's branch
thread while the keyword query runs: the answers are exactly the sequential ones, errors in
either branch surface, and close() stops the thread."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search import _keyword_branch, _vector_branch
from oracleagentmemory.core.store.vectors import _vector_index
from tests._embedders import HashingEmbedder

WORDS = ["apple", "river", "stone", "cloud", "garden"]
WORDS += ["violin", "harbor", "maple", "copper", "lamp"]


def _store(path: Path) -> SQLiteMemoryStore:
    s = SQLiteMemoryStore(
        HashingEmbedder(),
        str(path),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.HYBRID,
    )
    rng = np.random.default_rng(7)
    n = 300
    s.add(
        [" ".join(rng.choice(WORDS, int(rng.integers(2, 8)))) for _ in range(n)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % 3}" for i in range(n)],
        agent_ids=[f"a{i % 2}" for i in range(n)],
        metadata=[{"keep": i % 4 == 0} for i in range(n)],
    )
    return s


SEARCHES: list[dict[str, Any]] = [
    {"query": "apple violin", "k": 10},
    {"query": "stone river", "k": 10, "user_id": "u1", "exact_user_match": True},
    {"query": "garden", "k": 60, "user_id": "u2", "agent_id": "a1"},
    {"query": "maple copper lamp", "k": 5, "metadata_filter": {"keep": True}},
    {"query": "cloud harbor", "k": 10, "user_id": "u0", "exact_user_match": True,
     "metadata_filter": {"keep": False}},
]  # fmt: skip


def test_parallel_branches_answer_as_sequential_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _store(tmp_path / "h.db")
    sequential = [[(r.id, d) for r, d in s.search(**q)] for q in SEARCHES]
    assert s._vectors.pool is None  # a small index scans inline
    monkeypatch.setattr(_vector_branch, "PARALLEL_BRANCH_ROWS", 0)
    threads: list[str] = []
    search = _vector_index.VectorIndex.search

    def spy(self: Any, *a: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread().name)
        return search(self, *a, **kw)

    monkeypatch.setattr(_vector_index.VectorIndex, "search", spy)
    parallel = [[(r.id, d) for r, d in s.search(**q)] for q in SEARCHES]
    assert parallel == sequential
    assert threads and all(t.startswith("oam-vector-branch") for t in threads)
    s.close()
    assert s._vectors.pool is None


def test_an_error_in_either_branch_surfaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _store(tmp_path / "h.db")
    monkeypatch.setattr(_vector_branch, "PARALLEL_BRANCH_ROWS", 0)

    def broken(self: Any, *a: Any, **kw: Any) -> Any:
        raise RuntimeError("vector branch failed")

    with monkeypatch.context() as m:
        m.setattr(_vector_index.VectorIndex, "search", broken)
        with pytest.raises(RuntimeError, match="vector branch failed"):
            s.search("apple", 5)
    with monkeypatch.context() as m:
        m.setattr(
            _keyword_branch.KeywordBranch,
            "hits",
            lambda *a, **kw: (_ for _ in ()).throw(RuntimeError("keyword branch failed")),
        )
        with pytest.raises(RuntimeError, match="keyword branch failed"):
            s.search("apple", 5)
    assert s.search("apple", 5)  # the store still answers
    s.close()

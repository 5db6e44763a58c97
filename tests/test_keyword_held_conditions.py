"""HYBRID checks its keyword candidates' conditions in the in-process index that ranked its
vector branch (#53): the same hits and distances as the statement that checks them, through
invalidated, deleted and other-typed records, other agents, preferred threads, on SQLite's
index and PostgreSQL's user cache; records the index does not hold go to SQL."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search._search_sql import ScopeSpec

WORDS = [
    "camping",
    "hiking",
    "painting",
    "pottery",
    "guitar",
    "concert",
    "museum",
    "garden",
    "beach",
]


@pytest.mark.parametrize("rid_table", [True, False], ids=["rid-table", "rids-searched"])
def test_held_conditions_answer_as_the_statement(
    make_store: Any, monkeypatch: pytest.MonkeyPatch, rid_table: bool
) -> None:
    from oracleagentmemory.core.store.search import _user_vectors
    from oracleagentmemory.core.store.vectors import _vector_index

    if not rid_table:  # every posting list's ids searched, as a wide span's are
        monkeypatch.setattr(_vector_index, "RID_PLACES_MAX", 0)
    monkeypatch.setattr(_user_vectors, "MIN_ROWS", 0)
    monkeypatch.setattr(_user_vectors, "SEARCHES_BEFORE_CACHING", 1)
    rng = np.random.default_rng(11)
    store = make_store(search_strategy=SearchStrategy.HYBRID)

    def text() -> str:
        return " ".join(rng.choice(WORDS, size=int(rng.integers(3, 9))).tolist())

    for thread, agent in (("t0", "a"), ("t1", "b")):
        store.add(
            [text() for _ in range(40)],
            record_type="message",
            record_ids=[f"{thread}-{i}" for i in range(40)],
            thread_ids=thread,
            user_ids="u",
            agent_ids=agent,
            roles="user",
        )
    store.add(
        [text() for _ in range(10)],
        record_type="memory",
        record_ids=[f"mem{i}" for i in range(10)],
        user_ids="u",
    )
    store.search("camping beach", 5, user_id="u", exact_user_match=True)
    store._vectors.users.wait_filled()  # PostgreSQL: the user read into the cache
    store.search("camping beach", 5, user_id="u", exact_user_match=True)
    store.update("message", "t0-3", status=RecordStatus.INVALID)
    store.update("memory", "mem2", status=RecordStatus.INVALID)
    store.delete("message", "t1-4")
    queries = ["camping beach", "pottery guitar museum", "garden", "hiking painting concert"]
    scopes = [
        ScopeSpec({"user": "u"}, {}),
        ScopeSpec({"user": "u"}, {"thread": "t1"}),
        ScopeSpec({"user": "u"}, {"thread": "t0", "agent": "b"}),
        ScopeSpec({"user": "u", "agent": "a"}, {}),
    ]
    held_used = 0
    for scope in scopes:
        for types in (["message"], ["message", "memory"]):
            for valid_only in (True, False):
                for query in queries:
                    conditions = partial(
                        store._vectors.conditions,
                        types=types,
                        scope=scope,
                        flt=None,
                        valid_only=valid_only,
                    )
                    kb = store._search._keywords
                    with store._core.lock:
                        qvec = store._core.embed([query], is_query=True)[0]
                        store._vectors.branch(qvec, 50, types, scope, None, valid_only)()
                        want = kb.hits(query, 50, types, scope, None, valid_only)
                        if conditions([rid for rid, _ in want]) is not None:
                            held_used += 1
                        got = kb.hits(query, 50, types, scope, None, valid_only, held=conditions)
                    assert got == want, (scope, types, valid_only, query)
                    assert want
    assert held_used >= len(queries) * 2 * 2 * (len(scopes) - 2)

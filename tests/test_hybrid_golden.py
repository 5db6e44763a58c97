"""HYBRID ranks as it did before #53's speed-up, on both engines.

``tests/golden/hybrid_goldens.json`` holds the answers of the implementation before #53 (commit
fa91177, ``tests/golden/make_hybrid_goldens.py``) to the searches of ``tests/_hybrid_corpus``:
user-, thread- and un-scoped, with and without a metadata filter, dated queries, before and
after a later write. Each search runs three times: the repeats may be answered from the
per-user caches the first search fills (SQLite's keyword postings, #53), and must agree.

The order of every answer must be the goldens'; distances may move by float32 rounding
(``DISTANCE_TOLERANCE``): the follow-ups' neighbour similarities are float32 dot products,
read from the in-process index since #53 instead of from a statement's rows, and BLAS
rounds a row's product differently with its place in the matrix (5e-8 here at most).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core.dbsearch import SearchStrategy

from ._hybrid_corpus import answers

DISTANCE_TOLERANCE = 1e-6
GOLDEN = json.loads((Path(__file__).parent / "golden" / "hybrid_goldens.json").read_text())


def test_hybrid_answers_match_the_goldens(make_store: Any, backend: str) -> None:
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    got = answers(store)
    want = GOLDEN[backend]
    assert len(got) == len(want)
    for i, (repeats, expected) in enumerate(zip(got, want, strict=True)):
        for answer in repeats:
            assert [rid for rid, _ in answer] == [rid for rid, _ in expected], f"search {i}"
            for (_, dist), (_, old) in zip(answer, expected, strict=True):
                assert math.isclose(dist, old, rel_tol=0, abs_tol=DISTANCE_TOLERANCE), f"search {i}"


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_goldens_rank_something(backend: str) -> None:
    """The goldens are not trivially empty: most searches return a full list."""
    full = [a for a in GOLDEN[backend] if len(a) >= 3]
    assert len(full) > 0.9 * len(GOLDEN[backend])

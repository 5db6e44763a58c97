"""Fuzz every public store, client and thread method on both engines (issue 8).

Each generated program opens a fresh store, a client on it and a thread, then makes calls
drawn from ``_fuzz_calls.METHODS``. Every call must either succeed or raise ValueError /
TypeError (or an exception its method documents, such as KeyError for an unknown thread);
a call that raises must leave every table exactly as it was (a full dump is compared); a
search never returns a non-finite distance; a thread's seq_nos never repeat.

``make test`` runs a short profile; ``make fuzz`` runs at least 5,000 calls per engine
(``OAM_FUZZ_CALLS`` sets the count; the test fails if fewer calls were made).
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from oracleagentmemory.core import OracleAgentMemory, SearchStrategy

from ._dump import dump_store
from ._embedders import HashingEmbedder
from ._fuzz_calls import DIM, METHODS, calls

pytestmark = pytest.mark.slow  # servers or programs in subprocesses: make test, not test-quick

CALLS = int(os.environ.get("OAM_FUZZ_CALLS", "1000"))
"""Calls per engine (``make fuzz`` sets 5000)."""
STEPS = 20
"""Calls per generated program."""
ALLOWED = (ValueError, TypeError)
_stores = itertools.count()


def _targets(client: Any) -> dict[str, Any]:
    return {"store": client.store, "client": client, "thread": client.get_thread("t1")}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 600 else text[:600] + "..."


def _check_result(method: Any, result: Any) -> None:
    hits = result if isinstance(result, list) else []
    for hit in hits:
        distance = hit[1] if isinstance(hit, tuple) else getattr(hit, "distance", 0.0)
        assert math.isfinite(distance), f"{method.name} returned a non-finite distance"


def _check_seq_nos(store: Any) -> None:
    d = store._dialect
    rows = d.execute(
        f"SELECT thread_id, seq_no, count(*) FROM {d.tables.records} WHERE family = 'message'"
        " GROUP BY thread_id, seq_no HAVING count(*) > 1"
    )
    assert rows == [], f"seq_no repeated in a thread: {rows}"


def _run_program(
    client: Any,
    store: Any,
    program: list[Any],
    made: Counter[str],
    raised: Counter[str],
    messages: Counter[str],
) -> None:
    """Seed a fresh store, then make ``program``'s calls and check every outcome."""
    client.add_user("u1", "a user")
    client.add_memory("user likes green tea", memory_id="m1", user_id="u1")
    client.add_memory("another user's fact", memory_id="a", user_id="u2")
    client.add_memory("nobody's memory", memory_id="b")
    thread = client.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    thread.add_memory("a thread memory", memory_id="tm")
    thread.add_messages([{"role": "user", "content": "hello there"}])
    targets = _targets(client)
    for method, kwargs in program:
        before = dump_store(store)
        made[repr(method)] += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = getattr(targets[method.target], method.name)(**kwargs)
        except (*ALLOWED, *method.raises) as exc:
            assert not isinstance(exc, UnicodeError), f"{method!r}: unchecked text {exc!r}"
            raised[type(exc).__name__] += 1
            messages[f"{method!r}: {type(exc).__name__}: {str(exc)[:60]}"] += 1
            after = dump_store(store)
            assert after == before, (
                f"{method!r}({_short(kwargs)}) raised {exc!r} but changed the store"
            )
        else:
            _check_result(method, result)
    _check_seq_nos(store)


def test_fuzz_every_public_method(
    backend: str, make_store: Any, request: pytest.FixtureRequest
) -> None:
    made: Counter[str] = Counter()
    raised: Counter[str] = Counter()
    messages: Counter[str] = Counter()

    @settings(
        max_examples=max(1, CALLS // STEPS),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        program=st.lists(calls(), min_size=STEPS, max_size=STEPS),
        strategy=st.sampled_from([SearchStrategy.VECTOR, SearchStrategy.HYBRID]),
    )
    def run(program: list[Any], strategy: SearchStrategy) -> None:
        store = make_store(
            embedder=HashingEmbedder(DIM),
            memory_store_id=f"f{next(_stores)}",
            search_strategy=strategy,
            name="fuzz.db",
        )
        client = OracleAgentMemory(store=store)
        try:
            _run_program(client, store, program, made, raised, messages)
        finally:  # a failing example is replayed many times while shrinking: never leak
            client.close()
            store.close()

    run()
    if os.environ.get("OAM_FUZZ_VERBOSE"):
        for text, count in messages.most_common(40):
            print(f"{count:5d} {text}")
    total = sum(made.values())
    print(f"\nfuzz[{backend}]: {total} calls over {len(made)} methods; raised {dict(raised)}")
    assert total >= CALLS - STEPS, f"only {total} calls were made"
    assert {repr(m) for m in METHODS} <= set(made) or CALLS < 2000  # every method was called

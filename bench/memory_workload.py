"""The agent-memory peers' workload: LoCoMo turns as chat messages of many users, with their
e5 vectors computed once, so every system is given the same vectors.

Records: the dev split's 5 conversations, one user each (``u00``-``u04``), every turn a
message; then ``users - 5`` distractor users, each holding a contiguous run of turns taken in
order from the same conversations (same texts, same vectors, other users), until ``n``
records. A user-scoped search that leaks another user's record can therefore return the very
turn the question is about under the wrong user: leaks are counted, never credited. Queries:
the usable LoCoMo questions of the 5 real users, each searched within its user's records;
R@10 = |gold turns in the top 10 of that user| / |gold|, averaged (the dataset's metric).

``write(folder)`` writes ``workload.json`` (records, ingest batches = one per user session,
questions) and ``doc_vectors.npy`` / ``query_vectors.npy`` (float32, L2-normalised,
aligned with records / questions); every worker, in any virtualenv, reads those with
``bench/peer_envs/workload_io.py``. :class:`LookupEmbedder` gives our client the same vectors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.locomo_data import DEFAULT_DATA, questions, turns
from oracleagentmemory.apis.embedders.embedder import IEmbedder, embed_in_thread

REAL_USERS = 5


def build(data: Path = DEFAULT_DATA, n: int = 10_000, users: int = 50) -> dict[str, Any]:
    """The records, ingest batches and questions (no vectors)."""
    convs = json.loads(Path(data).read_text())[:REAL_USERS]
    records: list[dict[str, Any]] = []
    batches: list[list[int]] = []
    qs: list[dict[str, Any]] = []
    per_conv = [turns(c) for c in convs]
    for u, (conv, ts) in enumerate(zip(convs, per_conv, strict=True)):
        user = f"u{u:02d}"
        usable, _ = questions(conv, {t["dia_id"] for t in ts})
        for q in usable:
            qs.append({"user": user, "text": q["question"], "gold": q["gold"],
                       "category": q["category"]})  # fmt: skip
        _add_user(records, batches, user, ts)
    pool = [t for ts in per_conv for t in ts]
    extra = users - REAL_USERS
    left = n - len(records)
    if extra > 0 and left > 0:
        start = 0
        for j in range(extra):
            take = left // extra + (1 if j < left % extra else 0)
            run = [pool[(start + i) % len(pool)] for i in range(take)]
            start += take
            _add_user(records, batches, f"u{REAL_USERS + j:02d}", run)
    return {"records": records[:n], "batches": batches, "questions": qs,
            "users": users, "real_users": REAL_USERS}  # fmt: skip


def _add_user(
    records: list[dict[str, Any]], batches: list[list[int]], user: str, ts: list[dict[str, Any]]
) -> None:
    by_session: dict[int, list[int]] = {}
    for t in ts:
        by_session.setdefault(t["session"], []).append(len(records))
        records.append({"id": f"r{len(records):06d}", "user": user, "dia": t["dia_id"],
                        "text": t["text"], "timestamp": t["timestamp"]})  # fmt: skip
    batches.extend(by_session.values())


def embed(workload: dict[str, Any]) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """(doc vectors, query vectors) with the default embedder, through the bench's disk cache
    (``bench/.cache``: computed once, minutes on 2 cores; later runs read them)."""
    from bench.vector_cache import DiskCachedEmbedder
    from oracleagentmemory.core.embedders import default_embedder

    emb = DiskCachedEmbedder(default_embedder())
    try:
        texts = list(dict.fromkeys(r["text"] for r in workload["records"]))
        table = dict(zip(texts, emb.embed(texts), strict=True))
        docs = np.stack([table[r["text"]] for r in workload["records"]]).astype(np.float32)
        qv = emb.embed([q["text"] for q in workload["questions"]], is_query=True)
    finally:
        emb.save()
    return docs, np.asarray(qv, dtype=np.float32)


def write(folder: Path, data: Path = DEFAULT_DATA, n: int = 10_000, users: int = 50) -> Path:
    """The workload and its vectors, written to ``folder`` for the workers."""
    folder.mkdir(parents=True, exist_ok=True)
    wl = build(data, n, users)
    docs, qv = embed(wl)
    np.save(folder / "doc_vectors.npy", docs)
    np.save(folder / "query_vectors.npy", qv)
    (folder / "workload.json").write_text(json.dumps(wl))
    return folder


class LookupEmbedder(IEmbedder):
    """Precomputed vectors by (text, is_query): what every system is given. A text it was not
    given raises ``KeyError`` (a system embedding something else would not be like for like).
    """

    def __init__(
        self,
        docs: dict[str, NDArray[np.float32]],
        queries: dict[str, NDArray[np.float32]],
        identity: str = "bench-lookup-e5",
    ) -> None:
        self._tables = {False: docs, True: queries}
        self._dim = int(next(iter(docs.values())).shape[0])
        self._identity = identity

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        table = self._tables[is_query]
        return np.stack([table[t] for t in texts])

    embed_async = embed_in_thread

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return 512

    @property
    def model_identity(self) -> str:
        return self._identity

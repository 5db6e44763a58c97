"""mem0 OSS on the agent-memory workload (runs in bench/.peer-venvs/mem0).

``mem0-qdrant``: ``Memory`` with its default vector store, Qdrant in local mode (embedded,
a folder on disk); ``mem0-pgvector``: its pgvector store on the given PostgreSQL (its
defaults: HNSW index, cosine). Both: ``infer=False`` (each message is stored as it is: no
LLM is called), the embedding model replaced by the precomputed vectors (mem0 asks with
``memory_action`` "add" for a record, "search" for a query), the LLM configured but never
called (``infer=False``; a dummy key, nothing listens), telemetry off (``MEM0_TELEMETRY``),
``MEM0_DIR`` in the work folder. One ``add`` call per message (``metadata={"rid": id}``, so
a hit maps back to its record); ``search(q, filters={"user_id": u}, top_k=10)`` with its
defaults (``threshold=0.1``; its BM25 and entity boosts need spaCy's ``mem0ai[nlp]``, not
installed: it falls back to the raw text and no entities, as a default install does).
With ``BENCH_EMBED_URL`` (the bench's embedding server) mem0's own ``openai`` embedder is
configured to it (``openai_base_url``, ``embedding_dims=384``) and the vectors are not replaced.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-dir-"))
os.environ.setdefault("OPENAI_API_KEY", "unused-offline")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload_io import Workload, drive, main


class PrecomputedEmbedder:
    """mem0's embedding-model interface over the workload's vectors."""

    def __init__(self, wl: Workload) -> None:
        self.wl = wl

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self.wl.vector(text, query=memory_action == "search").tolist()

    def embed_batch(self, texts: list[str], memory_action: str | None = None) -> list[list[float]]:
        return [self.embed(t, memory_action) for t in texts]


def run(system: str, wl: Workload, uri: str | None) -> dict[str, Any]:
    from importlib.metadata import version

    from mem0 import Memory

    work = Path(os.environ["MEM0_DIR"])
    if system == "mem0-qdrant":
        store: dict[str, Any] = {
            "provider": "qdrant",
            "config": {
                "path": str(work / "qdrant"),
                "collection_name": "bench",
                "embedding_model_dims": 384,
            },
        }
        what = f"mem0ai {version('mem0ai')}, qdrant-client {version('qdrant-client')} local"
    elif system == "mem0-pgvector":
        assert uri is not None, "mem0-pgvector needs a PostgreSQL URI"
        store = {
            "provider": "pgvector",
            "config": {
                "connection_string": uri,
                "collection_name": "bench",
                "embedding_model_dims": 384,
            },
        }
        what = f"mem0ai {version('mem0ai')}, pgvector store (HNSW)"
    else:
        raise SystemExit(f"unknown system {system}")
    url = os.environ.get("BENCH_EMBED_URL")
    embedder: dict[str, Any] = {"embedding_dims": 384}
    if url:
        embedder.update(
            model=os.environ.get("BENCH_EMBED_MODEL", "multilingual-e5-small"),
            openai_base_url=url,
            api_key="unused-offline",
        )
        what += ", embedder: its openai provider to the server"
    config = {
        "vector_store": store,
        "embedder": {"provider": "openai", "config": embedder},
        "history_db_path": str(work / "history.db"),
    }
    m = Memory.from_config(config)
    if not url:
        m.embedding_model = PrecomputedEmbedder(wl)

    def ingest(batch: list[dict[str, Any]]) -> None:
        for r in batch:
            m.add(
                [{"role": "user", "content": r["text"]}],
                user_id=r["user"],
                metadata={"rid": r["id"]},
                infer=False,
            )

    def search(user: str, text: str, vector: Any) -> list[str]:
        res = m.search(text, filters={"user_id": user}, top_k=10)
        return [str((h.get("metadata") or {}).get("rid", h.get("rid"))) for h in res["results"]]

    out = drive(wl, ingest, search)
    out["version"] = what
    return out


if __name__ == "__main__":
    main(run)

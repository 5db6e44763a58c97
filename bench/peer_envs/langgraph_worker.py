"""LangGraph's own stores on the agent-memory workload (runs in bench/.peer-venvs/langgraph).

``lg-inmemory``: ``InMemoryStore`` (a dict in this process: nothing is durable); ``lg-postgres``:
``PostgresStore`` on the given PostgreSQL (pgvector, its default HNSW index, cosine). Both:
``index={"dims": 384, "embed": <the precomputed vectors>, "fields": ["text"]}``, one
namespace ``("memories", user)`` per user, one ``batch`` of ``PutOp`` per session (what
``store.put`` would send one by one), ``store.search(("memories", user), query=..., limit=10)``.
With ``BENCH_EMBED_URL`` (the bench's embedding server) ``embed`` posts the texts to its
``/embeddings`` with httpx (in the pinned environment) and reads the vectors back, as
langchain-openai's ``OpenAIEmbeddings`` does (without its tiktoken re-chunking; that package is
not in the pins): what LangGraph is given for documents and queries alike.
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload_io import Workload, drive, main


def run(system: str, wl: Workload, uri: str | None) -> dict[str, Any]:
    from importlib.metadata import version

    import langgraph
    from langgraph.store.base import PutOp

    del langgraph

    def embed(texts: list[str]) -> list[list[float]]:
        return [wl.vector(t).tolist() for t in texts]

    url = os.environ.get("BENCH_EMBED_URL")
    if url:
        import httpx

        http = httpx.Client(timeout=60.0)
        model = os.environ.get("BENCH_EMBED_MODEL", "multilingual-e5-small")

        def embed(texts: list[str]) -> list[list[float]]:
            reply = http.post(f"{url}/embeddings", json={"model": model, "input": texts})
            reply.raise_for_status()
            data = sorted(reply.json()["data"], key=lambda d: d["index"])
            return [d["embedding"] for d in data]

    index: Any = {"dims": 384, "embed": embed, "fields": ["text"]}
    with ExitStack() as stack:
        if system == "lg-inmemory":
            from langgraph.store.memory import InMemoryStore

            store: Any = InMemoryStore(index=index)
            what = f"langgraph {version('langgraph')} InMemoryStore"
        elif system == "lg-postgres":
            from langgraph.store.postgres import PostgresStore

            assert uri is not None, "lg-postgres needs a PostgreSQL URI"
            store = stack.enter_context(PostgresStore.from_conn_string(uri, index=index))
            store.setup()
            what = f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}"
        else:
            raise SystemExit(f"unknown system {system}")

        def ingest(batch: list[dict[str, Any]]) -> None:
            store.batch(
                [PutOp(("memories", r["user"]), r["id"], {"text": r["text"]}) for r in batch]
            )

        def search(user: str, text: str, vector: Any) -> list[str]:
            return [it.key for it in store.search(("memories", user), query=text, limit=10)]

        out = drive(wl, ingest, search)
    out["version"] = what + (", embed: httpx to the server" if url else "")
    return out


if __name__ == "__main__":
    main(run)

"""Ours on the agent-memory workload (runs in the repository's .venv, PYTHONPATH=src).

``ours-vector`` / ``ours-hybrid``: ``OracleAgentMemory`` on a SQLite file, search strategy
VECTOR / HYBRID; one thread per user, one ``add_messages`` call per session (each message
indexed as its own text, ``index_texts``, so its vector is the one every system gets; by
default a thread indexes a message together with the one before it), then
``client.search(q, user_id=u, max_results=10, record_types=["message"])``.
``ours-langgraph``: the same client (VECTOR) through our LangGraph adapter
(``AgentMemoryStore``), driven exactly as LangGraph's own stores are (``langgraph_worker``).
``ours-pg``: ``ours-vector`` on PostgreSQL (the given URI). The embedder returns the
precomputed vectors (``bench.memory_workload.LookupEmbedder``): no model runs. With
``BENCH_EMBED_URL`` (the bench's embedding server, ``bench/embed_server.py``) the client
embeds through it instead with our OpenAI-wire ``Embedder``, plain texts as the peers send
them; ``ours-vector-e5prefix`` adds e5's ``query: ``/``passage: `` prefixes.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload_io import Workload, drive, main


def run(system: str, wl: Workload, uri: str | None) -> dict[str, Any]:
    from bench.memory_workload import LookupEmbedder

    from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy, SearchStrategy

    url = os.environ.get("BENCH_EMBED_URL")
    emb: Any = LookupEmbedder(wl.doc_table, wl.query_table)
    if url:
        from oracleagentmemory.core.embedders import Embedder

        prefixed = system == "ours-vector-e5prefix"
        emb = Embedder(
            os.environ.get("BENCH_EMBED_MODEL", "multilingual-e5-small"),
            api_base=url,
            api_key=None,
            embedding_dimension=384,
            query_prefix="query: " if prefixed else None,
            document_prefix="passage: " if prefixed else None,
        )
    strategy = SearchStrategy.HYBRID if system == "ours-hybrid" else SearchStrategy.VECTOR
    work = Path(tempfile.mkdtemp(prefix="oam-memory-peers-"))
    if system == "ours-pg":
        assert uri is not None, "ours-pg needs a PostgreSQL URI"
        client = OracleAgentMemory(
            connection=uri,
            embedder=emb,
            search_strategy=strategy,
            schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        )
    else:
        client = OracleAgentMemory(
            connection=str(work / f"{system}.sqlite"), embedder=emb, search_strategy=strategy
        )
    if system == "ours-langgraph":
        from langgraph.store.base import PutOp

        from oracleagentmemory.integrations.langgraph import AgentMemoryStore

        store = AgentMemoryStore(client, index={"fields": ["text"]}, user_id_from=1)

        def ingest(batch: list[dict[str, Any]]) -> None:
            store.batch(
                [PutOp(("memories", r["user"]), r["id"], {"text": r["text"]}) for r in batch]
            )

        def search(user: str, text: str, vector: Any) -> list[str]:
            return [it.key for it in store.search(("memories", user), query=text, limit=10)]

    else:
        threads: dict[str, Any] = {}

        def ingest(batch: list[dict[str, Any]]) -> None:
            user = batch[0]["user"]
            th = threads.get(user)
            if th is None:
                th = threads[user] = client.create_thread(user_id=user)
            th.add_messages(
                [{"id": r["id"], "role": "user", "content": r["text"]} for r in batch],
                index_texts=[r["text"] for r in batch],
            )

        def search(user: str, text: str, vector: Any) -> list[str]:
            res = client.search(text, user_id=user, max_results=10, record_types=["message"])
            return [r.record.id for r in res]

    try:
        out = drive(wl, ingest, search)
    finally:
        client.close()
    out["version"] = f"oracleagentmemory, {strategy.name}" + (
        ", PostgreSQL" if system == "ours-pg" else ", SQLite"
    )
    if url:
        out["version"] += ", OpenAI-wire Embedder"
    return out


if __name__ == "__main__":
    main(run)

"""Stored memories close to some texts, with their cosine similarity: the candidates of
deduplication and of automatic links."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core._shared._exit_gate import native_call
from oracleagentmemory.core.extractors._extractor import MemoryLinkTargetCandidate
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore


def _unit(vectors: Any) -> Any:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    return matrix / norms[:, None]


def keeps_vectors(store: OracleMemoryStore) -> bool:
    """Whether ``store`` embeds texts and keeps vectors (else it is searched by keyword)."""
    return (
        getattr(store, "embedder", None) is not None
        and getattr(store, "vector_dim", None) is not None
    )


def similar_memories(
    store: OracleMemoryStore,
    texts: Sequence[str],
    k: int,
    scope: Mapping[str, Any],
    *,
    exclude: Collection[str] = (),
) -> list[list[MemoryLinkTargetCandidate]]:
    """For each text, up to ``k`` VALID memory-like records in ``scope`` (store search
    keywords: user, agent, exactness), closest first, leaving out the ids in ``exclude``.

    With vectors: one embedding call for the texts, one search per text by vector, one
    embedding call for the candidates' texts (their cosine similarity to the text). Without:
    a keyword search per text and no similarity.
    """
    if not texts:
        return []
    kwargs = {
        **scope,
        "record_types": set(MEMORY_RECORD_TYPES),
        "include_invalid_results": False,
    }
    want = k + len(exclude)
    embedder: Any = getattr(store, "embedder", None)
    queries = None
    if keeps_vectors(store):
        with native_call():
            queries = _unit(embedder.embed(list(texts), is_query=False))
        hits = [store.search(None, want, query_vector=q, **kwargs) for q in queries]
    else:
        hits = [store.search(text, want, **kwargs) for text in texts]
    found = [
        [r for r, _ in h if isinstance(r.content, str) and r.id not in exclude][:k] for h in hits
    ]
    similarity: dict[str, Any] = {}
    contents = list(dict.fromkeys(r.content for rs in found for r in rs))
    if queries is not None and contents:
        with native_call():
            vectors = _unit(embedder.embed(contents, is_query=False))
        similarity = dict(zip(contents, vectors, strict=True))
    return [
        [
            MemoryLinkTargetCandidate(
                r.id,
                r.record_type,
                r.content,
                None if queries is None else float(similarity[r.content] @ queries[i]),
                r.timestamp,
            )
            for r in records
        ]
        for i, records in enumerate(found)
    ]

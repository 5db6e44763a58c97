"""Re-embedding a store with another model (``store.reembed``): one transaction, all or nothing.

Every chunk that has retrieval text gets a new vector from the new embedder (in batches), the
store's recorded model identity and dimension change with them, and the vector index is
rebuilt. It all happens in one transaction: a crash or an error (the embedder failing, bad
vectors) leaves the store exactly as it was, with the old model. Other writers wait for it
(SQLite's write lock, PostgreSQL's advisory lock); readers keep seeing the old vectors until it
commits. Chunks without retrieval text (``index_texts=""``) have no vector before or after.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oracleagentmemory.apis._duck import as_embedder
from oracleagentmemory.core.store._dialect import chunked
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store.schema._planning import check_positive_int, normalise_rows
from oracleagentmemory.core.store.schema._rows import KEYWORD_ROW_INDEX, Chunker
from oracleagentmemory.core.store.schema._schema import Schema
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper


def reembed(
    core: StoreCore, schema: Schema, keeper: IndexKeeper, embedder: Any, batch_size: Any = 256
) -> int:
    """Re-embed every chunk of the store with ``embedder``; returns the number of vectors
    written. See the module docstring for the transaction and crash semantics."""
    embedder = as_embedder(embedder)
    check_positive_int(batch_size, "batch_size")
    dim = embedder.embedding_dimension
    check_positive_int(dim, "embedder.embedding_dimension")
    d = core.dialect
    c = d.tables.chunks
    written = 0
    with core.lock:
        core.check_open()
        with d.transaction():
            old_dim = core.vector_dim
            # Clear first: chunks whose text was emptied keep no stale vector, and an engine
            # with typed vector columns can change the dimension of an empty column.
            d.execute(f"UPDATE {c} SET vector = NULL WHERE vector IS NOT NULL")
            d.note_changed(None)  # every vector changes: other processes rebuild their index
            if old_dim != dim:
                d.resize_vectors(dim)
            rows = d.execute(
                f"SELECT cid, chunk_text FROM {c} WHERE chunk_text IS NOT NULL"
                f" AND chunk_text != '' AND chunk_index <> {KEYWORD_ROW_INDEX} ORDER BY cid"
            )
            chunker = Chunker.for_tokens(embedder.max_input_tokens)
            for part in chunked(rows, batch_size):
                texts = [str(t) for _, t in part]
                vecs = _row_vectors(embedder, chunker, texts, batch_size, dim)
                d.executemany(
                    f"UPDATE {c} SET vector = ? WHERE cid = ?",
                    [(d.vector_to_db(v), cid) for (cid, _), v in zip(part, vecs, strict=True)],
                )
                written += len(part)
            schema.write_meta("vector_dim", str(dim))
            schema.write_meta("embedder", embedder.model_identity)
        core.embedder = embedder
        core.vector_dim = dim
        keeper.drop()  # rebuilt from the new vectors on the next search
        core.chunker = chunker
    return written


def _row_vectors(
    embedder: Any, chunker: Chunker, texts: list[str], batch_size: int, dim: int
) -> np.ndarray:
    """One unit vector per row text, each embedded whole as a write embeds it, except a row
    certainly past the new model's window (more words than its ``max_input_tokens``: a long
    text given one vector is one row): that one is split by the model's chunker and gets the
    normalised mean of its pieces' vectors, where the model would cut it or refuse it."""
    window = embedder.max_input_tokens or 256  # no window said: the chunker's own guess
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    for text in texts:
        split = chunker.split(text) if len(text.split()) > window else []
        parts = split if len(split) > 1 else [text]
        spans.append((len(pieces), len(parts)))
        pieces.extend(parts)
    got = []
    for batch in chunked(pieces, batch_size):
        raw = np.asarray(embedder.embed(list(batch), is_query=False), dtype=np.float64)
        if raw.shape != (len(batch), dim):
            raise ValueError(f"embedder returned shape {raw.shape}, expected ({len(batch)}, {dim})")
        got.append(normalise_rows(raw, "the embedder's output"))
    vecs = np.concatenate(got) if got else np.empty((0, dim))
    if len(pieces) == len(texts):
        return vecs
    merged = np.stack([vecs[start : start + n].mean(axis=0) for start, n in spans])
    return normalise_rows(merged, "the mean of a row's pieces")

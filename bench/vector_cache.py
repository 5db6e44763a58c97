"""A disk cache of embeddings for the LoCoMo runs (``bench/.cache/``, git-ignored).

Embedding LoCoMo's turns, windows and questions with the e5 model takes minutes on two cores;
the vectors depend only on (model identity, text, is_query), so they are kept between runs.
The wrapper reports the wrapped model's identity: a store cannot tell it from the model.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder, embed_in_thread

CACHE_DIR = Path(__file__).resolve().parent / ".cache"


class DiskCachedEmbedder(IEmbedder):
    """``inner`` behind a (text, is_query) cache saved to ``folder`` by :meth:`save`."""

    def __init__(self, inner: IEmbedder, folder: Path = CACHE_DIR) -> None:
        self._inner = inner
        ident = inner.model_identity
        slug = hashlib.sha1(ident.encode()).hexdigest()[:12]
        self.path = folder / f"vectors-{slug}.npz"
        self._cache: dict[tuple[str, bool], NDArray[np.float32]] = {}
        self._dirty = False
        self.computed = 0
        self.hits = 0
        if self.path.exists():
            with np.load(self.path, allow_pickle=False) as z:
                if str(z["identity"]) == ident:
                    texts, flags, vecs = z["texts"], z["is_query"], z["vectors"]
                    for t, q, v in zip(texts.tolist(), flags.tolist(), vecs, strict=True):
                        self._cache[(t, bool(q))] = v

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        missing = list(dict.fromkeys(t for t in texts if (t, is_query) not in self._cache))
        if missing:
            vecs = np.asarray(self._inner.embed(missing, is_query=is_query), dtype=np.float32)
            for t, v in zip(missing, vecs, strict=True):
                self._cache[(t, is_query)] = v
            self.computed += len(missing)
            self._dirty = True
        self.hits += len(texts) - len(missing)
        if not texts:
            return np.empty((0, self.embedding_dimension), dtype=np.float32)
        return np.stack([self._cache[(t, is_query)] for t in texts])

    def save(self) -> None:
        """Write the cache if anything new was embedded (atomically: a temp file, renamed)."""
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self._cache)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            identity=np.array(self._inner.model_identity),
            texts=np.array([t for t, _ in keys]),
            is_query=np.array([q for _, q in keys]),
            vectors=np.stack([self._cache[k] for k in keys]),
        )
        tmp.replace(self.path)
        self._dirty = False

    embed_async = embed_in_thread

    @property
    def embedding_dimension(self) -> int:
        return self._inner.embedding_dimension

    @property
    def max_input_tokens(self) -> int:
        return self._inner.max_input_tokens

    @property
    def model_identity(self) -> str:
        return self._inner.model_identity

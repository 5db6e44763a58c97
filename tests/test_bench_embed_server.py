"""The bench's OpenAI-wire embedding server (``bench/embed_server.py``, issue #53's second
peers table) serves our bundled model's own vectors, reading e5's prefixes, over real HTTP."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import numpy as np
import pytest
from bench.embed_server import DIMENSION, EmbeddingServer

from oracleagentmemory.core.embedders import Embedder, EmbeddingRequestError

TEXTS = ["Caroline: I went to a support group yesterday.", "Melanie: painting is my therapy"]
QUESTION = "When did Caroline go to the support group?"


def test_vectors_are_the_bundled_models_by_prefix(local_embedder: Any) -> None:
    with EmbeddingServer(cache=False) as server:
        prefixed = Embedder(
            "multilingual-e5-small",
            api_base=server.api_base,
            api_key=None,
            embedding_dimension=DIMENSION,
            query_prefix="query: ",
            document_prefix="passage: ",
        )
        plain = Embedder("multilingual-e5-small", api_base=server.api_base, api_key=None)
        docs = prefixed.embed(TEXTS)
        query = prefixed.embed([QUESTION], is_query=True)
        as_passage = plain.embed([QUESTION], is_query=True)  # no prefix: a passage
        stats = server.stats()
    assert np.allclose(docs, local_embedder.embed(TEXTS), atol=1e-5)
    assert np.allclose(query, local_embedder.embed([QUESTION], is_query=True), atol=1e-5)
    assert np.allclose(as_passage, local_embedder.embed([QUESTION]), atol=1e-5)
    assert not np.allclose(query, as_passage, atol=1e-3)
    assert plain.embedding_dimension == DIMENSION
    assert stats["inputs"] == 4 and stats["queries"] == 1 and stats["requests"] == 3
    assert stats["computed"] == 4 and stats["cpu_s"] > 0


def test_wire_format_and_refusals() -> None:
    with EmbeddingServer(cache=False) as server:
        url = f"{server.api_base}/embeddings"
        reply = httpx.post(
            url,
            json={"model": "multilingual-e5-small", "input": TEXTS, "encoding_format": "base64"},
        )
        assert reply.status_code == 200
        data = sorted(reply.json()["data"], key=lambda d: d["index"])
        vecs = [np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4") for d in data]
        assert [v.shape for v in vecs] == [(DIMENSION,)] * 2
        bad = [
            {"model": "text-embedding-3-small", "input": "x"},
            {"model": "multilingual-e5-small", "input": "x", "dimensions": 256},
            {"model": "multilingual-e5-small", "input": [""]},
            {"model": "multilingual-e5-small", "input": "x", "encoding_format": "int8"},
        ]
        assert [httpx.post(url, json=b).status_code for b in bad] == [404, 400, 400, 400]
        small = Embedder(
            "multilingual-e5-small", api_base=server.api_base, api_key=None, embedding_dimension=8
        )
        with pytest.raises(EmbeddingRequestError, match="dimensions"):
            small.embed(["x"])

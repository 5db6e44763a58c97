"""One local embedding server on the OpenAI wire, for the agent-memory peers' second table.

``EmbeddingServer`` is the tests' OpenAI-wire server (``tests/_openai_server.py``: its HTTP
handling, routing, key check and request validation) with ``POST /v1/embeddings`` answered
by our bundled embedder (multilingual-e5-small, ``default_embedder()``), 384-d. e5 is
asymmetric and the wire has no query flag, so the server reads the model's own prefixes:
an input starting ``query: `` is embedded as a query, ``passage: `` or no prefix as a passage
(what a server hosting e5 without prompt templates gives a client that sends plain text).

``cache=True`` puts the bench's disk cache (``bench/vector_cache.py``: the model's vectors
by (text, is_query), computed once) in front of the model, so a run on a busy machine does
not spend minutes on the same model work for every system: the vectors are the model's
either way, and the model's time is then left out of every figure (``computed`` counts what
the model did embed). ``stats()`` counts requests, inputs and the server's CPU, so a bench
can charge each system the server work it caused.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from types import TracebackType
from typing import Any

import numpy as np
from tests._openai_server import FakeOpenAIServer, Scripted, _error

MODEL_NAMES = ("multilingual-e5-small", "intfloat/multilingual-e5-small")
DIMENSION = 384
QUERY, PASSAGE = "query: ", "passage: "


class EmbeddingServer(FakeOpenAIServer):
    """``/v1/embeddings`` on 127.0.0.1 (a free port) with the bundled e5 model behind it."""

    def __init__(self, *, cache: bool = True, api_key: str | None = None) -> None:
        super().__init__(api_key=api_key, models=MODEL_NAMES)
        from oracleagentmemory.core.embedders import default_embedder

        model: Any = default_embedder()
        if cache:
            from bench.vector_cache import DiskCachedEmbedder

            model = DiskCachedEmbedder(model)
        self.model = model
        self.cached = cache
        self.calls = 0
        self.inputs_seen = 0
        self.queries_seen = 0
        self._model_lock = threading.Lock()
        self._cpu = 0.0

    def __enter__(self) -> EmbeddingServer:
        super().__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        super().__exit__(exc_type, exc, tb)
        save = getattr(self.model, "save", None)
        if callable(save):
            save()

    def warm(self, passages: list[str], queries: list[str]) -> None:
        """Embed what a workload will ask for into the cache before any system runs (texts
        as passages, questions as passages and as queries), so no system pays the model's
        warm-up or its cache misses for the others."""
        if not self.cached:
            return
        with self._model_lock:
            self.model.embed(list(dict.fromkeys([*passages, *queries])), is_query=False)
            self.model.embed(list(dict.fromkeys(queries)), is_query=True)
            self.model.computed = 0

    def stats(self) -> dict[str, Any]:
        """Requests, inputs (of them queries), texts the model computed (all of them without
        the cache) and the CPU seconds the server's request threads spent, so far."""
        with self._lock:
            return {
                "requests": self.calls,
                "inputs": self.inputs_seen,
                "queries": self.queries_seen,
                "computed": getattr(self.model, "computed", self.inputs_seen),
                "cpu_s": self._cpu,
            }

    def _embeddings(self, body: Any) -> Scripted:
        t0 = time.thread_time()
        try:
            return self._answer_embeddings(body)
        finally:
            with self._lock:
                self._cpu += time.thread_time() - t0

    def _answer_embeddings(self, body: Any) -> Scripted:
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return _error(400, "'model' must be a non-empty string")
        if body["model"] not in self.models:
            return _error(404, f"The model `{body['model']}` does not exist", "model_not_found")
        texts = [body.get("input")] if isinstance(body.get("input"), str) else body.get("input")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return _error(400, "'input' must be a string or a non-empty array of strings")
        if any(not t for t in texts):
            return _error(400, "'input' cannot contain empty strings")
        dims = body.get("dimensions", DIMENSION)
        if dims != DIMENSION or isinstance(dims, bool):
            return _error(400, f"'dimensions' must be {DIMENSION} for this model")
        fmt = body.get("encoding_format", "float")
        if fmt not in ("float", "base64"):
            return _error(400, "'encoding_format' must be 'float' or 'base64'")
        queries = [i for i, t in enumerate(texts) if t.startswith(QUERY)]
        passages = [i for i, t in enumerate(texts) if not t.startswith(QUERY)]
        vectors = np.empty((len(texts), DIMENSION), dtype=np.float32)
        with self._model_lock:
            if queries:
                vectors[queries] = self.model.embed(
                    [texts[i][len(QUERY) :] for i in queries], is_query=True
                )
            if passages:
                vectors[passages] = self.model.embed(
                    [texts[i].removeprefix(PASSAGE) for i in passages], is_query=False
                )
        data = []
        for index, vec in enumerate(vectors):
            embedding: Any = (
                base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
                if fmt == "base64"
                else vec.tolist()
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(t.split()) for t in texts)
        with self._lock:
            self.calls += 1
            self.inputs_seen += len(texts)
            self.queries_seen += len(queries)
            self.requests.clear()  # the base class keeps every request; a bench sends 10,000s
        reply = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return Scripted(200, json.dumps(reply).encode())

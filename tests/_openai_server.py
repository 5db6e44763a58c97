"""A small, real HTTP server speaking OpenAI's ``POST /v1/embeddings`` wire protocol.

Tests run the :class:`~oracleagentmemory.core.embedders.Embedder` adapter against it over real
sockets. Vectors are a deterministic function of the text (seeded by its sha256) and are not
normalised, so tests can check the adapter's own normalisation and ordering.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import NDArray

NATIVE_DIMENSION = 16


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # concurrent clients must not overflow the listen backlog


def vector_for(text: str, dimensions: int = NATIVE_DIMENSION) -> NDArray[np.float32]:
    """The raw (unnormalised) vector the server returns for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    full = np.random.default_rng(seed).standard_normal(NATIVE_DIMENSION) * 3.0
    return full[:dimensions].astype(np.float32)


@dataclass
class Scripted:
    """A canned reply served instead of the normal one (for retries and malformed bodies)."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: Any


class FakeOpenAIServer:
    """Serves ``/v1/embeddings`` on 127.0.0.1 (a free port) from a background thread.

    ``api_key=None`` accepts requests without a key. ``models`` are the model names it knows.
    Replies list ``data`` in shuffled order (each item keeps its ``index``), as the protocol
    allows. Push :class:`Scripted` replies onto ``script`` to override the next responses.
    """

    def __init__(
        self,
        *,
        api_key: str | None = "sk-test",
        models: tuple[str, ...] = ("test-embed",),
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.api_key = api_key
        self.models = models
        self.requests: list[Received] = []
        self.script: list[Scripted] = []
        self._lock = threading.Lock()
        self._shuffle = random.Random(1234)
        self._httpd = _Server(("127.0.0.1", 0), self._handler_class())
        if ssl_context is not None:
            self._httpd.socket = ssl_context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        scheme = "https" if ssl_context is not None else "http"
        self.api_base = f"{scheme}://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def inputs(self) -> list[list[str]]:
        """The ``input`` list of every embeddings request received, in arrival order."""
        return [r.body["input"] for r in self.requests if isinstance(r.body, dict)]

    # -- protocol --------------------------------------------------------------------------

    def _reply(self, path: str, headers: dict[str, str], raw: bytes) -> Scripted:
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(Received(path, headers, body))
            if self.script:
                return self.script.pop(0)
        if path != "/v1/embeddings":
            return _error(404, f"no route {path}", "not_found")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        if body is None:
            return _error(400, "request body is not valid JSON")
        problem = self._validate(body)
        if problem:
            return _error(400, problem)
        if body["model"] not in self.models:
            return _error(404, f"The model `{body['model']}` does not exist", "model_not_found")
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        dims = body.get("dimensions", NATIVE_DIMENSION)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vec = vector_for(text, dims)
            embedding: Any = (
                base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
                if as_base64
                else [float(x) for x in vec]
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        with self._lock:
            self._shuffle.shuffle(data)
        tokens = sum(len(t.split()) for t in texts)
        reply = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return Scripted(200, json.dumps(reply).encode())

    @staticmethod
    def _validate(body: Any) -> str | None:
        if not isinstance(body, dict):
            return "body must be a JSON object"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "'model' must be a non-empty string"
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts:
            return "'input' must be a string or a non-empty array of strings"
        if not all(isinstance(t, str) for t in texts):
            return "'input' must contain only strings"
        if any(not t for t in texts):
            return "'input' cannot contain empty strings"
        dims = body.get("dimensions", NATIVE_DIMENSION)
        if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= NATIVE_DIMENSION:
            return f"'dimensions' must be an integer between 1 and {NATIVE_DIMENSION}"
        if body.get("encoding_format", "float") not in ("float", "base64"):
            return "'encoding_format' must be 'float' or 'base64'"
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._reply(self.path, headers, raw)
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _error(status: int, message: str, code: str | None = None) -> Scripted:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return Scripted(status, json.dumps(body).encode())


def error_reply(status: int, message: str, **headers: str) -> Scripted:
    """A scripted error in OpenAI's JSON shape."""
    reply = _error(status, message)
    reply.headers.update(headers)
    return reply

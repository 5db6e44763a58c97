"""A small, real HTTP server speaking the OpenAI wire protocol, for adapter tests.

Routes: ``POST /v1/embeddings``, ``/v1/chat/completions``, ``/v1/responses`` (plain and
streamed as server-sent events) and ``/v1/rerank`` (the Cohere/Jina/vLLM shape). Tests run
the adapters against it over real sockets.

Embeddings are a deterministic function of the text (seeded by its sha256) and are not
normalised, so tests can check the adapter's own normalisation and ordering. Chat answers come
from ``replies`` (a queue of texts or callables of the request body), else echo the last user
message. Capability switches imitate real servers: ``json_schema`` ("accept", "reject_400",
"reject_500" like llama-cpp-python's server, "ignore"), ``json_object_schema`` likewise,
``vision`` (image parts accepted or refused), ``latency`` (seconds per request). ``max_tokens``
is honoured by cutting the answer (``finish_reason: "length"``); tokens are words.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
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


def response_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a chat request's ``response_format`` asks for (None: none)."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt.get("json_schema", {}).get("schema") or {})
    if fmt.get("type") == "json_object":
        return dict(fmt.get("schema") or {}) or None
    return None


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
class Streamed:
    """A reply sent as server-sent events, one chunk per event, ``pause`` seconds apart."""

    events: list[bytes]
    pause: float = 0.0
    status: int = 200


@dataclass
class Answer:
    """A scripted model answer with an explicit finish reason."""

    text: str
    finish_reason: str = "stop"


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
        self.script: list[Scripted | Streamed] = []
        self.replies: deque[str | Answer | Callable[[dict[str, Any]], str | Answer]] = deque()
        self.json_schema = "accept"
        self.json_object_schema = "accept"
        self.vision = True
        self.latency = 0.0
        self.stream_pause = 0.0
        self.in_flight = 0
        self.peak_in_flight = 0
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
        return [
            r.body["input"]
            for r in self.requests
            if isinstance(r.body, dict) and r.path == "/v1/embeddings"
        ]

    def bodies(self, path: str) -> list[Any]:
        """The JSON body of every request to ``path`` (e.g. ``/v1/chat/completions``)."""
        with self._lock:
            return [r.body for r in self.requests if r.path == path]

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
        routes = {
            "/v1/embeddings": self._embeddings,
            "/v1/chat/completions": self._chat,
            "/v1/responses": self._responses,
            "/v1/rerank": self._rerank,
        }
        if path not in routes:
            return _error(404, f"no route {path}", "not_found")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        if body is None:
            return _error(400, "request body is not valid JSON")
        return routes[path](body)

    def _embeddings(self, body: Any) -> Scripted:
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

    # -- chat: shared by /chat/completions and /responses ----------------------------------

    def _model_problem(self, body: dict[str, Any]) -> Scripted | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _error(400, "'model' must be a non-empty string")
        if body["model"] not in self.models:
            return _error(404, f"The model `{body['model']}` does not exist", "model_not_found")
        return None

    def _check_format(self, fmt: Any) -> tuple[Scripted | None, bool]:
        """(an error reply, whether the format is honoured) for a response format."""
        if fmt is None:
            return None, False
        if not isinstance(fmt, dict) or fmt.get("type") not in (
            "text",
            "json_object",
            "json_schema",
        ):
            return _error(400, f"invalid response_format {fmt!r}"), False
        behaviour = {"json_schema": self.json_schema, "json_object": self.json_object_schema}.get(
            fmt["type"], "accept"
        )
        if behaviour == "reject_400":
            return _error(400, f"response_format type {fmt['type']!r} is not supported"), False
        if behaviour == "reject_500":
            return Scripted(500, b'{"detail": "Internal Server Error"}'), False
        return None, behaviour == "accept"

    def _answer(self, body: dict[str, Any]) -> Answer:
        with self._lock:
            reply = self.replies.popleft() if self.replies else None
        if reply is None:
            return Answer("echo: " + _last_user_text(body))
        if callable(reply):
            reply = reply(body)
        return reply if isinstance(reply, Answer) else Answer(reply)

    def _cut(self, answer: Answer, limit: Any) -> Answer:
        words = answer.text.split(" ")
        if isinstance(limit, int) and len(words) > limit:
            return Answer(" ".join(words[:limit]), "length")
        return answer

    def _chat(self, body: Any) -> Scripted | Streamed:
        problem = self._model_problem(body)
        if problem:
            return problem
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "'messages' must be a non-empty array")
        problem = _check_chat_messages(messages, self.vision)
        if problem:
            return _error(400, problem)
        error, _honoured = self._check_format(body.get("response_format"))
        if error:
            return error
        answer = self._cut(self._answer(body), body.get("max_tokens"))
        usage = {
            "prompt_tokens": _words_in(messages),
            "completion_tokens": len(answer.text.split()),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if body.get("stream"):
            return self._chat_stream(body, answer, usage)
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.text},
                    "finish_reason": answer.finish_reason,
                }
            ],
            "usage": usage,
        }
        return Scripted(200, json.dumps(reply).encode())

    def _chat_stream(self, body: dict[str, Any], answer: Answer, usage: dict[str, int]) -> Streamed:
        def event(payload: dict[str, Any]) -> bytes:
            return b"data: " + json.dumps(payload).encode() + b"\n\n"

        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": body["model"]}
        events = [event({**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]})]
        for piece in re.findall(r"\S+\s*|\s+", answer.text):
            choice = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
            events.append(event({**base, "choices": [choice]}))
        last = {"index": 0, "delta": {}, "finish_reason": answer.finish_reason}
        events.append(event({**base, "choices": [last]}))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(event({**base, "choices": [], "usage": usage}))
        events.append(b": keep-alive comment\n\ndata: [DONE]\n\n")
        return Streamed(events, self.stream_pause)

    def _responses(self, body: Any) -> Scripted | Streamed:
        problem = self._model_problem(body)
        if problem:
            return problem
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list) or not items:
            return _error(400, "'input' must be a string or a non-empty array")
        problem = _check_responses_input(items, self.vision)
        if problem:
            return _error(400, problem)
        fmt = (body.get("text") or {}).get("format")
        error, _honoured = self._check_format(fmt)
        if error:
            return error
        chat_view = {**body, "messages": _responses_as_chat(items)}
        answer = self._cut(self._answer(chat_view), body.get("max_output_tokens"))
        usage = {
            "input_tokens": _words_in(chat_view["messages"]),
            "output_tokens": len(answer.text.split()),
        }
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        done = answer.finish_reason != "length"
        response = {
            "id": "resp_1",
            "object": "response",
            "model": body["model"],
            "status": "completed" if done else "incomplete",
            "incomplete_details": None if done else {"reason": "max_output_tokens"},
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
                },
            ],
            "usage": usage,
        }
        if not body.get("stream"):
            return Scripted(200, json.dumps(response).encode())

        def event(kind: str, payload: dict[str, Any]) -> bytes:
            data = json.dumps({"type": kind, **payload}).encode()
            return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"

        events = [event("response.created", {"response": {**response, "status": "in_progress"}})]
        for piece in re.findall(r"\S+\s*|\s+", answer.text):
            events.append(event("response.output_text.delta", {"delta": piece, "output_index": 1}))
        final = "response.completed" if done else "response.incomplete"
        events.append(event(final, {"response": response}))
        return Streamed(events, self.stream_pause)

    # -- rerank ------------------------------------------------------------------------------

    def _rerank(self, body: Any) -> Scripted:
        problem = self._model_problem(body)
        if problem:
            return problem
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not query:
            return _error(400, "'query' must be a non-empty string")
        if not isinstance(documents, list) or not documents:
            return _error(400, "'documents' must be a non-empty array")
        texts = [d.get("text") if isinstance(d, dict) else d for d in documents]
        if not all(isinstance(t, str) for t in texts):
            return _error(400, "'documents' must be strings or {text} objects")
        top_n = body.get("top_n", len(texts))
        if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
            return _error(400, "'top_n' must be a positive integer")
        scored = [(rerank_score(query, text), i) for i, text in enumerate(texts)]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        results = []
        for score, index in scored[:top_n]:
            item: dict[str, Any] = {"index": index, "relevance_score": score}
            if body.get("return_documents"):
                item["document"] = {"text": texts[index]}
            results.append(item)
        reply = {
            "id": "rerank-1",
            "model": body["model"],
            "results": results,
            "usage": {"total_tokens": _words_in([{"content": query}]) + len(texts)},
        }
        return Scripted(200, json.dumps(reply).encode())

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    reply = server._reply(self.path, headers, raw)  # recorded on arrival
                    if server.latency:
                        time.sleep(server.latency)
                    if isinstance(reply, Streamed):
                        self._stream(reply)
                    else:
                        self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _stream(self, reply: Streamed) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event in reply.events:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                    if reply.pause:
                        time.sleep(reply.pause)
                self.wfile.write(b"0\r\n\r\n")

            def _send(self, reply: Scripted) -> None:
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


def rerank_score(query: str, document: str) -> float:
    """The fake reranker's relevance: the share of query words found in the document."""
    words = set(re.findall(r"\w+", query.lower()))
    found = set(re.findall(r"\w+", document.lower()))
    return round(len(words & found) / max(len(words), 1), 6)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _words_in(messages: list[Any]) -> int:
    return sum(len(_text_of(m.get("content")).split()) for m in messages if isinstance(m, dict))


_DATA_URL = re.compile(r"^data:image/(png|jpeg|webp|gif);base64,[A-Za-z0-9+/]+=*$")


def _check_image_url(url: Any, vision: bool) -> str | None:
    if not vision:
        return "this model does not support image inputs"
    if not isinstance(url, str) or not (_DATA_URL.match(url) or url.startswith("https://")):
        return f"invalid image url {str(url)[:40]!r}"
    return None


def _check_chat_messages(messages: list[Any], vision: bool) -> str | None:
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "user",
            "assistant",
            "developer",
            "tool",
        ):
            return f"messages[{i}] has an invalid role"
        content = message.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            return f"messages[{i}].content must be a string or an array of parts"
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                continue
            if kind == "image_url" and isinstance(part.get("image_url"), dict):
                problem = _check_image_url(part["image_url"].get("url"), vision)
                if problem:
                    return problem
                continue
            return f"messages[{i}] has an invalid content part {part!r:.60}"
    return None


def _check_responses_input(items: list[Any], vision: bool) -> str | None:
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("role") not in (
            "system",
            "user",
            "assistant",
            "developer",
        ):
            return f"input[{i}] has an invalid role"
        content = item.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            return f"input[{i}].content must be a string or an array of parts"
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
                continue
            if kind == "input_image":
                problem = _check_image_url(part.get("image_url"), vision)
                if problem:
                    return problem
                continue
            return f"input[{i}] has an invalid content part {part!r:.60}"
    return None


def _responses_as_chat(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list):
            content = [
                {"type": "text", "text": p["text"]} if "text" in p else {"type": "image_url"}
                for p in content
            ]
        out.append({"role": item["role"], "content": content})
    return out

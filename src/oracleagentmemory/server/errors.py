"""JSON errors with one stable shape, and request-size limits.

Every error body is ``{"error": {"status": <int>, "code": "<word>", "message": "<text>"}}``.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oracleagentmemory.core.store._threads import ThreadOwnershipError

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal_error",
    503: "not_ready",
}


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str


class ErrorResponse(BaseModel):
    """The body of every error response."""

    error: ErrorBody


class ApiError(Exception):
    """An error with an HTTP status, raised by routes."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_json(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"status": status, "code": CODES.get(status, "error"), "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(_: Request, exc: ApiError) -> JSONResponse:
        headers = {401: {"WWW-Authenticate": "Bearer"}, 503: {"Retry-After": "1"}}.get(exc.status)
        return error_json(exc.status, exc.message, headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        for err in exc.errors():
            if err.get("type") == "json_invalid":
                return error_json(400, f"the body is not valid JSON: {err.get('msg', '')}")
        return error_json(422, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_json(exc.status_code, str(exc.detail))

    @app.exception_handler(ThreadOwnershipError)
    async def _owned(_: Request, exc: ThreadOwnershipError) -> JSONResponse:
        return error_json(409, str(exc))

    @app.exception_handler(PermissionError)
    async def _refused(_: Request, exc: PermissionError) -> JSONResponse:
        return error_json(403, str(exc))  # row security refused it (core.deepsec)

    @app.exception_handler(KeyError)
    async def _missing(_: Request, exc: KeyError) -> JSONResponse:
        return error_json(404, str(exc.args[0]) if exc.args else "not found")

    @app.exception_handler(ValueError)
    async def _value(_: Request, exc: ValueError) -> JSONResponse:
        return error_json(400, str(exc))

    @app.exception_handler(TypeError)
    async def _type(_: Request, exc: TypeError) -> JSONResponse:
        return error_json(400, str(exc))

    @app.exception_handler(TimeoutError)
    async def _busy(_: Request, exc: TimeoutError) -> JSONResponse:  # a lock wait timed out
        return error_json(503, str(exc), {"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def _other(_: Request, exc: Exception) -> JSONResponse:
        return error_json(500, f"internal error: {type(exc).__name__}")


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": CODES[status].replace("_", " ")}
    for status in (400, 401, 403, 404, 409, 413, 415, 422)
}
"""Documented on every API route (OpenAPI ``responses``)."""


class BodyLimit:
    """ASGI middleware: refuse request bodies larger than the limit for their path with 413,
    whether announced by Content-Length or streamed."""

    def __init__(self, app: ASGIApp, *, default: int, larger: dict[str, int]) -> None:
        self.app = app
        self.default = default
        self.larger = larger

    def limit_for(self, path: str) -> int:
        for prefix, limit in self.larger.items():
            if path.startswith(prefix):
                return limit
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    size = int(value)
                except ValueError:
                    size = -1
                if size < 0 or size > limit:
                    await _send_413(send, limit)
                    return
        seen = 0
        refused = False
        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 has been sent: whatever the app answers is dropped
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def limited() -> Message:
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit and not started:
                    await _send_413(send, limit)
                    refused = True
                    return {"type": "http.disconnect"}
            return message

        await self.app(scope, limited, guarded_send)


async def _send_413(send: Send, limit: int) -> None:
    body = json.dumps(
        {
            "error": {
                "status": 413,
                "code": CODES[413],
                "message": f"request body larger than {limit} bytes",
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

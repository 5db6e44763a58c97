"""The FastAPI application: routes, errors, size limits, and one store client per process."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from oracleagentmemory import __version__
from oracleagentmemory.server import api, api_threads, ui
from oracleagentmemory.server.errors import (
    ApiError,
    BodyLimit,
    ErrorResponse,
    install_error_handlers,
)
from oracleagentmemory.server.models import Health, Ready
from oracleagentmemory.server.paths import EncodedSlashes
from oracleagentmemory.server.security import KeyActor, SecurityHeaders
from oracleagentmemory.server.state import ServerSettings, ServerState

DESCRIPTION = """The oracleagentmemory client API over HTTP.

Send an API key (from `oam keys create --user-id U`) as `Authorization: Bearer <key>`. A key is
bound to user ids: a request about any other user is refused with 403. `/healthz` (liveness),
`/readyz` (200 once this process can serve) and `/openapi.json` need no key. Every error body is
`{"error": {"status": ..., "code": ..., "message": ...}}`.
"""


def create_app(settings: ServerSettings) -> FastAPI:
    """The application for one worker process (it opens the store on startup)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # uvicorn finishes this startup before the process takes its first connection, so no
        # request waits for the store or the model, and /readyz answers 200 from then on.
        state = await anyio.to_thread.run_sync(ServerState, settings)
        app.state.oam = state
        try:
            await anyio.to_thread.run_sync(state.load)
            yield
        finally:
            state.close()

    app = FastAPI(
        title="oracleagentmemory",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app)
    app.add_middleware(
        BodyLimit,
        default=settings.max_body_bytes,
        larger={"/v1/images": settings.max_image_bytes + (64 << 10)},
    )
    app.add_middleware(KeyActor)  # inside EndUserRoles: it reuses the key that verified
    if settings.end_user_roles:
        from oracleagentmemory.server.end_users import EndUserRoles

        app.add_middleware(EndUserRoles)
    app.add_middleware(EncodedSlashes)
    app.add_middleware(SecurityHeaders)
    _add_docs(app)

    @app.get("/healthz", tags=["health"], summary="Liveness (no key needed)")
    def healthz() -> Health:
        return Health(status="ok")

    @app.get(
        "/readyz",
        tags=["health"],
        responses={503: {"model": ErrorResponse}},
        summary="Readiness: 200 once this process can serve, else 503 (no key needed)",
    )
    async def readyz(request: Request) -> Ready:
        state: ServerState | None = getattr(request.app.state, "oam", None)
        if state is None or not state.ready:
            raise ApiError(
                503,
                "not ready: the store or the embedding model is not loaded (starting or stopping)",
            )
        return Ready(status="ready")

    app.include_router(api.router)
    app.include_router(api_threads.router)
    app.include_router(ui.router)
    return app


def _add_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI 5 (it renders OpenAPI 3.1, which FastAPI writes), from the copy
    the ``fastapi-offline`` package ships, served by this server (no third-party script, no
    download); absent when that package is missing."""
    assets = docs_assets()
    if assets is None:
        return
    from starlette.staticfiles import StaticFiles

    app.mount("/docs/assets", StaticFiles(directory=str(assets)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="oracleagentmemory API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon.png",
        )


def docs_assets() -> Path | None:
    """The folder holding Swagger UI's ``swagger-ui-bundle.js`` and ``swagger-ui.css``, found
    without importing ``fastapi_offline`` (only its files are used), or None."""
    spec = importlib.util.find_spec("fastapi_offline")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        static = Path(folder) / "static"
        if (static / "swagger-ui-bundle.js").is_file() and (static / "swagger-ui.css").is_file():
            return static
    return None


def app_from_env() -> FastAPI:
    """The application factory ``oam serve`` gives uvicorn's worker processes."""
    return create_app(ServerSettings.from_env())

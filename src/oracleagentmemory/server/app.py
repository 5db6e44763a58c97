"""The FastAPI application: routes, errors, size limits, and one store client per process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from oracleagentmemory import __version__
from oracleagentmemory.server import api, api_threads, ui
from oracleagentmemory.server.errors import BodyLimit, install_error_handlers
from oracleagentmemory.server.models import Health
from oracleagentmemory.server.paths import EncodedSlashes
from oracleagentmemory.server.security import SecurityHeaders
from oracleagentmemory.server.state import ServerSettings, ServerState

DESCRIPTION = """The oracleagentmemory client API over HTTP.

Send an API key (from `oam keys create --user U`) as `Authorization: Bearer <key>`. A key is
bound to user ids: a request about any other user is refused with 403. `/healthz` and
`/openapi.json` need no key. Every error body is
`{"error": {"status": ..., "code": ..., "message": ...}}`.
"""


def create_app(settings: ServerSettings) -> FastAPI:
    """The application for one worker process (it opens the store on startup)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = ServerState(settings)
        app.state.oam = state
        try:
            yield
        finally:
            state.close()

    app = FastAPI(title="oracleagentmemory", version=__version__, description=DESCRIPTION,
                  lifespan=lifespan, docs_url=None, redoc_url=None)
    install_error_handlers(app)
    app.add_middleware(
        BodyLimit,
        default=settings.max_body_bytes,
        larger={"/v1/images": settings.max_image_bytes + (64 << 10)},
    )
    if settings.end_user_roles:
        from oracleagentmemory.server.end_users import EndUserRoles

        app.add_middleware(EndUserRoles)
    app.add_middleware(EncodedSlashes)
    app.add_middleware(SecurityHeaders)
    _add_docs(app)

    @app.get("/healthz", tags=["health"], summary="Liveness (no key needed)")
    def healthz() -> Health:
        return Health(status="ok")

    app.include_router(api.router)
    app.include_router(api_threads.router)
    app.include_router(ui.router)
    return app


def _add_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from the pinned ``swagger-ui-bundle`` package, served from this
    server (no third-party script on this origin); absent when that package is missing."""
    try:
        from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]
    except ImportError:
        return
    from starlette.staticfiles import StaticFiles

    app.mount("/docs/assets", StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="oracleagentmemory API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )


def app_from_env() -> FastAPI:
    """The application factory ``oam serve`` gives uvicorn's worker processes."""
    return create_app(ServerSettings.from_env())

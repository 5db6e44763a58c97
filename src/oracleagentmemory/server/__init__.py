"""The REST server (FastAPI) with the ``/ui`` memory browser: ``oam serve`` (extra
``[server]``). ``create_app(settings)`` builds the application."""

try:  # the [server] extra
    import fastapi as _fastapi  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "the REST server needs the server extra: pip install 'recallwell[server]'"
    ) from exc

from oracleagentmemory.server.app import create_app
from oracleagentmemory.server.state import ServerSettings

__all__ = ["ServerSettings", "create_app"]

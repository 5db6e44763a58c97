"""The REST server (FastAPI) with the ``/ui`` memory browser: ``oam serve`` (extra
``[server]``). ``create_app(settings)`` builds the application."""

from oracleagentmemory.server.app import create_app
from oracleagentmemory.server.state import ServerSettings

__all__ = ["ServerSettings", "create_app"]

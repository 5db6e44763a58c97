"""The REST server (FastAPI) with the ``/ui`` memory browser: ``oam serve`` (extra
``[server]``). ``create_app(settings)`` builds the application."""

from oracleagentmemory.server.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]

"""``oam serve``: uvicorn with one or several worker processes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from oracleagentmemory.admin.connect import Target, sqlite_path
from oracleagentmemory.server.state import DEFAULT_MAX_BODY, ENV, ServerSettings

ACCESS_LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "default": {
            "()": "uvicorn.logging.DefaultFormatter",
            "use_colors": False,
            "fmt": "%(asctime)s %(levelprefix)s %(message)s",
        },
        "access": {
            "()": "uvicorn.logging.AccessFormatter",
            "use_colors": False,
            "fmt": '%(asctime)s %(client_addr)s "%(request_line)s" %(status_code)s',
        },
    },
    "handlers": {
        "default": {
            "class": "logging.StreamHandler",
            "formatter": "default",
            "stream": "ext://sys.stderr",
        },
        "access": {
            "class": "logging.StreamHandler",
            "formatter": "access",
            "stream": "ext://sys.stderr",
        },
    },
    "loggers": {
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}
"""``--access-log``: one timestamped line per request, on standard error (as the server's
other messages), never standard output."""


def serve(
    target: Target,
    *,
    host: str,
    port: int,
    workers: int,
    embedder: str | None,
    search_strategy: str | None,
    max_body_bytes: int | None,
    llm: dict[str, str] | None = None,
    access_log: bool = False,
    end_user_roles: bool = False,
    read_dsn: str | None = None,
) -> None:
    """Serve the store until interrupted. Each worker opens its own client on the store
    (SQLite orders writers with its file lock; PostgreSQL with the store's own locking).
    ``llm`` (see ``open_client``) extracts memories from the messages the server receives;
    ``access_log`` logs one line per request on standard error; ``end_user_roles`` runs
    each request of a one-user key as that user's PostgreSQL role (``server/end_users``);
    ``read_dsn`` is a hot standby the clients send searches and reads to once it has
    replayed their last write (the schema is created on ``target`` only)."""
    import uvicorn

    from oracleagentmemory.admin.connect import open_client
    from oracleagentmemory.admin.serving import HTTP_PROTOCOL, announce, listen, network_warning

    settings = ServerSettings(
        dsn=target.dsn,
        memory_store_id=target.memory_store_id,
        schema_owner=target.schema_owner,
        embedder=embedder,
        search_strategy=search_strategy,
        max_body_bytes=max_body_bytes or DEFAULT_MAX_BODY,
        llm=llm,
        end_user_roles=end_user_roles,
        read_dsn=read_dsn,
    )
    if end_user_roles and not target.postgres:
        raise NotImplementedError("--end-user-roles needs PostgreSQL: SQLite has no database roles")
    new = not target.postgres and not Path(sqlite_path(target.dsn)).exists()
    # Create the schema once (on the primary), before workers race to do it; a --read-dsn
    # that is no standby of it fails here.
    open_client(
        target, embedder=embedder, search_strategy=search_strategy, create=True, read_dsn=read_dsn
    ).close()
    os.environ[ENV] = settings.to_env()
    warning = network_warning(host, "oam serve")
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    sock = listen(host, port)
    extraction = f"memory extraction by {llm['model']}" if llm else "no LLM: no extraction"
    if read_dsn:
        extraction += "; reads from a standby (--read-dsn)"
    created = " (a new, empty file)" if new else ""
    announce(
        "oam serve",
        sock,
        f"store {target.memory_store_id or 'oam'} in {target.shown}"
        f"{created}; "
        f"memory browser at /ui, API docs at /docs; {extraction}",
    )
    options: dict[str, Any] = dict(
        factory=True,
        host=host,
        port=sock.getsockname()[1],
        log_level="info" if access_log else "warning",
        access_log=access_log,
        http=HTTP_PROTOCOL,
    )
    if access_log:
        options["log_config"] = ACCESS_LOG_CONFIG
    app = "oracleagentmemory.server.app:app_from_env"
    if workers > 1:
        sock.close()  # uvicorn's supervisor binds the announced port itself for its workers
        uvicorn.run(app, workers=workers, **options)
    else:
        uvicorn.Server(uvicorn.Config(app, **options)).run(sockets=[sock])

"""``oam serve``: uvicorn with one or several worker processes."""

from __future__ import annotations

import os
import sys

from oracleagentmemory.admin.connect import Target
from oracleagentmemory.server.state import DEFAULT_MAX_BODY, ENV, ServerSettings


def serve(
    target: Target,
    *,
    host: str,
    port: int,
    workers: int,
    embedder: str | None,
    search_strategy: str | None,
    max_body_bytes: int | None,
) -> None:
    """Serve the store until interrupted. Each worker opens its own client on the store
    (SQLite orders writers with its file lock; PostgreSQL with the store's own locking)."""
    import uvicorn

    from oracleagentmemory.admin.connect import open_client

    settings = ServerSettings(
        dsn=target.dsn,
        memory_store_id=target.memory_store_id,
        schema_owner=target.schema_owner,
        embedder=embedder,
        search_strategy=search_strategy,
        max_body_bytes=max_body_bytes or DEFAULT_MAX_BODY,
    )
    # Create the schema once, before workers race to do it.
    open_client(target, embedder=embedder, search_strategy=search_strategy, create=True).close()
    os.environ[ENV] = settings.to_env()
    from oracleagentmemory.admin.serving import HTTP_PROTOCOL, network_warning

    warning = network_warning(host, "oam serve")
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    uvicorn.run(
        "oracleagentmemory.server.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        access_log=False,
        http=HTTP_PROTOCOL,
    )

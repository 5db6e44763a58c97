"""Fixtures of the crash suite (``make reliability``): a real PostgreSQL via pgserver."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="oam-xdg-"))

pytest_plugins = ["tests.conftest_cluster"]  # citus_cluster (the crash suite's citus case)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    import pgserver

    server = pgserver.get_server(tempfile.mkdtemp(prefix="oam-crash-pg-"), cleanup_mode="stop")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    yield server
    server.cleanup()

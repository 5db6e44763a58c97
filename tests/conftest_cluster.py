"""Fixtures past one machine (issue #50), registered from ``tests/conftest.py``.

``citus_cluster``: a Citus coordinator and 2 workers (``tools/citus_cluster.py``), Citus built
once from the vendored source into ``~/.cache/recallwell-test`` (a few minutes the first time;
skipped only when there is no C compiler or make and no finished build), and ``citus_url``,
fresh schemas on its coordinator for the ``citus`` backend. ``pg_standby``: a
primary and a streaming hot standby (``tools/pg_standby.py``). Both are session scoped and,
like ``pg_server``, skipped when ``OAM_TEST_BACKENDS`` leaves PostgreSQL out.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from tools import citus_cluster as citus_tools, pg_standby as standby_tools
from tools._pgnode import PgInstall, PgNode


def _skip_without_postgres() -> None:
    backends = os.environ.get("OAM_TEST_BACKENDS", "sqlite,postgres").split(",")
    if "postgres" not in backends and "citus" not in backends:
        pytest.skip("OAM_TEST_BACKENDS leaves PostgreSQL out")


@pytest.fixture(scope="session")
def citus_install() -> PgInstall:
    """pgserver's PostgreSQL with Citus and pgvector, built once (cached across sessions)."""
    _skip_without_postgres()
    try:
        cache_dir = citus_tools.default_cache_dir()  # keyed by the vendored source's hash
    except FileNotFoundError as exc:
        pytest.skip(f"the Citus tests need Citus's vendored source: {exc}")
    found = citus_tools.installed(cache_dir)
    if found is not None:
        return found
    reason = citus_tools.missing_build_tools()
    if reason:
        pytest.skip(reason)
    return citus_tools.build(cache_dir)


@pytest.fixture(scope="session")
def citus_cluster(citus_install: PgInstall) -> Iterator[citus_tools.CitusCluster]:
    """A running Citus cluster: ``.dsn`` is the coordinator's, ``.workers`` the worker nodes.
    ``OAM_TEST_CITUS_DIR`` names a cluster started beforehand (``python -m
    tools.citus_cluster start DIR``), used as it is and left running."""
    running = os.environ.get("OAM_TEST_CITUS_DIR")
    if running:
        yield citus_tools.CitusCluster.load(Path(running))
        return
    base = Path(tempfile.mkdtemp(prefix="oam-citus-"))
    cluster = citus_tools.CitusCluster(base / "cluster", citus_install, workers=2)
    cluster.start()
    yield cluster
    cluster.stop()
    shutil.rmtree(base, ignore_errors=True)


_citus_schemas = itertools.count()
_SESSION = os.urandom(3).hex()  # a cluster left running serves several sessions


@pytest.fixture
def citus_url(citus_cluster: citus_tools.CitusCluster) -> Callable[[str], str]:
    """``citus_url(name)``: a coordinator URL whose default schema is fresh for this test and
    ``name`` (the ``citus`` backend of ``OAM_TEST_BACKENDS``, as ``pg_url`` for ``postgres``)."""
    made: dict[str, str] = {}
    test_id = next(_citus_schemas)

    def url(name: str) -> str:
        if name not in made:
            schema = f"c{_SESSION}{test_id}_{re.sub(r'[^a-z0-9]', '_', name.lower())}"
            with psycopg.connect(citus_cluster.dsn, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            made[name] = f"{citus_cluster.dsn}?options=-csearch_path%3D{schema}%2Cpublic"
        return made[name]

    return url


class Replication:
    """A primary and its hot standby: ``primary_dsn``, ``standby_dsn``, ``catch_up()``."""

    def __init__(self, primary: PgNode, standby: standby_tools.Standby) -> None:
        self.primary = primary
        self.standby = standby

    @property
    def primary_dsn(self) -> str:
        return self.primary.dsn()

    @property
    def standby_dsn(self) -> str:
        return self.standby.dsn

    def catch_up(self, timeout: float = 30) -> str:
        """Wait until the standby has replayed all the primary has written; that LSN."""
        return self.standby.catch_up(self.primary_dsn, timeout)


@pytest.fixture(scope="session")
def pg_standby() -> Iterator[Replication]:
    """A primary (pgserver's PostgreSQL 16 + pgvector) and a streaming hot standby of it."""
    _skip_without_postgres()
    base = Path(tempfile.mkdtemp(prefix="oam-repl-"))
    primary = standby_tools.start_primary(base / "nodes" / "primary")
    try:
        primary.sql("CREATE EXTENSION IF NOT EXISTS vector")
        standby = standby_tools.Standby.create(primary.dsn(), base / "nodes" / "standby")
    except BaseException:
        primary.stop()
        raise
    yield Replication(primary, standby)
    standby.stop()
    primary.stop()
    shutil.rmtree(base, ignore_errors=True)

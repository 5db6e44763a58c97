"""Shared fixtures: every store test runs against each backend through ``make_store``."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tools.runtime_dir import ensure_runtime_dir

from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore

from ._embedders import HashingEmbedder

pytest_plugins = ["tests.conftest_cluster"]  # citus_cluster, pg_standby (issue #50)

# Every backend-parametrised test runs on each engine; OAM_TEST_BACKENDS=sqlite narrows a
# local run (CI runs all). ``citus`` (not in the default) runs them on a Citus coordinator
# with two workers, where a store creates its tables distributed by user (docs/scaling.md).
# pgserver asks platformdirs for a private runtime directory.
ensure_runtime_dir()
BACKENDS = os.environ.get("OAM_TEST_BACKENDS", "sqlite,postgres").split(",")

StoreFactory = Callable[..., OracleMemoryStore]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without ``postgres`` in OAM_TEST_BACKENDS, the tests that need a PostgreSQL server
    skip too (``make test-quick``), not only the backend-parametrised ones."""
    if "postgres" in BACKENDS:
        return
    skip = pytest.mark.skip(reason="OAM_TEST_BACKENDS leaves PostgreSQL out")
    for item in items:
        if {"pg_server", "pg_url"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A real PostgreSQL 16 + pgvector server (the pgserver wheel), started once per session."""
    import pgserver

    where = tempfile.mkdtemp(prefix="oam-pg-")
    server = pgserver.get_server(where, cleanup_mode="stop")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    yield server
    server.cleanup()
    shutil.rmtree(where, ignore_errors=True)  # a session's data directory is 1-2 GB


_schema_ids = itertools.count()


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``pg_url(name)``: a URL whose default schema is fresh for this test and ``name``, so
    every test starts from an empty database, like a new SQLite file."""
    server = request.getfixturevalue("pg_server")
    made: dict[str, str] = {}
    test_id = next(_schema_ids)

    def url(name: str) -> str:
        if name not in made:
            schema = f"t{test_id}_{re.sub(r'[^a-z0-9]', '_', name.lower())}"
            server.psql(f"CREATE SCHEMA {schema};")
            made[name] = f"{server.get_uri()}&options=-csearch_path%3D{schema}%2Cpublic"
        return made[name]

    return url


def backend_connection(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, name: str
) -> str:
    """The connection string a test's store or client opens for database ``name``."""
    if backend == "sqlite":
        return str(tmp_path / name)
    if backend == "postgres":
        return str(request.getfixturevalue("pg_url")(name))
    if backend == "citus":  # a Citus coordinator with two workers (tests/conftest_cluster.py)
        return str(request.getfixturevalue("citus_url")(name))
    raise AssertionError(backend)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def make_store(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, embedder: HashingEmbedder
) -> Iterator[StoreFactory]:
    """Build a store on ``backend``; keyword arguments go to the store constructor.

    ``embedder=`` overrides the hashing test embedder; ``name=`` picks another database file.
    Every store built here is closed at teardown.
    """
    made: list[OracleMemoryStore] = []

    def factory(**kwargs: Any) -> OracleMemoryStore:
        emb = kwargs.pop("embedder", embedder)
        name = kwargs.pop("name", "memory.db")
        kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
        conn = backend_connection(request, backend, tmp_path, name)
        if backend == "sqlite":
            store: OracleMemoryStore = SQLiteMemoryStore(emb, conn, **kwargs)
        else:
            store = PostgresMemoryStore(emb, conn, **kwargs)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> OracleMemoryStore:
    """A store with the hashing embedder and VECTOR search."""
    return make_store()


@pytest.fixture(scope="session")
def local_embedder() -> Any:
    """The bundled offline model, loaded once per test session."""
    from oracleagentmemory.core.embedders import default_embedder

    return default_embedder()


@pytest.fixture
def spec_store(make_store: StoreFactory, local_embedder: Any) -> OracleMemoryStore:
    """The store the spec pages' examples run against: the bundled model, VECTOR search."""
    return make_store(embedder=local_embedder)


ClientFactory = Callable[..., Any]


@pytest.fixture
def make_client(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, embedder: HashingEmbedder
) -> Iterator[ClientFactory]:
    """Build an ``OracleAgentMemory`` on ``backend`` (keyword arguments go to the client).

    Defaults: the hashing test embedder, ``SchemaPolicy.CREATE_IF_NECESSARY`` and a
    ``connection`` on this test's database (``name=`` picks another one), unless ``store=``
    is given. No LLM is configured, so memory extraction is off. Clients are closed at
    teardown.
    """
    from oracleagentmemory.core import OracleAgentMemory

    made: list[Any] = []

    def factory(**kwargs: Any) -> Any:
        name = kwargs.pop("name", "client.db")
        if "store" not in kwargs:
            kwargs.setdefault("embedder", embedder)
            kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
            if "connection" not in kwargs:
                kwargs["connection"] = backend_connection(request, backend, tmp_path, name)
        client = OracleAgentMemory(**kwargs)
        made.append(client)
        return client

    yield factory
    for client in made:
        client.close()


@pytest.fixture
def client(make_client: ClientFactory) -> Any:
    """A client with the hashing embedder."""
    return make_client()


@pytest.fixture
def spec_client(make_client: ClientFactory, local_embedder: Any) -> Any:
    """The client the spec pages' examples run against: the bundled model."""
    return make_client(embedder=local_embedder)

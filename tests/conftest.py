"""Shared fixtures: every store test runs against each backend through ``make_store``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.memorystore import OracleMemoryStore

from ._embedders import HashingEmbedder

BACKENDS = ["sqlite"]

StoreFactory = Callable[..., OracleMemoryStore]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def make_store(backend: str, tmp_path: Path, embedder: HashingEmbedder) -> Iterator[StoreFactory]:
    """Build a store on ``backend``; keyword arguments go to the store constructor.

    ``embedder=`` overrides the hashing test embedder; ``name=`` picks another database file.
    Every store built here is closed at teardown.
    """
    made: list[OracleMemoryStore] = []

    def factory(**kwargs: Any) -> OracleMemoryStore:
        emb = kwargs.pop("embedder", embedder)
        name = kwargs.pop("name", "memory.db")
        kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
        if backend == "sqlite":
            store: OracleMemoryStore = SQLiteMemoryStore(emb, str(tmp_path / name), **kwargs)
        else:  # pragma: no cover - other backends register here
            raise AssertionError(backend)
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
def make_client(backend: str, tmp_path: Path, embedder: HashingEmbedder) -> Iterator[ClientFactory]:
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
                if backend == "sqlite":
                    kwargs["connection"] = str(tmp_path / name)
                else:  # pragma: no cover - other backends register here
                    raise AssertionError(backend)
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

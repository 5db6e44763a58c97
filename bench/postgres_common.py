"""What ``bench/postgres.py`` and its cold-user rows (``bench/postgres_cold.py``) share: the
result size, the store opener, random unit vectors, waiting for the user cache's fills and a
dedicated server's ``shared_buffers``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from bench import data

K = 10


def _store(engine: str, conn: str, strategy: str = "VECTOR", embedder: Any = None) -> Any:
    from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy, SQLiteMemoryStore
    from oracleagentmemory.core.dbsearch import SearchStrategy

    cls = SQLiteMemoryStore if engine == "sqlite" else PostgresMemoryStore
    return cls(
        embedder,
        conn,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        vector_dim=data.DIM,
        search_strategy=SearchStrategy[strategy],
    )


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, data.DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _wait_fills(store: Any, timeout_s: float = 30.0) -> None:
    """Until a PostgreSQL store's user cache has loaded the users it was asked to (in the
    background, after the searches that asked); at once for a store without them."""
    users = getattr(getattr(store, "_vectors", None), "users", None)
    wait = getattr(users, "wait_filled", None)
    if wait is not None:
        wait(timeout_s)


def shared_buffers_mb() -> int:
    """What a dedicated server is given: a quarter of the memory (PostgreSQL's documented
    starting point for ``shared_buffers``), at most 4 GB."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return int(min(total // 4, 4 << 30) >> 20)

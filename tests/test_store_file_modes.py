"""Files a SQLite store creates are its owner's alone (0600, folders 0700), whatever the umask:
the database, SQLite's ``-wal``/``-shm``, the writers' lock file and the vector-index snapshot
(arrays, HNSW graph, description). Files that exist keep the mode an operator gave them, and
side files then follow the database file's mode."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.store.vectors import _index_keeper, _vector_index

from ._embedders import HashingEmbedder

DIM = 32


@pytest.fixture(params=[0o022, 0o002, 0o000])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


@pytest.fixture
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshot (and build an HNSW graph for) indexes of a few dozen rows."""
    monkeypatch.setattr(_index_keeper, "SNAPSHOT_MIN_ROWS", 10)
    monkeypatch.setattr(_vector_index, "ANN_MIN_ROWS", 20)


def _modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]
    }


def _fill(store: SQLiteMemoryStore, n: int = 60, first: int = 0) -> np.ndarray:
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    store.add(
        [f"note {i} about tea" for i in range(n)],
        record_type="memory",
        record_ids=[f"n{first + i}" for i in range(n)],
        embeddings=vecs,
        user_ids=[f"u{i % 3}" for i in range(n)],
    )
    assert store.search("tea", 5, user_id="u1")
    deadline = time.monotonic() + 30
    while True:  # the HNSW graph is built in the background, started by a large search
        assert store.search(None, 5, query_vector=vecs[4])
        index = store._keeper.index
        if (index is not None and index._ann is not None) or time.monotonic() > deadline:
            return vecs
        time.sleep(0.05)


@pytest.mark.parametrize("form", ["str", "path", "url"])
def test_a_new_store_and_all_its_side_files_are_private(
    tmp_path: Path, umask: int, small_thresholds: None, form: str
) -> None:
    root = tmp_path / "data"
    db = root / "deeper" / "memory.db"
    connection: object = {"str": str(db), "path": db, "url": f"sqlite:///{db}"}[form]
    store = SQLiteMemoryStore(
        HashingEmbedder(DIM), connection, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    _fill(store)
    while_open = _modes(root)
    store.close()
    after = _modes(root)
    names = set(while_open) | set(after)
    # What the store made: the database, SQLite's journal files, the lock file and the
    # index snapshot with its graph; every one of them private.
    assert {
        "deeper/memory.db",
        "deeper/memory.db-wal",
        "deeper/memory.db-shm",
        "deeper/memory.db-oam-lock",
    } <= set(while_open), sorted(while_open)
    snapshot = [n for n in after if "-oam-index" in n]
    assert any(n.endswith("index.json") for n in snapshot), sorted(after)
    assert any(n.endswith(".bin") for n in snapshot), sorted(after)  # the HNSW graph
    for name in sorted(names):
        mode = after.get(name, while_open.get(name))
        path = root / name
        if name == ".":
            continue  # the test made this one
        if path.is_dir():
            assert mode == 0o700, (name, oct(mode or 0))
        else:
            assert mode == 0o600, (name, oct(mode or 0))
    assert stat.S_IMODE((root).stat().st_mode) == 0o700  # made by the store (its parent)

    # Reopened (from the snapshot) and written again: still private, a new snapshot included.
    again = SQLiteMemoryStore(
        HashingEmbedder(DIM), connection, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    _fill(again, 80, first=1000)
    again.close()
    for name, mode in _modes(root).items():
        if name != ".":
            assert mode == (0o700 if (root / name).is_dir() else 0o600), (name, oct(mode))


def test_the_client_and_the_command_line_create_private_stores(tmp_path: Path, umask: int) -> None:
    made = tmp_path / "client" / "m.db"
    with OracleAgentMemory(connection=str(made), embedder=HashingEmbedder(DIM)) as memory:
        memory.add_memory("Alice likes green tea.", user_id="alice")
        memory.search("tea", user_id="alice")
    for path in made.parent.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o700

    cli = tmp_path / "cli" / "keys.db"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "oracleagentmemory.cli",
            "keys",
            "create",
            "--dsn",
            str(cli),
            "--user",
            "alice",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert proc.returncode == 0, proc.stderr
    assert cli.exists()
    for path in cli.parent.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o660, 0o600])
def test_an_existing_store_keeps_its_mode_and_side_files_follow_it(
    tmp_path: Path, small_thresholds: None, mode: int
) -> None:
    old = os.umask(0o022)
    try:
        db = tmp_path / "shared.db"
        sqlite3.connect(db).close()  # made by someone else, with its own permissions
        os.chmod(db, mode)
        store = SQLiteMemoryStore(
            HashingEmbedder(DIM), str(db), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
        )
        _fill(store)
        store.close()
    finally:
        os.umask(old)
    expected_dir = mode | ((mode & 0o444) >> 2)
    seen = _modes(tmp_path)
    assert seen["shared.db"] == mode  # never loosened nor silently tightened
    assert seen["shared.db-oam-lock"] == mode
    assert any("-oam-index" in n for n in seen)
    for name, got in seen.items():
        if "-oam-index" in name:
            want = expected_dir if (tmp_path / name).is_dir() else mode
            assert got == want, (name, oct(got))

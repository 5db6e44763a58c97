"""SQLite-specific behaviour: migrations, capabilities, shared files, concurrent writers."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from oracleagentmemory.core import (
    SchemaError,
    SchemaPolicy,
    SearchStrategy,
    SQLiteMemoryStore,
)
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION
from oracleagentmemory.core.store.engines.sqlite._sqlite import SQLiteDialect

from ._embedders import HashingEmbedder


def _open(path: Path, **kwargs: object) -> SQLiteMemoryStore:
    kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
    emb = kwargs.pop("embedder", HashingEmbedder())
    return SQLiteMemoryStore(emb, str(path), **kwargs)  # type: ignore[arg-type]


def test_connection_forms(tmp_path: Path) -> None:
    for conn in (
        str(tmp_path / "a.db"),
        f"sqlite:///{tmp_path / 'b.db'}",
        ":memory:",
        tmp_path / "c.db",
    ):
        store = _open(conn)  # type: ignore[arg-type]
        assert store.add(["hello world"], record_type="memory", record_ids="m") == ["m"]
        assert store.search("hello", 1)[0][0].id == "m"
        store.close()
        store.close()  # idempotent
    raw = sqlite3.connect(tmp_path / "raw.db", check_same_thread=False)
    store = SQLiteMemoryStore(HashingEmbedder(), raw, schema_policy="create_if_necessary")
    store.add(["hello"], record_type="memory", record_ids="m")
    store.close()
    # A caller's connection stays open and holds the data.
    assert raw.execute("SELECT count(*) FROM oam_records").fetchone()[0] == 1
    raw.close()
    with pytest.raises(TypeError, match="connection"):
        SQLiteMemoryStore(HashingEmbedder(), 42, schema_policy="create_if_necessary")


def test_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = _open(tmp_path / "m.db")
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.list("memory")


def test_upgrade_from_schema_version_1(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    dialect = SQLiteDialect(str(path), "oam")
    with dialect.transaction():
        dialect.migrate(0, 1)
        dialect.execute("INSERT INTO oam_meta VALUES ('schema_version', '1')")
        dialect.execute("INSERT INTO oam_meta VALUES ('vector_dim', '64')")
    dialect.close()
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
        SQLiteMemoryStore(HashingEmbedder(), str(path))
    store = _open(path)
    assert "oam_relations" in store._dialect.managed_objects()
    version = store._dialect.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'")
    assert version == [(str(SCHEMA_VERSION),)]
    store.add(["after upgrade"], record_type="memory", record_ids="m")
    store.close()
    reopened = SQLiteMemoryStore(HashingEmbedder(), str(path))  # REQUIRE_EXISTING now passes
    assert reopened.get("memory", "m") is not None
    reopened.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    _open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE oam_meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaError, match="newer"):
        _open(path)


def test_keyword_capability_is_added_by_create_if_necessary(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    vector = _open(path)
    vector.add(["order QX-7 shipped"], record_type="memory", record_ids="m")
    vector.close()
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
        SQLiteMemoryStore(None, str(path), search_strategy=SearchStrategy.KEYWORD)
    keyword = SQLiteMemoryStore(
        None,
        str(path),
        search_strategy=SearchStrategy.KEYWORD,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )
    # Existing rows were indexed when the capability was added.
    assert [r.id for r, _ in keyword.search("QX-7", 3)] == ["m"]
    keyword.close()


def test_vector_capability_backfills_existing_rows(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    keyword = SQLiteMemoryStore(
        None,
        str(path),
        search_strategy=SearchStrategy.KEYWORD,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )
    keyword.add(["pizza on friday", "train at noon"], record_type="memory", record_ids=["p", "t"])
    keyword.close()
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
        SQLiteMemoryStore(HashingEmbedder(), str(path), search_strategy=SearchStrategy.VECTOR)
    vector = _open(path)
    assert vector.search("pizza friday", 1)[0][0].id == "p"
    vector.close()


def test_recreate_drops_everything(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = _open(path)
    store.add(["x"], record_type="memory")
    store.close()
    again = _open(path, schema_policy=SchemaPolicy.RECREATE)
    assert again.list("memory") == []
    again.close()


def test_create_if_empty(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = _open(path, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    store.add(["x"], record_type="memory", record_ids="x")
    store.close()
    again = _open(path, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    assert again.get("memory", "x") is not None
    again.close()


def test_dimension_mismatch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _open(path).close()
    with pytest.raises(ValueError, match="64"):
        SQLiteMemoryStore(None, str(path), vector_dim=32)
    with pytest.raises(ValueError, match="vector_dim"):
        SQLiteMemoryStore(HashingEmbedder(64), str(path), vector_dim=32)


def test_explicit_vectors_without_embedder(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(
        None, str(tmp_path / "m.db"), vector_dim=3, schema_policy="create_if_necessary"
    )
    store.add(
        ["a", "b"],
        record_type="memory",
        record_ids=["a", "b"],
        embeddings=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
    )
    hits = store.search(None, 2, query_vector=[0.9, 0.1, 0.0])
    assert [r.id for r, _ in hits] == ["a", "b"]
    assert hits[0][1] == pytest.approx(1 - 0.9 / np.hypot(0.9, 0.1), abs=1e-6)
    with pytest.raises(ValueError, match="embeddings"):
        store.add(["c"], record_type="memory")  # VECTOR without an embedder needs vectors
    with pytest.raises(ValueError, match="query"):
        store.search("a", 1)
    store.close()


def test_another_connection_sees_writes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    a = _open(path)
    b = _open(path)
    a.add(["first note about pizza"], record_type="memory", record_ids="one")
    assert [r.id for r, _ in b.search("pizza", 5)] == ["one"]  # b loads its index now
    a.add(["second note about pizza"], record_type="memory", record_ids="two")
    assert {r.id for r, _ in b.search("pizza", 5)} == {"one", "two"}  # b notices a's commit
    a.delete("memory", "one")
    assert [r.id for r, _ in b.search("pizza", 5)] == ["two"]
    a.close()
    b.close()


def test_concurrent_writers_get_unique_increasing_seq_no(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    stores = [_open(path), _open(path)]
    errors: list[BaseException] = []

    def writer(store: SQLiteMemoryStore, n: int) -> None:
        try:
            for i in range(25):
                store.add([f"w{n} m{i}"], record_type="message", thread_ids="shared")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(stores[n % 2], n)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    messages = stores[0].list_thread_messages("shared")
    assert [m.seq_no for m in messages] == list(range(1, 201))
    for store in stores:
        store.close()


def test_two_store_ids_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    a = _open(path, memory_store_id="tenant_a")
    b = _open(path, memory_store_id="tenant_b")
    a.add(["alpha"], record_type="memory", record_ids="x")
    b.add(["beta"], record_type="memory", record_ids="x")
    assert a.get("memory", "x").content == "alpha"  # type: ignore[union-attr]
    assert b.get("memory", "x").content == "beta"  # type: ignore[union-attr]
    a.close()
    b.close()


def test_vector_index_snapshot_makes_reopening_cheap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oracleagentmemory.core.store.vectors import _index_keeper

    monkeypatch.setattr(_index_keeper, "SNAPSHOT_MIN_ROWS", 10)
    path = tmp_path / "m.db"
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(40, 64)).astype(np.float32)
    store = _open(path)
    store.add(
        [f"n{i}" for i in range(40)],
        record_type="memory",
        embeddings=vecs,
        record_ids=[f"n{i}" for i in range(40)],
        user_ids=[f"u{i % 4}" for i in range(40)],
    )
    expected = [r.id for r, _ in store.search(None, 5, query_vector=vecs[7])]
    store.close()
    snapshot = Path(str(path) + "-oam-index") / "oam"
    assert (snapshot / "index.json").exists()

    reopened = _open(path)
    assert [r.id for r, _ in reopened.search(None, 5, query_vector=vecs[7])] == expected
    assert reopened._keeper._saved_stamp is not None  # served from the snapshot, not rebuilt
    # Writes after loading keep the (memory-mapped) index in step, deletes included.
    reopened.delete("memory", "n7")
    reopened.add(["fresh"], record_type="memory", record_ids="fresh", embeddings=[vecs[7]])
    assert reopened.search(None, 1, query_vector=vecs[7])[0][0].id == "fresh"
    scoped = reopened.search(None, 20, query_vector=vecs[7], user_id="u3", exact_user_match=True)
    assert "n7" not in {r.id for r, _ in scoped} and len(scoped) == 9
    reopened.close()

    # Another connection's write makes the saved snapshot stale: it must not be used.
    other = _open(path)
    other.add(["other"], record_type="memory", record_ids="other", embeddings=[-vecs[7]])
    writer = sqlite3.connect(path)
    writer.execute("DELETE FROM oam_records WHERE id = 'n8'")  # bypasses the store entirely
    writer.commit()
    writer.close()
    assert "n8" not in {r.id for r, _ in other.search(None, 40, query_vector=vecs[8])}
    other.close()


def test_a_write_racing_our_own_is_still_noticed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    a, b = _open(path), _open(path)
    b.add(["first pizza"], record_type="memory", record_ids="one")
    assert [r.id for r, _ in b.search("pizza", 5)] == ["one"]  # b's index is loaded
    a.add(["second pizza"], record_type="memory", record_ids="two")
    # b starts its own write after a's commit but before looking again (the race window).
    with b._dialect.transaction():
        b._dialect.execute("UPDATE oam_meta SET value = value WHERE key = 'generation'")
    assert {r.id for r, _ in b.search("pizza", 5)} == {"one", "two"}
    a.close()
    b.close()

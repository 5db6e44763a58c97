"""Many processes on one store: each catches up on the others' writes from the change log,
in time proportional to the change, and the index snapshot stays coherent with the log."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core import SchemaPolicy, SQLiteMemoryStore
from oracleagentmemory.core.store.engines.sqlite import _sqlite
from oracleagentmemory.core.store.vectors import _index_keeper

from ._embedders import HashingEmbedder

DIM = 64


def unit(seed: int) -> list[float]:
    vec = np.random.default_rng(seed).standard_normal(DIM)
    return (vec / np.linalg.norm(vec)).tolist()


def ids_near(store: Any, seed: int, k: int = 3) -> list[str]:
    return [r.id for r, _ in store.search(None, k, query_vector=unit(seed))]


def test_two_stores_see_each_others_writes(make_store: Any) -> None:
    a, b = make_store(), make_store()
    a.add(
        [f"m{i}" for i in range(20)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(20)],
        embeddings=[unit(i) for i in range(20)],
    )
    assert ids_near(b, 3)[0] == "m3"
    a.add(["new"], record_type="memory", record_ids="new", embeddings=[unit(100)])
    a.update("memory", "m3", embedding=unit(200))
    a.delete("memory", "m5")
    a.update("memory", "m7", status="invalid")
    assert ids_near(b, 100)[0] == "new"
    assert ids_near(b, 200)[0] == "m3"
    assert "m5" not in ids_near(b, 5, k=20)
    hits = b.search(None, 20, query_vector=unit(7), include_invalid_results=False)
    assert "m7" not in [r.id for r, _ in hits]
    b.add(["from b"], record_type="memory", record_ids="b1", embeddings=[unit(300)])
    assert ids_near(a, 300)[0] == "b1"


def _sqlite_store(path: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(
        HashingEmbedder(DIM), str(path), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )


def _two_stores(path: Path, n: int) -> tuple[SQLiteMemoryStore, SQLiteMemoryStore]:
    """Two stores on one file (as two processes would be), the first holding m0..m{n-1}."""
    a, b = _sqlite_store(path), _sqlite_store(path)
    a.add(
        [f"m{i}" for i in range(n)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(n)],
        embeddings=[unit(i) for i in range(n)],
    )
    return a, b


def test_catching_up_is_incremental(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _two_stores(tmp_path / "m.db", 50)
    assert ids_near(b, 1)[0] == "m1"
    assert ids_near(a, 2)[0] == "m2"
    index = b._keeper.index

    def no_rebuild(self: Any) -> Any:
        raise AssertionError("the index was rebuilt instead of caught up")

    monkeypatch.setattr(_index_keeper.IndexKeeper, "build", no_rebuild)
    for round_ in range(3):
        a.add(
            [f"r{round_}"],
            record_type="memory",
            record_ids=f"r{round_}",
            embeddings=[unit(1000 + round_)],
        )
        a.delete("memory", f"m{10 + round_}")
        assert ids_near(b, 1000 + round_)[0] == f"r{round_}"
        assert f"m{10 + round_}" not in ids_near(b, 10 + round_, k=60)
        b.add(
            [f"b{round_}"],
            record_type="memory",
            record_ids=f"b{round_}",
            embeddings=[unit(2000 + round_)],
        )  # b writes too
        assert ids_near(a, 2000 + round_)[0] == f"b{round_}"
    assert b._keeper.index is index
    assert b._keeper.state == b._dialect.read_state()[:2]
    a.close()
    b.close()


def test_a_snapshot_is_brought_forward_from_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_index_keeper, "SNAPSHOT_MIN_ROWS", 10)
    path = tmp_path / "m.db"
    writer = _sqlite_store(path)
    writer.add(
        [f"m{i}" for i in range(30)],
        record_type="memory",
        record_ids=[f"m{i}" for i in range(30)],
        embeddings=[unit(i) for i in range(30)],
    )
    assert ids_near(writer, 0)[0] == "m0"
    writer.close()  # saves the snapshot at the state it reflects
    other = _sqlite_store(path)
    other.add(["late"], record_type="memory", record_ids="late", embeddings=[unit(500)])
    other.close()  # no index was loaded: the snapshot stays at its older state
    # (A delete would void the snapshot: test_forget_sqlite checks that.)

    monkeypatch.setattr(_index_keeper.IndexKeeper, "build", lambda self: pytest.fail("rebuilt"))
    reader = _sqlite_store(path)
    assert ids_near(reader, 500)[0] == "late"
    assert ids_near(reader, 4)[0] == "m4"
    assert reader._keeper.state == reader._dialect.read_state()[:2]
    reader.close()


def test_a_store_behind_the_log_rebuilds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sqlite, "LOG_KEEP_GENERATIONS", 3)
    monkeypatch.setattr(_sqlite, "LOG_PRUNE_EVERY", 1)
    path = tmp_path / "m.db"
    a, b = _sqlite_store(path), _sqlite_store(path)
    a.add(["m0"], record_type="memory", record_ids="m0", embeddings=[unit(0)])
    assert ids_near(b, 0)[0] == "m0"
    for i in range(1, 8):
        a.add([f"m{i}"], record_type="memory", record_ids=f"m{i}", embeddings=[unit(i)])
    assert a._dialect.read_state()[2] > b._keeper.state[1]  # pruned past b's state
    assert [ids_near(b, i)[0] for i in range(8)] == [f"m{i}" for i in range(8)]
    a.close()
    b.close()


def test_another_process_writes_and_we_catch_up(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = _sqlite_store(path)
    store.add(["seed"], record_type="memory", record_ids="seed", embeddings=[unit(0)])
    assert ids_near(store, 0)[0] == "seed"
    root = Path(__file__).resolve().parents[1]
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(root)!r})
        from tests.test_change_log import _sqlite_store, unit
        s = _sqlite_store(__import__("pathlib").Path({str(path)!r}))
        for i in range(1, 41):
            s.add([f"p{{i}}"], record_type="memory", record_ids=f"p{{i}}", embeddings=[unit(i)])
        s.delete("memory", "p7")
        s.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert [ids_near(store, i)[0] for i in (1, 20, 40)] == ["p1", "p20", "p40"]
    assert "p7" not in ids_near(store, 7, k=50)
    assert len(store._keeper.index) == 40
    store.close()


def test_catching_up_skips_this_stores_own_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Own commits made while another store's commit holds the index state back are not
    re-read when catching up; what the other store did to those records still is."""
    a, b = _two_stores(tmp_path / "m.db", 20)
    assert ids_near(b, 1)[0] == "m1"
    assert ids_near(a, 1)[0] == "m1"
    reread: list[list[Any]] = []
    original = _index_keeper.IndexKeeper.load_rows

    def spy(self: Any, index: Any, where: str, params: Any = ()) -> Any:
        if self is a._keeper:
            reread.append(list(params))
        return original(self, index, where, params)

    monkeypatch.setattr(_index_keeper.IndexKeeper, "load_rows", spy)
    b.add(["b0"], record_type="memory", record_ids="b0", embeddings=[unit(500)])
    own = [f"a{i}" for i in range(3)]
    for i, rid in enumerate(own):  # each commit follows b's, which a has not read yet
        a.add([rid], record_type="memory", record_ids=rid, embeddings=[unit(600 + i)])
    b.delete("memory", "a1")  # b removes one of a's new records
    b.update("memory", "a2", embedding=unit(900))
    assert ids_near(a, 500)[0] == "b0"
    assert ids_near(a, 600)[0] == "a0"
    assert "a1" not in ids_near(a, 601, k=30)
    assert ids_near(a, 900)[0] == "a2"
    d = a._dialect
    rows = d.execute(f"SELECT rid, id FROM {d.tables.records} WHERE id IN ('a0', 'b0')")
    rid_of = {str(i): int(r) for r, i in rows}
    loaded = {int(x) for params in reread for x in params}
    assert rid_of["b0"] in loaded
    assert rid_of["a0"] not in loaded  # a's own, untouched by b: not re-read
    assert a._keeper._own_generations == set()
    count = d.execute(f"SELECT count(*) FROM {d.tables.chunks} WHERE vector IS NOT NULL")
    assert len(a._keeper.index) == int(count[0][0])
    a.close()
    b.close()


def _hybrid_store(path: Path) -> Any:
    from oracleagentmemory.core.dbsearch import SearchStrategy

    return SQLiteMemoryStore(
        HashingEmbedder(),
        str(path),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.HYBRID,
    )


_NOTHING = {
    "delete": lambda s: s.delete("memory", "no-such-id"),
    "update": lambda s: s.update("memory", "no-such-id", text="x"),
    "clear thread": lambda s: s.delete_thread_messages("no-such-thread"),
}


@pytest.mark.parametrize("other", ["deletes a thread", "invalidates a memory"])
@pytest.mark.parametrize("nothing", list(_NOTHING))
def test_a_write_that_changes_nothing_does_not_hide_anothers_commit(
    tmp_path: Path, nothing: str, other: str
) -> None:
    """A write that changes no row commits no generation: the generation it read (another
    store's commit) stays to be caught up, so that store's delete is seen (a record id it
    freed, reused for another user's message, never answers for the first user) and so is
    its status change (an INVALID memory stays out of HYBRID's keyword candidates)."""
    from oracleagentmemory.apis.records import RecordStatus

    a, b = _hybrid_store(tmp_path / "m.db"), _hybrid_store(tmp_path / "m.db")
    try:
        b.add(["xylophone"], record_type="memory", record_ids=["target"], user_ids="u")
        b.add(
            ["alice secret one", "alice secret two"],
            record_type="message",
            thread_ids="ta",
            user_ids="alice",
            roles="user",
        )  # the newest ids
        for store in (a, b):
            store.search("secret xylophone", 3)
        if other == "deletes a thread":
            a.delete_thread("ta")
        else:
            a.update("memory", "target", status=RecordStatus.INVALID)
        assert _NOTHING[nothing](b) == 0  # a write transaction that changed no row
        b.add(
            ["bob private diary"],
            record_type="message",
            thread_ids="tb",
            user_ids="bob",
            roles="user",
        )  # takes a freed id
        alices = b.search("diary", 5, user_id="alice", exact_user_match=True)
        assert [r.content for r, _ in alices if r.user_id != "alice"] == []
        got = b.search("xylophone", 5, user_id="u", exact_user_match=True,
                       include_invalid_results=False)  # fmt: skip
        assert ("target" in [r.id for r, _ in got]) == (other == "deletes a thread")
    finally:
        a.close()
        b.close()

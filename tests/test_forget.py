"""Forgetting that provably forgets (#51): canary strings written through every path, a forget,
then every byte the store wrote scanned for them (SQLite: every file beside the database;
PostgreSQL: the files of the store's relations after ``oam purge``'s VACUUM FULL and a
CHECKPOINT), while the other user's rows stay exactly as they were. Both engines."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.admin.forgetting import purge, vacuum_store
from oracleagentmemory.core import MemoryExtractionConfig, MemoryExtractionMode
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store.vectors import _ann_index, _index_keeper, _vector_index

from ._fake_model import fake_model
from ._images import PNG
from ._llm_double import ScriptedLlm

OPS = ("delete_user", "delete_thread", "delete_memory", "delete_message")


@dataclass
class Planted:
    """One user's canaries by the path that wrote them, and the ids a forget needs."""

    tag: str
    canaries: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    def c(self, path: str) -> str:
        # Lower-case letters and digits: one token for the keyword index, as written.
        value = f"qzcanary{path}{self.tag}"
        self.canaries[path] = value
        return value


# Which canaries each forget must erase (the others of that user stay).
GONE = {
    "delete_user": None,  # all of them
    "delete_thread": {
        "threadmeta",
        "msga",
        "msgmeta",
        "msgb",
        "summary",
        "img",
        "imgmeta",
        "imgbytes",
    },
    "delete_memory": {"mem", "memmeta", "linkmeta"},
    "delete_message": {"msga", "msgmeta", "summary", "linkmeta"},
}


def plant(client: Any, user: str) -> Planted:
    """Write a canary through every path for ``user``: profile, thread metadata, messages
    and their metadata, memories extracted and summarised by the LLM stand-in, a memory with
    metadata, an image (its bytes, caption and metadata), a link with metadata."""
    p = Planted(f"{user}{secrets.token_hex(4)}")
    client.add_user(user, f"profile {p.c('profile')}", metadata={"note": p.c("profilemeta")})
    thread = client.create_thread(
        thread_id=f"{user}-t", user_id=user, agent_id="a1", metadata={"m": p.c("threadmeta")}
    )
    a, b = thread.add_messages(
        [
            {
                "role": "user",
                "content": f"{p.c('msga')} drinks tea",
                "metadata": {"k": p.c("msgmeta")},
            },
            {"role": "user", "content": f"{p.c('msgb')} lives in Porto"},
        ]
    )
    p.ids.update(thread=thread.thread_id, msga=a, msgb=b)
    summary = thread.get_summary().content  # built by the stand-in from the messages
    assert p.canaries["msga"] in summary
    p.canaries["summary"] = p.canaries["msga"]  # a summary only ever repeats message words
    extracted = {m.content: m for m in client.list_memories(user_id=user)}
    p.ids["mem"] = client.add_memory(
        f"{p.c('mem')} likes jazz", user_id=user, metadata={"k": p.c("memmeta")}
    )
    p.ids["img"] = client.add_image(
        PNG + p.c("imgbytes").encode(),
        description=f"{p.c('img')} photo",
        user_id=user,
        thread_id=thread.thread_id,
        metadata={"k": p.c("imgmeta")},
    )
    (from_a,) = [m for text, m in extracted.items() if p.canaries["msga"] in text]
    client.link_records(
        p.ids["mem"],
        "memory",
        from_a.id,
        from_a.record_type,
        "about",
        metadata={"k": p.c("linkmeta")},
    )
    for _ in range(2):  # the second search of a user fills the per-user caches (PostgreSQL)
        for path in ("msga", "mem", "img", "profile"):
            assert client.search(p.canaries[path], user_id=user, max_results=5)
    return p


def forget(client: Any, op: str, p: Planted, user: str) -> None:
    if op == "delete_user":
        assert client.delete_user(user) == 1
    elif op == "delete_thread":
        assert client.delete_thread(p.ids["thread"]) == 1
    elif op == "delete_memory":
        assert client.delete_memory(p.ids["mem"]) == 1
    else:
        thread = client.get_thread(p.ids["thread"])
        assert thread.delete_message(p.ids["msga"], cascade=True) == 1


def gone_canaries(op: str, p: Planted) -> dict[str, str]:
    keep = GONE[op]
    return {k: v for k, v in p.canaries.items() if keep is None or k in keep}


def rows_of(store: Any, user: str) -> list[tuple[Any, ...]]:
    """Every row the store keeps for ``user`` (records, chunks, image bytes, links, history),
    in a stable order: what must not change when another user is forgotten."""
    d = store._dialect
    t = d.tables
    mine = f"SELECT rid FROM {t.records} WHERE user_id = ?"
    out: list[tuple[Any, ...]] = []
    for sql in (
        f"SELECT * FROM {t.records} WHERE user_id = ? ORDER BY rid",
        f"SELECT * FROM {t.chunks} WHERE rid IN ({mine}) ORDER BY cid",
        f"SELECT * FROM {t.blobs} WHERE rid IN ({mine}) ORDER BY rid",
        f"SELECT * FROM {t.history} WHERE user_id = ? ORDER BY memory_id, version",
    ):
        out += [tuple(r) for r in d.execute(sql, [user])]
    ids = f"SELECT id FROM {t.records} WHERE user_id = ?"
    out += [
        tuple(r)
        for r in d.execute(
            f"SELECT * FROM {t.relations} WHERE source_record_id IN ({ids}) ORDER BY id", [user]
        )
    ]
    return out


def scan(files: list[Path], needles: dict[str, bytes]) -> dict[str, list[str]]:
    """Which needles occur in which files (every byte read)."""
    found: dict[str, list[str]] = {}
    for path in files:
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            continue
        for name, needle in needles.items():
            if needle in data:
                found.setdefault(name, []).append(path.name)
    return found


@pytest.fixture
def small_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Snapshot (and build an HNSW graph for) indexes of a few dozen rows; the model cache
    in this test's folder, scanned with the rest."""
    monkeypatch.setattr(_index_keeper, "SNAPSHOT_MIN_ROWS", 10)
    monkeypatch.setattr(_vector_index, "ANN_MIN_ROWS", 20)
    monkeypatch.setenv(_ann_index.ENV_SWITCH, "on")
    monkeypatch.setenv("OAM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def forget_client(
    make_store: Any, make_client: Any, small_index: None
) -> Callable[[], tuple[Any, Any]]:
    def build() -> tuple[Any, Any]:
        store = make_store(search_strategy=SearchStrategy.HYBRID)
        client = make_client(
            store=store,
            llm=ScriptedLlm(respond=fake_model()),
            memory_extraction_config=MemoryExtractionConfig(
                extraction_mode=MemoryExtractionMode.INLINE
            ),
        )
        # Filler rows of a third user, so the vector index is large enough to snapshot.
        client.store.add(
            [f"filler note {i} about weather" for i in range(40)],
            record_type="memory",
            user_ids="filler",
        )
        return store, client

    return build


def vectors_of(store: Any, user: str) -> dict[str, Any]:
    """``user``'s stored vectors (unit length), by chunk."""
    import numpy as np

    d = store._dialect
    t = d.tables
    rows = d.execute(
        f"SELECT c.cid, {d.vector_read_sql('c.vector')} FROM {t.chunks} c"
        f" JOIN {t.records} r ON r.rid = c.rid WHERE r.user_id = ? AND c.vector IS NOT NULL",
        [user],
    )
    vecs = d.vectors_from_db([r[1] for r in rows], store._core.vector_dim).astype(np.float64)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return {f"vector{r[0]}": v for r, v in zip(rows, vecs, strict=True)}


def vector_hits(files: list[Path], vectors: dict[str, Any]) -> set[str]:
    """Which of ``vectors`` some file holds as float32 (any alignment, any rounding): every
    window of ``dim`` floats is compared with each of them."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    if not vectors:
        return set()
    names = list(vectors)
    want = np.stack([vectors[n] for n in names])
    found: set[str] = set()
    for path in files:
        data = path.read_bytes()
        for shift in range(4):
            usable = (len(data) - shift) // 4 * 4
            with np.errstate(all="ignore"):  # any bytes: NaNs and infinities among them
                arr = np.frombuffer(data[shift : shift + usable], dtype="<f4").astype(np.float64)
            if arr.size < want.shape[1]:
                continue
            windows = np.nan_to_num(sliding_window_view(arr, want.shape[1]), posinf=0, neginf=0)
            with np.errstate(all="ignore"):
                norms = np.sqrt((windows * windows).sum(axis=1))
                unit = np.abs(norms - 1.0) < 1e-3  # a stored vector is unit length
                sims = windows[unit] @ want.T
            close = np.flatnonzero((sims > 0.9999).any(axis=0))
            found.update(names[k] for k in close)
    return found


def store_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


# --------------------------------------------------------------------------------------------
# SQLite: every file the store wrote
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_sqlite_forget_leaves_no_byte_of_the_canaries(
    op: str, forget_client: Callable[[], tuple[Any, Any]], tmp_path: Path
) -> None:
    store, client = forget_client()
    victim = plant(client, "victim")
    other = plant(client, "other")
    before = rows_of(store, "other")
    gone = gone_canaries(op, victim)
    needles = {k: v.encode() for k, v in gone.items()}
    victim_vectors = vectors_of(store, "victim") if op == "delete_user" else {}
    snapshot = store._dialect.index_snapshot_dir()
    assert snapshot is not None and (snapshot / "index.json").exists()
    # The scan can fail: before the forget every canary is in some file, and every
    # victim vector in the snapshot (saved now as a closing store saves it), its HNSW graph
    # file included.
    store.search(None, 5, query_vector=store._core.embed(["tea"], is_query=True)[0])
    index = store._keeper.ensure()
    index.ann_maintain(wait=True)
    store._keeper.save(index)
    (graph,) = snapshot.glob("ann-*.bin")
    assert vector_hits([graph], victim_vectors) == set(victim_vectors)
    store._dialect.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    seen = scan(store_files(tmp_path), needles)
    assert set(seen) == set(needles), set(needles) - set(seen)
    assert vector_hits(store_files(snapshot), victim_vectors) == set(victim_vectors)

    forget(client, op, victim, "victim")
    for value in gone.values():  # nothing found by any search, nothing listed
        assert not [
            r for r in client.search(value, user_id="victim", max_results=20) if value in str(r)
        ]
    if op == "delete_message":  # the next message, indexed with the deleted one, is found alone
        hits = client.search(victim.canaries["msgb"], user_id="victim", max_results=5)
        assert victim.ids["msgb"] in [h.id for h in hits]
    client.close()
    store.close()

    leftover = scan(store_files(tmp_path), needles)
    assert leftover == {}, leftover
    assert vector_hits(store_files(tmp_path), victim_vectors) == set()
    users = json.loads((snapshot / "index.json").read_text())["codes"]["user"]
    assert "other" in users and ("victim" in users) == (op != "delete_user")
    # The other user's rows are exactly as they were, and theirs still in the files.
    from oracleagentmemory.core import SQLiteMemoryStore

    again = SQLiteMemoryStore(None, str(tmp_path / "memory.db"))
    try:
        assert rows_of(again, "other") == before
    finally:
        again.close()
    kept = {k: v.encode() for k, v in other.canaries.items()}
    assert set(scan(store_files(tmp_path), kept)) == set(kept)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_sqlite_store_sets_secure_delete_and_truncates_the_wal(make_store: Any) -> None:
    store = make_store()
    conn = store._dialect.conn
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    store.add(["a note to forget"], record_type="memory", record_ids="m1")
    wal = Path(store._dialect.database_file() + "-wal")
    assert wal.stat().st_size > 0
    assert store.delete("memory", "m1") == 1
    assert wal.stat().st_size == 0


# --------------------------------------------------------------------------------------------
# Derived artifacts, pending work, other processes (both engines)
# --------------------------------------------------------------------------------------------


def test_cascade_removes_the_summary_and_memories_whose_sources_are_all_gone(
    forget_client: Callable[[], tuple[Any, Any]],
) -> None:
    store, client = forget_client()
    p = plant(client, "u1")
    thread = client.get_thread(p.ids["thread"])
    assert store.get("thread_summary", thread.thread_id) is not None
    # msgb's extracted memory gains a second source, msga, which is deleted without cascade
    # first: when msgb goes with cascade, no source of that memory is left.
    (from_b,) = [m for m in client.list_memories(user_id="u1") if p.canaries["msgb"] in m.content]
    store.commit_extraction([], merged_sources={from_b.id: [p.ids["msga"]]})
    assert thread.delete_message(p.ids["msga"]) == 1
    assert thread.delete_message(p.ids["msgb"], cascade=True) == 1
    assert store.get("thread_summary", thread.thread_id) is None  # it read msgb
    left = [m.content for m in client.list_memories(user_id="u1")]
    assert not any(p.canaries["msgb"] in text for text in left)
    # A memory with a source still there keeps existing.
    assert any(p.canaries["msga"] in text for text in left)


def test_a_deleted_messages_text_leaves_the_windows_of_the_messages_after_it(
    client: Any,
) -> None:
    thread = client.create_thread(thread_id="t1", user_id="u1")
    ids = thread.add_messages(
        [{"role": "user", "content": f"qzcanarywindow{i} word{i}"} for i in range(4)]
    )
    d = client.store._dialect
    t = d.tables

    def holding(text: str) -> list[str]:
        rows = d.execute(
            f"SELECT r.id, c.chunk_text FROM {t.chunks} c JOIN {t.records} r ON r.rid = c.rid"
            f"{d.joined('r', 'c')} WHERE r.thread_id = 't1'"  # on Citus: the same shard
        )
        return sorted({rid for rid, chunk in rows if chunk and text in chunk})

    assert holding("qzcanarywindow1") == sorted(ids[1:4])  # its own, and two windows
    assert thread.delete_message(ids[1]) == 1  # without cascade too
    assert holding("qzcanarywindow1") == []
    # The two messages after it held its text: each is indexed from its own text alone now.
    assert holding("qzcanarywindow0") == [ids[0]]
    assert holding("qzcanarywindow2") == [ids[2]]
    assert holding("qzcanarywindow3") == [ids[3]]
    hits = thread.search("qzcanarywindow2 word2", max_results=3)
    assert hits and hits[0].id == ids[2]


@pytest.mark.parametrize("cascade", [False, True])
def test_a_message_takes_its_image_parts_along(
    client: Any, backend: str, tmp_path: Path, cascade: bool
) -> None:
    from oracleagentmemory.apis.message import ImageContent, TextContent

    thread = client.create_thread(thread_id="t1", user_id="u1")
    (mid,) = thread.add_messages(
        [
            {
                "role": "user",
                "content": [
                    TextContent("look qzcanaryparttext"),
                    ImageContent(PNG + b"qzcanarypartbytes", "image/png", "qzcanarypartdesc"),
                ],
            }
        ]
    )
    d = client.store._dialect
    t = d.tables
    assert [r[0] for r in d.execute(f"SELECT record_type FROM {t.records}")].count("image") == 1
    assert thread.delete_message(mid, cascade=cascade) == 1
    assert d.execute(f"SELECT record_type FROM {t.records} WHERE family <> 'thread'") == []
    assert d.execute(f"SELECT rid FROM {t.blobs}") == []
    if backend == "sqlite":
        client.close()
        needles = {n: f"qzcanarypart{n}".encode() for n in ("text", "bytes", "desc")}
        assert scan(store_files(tmp_path), needles) == {}


@pytest.mark.parametrize("cascade", [False, True])
def test_a_message_leaves_an_image_that_took_its_part_id_since(client: Any, cascade: bool) -> None:
    from oracleagentmemory.apis.message import ImageContent, TextContent

    client.add_user("alice", "a")
    client.add_user("bob", "b")
    thread = client.create_thread(thread_id="ta", user_id="alice")
    part = ImageContent(PNG, "image/png", "alice's cat", id="img1")
    (mid,) = thread.add_messages([{"role": "user", "content": [TextContent("see"), part]}])
    assert client.delete_image("img1") == 1
    client.add_image(PNG, description="bob's dog", image_id="img1", user_id="bob")
    assert thread.delete_message(mid, cascade=cascade) == 1
    kept = client.store.get("image", "img1")
    assert kept is not None and kept.user_id == "bob" and kept.content == "bob's dog"


def test_delete_thread_removes_its_pending_extraction_jobs(client: Any) -> None:
    client.create_thread(thread_id="t1", user_id="u1")
    client.create_thread(thread_id="t2", user_id="u1")
    store = client.store
    with store._keeper.write():
        for thread_id in ("t1", "t2"):
            store._extraction._insert_pending(thread_id, {"settings": {}}, "someone")
    assert len(store.list_pending_work()) == 2
    assert client.delete_thread("t1") == 1
    assert [w.thread_id for w in store.list_pending_work()] == ["t2"]
    assert client.delete_user("u1") == 0  # no profile; its threads go all the same
    assert store.list_pending_work() == []


READER = textwrap.dedent(
    """
    import json, sys
    from oracleagentmemory.core import OracleAgentMemory, PostgresMemoryStore, SQLiteMemoryStore
    from oracleagentmemory.core.dbsearch import SearchStrategy
    from oracleagentmemory.core.store.search import _user_vectors
    from tests._embedders import HashingEmbedder

    _user_vectors.MIN_ROWS = 1  # PostgreSQL caches this small user too

    backend, connection, user = sys.argv[1:4]
    canaries = json.loads(sys.argv[4])
    cls = SQLiteMemoryStore if backend == "sqlite" else PostgresMemoryStore
    store = cls(HashingEmbedder(), connection, search_strategy=SearchStrategy.HYBRID)
    client = OracleAgentMemory(store=store)

    def found():
        out = set()
        for value in canaries:
            for result in client.search(value, user_id=user, max_results=10):
                if value in repr(result):
                    out.add(value)
        return sorted(out)

    first = found()
    found()  # a second search: PostgreSQL reads the user into the process's cache
    store._vectors.users.wait_filled(30)
    cached = store._vectors.users.cached_index(user) is not None
    print(json.dumps({"found": first, "cached": cached}), flush=True)
    sys.stdin.readline()  # the forget happens in the test's process meanwhile
    print(json.dumps({"found": found()}), flush=True)
    client.close()
    store.close()
    """
)


def test_another_process_does_not_return_forgotten_content(
    forget_client: Callable[[], tuple[Any, Any]],
    request: pytest.FixtureRequest,
    backend: str,
    tmp_path: Path,
) -> None:
    """Another process searched the canaries (its index and, on PostgreSQL, its per-user
    caches hold them) before the forget; its next search does not return them."""
    from .conftest import backend_connection

    _store, client = forget_client()
    p = plant(client, "victim")
    values = [p.canaries[k] for k in ("msga", "msgb", "mem")]
    root = Path(__file__).resolve().parent.parent
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            READER,
            backend,
            backend_connection(request, backend, tmp_path, "memory.db"),
            "victim",
            json.dumps(values),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        before = json.loads(reader.stdout.readline())
        assert before["found"] == sorted(values)
        assert before["cached"] == (backend == "postgres")
        assert client.delete_user("victim") == 1
        reader.stdin.write("again\n")
        reader.stdin.flush()
        after = json.loads(reader.stdout.readline())
        assert after["found"] == []
    finally:
        reader.communicate(timeout=60)
    assert reader.returncode == 0


# --------------------------------------------------------------------------------------------
# PostgreSQL: the store's relation files after purge + CHECKPOINT
# --------------------------------------------------------------------------------------------


def relation_files(store: Any, server: Any) -> list[Path]:
    """The files of every relation of the store's schema (tables, their TOAST tables and
    every index), all segments and forks."""
    d = store._dialect
    rows = d.execute(
        "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.relkind IN ('r', 'i', 't', 'm')"
        " AND (c.relnamespace = current_schema()::regnamespace OR c.oid IN ("
        "  SELECT reltoastrelid FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
        "  UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
        "  JOIN pg_class o ON o.reltoastrelid = t.oid"
        "  WHERE o.relnamespace = current_schema()::regnamespace))"
    )
    base = Path(server.pgdata)
    out: list[Path] = []
    for (rel,) in rows:
        if rel:
            out += sorted(base.glob(rel + "*"))
    return out


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_purge_leaves_no_byte_of_the_canaries(
    op: str, forget_client: Callable[[], tuple[Any, Any]], pg_server: Any
) -> None:
    store, client = forget_client()
    victim = plant(client, "victim")
    plant(client, "other")
    before = rows_of(store, "other")
    gone = gone_canaries(op, victim)
    needles = {k: v.encode() for k, v in gone.items()}
    victim_vectors = vectors_of(store, "victim") if op == "delete_user" else {}
    store._dialect.ann_catch_up()  # the HNSW side table holds them too
    store._dialect.execute("CHECKPOINT")
    seen = scan(relation_files(store, pg_server), needles)
    assert set(seen) == set(needles), set(needles) - set(seen)
    assert vector_hits(relation_files(store, pg_server), victim_vectors) == set(victim_vectors)

    if op == "delete_user":
        result = purge(client, user_id="victim")
        assert result.users == 1 and result.vacuumed
    else:
        forget(client, op, victim, "victim")
        assert vacuum_store(store)
    store._dialect.execute("CHECKPOINT")
    leftover = scan(relation_files(store, pg_server), needles)
    assert leftover == {}, leftover
    assert vector_hits(relation_files(store, pg_server), victim_vectors) == set()
    assert rows_of(store, "other") == before


def test_oam_purge_vacuums_on_postgres(
    pg_url: Callable[[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    from oracleagentmemory.cli import main
    from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy

    from ._embedders import HashingEmbedder

    dsn = pg_url("purge")
    client = OracleAgentMemory(
        connection=dsn, embedder=HashingEmbedder(), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    )
    client.add_user("u1", "someone")
    client.add_memory("a memory", user_id="u1")
    client.close()
    base = ["--dsn", dsn, "--embedder", "none"]
    assert main([*base, "purge", "--user-id", "u1", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "deleted user 'u1'" in out and "VACUUM FULL" in out


def test_purge_checks_its_arguments(client: Any) -> None:
    with pytest.raises(ValueError, match="user_id or thread_id"):
        purge(client)
    with pytest.raises(TypeError, match="user_id"):
        purge(client, user_id=3)  # type: ignore[arg-type]


def test_vacuum_store_rewrites_only_where_deletes_leave_bytes(store: Any, backend: str) -> None:
    store.add(["a note"], record_type="memory", record_ids="m1", user_ids="u1")
    assert store.delete("memory", "m1") == 1
    assert store.deletes_leave_bytes == (backend in ("postgres", "citus"))
    tables = vacuum_store(store)
    if backend == "sqlite":
        assert tables == []
        assert store.vacuum() == [store._dialect.database_file()]  # VACUUM, WAL truncated
        assert Path(store._dialect.database_file() + "-wal").stat().st_size == 0
    else:
        assert store._dialect.tables.records in tables and tables == store.vacuum()
    assert store.get("memory", "m1") is None

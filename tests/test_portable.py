"""Portable export/import: a store round trip SQLite -> PostgreSQL -> SQLite through ``oam``
gives identical ``list`` and ``search`` results, and a bad file writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.admin.connect import Target
from oracleagentmemory.admin.db import Database
from oracleagentmemory.admin.portable import RECORD_TYPES
from oracleagentmemory.admin.storerows import StoreRows
from oracleagentmemory.cli import main
from oracleagentmemory.core import OracleAgentMemory

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)
QUERIES = [
    "peanut allergy",
    "flight to Tokyo",
    "window seat",
    "tea or coffee",
    "a picture of the beach",
    "sister",
]


def _populate(mem: Any) -> None:
    mem.add_user("u1", "Prefers concise answers.", {"tier": "gold"})
    mem.add_user("u2", "Another user.")
    mem.add_agent("concierge", "Books trips.")
    t1 = mem.create_thread(
        thread_id="trip", user_id="u1", agent_id="concierge", metadata={"topic": "travel"}
    )
    t1.add_messages(
        [
            {"role": "user", "content": "I'm flying to Tokyo next week."},
            {"role": "assistant", "content": "Window seat?"},
            {"role": "user", "content": "Yes please.", "metadata": {"k": [1, 2]}},
        ]
    )
    t1.add_messages(
        [{"role": "user", "content": "Also book a hotel.", "timestamp": "2024-05-01T10:00:00"}],
        ttl_days=30,
    )
    f = mem.add_memory(
        "Alice is allergic to peanuts.",
        memory_type="fact",
        user_id="u1",
        metadata={"tags": ["health"]},
    )
    p = mem.add_memory(
        "Prefers tea over coffee.",
        memory_type="preference",
        user_id="u1",
        agent_id="concierge",
        ttl_days=90,
    )
    g = mem.add_memory("Answer briefly.", memory_type="guideline", user_id="u1", thread_id="trip")
    old = mem.add_memory(
        "Prefers coffee.",
        memory_type="memory",
        user_id="u1",
        status="invalid",
        timestamp="2023-01-01T00:00:00+00:00",
    )
    mem.link_records(p, "preference", old, "memory", "supersedes")
    mem.link_records(f, "fact", g, "guideline", "supports", metadata={"why": "test"})
    mem.add_image(
        PNG,
        description="A picture of the beach at sunset.",
        user_id="u1",
        metadata={"place": "Nice"},
    )
    t2 = mem.create_thread(thread_id="other", user_id="u2")
    t2.add_messages([{"role": "user", "content": "My sister lives in Porto."}])
    long_text = " ".join(f"word{i}" for i in range(500))  # chunked by the store
    mem.add_memory(long_text, user_id="u2")


def _listing(mem: Any) -> list[Any]:
    out = []
    for r in mem.store.list_records(list(RECORD_TYPES), limit=None):
        if r.record_type == "image":
            r = mem.store.get("image", r.id, include_bytes=True)
        out.append(r)
    return out


def _searches(mem: Any) -> list[list[tuple[str, float]]]:
    return [
        [(r.id, r.distance) for r in mem.search(q, user_id=u, max_results=8)]
        for q in QUERIES
        for u in ("u1", "u2")
    ]


def _expiries(dsn: str) -> dict[tuple[str, str], str | None]:
    with Database(Target(dsn)) as db:
        rows = StoreRows(db, None)
        with OracleAgentMemory(connection=dsn, embedder=None, search_strategy="keyword") as m:
            keys = [
                (r.record_type, r.id) for r in m.store.list_records(list(RECORD_TYPES), limit=None)
            ]
        return rows.expiries(keys)


def test_round_trip_sqlite_postgres_sqlite(
    tmp_path: Path, pg_url: Any, local_embedder: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    a, c = str(tmp_path / "a.db"), str(tmp_path / "c.db")
    b = pg_url("roundtrip")
    with OracleAgentMemory(connection=a, embedder=local_embedder, search_strategy="hybrid") as mem:
        _populate(mem)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    # SQLite -> PostgreSQL without vectors (re-embedded), PostgreSQL -> SQLite with them.
    assert main(["export", "--dsn", a, "--out", str(first)]) == 0
    assert main(["import", "--dsn", b, str(first), "--search-strategy", "hybrid"]) == 0
    # One message has a timestamp in 2024 and a TTL anchored at its creation: its expiry is
    # not a whole number of days after its timestamp, so it is rounded up (and reported).
    assert "1 expiries rounded up" in capsys.readouterr().out
    assert main(["export", "--dsn", b, "--out", str(second), "--vectors"]) == 0
    assert main(["import", "--dsn", c, str(second), "--search-strategy", "hybrid"]) == 0
    capsys.readouterr()
    lines = [json.loads(x) for x in second.read_text().splitlines()]
    assert lines[0]["vectors"] is True and lines[-1]["kind"] == "end"
    assert {x["record_type"] for x in lines if x["kind"] == "record"} >= {
        "user_profile",
        "agent_profile",
        "thread",
        "message",
        "memory",
        "fact",
        "preference",
        "guideline",
        "image",
    }

    for strategy in ("vector", "keyword", "hybrid"):
        with (
            OracleAgentMemory(
                connection=a, embedder=local_embedder, search_strategy=strategy
            ) as ma,
            OracleAgentMemory(
                connection=c, embedder=local_embedder, search_strategy=strategy
            ) as mc,
        ):
            if strategy == "vector":
                assert _listing(mc) == _listing(ma)
                assert len(mc.store.list_relations(limit=None)) == 2
                rel = [
                    (
                        x.id,
                        x.source_record_id,
                        x.target_record_id,
                        x.relation_type,
                        x.opposite_relation_type,
                        x.timestamp,
                        x.metadata,
                    )
                    for x in ma.store.list_relations(limit=None)
                ]
                assert rel == [
                    (
                        x.id,
                        x.source_record_id,
                        x.target_record_id,
                        x.relation_type,
                        x.opposite_relation_type,
                        x.timestamp,
                        x.metadata,
                    )
                    for x in mc.store.list_relations(limit=None)
                ]
                assert [m.seq_no for m in mc.store.list_thread_messages("trip")] == [1, 2, 3, 4]
            assert _searches(mc) == _searches(ma), strategy
    # PostgreSQL lists the same records; its pgvector distances agree to float precision.
    with (
        OracleAgentMemory(connection=a, embedder=local_embedder) as ma,
        OracleAgentMemory(connection=b, embedder=local_embedder) as mb,
    ):
        assert _listing(mb) == _listing(ma)
        for got, exp in zip(_searches(mb), _searches(ma), strict=True):
            assert [i for i, _ in got] == [i for i, _ in exp]
            assert [d for _, d in got] == pytest.approx([d for _, d in exp], abs=1e-5)
    ea, ec = _expiries(a), _expiries(c)
    assert ea.keys() == ec.keys()
    assert sum(v is not None for v in ea.values()) == 2
    from datetime import datetime

    drift = {
        k: datetime.fromisoformat(ec[k]) - datetime.fromisoformat(v)  # type: ignore[arg-type]
        for k, v in ea.items()
        if v is not None
    }
    exact, rounded = sorted(d.total_seconds() for d in drift.values())
    assert exact == 0.0 and 0 < rounded < 86400


def test_bad_files_write_nothing(
    tmp_path: Path, local_embedder: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    a = str(tmp_path / "a.db")
    with OracleAgentMemory(connection=a, embedder=local_embedder) as mem:
        _populate(mem)
    out = tmp_path / "x.jsonl"
    assert main(["export", "--dsn", a, "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    truncated = tmp_path / "t.jsonl"
    truncated.write_text("\n".join(lines[:-3]) + "\n")
    target = str(tmp_path / "t.db")
    assert main(["import", "--dsn", target, str(truncated), "--format", "export"]) == 1
    assert "truncated" in capsys.readouterr().err
    # Importing into a store that already holds one of the ids undoes everything it wrote.
    with OracleAgentMemory(connection=target, embedder=local_embedder) as mem:
        mem.add_memory("already here", user_id="u9", memory_id="zzz")
    clash = [json.loads(x) for x in lines]
    rec = next(x for x in clash if x.get("record_type") == "memory")
    rec["id"] = "zzz"
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(x) for x in clash) + "\n")
    assert main(["import", "--dsn", target, str(tmp_path / "c.jsonl")]) == 1
    assert "already exists" in capsys.readouterr().err
    with OracleAgentMemory(connection=target, embedder=local_embedder) as mem:
        left = mem.store.list_records(list(RECORD_TYPES), limit=None)
        assert [r.id for r in left] == ["zzz"]
        assert mem.store.list_relations(limit=None) == []

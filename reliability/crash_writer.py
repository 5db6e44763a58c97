"""The process the crash suite kills: writes forever, printing one line per acknowledged write.

``python -m reliability.crash_writer ENGINE CONNECTION KIND START`` where KIND is ``plain``
(one record per add), ``batch`` (ten records per add), ``linked`` (a memory and its link,
``add_memory(..., memory_id_to_link=...)``) or ``messages`` (three messages per
``thread.add_messages``). Ids start at START so successive runs never collide. A line
``{"kind": ..., "ids": [...]}`` is printed (and flushed) only after the call returned.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests._embedders import HashingEmbedder

from oracleagentmemory.core import (
    OracleAgentMemory,
    PostgresMemoryStore,
    SchemaPolicy,
    SearchStrategy,
    SQLiteMemoryStore,
)


def open_store(engine: str, conn: str) -> object:
    cls = SQLiteMemoryStore if engine == "sqlite" else PostgresMemoryStore
    return cls(
        HashingEmbedder(16),
        conn,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.HYBRID,
    )


def main(engine: str, conn: str, kind: str, start: int) -> None:
    store = open_store(engine, conn)
    client = OracleAgentMemory(store=store)  # type: ignore[arg-type]
    if kind == "linked" and store.get("memory", "anchor") is None:  # type: ignore[attr-defined]
        client.add_memory("the first memory", memory_id="anchor", user_id="u")
    if kind == "messages":
        try:
            thread = client.get_thread("crash-thread")
        except KeyError:
            thread = client.create_thread(thread_id="crash-thread", user_id="u", agent_id="a")
    print("ready", flush=True)
    n = start
    while True:
        if kind == "plain":
            ids = [f"p-{n}"]
            store.add([f"plain record {n}"], record_type="memory", record_ids=ids, user_ids="u")  # type: ignore[attr-defined]
        elif kind == "batch":
            ids = [f"b-{n}-{i}" for i in range(10)]
            store.add(  # type: ignore[attr-defined]
                [f"batch {n} record {i}" for i in range(10)],
                record_type="memory",
                record_ids=ids,
                user_ids="u",
            )
        elif kind == "linked":
            ids = [f"l-{n}"]
            client.add_memory(
                f"linked memory {n}",
                memory_id=ids[0],
                user_id="u",
                memory_id_to_link="anchor",
                link_type="supports",
                link_id=f"rel-{ids[0]}",
            )
        else:
            ids = [f"m-{n}-{i}" for i in range(3)]
            thread.add_messages(
                [{"role": "user", "content": f"message {n}.{i}", "id": ids[i]} for i in range(3)]
            )
        print(json.dumps({"kind": kind, "ids": ids}), flush=True)
        n += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))

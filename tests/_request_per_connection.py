"""A web app's pattern, as a program: each request opens a connection (SQLite file or
PostgreSQL URL), builds a client on it, appends messages (background extraction and summaries
follow), and closes the connection when it answers.
``python tests/_request_per_connection.py DB_OR_URL REQUESTS``; exits 0 when every request
answered and every client's work finished (a crash shows as its status).
"""

from __future__ import annotations

import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy
from tests._embedders import HashingEmbedder
from tests._fake_model import fake_model
from tests._llm_double import ScriptedLlm


def main(db: str, requests: int) -> int:
    OracleAgentMemory(
        connection=db, embedder=HashingEmbedder(), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY
    ).close()
    llm = ScriptedLlm(respond=fake_model(), delay=0.01)
    clients = []

    def handle(i: int) -> None:
        if db.startswith("postgresql://"):
            import psycopg

            conn: Any = psycopg.connect(db)
        else:
            conn = sqlite3.connect(db, check_same_thread=False)
        client = OracleAgentMemory(connection=conn, embedder=HashingEmbedder(), llm=llm)
        clients.append(client)
        thread = client.create_thread(user_id=f"u{i % 3}")
        thread.add_messages([{"role": "user", "content": f"message {i} about my trip"}])
        conn.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(handle, range(requests)))
    for client in clients:
        client.wait_for_memory_extraction(timeout=120)
    failed = sum(c.get_memory_extraction_stats().failed for c in clients)
    if failed:
        print(f"{failed} extraction job(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))

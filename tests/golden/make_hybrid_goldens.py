"""Write hybrid_goldens.json: the HYBRID answers of ``tests/_hybrid_corpus.py`` on both engines.

Run from the repository root with the implementation the goldens should hold (they were
written by the commit before #53's HYBRID speed-up, fa91177):
``PYTHONPATH=src python -m tests.golden.make_hybrid_goldens``. It starts its own pgserver.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tools.runtime_dir import ensure_runtime_dir

from oracleagentmemory.core import (
    PostgresMemoryStore,
    SchemaPolicy,
    SearchStrategy,
    SQLiteMemoryStore,
)
from tests._embedders import HashingEmbedder
from tests._hybrid_corpus import answers

here = Path(__file__).resolve().parent


def _once(repeated: list[list[list[list[object]]]]) -> list[list[list[object]]]:
    """One answer per search (its repeats agree)."""
    assert all(all(a == rep[0] for a in rep) for rep in repeated), "repeats differ"
    return [rep[0] for rep in repeated]


def main() -> None:
    ensure_runtime_dir()
    import pgserver

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteMemoryStore(
            HashingEmbedder(),
            str(Path(tmp) / "golden.db"),
            schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
            search_strategy=SearchStrategy.HYBRID,
        )
        try:
            out["sqlite"] = _once(answers(store))
        finally:
            store.close()
        server = pgserver.get_server(str(Path(tmp) / "pg"), cleanup_mode="stop")
        try:
            server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
            pg = PostgresMemoryStore(
                HashingEmbedder(),
                server.get_uri(),
                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                search_strategy=SearchStrategy.HYBRID,
            )
            try:
                out["postgres"] = _once(answers(pg))
            finally:
                pg.close()
        finally:
            server.cleanup()
    (here / "hybrid_goldens.json").write_text(json.dumps(out) + "\n")
    print({k: len(v) for k, v in out.items()})


if __name__ == "__main__":
    main()

"""LoCoMo KEYWORD and HYBRID recall, for comparing two versions of the keyword statistics.

``python -m bench.keyword_scope --out FILE.json [--conversations N] [--strategies ...]``

The library path of ``bench/locomo.py`` (one user and thread per conversation, one message
per turn, ``thread.search(question, max_results=25)``), only the KEYWORD and HYBRID rows, and
the per-conversation scores. Run it with ``PYTHONPATH`` pointing at another checkout's
``src`` to measure that version with the same data and the same cached vectors.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.locomo import _ingest, _score
from bench.locomo_data import DEFAULT_DATA, questions, turns


def run(data: Path, conversations: int | None, strategies: list[str]) -> dict[str, Any]:
    import oracleagentmemory
    from bench.vector_cache import DiskCachedEmbedder
    from oracleagentmemory.core import OracleAgentMemory
    from oracleagentmemory.core.dbsearch import SearchStrategy
    from oracleagentmemory.core.embedders import default_embedder

    convs = json.loads(Path(data).read_text())[:conversations]
    prepared = []
    for conv in convs:
        ts = turns(conv)
        qs, _ = questions(conv, {t["dia_id"] for t in ts})
        prepared.append((conv["sample_id"], ts, qs))
    out: dict[str, Any] = {"library": oracleagentmemory.__file__, "strategies": {}}
    emb = DiskCachedEmbedder(default_embedder())
    with tempfile.TemporaryDirectory(prefix="kwscope-") as folder:
        for name in strategies:
            strategy = SearchStrategy[name]
            kwargs: dict[str, Any] = {
                "connection": str(Path(folder) / f"{name}.sqlite"),
                "search_strategy": strategy,
            }
            if strategy is not SearchStrategy.KEYWORD:
                kwargs["embedder"] = emb
            client = OracleAgentMemory(**kwargs)
            _ingest(client, prepared, name)
            per_q, convs_of = [], []
            t0 = time.perf_counter()
            for sid, _, qs in prepared:
                thread = client.get_thread(sid)
                for q in qs:
                    got: list[str] = []
                    for r in thread.search(q["question"], max_results=25):
                        dia = (r.record.metadata or {}).get("dia_id")
                        if dia is not None and dia not in got:
                            got.append(dia)
                    per_q.append((q["category"], q["gold"], got))
                    convs_of.append(sid)
            elapsed = time.perf_counter() - t0
            client.close()
            emb.save()
            scored = _score(per_q, convs_of)
            scored["ms_per_question"] = elapsed / max(1, len(per_q)) * 1e3
            out["strategies"][name] = scored
            print(name, {k: round(v, 4) for k, v in scored["overall"].items()}, flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--conversations", type=int, default=None)
    p.add_argument("--strategies", nargs="*", default=["KEYWORD", "HYBRID"])
    p.add_argument("--out", required=True)
    a = p.parse_args()
    result = run(Path(a.data), a.conversations, a.strategies)
    Path(a.out).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()

"""``python -m bench invalid-links``: which memories automatic links make INVALID on LoCoMo.

One LoCoMo dev conversation (default ``conv-30``; ``--sessions N`` keeps the first N
sessions) goes into one thread, turn texts as in ``bench/locomo.py`` with the session date as
the timestamp, ``--per-call`` turns per ``add_messages``, INLINE extraction with
``MemoryLinkExtractionMode.POST_EXTRACTION`` (the default) through the chosen LLM, no running
summary. Afterwards every INVALID memory is listed with the link that made it INVALID (the
newer memory, the relation, the turns each came from), and up to ``--sample`` of them (seeded
random sample) are written to ``bench/results/<name>.json`` with an empty verdict: a
person judges each one (was the older memory truly superseded or duplicated by the newer
one?) and the share is reported in docs/guides/links-images.md. The LLM is chosen as in
``bench links``.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import progress
from bench.links import build_llm
from bench.llm import _default_data
from bench.locomo_data import turns

RESULTS = Path(__file__).resolve().parent / "results"


def main(args: Any) -> int:
    from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES, RecordStatus
    from oracleagentmemory.core import (
        MemoryExtractionConfig,
        MemoryExtractionMode,
        MemoryLinkExtractionMode,
        OracleAgentMemory,
    )
    from oracleagentmemory.core.embedders import default_embedder

    logging.basicConfig(level=logging.ERROR)
    llm, label = build_llm(args, max_tokens=512)
    if llm is None:
        raise SystemExit("invalid-links needs a model (--llm local, or --api-base/--model)")
    with open(args.data) as f:
        conv = {c["sample_id"]: c for c in json.load(f)}[args.conversation]
    all_turns = turns(conv)
    if args.sessions:
        keep = sorted({t["session"] for t in all_turns})[: args.sessions]
        all_turns = [t for t in all_turns if t["session"] in keep]
    work = tempfile.TemporaryDirectory(prefix="oam-invalid-links-")
    client = OracleAgentMemory(
        connection=str(Path(work.name) / "links.sqlite"),
        embedder=default_embedder(),
        llm=llm,
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            enable_context_summary=False,
            memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
        ),
    )
    user = f"u-{args.conversation}"
    thread = client.create_thread(thread_id=args.conversation, user_id=user, agent_id="locomo")
    batches = [all_turns[i : i + args.per_call] for i in range(0, len(all_turns), args.per_call)]
    dia_of: dict[str, str] = {}
    t0 = time.perf_counter()
    for batch in progress(batches, "extraction", unit="call"):
        ids = thread.add_messages(
            [{"role": "user", "content": t["text"], "timestamp": t["timestamp"]} for t in batch]
        )
        dia_of.update(zip(ids, (t["dia_id"] for t in batch), strict=True))
    seconds = time.perf_counter() - t0
    store = client.store
    memories = {m.id: m for m in client.list_memories(user_id=user, limit=None)}
    sources = store.memory_sources(list(memories))  # type: ignore[attr-defined]
    invalid = [m for m in memories.values() if m.status is RecordStatus.INVALID]
    relations = store.list_relations(limit=None)
    rows = []
    for old in invalid:
        for rel in relations:
            if rel.target_record_id != old.id or rel.relation_type not in (
                "supersedes",
                "duplicates",
            ):
                continue
            new = memories.get(rel.source_record_id)
            rows.append(
                {
                    "old": old.content,
                    "old_turns": [dia_of.get(s, s) for s in sources.get(old.id, ())],
                    "old_time": old.timestamp,
                    "relation": rel.relation_type,
                    "new": new.content if new else None,
                    "new_turns": [dia_of.get(s, s) for s in sources.get(rel.source_record_id, ())],
                    "new_time": new.timestamp if new else None,
                    "verdict": None,
                }
            )
    stats = client.get_memory_extraction_stats()
    client.close()
    sample = random.Random(0).sample(rows, min(args.sample, len(rows)))
    result = {
        "llm": label,
        "conversation": args.conversation,
        "sessions": args.sessions,
        "turns": len(all_turns),
        "add_messages_calls": len(batches),
        "seconds": seconds,
        "memories": len(memories),
        "memory_types": sorted(
            {m.record_type for m in memories.values()} & set(MEMORY_RECORD_TYPES)
        ),
        "links": len(relations),
        "links_by_type": {
            t: sum(r.relation_type == t for r in relations)
            for t in sorted({r.relation_type for r in relations})
        },
        "invalid": len(invalid),
        "invalidating_links": len(rows),
        "sample": sample,
        "failed_jobs": stats.failed,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "sample"}, indent=1))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=str(_default_data()), help="LoCoMo JSON file")
    p.add_argument("--conversation", default="conv-30")
    p.add_argument("--sessions", type=int, default=0, help="only the first N sessions (0: all)")
    p.add_argument("--per-call", type=int, default=8, help="turns per add_messages")
    p.add_argument("--sample", type=int, default=30, help="INVALID memories to judge by hand")
    p.add_argument("--llm", choices=("local",), default="local")
    p.add_argument("--local-model", default=None, help="LocalLlm model name (default: its own)")
    p.add_argument("--api-base", default=None)
    p.add_argument("--model", default=None)
    p.add_argument("--api-key", default=None)
    p.add_argument("--name", default="links-locomo", help="results file stem")

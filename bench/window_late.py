"""``python -m bench window-late``: may a window vector come from late chunking?

Today a message's vector embeds its retrieval window (the previous message and itself), about
twice the tokens of the turn. Late chunking (Günther et al., 2024) runs ONE forward pass of the
default embedder over a segment of consecutive messages of the thread ("passage: " once, the
messages joined as ``window_text`` joins them, at most the model's 510 content tokens) and
derives each message's vector by mean-pooling the token states of a span of it. Segments hold
at most ``G`` messages and overlap by one, so every message's previous message is in the
segment its vector comes from (the first message of a thread, and one whose previous message
does not fit with it in a segment, pool their own span only); a message that does not fit a
segment alone gets its plain vector.

Grid and rule, fixed before the run:

- ``G`` in 4, 8, 16 and ``fit`` (as many messages as fit 510 tokens);
- span ``pair`` (the previous message's tokens and its own: today's window, contextualised),
  ``own`` (its own tokens), and each with ``+ctx`` (the segment's BOS, "passage:" and EOS
  states added to the pool, as every plain vector pools them): 16 configurations.
- Leave one conversation out: on the other four, the configuration with the best mean HYBRID
  recall@10 (the default search) is chosen and measured on the fifth, dense and HYBRID, against
  today's window (the choice by dense is reported beside it, deciding nothing). Within noise:
  both pooled paired bootstrap 95% intervals (dense and HYBRID) of the held-out difference
  contain 0 or lie above it.
- Cheap enough: the import's estimated rate reaches half the turns' (``import_share``: the
  configuration's embedding CPU time over the turns', plus the import's own overhead measured
  by ``bench/results/cold-start.md``).

Recall is measured as ``bench/window_cap.py`` measures it (dense recall@10 by exact cosine,
HYBRID recall@10 through a real SQLite store with the vectors given as ``embeddings=``, the
store's own keyword rows), on the 5 LoCoMo dev conversations (995 questions). CPU time (the
process's, ONNX Runtime's threads included) and wall time of embedding each conversation's
turns are measured in the same run for: the turns alone (one ``embed`` call a conversation),
today's windows (likewise) and each ``G`` (its four spans come from the same forward passes).
A check: ``G`` = 2 with span ``pair+ctx`` on one conversation against today's window vectors.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.common import log, machine, save_results
from bench.locomo_data import DEFAULT_DATA, questions, turns
from bench.window_cap import _hybrid, against_today, dense_recall, pooled, window_texts
from bench.window_mix import _cross_validate, recall_tables

GROUPS: tuple[int | None, ...] = (4, 8, 16, None)
"""Messages per segment (None: as many as fit the model's window); fixed before the run."""
SPANS = ("pair", "own", "pair+ctx", "own+ctx")
TODAY = "today"
ALONE = "alone"
LIMIT = 510
"""Content tokens of one forward pass (the model's window less BOS and EOS)."""
IMPORT_OVERHEAD = 3.56 / 15.19
"""The import's own CPU time beyond embedding, in units of the turns' embedding CPU time
(``bench/results/cold-start.md``: 3.56 s beside 15.19 s for the same 1,000 turns)."""


def _g(g: int | None) -> str:
    return "fit" if g is None else str(g)


def segments(lens: list[int], plen: int, g: int | None) -> list[tuple[int, int, bool]]:
    """(start, end, owns_first) of each forward pass over a thread whose messages have
    ``lens`` tokens (prefix ``plen``): at most ``g`` messages and ``LIMIT`` tokens, each
    starting at the last message of the one before (``owns_first``: its first message gets
    its vector from this segment, having no earlier one)."""
    out: list[tuple[int, int, bool]] = []
    s, owned = 0, True
    n = len(lens)
    while s < n:
        total = plen + lens[s]
        if total > LIMIT:  # too long alone: a plain vector; the next starts afresh
            s, owned = s + 1, True
            continue
        e = s + 1
        while e < n and (g is None or e - s < g) and total + lens[e] <= LIMIT:
            total += lens[e]
            e += 1
        if e - s > 1 or owned:
            out.append((s, e, owned))
        if e == n:
            break
        s, owned = (e - 1, False) if e - s > 1 else (e, True)
    return out


def _states(rt: Any, batch: list[list[int]]) -> tuple[NDArray[np.float32], list[int]]:
    """Token states [B, L, H] of token lists (BOS/EOS added), as ``_Runtime.forward``
    computes them before pooling, and each row's length."""
    hidden, mask = rt.states(batch)
    return hidden, [int(x) for x in mask.sum(axis=1)]


def _unit(v: NDArray[np.float32]) -> NDArray[np.float32]:
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def late_vectors(
    inner: Any, texts: list[str], g: int | None, spans: tuple[str, ...] = SPANS
) -> dict[str, NDArray[np.float32]]:
    """Each span's vectors of a thread's messages ``texts``, late-chunked in segments of
    ``g``."""
    from oracleagentmemory.core.embedders._e5_int8 import BATCH, _load

    rt = _load()
    prefix = rt.weights.tokenize("passage:")
    toks = [rt.weights.tokenize(t) for t in texts]
    segs = segments([len(t) for t in toks], len(prefix), g)
    out = {s: np.zeros((len(texts), inner.embedding_dimension), np.float32) for s in spans}
    done = np.zeros(len(texts), bool)
    order = sorted(range(len(segs)), key=lambda k: segs[k][1] - segs[k][0])
    order = sorted(order, key=lambda k: sum(len(toks[i]) for i in range(*segs[k][:2])))
    for b in range(0, len(order), BATCH):
        part = [segs[k] for k in order[b : b + BATCH]]
        seqs = [prefix + [x for i in range(s, e) for x in toks[i]] for s, e, _ in part]
        hidden, lengths = _states(rt, seqs)
        for row, ((s, e, owned), n) in enumerate(zip(part, lengths, strict=True)):
            h = hidden[row, :n]
            ctx = np.concatenate([h[: 1 + len(prefix)], h[n - 1 :]])
            at = [1 + len(prefix)]
            for i in range(s, e):
                at.append(at[-1] + len(toks[i]))
            for j, i in enumerate(range(s, e)):
                if j == 0 and not owned:
                    continue
                own = h[at[j] : at[j + 1]]
                pair = h[at[j - 1] : at[j + 1]] if j else own
                for span in spans:
                    body = pair if span.startswith("pair") else own
                    if span.endswith("+ctx"):
                        body = np.concatenate([body, ctx])
                    out[span][i] = _unit(body.mean(axis=0))
                done[i] = True
    solo = [i for i in range(len(texts)) if not done[i]]
    if solo:
        plain = inner.embed([texts[i] for i in solo])
        for span in spans:
            out[span][solo] = plain
    return out


def _timed(fn: Any) -> tuple[Any, float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    res = fn()
    return res, time.process_time() - c0, time.perf_counter() - t0


def main(data_path: Path = DEFAULT_DATA) -> dict[str, Any]:
    from bench.vector_cache import DiskCachedEmbedder
    from oracleagentmemory.core.embedders import default_embedder
    from oracleagentmemory.core.store.schema._rows import Chunker

    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_before = os.getloadavg()[0]
    inner: Any = default_embedder()
    emb = DiskCachedEmbedder(inner)
    max_words = Chunker.for_tokens(inner.max_input_tokens).max_words
    convs = []
    for conv in json.loads(Path(data_path).read_text()):
        ts = turns(conv)
        qs, _ = questions(conv, {t["dia_id"] for t in ts})
        convs.append((conv["sample_id"], ts, qs))
    inner.embed(["warm up"])  # the model is loaded before anything is timed
    turn_tokens = sum(inner.token_count(t["text"]) for _, ts, _ in convs for t in ts)
    cost: dict[str, dict[str, Any]] = {}

    def time_all(name: str, fn: Any) -> list[Any]:
        la = os.getloadavg()[0]
        res, cpu, wall = [], 0.0, 0.0
        for _, ts, _ in convs:
            r, c, w = _timed(lambda ts=ts: fn([t["text"] for t in ts]))
            res.append(r)
            cpu, wall = cpu + c, wall + w
        cost[name] = {"cpu_s": cpu, "wall_s": wall, "load": [la, os.getloadavg()[0]]}
        log(f"{name}: {cpu:.1f} CPU s, {wall:.1f} s wall (load {la:.1f})")
        return res

    time_all(ALONE, lambda texts: inner.embed(texts))
    time_all(TODAY, lambda texts: inner.embed(window_texts(texts, None, max_words)))
    late: dict[str, list[NDArray[np.float32]]] = {}
    for g in GROUPS:
        runs = time_all(f"G {_g(g)}", lambda texts, g=g: late_vectors(inner, texts, g))
        for span in SPANS:
            late[f"G{_g(g)} {span}"] = [r[span] for r in runs]
    from oracleagentmemory.core.embedders._e5_int8 import _load

    tok = _load().weights.tokenize
    plen = len(tok("passage:"))
    tokens = {}
    for g in GROUPS:
        n = 0
        for _, ts, _ in convs:
            lens = [len(tok(t["text"])) for t in ts]
            n += sum(plen + 2 + sum(lens[s:e]) for s, e, _ in segments(lens, plen, g))
        tokens[f"G {_g(g)}"] = n / turn_tokens
    tokens[ALONE] = 1.0
    wins = [w for _, ts, _ in convs for w in window_texts([t["text"] for t in ts], None, max_words)]
    tokens[TODAY] = sum(inner.token_count(w) for w in wins) / turn_tokens
    # The check: G = 2, span pair+ctx, against today's window vectors (conv 1).
    sid, ts, _ = convs[0]
    texts = [t["text"] for t in ts]
    two = late_vectors(inner, texts, 2, ("pair+ctx",))["pair+ctx"]
    wins = window_texts(texts, None, max_words)
    today0 = emb.embed(wins)
    has_window = [i for i in range(len(texts)) if wins[i] != texts[i]]
    cos = (two[has_window] * today0[has_window]).sum(axis=1)
    check = {
        "conversation": sid,
        "messages": len(has_window),
        "min_cosine": float(cos.min()),
        "median_cosine": float(np.median(cos)),
        "max_abs_diff": float(np.abs(two[has_window] - today0[has_window]).max()),
    }
    log(f"G=2 pair+ctx against today's windows: {check}")
    cfgs = [TODAY, ALONE, *late]
    dense: dict[str, list[NDArray[np.float64]]] = {c: [] for c in cfgs}
    hybrid: dict[str, list[NDArray[np.float64]]] = {c: [] for c in cfgs}
    with tempfile.TemporaryDirectory(prefix="oam-wlate-") as tmp:
        for k, conv in enumerate(convs):
            t0 = time.perf_counter()
            _, ts, qs = conv
            texts = [t["text"] for t in ts]
            qv = emb.embed([q["question"] for q in qs], is_query=True)
            for cfg in cfgs:
                if cfg == TODAY:
                    vecs = emb.embed(window_texts(texts, None, max_words))
                elif cfg == ALONE:
                    vecs = emb.embed(texts)
                else:
                    vecs = late[cfg][k]
                dense[cfg].append(dense_recall(qv, vecs, ts, qs))
                hybrid[cfg].append(np.array(_hybrid(emb, conv, vecs, Path(tmp))))
            log(f"{conv[0]}: {len(cfgs)} configurations ({time.perf_counter() - t0:.0f} s)")
    emb.save()
    for cfg in cfgs:
        log(
            f"{cfg}: dense R@10 {np.concatenate(dense[cfg]).mean():.3f}, "
            f"HYBRID R@10 {np.concatenate(hybrid[cfg]).mean():.3f}"
        )
    late_only_h = {c: hybrid[c] for c in [TODAY, *late]}
    late_only_d = {c: dense[c] for c in [TODAY, *late]}
    folds, summary = {}, {}
    folds["HYBRID"], summary["HYBRID"] = _cross_validate(convs, late_only_h, late_only_d)
    folds["dense"], summary["dense"] = _cross_validate(convs, late_only_d, late_only_h)
    fixed: dict[str, dict[str, Any]] = {}
    for name, per in (("HYBRID", hybrid), ("dense", dense)):
        fixed |= against_today(per, TODAY, cfgs[1:], f"{name}|")
    turns_cpu = cost[ALONE]["cpu_s"]
    share = {name: 1.0 / (c["cpu_s"] / turns_cpu + IMPORT_OVERHEAD) for name, c in cost.items()}
    within = {k: s["interval"][1] >= 0 and s["other_interval"][1] >= 0 for k, s in summary.items()}
    res = {
        "started": started,
        "command": "python -m bench window-late",
        "machine": machine(),
        "groups": [_g(g) for g in GROUPS],
        "spans": list(SPANS),
        "configurations": cfgs,
        "tokens_x_turn": tokens,
        "cost": cost,
        "cpu_x_turns": {n: c["cpu_s"] / turns_cpu for n, c in cost.items()},
        "import_share_estimate": share,
        "g2_check": check,
        "pooled": {c: pooled(dense[c], hybrid[c]) for c in cfgs},
        "conversations": [c[0] for c in convs],
        "questions": sum(len(c[2]) for c in convs),
        "folds": folds,
        "summary": summary,
        "within_noise": within,
        "against_today": fixed,
        "load_average": [load_before, os.getloadavg()[0]],
    }
    save_results("window-late", res, _md(res))
    return res


def _iv(d: float, iv: list[float]) -> str:
    return f"{d:+.3f} [{iv[0]:+.3f}, {iv[1]:+.3f}]"


def _md(res: dict[str, Any]) -> list[str]:
    convs = res["conversations"]
    ck = res["g2_check"]
    lines = [
        "# Late chunking: window vectors pooled from one pass over a segment (LoCoMo dev)",
        "",
        f"{res['started']}, `{res['command']}`, "
        f"{', '.join(f'{k} {v}' for k, v in res['machine'].items())}. Load average (1 min) "
        f"{res['load_average'][0]:.1f} at the start, {res['load_average'][1]:.1f} at the end "
        "(recall does not depend on it; the times do). `bench/window_late.py` says how each "
        f"figure is measured; {res['questions']} questions, conversations {', '.join(convs)}. "
        "`Gn span`: segments of at most n messages (fit: as many as fit 510 tokens) "
        "overlapping by one; span pair = the previous message's states and its own, own = its "
        "own, +ctx = with the segment's BOS, prefix and EOS states.",
        "",
        "## Embedding cost, the 5 conversations' turns (same run)",
        "",
        "| what is embedded | tokens (x the turn) | CPU s | x the turns' CPU | wall s | "
        "load (1 min) | import's rate / turns' (estimate) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in res["cost"].items():
        lines.append(
            f"| {name} | {res['tokens_x_turn'][name]:.2f} | {c['cpu_s']:.1f} | "
            f"{res['cpu_x_turns'][name]:.2f} | {c['wall_s']:.1f} | "
            f"{c['load'][0]:.1f}-{c['load'][1]:.1f} | {res['import_share_estimate'][name]:.2f} |"
        )
    lines += [
        "",
        "The estimate adds the import's own CPU time beyond embedding (3.56 s beside 15.19 s "
        "of the turns' embedding, `bench/results/cold-start.md`) to each row's CPU time; the "
        "target is 0.50.",
        "",
        f"Check: G = 2 with span pair+ctx against today's window vectors, {ck['conversation']} "
        f"({ck['messages']} messages with a window): cosine min {ck['min_cosine']:.6f}, "
        f"median {ck['median_cosine']:.6f}, largest coordinate difference "
        f"{ck['max_abs_diff']:.2e}.",
        "",
    ]
    lines += recall_tables(res)
    for name, rows in res["folds"].items():
        s = res["summary"][name]
        other = "dense" if name == "HYBRID" else "HYBRID"
        lines += [
            "",
            f"## Leave one conversation out, (G, span) chosen by {name} recall@10"
            + (" (the rule)" if name == "HYBRID" else " (shown only)"),
            "",
            f"| held out | chosen on the others | held-out {name} R@10 | today's window | "
            f"difference | {other} difference |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['held_out']} | {r['chosen']} | {r['held_out_r10']:.3f} | "
            f"{r['today_r10']:.3f} | {r['diff']:+.3f} | {r['other_diff']:+.3f} |"
            for r in rows
        ]
        verdict = (
            "Within noise on both searches (both intervals contain 0 or lie above it)."
            if res["within_noise"][name]
            else "NOT within noise: an interval lies below 0."
        )
        lines += [
            "",
            f"Pooled over the held-out questions: {name} {s['held_out_r10']:.3f} against "
            f"{s['today_r10']:.3f}, {_iv(s['diff'], s['interval'])} (per-fold SD "
            f"{s['fold_diff_sd']:.3f}); {other} {_iv(s['other_diff'], s['other_interval'])}. "
            f"{verdict}",
        ]
    return lines

"""``python -m bench window-mix``: may a window vector be mixed from vectors already computed?

Today a message's vector embeds its retrieval window (the previous message and itself), about
twice the tokens of the turn. The candidates here embed every message once, alone (``u``), and
build its window vector from vectors already computed, with a weight ``a`` from ``WEIGHTS``:

- ``pair``: ``normalize(u[i] + a * u[i-1])`` (the previous message's own vector);
- ``chain``: ``normalize(u[i] + a * v[i-1])`` (the previous *window* vector: an exponential
  decay over the thread).

The first message of a thread is its own vector. The grid, the variants and the rule below were
fixed before the run. Measured as ``bench/window_cap.py`` measures caps: dense recall@10 (exact
cosine over the conversation's vectors) and HYBRID recall@10 through a real SQLite store
(``thread.search``, the vectors given as ``embeddings=``, the store's own keyword rows), per
question, on the LoCoMo dev conversations. Leave one conversation out: on the other four, the
(variant, a) with the best mean recall@10 is chosen (by HYBRID, and separately by dense), and
both its dense and HYBRID recall@10 are measured on the fifth against today's window. Within
noise means: the paired bootstrap 95% interval of the pooled held-out difference contains 0
for dense and for HYBRID, under one choice of (variant, a). Vectors are cached in
``bench/.cache`` (the turns and today's windows are already there from ``window-cap``).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.common import log, machine, save_results
from bench.locomo_data import DEFAULT_DATA, questions, turns
from bench.tuning import paired_bootstrap
from bench.window_cap import _hybrid, against_today, dense_recall, pooled, window_texts

WEIGHTS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5)
"""The weights ``a`` of the earlier vector (fixed before the run)."""
VARIANTS = ("pair", "chain")
TODAY = "today"
ALONE = "alone"


def _unit(v: NDArray[np.float32]) -> NDArray[np.float32]:
    return v / np.linalg.norm(v)


def mixed(u: NDArray[np.float32], variant: str, a: float) -> NDArray[np.float32]:
    """The window vectors of one thread's messages, whose own vectors are the rows of ``u``."""
    out = np.empty_like(u)
    for i in range(len(u)):
        if i == 0:
            out[i] = _unit(u[i])
        else:
            prev = u[i - 1] if variant == "pair" else out[i - 1]
            out[i] = _unit(u[i] + a * prev)
    return out


def _configs() -> list[str]:
    return [TODAY, ALONE, *(f"{v} {a}" for v in VARIANTS for a in WEIGHTS)]


def _vectors(cfg: str, own: NDArray[np.float32], win: NDArray[np.float32]) -> NDArray[np.float32]:
    if cfg == TODAY:
        return win
    if cfg == ALONE:
        return own
    variant, a = cfg.split(" ")
    return mixed(own, variant, float(a))


def _cross_validate(
    convs: list[Any], by: dict[str, list[NDArray[np.float64]]], other: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Leave one conversation out, choosing among the mixes by ``by``'s training mean; the
    held-out difference against today on ``by`` and on ``other`` (the other search)."""
    cands = [c for c in by if c != TODAY]
    rows, held, held_o, base, base_o = [], [], [], [], []
    for i, (sid, _, _) in enumerate(convs):
        train = [j for j in range(len(convs)) if j != i]
        means = {c: float(np.concatenate([by[c][j] for j in train]).mean()) for c in cands}
        pick = max(cands, key=lambda c: means[c])
        held.append(by[pick][i])
        held_o.append(other[pick][i])
        base.append(by[TODAY][i])
        base_o.append(other[TODAY][i])
        rows.append(
            {
                "held_out": sid,
                "chosen": pick,
                "train_best": means[pick],
                "held_out_r10": float(by[pick][i].mean()),
                "today_r10": float(by[TODAY][i].mean()),
                "diff": float(by[pick][i].mean() - by[TODAY][i].mean()),
                "other_diff": float(other[pick][i].mean() - other[TODAY][i].mean()),
            }
        )
    d, lo, hi = paired_bootstrap(np.concatenate(base), np.concatenate(held))
    od, olo, ohi = paired_bootstrap(np.concatenate(base_o), np.concatenate(held_o))
    return rows, {
        "held_out_r10": float(np.concatenate(held).mean()),
        "today_r10": float(np.concatenate(base).mean()),
        "diff": d,
        "interval": [lo, hi],
        "other_diff": od,
        "other_interval": [olo, ohi],
        "fold_diff_sd": statistics.pstdev(r["diff"] for r in rows),
    }


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
    cfgs = _configs()
    dense: dict[str, list[NDArray[np.float64]]] = {c: [] for c in cfgs}
    hybrid: dict[str, list[NDArray[np.float64]]] = {c: [] for c in cfgs}
    with tempfile.TemporaryDirectory(prefix="oam-wmix-") as tmp:
        for conv in convs:
            t0 = time.perf_counter()
            _, ts, qs = conv
            texts = [t["text"] for t in ts]
            own = emb.embed(texts)
            win = emb.embed(window_texts(texts, None, max_words))
            qv = emb.embed([q["question"] for q in qs], is_query=True)
            for cfg in cfgs:
                vecs = _vectors(cfg, own, win)
                dense[cfg].append(dense_recall(qv, vecs, ts, qs))
                hybrid[cfg].append(np.array(_hybrid(emb, conv, vecs, Path(tmp))))
            emb.save()
            log(f"{conv[0]}: {len(cfgs)} configurations ({time.perf_counter() - t0:.0f} s)")
    for cfg in cfgs:
        log(
            f"{cfg}: dense R@10 {np.concatenate(dense[cfg]).mean():.3f}, "
            f"HYBRID R@10 {np.concatenate(hybrid[cfg]).mean():.3f}"
        )
    folds, summary = {}, {}
    folds["HYBRID"], summary["HYBRID"] = _cross_validate(convs, hybrid, dense)
    folds["dense"], summary["dense"] = _cross_validate(convs, dense, hybrid)
    fixed = {}
    for name, per in (("HYBRID", hybrid), ("dense", dense)):
        fixed |= against_today(per, TODAY, cfgs[1:], f"{name}|")
    res = {
        "started": started,
        "command": "python -m bench window-mix",
        "machine": machine(),
        "configurations": cfgs,
        "weights": list(WEIGHTS),
        "pooled": {c: pooled(dense[c], hybrid[c]) for c in cfgs},
        "conversations": [c[0] for c in convs],
        "questions": sum(len(c[2]) for c in convs),
        "folds": folds,
        "summary": summary,
        "against_today": fixed,
        "within_noise": {
            k: s["interval"][0] <= 0 <= s["interval"][1]
            and s["other_interval"][0] <= 0 <= s["other_interval"][1]
            for k, s in summary.items()
        },
        "load_average": [load_before, os.getloadavg()[0]],
    }
    save_results("window-mix", res, _md(res))
    return res


def _iv(d: float, iv: list[float]) -> str:
    return f"{d:+.3f} [{iv[0]:+.3f}, {iv[1]:+.3f}]"


def recall_tables(res: dict[str, Any]) -> list[str]:
    """The two recall tables of a window study's results (every configuration on every
    conversation; each against today's window), markdown lines."""
    lines = [
        "## Every configuration on every conversation (recall@10)",
        "",
        "| window vector | dense | HYBRID | dense per conversation | HYBRID per conversation |",
        "|---|---|---|---|---|",
    ]
    for c in res["configurations"]:
        p = res["pooled"][c]
        lines.append(
            f"| {c} | {p['dense_r10']:.3f} | {p['hybrid_r10']:.3f} | "
            f"{' / '.join(f'{x:.3f}' for x in p['dense_by_conv'])} | "
            f"{' / '.join(f'{x:.3f}' for x in p['hybrid_by_conv'])} |"
        )
    lines += [
        "",
        "## Each configuration against today's window (difference of recall@10)",
        "",
        "| window vector | search | per conversation | SD across conversations | pooled (paired "
        "bootstrap 95%) |",
        "|---|---|---|---|---|",
    ]
    for key, f in res["against_today"].items():
        name, cfg = key.split("|")
        lines.append(
            f"| {cfg} | {name} | {' / '.join(f'{x:+.3f}' for x in f['by_conv'])} | "
            f"{f['conv_sd']:.3f} | {_iv(f['diff'], f['interval'])} |"
        )
    return lines


def _md(res: dict[str, Any]) -> list[str]:
    convs = res["conversations"]
    lines = [
        "# A window vector mixed from the messages' own vectors (LoCoMo dev)",
        "",
        f"{res['started']}, `{res['command']}`, "
        f"{', '.join(f'{k} {v}' for k, v in res['machine'].items())}. Load average (1 min) "
        f"{res['load_average'][0]:.1f} at the start, {res['load_average'][1]:.1f} at the end "
        "(recall does not depend on it). `bench/window_mix.py` says how each figure is "
        f"measured; {res['questions']} questions, conversations {', '.join(convs)}. "
        "pair a: normalize(u[i] + a u[i-1]); chain a: normalize(u[i] + a v[i-1]) (v: the "
        "previous window vector); every candidate embeds each message once (1.00x the turn's "
        "tokens; today's window 1.90x).",
        "",
    ]
    lines += recall_tables(res)
    for name, rows in res["folds"].items():
        s = res["summary"][name]
        other = "dense" if name == "HYBRID" else "HYBRID"
        lines += [
            "",
            f"## Leave one conversation out, (variant, a) chosen by {name} recall@10",
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
            "Within noise on both searches (both intervals contain 0)."
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

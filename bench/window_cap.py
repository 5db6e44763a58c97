"""``python -m bench window-cap``: may the previous message's share of a window vector be capped?

A message's vector is embedded from its retrieval window (the previous message and itself,
``retrieval_windows``), about twice the tokens of the turn. Each candidate cap keeps only the
last K words of the previous message in the *embedded* text (K = 0: the message alone; "full":
today's window); the keyword rows stay the store's own. For every cap: dense recall@10 (exact
cosine of the query against the conversation's window vectors) and HYBRID recall@10 through a
real SQLite store (the client's ``thread.search``, vectors given as ``embeddings=``), per
question, on the LoCoMo dev conversations. Leave one conversation out: on the other four, the
cheapest cap whose mean recall@10 is within ``TOLERANCE`` of the best one's is chosen, and
measured on the fifth against today's window. Vectors are cached in ``bench/.cache``.
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

CAPS: tuple[int | None, ...] = (0, 8, 16, 24, 32, 48, None)
"""Words of the previous message kept in the embedded window (None: all of it, today)."""
TOLERANCE = 0.005
"""A cap within this much of the best training recall@10 counts as as good (cheaper wins)."""
SENSITIVITY = 0.01
"""A looser tolerance, reported beside the chosen one (it decides nothing)."""


def capped(previous: str, k: int | None) -> str:
    """The last ``k`` words of ``previous`` (all of it for None)."""
    if k is None:
        return previous
    return " ".join(previous.split()[-k:]) if k else ""


def window_texts(texts: list[str], k: int | None, max_words: int) -> list[str]:
    """What is embedded for each message of a thread, as ``retrieval_windows`` builds it, the
    previous message cut to its last ``k`` words."""
    out = []
    for i, text in enumerate(texts):
        prev = texts[i - 1] if i else None
        if prev is not None and len(f"{prev} {text}".split()) <= max_words:
            head = capped(prev, k)
            out.append(f"{head}\n{text}" if head else text)
        else:
            out.append(text)
    return out


def _recall(gold: list[str], got: list[str], k: int = 10) -> float:
    return len(set(gold) & set(got[:k])) / len(set(gold))


def _hybrid(
    emb: Any, conv: tuple[str, list[Any], list[Any]], vecs: NDArray[np.float32], folder: Path
) -> list[float]:
    """HYBRID recall@10 of each question through a real store holding ``vecs``."""
    from oracleagentmemory.core import OracleAgentMemory
    from oracleagentmemory.core.dbsearch import SearchStrategy

    sid, ts, qs = conv
    path = folder / f"{sid}.sqlite"
    for p in folder.glob(f"{path.name}*"):
        p.unlink()
    client = OracleAgentMemory(
        connection=str(path), embedder=emb, search_strategy=SearchStrategy.HYBRID
    )
    try:
        th = client.create_thread(thread_id=sid, user_id=f"u-{sid}", agent_id="locomo")
        start = 0
        while start < len(ts):  # one add_messages per session, as bench/locomo.py
            end = start
            while end < len(ts) and ts[end]["session"] == ts[start]["session"]:
                end += 1
            th.add_messages(
                [
                    {
                        "role": "user",
                        "content": t["text"],
                        "timestamp": t["timestamp"],
                        "metadata": {"dia_id": t["dia_id"], "session": t["session"]},
                    }
                    for t in ts[start:end]
                ],
                embeddings=vecs[start:end],
            )
            start = end
        out = []
        for q in qs:
            got: list[str] = []
            for r in th.search(q["question"], max_results=10):
                dia = (r.record.metadata or {}).get("dia_id")
                if dia is not None and dia not in got:
                    got.append(dia)
            out.append(_recall(q["gold"], got))
        return out
    finally:
        client.close()


def dense_recall(
    qv: NDArray[np.float32], vecs: NDArray[np.float32], ts: list[Any], qs: list[Any]
) -> NDArray[np.float64]:
    """Each question's recall@10 of its gold turns among the 10 nearest of ``vecs``."""
    top = np.argsort(-(qv @ vecs.T), axis=1)[:, :10]
    return np.array(
        [_recall(q["gold"], [ts[i]["dia_id"] for i in top[n]]) for n, q in enumerate(qs)]
    )


def against_today(
    per: dict[Any, list[NDArray[np.float64]]], today: Any, others: list[Any], label: str
) -> dict[str, dict[str, Any]]:
    """Each configuration of ``others`` against ``today`` on the same questions (paired):
    the pooled difference, its bootstrap interval, per conversation and their spread;
    keyed ``label`` + the configuration."""
    base = np.concatenate(per[today])
    out = {}
    for c in others:
        d, lo, hi = paired_bootstrap(base, np.concatenate(per[c]))
        by_conv = [float(a.mean() - b.mean()) for a, b in zip(per[c], per[today], strict=True)]
        out[f"{label}{c}"] = {
            "diff": d,
            "interval": [lo, hi],
            "by_conv": by_conv,
            "conv_sd": statistics.pstdev(by_conv),
        }
    return out


def pooled(dense: list[NDArray[np.float64]], hybrid: list[NDArray[np.float64]]) -> dict[str, Any]:
    """One configuration's recall@10, pooled and per conversation, dense and HYBRID."""
    return {
        "dense_r10": float(np.concatenate(dense).mean()),
        "hybrid_r10": float(np.concatenate(hybrid).mean()),
        "dense_by_conv": [float(x.mean()) for x in dense],
        "hybrid_by_conv": [float(x.mean()) for x in hybrid],
    }


def _choose(
    per: dict[Any, list[NDArray[np.float64]]], train: list[int], tolerance: float
) -> tuple[int | None, dict[Any, float]]:
    """The cheapest cap within ``tolerance`` of the best mean recall@10 on ``train``."""
    means = {c: float(np.concatenate([per[c][j] for j in train]).mean()) for c in CAPS}
    best = max(means.values())
    return next(c for c in CAPS if means[c] >= best - tolerance), means


def _cross_validate(
    convs: list[Any], per: dict[Any, list[NDArray[np.float64]]], tolerance: float
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Leave one conversation out: per-fold rows and the pooled held-out summary."""
    rows, held, base = [], [], []
    for i, (sid, _, _) in enumerate(convs):
        cap, means = _choose(per, [j for j in range(len(convs)) if j != i], tolerance)
        held.append(per[cap][i])
        base.append(per[None][i])
        rows.append(
            {
                "held_out": sid,
                "chosen_cap": cap,
                "train_r10": {str(c): v for c, v in means.items()},
                "held_out_r10": float(per[cap][i].mean()),
                "today_r10": float(per[None][i].mean()),
                "diff": float(per[cap][i].mean() - per[None][i].mean()),
            }
        )
    d, lo, hi = paired_bootstrap(np.concatenate(base), np.concatenate(held))
    return rows, {
        "held_out_r10": float(np.concatenate(held).mean()),
        "today_r10": float(np.concatenate(base).mean()),
        "diff": d,
        "interval": [lo, hi],
        "fold_diff_sd": statistics.pstdev(r["diff"] for r in rows),
        "today_fold_sd": statistics.pstdev(r["today_r10"] for r in rows),
    }


def main(data_path: Path = DEFAULT_DATA) -> dict[str, Any]:
    from bench.vector_cache import DiskCachedEmbedder
    from oracleagentmemory.core.embedders import default_embedder
    from oracleagentmemory.core.store.schema._rows import Chunker

    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_before = os.getloadavg()[0]
    inner: Any = default_embedder()  # the int8 engine: token_count
    emb = DiskCachedEmbedder(inner)
    max_words = Chunker.for_tokens(inner.max_input_tokens).max_words
    convs = []
    for conv in json.loads(Path(data_path).read_text()):
        ts = turns(conv)
        qs, _ = questions(conv, {t["dia_id"] for t in ts})
        convs.append((conv["sample_id"], ts, qs))
    turn_tokens = sum(inner.token_count(t["text"]) for _, ts, _ in convs for t in ts)
    dense: dict[Any, list[NDArray[np.float64]]] = {c: [] for c in CAPS}
    hybrid: dict[Any, list[NDArray[np.float64]]] = {c: [] for c in CAPS}
    tokens: dict[Any, float] = {}
    with tempfile.TemporaryDirectory(prefix="oam-wcap-") as tmp:
        for cap in CAPS:
            t0 = time.perf_counter()
            ntok = 0
            for conv in convs:
                _, ts, qs = conv
                texts = window_texts([t["text"] for t in ts], cap, max_words)
                ntok += sum(inner.token_count(t) for t in texts)
                vecs = emb.embed(texts)
                qv = emb.embed([q["question"] for q in qs], is_query=True)
                dense[cap].append(dense_recall(qv, vecs, ts, qs))
                hybrid[cap].append(np.array(_hybrid(emb, conv, vecs, Path(tmp))))
            emb.save()
            tokens[cap] = ntok / turn_tokens
            log(
                f"cap {cap}: tokens x{tokens[cap]:.2f}, dense R@10 "
                f"{np.concatenate(dense[cap]).mean():.3f}, HYBRID R@10 "
                f"{np.concatenate(hybrid[cap]).mean():.3f} ({time.perf_counter() - t0:.0f} s)"
            )
    folds: dict[str, list[dict[str, Any]]] = {}
    summary: dict[str, Any] = {}
    for name, per in (("HYBRID", hybrid), ("dense", dense)):
        for tol in (TOLERANCE, SENSITIVITY):
            key = name if tol == TOLERANCE else f"{name}, tolerance {tol}"
            folds[key], summary[key] = _cross_validate(convs, per, tol)
    fixed = {}  # each cap against today's window, the same questions (paired)
    for name, per in (("HYBRID", hybrid), ("dense", dense)):
        fixed |= against_today(per, None, list(CAPS[:-1]), f"{name} ")
    res = {
        "started": started,
        "command": "python -m bench window-cap",
        "machine": machine(),
        "caps": [str(c) for c in CAPS],
        "tolerance": TOLERANCE,
        "tokens_x_turn": {str(c): tokens[c] for c in CAPS},
        "pooled": {str(c): pooled(dense[c], hybrid[c]) for c in CAPS},
        "conversations": [c[0] for c in convs],
        "questions": sum(len(c[2]) for c in convs),
        "folds": folds,
        "summary": summary,
        "against_today": fixed,
        "load_average": [load_before, os.getloadavg()[0]],
    }
    save_results("window-cap", res, _md(res))
    return res


def _md(res: dict[str, Any]) -> list[str]:
    convs = res["conversations"]
    lines = [
        "# A cap on the previous message in a window vector (LoCoMo dev)",
        "",
        f"{res['started']}, `{res['command']}`, "
        f"{', '.join(f'{k} {v}' for k, v in res['machine'].items())}. Load average (1 min) "
        f"{res['load_average'][0]:.1f} at the start, {res['load_average'][1]:.1f} at the end "
        "(recall does not depend on it). `bench/window_cap.py` says how each figure is "
        f"measured; {res['questions']} questions, conversations {', '.join(convs)}.",
        "",
        "## Every cap on every conversation (recall@10)",
        "",
        "| cap (words of the previous message) | tokens (x the turn) | dense | HYBRID | "
        "HYBRID per conversation |",
        "|---|---|---|---|---|",
    ]
    for c in res["caps"]:
        p = res["pooled"][c]
        lines.append(
            f"| {'all (today)' if c == 'None' else c} | {res['tokens_x_turn'][c]:.2f} | "
            f"{p['dense_r10']:.3f} | {p['hybrid_r10']:.3f} | "
            f"{' / '.join(f'{x:.3f}' for x in p['hybrid_by_conv'])} |"
        )
    lines += [
        "",
        "## Each cap against today's window, per conversation (difference of recall@10)",
        "",
        "| cap | search | per conversation | SD across conversations | pooled (paired "
        "bootstrap 95%) |",
        "|---|---|---|---|---|",
    ]
    for key, f in res["against_today"].items():
        name, cap = key.split(" ")
        lines.append(
            f"| {cap} | {name} | {' / '.join(f'{x:+.3f}' for x in f['by_conv'])} | "
            f"{f['conv_sd']:.3f} | {f['diff']:+.3f} [{f['interval'][0]:+.3f}, "
            f"{f['interval'][1]:+.3f}] |"
        )
    for name, rows in res["folds"].items():
        s = res["summary"][name]
        lines += [
            "",
            f"## Leave one conversation out, chosen by {name.split(',')[0]} recall@10, "
            + (name.split(", ")[1] if ", " in name else f"tolerance {res['tolerance']}")
            + ("" if ", " not in name else " (a looser tolerance, shown only)"),
            "",
            "| held out | cap chosen on the others | held-out R@10 | today's window | difference |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['held_out']} | {'all' if r['chosen_cap'] is None else r['chosen_cap']} | "
            f"{r['held_out_r10']:.3f} | {r['today_r10']:.3f} | {r['diff']:+.3f} |"
            for r in rows
        ]
        lines += [
            "",
            f"Pooled over the held-out questions: {s['held_out_r10']:.3f} against "
            f"{s['today_r10']:.3f}, difference {s['diff']:+.3f} (paired bootstrap 95% "
            f"[{s['interval'][0]:+.3f}, {s['interval'][1]:+.3f}]); spread of the per-fold "
            f"differences (SD) {s['fold_diff_sd']:.3f}; spread of today's recall across the "
            f"folds (SD) {s['today_fold_sd']:.3f}.",
        ]
    return lines

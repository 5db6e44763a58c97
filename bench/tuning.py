"""Leave-one-conversation-out cross-validation of retrieval choices on LoCoMo (dev).

Every signal a fusion could use is computed once per (question, turn of its conversation):
keyword BM25 from an FTS5 table built exactly like the store's (same tokenizer, the same query
terms), and cosine similarities of cached vectors (``bench/.cache``). A *config* turns them
into a ranking with the library's own fusion code (``core/store/search/_fusion.py``). A
*family* is a set of configs (a grid over its free parameters); cross-validation fits the
family on four conversations (the config with the best mean recall@10 over their questions)
and measures it on the fifth. Run: ``python -m bench tune`` (see bench/README.md).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.locomo_data import Conversation, questions, turns
from bench.locomo_texts import shapes
from oracleagentmemory.core.store._dates import in_any, query_periods
from oracleagentmemory.core.store.search._keyword import query_terms

KS = (5, 10, 25)


def _keyword_matrix(
    texts_by_conv: Sequence[list[str]], queries_by_conv: Sequence[list[str]]
) -> list[NDArray[np.float32]]:
    """BM25 (-bm25() of FTS5, higher = better) of every query against every turn of its own
    conversation; one FTS5 table over all conversations, as in one store."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(chunk_text, scope,"
        " tokenize='porter unicode61 remove_diacritics 2')"
    )
    offsets = []
    rowid = 0
    for c, texts in enumerate(texts_by_conv):
        offsets.append(rowid)
        db.executemany(
            "INSERT INTO f (rowid, chunk_text, scope) VALUES (?, ?, ?)",
            [(rowid + i, t, f"c{c}") for i, t in enumerate(texts)],
        )
        rowid += len(texts)
    out = []
    for c, (texts, qs) in enumerate(zip(texts_by_conv, queries_by_conv, strict=True)):
        m = np.zeros((len(qs), len(texts)), dtype=np.float32)
        for qi, q in enumerate(qs):
            terms = query_terms(q)
            if not terms:
                continue
            words = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
            rows = db.execute(
                "SELECT rowid, -bm25(f, 1.0, 0.0) FROM f WHERE f MATCH ?",
                [f'chunk_text : ({words}) AND scope : "c{c}"'],
            ).fetchall()
            for rid, score in rows:
                m[qi, rid - offsets[c]] = max(float(score), 1e-9)
        out.append(m)
    return out


def load(
    data: Path,
    embedders: dict[str, Any],
    keyword_shapes: Sequence[str] = ("turn", "prev", "next", "both", "prev2", "prev|prev2"),
    dense: Sequence[tuple[str, str]] = (),
    date_slacks: Sequence[int] = (0, 7, 31),
    conversations: int | None = None,
) -> list[Conversation]:
    """Conversations with signals ``kw:<shape>`` and ``<model>:<shape>`` (dense cosines).

    ``embedders`` maps a short model name to an (ideally disk-cached) embedder; ``dense`` lists
    the (model, shape) pairs to compute.
    """
    with open(data) as f:
        convs = json.load(f)[:conversations]
    prepared = []
    for conv in convs:
        ts = turns(conv)
        qs, _ = questions(conv, {t["dia_id"] for t in ts})
        prepared.append((conv["sample_id"], ts, qs, shapes(ts)))
    out = [
        Conversation(
            sid,
            [t["dia_id"] for t in ts],
            qs,
            [np.array([[t["dia_id"] for t in ts].index(g) for g in q["gold"]]) for q in qs],
            {},
        )
        for sid, ts, qs, _ in prepared
    ]
    for shape in keyword_shapes:
        # "a|b": both texts indexed as keyword rows of one turn (one FTS5 table, so shared
        # statistics), the turn scored by its better row, as a record's best chunk is.
        parts = shape.split("|")
        mats = _keyword_matrix(
            [[x for p in parts for x in sh[p]] for _, _, _, sh in prepared],
            [[q["question"] for q in qs] for _, _, qs, _ in prepared],
        )
        for conv, m in zip(out, mats, strict=True):
            n = len(conv.dia_ids)
            conv.signals[f"kw:{shape}"] = np.max(
                [m[:, i * n : (i + 1) * n] for i in range(len(parts))], axis=0
            )
    for slack in date_slacks:
        for conv, (_, ts, qs, _) in zip(out, prepared, strict=True):
            stamps = [
                datetime.fromisoformat(t["timestamp"]) if t["timestamp"] else None for t in ts
            ]
            m = np.zeros((len(qs), len(ts)), dtype=np.float32)
            for qi, q in enumerate(qs):
                periods = query_periods(q["question"])
                if periods:
                    m[qi] = [in_any(s, periods, slack) for s in stamps]
            conv.signals[f"date:{slack}"] = m
    for model, shape in dense:
        emb = embedders[model]
        for conv, (_, _, qs, sh) in zip(out, prepared, strict=True):
            docs = emb.embed(sh[shape], is_query=False)
            qv = emb.embed([q["question"] for q in qs], is_query=True)
            conv.signals[f"{model}:{shape}"] = (qv @ docs.T).astype(np.float32)
        if hasattr(emb, "save"):
            emb.save()
    return out


# ---------------------------------------------------------------------------- rankings


Ranker = Callable[[Conversation], NDArray[np.int64]]
"""Returns, per question, the top-25 turn indices (questions x 25)."""


def recall(conv: Conversation, ranked: NDArray[np.int64], k: int = 10) -> NDArray[np.float64]:
    """Per-question recall@k (the dataset's metric)."""
    return np.array([np.isin(g, ranked[i, :k]).sum() / len(g) for i, g in enumerate(conv.gold)])


def cross_validate(
    convs: list[Conversation], family: Sequence[Any], rank: Callable[[Conversation, Any], Any]
) -> dict[str, Any]:
    """Leave one conversation out: fit on four (best mean R@10 over their questions), measure
    on the fifth. Returns per-fold chosen config and per-question recalls."""
    per_conv = [
        [recall(c, rank(c, cfg)) for cfg in family] for c in convs
    ]  # conv -> cfg -> per-question R@10
    folds = []
    held_r10: list[NDArray[np.float64]] = []
    for i, conv in enumerate(convs):
        train = [j for j in range(len(convs)) if j != i]
        means = [np.concatenate([per_conv[j][f] for j in train]).mean() for f in range(len(family))]
        best = int(np.argmax(means))
        ranked = rank(conv, family[best])
        folds.append(
            {
                "conversation": conv.sample_id,
                "config": family[best],
                "train_r10": float(means[best]),
                "test": {k: float(recall(conv, ranked, k).mean()) for k in KS},
            }
        )
        held_r10.append(per_conv[i][best])
    allq = np.concatenate(held_r10)
    return {
        "folds": folds,
        "per_question_r10": allq,
        "mean_r10": float(allq.mean()),
        "fold_mean_r10": float(np.mean([f["test"][10] for f in folds])),
        "fold_std_r10": float(np.std([f["test"][10] for f in folds])),
    }


def paired_bootstrap(
    a: NDArray[np.float64], b: NDArray[np.float64], n: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of b - a and its 95% percentile interval over resampled questions."""
    rng = np.random.default_rng(seed)
    d = b - a
    idx = rng.integers(0, len(d), size=(n, len(d)))
    means = d[idx].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def category_intervals(
    convs: list[Conversation], per_question: NDArray[np.float64], n: int = 2000, seed: int = 0
) -> dict[int, list[float]]:
    """Per question category: [mean, 2.5th, 97.5th percentile] of the pooled held-out
    per-question values (``cross_validate``'s order: conversation by conversation),
    resampling that category's questions."""
    cats = np.concatenate([[q["category"] for q in c.questions] for c in convs])
    rng = np.random.default_rng(seed)
    out: dict[int, list[float]] = {}
    for cat in sorted(set(cats.tolist())):
        v = per_question[cats == cat]
        means = v[rng.integers(0, len(v), size=(n, len(v)))].mean(axis=1)
        out[int(cat)] = [float(v.mean()), *map(float, np.percentile(means, [2.5, 97.5]))]
    return out


def category_deltas(
    convs: list[Conversation], a: NDArray[np.float64], b: NDArray[np.float64]
) -> dict[int, list[float]]:
    """Per question category: :func:`paired_bootstrap` of ``b - a`` over its questions."""
    cats = np.concatenate([[q["category"] for q in c.questions] for c in convs])
    return {
        int(cat): list(paired_bootstrap(a[cats == cat], b[cats == cat]))
        for cat in sorted(set(cats.tolist()))
    }


def weight_grid(names: Sequence[str], step: float = 0.1) -> list[dict[str, float]]:
    """All weightings of ``names`` on the simplex with the given step, each weight > 0."""
    n = round(1 / step)
    out = []
    for parts in itertools.product(range(1, n), repeat=len(names) - 1):
        if sum(parts) < n:
            w = [p * step for p in parts] + [(n - sum(parts)) * step]
            out.append({nm: round(x, 6) for nm, x in zip(names, w, strict=True)})
    return out


# ---------------------------------------------------------------------------- the study


def _by_category(conv: Conversation, ranked: NDArray[np.int64]) -> dict[str, Any]:
    cats = np.array([q["category"] for q in conv.questions])
    out: dict[str, Any] = {"overall": {}, "by_cat": {}}
    for k in KS:
        r = recall(conv, ranked, k)
        out["overall"][k] = float(r.mean())
        out["by_cat"][k] = {int(c): float(r[cats == c].mean()) for c in sorted(set(cats.tolist()))}
    out["cat_counts"] = {int(c): int((cats == c).sum()) for c in sorted(set(cats.tolist()))}
    out["questions"] = len(cats)
    return out


def speaker_signal(convs: list[Conversation], data: Path) -> None:
    """``spk:0``: 1 where the turn's speaker is named in the question (LoCoMo speakers)."""
    with open(data) as f:
        raw = {c["sample_id"]: c for c in json.load(f)}
    for conv in convs:
        ts = turns(raw[conv.sample_id])
        m = np.zeros((len(conv.questions), len(ts)), dtype=np.float32)
        for qi, q in enumerate(conv.questions):
            text = q["question"].lower()
            m[qi] = [t["speaker"].lower() in text for t in ts]
        conv.signals["spk:0"] = m


LIBRARY_KEYWORD = "kw:prev|prev2"
"""The keyword signal of the library's message rows (see
core/_client/messages/_message_batch.py): each message's window row and its keyword-only row
of the two previous messages + the message, the best of the two counting (shared statistics)."""


def study(
    convs: list[Conversation], shipped: dict[str, Any], ablation: bool = True
) -> dict[str, Any]:
    """The ablation (each change cross-validated against the configuration kept so far; skipped
    when ``ablation`` is False) and the per-fold figures of VECTOR, KEYWORD, HYBRID and
    HYBRID+rerank as cross-validated."""
    from bench.tuning_rank import Config, rank

    W = [round(0.1 * i, 1) for i in range(1, 10)]
    steps: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}

    def step(name: str, family: list[Config], ref: str | None, note: str = "") -> dict[str, Any]:
        r = cross_validate(convs, family, rank)
        row: dict[str, Any] = {
            "change": name,
            "note": note,
            "configs": len(family),
            "cv_r10": r["mean_r10"],
            "fold_r10": [f["test"][10] for f in r["folds"]],
            "chosen": [f["config"].describe() for f in r["folds"]],
        }
        if ref is not None:
            base = results[ref]
            d, lo, hi = paired_bootstrap(base["per_question_r10"], r["per_question_r10"])
            row.update(
                reference=ref,
                delta=d,
                ci=[lo, hi],
                fold_delta=[
                    a["test"][10] - b["test"][10]
                    for a, b in zip(r["folds"], base["folds"], strict=True)
                ],
            )
            row["kept"] = bool(lo > 0)
            row["cat_delta"] = category_deltas(
                convs, base["per_question_r10"], r["per_question_r10"]
            )
        results[name] = r
        steps.append(row)
        return r

    if ablation:
        old = "before: MiniLM turn vectors 0.4 + keyword windows 0.6"
        step(old, [Config((("minilm:turn", 0.4), ("kw:prev", 0.6)))], None, "fixed")
        step("keyword alone (prev + turn)", [Config((("kw:prev", 1.0),))], old)
        step("vector alone (MiniLM, turn)", [Config((("minilm:turn", 1.0),))], old)
        step(
            "fusion weight fitted",
            [Config((("minilm:turn", w), ("kw:prev", 1 - w))) for w in W],
            old,
        )
        step(
            "rank fusion (RRF): weight and k fitted",
            [
                Config((("minilm:turn", w), ("kw:prev", 1 - w)), kind="rank", rrf_k=k)
                for w in W
                for k in (5, 10, 30, 60)
            ],
            old,
        )
        step(
            "candidate depth per branch fitted (25-200)",
            [
                Config((("minilm:turn", w), ("kw:prev", 1 - w)), depth=d)
                for w in W
                for d in (25, 50, 100, 200)
            ],
            old,
        )
        step(
            "vector of the window (MiniLM), weight fitted",
            [Config((("minilm:prev", w), ("kw:prev", 1 - w))) for w in W],
            old,
        )
        for shape, label in (
            ("turn", "turn alone"),
            ("next", "turn + next"),
            ("both", "prev + turn + next"),
        ):
            step(
                f"keyword text: {label}, weight fitted",
                [Config((("minilm:turn", w), (f"kw:{shape}", 1 - w))) for w in W],
                old,
            )
        e5 = "e5-small window vectors as the vector branch, weight fitted"
        step(e5, [Config((("e5:prev", w), ("kw:prev", 1 - w))) for w in W], old)
        step(
            "e5 as a second-stage re-scorer of the MiniLM hybrid (second vector per row)",
            [
                Config(
                    (("minilm:turn", w), ("kw:prev", 1 - w)),
                    rescore_signal="e5:prev",
                    rescore_weight=a,
                    rescore_depth=m,
                )
                for w in (0.2, 0.3, 0.4)
                for a in (0.3, 0.5, 0.7)
                for m in (25, 50, 100)
            ],
            e5,
            "alternative to the row above",
        )
        date = "+ date preference: boost and slack fitted"
        step(
            date,
            [
                Config((("e5:prev", w), ("kw:prev", 1 - w)), date_weight=b, date_slack=s)
                for w in W
                for b in (0.0, 0.1, 0.2, 0.3)
                for s in (0, 7, 31)
            ],
            e5,
        )
        if "spk:0" in convs[0].signals:
            step(
                "+ speaker-name preference, boost fitted",
                [
                    Config((("e5:prev", w), ("kw:prev", 1 - w)), date_weight=b, date_slack=-1)
                    for w in (0.2, 0.3, 0.4)
                    for b in (0.0, 0.05, 0.1, 0.2)
                ],
                e5,
                "LoCoMo speaker names; compared with the row without dates",
            )
        step(
            "+ keyword prev + turn + next as a third branch, weights fitted",
            [
                Config(tuple(g.items()), date_weight=0.3, date_slack=7)
                for g in weight_grid(["e5:prev", "kw:prev", "kw:both"], 0.1)
            ],
            date,
        )
        step(
            "+ keyword of the two previous turns + turn as a third branch, weights fitted",
            [
                Config(tuple(g.items()), date_weight=0.3, date_slack=7)
                for g in weight_grid(["e5:prev", "kw:prev", "kw:prev2"], 0.1)
            ],
            date,
            "not in the library: it needs a weight of its own",
        )
        step(
            "+ that window as a second keyword row of each message (its best row counts)",
            [
                Config((("e5:prev", w), ("kw:prev|prev2", 1 - w)), date_weight=0.3, date_slack=7)
                for w in W
            ],
            date,
            "one keyword branch, no new weight; what the library writes (a keyword-only row"
            " per message)",
        )
    if ablation:
        span = "+ keyword span (BM25 spreads below it normalised by it) fitted"
        step(
            span,
            [
                Config(
                    (("e5:prev", 0.3), ("kw:prev", 0.7)),
                    date_weight=0.3,
                    date_slack=7,
                    keyword_span=sp,
                )
                for sp in (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0)
            ],
            date,
            "kept only if no loss: it fixes a small store's HYBRID ranking"
            " (docs/retrieval-quality.md)",
        )
    hybrid = Config(
        (("e5:prev", shipped["vector_weight"]), (LIBRARY_KEYWORD, 1 - shipped["vector_weight"])),
        date_weight=shipped["date_boost"],
        date_slack=shipped["date_slack"],
        keyword_span=shipped.get("keyword_span", 0.0),
        follow_weight=shipped.get("follow_up_weight", 0.0),
    )
    shipped_name = "shipped HYBRID defaults (fixed)"
    if ablation:
        before = "HYBRID before follow-ups (0.3 / 0.7, date 0.3, 7 days, span 5; fixed)"
        step(
            before,
            [
                Config(
                    (("e5:prev", 0.3), (LIBRARY_KEYWORD, 0.7)),
                    date_weight=0.3,
                    date_slack=7,
                    keyword_span=hybrid.keyword_span,
                )
            ],
            date,
        )
        step(
            "+ follow-ups: a turn's vector similarity blended with its next two turns' best"
            " (the two turns before a hit candidates too), weights fitted",
            [
                Config(
                    (("e5:prev", w), (LIBRARY_KEYWORD, 1 - w)),
                    date_weight=0.3,
                    date_slack=7,
                    keyword_span=hybrid.keyword_span,
                    follow_weight=g,
                )
                for w in (0.3, 0.4, 0.5, 0.6)
                for g in (0.5, 0.7, 1.0, 1.5)
            ],
            before,
            "what the library does (core/store/search/_follow_ups.py)",
        )
        step(shipped_name, [hybrid], before)
    if ablation:
        rerank_name = "+ reranker: MiniLM bi-encoder blended with the rank, weight and pool fitted"
        step(
            rerank_name,
            [
                Config(
                    hybrid.branches,
                    date_weight=hybrid.date_weight,
                    date_slack=hybrid.date_slack,
                    keyword_span=hybrid.keyword_span,
                    follow_weight=hybrid.follow_weight,
                    rescore_signal="minilm:turn",
                    rescore_weight=a,
                    rescore_depth=m,
                    rescore_by_rank=True,
                )
                for a in (0.1, 0.2, 0.3, 0.5)
                for m in (20, 50)
            ],
            shipped_name,
            "optional (search_config.reranker)",
        )
        step(
            "+ reranker used alone (its order only), pool fitted",
            [
                Config(
                    hybrid.branches,
                    date_weight=hybrid.date_weight,
                    date_slack=hybrid.date_slack,
                    keyword_span=hybrid.keyword_span,
                    follow_weight=hybrid.follow_weight,
                    rescore_signal="minilm:turn",
                    rescore_weight=1.0,
                    rescore_depth=m,
                )
                for m in (20, 50)
            ],
            shipped_name,
            "what a cross-encoder-style reorder does with a bi-encoder",
        )

    # Per-fold figures of each strategy as cross-validated (params fitted on the other four).
    families = {
        "VECTOR (e5 window vectors)": [Config((("e5:prev", 1.0),))],
        "KEYWORD": [Config(((LIBRARY_KEYWORD, 1.0),))],
        "HYBRID": [
            Config(
                (("e5:prev", w), (LIBRARY_KEYWORD, 1 - w)),
                date_weight=b,
                date_slack=s,
                keyword_span=hybrid.keyword_span,
                follow_weight=hybrid.follow_weight,
            )
            for w in (0.3, 0.4, 0.5, 0.6)
            for b in (0.0, 0.15, 0.3)
            for s in (0, 7)
        ],
    }
    strategies: dict[str, Any] = {}
    intervals: dict[str, dict[int, list[float]]] = {}
    for name, family in families.items():
        r = cross_validate(convs, family, rank)
        intervals[name] = category_intervals(convs, r["per_question_r10"])
        strategies[name] = [
            {
                "conversation": f["conversation"],
                "config": f["config"].describe(),
                **_by_category(c, rank(c, f["config"])),
            }
            for f, c in zip(r["folds"], convs, strict=True)
        ]
    rerank_family = [
        Config(
            hybrid.branches,
            date_weight=hybrid.date_weight,
            date_slack=hybrid.date_slack,
            rescore_signal="minilm:turn",
            rescore_weight=a,
            rescore_depth=m,
            rescore_by_rank=True,
            keyword_span=hybrid.keyword_span,
            follow_weight=hybrid.follow_weight,
        )
        for a in (0.1, 0.2, 0.3, 0.5)
        for m in (20, 50)
    ]
    rr = cross_validate(convs, rerank_family, rank)
    intervals["HYBRID+rerank"] = category_intervals(convs, rr["per_question_r10"])
    strategies["HYBRID+rerank"] = [
        {
            "conversation": f["conversation"],
            "config": f["config"].describe(),
            **_by_category(c, rank(c, f["config"])),
        }
        for f, c in zip(rr["folds"], convs, strict=True)
    ]
    # The fit on all conversations (what a default should be), to compare with the shipped one.

    def best(family: list[Config]) -> str:
        scores = [np.concatenate([recall(c, rank(c, cfg)) for c in convs]).mean() for cfg in family]
        return family[int(np.argmax(scores))].describe()

    full = {"HYBRID": best(families["HYBRID"]), "HYBRID+rerank": best(rerank_family)}
    return {
        "ablation": steps,
        "strategies": strategies,
        "category_r10_ci": intervals,
        "fit_on_all": full,
    }

"""The LoCoMo sections of the benchmark report (``bench/report.py``): recall, cost and the
cross-validated tuning tables."""

from __future__ import annotations

from typing import Any

from bench.common import fmt
from bench.report_common import CATS, _table


def _locomo(lo: dict[str, Any]) -> list[str]:
    parts = ["## LoCoMo retrieval quality (thread.search, max_results=25)", ""]
    subset = len(lo["conversations"]) < lo["total_conversations"]
    parts.append(
        f"Data: `{lo['data']}`; conversations: {', '.join(lo['conversations'])}"
        + (
            f" (subset: {len(lo['conversations'])} of {lo['total_conversations']})"
            if subset
            else ""
        )
        + f"; {lo['turns']:,} turns; {lo['questions_total'] - lo['skipped']} questions "
        f"evaluated, {lo['skipped']} skipped (evidence empty or naming no existing turn). "
        "One thread per conversation, one message per turn "
        '("speaker: text [shares caption]", session date as timestamp, dia_id in metadata). '
        "Recall@k = |gold ∩ top-k dia_ids| / |gold|, averaged. Embedder: "
        f"{lo.get('embedder', {}).get('model', '?')} (texts embedded "
        f"{lo.get('embedder', {}).get('texts_embedded', '?')}, cache hits "
        f"{lo.get('embedder', {}).get('cache_hits', '?')}). BM25 baseline: k1=1.5, b=0.75, "
        "lower-cased \\w+ tokens, no library involved."
    )
    parts.append("")
    rows = []
    for name, s in lo["strategies"].items():
        t = lo.get("timings", {}).get(name, {})
        rows.append(
            [name]
            + [s["overall"][k] for k in ("5", "10", "25")]
            + [s["no_cat5"][k] for k in ("5", "10", "25")]
            + [t.get("ingest_s"), t.get("ms_per_question")]
        )
    parts.append(
        _table(
            [
                "strategy",
                "R@5",
                "R@10",
                "R@25",
                "R@5 w/o cat 5",
                "R@10 w/o cat 5",
                "R@25 w/o cat 5",
                "ingest s",
                "ms/question",
            ],
            rows,
        )
    )
    parts.append("")
    sessions = [
        [name, s["session_hit"]["5"], s["session_hit"]["10"]]
        for name, s in lo["strategies"].items()
        if "session_hit" in s
    ]
    if sessions:
        parts += [
            "Session level (the peers' headline metric): the share of questions with an evidence"
            " session among the first k distinct sessions of the ranked turns. Turn-level recall"
            " above is the figure this project targets.",
            "",
            _table(["strategy", "session hit@5", "session hit@10"], sessions),
            "",
        ]
    first = next(iter(lo["strategies"].values()))
    counts = first.get("cat_counts", {})
    header = ["strategy"] + [
        f"{CATS[c]} ({counts.get(c, '?')}) R@{k}" for c in CATS for k in ("10",)
    ]
    parts += ["Per category, recall@10 (questions in brackets):", ""]
    parts.append(
        _table(
            header,
            [[name] + [s["by_cat"][c]["10"] for c in CATS] for name, s in lo["strategies"].items()],
        )
    )
    parts.append("")
    parts += ["Per category, recall@5 / @25:", ""]
    parts.append(
        _table(
            ["strategy"] + [f"{CATS[c]} R@5 / R@25" for c in CATS],
            [
                [name] + [f"{fmt(s['by_cat'][c]['5'])} / {fmt(s['by_cat'][c]['25'])}" for c in CATS]
                for name, s in lo["strategies"].items()
            ],
        )
    )
    parts.append("")
    parts += _locomo_cost(lo)
    parts += _locomo_cv(lo)
    return parts


def _locomo_cost(lo: dict[str, Any]) -> list[str]:
    """Recall@10 against the tokens the results cost: reranking on every question, LLM
    pruning on a spread subset."""
    timings = lo.get("timings", {})
    parts = [
        "### Reranking and pruning: recall@10 and tokens returned",
        "",
        "Tokens: the estimate the budgets use (characters / 3.5) of the results' rendered "
        "`formatted_content`, per question.",
        "",
    ]
    rows = [
        [name, lo["strategies"][name]["overall"]["10"], timings[name].get("tokens_at_10")]
        for name in ("HYBRID", "HYBRID+rerank")
        if name in lo["strategies"] and "tokens_at_10" in timings.get(name, {})
    ]
    if rows:
        parts.append("All questions, the first 10 results of `thread.search(q, max_results=25)`:")
        parts.append("")
        parts.append(_table(["search", "R@10", "tokens of 10 results"], rows))
        parts.append("")
    pr = lo.get("pruning")
    if pr and "skipped" in pr:
        parts += [f"Pruning rows skipped: {pr['skipped']}.", ""]
    elif pr:
        parts.append(
            f"LLM pruning, {pr['questions']} questions spread over the conversations, "
            f"`thread.search(q, max_results=10)`, pruner {pr['pruner']} "
            f"({pr['llm_calls']} calls, p50 {_r(pr.get('s_per_call_p50'))} s):"
        )
        parts.append("")
        parts.append(
            _table(
                ["search", "R@10", "tokens returned", "results returned", "s/question"],
                [
                    [n, r["R@10"], r["tokens"], r["results"], r["s_per_question"]]
                    for n, r in pr["rows"].items()
                ],
            )
        )
        parts.append("")
    return parts


def _r(x: Any) -> str:
    return "-" if x is None or x != x else f"{x:.3f}"


def _locomo_cv(lo: dict[str, Any]) -> list[str]:
    """Per-conversation figures through the library, the cross-validated strategies, the
    ablation (bench/tuning.py)."""
    parts: list[str] = []
    convs = lo["conversations"]
    rows = []
    for name, s in lo["strategies"].items():
        by = s.get("by_conv") or {}
        rows.append(
            [name] + [_r(by.get(c, {}).get("10")) for c in convs] + [_r(s["overall"]["10"])]
        )
    parts += [
        "Through the library with the shipped defaults, recall@10 per conversation:",
        "",
        _table(["strategy", *convs, "all"], rows),
        "",
    ]
    cost = lo.get("reranker_cost")
    if cost:
        parts += [
            f"Reranking stage alone ({lo.get('rerank', {}).get('reranker', '?')}, "
            f"{cost['pool']} candidates, {cost['questions']} questions): p50 "
            f"{fmt(cost['cold_p50_ms'])} ms with no document cached (every candidate embedded), "
            f"{fmt(cost['warm_p50_ms'])} ms when the candidates' vectors are cached (the query "
            "is embedded either way).",
            "",
        ]
    cv = lo.get("cv")
    if not cv:
        return parts
    parts += [
        "### Cross-validated (leave one conversation out)",
        "",
        "Each fold fits the strategy's free parameters on the other conversations (best mean "
        "recall@10 over their questions) and measures the held-out one "
        f"(`bench/tuning.py`; {fmt(cv.get('seconds'))} s).",
        "",
    ]
    strat = cv["strategies"]
    rows = []
    for name, folds in strat.items():
        r10 = [f["overall"]["10"] for f in folds]
        n = [f["questions"] for f in folds]
        mean = {
            k: sum(f["overall"][k] * q for f, q in zip(folds, n, strict=True)) / sum(n)
            for k in ("5", "10", "25")
        }
        sd = (sum((x - sum(r10) / len(r10)) ** 2 for x in r10) / len(r10)) ** 0.5
        rows.append(
            [name] + [_r(x) for x in r10] + [_r(mean["5"]), _r(mean["10"]), _r(mean["25"]), _r(sd)]
        )
    names = [f["conversation"] for f in next(iter(strat.values()))]
    parts += [
        _table(
            ["strategy", *[f"{c} R@10" for c in names], "R@5", "R@10", "R@25", "sd of fold R@10"],
            rows,
        ),
        "",
    ]
    if "HYBRID" in strat:
        worst = []
        for i in range(len(names)):
            h = strat["HYBRID"][i]["overall"]["10"]
            best_single = max(
                strat[n][i]["overall"]["10"] for n in strat if n not in ("HYBRID", "HYBRID+rerank")
            )
            worst.append(h - best_single)
        parts += [
            "HYBRID minus its best single branch, per fold: "
            + ", ".join(f"{c} {d:+.3f}" for c, d in zip(names, worst, strict=True))
            + (" (never below)." if min(worst) >= 0 else " (below in some fold)."),
            "",
        ]
    # Per category, question-weighted over the folds.
    rows = []
    for name, folds in strat.items():
        cells = []
        for c in CATS:
            vals = []
            for k in ("5", "10", "25"):
                num = sum(f["by_cat"][k].get(c, 0.0) * f["cat_counts"].get(c, 0) for f in folds)
                den = sum(f["cat_counts"].get(c, 0) for f in folds)
                vals.append(_r(num / den) if den else "-")
            cells.append(" / ".join(vals))
        rows.append([name, *cells])
    parts += [
        "Per category (cross-validated), recall@5 / @10 / @25:",
        "",
        _table(["strategy", *[CATS[c] for c in CATS]], rows),
        "",
    ]
    ci = cv.get("category_r10_ci") or {}
    if ci:
        parts += [
            "Per category (cross-validated), recall@10 and its 95% interval over the category's "
            "questions (2,000 bootstrap resamples):",
            "",
            _table(
                ["strategy", *[CATS[c] for c in CATS]],
                [[name, *[_interval(_by_cat_key(v, c)) for c in CATS]] for name, v in ci.items()],
            ),
            "",
        ]
    parts += [
        "Chosen per fold: "
        + "; ".join(
            f"{name}: " + " | ".join(f["config"] for f in folds)
            for name, folds in strat.items()
            if name in ("HYBRID", "HYBRID+rerank")
        )
        + ". Fit on all conversations: "
        + "; ".join(f"{k}: {v}" for k, v in cv.get("fit_on_all", {}).items())
        + ".",
        "",
    ]
    if cv.get("ablation"):
        rows = []
        for a in cv["ablation"]:
            ci = a.get("ci")
            rows.append(
                [
                    a["change"] + (f" ({a['note']})" if a.get("note") else ""),
                    a["configs"],
                    _r(a["cv_r10"]),
                    "-" if "delta" not in a else f"{a['delta']:+.3f}",
                    "-" if not ci else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]",
                    " ".join(f"{d:+.3f}" for d in a.get("fold_delta", [])) or "-",
                    a.get("reference", "-"),
                    {True: "yes", False: "no", None: "-"}[a.get("kept")],
                ]
            )
        parts += [
            "### Ablation (cross-validated recall@10; each change against its reference)",
            "",
            "Δ = paired difference over the held-out questions, 95% bootstrap interval (2,000 "
            "resamples); per-fold Δ in the conversation order above; kept = the interval "
            "excludes 0.",
            "",
            _table(
                [
                    "change",
                    "configs",
                    "CV R@10",
                    "Δ",
                    "95% CI",
                    "per-fold Δ",
                    "reference",
                    "helps",
                ],
                rows,
            ),
            "",
        ]
        helped = [a for a in cv["ablation"] if a.get("kept") and a.get("cat_delta")]
        if helped:
            parts += [
                "Per category Δ of the changes that help (recall@10 against the same reference, "
                "paired 95% interval over the category's questions):",
                "",
                _table(
                    ["change", *[CATS[c] for c in CATS]],
                    [
                        [
                            a["change"],
                            *[_interval(_by_cat_key(a["cat_delta"], c), True) for c in CATS],
                        ]
                        for a in helped
                    ],
                ),
                "",
            ]
    return parts


def _by_cat_key(values: dict[Any, Any], cat: str) -> Any:
    """A per-category entry, keyed by int in memory and by str once read back from JSON."""
    return values.get(cat, values.get(int(cat)))


def _interval(v: list[float] | None, signed: bool = False) -> str:
    """``value [low, high]``, or "-"."""
    if not v:
        return "-"
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(v[0])} [{f.format(v[1])}, {f.format(v[2])}]"

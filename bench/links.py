"""``python -m bench links``: accuracy of automatic links on 50 hand-written pairs.

``bench/link_pairs.json`` holds 50 pairs (an older and a newer memory) of five kinds, ten
each: the newer one supersedes, contradicts, refines or duplicates the older, or is
unrelated. Each pair runs through the library as a user would: the older memory is added,
then the newer one with ``add_memory(autonomous_linking=True)``; the link the library stored
between the two (or none) is the prediction. Two settings:

- **isolated**: every pair belongs to its own user, so the older memory is the only
  candidate: this measures the model's decision.
- **shared**: the 50 older memories belong to one user; each newer memory is added, judged,
  and removed again (its links deleted, statuses restored), so every pair sees the same 49
  distractors: this also measures candidate search and links made to the wrong memory.

Reported: accuracy over the five labels, per gold label, the confusion matrix, how often the
older memory's status is right (INVALID after supersedes and duplicates only), links to
other memories (shared), LLM calls and seconds per call.

The LLM: ``--llm oracle`` is the test double (``tests/_llm_double.ScriptedLlm``) answering
each link prompt with the gold relation for the pair's older memory and "none" for every
other candidate, so it checks the pipeline (search, prompt, parsing, writes) and shows the
ceiling candidate search sets; ``--llm local`` (default) the offline ``LocalLlm``;
``--api-base URL --model NAME`` a served model.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import machine

PAIRS = Path(__file__).resolve().parent / "link_pairs.json"
RESULTS = Path(__file__).resolve().parent / "results"
LABELS = ("supersedes", "contradicts", "refines", "duplicates", "none")


def load_pairs(path: Path = PAIRS) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


class TimedLlm:
    """Wraps an ILlm: counts calls and their seconds."""

    def __init__(self, inner: Any) -> None:
        from oracleagentmemory.apis.llms.llm import ILlm

        assert isinstance(inner, ILlm)
        self.inner = inner
        self.seconds: list[float] = []

    def generate(self, prompt: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.generate(prompt, **kwargs)
        finally:
            self.seconds.append(time.perf_counter() - t0)


def _as_illm(timed: TimedLlm) -> Any:
    from oracleagentmemory.apis.llms.llm import ILlm

    class _Wrapped(ILlm):
        def generate(self, prompt: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return timed.generate(prompt, **kwargs)

    return _Wrapped()


def oracle_llm(pairs: list[dict[str, Any]]) -> Any:
    """The test double answering every link prompt with the gold relation."""
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from tests._fake_model import link_candidates
    from tests._llm_double import ScriptedLlm

    gold = {p["new"]: (p["old"], p["relation"]) for p in pairs}

    def respond(call: Any) -> Any:
        new, existing = link_candidates(call.last_user_text)
        old, relation = gold.get(new, ("", "none"))
        return {key: relation if text == old else "none" for key, text in existing.items()}

    return ScriptedLlm(respond=respond)


def build_llm(args: Any, max_tokens: int = 128) -> tuple[Any, str]:
    """The model to measure (None for the oracle, built per setting) and its label."""
    if args.llm == "oracle":
        return None, "oracle (the test double answering with the gold relation)"
    if args.api_base or args.model:
        if not (args.api_base and args.model):
            raise SystemExit("--api-base and --model go together")
        from oracleagentmemory.core.llms import Llm

        kwargs: dict[str, Any] = {"model": args.model, "api_base": args.api_base}
        if args.api_key:
            kwargs["api_key"] = args.api_key
        return Llm(**kwargs), f"{args.model} at {args.api_base}"
    try:
        from oracleagentmemory.core.llms.local import DEFAULT_MODEL, LocalLlm
    except ImportError:
        raise SystemExit("the offline LLM is not installed (make demo-llm)") from None
    name = args.local_model or DEFAULT_MODEL
    return LocalLlm(name, max_tokens=max_tokens), f"LocalLlm ({name}, Q4_K_M, CPU)"


def _relation_between(store: Any, new_id: str, old_id: str) -> str:
    for relation in store.list_relations(source_record_id=new_id):
        if relation.target_record_id == old_id:
            return str(relation.relation_type)
    return "none"


def run_setting(
    setting: str, pairs: list[dict[str, Any]], llm: Any, embedder: Any, dates: tuple[str, str]
) -> dict[str, Any]:
    from oracleagentmemory.apis.records import RecordStatus
    from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory

    old_date, new_date = dates
    folder = Path(tempfile.mkdtemp(prefix=f"oam-links-{setting}-"))
    client = OracleAgentMemory(
        connection=str(folder / "links.db"),
        embedder=embedder,
        llm=llm,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    store = client.store
    rows = []
    try:
        for p in pairs:
            user = p["id"] if setting == "isolated" else "shared"
            client.add_memory(
                p["old"], user_id=user, memory_id=f"old-{p['id']}", timestamp=old_date
            )
        for p in pairs:
            user = p["id"] if setting == "isolated" else "shared"
            old_id, new_id = f"old-{p['id']}", f"new-{p['id']}"
            client.add_memory(
                p["new"],
                user_id=user,
                memory_id=new_id,
                timestamp=new_date,
                autonomous_linking=True,
            )
            predicted = _relation_between(store, new_id, old_id)
            links = store.list_relations(source_record_id=new_id)
            invalid = store.get("memory", old_id).status is RecordStatus.INVALID
            others = [r.target_record_id for r in links if r.target_record_id != old_id]
            rows.append(
                {
                    "id": p["id"],
                    "gold": p["relation"],
                    "predicted": predicted,
                    "old_invalid": invalid,
                    "other_links": others,
                    "other_invalidated": [
                        t for t in others if store.get("memory", t).status is RecordStatus.INVALID
                    ],
                }
            )
            if setting == "shared":  # put the world back for the next pair
                targets = [r.target_record_id for r in links]
                store.delete("memory", new_id)  # takes its links along
                for target in targets:
                    store.update("memory", target, status=RecordStatus.VALID)
    finally:
        client.close()
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    correct = sum(r["gold"] == r["predicted"] for r in rows)
    should_invalidate = {"supersedes", "duplicates"}
    status_ok = sum(r["old_invalid"] == (r["gold"] in should_invalidate) for r in rows)
    per_label = {
        label: {
            "n": sum(r["gold"] == label for r in rows),
            "correct": sum(r["gold"] == label == r["predicted"] for r in rows),
        }
        for label in LABELS
    }
    confusion = Counter((r["gold"], r["predicted"]) for r in rows)
    return {
        "pairs": n,
        "accuracy": correct / n if n else 0.0,
        "correct": correct,
        "status_accuracy": status_ok / n if n else 0.0,
        "linked_when_related": sum(r["gold"] != "none" and r["predicted"] != "none" for r in rows),
        "linked_when_unrelated": sum(
            r["gold"] == "none" and r["predicted"] != "none" for r in rows
        ),
        "per_label": per_label,
        "confusion": {f"{g}->{p}": c for (g, p), c in sorted(confusion.items())},
        "other_links": sum(len(r["other_links"]) for r in rows),
        "other_invalidated": sum(len(r["other_invalidated"]) for r in rows),
        "rows": rows,
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"# Automatic links: {result['llm']}",
        "",
        f"{result['pairs']} hand-written pairs (`bench/link_pairs.json`), "
        "`add_memory(autonomous_linking=True)`; machine: " + result["machine"],
        "",
        "| setting | accuracy (5 labels) | old memory's status right | linked, related pairs "
        "(of 40) | linked, unrelated pairs (of 10) | links to other memories | other memories "
        "made INVALID | LLM calls | s/call p50 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for setting in ("isolated", "shared"):
        r = result.get(setting)
        if r is None:
            continue
        lines.append(
            f"| {setting} | {r['accuracy']:.2f} ({r['correct']}/{r['pairs']}) | "
            f"{r['status_accuracy']:.2f} | {r['linked_when_related']} | "
            f"{r['linked_when_unrelated']} | {r['other_links']} | {r['other_invalidated']} | "
            f"{r['llm_calls']} | {r['seconds_p50']:.1f} |"
        )
    for setting in ("isolated", "shared"):
        r = result.get(setting)
        if r is None:
            continue
        lines += ["", f"**{setting}**, per gold label (correct / 10) and confusions:", ""]
        lines.append("| gold \\ predicted | " + " | ".join(LABELS) + " |")
        lines.append("|---" * (len(LABELS) + 1) + "|")
        for gold in LABELS:
            cells = [str(r["confusion"].get(f"{gold}->{p}", 0)) for p in LABELS]
            lines.append(f"| {gold} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(args: Any) -> int:
    logging.basicConfig(level=logging.ERROR)
    data = load_pairs()
    pairs = data["pairs"][: args.pairs] if args.pairs else data["pairs"]
    from oracleagentmemory.core.embedders import default_embedder

    embedder = default_embedder()
    model, label = build_llm(args)
    result: dict[str, Any] = {
        "llm": label,
        "machine": f"{machine()['CPU']}, {machine()['cores']} cores (shared)",
        "pairs": len(pairs),
    }
    for setting in args.settings:
        inner = oracle_llm(pairs) if model is None else model
        timed = TimedLlm(inner)
        t0 = time.perf_counter()
        out = run_setting(
            setting, pairs, _as_illm(timed), embedder, (data["old_date"], data["new_date"])
        )
        out["seconds"] = time.perf_counter() - t0
        out["llm_calls"] = len(timed.seconds)
        out["seconds_p50"] = statistics.median(timed.seconds) if timed.seconds else 0.0
        result[setting] = out
        print(
            f"{setting}: accuracy {out['accuracy']:.2f} ({out['correct']}/{out['pairs']}), "
            f"status {out['status_accuracy']:.2f}, other links {out['other_links']}, "
            f"{out['llm_calls']} calls, {out['seconds']:.0f} s",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    stem = args.name or f"links-{args.llm}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (RESULTS / f"{stem}.md").write_text(render(result))
    print(render(result))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--llm", choices=("local", "oracle"), default="local")
    p.add_argument("--api-base", default=None)
    p.add_argument("--model", default=None)
    p.add_argument("--api-key", default=None)
    p.add_argument("--local-model", default=None, help="LocalLlm model name (default: its own)")
    p.add_argument("--settings", nargs="*", default=["isolated", "shared"])
    p.add_argument("--pairs", type=int, default=0, help="only the first N pairs (0: all)")
    p.add_argument("--name", default=None, help="results file stem (default links-<llm>)")

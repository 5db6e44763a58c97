"""The texts of LoCoMo turns in the shapes the tuning compares (turn alone, windows)."""

from __future__ import annotations

from typing import Any


def shapes(ts: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per turn: ``turn``; ``prev`` = previous turn + turn (what threads index today);
    ``next`` = turn + next turn; ``both`` = previous + turn + next (one thread, in order);
    ``prev2`` = the two previous turns + turn (known when the turn is written)."""
    texts = [t["text"] for t in ts]
    n = len(texts)
    prev = [texts[i] if i == 0 else f"{texts[i - 1]}\n{texts[i]}" for i in range(n)]
    nxt = [texts[i] if i == n - 1 else f"{texts[i]}\n{texts[i + 1]}" for i in range(n)]
    both = ["\n".join(texts[j] for j in range(max(0, i - 1), min(n, i + 2))) for i in range(n)]
    prev2 = ["\n".join(texts[max(0, i - 2) : i + 1]) for i in range(n)]
    return {"turn": texts, "prev": prev, "next": nxt, "both": both, "prev2": prev2}

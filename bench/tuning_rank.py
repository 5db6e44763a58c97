"""Rank LoCoMo turns from precomputed signals with the library's fusion code (bench/tuning.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.locomo_data import Conversation
from oracleagentmemory.core.store.search._follow_ups import (
    FOLLOW_UPS,
    follow_up_map,
    follow_up_rank,
)
from oracleagentmemory.core.store.search._fusion import SCORE, boost, fuse, rescore


@dataclass(frozen=True)
class Config:
    """Branches (signal -> weight), their candidate depth, fusion kind, optional re-scoring."""

    branches: tuple[tuple[str, float], ...]
    depth: int = 50
    kind: str = SCORE
    rrf_k: int = 60
    rescore_signal: str | None = None
    rescore_weight: float = 0.0
    rescore_depth: int = 50
    rescore_by_rank: bool = False
    date_weight: float = 0.0
    date_slack: int = 0
    keyword_span: float = 0.0
    """Smallest spread of BM25 scores the keyword branches are normalised by (``_fusion``)."""
    follow_weight: float = 0.0
    """Dense branches read each turn with its next turns (``_follow_ups``; 0: off)."""
    label: str = field(default="", compare=False)

    def describe(self) -> str:
        parts = [f"{s}={w:g}" for s, w in self.branches]
        text = f"{self.kind}[{', '.join(parts)}] depth {self.depth}"
        if self.kind != SCORE:
            text += f" k={self.rrf_k}"
        if self.rescore_signal:
            text += f" + rescore {self.rescore_signal} w={self.rescore_weight:g}"
            text += f" over {self.rescore_depth}"
        if self.date_weight:
            text += f" + date boost {self.date_weight:g} (slack {self.date_slack} d)"
        if self.keyword_span:
            text += f" + keyword span {self.keyword_span:g}"
        if self.follow_weight:
            text += f" + follow-ups {self.follow_weight:g}"
        return text


_TOP: dict[tuple[int, str, int], list[list[tuple[int, float]]]] = {}


def _top(conv: Conversation, signal: str, depth: int) -> list[list[tuple[int, float]]]:
    """Per question, the signal's best ``depth`` turns as (index, score); keyword signals keep
    only matching turns (score > 0), as a full-text engine returns only matches."""
    key = (id(conv), signal, depth)
    cached = _TOP.get(key)
    if cached is not None:
        return cached
    m = conv.signals[signal]
    kw = signal.startswith("kw:")
    out = []
    for row in m:
        d = min(depth, len(row))
        idx = np.argpartition(-row, d - 1)[:d]
        idx = idx[np.lexsort((idx, -row[idx]))]
        out.append([(int(i), float(row[i])) for i in idx if not kw or row[i] > 0])
    _TOP[key] = out
    return out


_FOLLOWED: dict[tuple[int, str, int, float], list[list[tuple[int, float]]]] = {}


def _followed(
    conv: Conversation, signal: str, hits: list[list[tuple[int, float]]], weight: float
) -> list[list[tuple[int, float]]]:
    """Each question's dense hits re-ranked by the library's ``follow_up_rank``, the
    conversation being one thread in turn order (what the library reads: the turns within
    ``FOLLOW_UPS`` of a hit, the ones before it candidates)."""
    key = (id(conv), signal, len(hits[0]) if hits else 0, weight)
    cached = _FOLLOWED.get(key)
    if cached is not None:
        return cached
    m = conv.signals[signal]
    n = m.shape[1]
    out = []
    for i, row_hits in enumerate(hits):
        row = m[i]
        near = {j for h, _ in row_hits for j in range(h - FOLLOW_UPS, h + FOLLOW_UPS + 1)}
        sims = {j: float(row[j]) for j in near if 0 <= j < n}
        at = {("", j): j for j in sims}
        follow_ups = follow_up_map(at, {("", h) for h, _ in row_hits})
        out.append(follow_up_rank(row_hits, sims, follow_ups, len(row_hits), weight))
    _FOLLOWED[key] = out
    return out


def rank(conv: Conversation, cfg: Config) -> NDArray[np.int64]:
    """Top-25 turn indices per question (-1 pads)."""
    lists = [(_top(conv, s, cfg.depth), w) for s, w in cfg.branches]
    if cfg.follow_weight:
        lists = [
            (hits if s.startswith("kw:") else _followed(conv, s, hits, cfg.follow_weight), w)
            for (hits, w), (s, _) in zip(lists, cfg.branches, strict=True)
        ]
    keep = max(25, cfg.rescore_depth if cfg.rescore_signal else 25)
    out = np.full((len(conv.questions), 25), -1, dtype=np.int64)
    for i in range(len(conv.questions)):
        spans = [cfg.keyword_span if s.startswith("kw:") else 0.0 for s, _ in cfg.branches]
        fused = fuse([(hits[i], w) for hits, w in lists], keep, cfg.kind, cfg.rrf_k, spans)
        if cfg.date_weight:  # inside the store, before any reranker sees the candidates
            row = conv.signals[f"date:{cfg.date_slack}" if cfg.date_slack >= 0 else "spk:0"][i]
            fused = boost(fused, {r for r, _ in fused if row[r] > 0}, cfg.date_weight)
        if cfg.rescore_signal:
            cands = fused[: cfg.rescore_depth]
            row = conv.signals[cfg.rescore_signal][i]
            if cfg.rescore_by_rank:  # what an IReranker sees: the order, not the scores
                cands = [(r, -float(j)) for j, (r, _) in enumerate(cands)]
            head = rescore(cands, {r: float(row[r]) for r, _ in cands}, cfg.rescore_weight)
            fused = head + fused[cfg.rescore_depth :]
        ids = [r for r, _ in fused[:25]]
        out[i, : len(ids)] = ids
    return out


def rank_any(conv: Conversation, cfg: Any) -> NDArray[np.int64]:
    return rank(conv, cfg)

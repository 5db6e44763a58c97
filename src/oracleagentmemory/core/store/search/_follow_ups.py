"""HYBRID reads a message with the messages that follow it in its thread.

A turn that a question is about is often answered, or carried on, by the next turns ("Did
you go in the end?" / "Yes, we went camping in May"), and those are written after it, so no
index row of the turn can hold them. At query time they are known: the vector branch's best
records that are messages bring their thread neighbours within :data:`FOLLOW_UPS` positions,
and a message scores its own similarity blended with the best of its next
:data:`FOLLOW_UPS` messages' (:func:`follow_up_rank`). The messages just before a hit become
candidates too: a turn whose reply matches is found even when its own words do not.

Measured on LoCoMo (dev, leave one conversation out): HYBRID recall@10 0.788 -> 0.809, every
fold better (docs/retrieval-quality.md). Records that are not messages, and messages with no
visible message after them, keep their own similarity.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store.search._fusion import RankedArrays
from oracleagentmemory.core.store.search._search_sql import (
    ScopeSpec,
    preference_params,
    preference_penalties,
    search_conditions,
)

if TYPE_CHECKING:
    from oracleagentmemory.core.store.search._vector_branch import VectorBranch
    from oracleagentmemory.core.store.vectors._thread_table import ScanRows

FOLLOW_UPS = 2
"""How many messages after a message count as its follow-ups (and how many before a hit
become candidates)."""
FOLLOW_UP_WEIGHT = 0.7
"""Weight of the best follow-up's similarity against the message's own (1)."""

Hits = Sequence[tuple[int, float]]


def follow_up_rank(
    hits: Hits,
    sims: Mapping[int, float],
    follow_ups: Mapping[int, Sequence[int]],
    k: int,
    weight: float = FOLLOW_UP_WEIGHT,
) -> builtins.list[tuple[int, float]]:
    """The ``k`` best candidates as ``(id, score)``, score descending (ties on the smaller id).

    ``hits`` are the branch's ``(id, similarity)``; ``sims`` the similarity of every other
    record known (the hits' neighbours); ``follow_ups`` each candidate's visible next
    messages. Candidates are the hits and every key of ``follow_ups``. A candidate with
    follow-ups scores ``(own + weight * best follow-up) / (1 + weight)``, another its own.
    """
    known = dict(sims)
    known.update(hits)
    isfinite = math.isfinite
    out = []
    for rid in dict.fromkeys([*(r for r, _ in hits), *follow_ups]):
        own = known.get(rid)
        if own is None:
            continue
        if not isfinite(own):  # a degenerate vector: last (the search drops it)
            out.append((rid, -math.inf))
            continue
        best = None  # the best finite similarity of its follow-ups
        for f in follow_ups.get(rid, ()):
            sim = known.get(f)
            if sim is not None and isfinite(sim) and (best is None or sim > best):
                best = sim
        out.append((rid, own if best is None else (own + weight * best) / (1.0 + weight)))
    out.sort(key=lambda kv: (-kv[1], kv[0]))
    return out[:k]


def follow_up_map(
    at: Mapping[tuple[str, int], int], hit_at: set[tuple[str, int]]
) -> dict[int, list[int]]:
    """Each candidate's follow-ups, from the messages read (``at``: (thread, position) ->
    id; the hits' positions ``hit_at`` and those within :data:`FOLLOW_UPS` of them). A
    message read is a candidate when a hit is it or follows it within ``FOLLOW_UPS``; its
    follow-ups are the messages read in the ``FOLLOW_UPS`` positions after it (all of them
    read, being within ``FOLLOW_UPS`` after that hit)."""
    out: dict[int, list[int]] = {}
    span = range(-FOLLOW_UPS, FOLLOW_UPS + 1)
    for thread, seq in hit_at:
        # The hit's window: the FOLLOW_UPS messages before it, itself, those after it.
        window = [at.get((thread, seq + i)) for i in span]
        for i in range(FOLLOW_UPS + 1):  # each message up to the hit, from the earliest
            rid = window[i]
            if rid is None or rid in out:
                continue
            after = [f for f in window[i + 1 : i + 1 + FOLLOW_UPS] if f is not None]
            if after:
                out[rid] = after
    return out


def follow_up_scores(
    hits: Hits,
    keys: NDArray[np.int64],
    rids: NDArray[np.int64],
    sims: NDArray[np.float64],
    k: int,
    weight: float = FOLLOW_UP_WEIGHT,
) -> builtins.list[tuple[int, float]]:
    """What :func:`follow_up_rank` answers over :func:`follow_up_map` of the rows read,
    in array operations: ``keys`` the rows' positions (a thread's positions consecutive
    integers, threads far apart), ``rids`` their records, ``sims`` their similarities (a
    record's best row counts; NaN and -inf ones as none)."""
    if keys.size == 0 or not hits:
        return follow_up_rank(hits, {}, {}, k, weight)
    value = np.where(np.isnan(sims), -np.inf, sims)
    if keys.size == 1 or bool((keys[1:] > keys[:-1]).all()):
        pos, pos_rid = keys, rids  # each position read once, ascending (the usual order)
    else:
        order = np.argsort(keys, kind="stable")
        keys, rids, value = keys[order], rids[order], value[order]
        first = np.ones(keys.size, dtype=np.bool_)
        first[1:] = keys[1:] != keys[:-1]
        starts = np.flatnonzero(first)
        pos = keys[starts]  # each position read once, ascending
        pos_rid = rids[starts]
        value = np.maximum.reduceat(value, starts)
    known = value > -np.inf  # a record the read rows give a similarity
    hit_rid = np.fromiter((r for r, _ in hits), dtype=np.int64, count=len(hits))
    hit_sim = np.fromiter((s for _, s in hits), dtype=np.float64, count=len(hits))
    by_rid = np.argsort(hit_rid, kind="stable")
    at = np.minimum(np.searchsorted(hit_rid, pos_rid, sorter=by_rid), hit_rid.size - 1)
    is_hit = hit_rid[by_rid[at]] == pos_rid
    value[is_hit] = hit_sim[by_rid[at[is_hit]]]  # a hit's own similarity is the branch's
    known |= is_hit

    def find(wanted: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """Index in ``pos`` of each wanted position, and whether it was read."""
        i = np.minimum(np.searchsorted(pos, wanted), pos.size - 1)
        return i, pos[i] == wanted

    # Candidates: positions read up to FOLLOW_UPS before a hit, with a read one after them.
    hit_pos = pos[is_hit]
    near = np.unique((hit_pos[:, None] - np.arange(FOLLOW_UPS + 1)).ravel())
    cand, read = find(near)
    cand = cand[read]
    cand = cand[known[cand]]  # a record with no similarity is no candidate
    best_after = np.full(cand.size, -np.inf)
    has_after = np.zeros(cand.size, dtype=np.bool_)
    for step in range(1, FOLLOW_UPS + 1):
        j, there = find(pos[cand] + step)
        has_after |= there
        v = np.where(there & known[j], value[j], -np.inf)
        best_after = np.where(np.isfinite(v) & (v > best_after), v, best_after)
    cand, best_after = cand[has_after], best_after[has_after]
    # Scores: the hits' and the candidates' (a record once), the blend where a follow-up is.
    return _blend(hit_rid, hit_sim, pos_rid[cand], value[cand], best_after, k, weight)


def follow_up_scores_at(
    hits: Hits, rows: ScanRows, k: int, weight: float = FOLLOW_UP_WEIGHT
) -> builtins.list[tuple[int, float]]:
    """What :func:`follow_up_scores` answers, over the rows of the search's scope
    (``VectorIndex.scan_rows``: each hit's place among them, each row's thread neighbours
    as places): flags over those rows instead of sorting and searching positions."""
    rid, sim = zip(*hits, strict=True) if hits else ((), ())
    top_rid, top_score = follow_up_top_at(
        np.array(rid, dtype=np.int64), np.array(sim, dtype=np.float64), rows, k, weight
    )
    return list(zip(top_rid.tolist(), top_score.tolist(), strict=True))


def follow_up_top_at(
    hit_rid: NDArray[np.int64],
    hit_sim: NDArray[np.float64],
    rows: ScanRows,
    k: int,
    weight: float = FOLLOW_UP_WEIGHT,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """:func:`follow_up_scores_at` of the hits given as arrays, the ``k`` best as arrays."""
    readable, at = rows.readable, rows.hit_at
    size = readable.size
    # Arrays of size + 1: the last slot stands for place -1 (no neighbour there), never
    # read, no similarity.
    read = np.zeros(size + 1, dtype=np.bool_)
    read[:size] = readable
    value = np.empty(size + 1)
    value[:size] = rows.value
    value[size] = -np.inf
    known = read & (value > -np.inf)  # a row read with a similarity (not NaN)
    value[at] = hit_sim  # a hit's own similarity is the branch's
    hit_read = at[read[at]]
    known[hit_read] = True
    usable = np.where(known & np.isfinite(value), value, -np.inf)  # as a follow-up
    # Candidates: read rows up to FOLLOW_UPS before a read hit, with a read one after them.
    mark = np.zeros(size + 1, dtype=np.bool_)
    mark[hit_read] = True
    mark[rows.before[hit_read, :FOLLOW_UPS]] = True
    cand = (mark & known).nonzero()[0]
    # Each candidate's next FOLLOW_UPS positions: read there, and their best usable
    # similarity (-inf: none).
    after = rows.after[cand, :FOLLOW_UPS]
    has_after = read[after[:, 0]]
    best_after = usable[after[:, 0]]
    for step in range(1, FOLLOW_UPS):
        has_after = has_after | read[after[:, step]]
        best_after = np.maximum(best_after, usable[after[:, step]])
    cand, best_after = cand[has_after], best_after[has_after]
    # Scores: the hits' and the candidates' (a row, so a record, once), the blend where a
    # follow-up is.
    follow_at = np.empty(size + 1)
    follow_at.fill(-np.inf)
    follow_at[cand] = best_after
    is_hit = np.zeros(size + 1, dtype=np.bool_)
    is_hit[at] = True
    scored = np.concatenate([at, cand[~is_hit[cand]]])
    all_rid = rows.rid[scored]
    all_rid[: at.size] = hit_rid
    own = value[scored]
    follow = follow_at[scored]  # finite or -inf
    score = np.where(np.isfinite(own), own, -np.inf)
    mix = (follow > -np.inf) & (score > -np.inf)
    score[mix] = (own[mix] + weight * follow[mix]) / (1.0 + weight)
    top = np.lexsort((all_rid, -score))[:k]
    return all_rid[top], score[top]


def _blend(
    hit_rid: NDArray[np.int64],
    hit_sim: NDArray[np.float64],
    cand_rid: NDArray[np.int64],
    cand_value: NDArray[np.float64],
    best_after: NDArray[np.float64],
    k: int,
    weight: float,
) -> builtins.list[tuple[int, float]]:
    """The hits' and the candidates' scores (a record once), each blended with its best
    follow-up where it has one; the ``k`` best, ties on the smaller id."""
    extra = ~np.isin(cand_rid, hit_rid)
    all_rid = np.concatenate([hit_rid, cand_rid[extra]])
    own = np.concatenate([hit_sim, cand_value[extra]])
    follow = np.full(all_rid.size, -np.inf)
    blended = np.isfinite(best_after)
    lookup = np.argsort(all_rid, kind="stable")
    where = lookup[np.searchsorted(all_rid, cand_rid, sorter=lookup)]
    follow[where[blended]] = best_after[blended]
    finite = np.isfinite(own)
    score = np.where(finite, own, -np.inf)
    mix = finite & np.isfinite(follow)
    score[mix] = (own[mix] + weight * follow[mix]) / (1.0 + weight)
    top = np.lexsort((all_rid, -score))[:k]
    return list(zip(all_rid[top].tolist(), score[top].tolist(), strict=True))


class FollowUps:
    """Reads the thread neighbours of a vector branch's hits and re-ranks them."""

    def __init__(self, core: StoreCore, vectors: VectorBranch | None = None) -> None:
        self._core = core
        self._vectors = vectors
        """Where the in-process index holds the search's rows, the neighbours are read
        there (no statement): see ``VectorBranch.neighbours``."""

    def rerank(
        self,
        qvec: NDArray[np.float32],
        hits: Hits,
        k: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> Hits:
        """``hits`` (``(rid, distance)``, best first) re-ranked with their follow-ups, as the
        ``k`` best ``(rid, distance)`` (as arrays where the search's scan scored them). A
        neighbour counts only if the search could return it (the same conditions, read in
        the same transaction)."""
        if not hits or "message" not in types or self._core.vector_dim is None:
            return list(hits)
        held = None
        if self._vectors is not None:
            scanned = self._vectors.scan_rows(qvec, hits, FOLLOW_UPS, types, scope, flt, valid_only)
            if scanned is not None:
                if not scanned.readable[scanned.hit_at].any():
                    return list(hits)[:k]  # no message read: as below
                top_rid, top_score = follow_up_top_at(scanned.hit_rid, scanned.hit_sim, scanned, k)
                return RankedArrays(top_rid, 1.0 - top_score)
        rids = [r for r, _ in hits]
        if self._vectors is not None:
            held = self._vectors.neighbours(
                qvec, rids, FOLLOW_UPS, FOLLOW_UPS, types, scope, flt, valid_only
            )
        sim_hits = [(rid, 1.0 - dist) for rid, dist in hits]
        if held is not None:
            keys, held_rids, held_sims = held
            if not held_rids.size:
                return list(hits)[:k]
            ranked = follow_up_scores(sim_hits, keys, held_rids, held_sims, k)
            return [(rid, 1.0 - score) for rid, score in ranked]
        positions, found_rids, found_sims = self._read(qvec, rids, types, scope, flt, valid_only)
        if not found_rids:
            return list(hits)[:k]
        sims: dict[int, float] = {}
        at: dict[tuple[str, int], int] = {}
        where: dict[int, tuple[str, int]] = {}
        get = sims.get
        for pos, rid, sim in zip(positions, found_rids, found_sims, strict=True):
            if sim > get(rid, -math.inf):
                sims[rid] = sim  # a record's best chunk, as the branch ranks it
            at[pos] = rid
            where[rid] = pos
        hit_at = {where[rid] for rid in rids if rid in where}
        ranked = follow_up_rank(sim_hits, sims, follow_up_map(at, hit_at), k)
        return [(rid, 1.0 - score) for rid, score in ranked]

    def _read(
        self,
        qvec: NDArray[np.float32],
        rids: builtins.list[int],
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> tuple[builtins.list[tuple[str, int]], builtins.list[int], builtins.list[float]]:
        """The neighbours' rows read in SQL: ``(thread, seq)``, rid and similarity (dot
        minus preference penalties) of each chunk."""
        d = self._core.dialect
        assert self._core.vector_dim is not None
        conds, params = search_conditions(d, types, scope, flt, valid_only)
        penalty = preference_penalties(d, scope)
        # The hits' neighbours (themselves included), each once.
        rows_from, rows_params = d.neighbour_rows_sql(rids, FOLLOW_UPS, FOLLOW_UPS)
        rows = d.execute(
            f"SELECT r.thread_id, r.seq_no, r.rid,"
            f" {d.vector_read_sql('c.vector')}, {' + '.join(['0.0', *penalty])}"
            f" {rows_from} AND c.vector IS NOT NULL AND {' AND '.join(conds)}",
            [*preference_params(scope), *rows_params, *params],
        )
        if not rows:
            return [], [], []
        q = np.asarray(qvec, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        vecs = d.vectors_from_db([row[3] for row in rows], self._core.vector_dim)
        dots = (vecs @ q).tolist()
        return (
            [(str(row[0]), int(row[1])) for row in rows],
            [int(row[2]) for row in rows],
            [dot - float(row[4]) for row, dot in zip(rows, dots, strict=True)],
        )

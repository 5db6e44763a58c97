"""``follow_up_map`` and ``follow_up_rank`` (#53's faster loops), and the array versions of
the follow-ups and the fusion, answer as the loops they replaced, kept here as the reference,
on random neighbourhoods: overlapping hits, gaps, degenerate (NaN, infinite) similarities,
ties."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

import numpy as np

from oracleagentmemory.core.store.search._follow_ups import (
    FOLLOW_UP_WEIGHT,
    FOLLOW_UPS,
    follow_up_map,
    follow_up_rank,
    follow_up_scores,
    follow_up_scores_at,
)
from oracleagentmemory.core.store.search._fusion import SCORE, RankedArrays, fuse, fuse_distances
from oracleagentmemory.core.store.vectors._thread_table import ScanRows, build_table


def reference_rank(
    hits: Sequence[tuple[int, float]],
    sims: Mapping[int, float],
    follow_ups: Mapping[int, Sequence[int]],
    k: int,
    weight: float = FOLLOW_UP_WEIGHT,
) -> list[tuple[int, float]]:
    known = dict(sims)
    known.update(hits)
    out = []
    for rid in dict.fromkeys([*(r for r, _ in hits), *follow_ups]):
        own = known.get(rid)
        if own is None:
            continue
        if not math.isfinite(own):
            out.append((rid, -math.inf))
            continue
        after = [known[f] for f in follow_ups.get(rid, ()) if math.isfinite(known.get(f, math.nan))]
        out.append((rid, (own + weight * max(after)) / (1.0 + weight) if after else own))
    out.sort(key=lambda kv: (-kv[1], kv[0]))
    return out[:k]


def reference_map(
    at: Mapping[tuple[str, int], int], hit_at: set[tuple[str, int]]
) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for (thread, seq), rid in at.items():
        after = [at[(thread, seq + i)] for i in range(1, FOLLOW_UPS + 1) if (thread, seq + i) in at]
        if after and any((thread, seq + i) in hit_at for i in range(FOLLOW_UPS + 1)):
            out[rid] = after
    return out


def _case(
    rng: random.Random,
) -> tuple[
    list[tuple[int, float]], dict[int, float], dict[tuple[str, int], int], set[tuple[str, int]]
]:
    at: dict[tuple[str, int], int] = {}
    rid = 0
    for t in range(rng.randint(1, 4)):
        for seq in range(rng.randint(1, 40)):
            if rng.random() < 0.8:  # gaps: messages the search may not return
                rid += 1
                at[(f"t{t}", seq)] = rid
    values = [0.5, 0.25, -0.1, 1.0]  # repeated values make ties

    def sim() -> float:
        r = rng.random()
        if r < 0.03:
            return math.nan
        if r < 0.05:
            return -math.inf
        return rng.choice(values) if r < 0.3 else rng.uniform(-1, 1)

    sims = {r: sim() for r in at.values()}
    chosen = rng.sample(sorted(at.items()), min(len(at), rng.randint(1, 20)))
    hits = [(r, sim()) for _, r in chosen]
    return hits, sims, at, {pos for pos, _ in chosen}


def test_the_loops_answer_as_the_reference() -> None:
    rng = random.Random(53)
    for _ in range(2000):
        hits, sims, at, hit_at = _case(rng)
        want_map = reference_map(at, hit_at)
        got_map = follow_up_map(at, hit_at)
        assert got_map == want_map
        k = rng.randint(1, 30)
        want = reference_rank(hits, sims, want_map, k)
        got = follow_up_rank(hits, sims, got_map, k)
        assert len(got) == len(want)
        for (r1, s1), (r2, s2) in zip(got, want, strict=True):
            assert r1 == r2
            assert s1 == s2 or (math.isnan(s1) and math.isnan(s2))


def test_the_array_version_answers_as_the_reference() -> None:
    """``follow_up_scores`` (the in-process path's) over the rows read: a record may have
    several rows (its best counts), some NaN or -inf."""
    rng = random.Random(7)
    for _ in range(2000):
        hits, sims, at, hit_at = _case(rng)
        threads = {t: i for i, t in enumerate(sorted({t for t, _ in at}))}
        keys, rids, values = [], [], []
        for (thread, seq), rid in at.items():
            for extra in range(rng.choice([1, 1, 1, 2, 3])):
                keys.append((threads[thread] << 40) + seq)
                rids.append(rid)
                values.append(sims[rid] if extra == 0 else rng.choice([math.nan, -math.inf, -2.0]))
        # The rows as rerank reads them: a record's best non-NaN similarity above -inf.
        best: dict[int, float] = {}
        for rid, sim in zip(rids, values, strict=True):
            if sim > best.get(rid, -math.inf):
                best[rid] = sim
        k = rng.randint(1, 30)
        want = reference_rank(hits, best, reference_map(at, hit_at), k)
        got = follow_up_scores(
            hits,
            np.asarray(keys, dtype=np.int64),
            np.asarray(rids, dtype=np.int64),
            np.asarray(values, dtype=np.float64),
            k,
        )
        assert len(got) == len(want)
        for (r1, s1), (r2, s2) in zip(got, want, strict=True):
            assert r1 == r2
            assert s1 == s2 or (math.isnan(s1) and math.isnan(s2))


def test_the_scan_version_answers_as_the_reference() -> None:
    """``follow_up_scores_at`` (flags over a scope's rows, neighbours as places) against
    the reference, rows the search may not read (its conditions) among them, degenerate
    similarities (NaN, -inf, +inf) on rows and hits, ties."""
    rng = random.Random(29)
    for _ in range(1500):
        hits, sims, at, _ = _case(rng)
        places = sorted(at)  # one row a record, in thread order
        rids = np.array([at[p] for p in places], dtype=np.int64)
        keys = np.array([(int(t[1:]) << 40) + seq for t, seq in places], dtype=np.int64)
        table = build_table(keys, np.ones(keys.size, dtype=np.bool_), FOLLOW_UPS)
        assert table is not None
        readable = np.array([rng.random() < 0.85 for _ in places], dtype=np.bool_)
        value = np.array([sims[at[p]] for p in places])
        value[[i for i in range(value.size) if rng.random() < 0.02]] = math.inf
        place_of = {at[p]: i for i, p in enumerate(places)}
        hit_at = np.array([place_of[r] for r, _ in hits], dtype=np.int64)
        rows = ScanRows(
            rid=rids,
            readable=readable,
            value=value,
            before=table.before,
            after=table.after,
            hit_at=hit_at,
            hit_rid=rids[hit_at],
            hit_sim=np.array([s for _, s in hits]),
        )
        read = {p: at[p] for i, p in enumerate(places) if readable[i]}
        # As the rows reach the reference in rerank: a similarity above -inf, not NaN.
        read_sims = {r: v for r in read.values() if (v := float(value[place_of[r]])) > -math.inf}
        hit_read = {p for p in read if read[p] in {r for r, _ in hits}}
        k = rng.randint(1, 30)
        want = reference_rank(hits, read_sims, reference_map(read, hit_read), k)
        got = follow_up_scores_at(hits, rows, k)
        assert [r for r, _ in got] == [r for r, _ in want]
        for (_, s1), (_, s2) in zip(got, want, strict=True):
            assert s1 == s2 or (math.isnan(s1) and math.isnan(s2))


def test_fuse_distances_answers_as_fuse() -> None:
    """HYBRID's array fusion (``fuse_distances``) against ``fuse`` of the similarities, on
    random branches: overlaps, ties, one-sided and empty branches, a narrow keyword spread."""
    rng = random.Random(11)
    for _ in range(3000):
        pool = list(range(rng.randint(0, 60)))
        vec = [
            (r, rng.choice([0.2, 0.5, rng.random()]))
            for r in rng.sample(pool, rng.randint(0, len(pool)))
        ]
        kw = [
            (r, rng.choice([0.25, 1.0 / (1.0 + rng.random() * 9)]))
            for r in rng.sample(pool, rng.randint(0, len(pool)))
        ]
        k, weight, span = rng.randint(1, 40), rng.choice([0.3, 0.5]), rng.choice([0.0, 5.0])
        want = fuse(
            [
                ([(r, 1.0 - d) for r, d in vec], weight),
                ([(r, 1.0 / max(d, 1e-12) - 1.0) for r, d in kw], 1.0 - weight),
            ],
            k,
            SCORE,
            spans=(0.0, span),
        )
        assert fuse_distances(vec, kw, k, weight, span) == want
        as_arrays = RankedArrays(
            np.array([r for r, _ in vec], dtype=np.int64),
            np.array([d for _, d in vec], dtype=np.float64),
        )
        assert fuse_distances(as_arrays, kw, k, weight, span) == want


def test_ranked_arrays_read_as_the_list_of_pairs() -> None:
    """A ranking held as two arrays (``RankedArrays``) reads as the list of its pairs:
    indexing, slices, iteration, length, truth and equality, Python numbers throughout."""
    pairs = [(7, 0.5), (3, 0.25), (9, 0.125)]
    ranked = RankedArrays(np.array([7, 3, 9], dtype=np.int64), np.array([0.5, 0.25, 0.125]))
    assert ranked == pairs and list(ranked) == pairs and len(ranked) == 3
    assert ranked[1] == (3, 0.25) and ranked[-1] == (9, 0.125)
    assert ranked[1:] == pairs[1:] and ranked[5:] == []
    assert all(type(r) is int and type(d) is float for r, d in [*ranked, ranked[0]])
    assert ranked != pairs[:2] and bool(ranked)
    empty = RankedArrays(np.empty(0, dtype=np.int64), np.empty(0))
    assert not empty and empty == []

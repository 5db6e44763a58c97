"""The keyword branch of a search: the engine's full-text index, widened until exact.

Distance is ``1 / (1 + best chunk score)`` (FTS5's BM25, on both engines: see
``_postgres_words``) plus the scope preference penalties. Only the best-scored candidates
are joined to their records first; the candidate set widens until no record left out could
enter the answer.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.records import Record
from oracleagentmemory.core.store._dialect import LocalScores
from oracleagentmemory.core.store._reads import to_record
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store.search._fusion import RankedArrays
from oracleagentmemory.core.store.search._keyword import query_terms
from oracleagentmemory.core.store.search._search_sql import (
    RECORDS_WITH_RANKING_MAX,
    ScopeSpec,
    more_to_read,
    preference_params,
    preference_penalties,
    search_conditions,
)
from oracleagentmemory.core.store.search._user_vectors import UserVectors

Held = Callable[[NDArray[np.int64]], tuple[NDArray[np.bool_], NDArray[np.float64]] | None]
"""Candidates -> whether each passes the search's conditions, and its preference penalties
(a column per preferred dimension); None: SQL must tell."""

SCORED_CANDIDATES_PER_RESULT = 2
"""Where the dialect scored the records itself, the first round reads this many of the best
per result asked (at least 20): no full-text query is repeated when a round widens."""
KEYWORD_CANDIDATES = 200
"""Best-scored chunks of a keyword query joined to their records first (SQLite)."""
KEYWORD_CANDIDATES_MAX = 12_800
"""Past this many candidates, every match is joined."""


class KeywordBranch:
    """Keyword hits ``(rid, distance)`` for one search, best first."""

    def __init__(self, core: StoreCore, users: UserVectors | None = None) -> None:
        self._core = core
        self._users = users
        """PostgreSQL: the cached users' rows (``_user_words``), scored in process."""

    def hits(
        self,
        query: str,
        k: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
        loaded: dict[int, Record] | None = None,
        held: Held | None = None,
        check_later: bool = False,
    ) -> Sequence[tuple[int, float]]:
        """Given ``loaded``, where the engine scored the records itself, the statement that
        checks the candidates' conditions also reads their records, and those of the hits
        returned are put there (no load after). ``held``: where the engine scored the
        records itself, the candidates' conditions and preference penalties as an
        in-process index holds them (``VectorBranch.conditions``; None: SQL checks).
        ``check_later``: a user the cache holds is scored before the cache asks the log what
        was committed since, and the log is asked with the first candidates' records (one
        round trip); a commit since scores again, caught up (see ``UserVectors.words_for``)."""
        terms = query_terms(query)
        if not terms or not self._core.has_keyword:
            return []
        d = self._core.dialect
        t = d.tables
        scored = d.keyword_scores(terms, scope.exact, self._local(scope, check_later))
        users = self._users
        check = []
        if scored is not None and check_later and users is not None:
            check = users.pending_check()
        if scored is not None and held is not None and loaded is None and not check:
            found = _ranked_held(scored, k, held)
            if found is not None:
                return found  # no statement: none of the SQL below is made
        conds, cparams = search_conditions(d, types, scope, flt, valid_only)
        penalty = ["0.0", *preference_penalties(d, scope)]
        pparams = preference_params(scope)
        if scored is not None:
            answers: builtins.list[builtins.list[tuple[Any, ...]]] = []
            got = self._ranked(scored, k, conds, cparams, penalty, pparams, loaded, check, answers)
            if check:
                assert users is not None
                with users.lock:
                    changed = users.settle(answers)
                if changed is None or changed:  # scored before a commit: again, caught up
                    if loaded is not None:
                        loaded.clear()
                    return self.hits(query, k, types, scope, flt, valid_only, loaded)
            return got
        hits_sql, params = d.keyword_hits_sql(terms, scope.exact)
        params = [*params, *cparams]
        # Where the full-text engine narrows to the exact scope itself, only its best-scored
        # chunks are joined to their records (joining every match costs most of a large
        # scope's query); the candidate set widens until the answer is the full one.
        limit: int | None = max(KEYWORD_CANDIDATES, k) if d.keyword_hits_scoped else None
        while True:
            # MATERIALIZED keeps the engine's ranking function inside its full-text query.
            cte = hits_sql if limit is None else f"{hits_sql} ORDER BY score DESC LIMIT {limit}"
            sql = (
                f"WITH h AS MATERIALIZED ({cte})"
                f" SELECT r.rid, 1.0 / (1.0 + MAX(h.score)) + {' + '.join(penalty)} AS dist,"
                " (SELECT COUNT(*) FROM h), (SELECT MIN(score) FROM h)"
                f" FROM h JOIN {t.chunks} c ON c.cid = h.cid"
                f" JOIN {t.records} r ON r.rid = c.rid WHERE {' AND '.join(conds)}"
                " GROUP BY r.rid, r.user_id, r.agent_id, r.thread_id ORDER BY dist, r.rid LIMIT ?"
            )
            rows = d.execute(sql, [params[0], *pparams, *params[1:], k])
            if limit is None or (rows and int(rows[0][2]) < limit):
                break  # every match was a candidate
            # A chunk left out scores at most the lowest candidate's score, so its record's
            # distance is at least 1 / (1 + that): results nearer than that are final.
            if len(rows) >= k and float(rows[-1][1]) <= 1.0 / (1.0 + float(rows[0][3])):
                break
            limit = None if not rows or limit >= KEYWORD_CANDIDATES_MAX else limit * 8
        return [(int(row[0]), float(row[1])) for row in rows]

    def _local(self, scope: ScopeSpec, check_later: bool = False) -> LocalScores | None:
        """Scores for a user-only scope from the cached users' keyword rows, if cached."""
        users = self._users
        if users is None or set(scope.exact) != {"user"}:
            return None
        user = scope.exact["user"]
        with users.lock, self._core.dialect.primary_reads():  # the cache reads the primary
            words = users.words_for(user, check_later=check_later)
        if words is None:
            return None
        assert user is not None

        def scores(stems: list[str]) -> Sequence[tuple[int, float]] | None:
            with users.lock:
                # Another thread's catch-up may have forgotten the user since (rows mostly
                # deleted): then SQL scores them.
                return words.scores(user, stems) if words.has(user) else None

        return scores

    def _ranked(
        self,
        scored: Sequence[tuple[int, float]],
        k: int,
        conds: builtins.list[str],
        params: builtins.list[Any],
        penalty: builtins.list[str],
        pparams: builtins.list[Any],
        loaded: dict[int, Record] | None,
        before: builtins.list[tuple[str, builtins.list[Any]]] = [],  # noqa: B006 - not changed
        answers: builtins.list[builtins.list[tuple[Any, ...]]] | None = None,
    ) -> builtins.list[tuple[int, float]]:
        """The keyword answer from the records' best chunk scores the dialect computed (best
        first): the best records are read, more at each round, until the answer is the full
        one; as the SQL path above, distance ``1 / (1 + best chunk score)`` plus penalties.
        ``before``: statements sent in the first round's round trip, ahead of it; their
        rows are put in ``answers``."""
        d = self._core.dialect
        t = d.tables
        score: dict[int, float] = {}  # of the candidates read so far
        nearest: dict[int, float] = {}
        rows_of: dict[int, tuple[Any, ...]] = {}
        width = len(penalty)

        def answer(ranked: builtins.list[tuple[int, float]]) -> builtins.list[tuple[int, float]]:
            if loaded is not None:
                loaded.update((rid, to_record(rows_of[rid])) for rid, _ in ranked if rid in rows_of)
            return ranked

        done, limit = 0, max(SCORED_CANDIDATES_PER_RESULT * k, 20)
        while True:
            batch = scored[done:limit]
            score.update(batch)
            candidates = [rid for rid, _ in batch]
            # A narrow round reads the candidates' records too (a wide one leaves them to
            # the load after the search).
            with_records = loaded is not None and len(candidates) <= RECORDS_WITH_RANKING_MAX
            record_cols = f", {self._core.record_cols}" if with_records else ""
            # Candidates first, each row looked up by key (the planner would otherwise start
            # from the user's index and scan every record).
            listed, ids = d.id_list(candidates)
            sql = (
                f"SELECT r.rid, {', '.join(penalty)}{record_cols} FROM {listed}"
                f" {t.records} r ON r.rid = j.value WHERE {' AND '.join(conds)}"
            )
            statement = (sql, [*pparams, ids, *params])
            if before:
                *first, found = d.execute_all([*before, statement])
                if answers is not None:
                    answers.extend(first)
                before = []
            else:
                found = d.execute(*statement)
            for row in found:
                rid = int(row[0])
                dist = 1.0 / (1.0 + score[rid])
                for p in row[1 : 1 + width]:
                    dist += float(p)
                nearest[rid] = dist
                if with_records:
                    rows_of[rid] = row[1 + width :]
            ranked = sorted(nearest.items(), key=lambda kv: (kv[1], kv[0]))[:k]
            done = min(limit, len(scored))
            if done == len(scored):
                return answer(ranked)  # every match was a candidate
            # A record left out scores at most the next candidate's score, so its distance is
            # at least 1 / (1 + that): when the k-th result is strictly nearer, no record left
            # out can enter the answer or win a tie with it.
            if len(ranked) >= k and ranked[-1][1] < 1.0 / (1.0 + scored[done][1]):
                return answer(ranked)
            if not nearest or limit >= KEYWORD_CANDIDATES_MAX:
                limit = len(scored)
            elif len(ranked) >= k:  # a tie straddles the cut
                limit *= 2
            else:  # filters rejected some
                limit = min(limit * 8, done + more_to_read(k - len(ranked), len(nearest) / done))


def _ranked_held(
    scored: Sequence[tuple[int, float]], k: int, held: Held
) -> Sequence[tuple[int, float]] | None:
    """What ``KeywordBranch._ranked`` answers, its candidates' conditions and penalties
    taken from ``held`` and their distances summed in array operations (the same sums in
    the same order); None where ``held`` cannot tell (then SQL answers)."""
    if not isinstance(scored, RankedArrays):
        scored = RankedArrays(
            np.fromiter((r for r, _ in scored), dtype=np.int64, count=len(scored)),
            np.fromiter((s for _, s in scored), dtype=np.float64, count=len(scored)),
        )
    ids, values = scored.ids, scored.values
    size = len(scored)
    rids = np.empty(0, dtype=np.int64)
    dists = np.empty(0, dtype=np.float64)
    done, limit = 0, max(SCORED_CANDIDATES_PER_RESULT * k, 20)
    while True:
        checked = held(ids[done:limit])
        if checked is None:
            return None
        passes, penalties = checked
        dist = 1.0 / (1.0 + values[done:limit]) + 0.0  # + the "0.0" term, each penalty, as SQL
        for j in range(penalties.shape[1]):
            dist = dist + penalties[:, j]
        if done:
            rids = np.concatenate([rids, ids[done:limit][passes]])
            dists = np.concatenate([dists, dist[passes]])
        else:
            rids, dists = ids[:limit][passes], dist[passes]
        top = np.lexsort((rids, dists))[:k]
        kept = dists[top]
        done = min(limit, size)
        if done == size:
            return RankedArrays(rids[top], kept)  # every match was a candidate
        if kept.size >= k and float(kept[-1]) < 1.0 / (1.0 + float(values[done])):
            return RankedArrays(rids[top], kept)  # as in KeywordBranch._ranked
        if not rids.size or limit >= KEYWORD_CANDIDATES_MAX:
            limit = size
        elif kept.size >= k:  # a tie straddles the cut
            limit *= 2
        else:  # filters rejected some
            limit = min(limit * 8, done + more_to_read(k - kept.size, rids.size / done))

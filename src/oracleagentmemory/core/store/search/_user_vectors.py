"""PostgreSQL: the vectors of users searched often, in process, exact across processes.

A user-scoped search on PostgreSQL ranks the user's chunks in the server (pgvector reads
and scores each of them, several milliseconds for 10,000). This cache keeps the vectors of
users this process searched more than once in the in-process index SQLite uses
(``_vector_index``), so the ranking is one matrix product here. It is exact: one statement
asks the change log (``_postgres_changes``) what every process committed since the snapshot
the cache reflects, and the rows of those records (of cached users) are read again; a log
that cannot tell (pruned past the cache, or a write that touched everything) drops the
cache. KEYWORD and HYBRID ask before ranking; VECTOR ranks first and asks in the same round
trip as its records' read (``check_later``), ranking again if anything was committed since.
The records of the hits are read as for any search, so a record deleted meanwhile is not
returned.

A user is read into the cache after the answer of their ``SEARCHES_BEFORE_CACHING``-th search
(each search counted once, whatever its branches), on the cache's own thread: no search
waits for a user's history to be read (at 100k records, reading 1,000 chunks' vectors and
keyword rows cost a HYBRID search 172 ms where SQL ranks it in a few). Until the user is
in, their searches are ranked in SQL. The read uses the users' indexes (the chunks' and the
records' own, the keyword rows' ``user_id`` index of schema 13) and the server's arrays of
each keyword row's stems (``_user_words.rows_sql``); it starts from the log's snapshot of
before it, so the commits it may have missed are read again when it joins the cache (see
:meth:`UserVectors._install`).

The cache holds at most ``MAX_BYTES`` of vectors; a user who would not fit is ranked in SQL.
When a new user would outgrow the budget, users not searched for ``IDLE_S`` make room, least
recently searched first; if they are not enough, the new user is ranked in SQL and asked
again after ``IDLE_S``. So a working set larger than the budget keeps the users it holds
instead of reading users in and out (at 1M records, 100 users of 10,000 chunks, starting
again empty made every search read a user: one-user HYBRID 693 ms at p50). Searches as an end user
(row security, ``core._shared._end_user``) never use it: what they may see is the database's call.

At open (:meth:`UserVectors.prefill`, an addition of ours) a background pass reads users in
before anyone searches them, up to ``PREFILL_BYTES`` (``OAM_USER_CACHE_PREFILL_MB``; 0: off):
the users of the last ``PREFILL_RECENT`` records first (most recent first), then the largest,
``PREFILL_STEP_ROWS`` rows a step on the cache's thread, a user a read through the users'
indexes (vectors and, in a KEYWORD or HYBRID store, keyword rows in one round trip), joined
to the cache as a fill is (fills asked for meanwhile run between steps). Each read, each
``PREFILL_WORDS_ROWS`` keyword rows kept and each join wait for a pause in this process's
searches (at most ``PREFILL_YIELD_MAX_S``); it never evicts a user, stops when the store
closes or the interpreter exits (``core._shared._exit_gate``); a user not read in yet is
ranked in SQL.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from oracleagentmemory.core._shared import _exit_gate
from oracleagentmemory.core._shared._end_user import current_end_user
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store.search import _user_words as user_words
from oracleagentmemory.core.store.search._user_search import (
    _ACTIVITY,
    _CHECK,
    _SEARCH,
    _Search,
    locked,
    one_search,
)
from oracleagentmemory.core.store.search._user_words import UserWords
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper, RowColumns
from oracleagentmemory.core.store.vectors._vector_index import VectorIndex

log = logging.getLogger("oracleagentmemory.store")

__all__ = ["UserVectors", "locked", "one_search", "prefill_bytes"]

MAX_BYTES = 512 * 2**20
"""The most vector bytes the cache holds (about 350,000 chunks of 384 dimensions)."""
SEARCHES_BEFORE_CACHING = 2
"""A user's searches (in this process; each counted once, whatever its branches) after
whose answer their rows are read into the cache: a user searched once is not worth reading
(in a service with many users, most of them)."""
IDLE_S = 60.0
"""Seconds without a search after which a cached user may make room for another, and after
which a user the full cache turned away is asked again."""
MIN_ROWS = 500
"""Users with fewer chunks than this are ranked in SQL: there it is already quick, and the
cache's own work under concurrent writes costs more (``bench load``'s load on 300-chunk users,
16 writers: 293 searches/s cached against 688 in SQL, p50 8.1 against 5.1 ms); at about 1,000
chunks the cache halves a quiet search (``bench postgres``)."""
PREFILL_ENV = "OAM_USER_CACHE_PREFILL_MB"
PREFILL_BYTES = MAX_BYTES // 2
"""The most bytes the pass at open reads in: vectors and, in a KEYWORD or HYBRID store,
keyword rows (``_user_words.STEM_BYTES``...; half the cache: the rest is left to the users
searched later); ``OAM_USER_CACHE_PREFILL_MB`` overrides it, 0 turns the pass off."""
PREFILL_RECENT = 10_000
"""The last records written (by rid) whose users the pass at open reads first."""
PREFILL_STEP_ROWS = 2_000
"""Rows (3 MB of 384-dimension vectors) the pass reads a step, a user a read, each after a
pause in searches (``PREFILL_QUIET_S``, at most ``PREFILL_YIELD_MAX_S``), parsed outside the
lock, joined under it after another pause: every search asks the cache, so a step is small
(8,000 rows held it up to 0.67 s on a busy 2-core machine). A fill asked for meanwhile ends
the step before its next read (:meth:`UserVectors._interrupted`)."""
PREFILL_SLACK_ROWS = 10_000  # reserved past the plan: its users' new rows, the first fills
PREFILL_WORDS_ROWS = 100
"""Keyword rows the pass at open keeps between two waits for a pause in searches."""
PREFILL_QUIET_S = 0.002
"""The pass at open goes on once no search of this process has run for this long..."""
PREFILL_YIELD_MAX_S = 0.25
"""...or once it has waited this long (a stream of searches slows the pass, never stops it).
At 0.05 s, back-to-back first searches met a read (10-20 ms at 500 rows) one time in four,
p50 / p99 2.07 / 8.74 ms against 1.85 / 5.57 with the pass off; at 0.25 s one in 33, 1.83 /
3.74 (``docs/performance.md``, the just-opened column)."""


def prefill_bytes() -> int:
    """The pass at open's budget: ``OAM_USER_CACHE_PREFILL_MB`` (MiB, 0: off) or the default."""
    raw = os.environ.get(PREFILL_ENV)
    if raw is None:
        return PREFILL_BYTES
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{PREFILL_ENV} must be a number of MiB, got {raw!r}") from None
    if not 0 <= value < float("inf"):
        raise ValueError(f"{PREFILL_ENV} must be a finite number >= 0, got {raw!r}")
    return int(value * 2**20)


class UserVectors:
    """The cached users' vectors and the snapshot they reflect (see the module docstring)."""

    def __init__(self, core: StoreCore, keeper: IndexKeeper) -> None:
        self._core = core
        self._keeper = keeper
        self.lock = threading.Lock()
        """Held while the index changes or is searched (searches share the store)."""
        self.index: VectorIndex | None = None
        self._snapshot: str | None = None
        self._instance: str | None = None
        """The store instance (meta ``instance``) the cache was read from."""
        self._users: frozenset[str] = frozenset()
        """Replaced, not changed, when a user is added: a ranking keeps the set it saw."""
        self._searches: dict[str, int] = {}
        self._not_cached: set[str] = set()
        """Users too small or too large to cache (until the cache starts again)."""
        self._last_used: dict[str, float] = {}
        """When each cached user was last searched (``time.monotonic``)."""
        self._turned_away: dict[str, float] = {}
        """Users the full cache could not take, and when it turned them away."""
        self.words = UserWords()
        """The cached users' keyword rows (read on their first keyword search)."""
        self._caught_up_for: object | None = None
        """The search (``one_search``) the cache last caught up for: its branches share it."""
        self._writes_seen = False
        """Whether the last deferred check found commits (see :meth:`pending_check`)."""
        self._filling: dict[str, int] = {}
        """Users a fill was asked for since the last :meth:`drop` (the epoch it began in)
        and has not ended (see :meth:`_fill`)."""
        self._epoch = 0
        """Counts :meth:`drop`: a fill that began before one is not installed."""
        self._fills_queued = 0
        """Fills queued and not begun: the pass at open ends its step for them."""
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._futures: set[Future[None]] = set()
        self._closed = False
        self._stopping = False
        """The interpreter exits: the pass at open takes no further step."""
        self.prefilled: list[str] = []
        """The users the pass at open read in, in the order it read them."""

    def enabled(self) -> bool:
        d: Any = self._core.dialect
        log = getattr(d, "change_log", None)
        return log is not None and log.enabled and self._core.vector_dim is not None

    def for_user(self, user: str | None, *, check_later: bool = False) -> VectorIndex | None:
        """The index holding every chunk of ``user``, caught up with every commit, or None
        (rank in SQL). Call with :attr:`lock` held.

        ``check_later``: a user cached already is ranked at once, and the search asks the log
        afterwards, with its records (:meth:`pending_check`, :meth:`settle`): one round trip
        when nothing changed meanwhile."""
        if check_later and self._defer(user):
            return self.index
        return self.index if self._ready(user) else None

    def _defer(self, user: str | None) -> bool:
        """Whether ``user`` is cached and this search may rank them before asking the log
        (:meth:`pending_check`); if so, noted (:data:`_CHECK`)."""
        search = _SEARCH.get()
        if (
            search is not None
            and user is not None
            and user in self._users
            and self.index is not None
            and self._snapshot is not None
            and self.enabled()
            and current_end_user() is None
        ):
            _CHECK.set((search, self._snapshot, self._users))
            self._last_used[user] = time.monotonic()
            return True
        return False

    def cached_index(self, user: str | None) -> VectorIndex | None:
        """The index, when it holds ``user`` and would rank a search of theirs now (nothing
        loaded, nothing caught up). Call with :attr:`lock` held."""
        if user is None or user not in self._users or current_end_user() is not None:
            return None
        return self.index if self.enabled() else None

    def pending_check(self) -> list[tuple[str, list[Any]]]:
        """The statements a ranking of this search left for later (see :meth:`for_user`,
        :meth:`words_for`):
        the log's answer and, while the last answer had commits in it, the rows of the
        cached users' records written meanwhile (so catching up under a stream of writes
        costs no round trip of its own; a quiet store is not asked for them, 0.3 ms).
        None left: an empty list."""
        deferred = _CHECK.get()
        if deferred is None or deferred[0] is not _SEARCH.get():
            return []
        t = self._core.dialect.tables
        changes = _log(self._core)
        snapshot = deferred[1]
        out: list[tuple[str, list[Any]]] = [(changes.since_sql(t.changes, t.meta), [snapshot] * 2)]
        if self._writes_seen:
            rows = self._keeper.rows_sql(changes.changed_where(t.changes))
            out.append((rows, [snapshot, snapshot, sorted(deferred[2])]))
        return out

    def settle(self, answers: list[list[tuple[Any, ...]]]) -> frozenset[int] | None:
        """Apply the answers of :meth:`pending_check`: the records committed since the
        ranking's snapshot (empty: the ranking stands; else it must be made again, the cache
        caught up now), None when the log could not tell (the cache started again). Call
        with :attr:`lock` held."""
        deferred = _CHECK.get()
        assert deferred is not None
        _CHECK.set(None)
        self._caught_up_for = deferred[0]
        read = (deferred[2], answers[1]) if len(answers) > 1 else None
        changed = self._apply(deferred[1], answers[0], read)
        self._writes_seen = changed is None or bool(changed)
        return changed

    def words_for(self, user: str | None, *, check_later: bool = False) -> UserWords | None:
        """The keyword rows of cached users, ``user``'s among them, caught up, or None
        (score in SQL; a cached user's rows not read yet are read after the answer). Call
        with :attr:`lock` held. ``check_later``: as for :meth:`for_user` (the log is asked
        with the candidates' records)."""
        if not self._core.has_keyword:
            return None
        if check_later and user is not None and self.words.has(user) and self._defer(user):
            return self.words
        if not self._ready(user, words=True):
            return None
        assert user is not None
        if not self.words.has(user):
            self._ask(user, words=True)
            return None
        return self.words

    def _ready(self, user: str | None, words: bool = False) -> bool:
        """Whether ``user`` is cached, everything caught up; a user not cached is counted
        (once a search) and asked for when due (:meth:`_count`). ``words``: the search
        scores keywords (a fill it asks for reads the user's keyword rows too)."""
        if user is None or user in self._not_cached or current_end_user() is not None:
            return False
        if not self.enabled():
            return False
        if user not in self._users:
            self._count(user, words)
            return False
        search = _SEARCH.get()
        if search is None or search is not self._caught_up_for:
            self._catch_up()
            self._caught_up_for = search
        if user in self._users:  # (a catch-up that cannot tell drops every user)
            self._last_used[user] = time.monotonic()
            return True
        return False

    def _count(self, user: str, words: bool) -> None:
        """One more search of ``user`` (not cached): once due, a fill is asked for."""
        self._after_fork()
        search = _SEARCH.get()
        if isinstance(search, _Search):
            if user in search.counted:  # this search's other branch
                if words and user in search.fills:
                    search.fills[user] = True
                return
            search.counted.add(user)
        if user in self._filling:
            return
        if user in self._turned_away:
            if time.monotonic() - self._turned_away[user] < IDLE_S:
                return
            del self._turned_away[user]
        seen = self._searches.get(user, 0) + 1
        if seen < SEARCHES_BEFORE_CACHING:
            self._searches[user] = seen
            if len(self._searches) > 100_000:
                self._searches.clear()
            return
        self._searches.pop(user, None)
        self._ask(user, words)

    def _ask(self, user: str, words: bool) -> None:
        """A fill of ``user`` (their vectors unless cached, and with ``words`` their keyword
        rows), started after the answer of the search asking (at once outside one)."""
        search = _SEARCH.get()
        if isinstance(search, _Search):
            search.fills[user] = search.fills.get(user, False) or words
            search.cache = self
        else:
            self._submit(user, words)

    def _submit(self, user: str, words: bool) -> None:
        """Queue a fill of ``user`` on the cache's thread. Call with :attr:`lock` held."""
        self._after_fork()
        if self._closed or user in self._filling:
            return
        self._filling[user] = self._epoch
        self._fills_queued += self._queue(self._fill, user, words, self._epoch)

    def _queue(self, job: Callable[..., None], *args: Any) -> bool:
        """Run ``job(*args)`` on the cache's thread; whether it was queued. Call with
        :attr:`lock` held."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="oam-user-cache")
            self._pool_pid = os.getpid()
            _exit_gate.watch(self)
        try:
            future = self._pool.submit(job, *args)
        except RuntimeError:  # the interpreter is shutting down
            return False
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        return True

    def stop_taking_jobs(self) -> int:
        """At interpreter exit (``_exit_gate``): the pass stops after its step; 0 to resume."""
        self._stopping = True
        return 0

    def wait_running(self, deadline: float) -> int:
        """Wait (until ``deadline``, ``time.monotonic()``) for the step or fill running."""
        left = max(0.0, deadline - time.monotonic())
        _, pending = wait(list(self._futures), left)
        return len(pending)

    def prefill(self, budget: int) -> None:
        """At open: queue the pass that reads users in, up to ``budget`` bytes (see the
        module docstring; nothing where the cache is off or the budget is 0)."""
        if budget <= 0 or not self.enabled():
            return
        with self.lock:
            self._after_fork()
            if not self._closed:
                self._queue(self._prefill_plan, budget, self._epoch)

    def _prefill_plan(self, budget: int, epoch: int) -> None:
        """On the cache's thread: which users the pass reads, in order (users of the most
        recent records first, then the largest), from the records' user index and the last
        ``PREFILL_RECENT`` rids; then its first step."""
        d: Any = self._core.dialect
        t = d.tables
        try:
            counts, recent = d.execute_all(
                [
                    (
                        f"SELECT r.user_id, COUNT(*) FROM {t.records} r"
                        " WHERE r.user_id IS NOT NULL GROUP BY r.user_id",
                        [],
                    ),
                    (
                        "SELECT s.user_id, MAX(s.rid) FROM (SELECT r.user_id, r.rid FROM"
                        f" {t.records} r ORDER BY r.rid DESC LIMIT ?) s"
                        " WHERE s.user_id IS NOT NULL GROUP BY s.user_id",
                        [PREFILL_RECENT],
                    ),
                ]
            )
        except Exception:
            log.warning("could not plan reading users into the search cache", exc_info=True)
            return
        last = {str(user): int(rid) for user, rid in recent}
        assert self._core.vector_dim is not None
        per_row = 4 * self._core.vector_dim
        sizes = {str(user): int(n) for user, n in counts}
        order = sorted(sizes, key=lambda u: (-last.get(u, -1), -sizes[u], u))
        # Records, not chunks: an estimate (each step reads the real rows).
        plan = [u for u in order if sizes[u] >= MIN_ROWS and sizes[u] * per_row <= budget]
        with self.lock:  # room for what it will read, while empty: no copy under the lock
            if plan and not self._closed and epoch == self._epoch:
                most = min(budget, MAX_BYTES) // per_row  # 2 chunks a message, at most this
                rows = min(2 * sum(sizes[u] for u in plan) + PREFILL_SLACK_ROWS, most)
                if not self._index().reserve(rows):  # it grows as the users join
                    log.warning("could not reserve %d rows for the search cache", rows)
        self._prefill_step(plan, sizes, budget, epoch)

    def _prefill_step(
        self, plan: list[str], sizes: dict[str, int], budget: int, epoch: int
    ) -> None:
        """On the cache's thread: the next ``PREFILL_STEP_ROWS`` rows of ``plan``, read, joined."""
        d: Any = self._core.dialect
        t = d.tables
        assert self._core.vector_dim is not None
        per_row = 4 * self._core.vector_dim
        with self.lock:
            if self._stopping or self._closed or epoch != self._epoch:
                return
            if self._held_bytes() >= budget:
                return
            skip = self._users | self._not_cached | set(self._filling)
        step: list[str] = []
        rows = 0
        while plan and (not step or rows + sizes[plan[0]] <= PREFILL_STEP_ROWS):
            user = plan.pop(0)
            if user not in skip:
                step.append(user)
                rows += sizes[user]
        if not step:
            return
        where = " AND c.user_id = ? AND r.user_id = ?"
        with_words = self._prefills_words()
        kw_sql = user_words.rows_sql(t.kw, " AND k.user_id = ?")
        try:
            state = d.execute(_log(self._core).now_sql(t.meta))[0]
            answers: list[RowColumns] = []
            keyword: list[Any] = []
            for i, user in enumerate(step):  # a user a round trip, each after the searches
                _yield_to_searches(self._interrupted)
                if self._stopping or self._closed:
                    return
                if self._fills_queued:  # a fill asked for meanwhile goes first
                    plan[:0], step = step[i:], step[:i]
                    break
                reads: list[tuple[str, list[Any]]] = [(self._keeper.rows_sql(where), [user, user])]
                if with_words:
                    reads.append((kw_sql, [user]))
                got = d.execute_all(reads)
                words = self._prefill_words(got[1]) if with_words else None
                if with_words and words is None:  # stopped, or a fill asked for, mid-parse
                    plan[:0], step = step[i:], step[:i]
                    break
                answers.append(self._keeper.columns_of(got[0], self._core.vector_dim))
                keyword.append(words)
            _yield_to_searches(self._interrupted)  # the install holds the lock: after them
            with self.lock:
                if self._closed or epoch != self._epoch:
                    return
                if step:
                    added = self._install_many(step, state, answers, budget, keyword)
                    self.prefilled += added
                    full = self._held_bytes() + per_row * MIN_ROWS > budget
                    if len(added) < len(step) and full:
                        return  # the budget is spent
                if plan and not self._stopping:
                    self._queue(self._prefill_step, plan, sizes, budget, epoch)
        except Exception:  # the users stay ranked in SQL
            log.warning("could not read users into the search cache", exc_info=True)

    def _interrupted(self) -> bool:
        """Whether the pass ends its step: closing, exiting, or a fill asked for (runs next)."""
        return self._stopping or self._closed or self._fills_queued > 0

    def _prefill_words(self, rows: list[tuple[Any, ...]]) -> Any:
        """One user's keyword rows, as the pass at open reads them in: kept
        ``PREFILL_WORDS_ROWS`` rows at a time, each part after a pause in searches (the
        parse holds the interpreter: 2,000 rows are about 10 ms); None when
        :meth:`_interrupted` (the user is read again by a later step)."""
        kept = user_words.read([])
        for start in range(0, len(rows), PREFILL_WORDS_ROWS):
            if start:
                _yield_to_searches(self._interrupted)
                if self._interrupted():
                    return None
            kept.add(row[1:] for row in rows[start : start + PREFILL_WORDS_ROWS])
        kept.columns()  # here, not on the user's first search
        return kept

    def _prefills_words(self) -> bool:
        """Whether the pass at open reads each user's keyword rows too: where the store's
        searches score keywords (a VECTOR store's never do)."""
        return self._core.has_keyword and self._core.strategy is not SearchStrategy.VECTOR

    def _held_bytes(self) -> int:
        """The vectors' bytes and the keyword rows' (estimated): what the pass's budget
        counts."""
        return self.index_bytes() + self.words.nbytes()

    def index_bytes(self) -> int:
        """The bytes of vectors the cache holds."""
        dim = self._core.vector_dim or 0
        return 0 if self.index is None else 4 * dim * len(self.index)

    def _after_fork(self) -> None:
        """In a forked child, the parent's fills (and their thread) are not its own."""
        if self._pool is not None and self._pool_pid != os.getpid():
            self._pool, self._filling, self._futures = None, {}, set()
            self._fills_queued = 0

    def wait_filled(self, timeout: float | None = None) -> bool:
        """Wait until the fills asked for so far (and the pass at open, every step) have
        ended; whether they have."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._futures:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            _, pending = wait(list(self._futures), left)
            if pending and deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def _fill(self, user: str, words: bool, epoch: int) -> None:
        """On the cache's thread: read ``user``'s rows (vectors unless cached; keyword rows
        with ``words``) without the lock, then add them under it (:meth:`_install`)."""
        d: Any = self._core.dialect
        t = d.tables
        changes = _log(self._core)
        with self.lock:
            self._fills_queued -= 1
        try:
            with_vectors = user not in self._users
            with_words = words and self._core.has_keyword
            statements: list[tuple[str, list[Any]]] = [(changes.now_sql(t.meta), [])]
            if with_vectors:
                statements.append(
                    (
                        f"SELECT COUNT(*) FROM {t.chunks} c"
                        " WHERE c.user_id = ? AND c.vector IS NOT NULL",
                        [user],
                    )
                )
            answers = d.execute_all(statements)
            state = answers[0][0]
            assert self._core.vector_dim is not None
            per_row = 4 * self._core.vector_dim
            if with_vectors:
                rows = int(answers[1][0][0])
                if rows < MIN_ROWS or rows * per_row > MAX_BYTES // 2:
                    with self.lock:
                        if epoch == self._epoch:
                            self._not_cached.add(user)
                    return
            reads: list[tuple[str, list[Any]]] = []
            if with_vectors:
                # The chunks' user index and the records' (never a scan of either table).
                where = " AND c.user_id = ? AND r.user_id = ?"
                reads.append((self._keeper.rows_sql(where), [user, user]))
            if with_words:
                reads.append((user_words.rows_sql(t.kw, " AND k.user_id = ?"), [user]))
            got = d.execute_all(reads) if reads else []
            # Parsed here, not under the lock (searches wait for it).
            vectors = self._keeper.columns_of(got[0], per_row // 4) if with_vectors else None
            keyword = user_words.read(got[-1]) if with_words else None
            with self.lock:
                if epoch != self._epoch or self._closed:
                    self._searches[user] = SEARCHES_BEFORE_CACHING - 1  # asked again next
                    return
                self._install(user, state, vectors, keyword)
        except Exception:  # the user stays ranked in SQL; a later search asks again
            log.warning("could not read user %r into the search cache", user, exc_info=True)
        finally:
            with self.lock:
                if self._filling.get(user) == epoch:
                    del self._filling[user]

    def _install(
        self,
        user: str,
        state: tuple[Any, ...],
        vectors: RowColumns | None,
        keyword: Any,
    ) -> None:
        """Add a fill's rows, read after the log's snapshot ``state`` (``now_sql``), then
        bring the cache up to now (:meth:`_since`). Call with :attr:`lock` held."""
        if not self._adopt(state):
            return
        assert self._core.vector_dim is not None
        now = time.monotonic()
        if vectors is not None and user not in self._users:
            per_row = 4 * self._core.vector_dim
            index = self._index()
            if len(index) and not self._make_room(index, len(vectors) * per_row, per_row):
                self._turned_away[user] = now
                return
            # One append: the user's rows are one contiguous run already (ordering the whole
            # index by user here cost a copy of every cached user per user loaded).
            self._keeper.add_columns(index, vectors)
            index.index_scopes("user", [user])  # not on the user's first search
            self._users = self._users | {user}
            self._last_used[user] = now
        if user not in self._users or self.index is None:
            return
        if keyword is not None and not self.words.has(user):
            self.words.put(user, keyword)
        self._since(str(state[0]))

    def _install_many(
        self,
        users: list[str],
        state: tuple[Any, ...],
        answers: list[RowColumns],
        budget: int,
        keyword: list[Any] | None = None,
    ) -> list[str]:
        """The pass at open's :meth:`_install`: each user's rows (``answers``, in order)
        whose bytes keep the cache within ``budget`` (no user leaves for them), with their
        keyword rows (``keyword``, in the same order, where read), then one catch-up; the
        users added. Call with :attr:`lock` held."""
        if not self._adopt(state):
            return []
        assert self._core.vector_dim is not None
        per_row = 4 * self._core.vector_dim
        now = time.monotonic()
        added: list[str] = []
        words = keyword if keyword is not None else [None] * len(users)
        for user, rows, kept in zip(users, answers, words, strict=True):
            if user in self._users:
                continue
            if len(rows) < MIN_ROWS or len(rows) * per_row > MAX_BYTES // 2:
                self._not_cached.add(user)
                continue
            vector_bytes = len(rows) * per_row
            if self.index_bytes() + vector_bytes > MAX_BYTES:
                continue
            word_bytes = 0 if kept is None else kept.nbytes()
            if self._held_bytes() + vector_bytes + word_bytes > budget:
                continue
            self._keeper.add_columns(self._index(), rows)
            self._users = self._users | {user}
            self._last_used[user] = now
            if kept is not None:
                self.words.put(user, kept)
            added.append(user)
        if added:
            self._index().index_scopes("user", added)  # not on each user's first search
            self._since(str(state[0]))
        return added

    def _adopt(self, state: tuple[Any, ...]) -> bool:
        """Whether rows read after the log's snapshot ``state`` may join the cache (an empty
        cache starts at it; another store under the same name: no)."""
        snapshot, instance = str(state[0]), state[1]
        if self._snapshot is None:
            self._snapshot, self._instance = snapshot, instance
            return True
        return bool(instance == self._instance)

    def _index(self) -> VectorIndex:
        """The cache's index (made empty when there is none)."""
        if self.index is None:
            assert self._core.vector_dim is not None
            self.index = VectorIndex(self._core.vector_dim)
            self.index.graph_allowed = False  # user scopes rank exactly, as in SQL
        return self.index

    def _since(self, snapshot: str) -> None:
        """Bring the cache up to now after rows read after ``snapshot`` joined it: the
        commits since the cache's snapshot, and those since ``snapshot`` (the rows may
        have missed them); a record read twice is harmless."""
        d: Any = self._core.dialect
        t = d.tables
        changes = _log(self._core)
        olds = [self._snapshot] if snapshot == self._snapshot else [self._snapshot, snapshot]
        since = changes.since_sql(t.changes, t.meta)
        answers = d.execute_all([(since, [old] * 2) for old in olds])
        for old, rows in zip(olds, answers, strict=True):
            if self._apply(str(old), rows) is None:
                break  # the log could not tell: the cache started again

    def drop(self) -> None:
        """Forget every cached vector (not how often users were searched); fills under way
        are not installed."""
        self._epoch += 1
        self._filling = {}
        self.index = None
        self._snapshot = None
        self._users = frozenset()
        self._not_cached = set()
        self._last_used = {}
        self._turned_away = {}
        self.words.clear()
        self._caught_up_for = None

    def close(self) -> None:
        """Drop the cache and end its thread (a fill under way ends first)."""
        with self.lock:
            self._closed = True
            self.drop()
            self._searches = {}
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _catch_up(self) -> None:
        d: Any = self._core.dialect
        t = d.tables
        changes = _log(self._core)
        if self._snapshot is None or self.index is None:  # nothing cached: note where it is
            snapshot, instance, _ = d.execute(changes.now_sql(t.meta))[0]
            self._snapshot, self._instance = str(snapshot), instance
            return
        rows = d.execute(changes.since_sql(t.changes, t.meta), [self._snapshot] * 2)
        self._apply(self._snapshot, rows)

    def _apply(
        self,
        old: str,
        rows: list[tuple[Any, ...]],
        read: tuple[frozenset[str], list[tuple[Any, ...]]] | None = None,
    ) -> frozenset[int] | None:
        """Bring the cache from snapshot ``old`` to the one of ``rows`` (``since_sql``'s
        answer); the records that changed meanwhile (None: the log cannot tell, the cache
        starts again). ``read``: the changed chunks of some users, read after ``rows``
        (``changed_where``); used when those users are the cached ones."""
        self._snapshot = str(rows[0][0])
        instance, floor = rows[0][1], rows[0][2]
        if (
            instance != self._instance
            or (floor is not None and int(floor) > _log(self._core).snapshot_xmin(old))
            or any(row[4] for row in rows)
        ):
            snapshot = self._snapshot
            self.drop()  # the log cannot tell what changed
            self._snapshot, self._instance = snapshot, instance
            return None
        changed = frozenset(int(rid) for row in rows if row[3] for rid in row[3])
        if not changed:
            return changed
        index = self.index
        assert index is not None
        # Rows read at a later snapshot than the one noted: the next catch-up reads these
        # records again if they change meanwhile (reading a record twice is harmless).
        fetched = read[1] if read is not None and read[0] == self._users else None
        # A read may hold records committed after the log's answer: theirs go too.
        gone = changed if fetched is None else changed | {int(row[0]) for row in fetched}
        touched = sorted(gone)
        index.remove_array(np.asarray(touched, dtype=np.int64))
        self.words.remove(touched)  # a user whose rows mostly went is read again when asked
        listed = sorted(u for u in self._users if self.words.has(u))
        if fetched is not None:
            self._keeper.add_rows(index, fetched)
        for start in range(0, len(touched), 10_000):
            part = touched[start : start + 10_000]
            if fetched is None:
                self._keeper.load_rows(
                    index,
                    " AND c.rid = ANY(?::bigint[]) AND c.user_id = ANY(?::text[])",
                    [part, sorted(self._users)],
                )
            if listed:
                self._load_words(
                    " AND k.rid = ANY(?::bigint[]) AND k.user_id = ANY(?::text[])",
                    [part, listed],
                )
        return changed

    def _load_words(self, where: str, params: list[Any]) -> None:
        d: Any = self._core.dialect
        self.words.load(d.execute(user_words.rows_sql(d.tables.kw, where), params))

    def _make_room(self, index: VectorIndex, needed: int, per_row: int) -> bool:
        """Whether ``needed`` more bytes fit, once users idle for ``IDLE_S`` (least recently
        searched first) have left as far as that takes."""
        now = time.monotonic()
        idle = sorted(
            (used, user) for user, used in self._last_used.items() if now - used >= IDLE_S
        )
        for _, user in idle:
            if len(index) * per_row + needed <= MAX_BYTES:
                break
            index.remove_array(index.rids_of("user", user))
            self.words.forget(user)
            self._users = self._users - {user}
            del self._last_used[user]
        return len(index) * per_row + needed <= MAX_BYTES


def _yield_to_searches(stop: Callable[[], bool]) -> None:
    """Wait (at most ``PREFILL_YIELD_MAX_S``) until no search has run for
    ``PREFILL_QUIET_S``, or ``stop()``: the pass at open leaves the cores to them."""
    deadline = time.monotonic() + PREFILL_YIELD_MAX_S
    while True:
        now = time.monotonic()
        running, ended = _ACTIVITY
        if (not running and now - ended >= PREFILL_QUIET_S) or now >= deadline or stop():
            return
        time.sleep(0.001)


def _log(core: StoreCore) -> Any:
    """The engine's change log (``dialect.change_log``: PostgreSQL's, see
    ``engines/postgres/_postgres_changes``); the cache runs only where there is one
    (:meth:`UserVectors.enabled`)."""
    dialect: Any = core.dialect
    return dialect.change_log

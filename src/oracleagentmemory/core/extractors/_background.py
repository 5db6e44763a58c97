"""The bounded background queue that runs memory extraction off the caller's thread.

Jobs are keyed by thread id: one thread's jobs run one at a time, in the order they were
accepted (each feeds the next its summary and sees its memories for deduplication), while
different threads run in parallel on a small pool of worker threads. The queue is bounded;
what happens when it is full is the caller's ``BackgroundExtractionQueueFullBehavior``.

Waits follow page 001: they cover the work accepted before the wait began (on the threads
asked about, or all of them), and a failed job counts as finished.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.core._shared._end_user import bind
from oracleagentmemory.core._shared._exit_gate import (
    ProcessExiting,
    exit_wait_seconds,
    mark_worker,
    watch,
)
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    BackgroundExtractionQueueFullBehavior,
)

log = logging.getLogger("oracleagentmemory.extraction")

DEFAULT_WORKERS = 4
"""Worker threads per client (``OAM_EXTRACTION_WORKERS`` overrides)."""
DEFAULT_QUEUE_SIZE = 1024
"""Jobs waiting to start, across threads, before the queue counts as full
(``OAM_EXTRACTION_QUEUE_SIZE`` overrides)."""
IDLE_EXIT_S = 30.0
"""A worker with nothing to do for this long exits (the next job starts one again), so a
client that is dropped without ``close()`` (one per web request, say) leaves no threads."""


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


def configured_workers() -> int:
    """Worker count from ``OAM_EXTRACTION_WORKERS`` (default :data:`DEFAULT_WORKERS`)."""
    return _env_int("OAM_EXTRACTION_WORKERS", DEFAULT_WORKERS)


def configured_queue_size() -> int:
    """Queue capacity from ``OAM_EXTRACTION_QUEUE_SIZE`` (default :data:`DEFAULT_QUEUE_SIZE`)."""
    return _env_int("OAM_EXTRACTION_QUEUE_SIZE", DEFAULT_QUEUE_SIZE)


_EXITED = "exited"
"""What :func:`_run_job` returns for a job cut short by the process exiting (not a failure:
it stays recorded in the store, unchanged)."""


def _run_job(run: Callable[[], None], key: str) -> str | None:
    """Run one job; None when it finished, else the failure as one line (logged once; the job
    itself keeps what must be retried in the store; the traceback only at DEBUG)."""
    try:
        run()
    except ProcessExiting:
        log.debug("background memory extraction for thread %r stopped: the process exits", key)
        return _EXITED
    except BaseException as exc:  # never let a job kill its worker
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("background memory extraction for thread %r failed: %s", key, reason)
        log.debug("background memory extraction for thread %r failed", key, exc_info=True)
        return reason
    return None


MAX_KEPT_FAILURES = 100
"""Failures a :class:`FailureBook` keeps until a raising wait takes them (the oldest are
forgotten)."""


class MemoryExtractionError(RuntimeError):
    """Extraction work that a ``wait_for_memory_extraction(raise_on_failure=True)`` waited for
    failed. ``failures`` holds ``(thread_id, reason)`` pairs; the messages stay stored."""

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        shown = "; ".join(f"thread {key!r}: {reason}" for key, reason in failures[:3])
        more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
        super().__init__(f"{len(failures)} memory extraction job(s) failed: {shown}{more}")


class FailureBook:
    """The failures not yet reported by a raising wait, per thread (bounded, thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque[tuple[str, str]] = deque(maxlen=MAX_KEPT_FAILURES)
        self.last: str | None = None

    def add(self, key: str, reason: str) -> None:
        with self._lock:
            self._items.append((key, reason))
            self.last = f"thread {key!r}: {reason}"

    def take(self, keys: Iterable[str] | None) -> list[tuple[str, str]]:
        """Remove and return the failures of ``keys`` (None: all)."""
        wanted = None if keys is None else set(keys)
        with self._lock:
            taken = [f for f in self._items if wanted is None or f[0] in wanted]
            if taken:
                self._items = deque(
                    (f for f in self._items if f not in taken), maxlen=MAX_KEPT_FAILURES
                )
            return taken


@dataclass(frozen=True)
class MemoryExtractionStats:
    """Counters of one client's background memory extraction since it was created.

    ``accepted`` = ``completed`` + ``failed`` + ``queued`` + ``running`` for background jobs
    (``completed`` and ``failed`` also count INLINE jobs); ``dropped`` jobs were never
    accepted (queue full with DROP / WAIT_THEN_DROP); ``rejected`` ones raised TimeoutError
    (WAIT_THEN_RAISE); ``resumed`` jobs were left by a process that died and accepted again
    by this client. ``memories`` were stored; ``duplicates`` were extracted but restated a
    stored memory, so only their provenance was added to it. ``links`` were created
    automatically between memories, and ``invalidated`` memories were superseded or
    duplicated by them; ``captions`` are image descriptions written by the LLM.
    ``last_failure`` says what went wrong last.
    """

    accepted: int = 0
    completed: int = 0
    failed: int = 0
    dropped: int = 0
    rejected: int = 0
    resumed: int = 0
    queued: int = 0
    running: int = 0
    memories: int = 0
    duplicates: int = 0
    links: int = 0
    invalidated: int = 0
    captions: int = 0
    last_failure: str | None = None
    """The latest failure, ``thread 'ID': Type: message`` (None: none so far)."""


@dataclass
class _Job:
    key: str
    run: Callable[[], None]
    owners: tuple[str | None, str | None]
    seq: int = 0


class BackgroundQueue:
    """A bounded, per-key ordered job queue served by daemon worker threads.

    Workers start with the first job and exit after ``IDLE_EXIT_S`` idle. Daemon threads never
    keep a process alive: when the interpreter exits, the exit hook
    (``core._shared._exit_gate``) has the workers start no new job and waits a bounded time for
    the running ones; work that has not run stays recorded in the store and is resumed later.
    ``inline``: every job runs in the submitting thread, before ``submit`` returns (a store
    working through its caller's connection: nothing may outlive the caller's call). A failed
    job logs one line (the traceback only at DEBUG).
    """

    def __init__(
        self, workers: int, capacity: int, name: str = "oam-extraction", *, inline: bool = False
    ) -> None:
        self.inline = inline
        exit_wait_seconds()  # a bad OAM_EXIT_WAIT_SECONDS fails here, not at exit
        self._workers_wanted = workers
        self._capacity = capacity
        self._name = name
        self._cond = threading.Condition()
        self._queues: dict[str, deque[_Job]] = {}
        self._ready: deque[str] = deque()
        self._running: set[str] = set()
        self._accepted_seq: dict[str, int] = {}
        self._done_seq: dict[str, int] = {}
        self._owners: dict[str, tuple[str | None, str | None]] = {}
        self._queued = 0
        self._seq = 0
        self._threads: list[threading.Thread] = []
        self._idle = 0
        """Workers waiting for a ready key (or about to start)."""
        self._accepting = True
        self._stopping = False
        self.failures = FailureBook()
        self._stats: dict[str, int] = dict.fromkeys(
            ("accepted", "completed", "failed", "dropped", "rejected", "resumed"), 0
        )
        if not inline:
            watch(self)

    # ------------------------------------------------------------------ submit

    def submit(
        self,
        key: str,
        run: Callable[[], None],
        *,
        owners: tuple[str | None, str | None] = (None, None),
        behavior: BackgroundExtractionQueueFullBehavior = (
            BackgroundExtractionQueueFullBehavior.DROP
        ),
        timeout: float = 300.0,
        resumed: bool = False,
    ) -> bool:
        """Queue ``run`` for thread ``key``; True when accepted.

        When the queue is full: DROP gives up at once, WAIT_THEN_DROP after ``timeout``
        seconds (both log a warning and return False), WAIT_THEN_RAISE raises TimeoutError
        after ``timeout``. RuntimeError once the queue is closed.
        """
        run = bind(run)  # it finishes as the end user it was accepted for (core._shared._end_user)
        if self.inline:
            return self._run_now(key, run, owners, resumed)
        with self._cond:
            if not self._accepting:
                raise RuntimeError("background memory extraction is closed")
            if self._queued >= self._capacity:
                if behavior is not BackgroundExtractionQueueFullBehavior.DROP:
                    deadline = time.monotonic() + timeout
                    while self._queued >= self._capacity and self._accepting:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        self._cond.wait(left)
                    if not self._accepting:
                        raise RuntimeError("background memory extraction is closed")
                if self._queued >= self._capacity:
                    if behavior is BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE:
                        self._stats["rejected"] += 1
                        raise TimeoutError(
                            f"the background extraction queue stayed full ({self._capacity} "
                            f"jobs) for {timeout} s; the messages are stored, but no memories "
                            "will be extracted from them"
                        )
                    self._stats["dropped"] += 1
                    log.warning(
                        "background extraction queue full (%d jobs): extraction for thread "
                        "%r dropped (%s)",
                        self._capacity,
                        key,
                        behavior.value,
                    )
                    return False
            self._seq += 1
            job = _Job(key, run, owners, self._seq)
            self._queues.setdefault(key, deque()).append(job)
            self._accepted_seq[key] = job.seq
            self._owners[key] = owners
            self._queued += 1
            self._stats["accepted"] += 1
            if resumed:
                self._stats["resumed"] += 1
            if key not in self._running and len(self._queues[key]) == 1:
                self._ready.append(key)
            self._start_workers()
            self._cond.notify_all()
        return True

    def _run_now(
        self,
        key: str,
        run: Callable[[], None],
        owners: tuple[str | None, str | None],
        resumed: bool,
    ) -> bool:
        """Run one job in the caller's thread (``inline``), counted as a background one."""
        with self._cond:
            if not self._accepting:
                raise RuntimeError("background memory extraction is closed")
            self._seq += 1
            seq = self._seq
            self._accepted_seq[key] = seq
            self._owners[key] = owners
            self._stats["accepted"] += 1
            if resumed:
                self._stats["resumed"] += 1
            self._running.add(key)
        failure = _run_job(run, key)
        with self._cond:
            self._note(key, failure)
            self._running.discard(key)
            self._done_seq[key] = seq
            self._cond.notify_all()
        return True

    def _note(self, key: str, failure: str | None) -> None:
        """Under the lock: count a finished job, and keep its failure."""
        if failure is _EXITED:
            return  # neither done nor failed: it stays in the store for the next process
        self._stats["completed" if failure is None else "failed"] += 1
        if failure is not None:
            self.failures.add(key, failure)

    def _start_workers(self) -> None:
        """Under the lock: start workers until every ready key has an idle one (at most
        ``workers`` in all)."""
        self._threads = [t for t in self._threads if t.is_alive()]
        missing = len(self._ready) - self._idle
        while missing > 0 and len(self._threads) < self._workers_wanted:
            thread = threading.Thread(
                target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            self._idle += 1  # it will take a ready key as soon as it runs
            missing -= 1
            thread.start()

    # ------------------------------------------------------------------ workers

    def _work(self) -> None:
        me = threading.current_thread()
        mark_worker()
        while True:
            with self._cond:  # this worker counts as idle here (see _start_workers)
                idle_since = time.monotonic()
                while not self._ready and not self._stopping:
                    left = IDLE_EXIT_S - (time.monotonic() - idle_since)
                    if left <= 0:
                        self._threads = [t for t in self._threads if t is not me]
                        self._idle -= 1
                        return
                    self._cond.wait(left)
                self._idle -= 1
                if self._stopping:
                    return
                key = self._ready.popleft()
                job = self._queues[key].popleft()
                self._queued -= 1
                self._running.add(key)
                self._cond.notify_all()  # capacity freed
            failure = _run_job(job.run, key)
            with self._cond:
                self._idle += 1
                self._note(key, failure)
                self._running.discard(key)
                self._done_seq[key] = job.seq
                if self._queues[key]:
                    self._ready.append(key)
                else:
                    del self._queues[key]
                self._cond.notify_all()

    # ------------------------------------------------------------------ waits

    def _targets(self, keys: Iterable[str] | None) -> dict[str, int]:
        chosen = self._accepted_seq if keys is None else {k: None for k in keys}
        out = {}
        for key in chosen:
            accepted = self._accepted_seq.get(key, 0)
            if accepted > self._done_seq.get(key, 0):
                out[key] = accepted
        return out

    def wait(self, keys: Iterable[str] | None = None, timeout: float | None = None) -> bool:
        """Wait until the jobs accepted so far (for ``keys``, or all) have finished; True
        when they have, False when ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            targets = self._targets(keys)
            while any(self._done_seq.get(k, 0) < seq for k, seq in targets.items()):
                if self._stopping and not self._threads_alive():
                    return False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def has_work(self, key: str) -> bool:
        """Whether thread ``key`` has accepted work that has not finished."""
        with self._cond:
            return self._accepted_seq.get(key, 0) > self._done_seq.get(key, 0)

    def keys_owned_by(self, *, user_id: Any = None, agent_id: Any = None) -> list[str]:
        """Thread ids with accepted work whose owner is this user (or agent)."""
        with self._cond:
            return [
                key
                for key, (user, agent) in self._owners.items()
                if (user_id is not None and user == user_id)
                or (agent_id is not None and agent == agent_id)
            ]

    def _threads_alive(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    # ------------------------------------------------------------------ lifecycle

    def close(self, timeout: float | None) -> bool:
        """Stop accepting work, wait up to ``timeout`` for what was accepted, then stop the
        workers (a job already running finishes in the background). True when drained."""
        with self._cond:
            self._accepting = False
            self._cond.notify_all()
        drained = self.wait(None, timeout)
        with self._cond:
            self._stopping = True
            abandoned = self._queued
            self._cond.notify_all()
        if abandoned:
            log.warning(
                "closing with %d extraction job(s) not started: they stay recorded in the "
                "store and resume when a client with an LLM next opens it",
                abandoned,
            )
        return drained

    def stop_taking_jobs(self) -> int:
        """At exit: workers start no further job; returns how many jobs stay queued (they
        are recorded in the store and resumed by the next client with an LLM)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            return self._queued

    def wait_running(self, deadline: float) -> int:
        """Wait until no job runs or ``time.monotonic()`` reaches ``deadline``; returns how
        many still run."""
        with self._cond:
            while self._running and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
            return len(self._running)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return not self._accepting

    def stats(self) -> MemoryExtractionStats:
        """A snapshot of the counters."""
        with self._cond:
            return MemoryExtractionStats(
                **self._stats,
                queued=self._queued,
                running=len(self._running),
                last_failure=self.failures.last,
            )

"""Group commit: writes queued by several threads of one process share one transaction.

Each ``add`` plans its rows first (outside any lock), queues a :class:`WriteJob`, then takes
the store's lock. Whoever holds the lock runs every queued job in ONE transaction, each job
inside its own savepoint (a job that fails is rolled back alone and gets its own error),
and marks them done; a thread whose job another thread ran just collects the result. Many
writer threads then pay for one commit, one change-log entry and one hand-off of the
database's write lock per group instead of per call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class WriteJob:
    """One planned write (records, relations, follow-up statements) waiting for its turn."""

    planned: list[Any]
    links: list[Any]
    batch_size: int
    require_thread: str | None
    also: Callable[[], Any] | None = None
    """Runs inside the transaction after the job's inserts (its result is kept)."""
    beside_others: bool = False
    """Whether ``also`` may run beside other writers' plain inserts (it touches only rows
    of the job's own message thread, whose mark row the insert keeps locked); a job
    without ``also`` always may."""
    who: str | None = None
    """The end user the job runs as (``core._shared._end_user``): a group holds one user's jobs."""
    actor: str | None = None
    """Who asked for the write (``core._shared._actor``), for the history of what it links."""
    owner: Any = None
    """The writer that queued the job (a shared queue holds several writers' jobs)."""
    result: Any = None
    index_rows: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class JobQueue:
    """Jobs waiting for the thread that holds the store's lock."""

    def __init__(self) -> None:
        self._jobs: list[WriteJob] = []
        self._mutex = threading.Lock()

    def put(self, job: WriteJob) -> None:
        with self._mutex:
            self._jobs.append(job)

    def take_all(self) -> list[WriteJob]:
        with self._mutex:
            jobs, self._jobs = self._jobs, []
        return jobs

    def take(self, keep: Callable[[WriteJob], bool]) -> list[WriteJob]:
        """The queued jobs ``keep`` accepts; the others stay queued, in order."""
        with self._mutex:
            taken = [j for j in self._jobs if keep(j)]
            self._jobs = [j for j in self._jobs if not keep(j)]
        return taken


_shared: dict[Any, tuple[threading.Lock, JobQueue]] = {}
_shared_mutex = threading.Lock()


def shared_queue(key: Any) -> tuple[threading.Lock, JobQueue]:
    """The (leader lock, queue) every writer of this process passing ``key`` uses."""
    with _shared_mutex:
        found = _shared.get(key)
        if found is None:
            found = _shared[key] = (threading.Lock(), JobQueue())
        return found

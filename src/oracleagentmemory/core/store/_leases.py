"""Leases on pending extraction work: who runs a stored job, and for how long.

A pending job (``<prefix>_pending``) is held by its ``owner`` until ``lease_until``, a time
on the **database's** clock (``Dialect.NOW_S``; clients' clocks are never compared across
nodes). The process running or queueing a job renews its lease every third of the lease
(:class:`Heartbeat`); a process that dies or freezes stops renewing, and once the lease has
run out any running node with an LLM client takes the job over (the claim is one
compare-and-set on owner and expiry, so two nodes never both take it). Hostnames play no
part: an owner is a random token per process (plus its host and pid, for people reading
the table).

Exactly once: the job's result is written in one transaction that also deletes its pending
row *only while this process still owns it* (the fence, ``ExtractionBook.commit_extraction``);
a frozen node that wakes up after losing its lease writes nothing.

Rows written before leases existed (schema 14 gives them one lease from the upgrade) carry
the old ``host:pid:start`` owner: one of this host whose process is gone is taken over at
once, as before.

``OAM_JOB_LEASE_SECONDS`` (default 15) sets the lease; a dead node's jobs are taken over
within about one lease plus one poll (a third of a lease).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Final

log = logging.getLogger("oracleagentmemory.extraction")

LEASE_ENV: Final = "OAM_JOB_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS: Final = 15.0
LEASE_PREFIX: Final = "lease:"


def lease_seconds() -> float:
    """The lease of a pending job, in seconds (``OAM_JOB_LEASE_SECONDS``, at least 0.5)."""
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return DEFAULT_LEASE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        log.warning("%s=%r is not a number; using %s", LEASE_ENV, raw, DEFAULT_LEASE_SECONDS)
        return DEFAULT_LEASE_SECONDS
    return max(0.5, value)


_TOKEN: tuple[int, str] | None = None
_TOKEN_LOCK = threading.Lock()


def process_owner() -> str:
    """This process, as recorded in ``owner`` of pending work: a random token made once per
    process (a forked child makes its own), then host and pid for people reading it."""
    global _TOKEN
    pid = os.getpid()
    with _TOKEN_LOCK:
        if _TOKEN is None or _TOKEN[0] != pid:
            _TOKEN = (pid, f"{LEASE_PREFIX}{secrets.token_hex(8)}:{socket.gethostname()}:{pid}")
        return _TOKEN[1]


def is_leased_owner(owner: str | None) -> bool:
    """Whether ``owner`` is a lease holder's token (not an owner from before leases)."""
    return bool(owner) and str(owner).startswith(LEASE_PREFIX)


def owner_is_alive(owner: str | None) -> bool:
    """Whether the process that owns a pending row may still run it, as far as this process
    can tell without the lease.

    This process is alive. A lease holder's token says nothing more: its lease decides (so
    True here). An owner from before leases (``host:pid:start``) of this host is alive while
    that pid exists; one of another host is presumed alive (its lease from the upgrade
    decides)."""
    if not owner:
        return False
    if owner == process_owner() or is_leased_owner(owner):
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname():
        return True
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False  # an earlier incarnation with our pid (pid reuse): dead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------- jobs of this process

_ACTIVE: set[str] = set()
"""Ids of the pending jobs some client of this process has queued or is running (their
leases are renewed). A job this process owns that is not here was orphaned (its client was
dropped, or its run failed with the database out of reach): the next poll may take it over."""
_ACTIVE_LOCK = threading.Lock()


def activate(work_id: str) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE.add(work_id)


def deactivate(work_id: str) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE.discard(work_id)


def try_activate(work_id: str) -> bool:
    """Mark a job as held by this process unless it already is (one client of this process
    takes it over, never two); whether this call marked it."""
    with _ACTIVE_LOCK:
        if work_id in _ACTIVE:
            return False
        _ACTIVE.add(work_id)
        return True


def is_active(work_id: str) -> bool:
    with _ACTIVE_LOCK:
        return work_id in _ACTIVE


def active_ids() -> list[str]:
    with _ACTIVE_LOCK:
        return sorted(_ACTIVE)


def takeover(
    owner: str | None, work_id: str, lease_expired: bool, me: str, *, opening: bool = False
) -> bool | None:
    """Whether nothing will run a stored job unless this process takes it over: None when it
    may be taken at once (this process's own, queued nowhere; an owner from before leases
    on this host whose process is gone; or, when a client is ``opening``, a lease holder of
    this host whose pid is gone: a restart resumes at once), True once its owner's lease ran
    out (take it only while still so), False otherwise. The periodic poll never judges a
    lease holder by host and pid (containers may share a hostname, not their pids)."""
    if owner == me:
        return None if not is_active(work_id) else False
    if not is_leased_owner(owner) and not owner_is_alive(owner):
        return None
    if opening and owner and is_leased_owner(owner):
        host, _, pid = owner[len(LEASE_PREFIX) :].partition(":")[2].rpartition(":")
        if not owner_is_alive(f"{host}:{pid}:0"):
            return None
    return lease_expired


class Heartbeat:
    """A daemon thread that calls ``beat`` every ``period`` seconds until stopped (renewing
    this process's leases, taking over expired ones); an error is logged, the beat goes on."""

    def __init__(self, beat: Callable[[], None], period: float, name: str) -> None:
        self._beat = beat
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        _stop_at_exit(self)
        self._thread.start()

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(self._period):
            started = time.monotonic()
            try:
                self._beat()
                failing = False
            except Exception as exc:  # the database out of reach: try again next beat
                log.log(
                    logging.DEBUG if failing else logging.WARNING,
                    "extraction lease heartbeat failed: %s: %s",
                    type(exc).__name__,
                    exc,
                )
                failing = True
            if time.monotonic() - started > self._period:
                log.debug("extraction lease heartbeat took longer than its period")

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._period + 5)


class LeaseLost(RuntimeError):
    """A job's result was not written: this process no longer holds the job's lease (it was
    taken over, or finished by the node that took it over)."""

    def __init__(self, work_id: str) -> None:
        super().__init__(f"extraction job {work_id} is no longer held by this process")
        self.work_id = work_id


_BEATING: weakref.WeakSet[Heartbeat] = weakref.WeakSet()
_HOOKED = False


def _stop_all() -> None:
    for beat in list(_BEATING):
        beat._stop.set()


def _stop_at_exit(beat: Heartbeat) -> None:
    """Stop every heartbeat when the interpreter exits (before daemon threads would beat on
    closed pools); the leases then run out and a running node takes the jobs over."""
    global _HOOKED
    with _TOKEN_LOCK:
        _BEATING.add(beat)
        if _HOOKED:
            return
        _HOOKED = True
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(_stop_all)
    except RuntimeError:  # already exiting
        pass


class LeaseKeeper:
    """One extraction client's heartbeat on a store, started at most once: every third of a
    lease it renews the leases this process holds (the jobs queued or running here) and,
    while ``polling``, has the client take over the jobs whose lease ran out
    (``client.resume()``). It stops with the client (closed, or garbage-collected)."""

    def __init__(self, store: Any, owner: str, client: Any) -> None:
        self._store = store
        self._owner = owner
        self._client = weakref.ref(client)
        self._heartbeat: Heartbeat | None = None
        self._lock = threading.Lock()
        self.polling = False

    def start(self) -> None:
        with self._lock:
            if self._heartbeat is not None:
                return
            self._heartbeat = Heartbeat(self._beat, lease_seconds() / 3, "oam-extraction-lease")
        self._heartbeat.start()

    def _beat(self) -> None:
        client = self._client()
        core = getattr(self._store, "_core", None)
        if client is None or client.closed or getattr(core, "closed", False):
            if self._heartbeat is not None:
                self._heartbeat.stop()  # the client or its store is gone: so is the beat
            return
        ids = active_ids()
        if ids:
            self._store.renew_pending_leases(self._owner, ids)
        if self.polling:
            client.resume()

    def stop(self) -> None:
        with self._lock:
            beat = self._heartbeat
        if beat is not None:
            beat.stop()

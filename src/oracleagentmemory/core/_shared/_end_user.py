"""Which end user the store's database statements run as (``core.deepsec``'s context).

An end-user scope is a context variable: :class:`~.deepsec.OracleMemoryEndUserSecurityContext`
sets it for a ``with`` block, asynchronous calls awaited inside inherit it, and the
PostgreSQL store reads :func:`current_end_user` whenever it starts a transaction (it then
runs ``SET LOCAL ROLE``, so the identity ends with that transaction and never stays on a
pooled connection). A scope is closed when its block exits: a task that copied the variable
and outlives the block fails with RuntimeError instead of running as nobody, or as someone.
Background work accepted inside a block (memory extraction, the approximate index) keeps a
snapshot of its identity (:func:`bind`), so it finishes as the user it was accepted for.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


class Scope:
    """One entry of an end-user context: the role name, open until its block exits."""

    __slots__ = ("open", "username")

    def __init__(self, username: str) -> None:
        self.username = username
        self.open = True


_ACTIVE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar(
    "oracleagentmemory_end_user", default=None
)


def current_end_user() -> str | None:
    """The end user statements run as now (None: the connection's own role); RuntimeError
    when the scope this task inherited has ended."""
    scope = _ACTIVE.get()
    if scope is None:
        return None
    if not scope.open:
        raise RuntimeError(
            f"the end-user security context for {scope.username!r} has ended: this task "
            "outlived the `with OracleMemoryEndUserSecurityContext(...)` block it was "
            "started in; enter a new one"
        )
    return scope.username


def enter(username: str) -> contextvars.Token[Scope | None]:
    """Start a scope for ``username``; the token ends it (:func:`leave`)."""
    return _ACTIVE.set(Scope(username))


def leave(token: contextvars.Token[Scope | None]) -> None:
    """End the scope ``token`` started, and restore the one before it."""
    scope = _ACTIVE.get()
    if scope is not None:
        scope.open = False
    _ACTIVE.reset(token)


@contextmanager
def running_as(username: str | None) -> Iterator[None]:
    """Inside: statements run as ``username`` (None: as the connection's own role)."""
    token = _ACTIVE.set(Scope(username) if username is not None else None)
    try:
        yield
    finally:
        leave(token)


def bind(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` to run later, elsewhere (another thread), as the end user of now."""
    username = current_end_user()
    if username is None:
        return fn

    def run_as() -> T:
        with running_as(username):
            return fn()

    return run_as


def refuse_without_roles(engine: str) -> None:
    """For an engine without database roles: NotImplementedError inside an end-user scope
    (its statements cannot run as that user, and running them as anyone else would leak)."""
    username = current_end_user()
    if username is not None:
        raise NotImplementedError(
            f"an end-user security context (running as {username!r}) needs PostgreSQL: "
            f"{engine} has no database roles, so its rows cannot be kept from other users "
            "by the database; use a PostgreSQL store (docs/operations/row-security.md)"
        )

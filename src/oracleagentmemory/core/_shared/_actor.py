"""Who is making a change: the actor a memory's history records (``schema/_history``).

A context variable, like the end user (``_end_user``): the REST server sets it for each
request of an API key (``"user:<id>"``, or ``"key:<key id>"`` for an admin key or a key of
several users), the extraction service for each job (``"extraction:<job id>"``), the client
for a write that names an agent (``"agent:<id>"``) when nothing outer set one. The store
reads :func:`current_actor` when a write is accepted (before a group commit hands it to
another thread), so each version names the caller that asked for it."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

_ACTOR: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "oracleagentmemory_actor", default=None
)


def current_actor() -> str | None:
    """The actor of the changes made now (None: not known)."""
    return _ACTOR.get()


@contextmanager
def acting_as(actor: str | None, *, keep_outer: bool = False) -> Iterator[None]:
    """Inside: changes are made by ``actor``. ``keep_outer``: an actor set by an outer
    block wins (the client's fallback never hides the REST key's user)."""
    if actor is None or (keep_outer and _ACTOR.get() is not None):
        yield
        return
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)

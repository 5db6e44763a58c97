"""Scope resolution for every search layer (page 002's table), in one place.

Each layer turns what the caller gave (an id, ``None``, or omitted; an exact flag or omitted;
or a ``SearchScope``) into the store's plain arguments: ``*_id`` plus ``exact_*_match``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.searchscope import SearchScope

_DIMS = ("user", "agent", "thread")


@dataclass(frozen=True)
class ResolvedScope:
    """Store-level scope arguments."""

    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    exact_user_match: bool
    exact_agent_match: bool
    exact_thread_match: bool

    def store_kwargs(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "thread_id": self.thread_id,
            "exact_user_match": self.exact_user_match,
            "exact_agent_match": self.exact_agent_match,
            "exact_thread_match": self.exact_thread_match,
        }


def _given(
    scope: Any, ids: dict[str, Any], flags: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Merge a ``scope=`` object with the individual arguments (which may not both be set)."""
    if scope is NOT_SET_MARKER or scope is None:
        return ids, flags
    if not isinstance(scope, SearchScope):
        raise TypeError("scope must be a SearchScope")
    explicit = [f"{d}_id" for d in _DIMS if ids[d] is not NOT_SET_MARKER] + [
        f"exact_{d}_match" for d in _DIMS if flags[d] is not NOT_SET_MARKER
    ]
    if explicit:
        raise ValueError(f"give scope or {', '.join(explicit)}, not both")
    return (
        {d: getattr(scope, f"{d}_id") for d in _DIMS},
        {d: getattr(scope, f"exact_{d}_match") for d in _DIMS},
    )


def _check(ids: dict[str, Any], flags: dict[str, Any]) -> None:
    for d in _DIMS:
        value, flag = ids[d], flags[d]
        if value is not NOT_SET_MARKER and value is not None and not isinstance(value, str):
            raise TypeError(f"{d}_id must be a string or None")
        if flag is not NOT_SET_MARKER and not isinstance(flag, bool):
            raise TypeError(f"exact_{d}_match must be a bool")


def resolve_client_scope(
    *,
    user_id: Any,
    agent_id: Any,
    thread_id: Any,
    exact_user_match: Any,
    exact_agent_match: Any,
    exact_thread_match: Any,
    scope: Any = NOT_SET_MARKER,
) -> ResolvedScope:
    """``OracleAgentMemory.search``: an explicit, exact user scope is required; omitted agent
    and thread stay broad; an explicit id with its flag omitted is matched exactly."""
    ids, flags = _given(
        scope,
        {"user": user_id, "agent": agent_id, "thread": thread_id},
        {"user": exact_user_match, "agent": exact_agent_match, "thread": exact_thread_match},
    )
    _check(ids, flags)
    if ids["user"] is NOT_SET_MARKER:
        raise ValueError(
            "user_id is required: client search needs an explicit user scope "
            "(pass user_id=None with exact_user_match=True for records without a user)"
        )
    if flags["user"] is False:
        raise ValueError(
            "exact_user_match=False is not allowed: client search needs an exact user scope"
        )
    out: dict[str, Any] = {"user": (ids["user"], True)}
    for d in ("agent", "thread"):
        if ids[d] is NOT_SET_MARKER:
            out[d] = (None, False)
        else:
            out[d] = (ids[d], True if flags[d] is NOT_SET_MARKER else flags[d])
    return _resolved(out)


def resolve_thread_scope(
    *,
    thread_user_id: str | None,
    thread_agent_id: str | None,
    current_thread_id: str,
    user_id: Any,
    agent_id: Any,
    thread_id: Any,
    exact_user_match: Any,
    exact_agent_match: Any,
    exact_thread_match: Any,
    scope: Any = NOT_SET_MARKER,
) -> ResolvedScope:
    """``OracleThread.search``: omitted ids take the thread's defaults (exact user and agent,
    the current thread preferred but not required); explicit values follow their flags
    (omitted flag = exact)."""
    ids, flags = _given(
        scope,
        {"user": user_id, "agent": agent_id, "thread": thread_id},
        {"user": exact_user_match, "agent": exact_agent_match, "thread": exact_thread_match},
    )
    _check(ids, flags)
    defaults = {
        "user": (thread_user_id, True),
        "agent": (thread_agent_id, True),
        "thread": (current_thread_id, False),
    }
    out: dict[str, Any] = {}
    for d in _DIMS:
        if ids[d] is NOT_SET_MARKER:
            value, exact = defaults[d]
            out[d] = (value, exact if flags[d] is NOT_SET_MARKER else flags[d])
        else:
            out[d] = (ids[d], True if flags[d] is NOT_SET_MARKER else flags[d])
    return _resolved(out)


def _resolved(out: dict[str, tuple[str | None, bool]]) -> ResolvedScope:
    return ResolvedScope(
        user_id=out["user"][0],
        agent_id=out["agent"][0],
        thread_id=out["thread"][0],
        exact_user_match=out["user"][1],
        exact_agent_match=out["agent"][1],
        exact_thread_match=out["thread"][1],
    )


def in_thread(record: Any, thread_id: str, owner: str | None) -> bool:
    """Whether ``record`` belongs to thread ``thread_id`` owned by user ``owner``: it names the
    thread and is the owner's or user-less (the rule the store's thread reads follow)."""
    return getattr(record, "thread_id", None) == thread_id and getattr(record, "user_id", None) in (
        None,
        owner,
    )

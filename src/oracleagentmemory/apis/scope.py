"""Scope of an insertion or a search: user, agent and thread identifiers."""

from __future__ import annotations

from dataclasses import dataclass

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet


@dataclass
class Scope:
    """User, agent and thread identifiers.

    ``NOT_SET_MARKER`` means omitted (the operation's default applies); an explicit ``None``
    means "not scoped in this dimension".
    """

    user_id: str | NotSet | None = NOT_SET_MARKER
    agent_id: str | NotSet | None = NOT_SET_MARKER
    thread_id: str | NotSet | None = NOT_SET_MARKER

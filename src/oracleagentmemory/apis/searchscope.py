"""Scope of a search query, with per-dimension exact-match flags."""

from __future__ import annotations

from dataclasses import dataclass

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.scope import Scope


@dataclass
class SearchScope(Scope):
    """A :class:`Scope` plus ``exact_*_match`` flags.

    An exact flag resolved to True filters that dimension to the given id (``None`` = unscoped
    records only); False leaves the dimension unfiltered, ranking matching records higher.
    """

    exact_user_match: bool | NotSet = NOT_SET_MARKER
    exact_agent_match: bool | NotSet = NOT_SET_MARKER
    exact_thread_match: bool | NotSet = NOT_SET_MARKER

"""What every ranked search applies, whichever branch ranks: scope, types, expiry, filter.

:class:`ScopeSpec` resolves the search's scope arguments once: a dimension with
``exact_*_match=True`` filters exactly (``None`` = unscoped rows only), one given without it
only prefers matching rows (a small distance penalty for the others, see
``_vector_index.PREFERENCE_PENALTY``). The SQL conditions here are shared by the keyword
branch, the engine-side vector branch and the filter checks of the in-process one.
"""

from __future__ import annotations

import builtins
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core.store._dialect import Dialect
from oracleagentmemory.core.store._store_core import NOT_EXPIRED
from oracleagentmemory.core.store.schema._planning import (
    DEFAULT_SEARCH_TYPES,
    SEARCHABLE_FAMILIES,
    check_scope_id,
    family_of,
)
from oracleagentmemory.core.store.schema._validity import as_of_sql
from oracleagentmemory.core.store.vectors._vector_index import PREFERENCE_PENALTY


@dataclass(frozen=True)
class ScopeSpec:
    """Resolved search scope: dimensions filtered exactly, and dimensions only preferred;
    ``as_of`` (epoch seconds): only records true then (``schema/_validity``)."""

    exact: dict[str, str | None]
    prefer: dict[str, str | None]
    as_of: float | None = None

    @classmethod
    def resolve(
        cls,
        thread_id: Any,
        user_id: Any,
        agent_id: Any,
        exact_user_match: Any,
        exact_agent_match: Any,
        exact_thread_match: Any,
    ) -> ScopeSpec:
        exact: dict[str, str | None] = {}
        prefer: dict[str, str | None] = {}
        for dim, value, flag in (
            ("user", user_id, exact_user_match),
            ("agent", agent_id, exact_agent_match),
            ("thread", thread_id, exact_thread_match),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"exact_{dim}_match must be a bool")
            value = check_scope_id(value, f"{dim}_id")
            if flag:
                exact[dim] = value
            elif value is not None:
                prefer[dim] = value
        return cls(exact, prefer)


MOST_TYPES = frozenset(("message", *MEMORY_RECORD_TYPES))
"""Types whose chunks are nearly all of a user's (messages and memories): a search asking for
all of them reads the user's whole range (see :func:`chunk_types_sql`)."""


def chunk_types_sql(column: str, types: builtins.list[str]) -> str:
    """The condition that ``column`` (a chunk's record type) is one of ``types`` (``?`` each,
    in order), for a ranking over one user's chunks read through the (user, type) index.

    As an index condition PostgreSQL 16 descends the index once per type (seven for the
    default types); when ``types`` hold messages and every memory type, nearly every chunk
    of the user qualifies, so the condition is checked on the rows of the user's range
    instead (``IS TRUE`` keeps it out of the index condition): at 500 chunks a user, 128
    pages read instead of 146 and 0.37 ms of the server's time instead of 0.57. A narrower
    set (memories only, one type) keeps the index condition: it skips the other rows."""
    marks = ",".join("?" * len(types))
    if set(types) >= MOST_TYPES:
        return f"({column} IN ({marks})) IS TRUE"
    return f"{column} IN ({marks})"


def search_types(record_types: Any) -> builtins.list[str]:
    """The record types a search ranks (None: the default searchable ones)."""
    if record_types is None:
        return builtins.list(DEFAULT_SEARCH_TYPES)
    if isinstance(record_types, str) or not isinstance(record_types, Iterable):
        raise TypeError("record_types must be a set of record type names or None")
    types = builtins.list(dict.fromkeys(record_types))
    for t in types:
        if family_of(t, "record_types") not in SEARCHABLE_FAMILIES:
            raise ValueError(f"record_types: {t!r} records are not searchable")
    if not types:
        raise ValueError("record_types must not be empty")
    return types


def same_as(column: str, value: str | None) -> tuple[str, builtins.list[Any]]:
    """``column`` equal to ``value`` (NULL for None), written so that an index on
    ``column`` serves it: ``= ?`` or ``IS NULL`` (PostgreSQL's null-safe operator uses no
    index)."""
    return (f"{column} IS NULL", []) if value is None else (f"{column} = ?", [value])


def exact_sql(exact: Mapping[str, str | None]) -> tuple[builtins.list[str], builtins.list[Any]]:
    """Conditions (over records ``r``) of exact scope dimensions (``{"user": id, ...}``)."""
    conds, params = [], []
    for dim, value in exact.items():
        cond, more = same_as(f"r.{dim}_id", value)
        conds.append(cond)
        params += more
    return conds, params


def scope_sql(dialect: Dialect, scope: ScopeSpec) -> tuple[builtins.list[str], builtins.list[Any]]:
    """Conditions (over records ``r``) of the exact scope dimensions (not ``as_of``:
    :func:`search_conditions` adds it, the cached filter masks never hold it)."""
    return exact_sql(scope.exact)


def preference_penalties(dialect: Dialect, scope: ScopeSpec) -> builtins.list[str]:
    """One SQL term (over records ``r``) per preferred dimension: 0 for a record that has
    the preferred id, ``PREFERENCE_PENALTY`` otherwise; their parameters are
    :func:`preference_params`, in order."""
    return [
        f"(CASE WHEN {same_as(f'r.{dim}_id', value)[0]} THEN 0.0 ELSE {PREFERENCE_PENALTY} END)"
        for dim, value in scope.prefer.items()
    ]


def preference_params(scope: ScopeSpec) -> builtins.list[Any]:
    """The parameters of :func:`preference_penalties`."""
    return [value for value in scope.prefer.values() if value is not None]


RECORDS_WITH_RANKING_MAX = 200
"""A ranking statement (engines that rank in SQL) that reads at most this many rows reads
their records too, so no load follows; a wider widening round leaves them to the load."""


def search_conditions(
    dialect: Dialect,
    types: builtins.list[str],
    scope: ScopeSpec,
    flt: dict[str, Any] | None,
    valid_only: bool,
) -> tuple[builtins.list[str], builtins.list[Any]]:
    """SQL conditions (over records ``r``) every ranked search applies."""
    marks = ",".join("?" * len(types))
    conds = [f"r.record_type IN ({marks})", NOT_EXPIRED]
    params: builtins.list[Any] = [*types, time.time()]
    sc, sp = scope_sql(dialect, scope)
    conds += sc
    params += sp
    if valid_only:
        conds.append("r.status = 'valid'")
    if scope.as_of is not None:
        vsql, vparams = as_of_sql(scope.as_of)
        conds.append(vsql)
        params += vparams
    if flt is not None:
        fsql, fparams = dialect.compile_filter(flt, "r.metadata")
        conds.append(fsql)
        params += fparams
    return conds, params


def more_to_read(missing: int, share: float) -> int:
    """Candidates to check next when ``missing`` results are still wanted and ``share`` of
    those checked so far passed: as many as that share says, a quarter more, at least 32."""
    return max(32, math.ceil(1.25 * missing / share))

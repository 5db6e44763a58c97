"""Validating LangGraph ops and store configuration before anything runs.

Helpers of :mod:`oracleagentmemory.integrations.langgraph`: each op becomes a plan whose
inputs are checked (errors name the argument), so a bad op writes nothing of its batch.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any, cast

from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp, TTLConfig

from oracleagentmemory.core.store._limits import MAX_SEARCH_RESULTS
from oracleagentmemory.integrations._langgraph_codec import (
    UserIdFrom,
    check_fields,
    check_key,
    check_namespace,
    check_ttl,
    check_value,
    index_paths,
    index_texts,
    item_ids,
    item_metadata,
    metadata_may_be_too_large,
    user_of,
)
from oracleagentmemory.integrations._langgraph_filters import ValueFilter, value_filter

Paths = list[tuple[str, str | list[str]]]


def count(value: Any, name: str, minimum: int) -> int:
    """An int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def flag(value: Any, name: str) -> bool:
    """A bool."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class PutPlan:
    """A checked put (``value`` None: a delete) with its record ids, the user its namespace
    maps to and its index texts."""

    namespace: tuple[str, ...]
    key: str
    record_id: str
    legacy_id: str
    user: str | None
    value: dict[str, Any] | None
    content: str
    texts: list[str]
    ttl: float | None


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """A checked search; ``query`` is None when blank."""

    prefix: tuple[str, ...]
    values: ValueFilter
    query: str | None
    limit: int
    offset: int
    refresh: bool


@dataclass(frozen=True, slots=True)
class ListPlan:
    """A checked namespace listing: (match type, path) conditions."""

    conditions: tuple[tuple[str, tuple[str, ...]], ...]
    max_depth: int | None
    limit: int
    offset: int


Plan = GetOp | SearchPlan | ListPlan | PutPlan


def check_index(index: Any, vector_dim: int | None) -> list[str]:
    """The ``fields`` of an ``IndexConfig`` (default ``["$"]``); ``embed`` is refused and
    ``dims`` must equal the client's vector dimension."""
    if not isinstance(index, dict):
        raise TypeError(f"index must be an IndexConfig dict or None, got {type(index)}")
    unknown = sorted(set(index) - {"dims", "embed", "fields"})
    if unknown:
        raise ValueError(f"index: unknown keys {unknown} (IndexConfig has dims, embed, fields)")
    if index.get("embed") is not None:
        raise ValueError(
            "index['embed'] is not supported: AgentMemoryStore embeds with the client's "
            "embedder (OracleAgentMemory(embedder=...)); leave 'embed' out"
        )
    dims = index.get("dims")
    if dims is not None:
        count(dims, "index['dims']", 1)
        if vector_dim is None or dims != vector_dim:
            raise ValueError(
                f"index['dims']={dims} does not match the client's embedder "
                f"({vector_dim if vector_dim is not None else 'no vectors: keyword search'}); "
                "give the embedder's dimension or leave 'dims' out"
            )
    fields = index.get("fields")
    return ["$"] if fields is None else check_fields(fields, "index['fields']")


def check_ttl_config(ttl: Any) -> TTLConfig:
    """A ``TTLConfig`` with known keys of the right types."""
    if not isinstance(ttl, dict):
        raise TypeError(f"ttl must be a TTLConfig dict or None, got {type(ttl).__name__}")
    known = {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}
    unknown = sorted(set(ttl) - known)
    if unknown:
        raise ValueError(f"ttl: unknown keys {unknown} (TTLConfig has {sorted(known)})")
    check_ttl(ttl.get("default_ttl"))
    if "refresh_on_read" in ttl:
        flag(ttl["refresh_on_read"], "ttl['refresh_on_read']")
    if ttl.get("sweep_interval_minutes") is not None:
        count(ttl["sweep_interval_minutes"], "ttl['sweep_interval_minutes']", 1)
    if "omit_expired" in ttl:
        flag(ttl["omit_expired"], "ttl['omit_expired']")
    return cast(TTLConfig, dict(ttl))


@dataclass(frozen=True, slots=True)
class Planner:
    """Turns ops into plans for a store of ``agent_id`` (``paths``: None without index;
    ``hasher``: :func:`id_hasher` of the store's ``id_secret``)."""

    agent_id: str | None
    user_id_from: UserIdFrom
    paths: Paths | None
    hasher: hmac.HMAC

    def ids(self, namespace: tuple[str, ...], key: str) -> tuple[str, str]:
        """The item's record id, then the id it had before ids were keyed."""
        user = user_of(self.user_id_from, namespace)
        return item_ids(self.hasher, user, self.agent_id, namespace, key)

    def plan(self, op: Any) -> Plan:
        """The checked form of ``op``; raises before anything runs."""
        if isinstance(op, GetOp):
            namespace = check_namespace(op.namespace, "namespace")
            key = check_key(op.key)
            user_of(self.user_id_from, namespace)  # its errors, before anything runs
            return GetOp(namespace, key, flag(op.refresh_ttl, "refresh_ttl"))
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        raise TypeError(f"ops: unknown operation {type(op).__name__}")

    def _search(self, op: SearchOp) -> SearchPlan:
        query = op.query
        if query is not None and not isinstance(query, str):
            raise TypeError(f"query must be a string or None, got {type(query).__name__}")
        plan = SearchPlan(
            check_namespace(op.namespace_prefix, "namespace_prefix"),
            value_filter(op.filter),
            query if query and query.strip() else None,
            count(op.limit, "limit", 0),
            count(op.offset, "offset", 0),
            flag(op.refresh_ttl, "refresh_ttl"),
        )
        searched = plan.query and self.paths is not None
        if searched and plan.limit + plan.offset > MAX_SEARCH_RESULTS:
            raise ValueError(
                f"limit + offset must be at most {MAX_SEARCH_RESULTS} for a query search"
            )
        return plan

    @staticmethod
    def _list(op: ListNamespacesOp) -> ListPlan:
        conditions = []
        for cond in op.match_conditions or ():
            match_type, path = cond if isinstance(cond, tuple) and len(cond) == 2 else (None, None)
            path = tuple(path) if isinstance(path, list) else path
            if match_type not in ("prefix", "suffix"):
                raise ValueError(
                    f"match_conditions: match_type must be 'prefix' or 'suffix', got {cond!r}"
                )
            conditions.append((match_type, check_namespace(path, match_type)))
        depth = None if op.max_depth is None else count(op.max_depth, "max_depth", 1)
        return ListPlan(
            tuple(conditions), depth, count(op.limit, "limit", 0), count(op.offset, "offset", 0)
        )

    def _put(self, op: PutOp) -> PutPlan:
        namespace = check_namespace(op.namespace, "namespace", for_write=op.value is not None)
        key = check_key(op.key)
        user = user_of(self.user_id_from, namespace)  # its errors, before any write
        record_id, legacy_id = item_ids(self.hasher, user, self.agent_id, namespace, key)
        if op.value is None:
            return PutPlan(namespace, key, record_id, legacy_id, user, None, "", [], None)
        value, content = check_value(op.value)
        ttl = check_ttl(op.ttl)
        index = op.index
        paths: Paths
        if index is None:
            paths = self.paths or []
        elif index is False or (isinstance(index, list | tuple) and not index):
            paths = []
        else:
            paths = index_paths(check_fields(index, "index"))
        texts = index_texts(value, paths) if self.paths is not None else []
        # check_value checked the value's types, texts and depth as the metadata holds it;
        # the metadata's size is measured only when it could reach the limit.
        if metadata_may_be_too_large(namespace, key, content, extra=200):
            item_metadata(
                namespace, key, value, created_at="", updated_at="", ttl_minutes=ttl, signature=""
            )
        return PutPlan(namespace, key, record_id, legacy_id, user, value, content, texts, ttl)

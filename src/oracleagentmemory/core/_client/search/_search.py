"""Client- and thread-level search: the search config in force, then (scope already resolved)
the store's hits, reranking, pruning, budgets and result objects."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis._duck import check_llm, check_reranker
from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES, Record
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.thread import message_text
from oracleagentmemory.core._client.search._prune import Pruner
from oracleagentmemory.core._client.search._rerank import rerank
from oracleagentmemory.core._client.search._scope import ResolvedScope
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
)
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.core.store._limits import MAX_SEARCH_RESULTS

DEFAULT_MAX_RESULTS = 10
IMAGE_SOURCE_PREFIX = "image:"
"""Provenance rows naming an image (see ``extractors._service.provenance``)."""
DEFAULT_RERANK_CANDIDATES = 50
CHARS_PER_TOKEN = 3.5
"""Token estimate used for every budget (the reference cuts summaries at budget * 3.5)."""


SCOPE_ARGUMENTS: Final = (
    "user_id",
    "agent_id",
    "thread_id",
    "exact_user_match",
    "exact_agent_match",
    "exact_thread_match",
    "scope",
)
"""The scope arguments of a client's or thread's ``search`` (resolved by ``_scope``)."""
SEARCH_OPTIONS: Final = (
    "max_results",
    "token_budget",
    "soft_token_budget",
    "record_types",
    "metadata_filter",
    "num_hops",
    "max_linked_results",
    "include_invalid_results",
    "as_of",
)
"""The other arguments of a client's or thread's ``search`` (:func:`run_search`'s options)."""


def search_arguments(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scope arguments and the options of a ``search`` call, from its ``locals()``."""
    scope = {name: arguments[name] for name in SCOPE_ARGUMENTS}
    return scope, {name: arguments[name] for name in SEARCH_OPTIONS}


def estimate_tokens(text: str) -> int:
    """A model-free token estimate: one token per 3.5 characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _positive(
    name: str, value: Any, allow_none: bool = False, maximum: int | None = None
) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def apply_budgets(
    results: Iterable[SearchResult], token_budget: int | None, soft_token_budget: int | None
) -> list[SearchResult]:
    """Keep ranked results while they fit.

    ``token_budget`` is hard: a result that would exceed it ends the list. ``soft_token_budget``
    is a target: the result that crosses it is kept, then the list ends.
    """
    if token_budget is None and soft_token_budget is None:
        return list(results)  # nothing to fit: no result is rendered to be measured
    out: list[SearchResult] = []
    used = 0
    for result in results:
        cost = estimate_tokens(result.formatted_content)
        if token_budget is not None and used + cost > token_budget:
            break
        out.append(result)
        used += cost
        if soft_token_budget is not None and used >= soft_token_budget:
            break
    return out


def record_text(record: Any) -> str:
    """The text a reranker or pruner sees for a record: its content ("" when it has none;
    a message with parts reads as its text, images as ``[image: description]``)."""
    content = getattr(record, "content", None)
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, tuple | list):
        return message_text(content, image_placeholders=True)
    return str(content)


def run_search(
    store: OracleMemoryStore,
    query: str,
    scope: ResolvedScope,
    *,
    max_results: Any,
    token_budget: Any,
    soft_token_budget: Any,
    record_types: Any,
    metadata_filter: Any,
    num_hops: Any,
    max_linked_results: Any,
    include_invalid_results: Any,
    as_of: Any = None,
    search_config: Any = NOT_SET_MARKER,
    pruner: ILlm | None = None,
) -> list[SearchResult]:
    """Search the store and wrap the hits; operation values win over ``search_config``.

    Stages: the store's ranked hits; the reranker (``search_config.reranker``) over the
    first ``reranker_max_candidates``; the first ``max_results``; LLM pruning (the config's
    ``pruner`` for a ``PruningMemorySearchConfig``, else ``pruner`` -- the client's
    ``pruner_llm`` -- unless the config is a ``TopKMemorySearchConfig``); the budgets.
    ``as_of`` (a datetime): the records true then (given to the store only when set).
    """
    if not isinstance(query, str):
        raise TypeError("query must be a string")

    def from_config(name: str, value: Any, default: Any) -> Any:
        if value is not NOT_SET_MARKER:
            return value
        configured = getattr(search_config, name, NOT_SET_MARKER)
        return default if configured is NOT_SET_MARKER else configured

    k = _positive(
        "max_results",
        from_config("max_results", max_results, DEFAULT_MAX_RESULTS),
        maximum=MAX_SEARCH_RESULTS,
    )
    assert k is not None
    hard = _positive("token_budget", from_config("token_budget", token_budget, None), True)
    soft = _positive(
        "soft_token_budget", from_config("soft_token_budget", soft_token_budget, None), True
    )
    reranker = from_config("reranker", NOT_SET_MARKER, None)
    pool = 0
    if reranker is not None:
        check_reranker(reranker, "search_config.reranker")
        configured = from_config(
            "reranker_max_candidates", NOT_SET_MARKER, DEFAULT_RERANK_CANDIDATES
        )
        pool = _positive("reranker_max_candidates", configured) or 0
    types = None
    if record_types is not NOT_SET_MARKER and record_types is not None:
        if isinstance(record_types, str):
            raise TypeError("record_types must be a list of record type names")
        types = set(record_types)
    hits = store.search(
        query,
        max(k, pool),
        **scope.store_kwargs(),
        record_types=types,
        metadata_filter=None if metadata_filter is NOT_SET_MARKER else metadata_filter,
        num_hops=0 if num_hops is NOT_SET_MARKER else num_hops,
        max_linked_results=100 if max_linked_results is NOT_SET_MARKER else max_linked_results,
        include_invalid_results=(
            False if include_invalid_results is NOT_SET_MARKER else include_invalid_results
        ),
        **({} if as_of is None else {"as_of": as_of}),
    )
    if reranker is not None:
        head = hits[:pool]
        hits = rerank(reranker, query, head, [record_text(r) for r, _ in head]) + hits[pool:]
        hits = hits[:k]
    judge = _pruner_of(search_config, pruner)
    if judge is not None:
        hits = judge.prune(
            query,
            hits,
            [record_text(r) for r, _ in hits],
            [r.timestamp for r, _ in hits],
        )
    results = [as_result(record, d) for record, d in hits]
    attach_sources(store, results)
    return apply_budgets(list[SearchResult](results), hard, soft)


def client_search_config(settings: Any) -> Any:
    """The client's search config (rebuilt from its resolved ``settings``), or None."""
    cls = settings.get("search_config.__class__")
    return None if cls is None else settings.config("search_config", cls)


def thread_search_config(settings: Any, pruner: ILlm | None) -> Any:
    """A thread's search config: the object given in this process (with its reranker
    and pruner), else the kind and fields stored with the thread. A stored pruning config
    prunes with the client's ``pruner_llm`` (``pruner``; its own LLM is never stored);
    without one it keeps only its budgets."""
    cls = settings.get("search_config.__class__")
    if cls is None:
        kind = settings.get("search_config.__kind__")
        if kind is None:
            return None
        cls = MemorySearchConfig.kind_class(kind)
    if issubclass(cls, PruningMemorySearchConfig) and settings.get("search_config.pruner") is None:
        if pruner is None:
            return settings.config("search_config", MemorySearchConfig)
        return settings.config("search_config", cls, pruner=pruner)
    return settings.config("search_config", cls)


def _pruner_of(search_config: Any, default: ILlm | None) -> Pruner | None:
    """The pruning stage a search runs with, if any (settings from the config, else the
    SDK defaults)."""
    if isinstance(search_config, TopKMemorySearchConfig):
        return None
    llm = getattr(search_config, "pruner", None)
    if llm is None:
        llm = default
    if llm is None:
        return None
    check_llm(llm, "pruner")
    resolved = (
        search_config.resolve()
        if isinstance(search_config, MemorySearchConfig)
        else MemorySearchConfig().resolve()
    )
    return Pruner(
        llm, resolved.evaluation_mode, resolved.num_probe_points, resolved.protected_fraction
    )


def as_result(record: Record, distance: float) -> OracleSearchResult:
    """A search hit as a result; records reached through links inherit its distance."""
    linked: list[tuple[RecordRelation, SearchResult]] = [
        (relation, as_result(other, distance)) for relation, other in record.linked_results
    ]
    return OracleSearchResult(distance, record, id=record.id, linked_results=linked)


def attach_sources(store: OracleMemoryStore, results: list[OracleSearchResult]) -> None:
    """Fill ``source_message_ids`` of the memory results from the store's provenance."""
    lookup = getattr(store, "memory_sources", None)
    memory_ids = [r.id for r in results if r.record.record_type in MEMORY_RECORD_TYPES and r.id]
    if lookup is None or not memory_ids:
        return
    sources = lookup(memory_ids)
    for result in results:
        found = sources.get(result.id) if result.id is not None else None
        if found and result.record.record_type in MEMORY_RECORD_TYPES:
            images = tuple(s for s in found if s.startswith(IMAGE_SOURCE_PREFIX))
            result._source_message_ids = tuple(s for s in found if s not in images)
            result._source_image_ids = tuple(s[len(IMAGE_SOURCE_PREFIX) :] for s in images)

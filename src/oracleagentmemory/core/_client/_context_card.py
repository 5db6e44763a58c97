"""A thread's context card and summary (``OracleThread.get_context_card`` / ``get_summary``).

A card is three parts: a summary of the recent messages (the thread's running LLM summary
when it has an LLM, else the recent transcript), the durable records most relevant to those
messages (the thread's own search, with per-type minimums and token budgets) and the recent
messages verbatim. A summary without an LLM is the transcript, newest messages kept first.
Both read their thread through a :class:`CardSource`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.core._client._runtime import ResolvedSettings
from oracleagentmemory.core._client._validation import check_int
from oracleagentmemory.core._client.messages._message_content import message_from_record
from oracleagentmemory.core._client.search._search import (
    CHARS_PER_TOKEN,
    apply_budgets,
    estimate_tokens,
)
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.extractors._service import ExtractionService, ThreadContext
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.core.store._limits import MAX_LIST_ROWS
from oracleagentmemory.core.summary import OracleSummary

CONTEXT_CARD_FALLBACK_MESSAGE_COUNT_DEFAULT: Final = 5
CONTEXT_CARD_MAX_RECENT_MESSAGES_DEFAULT: Final = 0
CONTEXT_CARD_EXCEPT_LAST_MESSAGES_DEFAULT: Final = 0
CONTEXT_CARD_MAX_RELEVANT_RESULTS_DEFAULT: Final = 10
CARD_DEFAULTS: Final = {
    "fallback_message_count": CONTEXT_CARD_FALLBACK_MESSAGE_COUNT_DEFAULT,
    "max_relevant_results": CONTEXT_CARD_MAX_RELEVANT_RESULTS_DEFAULT,
    "max_recent_messages": CONTEXT_CARD_MAX_RECENT_MESSAGES_DEFAULT,
    "except_last_messages": CONTEXT_CARD_EXCEPT_LAST_MESSAGES_DEFAULT,
}
DEFAULT_SUMMARY_TOKEN_BUDGET: Final = 1000
CARD_RECORD_TYPES = (*MEMORY_RECORD_TYPES, "user_profile", "agent_profile")
"""Durable records a context card may show (messages appear verbatim, not as results)."""


@dataclass(frozen=True)
class CardSource:
    """What a card or summary reads of its thread: the store, who the thread is, its
    resolved settings, its extraction service (None: no LLM summary) and its search."""

    store: OracleMemoryStore
    context: ThreadContext
    settings: ResolvedSettings
    service: ExtractionService | None
    search: Callable[..., list[SearchResult]]


def transcript_line(msg: Message) -> str:
    return f"{msg.role}: {msg.content}"


def recent_messages(source: CardSource, count: int, except_last: int) -> list[Message]:
    """The thread's last ``count`` messages before its last ``except_last``."""
    if count <= 0:
        return []
    records = source.store.list_thread_messages(
        source.context.thread_id, last_n=min(MAX_LIST_ROWS, count + except_last)
    )
    if except_last:
        records = records[:-except_last] if except_last < len(records) else []
    return [message_from_record(r) for r in records[-count:]]


def llm_summary(source: CardSource, except_last: int) -> tuple[str, tuple[str, ...]] | None:
    """The LLM summary of the messages but the last ``except_last`` (None without one)."""
    if source.service is None or source.settings.get("llm") is None:
        return None
    tail = source.store.list_thread_messages(source.context.thread_id, last_n=except_last + 1)
    if len(tail) <= except_last:
        return None
    return source.service.thread_summary(source.context, source.settings, tail[0].seq_no)


def context_card(
    source: CardSource,
    fallback_message_count: Any,
    max_relevant_results: Any,
    max_recent_messages: Any,
    except_last_messages: Any,
    min_relevant_results_by_type: Any,
    metadata_filter: Any,
    include_invalid_results: Any,
    token_budget: Any,
    soft_token_budget: Any,
) -> OracleContextCard:
    """``OracleThread.get_context_card`` (its docstring says what the card holds)."""

    def opt(name: str, value: Any) -> int:
        return check_int(name, CARD_DEFAULTS[name] if value is NOT_SET_MARKER else value)

    fallback = opt("fallback_message_count", fallback_message_count)
    max_relevant = opt("max_relevant_results", max_relevant_results)
    max_recent = opt("max_recent_messages", max_recent_messages)
    except_last = opt("except_last_messages", except_last_messages)
    window = recent_messages(source, max(fallback, max_recent), except_last)
    summary_msgs = window[-fallback:] if fallback else []
    recent = window[-max_recent:] if max_recent else []
    summary = "\n".join(transcript_line(m) for m in summary_msgs)
    topics: tuple[str, ...] = ()
    from_llm = llm_summary(source, except_last)
    if from_llm is not None:
        summary, topics = from_llm
    results: list[SearchResult] = []
    query = " ".join(m.content for m in summary_msgs if isinstance(m.content, str)).strip()
    if query and max_relevant > 0:
        results = card_results(
            source,
            query,
            max_relevant,
            min_relevant_results_by_type,
            metadata_filter,
            include_invalid_results,
        )
        hard = (
            None
            if token_budget in (NOT_SET_MARKER, None)
            else check_int("token_budget", token_budget, 1)
        )
        soft = (
            None
            if soft_token_budget in (NOT_SET_MARKER, None)
            else check_int("soft_token_budget", soft_token_budget, 1)
        )
        results = apply_budgets(results, hard, soft)
    return OracleContextCard(
        summary=summary,
        topics=list(topics) or None,
        relevant_results=results,
        recent_messages=recent,
    )


def card_results(
    source: CardSource,
    query: str,
    max_relevant: int,
    min_by_type: Any,
    metadata_filter: Any,
    include_invalid_results: Any,
) -> list[SearchResult]:
    """The ``max_relevant`` best durable records for ``query``, topped up by a search per
    record type still short of its minimum in ``min_by_type``; by distance."""
    common = dict(
        metadata_filter=metadata_filter,
        include_invalid_results=include_invalid_results,
    )
    best = source.search(
        query, max_results=max_relevant, record_types=list(CARD_RECORD_TYPES), **common
    )
    if min_by_type in (NOT_SET_MARKER, None):
        return best
    if not isinstance(min_by_type, Mapping):
        raise TypeError("min_relevant_results_by_type must be a mapping of record type to count")
    chosen = {r.id: r for r in best}
    for record_type, minimum in min_by_type.items():
        check_int(f"min_relevant_results_by_type[{record_type!r}]", minimum)
        have = sum(1 for r in chosen.values() if r.record.record_type == record_type)
        if have >= minimum:
            continue
        extra = source.search(query, max_results=minimum, record_types=[record_type], **common)
        for r in extra:
            if have >= minimum:
                break
            if r.id not in chosen:
                chosen[r.id] = r
                have += 1
    return sorted(chosen.values(), key=lambda r: cast(OracleSearchResult, r).distance)


def thread_summary(source: CardSource, except_last: Any, token_budget: Any) -> OracleSummary:
    """``OracleThread.get_summary`` (its docstring says what the summary is)."""
    skip = 0 if except_last is NOT_SET_MARKER else check_int("except_last", except_last)
    budget = DEFAULT_SUMMARY_TOKEN_BUDGET if token_budget is NOT_SET_MARKER else token_budget
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise TypeError("token_budget must be an int")
    from_llm = llm_summary(source, skip)
    if from_llm is not None:
        text = from_llm[0]
        if budget > 0 and estimate_tokens(text) > budget:
            text = text[: int(budget * CHARS_PER_TOKEN)]
        return OracleSummary(content=text)
    records = source.store.list_thread_messages(source.context.thread_id)
    if skip:
        records = records[:-skip] if skip < len(records) else []
    lines = [transcript_line(message_from_record(r)) for r in records]
    text = "\n".join(lines)
    if budget > 0 and estimate_tokens(text) > budget:
        limit = int(budget * CHARS_PER_TOKEN)
        kept: list[str] = []
        size = 0
        for line in reversed(lines):
            if size + len(line) + 1 > limit and kept:
                break
            kept.append(line)
            size += len(line) + 1
        omitted = len(lines) - len(kept)
        head = f"[{omitted} earlier messages omitted]\n" if omitted else ""
        text = (head + "\n".join(reversed(kept)))[:limit]
    return OracleSummary(content=text)

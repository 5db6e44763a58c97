"""Automatic links between memories: the model's decisions, checked, then written.

A decision is always read from the new memory to an existing one ("new supersedes old").
The model only ever chooses a relation for a candidate it was shown: relations it invents,
numbers or labels that name no candidate, and links of a memory to itself are dropped with a
log line. Writing a link checks that both memories still exist and belong to the same user;
a ``supersedes`` or ``duplicates`` link then marks its target INVALID (``store.update``), so
search leaves the stale memory out unless asked for invalid results. When that status
update fails, the link is deleted again: the two land together or not at all.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core._client.search._search import estimate_tokens
from oracleagentmemory.core.extractors._extractor import (
    ExtractedMemory,
    MemoryLinkTargetCandidate,
    batch_order,
)
from oracleagentmemory.core.extractors._link_prompts import (
    LINK_RELATIONS,
    NO_LINK,
    link_prompt,
    link_schema,
)
from oracleagentmemory.core.extractors._llmcall import ask_json
from oracleagentmemory.core.extractors._parse import ParsedAnswer
from oracleagentmemory.core.extractors._similar import similar_memories
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    MemoryLinkExtractionMode,
    ResolvedMemoryExtractionConfig,
)
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.searchresult import AGENT_MEMORY_METADATA_KEY


class _Thread(Protocol):
    """The thread a job runs for (``_service.ThreadContext``)."""

    @property
    def thread_id(self) -> str: ...
    @property
    def user_id(self) -> str | None: ...


log = logging.getLogger("oracleagentmemory.linking")

LINK_CANDIDATES: Final = 5
"""Existing memories each new memory is compared with for links."""
INVALIDATING: Final = frozenset({"supersedes", "duplicates"})
"""Relations whose target becomes INVALID."""

RELATION_SYNONYMS: Final[dict[str, str]] = {
    **{name: name for name in (*LINK_RELATIONS, NO_LINK)},
    "supersede": "supersedes",
    "superseded": "supersedes",
    "replaces": "supersedes",
    "updates": "supersedes",
    "overrides": "supersedes",
    "contradict": "contradicts",
    "conflicts": "contradicts",
    "conflict": "contradicts",
    "refine": "refines",
    "elaborates": "refines",
    "specifies": "refines",
    "support": "supports",
    "confirms": "supports",
    "duplicate": "duplicates",
    "same": "duplicates",
    "unrelated": NO_LINK,
    "no": NO_LINK,
    "no_link": NO_LINK,
    "null": NO_LINK,
}
"""Relation names models use, mapped to ours (case and spacing ignored)."""

_NUMBER: Final = re.compile(r"\s*(?:#|no\.?|number|memory|candidate|e)?\s*(\d+)\s*", re.I)


def read_relation(value: Any) -> str | None:
    """A model's relation name as one of ours or ``"none"``; None when it is unknown."""
    if value is None:
        return NO_LINK
    if not isinstance(value, str):
        return None
    key = re.sub(r"[\s-]+", "_", value.strip().lower())
    return RELATION_SYNONYMS.get(key) or RELATION_SYNONYMS.get(key.replace("_", ""))


def read_number(value: Any) -> int | None:
    """A candidate number written as 1, "1", "#1", "E1" or "memory 1"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = _NUMBER.fullmatch(value)
        return int(match.group(1)) if match else None
    return None


@dataclass
class LinkAnswer(ParsedAnswer):
    """The usable part of a link answer: candidate number -> relation (``"none"`` kept)."""

    relations: dict[int, str] = field(default_factory=dict)


def read_link_answer(data: Any, count: int) -> LinkAnswer:
    """Read ``{"1": "supersedes", "2": "none"}`` (or a list of ``{"number", "relation"}``
    items) for ``count`` candidates. Numbers outside 1..count and unknown relations are
    dropped and reported in ``problems``."""
    answer = LinkAnswer()
    pairs: list[tuple[Any, Any]] = []
    if isinstance(data, dict):
        listed = next(
            (data[k] for k in ("links", "decisions", "relations") if isinstance(data.get(k), list)),
            None,
        )
        if listed is not None:
            data = listed
        else:
            pairs = list(data.items())
    if isinstance(data, list):
        for item in data:
            if isinstance(item, dict):
                keys = ("number", "memory", "candidate", "target", "id")
                number = next((item[k] for k in keys if k in item), None)
                pairs.append((number, item.get("relation", item.get("type"))))
            else:
                answer.problems.append(f"a link item of type {type(item).__name__} was dropped")
    elif not isinstance(data, dict):
        answer.problems.append(f"the answer is a {type(data).__name__}, not an object")
    for raw_number, raw_relation in pairs:
        number = read_number(raw_number)
        if number is None or not 1 <= number <= count:
            answer.problems.append(f"{str(raw_number)[:20]!r} names no candidate; dropped")
            continue
        relation = read_relation(raw_relation)
        if relation is None:
            answer.problems.append(f"unknown relation {str(raw_relation)[:30]!r}; dropped")
            continue
        if number in answer.relations and answer.relations[number] != relation:
            answer.problems.append(f"candidate {number} got two relations; kept the first")
            continue
        answer.relations[number] = relation
    return answer


@dataclass(frozen=True)
class NewMemory:
    """A memory whose links are being decided (``memory_id`` set once it is stored)."""

    content: str
    timestamp: str | None = None
    memory_id: str | None = None


@dataclass(frozen=True)
class LinkDecision:
    """The model's choice: ``memories[source]`` has ``relation`` to ``target``."""

    source: int
    target: MemoryLinkTargetCandidate
    relation: str


def _prompt_tokens(prompt: list[dict[str, str]], schema: dict[str, Any]) -> int:
    return estimate_tokens("".join(m["content"] for m in prompt) + json.dumps(schema))


class LinkResolver:
    """Asks ``llm`` how new memories relate to their candidates, one call per new memory,
    within ``token_limit`` input tokens in all (< 1: no limit)."""

    def __init__(self, llm: ILlm, token_limit: int, custom_instructions: str | None) -> None:
        self._llm = llm
        self._limit = token_limit
        self._instructions = custom_instructions
        self.tokens_used = 0

    def _fit(
        self, memory: NewMemory, candidates: list[MemoryLinkTargetCandidate]
    ) -> tuple[list[dict[str, str]], dict[str, Any], list[MemoryLinkTargetCandidate]] | None:
        """The prompt for ``memory`` with as many candidates (closest first) as the budget
        left allows; None when not even one fits."""
        while candidates:
            prompt = link_prompt(memory.content, memory.timestamp, candidates, self._instructions)
            schema = link_schema(len(candidates))
            if self._limit < 1 or self.tokens_used + _prompt_tokens(prompt, schema) <= self._limit:
                return prompt, schema, candidates
            candidates = candidates[:-1]
        return None

    def decide(
        self,
        memories: Sequence[NewMemory],
        candidates: Sequence[Sequence[MemoryLinkTargetCandidate]],
    ) -> list[LinkDecision]:
        """The links the model chose for each memory among its candidates (``"none"``
        answers left out). Exceptions of the LLM propagate."""
        decisions: list[LinkDecision] = []
        for index, (memory, found) in enumerate(zip(memories, candidates, strict=True)):
            own = {memory.memory_id} if memory.memory_id else set()
            shown = list({c.memory_id: c for c in found if c.memory_id not in own}.values())
            if not shown:
                continue
            fitted = self._fit(memory, shown)
            if fitted is None:
                log.warning(
                    "memory links: the token limit (%d) is spent; %d new memories get no links",
                    self._limit,
                    len(memories) - index,
                )
                break
            prompt, schema, shown = fitted
            self.tokens_used += _prompt_tokens(prompt, schema)
            count = len(shown)

            def read(data: Any, count: int = count) -> LinkAnswer:
                return read_link_answer(data, count)

            outcome = ask_json(self._llm, prompt, schema, read, "memory links")
            if outcome.parsed is None:
                continue
            for number, relation in sorted(outcome.parsed.relations.items()):
                if relation != NO_LINK:
                    decisions.append(LinkDecision(index, shown[number - 1], relation))
        return decisions


@dataclass(frozen=True)
class LinkWrite:
    """One link to store: from a stored new memory to an existing one."""

    source_id: str
    source_type: str
    target_id: str
    target_type: str
    relation: str


@dataclass
class LinkOutcome:
    """What :func:`write_links` stored: relation ids and the memories it made INVALID."""

    relation_ids: list[str] = field(default_factory=list)
    invalidated: list[str] = field(default_factory=list)


def write_links(
    store: OracleMemoryStore, links: Sequence[LinkWrite], *, user_id: str | None, origin: str
) -> LinkOutcome:
    """Store ``links`` between memories of ``user_id`` and invalidate the targets of
    ``supersedes`` / ``duplicates``. Links that cannot be stored (self-links, a memory gone
    or of another user, a pair already linked) are skipped with a log line; a failed status
    update deletes its link again and raises."""
    outcome = LinkOutcome()
    metadata = {AGENT_MEMORY_METADATA_KEY: {"link_origin": origin}}
    for link in links:
        if link.relation not in LINK_RELATIONS:
            log.warning("memory links: unknown relation %r dropped", link.relation)
            continue
        if (link.source_id, link.source_type) == (link.target_id, link.target_type):
            log.warning("memory links: a link of memory %r to itself was dropped", link.source_id)
            continue
        source = store.get(link.source_type, link.source_id)
        target = store.get(link.target_type, link.target_id)
        if source is None or target is None:
            log.info("memory links: %r or %r no longer exists", link.source_id, link.target_id)
            continue
        owners = {getattr(source, "user_id", None), getattr(target, "user_id", None)}
        if user_id is None or owners != {user_id}:
            log.warning(
                "memory links: %r and %r are not both memories of user %r; not linked",
                link.source_id,
                link.target_id,
                user_id,
            )
            continue
        try:
            relation_id = store.add_relations(
                link.source_id,
                link.source_type,
                link.target_id,
                link.target_type,
                link.relation,
                metadata=metadata,
            )[0]
        except ValueError as exc:  # e.g. the pair is already linked
            log.info("memory links: %s -> %s not stored: %s", link.source_id, link.target_id, exc)
            continue
        outcome.relation_ids.append(relation_id)
        if link.relation in INVALIDATING and target.status is not RecordStatus.INVALID:
            try:
                store.update(link.target_type, link.target_id, status=RecordStatus.INVALID)
            except BaseException:
                store.delete_relations(relation_id)
                raise
            outcome.invalidated.append(link.target_id)
        log.info(
            "memory links: %s %s %s (%s)", link.source_id, link.relation, link.target_id, origin
        )
    return outcome


def decide_links(
    store: OracleMemoryStore,
    memories: list[ExtractedMemory],
    ctx: _Thread,
    llm: ILlm,
    config: ResolvedMemoryExtractionConfig,
) -> list[tuple[int, MemoryLinkTargetCandidate, str]]:
    """The links of a job's new memories, decided before anything is written (so a
    crash during these LLM calls leaves the whole job to be resumed): (index among the
    memories to store, existing memory, relation). DURING_EXTRACTION took them from the
    extraction answer; POST_EXTRACTION asks now, one call per memory, within
    ``memory_link_extraction_token_limit``. No links for a thread without a user. An LLM
    failure here stores the memories without links (logged)."""
    mode = config.memory_link_extraction_mode
    kept = batch_order(memories)
    if mode is MemoryLinkExtractionMode.DISABLED or not kept or ctx.user_id is None:
        return []
    if mode is MemoryLinkExtractionMode.DURING_EXTRACTION:
        return [(i, target, rel) for i, m in enumerate(kept) for target, rel in m.links]
    found = similar_memories(
        store,
        [m.content for m in kept],
        LINK_CANDIDATES,
        {"user_id": ctx.user_id, "exact_user_match": True},
    )
    resolver = LinkResolver(
        llm,
        config.memory_link_extraction_token_limit,
        config.memory_link_extraction_custom_instructions,
    )
    try:
        decisions = resolver.decide([NewMemory(m.content, m.timestamp) for m in kept], found)
    except Exception:
        log.warning(
            "memory links for thread %r failed: the memories are stored without links: %s",
            ctx.thread_id,
            reason(),
            exc_info=log.isEnabledFor(logging.DEBUG),
        )
        return []
    return [(d.source, d.target, d.relation) for d in decisions]


def write_decided_links(
    store: OracleMemoryStore,
    kept: list[ExtractedMemory],
    written: list[str],
    links: list[tuple[int, MemoryLinkTargetCandidate, str]],
    ctx: _Thread,
    config: ResolvedMemoryExtractionConfig,
) -> LinkOutcome:
    """Store the decided links once the memories exist (nothing when the job wrote
    none, e.g. its thread was deleted); failures are logged, never raised."""
    if not links or len(written) != len(kept):
        return LinkOutcome()
    writes = [
        LinkWrite(written[i], kept[i].memory_type, t.memory_id, t.memory_type, relation)
        for i, t, relation in links
    ]
    try:
        return write_links(
            store,
            writes,
            user_id=ctx.user_id,
            origin=config.memory_link_extraction_mode.value.lower(),
        )
    except Exception:
        log.warning(
            "storing memory links for thread %r failed: %s",
            ctx.thread_id,
            reason(),
            exc_info=log.isEnabledFor(logging.DEBUG),
        )
        return LinkOutcome()


def reason() -> str:
    """The exception being handled, as one line (``Type: message``)."""
    import sys

    exc = sys.exc_info()[1]
    return "unknown error" if exc is None else f"{type(exc).__name__}: {exc}"

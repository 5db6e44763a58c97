"""The one-shot extractor: one LLM call per batch of new messages (more only when a batch
does not fit the prompt budget), with the running summary refreshed in the same call."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.apis._duck import check_llm
from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.message import TextContent
from oracleagentmemory.apis.thread import Message, ThreadMessageTypedDictT
from oracleagentmemory.core._client.messages._message_content import images_of
from oracleagentmemory.core._client.search._search import CHARS_PER_TOKEN, estimate_tokens
from oracleagentmemory.core.extractors._dedup import (
    DUPLICATE_COSINE,
    is_duplicate,
    jaccard,
    normalize,
)
from oracleagentmemory.core.extractors._extractor import (
    ExtractedMemory,
    MemoryLinkTargetCandidate,
    ThreadMemoryExtractor,
    as_message,
)
from oracleagentmemory.core.extractors._link_prompts import (
    DURING_EXTRACTION_LINKS,
    existing_memories_block,
    links_property,
)
from oracleagentmemory.core.extractors._linking import read_number, read_relation
from oracleagentmemory.core.extractors._llmcall import ask_json
from oracleagentmemory.core.extractors._parse import ParsedAnswer, read_memories, read_summary
from oracleagentmemory.core.extractors._prompts import (
    DEFAULT_PROMPT_MESSAGE_FORMAT,
    check_message_format,
    conversation_block,
    extraction_prompt,
    extraction_schema,
    prompt_text,
    summary_prompt,
    summary_schema,
)
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryLinkExtractionMode,
    ResolvedMemoryExtractionConfig,
)
from oracleagentmemory.core.imageinputlimitconfig import (
    ImageInputLimitConfig,
    ResolvedImageInputLimitConfig,
    validate_image_request,
)
from oracleagentmemory.core.searchresult import AGENT_MEMORY_METADATA_KEY

log = logging.getLogger("oracleagentmemory.extraction")

DUPLICATE_CANDIDATES = 5
"""Existing memories each extracted memory is compared with."""
DURING_LINK_CANDIDATES = 10
"""Existing memories shown to DURING_EXTRACTION, found by searching with each new message."""
_PER_NEW_MESSAGE_LINK_CANDIDATES = 3
_PER_MESSAGE_OVERHEAD = 24
IMAGE_TOKENS = 500
"""Prompt tokens one image sent to the model is counted as (IMAGE context)."""
IMAGE_RULES = """

Images in the messages are labelled I1, I2, ... For each memory, "images" lists the labels \
of the images it is about (empty when none)."""
IMAGES_FOLLOW = " The images themselves follow the messages, in label order."
"""Tokens the markup around one message costs in a prompt (tag, number, role, time)."""

SearchMemories = Callable[[str, int], Awaitable[list[str] | list[MemoryLinkTargetCandidate]]]
"""``search_memories(text, k)``: up to ``k`` stored memories close to ``text``. A plain
function returning the list is accepted too. Plain strings carry no id, so they can never be
a duplicate target."""


@dataclass
class MemoryExtractionState:
    """Counters and the running summary of an extractor that keeps its state in memory
    (threads stored by a client keep theirs in the store instead)."""

    messages_since_extraction: int = 0
    messages_since_summary: int = 0
    context_summary: str = ""
    topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class _AddMessagesExtractionDecision:
    """What one ``add_messages`` call makes due: extraction, a summary refresh, or both."""

    extract: bool
    update_summary: bool
    new_message_count: int


def _due(count: int, every: int) -> bool:
    return every <= 0 or count >= every


def _cut(text: str, tokens: int) -> str:
    chars = max(0, int(tokens * CHARS_PER_TOKEN))
    return text if len(text) <= chars else text[:chars].rstrip() + " […]"


def _run_sync(value: Any) -> Any:
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    raise RuntimeError("search_memories returned an awaitable inside a running event loop")


class OneShotThreadMemoryExtractor(ThreadMemoryExtractor):
    """Extracts typed memories from new messages with one structured LLM call.

    ``search_memories(text, k)`` finds stored memories to compare with (duplicates are not
    stored again). ``config`` fields left unset take the SDK defaults. ``state`` holds the
    counters and running summary when the caller keeps them in memory.
    ``prompt_messages_format`` renders each message in the prompt (see
    ``_prompts.DEFAULT_PROMPT_MESSAGE_FORMAT``).
    """

    def __init__(
        self,
        llm: ILlm | None,
        search_memories: Callable[
            [str, int], Awaitable[list[str] | list[MemoryLinkTargetCandidate]]
        ],
        config: MemoryExtractionConfig,
        state: MemoryExtractionState | None = None,
        prompt_messages_format: str = DEFAULT_PROMPT_MESSAGE_FORMAT,
    ) -> None:
        if llm is not None:
            check_llm(llm, "llm")
        if not callable(search_memories):
            raise TypeError("search_memories must be callable")
        if not isinstance(config, MemoryExtractionConfig):
            raise TypeError("config must be a MemoryExtractionConfig")
        self._llm = llm
        self._search = search_memories
        self._config: ResolvedMemoryExtractionConfig = config.resolve()
        self.state = state if state is not None else MemoryExtractionState()
        self._format = check_message_format(prompt_messages_format)
        self.image_limits: ResolvedImageInputLimitConfig = ImageInputLimitConfig().resolve()
        """Limits on the images one IMAGE-context request may carry (the SDK's defaults
        unless the caller sets the thread's)."""
        self._labels: dict[str, str] = {}

    # ------------------------------------------------------------------ settings

    def _set(self, name: str, value: Any) -> None:
        """Change one setting (validated like the config field)."""
        checked = MemoryExtractionConfig(**{name: value}).set_fields()[name]
        self._config = dataclasses.replace(self._config, **{name: checked})

    @property
    def memory_extraction_window(self) -> int:
        """Recent messages given to extraction (-1: only the new ones)."""
        return self._config.memory_extraction_window

    @memory_extraction_window.setter
    def memory_extraction_window(self, value: int) -> None:
        self._set("memory_extraction_window", value)

    @property
    def memory_extraction_frequency(self) -> int:
        """Messages between extraction runs (<= 0: every ``add_messages`` call)."""
        return self._config.memory_extraction_frequency

    @memory_extraction_frequency.setter
    def memory_extraction_frequency(self, value: int) -> None:
        self._set("memory_extraction_frequency", value)

    @property
    def context_summary_update_frequency(self) -> int:
        """Messages between summary refreshes (<= 0: every ``add_messages`` call)."""
        return self._config.context_summary_update_frequency

    @context_summary_update_frequency.setter
    def context_summary_update_frequency(self, value: int) -> None:
        self._set("context_summary_update_frequency", value)

    @property
    def memory_extraction_token_limit(self) -> int:
        """Prompt budget in tokens (< 1: no limit)."""
        return self._config.memory_extraction_token_limit

    @memory_extraction_token_limit.setter
    def memory_extraction_token_limit(self, value: int) -> None:
        self._set("memory_extraction_token_limit", value)

    @property
    def memory_link_extraction_token_limit(self) -> int:
        """Input budget of POST_EXTRACTION link resolution in tokens, for all its calls of
        one job (< 1: no limit); in DURING_EXTRACTION it caps the existing memories shown."""
        return self._config.memory_link_extraction_token_limit

    @property
    def memory_extraction_image_context(self) -> MemoryExtractionImageContext:
        """How images take part (messages are text-only today: images read as placeholders)."""
        return self._config.memory_extraction_image_context

    @property
    def enable_context_summary(self) -> bool:
        """Whether a running summary is kept and fed to extraction."""
        return self._config.enable_context_summary

    @enable_context_summary.setter
    def enable_context_summary(self, value: bool) -> None:
        self._set("enable_context_summary", value)

    @property
    def last_memory_extraction_counter(self) -> int:
        """Messages added since the last extraction run (in-memory state)."""
        return self.state.messages_since_extraction

    @last_memory_extraction_counter.setter
    def last_memory_extraction_counter(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("last_memory_extraction_counter must be an int >= 0")
        self.state.messages_since_extraction = value

    # ------------------------------------------------------------------ decisions

    def compute_add_messages_extraction_decision(
        self, new_message_count: int
    ) -> _AddMessagesExtractionDecision:
        """Count ``new_message_count`` added messages and say what is due now (the counters
        of what becomes due restart)."""
        if isinstance(new_message_count, bool) or not isinstance(new_message_count, int):
            raise TypeError("new_message_count must be an int")
        state = self.state
        state.messages_since_extraction += new_message_count
        state.messages_since_summary += new_message_count
        extract = self._config.extract_memories and _due(
            state.messages_since_extraction, self.memory_extraction_frequency
        )
        summary = self.enable_context_summary and _due(
            state.messages_since_summary, self.context_summary_update_frequency
        )
        if extract:
            state.messages_since_extraction = 0
        if summary:
            state.messages_since_summary = 0
        return _AddMessagesExtractionDecision(extract, summary, new_message_count)

    def invalidate_history_dependent_state(self) -> None:
        """Forget the running summary and counters (after the history changed)."""
        self.state = MemoryExtractionState()

    def get_recent_messages(
        self, max_messages: int, messages: Sequence[Message | ThreadMessageTypedDictT] | None = None
    ) -> list[Message]:
        """The last ``max_messages`` of ``messages`` (none when ``max_messages`` <= 0)."""
        if max_messages <= 0 or not messages:
            return []
        return [as_message(m) for m in messages[-max_messages:]]

    # ------------------------------------------------------------------ extraction

    def extract_memories(
        self,
        existing_messages: Sequence[Message | ThreadMessageTypedDictT],
        new_messages: Sequence[Message | ThreadMessageTypedDictT],
        context_summary: str = "",
    ) -> list[ExtractedMemory]:
        """Memories found in ``new_messages`` (earlier messages and the summary are context).

        When a summary refresh is due by the in-memory counters it is asked for in the same
        call and kept in ``state``.
        """
        decision = self.compute_add_messages_extraction_decision(0)
        memories, summary, topics = self.extract(
            existing_messages,
            new_messages,
            context_summary or self.state.context_summary,
            with_summary=decision.update_summary,
        )
        if summary is not None:
            self.state.context_summary = summary
            self.state.topics = topics
        return memories

    async def extract_memories_with_precomputed_decision_async(
        self,
        existing_messages: Sequence[Message | ThreadMessageTypedDictT],
        new_messages: Sequence[Message | ThreadMessageTypedDictT],
        extraction_decision: _AddMessagesExtractionDecision,
        context_summary: str = "",
    ) -> list[ExtractedMemory]:
        """Like :meth:`extract_memories_async`, for a decision taken when the messages were
        added."""
        if not extraction_decision.extract:
            return []
        memories, summary, topics = await asyncio.to_thread(
            self.extract,
            existing_messages,
            new_messages,
            context_summary or self.state.context_summary,
            with_summary=extraction_decision.update_summary,
        )
        if summary is not None:
            self.state.context_summary = summary
            self.state.topics = topics
        return memories

    def extract(
        self,
        existing_messages: Sequence[Message | ThreadMessageTypedDictT],
        new_messages: Sequence[Message | ThreadMessageTypedDictT],
        context_summary: str = "",
        *,
        with_summary: bool = False,
    ) -> tuple[list[ExtractedMemory], str | None, tuple[str, ...]]:
        """Memories of ``new_messages``, plus the refreshed summary and topics when
        ``with_summary`` (None when it was not refreshed in this call)."""
        if self._llm is None:
            raise ValueError("memory extraction needs an llm")
        new = [as_message(m) for m in new_messages]
        earlier = [as_message(m) for m in existing_messages]
        if not new:
            return [], None, ()
        summary_text = context_summary or ""
        self._labels = {}
        if self._image_mode in ("image", "memory"):
            images = [image for m in new for image in images_of(m.content)]
            self._labels = {image.id: f"I{k}" for k, image in enumerate(images, 1)}
        existing = self._existing_for_links(new)
        chunks = self._plan_chunks(earlier, new, summary_text, with_summary, existing)
        combined = with_summary and len(chunks) == 1
        out: list[ExtractedMemory] = []
        found_summary: list[tuple[str, tuple[str, ...]]] = []
        for context, chunk, summary_part in chunks:
            out.extend(self._ask(context, chunk, summary_part, combined, found_summary, existing))
        new_summary, topics = found_summary[0] if found_summary else (None, ())
        return self._merge_repeats(out), new_summary, topics

    @property
    def _image_mode(self) -> str:
        return str(self._config.memory_extraction_image_context.value)

    def _text(self, message: Message) -> str:
        return prompt_text(message, self._image_mode, self._labels)

    # ------------------------------------------------------------------ links in extraction

    def _existing_for_links(self, new: list[Message]) -> list[MemoryLinkTargetCandidate]:
        """DURING_EXTRACTION: the stored memories closest to the new messages (up to
        ``DURING_LINK_CANDIDATES``, within a quarter of the prompt budget and the link
        budget); none in the other modes."""
        during = MemoryLinkExtractionMode.DURING_EXTRACTION
        if self._config.memory_link_extraction_mode is not during:
            return []
        finder = getattr(self._search, "link_candidates", None)
        texts = [t for t in (prompt_text(m).strip() for m in new) if t]  # captions as text
        if not texts:
            return []
        k = _PER_NEW_MESSAGE_LINK_CANDIDATES
        if callable(finder):
            found = finder(texts, k)
        else:
            found = [_run_sync(self._search(text, k)) or [] for text in texts]
        ranked: dict[str, MemoryLinkTargetCandidate] = {}
        for candidates in found:
            for candidate in candidates:
                if isinstance(candidate, MemoryLinkTargetCandidate):
                    ranked.setdefault(candidate.memory_id, candidate)
        chosen = sorted(ranked.values(), key=lambda c: -(c.similarity or 0.0))
        chosen = chosen[:DURING_LINK_CANDIDATES]
        caps = [
            v
            for v in (
                self.memory_link_extraction_token_limit,
                self.memory_extraction_token_limit // 4,
            )
            if v >= 1
        ]
        while chosen and caps and estimate_tokens(existing_memories_block(chosen)) > min(caps):
            chosen = chosen[:-1]
        return chosen

    def _link_parts(
        self, existing: list[MemoryLinkTargetCandidate]
    ) -> tuple[str, str, dict[str, Any] | None]:
        """The prompt block, instructions and schema of DURING_EXTRACTION links."""
        if not existing:
            return "", "", None
        return (
            existing_memories_block(existing),
            DURING_EXTRACTION_LINKS,
            links_property(len(existing)),
        )

    def _image_sources(self, raw: tuple[Any, ...]) -> tuple[str, ...]:
        """MEMORY context: the images a memory cites (labels of this job's images)."""
        by_label = {label: image_id for image_id, label in self._labels.items()}
        out: list[str] = []
        for label in raw:
            image_id = by_label.get(str(label).strip()) if isinstance(label, str | int) else None
            if image_id is None:
                log.warning("extraction: %r names no image of the new messages; ignored", label)
            elif image_id not in out:
                out.append(image_id)
        return tuple(out)

    @staticmethod
    def _resolve_links(
        raw: tuple[tuple[Any, Any], ...], existing: list[MemoryLinkTargetCandidate]
    ) -> list[tuple[MemoryLinkTargetCandidate, str]]:
        out: list[tuple[MemoryLinkTargetCandidate, str]] = []
        for label, relation_name in raw:
            number = read_number(label)
            relation = read_relation(relation_name)
            if number is None or not 1 <= number <= len(existing):
                log.warning("extraction links: %r names no existing memory; dropped", label)
                continue
            if relation is None:
                log.warning("extraction links: unknown relation %r dropped", relation_name)
                continue
            if relation == "none":
                continue
            target = existing[number - 1]
            if any(t.memory_id == target.memory_id for t, _ in out):
                log.warning("extraction links: %r linked twice; kept the first", label)
                continue
            out.append((target, relation))
        return out

    def _ask(
        self,
        context: list[tuple[Message, str]],
        chunk: list[tuple[Message, str]],
        summary: str,
        with_summary: bool,
        found_summary: list[tuple[str, tuple[str, ...]]],
        existing: list[MemoryLinkTargetCandidate] | None = None,
    ) -> list[ExtractedMemory]:
        """Memories of one prompt's new messages. An answer cut off at the model's token
        limit is asked again for each half of the messages (down to single messages), since
        fewer messages need a shorter answer."""
        existing = existing or []
        links_block, link_rules, links_schema = self._link_parts(existing)
        block = conversation_block(self._format, summary, context, chunk)
        if links_block:
            block = links_block + "\n" + block
        chunk_images = [i for m, _ in chunk for i in images_of(m.content)]
        labels = [self._labels[i.id] for i in chunk_images if i.id in self._labels]
        sent = [i for i in chunk_images if i.bytes] if self._image_mode == "image" else []
        image_rules = IMAGE_RULES if labels else ""
        if sent:
            image_rules += IMAGES_FOLLOW
        prompt: list[Any] = extraction_prompt(
            block,
            with_summary=with_summary,
            custom_instructions=self._config.memory_extraction_custom_instructions,
            link_instructions=link_rules + image_rules,
            custom_link_instructions=self._config.memory_link_extraction_custom_instructions,
        )
        if sent:
            prompt[-1] = Message(role="user", content=(TextContent(block), *sent))
            validate_image_request([prompt[-1]], self.image_limits)
        count = len(chunk)

        def read(data: Any) -> ParsedAnswer:
            return read_memories(data, count)

        assert self._llm is not None
        outcome = ask_json(
            self._llm,
            prompt,
            extraction_schema(with_summary, links_schema, labels),
            read,
            "memory extraction",
        )
        if outcome.truncated and count > 1:
            log.warning(
                "extraction answer cut off: asking again for %d + %d messages",
                count // 2,
                count - count // 2,
            )
            half = count // 2
            first = self._ask(context, chunk[:half], summary, False, found_summary, existing)
            rest = self._ask(
                (context + chunk[:half])[-len(context) :] if context else [],
                chunk[half:],
                summary,
                False,
                found_summary,
                existing,
            )
            return first + rest
        if outcome.parsed is None:
            return []
        if with_summary and outcome.parsed.summary:
            found_summary.append((outcome.parsed.summary, outcome.parsed.topics or ()))
        return self._to_memories(outcome.parsed, [m for m, _ in chunk], existing)

    def _plan_chunks(
        self,
        earlier: list[Message],
        new: list[Message],
        summary: str,
        with_summary: bool,
        existing: list[MemoryLinkTargetCandidate] | None = None,
    ) -> list[tuple[list[tuple[Message, str]], list[tuple[Message, str]], str]]:
        """Split the new messages into prompts that fit the token limit; each prompt gets the
        earlier messages (newest first) that still fit, and the summary (cut if it would
        take more than a quarter of the budget)."""
        texts_new = [(m, self._text(m)) for m in new]
        texts_old = [(m, self._text(m)) for m in earlier]
        limit = self.memory_extraction_token_limit
        if limit < 1:
            return [(texts_old, texts_new, summary)]
        links_block, link_rules, links_schema = self._link_parts(existing or [])
        fixed = estimate_tokens(
            "".join(
                p["content"]
                for p in extraction_prompt(
                    links_block,
                    with_summary=with_summary,
                    custom_instructions=self._config.memory_extraction_custom_instructions,
                    link_instructions=link_rules,
                    custom_link_instructions=(
                        self._config.memory_link_extraction_custom_instructions
                    ),
                )
            )
            + str(extraction_schema(with_summary, links_schema))
        )
        summary = _cut(summary, max(0, limit // 4)) if summary else ""
        budget = max(1, limit - fixed - estimate_tokens(summary))

        def cost(text: str) -> int:
            return estimate_tokens(text) + _PER_MESSAGE_OVERHEAD

        chunks: list[list[tuple[Message, str]]] = [[]]
        used = images_used = bytes_used = 0
        sending = self._image_mode == "image"
        limits = self.image_limits
        for message, text in texts_new:
            if cost(text) > budget:  # one message alone over budget: its copy is cut
                text = _cut(text, budget - _PER_MESSAGE_OVERHEAD)
            sent = [i for i in images_of(message.content) if i.bytes] if sending else []
            size = sum(len(i.bytes or b"") for i in sent)
            over_images = sent and (
                images_used + len(sent) > limits.max_images_per_llm_request
                or bytes_used + size > limits.max_total_raw_image_bytes_per_llm_request
            )
            if chunks[-1] and (used + cost(text) > budget or over_images):
                chunks.append([])
                used = images_used = bytes_used = 0
            chunks[-1].append((message, text))
            used += cost(text) + IMAGE_TOKENS * len(sent)
            images_used += len(sent)
            bytes_used += size
        planned = []
        before = list(texts_old)
        for chunk in chunks:
            room = budget - sum(cost(t) for _, t in chunk)
            context: list[tuple[Message, str]] = []
            for message, text in reversed(before[-len(texts_old) :] if texts_old else []):
                if cost(text) > room:
                    break
                context.insert(0, (message, text))
                room -= cost(text)
            planned.append((context, chunk, summary))
            before.extend(chunk)
        return planned

    def _to_memories(
        self,
        parsed: ParsedAnswer,
        chunk: list[Message],
        existing: list[MemoryLinkTargetCandidate] | None = None,
    ) -> list[ExtractedMemory]:
        inherit = self._config.memory_extraction_inherit_message_metadata
        out = []
        for item in parsed.memories:
            numbers = sorted(item.sources) or range(1, len(chunk) + 1)
            sources = [chunk[n - 1] for n in numbers]
            metadata: dict[str, Any] | None = None
            if inherit:
                merged: dict[str, Any] = {}
                for message in sources:
                    for key, value in (message.metadata or {}).items():
                        if key == AGENT_MEMORY_METADATA_KEY:
                            continue  # the SDK's reserved key is never inherited
                        if inherit is True or (isinstance(inherit, tuple) and key in inherit):
                            merged[key] = value
                metadata = merged or None
            stamps = [m.timestamp for m in sources if m.timestamp]
            out.append(
                ExtractedMemory(
                    content=item.content,
                    memory_type=item.memory_type,
                    source_message_ids=tuple(m.id for m in sources if m.id),
                    metadata=metadata,
                    timestamp=stamps[-1] if stamps else None,
                    links=self._resolve_links(item.links, existing or []),
                    source_image_ids=self._image_sources(item.images),
                )
            )
        return out

    @staticmethod
    def _merge_repeats(memories: list[ExtractedMemory]) -> list[ExtractedMemory]:
        """Memories of one run that restate each other (text alone: they have no vectors
        yet) become one, with the union of their sources."""
        kept: list[ExtractedMemory] = []
        for memory in memories:
            twin = next(
                (
                    k
                    for k in kept
                    if normalize(k.content) == normalize(memory.content)
                    or jaccard(k.content, memory.content) >= 0.9
                ),
                None,
            )
            if twin is None:
                kept.append(memory)
            else:
                twin.source_message_ids = tuple(
                    dict.fromkeys(twin.source_message_ids + memory.source_message_ids)
                )
                twin.source_image_ids = tuple(
                    dict.fromkeys(twin.source_image_ids + memory.source_image_ids)
                )
                linked = {t.memory_id for t, _ in twin.links}
                twin.links += [(t, r) for t, r in memory.links if t.memory_id not in linked]
        return kept

    # ------------------------------------------------------------------ resolution

    def resolve_memory_links(self, memories: list[ExtractedMemory]) -> None:
        """Compare each memory with the closest stored ones of its user and agent: a
        restatement (see ``_dedup``) gets ``duplicate_of``; the others keep their
        ``candidates``. Links are decided by the caller (``_service``, POST_EXTRACTION) or
        during extraction (``links``)."""
        many = getattr(self._search, "many", None)
        if callable(many):  # one lookup for the whole batch
            looked_up = many([m.content for m in memories], DUPLICATE_CANDIDATES)
        else:
            looked_up = [
                _run_sync(self._search(m.content, DUPLICATE_CANDIDATES)) or [] for m in memories
            ]
        threshold = getattr(self._search, "duplicate_threshold", DUPLICATE_COSINE)
        for memory, found in zip(memories, looked_up, strict=True):
            candidates = [c for c in found if isinstance(c, MemoryLinkTargetCandidate)]
            memory.candidates = candidates
            best = None
            for candidate in candidates:
                similar = is_duplicate(
                    memory.content, candidate.content, candidate.similarity, threshold
                )
                if similar and (
                    best is None or (candidate.similarity or 0.0) > (best.similarity or 0.0)
                ):
                    best = candidate
            if best is not None:
                memory.duplicate_of = best.memory_id

    # ------------------------------------------------------------------ summaries

    def update_context_summary(
        self,
        previous_summary: str,
        messages: Sequence[Message | ThreadMessageTypedDictT],
        token_limit: int,
    ) -> tuple[str, tuple[str, ...]] | None:
        """The running summary updated with ``messages`` (in several calls when they do not
        fit ``token_limit`` tokens; < 1 = no limit), and its topics. None when the model gave
        nothing usable."""
        if self._llm is None:
            raise ValueError("summaries need an llm")
        items = [(as_message(m), prompt_text(as_message(m))) for m in messages]
        if not items:
            return None
        summary, changed = previous_summary, False
        topics: tuple[str, ...] = ()
        fixed = estimate_tokens("".join(p["content"] for p in summary_prompt("")))
        start = 0
        while start < len(items):
            budget = (
                10**9 if token_limit < 1 else max(1, token_limit - fixed - estimate_tokens(summary))
            )
            chunk: list[tuple[Message, str]] = []
            used = 0
            while start < len(items):
                message, text = items[start]
                cost = estimate_tokens(text) + _PER_MESSAGE_OVERHEAD
                if chunk and used + cost > budget:
                    break
                if cost > budget:
                    text = _cut(text, budget - _PER_MESSAGE_OVERHEAD)
                chunk.append((message, text))
                used += cost
                start += 1
            parsed = ask_json(
                self._llm,
                summary_prompt(conversation_block(self._format, summary, [], chunk)),
                summary_schema(),
                read_summary,
                "summary",
            ).parsed
            if parsed is not None and parsed.summary:
                summary, topics, changed = parsed.summary, parsed.topics or topics, True
        return (summary, topics) if changed else None

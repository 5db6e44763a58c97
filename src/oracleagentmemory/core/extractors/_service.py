"""Memory extraction for one client: from ``add_messages`` to stored memories and summaries.

The thread hands its messages here. When the thread has an LLM and extraction or the running
summary is on, the messages are written together with the extraction job they make due (one
transaction, see ``store._extraction``); the job then runs before ``add_messages`` returns
(INLINE) or on the client's background queue (BACKGROUND). A job loads its messages, makes
prompt copies that fit the limits, asks the LLM, drops what is unusable or a duplicate and
writes the memories, their provenance, the refreshed summary and the job's completion in one
transaction. A stored job is held by a lease this client's heartbeat renews
(``store._leases``); the same heartbeat takes over the jobs whose lease ran out (a node
that died or froze, whatever its hostname), so a dead node's jobs are finished by a running
one within about a lease and a third, and only the lease holder writes a job's result.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.records import (
    ImageRecord,
    ThreadRecord,
)
from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core._client._runtime import ResolvedSettings
from oracleagentmemory.core._client.messages._captions import describe_image
from oracleagentmemory.core._client.messages._message_content import (
    load_images,
    message_from_record,
)
from oracleagentmemory.core._client.search._search import IMAGE_SOURCE_PREFIX
from oracleagentmemory.core._shared._actor import acting_as
from oracleagentmemory.core.extractors._background import (
    BackgroundQueue,
    MemoryExtractionError,
    MemoryExtractionStats,
    configured_queue_size,
    configured_workers,
)
from oracleagentmemory.core.extractors._dedup import duplicate_threshold
from oracleagentmemory.core.extractors._extractor import (
    ExtractedMemory,
    MemoryLinkTargetCandidate,
    batch_order,
)
from oracleagentmemory.core.extractors._linking import (
    decide_links,
    reason as _reason,
    write_decided_links,
)
from oracleagentmemory.core.extractors._oneshotextractor import OneShotThreadMemoryExtractor
from oracleagentmemory.core.extractors._shortening import MessageShortener
from oracleagentmemory.core.extractors._similar import keeps_vectors, similar_memories
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    ResolvedMemoryExtractionConfig,
)
from oracleagentmemory.core.imageinputlimitconfig import (
    ImageInputLimitConfig,
    ResolvedImageInputLimitConfig,
)
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.store._extraction import (
    PendingWork,
    SummaryWrite,
    summary_of,
    topics_of,
)
from oracleagentmemory.core.store._leases import (
    LeaseKeeper,
    LeaseLost,
    activate as _activate,
    deactivate as _deactivate,
    process_owner,
    takeover,
    try_activate,
)
from oracleagentmemory.core.store._sql_store import SQLMemoryStore
from oracleagentmemory.core.store.schema._planning import new_id

log = logging.getLogger("oracleagentmemory.extraction")

MAX_ATTEMPTS: Final = 3
"""A job whose LLM call raised is kept for the next client this many times, then dropped."""
DELETE_WAIT_SECONDS: Final = 300.0
_DEFAULT_IMAGE_LIMITS: Final = ImageInputLimitConfig().resolve()
"""How long deletes wait for earlier background extraction (page 001)."""


@dataclass(frozen=True)
class ThreadContext:
    """Who a thread belongs to."""

    thread_id: str
    user_id: str | None
    agent_id: str | None


@dataclass(frozen=True)
class ExtractionSettings:
    """The settings one extraction job runs with, resolved per field and JSON-ready (stored
    with a pending job, so a resumed job runs as it was accepted)."""

    config: ResolvedMemoryExtractionConfig
    max_message_token_length: int
    message_shortening_input_token_limit: int
    context_card_token_limit: int
    image_limits: ResolvedImageInputLimitConfig = _DEFAULT_IMAGE_LIMITS

    @classmethod
    def resolve(cls, settings: ResolvedSettings) -> ExtractionSettings:
        config = settings.config("memory_extraction_config", MemoryExtractionConfig)
        return cls(
            config.resolve(),
            int(settings.get("max_message_token_length")),
            int(settings.get("message_shortening_input_token_limit")),
            int(settings.get("context_card_token_limit")),
            settings.config("image_input_limit_config", ImageInputLimitConfig).resolve(),
        )

    def memory_config(self) -> MemoryExtractionConfig:
        return MemoryExtractionConfig(**dataclasses.asdict(self.config))

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.memory_config().to_json(),
            "max_message_token_length": self.max_message_token_length,
            "message_shortening_input_token_limit": self.message_shortening_input_token_limit,
            "context_card_token_limit": self.context_card_token_limit,
            "image_limits": dataclasses.asdict(self.image_limits),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExtractionSettings:
        return cls(
            MemoryExtractionConfig.from_json(data.get("config") or {}).resolve(),
            int(data.get("max_message_token_length", 15000)),
            int(data.get("message_shortening_input_token_limit", 30000)),
            int(data.get("context_card_token_limit", 100000)),
            ImageInputLimitConfig(**(data.get("image_limits") or {})).resolve(),
        )


def provenance(memory: ExtractedMemory) -> tuple[str, ...]:
    """The provenance rows of an extracted memory: its messages, then its images."""
    return memory.source_message_ids + tuple(
        IMAGE_SOURCE_PREFIX + image_id for image_id in memory.source_image_ids
    )


def supports_extraction(store: OracleMemoryStore) -> TypeGuard[SQLMemoryStore]:
    """Whether ``store`` keeps the bookkeeping extraction needs (the SQL stores do)."""
    return isinstance(store, SQLMemoryStore)


class ExtractionService:
    """A client's memory extraction: decisions, the background queue, jobs and summaries."""

    def __init__(self, store: OracleMemoryStore, llm: ILlm | None) -> None:
        self._store = store
        self._llm = llm
        # A store working through its caller's connection runs every job before the call
        # that made it returns: the caller may close that connection right after.
        self._queue = BackgroundQueue(
            configured_workers(),
            configured_queue_size(),
            inline=bool(getattr(getattr(store, "_dialect", None), "borrowed", False)),
        )
        self._shortener = MessageShortener()
        self._owner = process_owner()
        self._borrowed = bool(getattr(getattr(store, "_dialect", None), "borrowed", False))
        self._leases = LeaseKeeper(store, self._owner, self)
        self._lock = threading.Lock()
        self._counts = {
            "completed": 0,
            "failed": 0,
            "memories": 0,
            "duplicates": 0,
            "links": 0,
            "invalidated": 0,
            "captions": 0,
        }

    @property
    def _bookkeeping(self) -> SQLMemoryStore:
        store = self._store
        if not supports_extraction(store):
            raise TypeError(
                f"{type(store).__name__} cannot record extraction work; memory extraction "
                "needs one of the SQL stores"
            )
        return store

    # ------------------------------------------------------------------ add_messages

    def add_messages(
        self,
        ctx: ThreadContext,
        settings: ResolvedSettings,
        batch: PendingRecordBatch,
        store_kwargs: dict[str, Any],
        caption_ids: Sequence[str] = (),
    ) -> list[str]:
        """Store a thread's messages and run or queue the extraction they make due;
        ``caption_ids``: images of these messages to describe in the background, queued on
        the thread before its extraction."""
        llm = settings.get("llm")
        es = ExtractionSettings.resolve(settings) if llm is not None else None
        if (
            llm is None
            or es is None
            or not (es.config.extract_memories or es.config.enable_context_summary)
        ):
            ids = self._store.add_batches([batch], **store_kwargs)
            if llm is not None and es is not None:
                self._queue_captions(caption_ids, ctx, llm, settings, es)
            return ids
        background = es.config.extraction_mode is MemoryExtractionMode.BACKGROUND
        if (background or caption_ids) and self._queue.closed:
            raise RuntimeError("this client is closed: it accepts no more background work")
        work_id = new_id()
        _activate(work_id)  # before the job is visible: no other client takes it over
        self._keep_leases()
        handed = False  # to run_job (inline) or to the queue, which then hold it
        try:
            ids, work = self._bookkeeping.add_messages_with_work(
                batch,
                thread_id=ctx.thread_id,
                extract_every=es.config.memory_extraction_frequency
                if es.config.extract_memories
                else None,
                summarize_every=es.config.context_summary_update_frequency
                if es.config.enable_context_summary
                else None,
                payload={"settings": es.to_json()},
                owner=self._owner,
                work_id=work_id,
                **store_kwargs,
            )
            self._queue_captions(caption_ids, ctx, llm, settings, es)
            if work is None:
                return ids
            handed = True
            if not background:
                self._run_inline(work, llm)
                return ids
            self._submit(
                work,
                ctx,
                llm,
                es.config.background_extraction_queue_full_behavior,
                es.config.background_extraction_queue_put_timeout_seconds,
            )
            return ids
        finally:
            if not handed:
                _deactivate(work_id)

    def _run_inline(self, work: PendingWork, llm: ILlm) -> None:
        try:
            self.run_job(work, llm)
        except Exception:
            with self._lock:
                self._counts["failed"] += 1
            self._queue.failures.add(work.thread_id, _reason())
            log.warning(
                "memory extraction for thread %r failed: %s",
                work.thread_id,
                _reason(),
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
        else:
            with self._lock:
                self._counts["completed"] += 1

    def _submit(
        self,
        work: PendingWork,
        ctx: ThreadContext,
        llm: ILlm,
        behavior: BackgroundExtractionQueueFullBehavior,
        timeout: float,
        *,
        resumed: bool = False,
    ) -> bool:
        _activate(work.id)  # queued: this process will run it
        try:
            accepted = self._queue.submit(
                ctx.thread_id,
                lambda: self.run_job(work, llm),
                owners=(ctx.user_id, ctx.agent_id),
                behavior=behavior,
                timeout=timeout,
                resumed=resumed,
            )
        except BaseException:
            _deactivate(work.id)
            if not resumed:
                self._forget(work)
            raise
        if not accepted:
            _deactivate(work.id)
            if not resumed:
                self._forget(work)  # dropped on purpose: nothing to resume
        return accepted

    def _forget(self, work: PendingWork) -> None:
        try:
            self._bookkeeping.finish_pending_work(work.id)
        except Exception:
            log.warning("could not remove pending extraction job %s: %s", work.id, _reason())

    # ------------------------------------------------------------------ jobs

    def run_job(self, work: PendingWork, llm: ILlm) -> None:
        """Run one stored job to completion (memories, summary and the job's removal are
        written together); an LLM error leaves the job for a later client, up to
        ``MAX_ATTEMPTS`` times. A job this process lost the lease of writes nothing."""
        _activate(work.id)
        try:
            self._run_job(work, llm)
        except LeaseLost:
            log.warning(
                "extraction job %s was taken over by another node; its result here is dropped",
                work.id,
            )
        finally:
            _deactivate(work.id)

    def _run_job(self, work: PendingWork, llm: ILlm) -> None:
        # The job's reads need what this store had committed when it began (its messages,
        # or its claim; the jobs before it): a read replica serves them while the client's
        # later writes replay. Those after the job's result is written need that too.
        with self._store._reads_as_of_now() as reads:
            self._run_job_reading(work, llm, reads)

    def _run_job_reading(self, work: PendingWork, llm: ILlm, reads: Any) -> None:
        store = self._bookkeeping
        thread = self._store.get("thread", work.thread_id)
        if not isinstance(thread, ThreadRecord):
            store.finish_pending_work(work.id, self._owner)  # the thread was deleted meanwhile
            return
        ctx = ThreadContext(thread.id, thread.user_id, thread.agent_id)
        try:
            with acting_as(f"extraction:{work.id}"):  # what it writes names the job
                self._execute(work, ctx, llm, reads)
        except LeaseLost:
            raise
        except Exception:
            try:
                attempts = store.retry_pending_work(work.id, self._owner)
                if attempts >= MAX_ATTEMPTS:
                    log.error("giving up extraction job %s after %d attempts", work.id, attempts)
                    store.finish_pending_work(work.id, self._owner)
            except Exception:
                log.warning("could not record the failed attempt of job %s", work.id)
            raise

    def _execute(self, work: PendingWork, ctx: ThreadContext, llm: ILlm, reads: Any) -> None:
        payload = work.payload
        es = ExtractionSettings.from_json(payload.get("settings") or {})
        first = int(payload.get("from_seq_no", 0))
        through = int(payload.get("through_seq_no", 0))
        extract = bool(payload.get("extract")) and es.config.extract_memories
        summarize = bool(payload.get("summarize")) and es.config.enable_context_summary
        extractor = self._extractor(llm, ctx, es)
        stored = self._store.get("thread_summary", ctx.thread_id)
        previous, covered = summary_of(stored)
        if not es.config.enable_context_summary:
            previous = ""
        memories: list[ExtractedMemory] = []
        summary: SummaryWrite | None = None
        if extract:
            sending = (
                es.config.memory_extraction_image_context is MemoryExtractionImageContext.IMAGE
            )
            new = load_images(
                self._store, self._messages(ctx.thread_id, first + 1, through), sending
            )
            earlier: list[Message] = []
            window = es.config.memory_extraction_window
            if window > 0 and window > len(new) and first > 0:
                earlier = load_images(
                    self._store,
                    self._messages(ctx.thread_id, None, first, last_n=window - len(new)),
                )
            if new:
                combine = summarize and covered == first
                memories, text, topics = extractor.extract(
                    self._prompt_copies(earlier, llm, es),
                    self._prompt_copies(new, llm, es),
                    previous,
                    with_summary=combine,
                )
                if text is not None:
                    summary = SummaryWrite(
                        ctx.thread_id, ctx.user_id, ctx.agent_id, text, topics, through
                    )
                extractor.resolve_memory_links(memories)
        links = decide_links(self._store, memories, ctx, llm, es.config)
        if summarize and summary is None and through > covered:
            pending = self._messages(ctx.thread_id, covered + 1, through)
            refreshed = extractor.update_context_summary(
                previous,
                self._prompt_copies(pending, llm, es),
                es.config.memory_extraction_token_limit,
            )
            if refreshed is not None:
                summary = SummaryWrite(
                    ctx.thread_id, ctx.user_id, ctx.agent_id, *refreshed, through
                )
        kept = batch_order(memories)
        merged: dict[str, list[str]] = {}
        for memory in memories:
            if memory.duplicate_of is not None:
                merged.setdefault(memory.duplicate_of, []).extend(provenance(memory))
        if reads is not None:  # the links' reads below follow this write (read-your-writes)
            reads.done()
        written = self._bookkeeping.commit_extraction(
            extractor.build_pending_memory_batches(
                memories, ctx.thread_id, ctx.user_id, ctx.agent_id
            ),
            sources=[provenance(m) for m in kept],
            merged_sources=merged,
            summary=summary,
            done_work_id=work.id,
            thread_id=ctx.thread_id,
            lease_owner=self._owner,
        )
        linked = write_decided_links(self._store, kept, written, links, ctx, es.config)
        with self._lock:
            self._counts["memories"] += len(written)
            self._counts["duplicates"] += len(memories) - len(kept)
            self._counts["links"] += len(linked.relation_ids)
            self._counts["invalidated"] += len(linked.invalidated)

    def _messages(
        self, thread_id: str, start: int | None, end: int | None, last_n: int | None = None
    ) -> list[Message]:
        records = self._store.list_thread_messages(
            thread_id, range_start_seq_no=start, range_end_seq_no=end, last_n=last_n
        )
        return [message_from_record(r) for r in records]

    def _prompt_copies(
        self, messages: list[Message], llm: ILlm, es: ExtractionSettings
    ) -> list[Message]:
        return self._shortener.shorten(
            messages, llm, es.max_message_token_length, es.message_shortening_input_token_limit
        )

    def _extractor(
        self, llm: ILlm, ctx: ThreadContext, es: ExtractionSettings
    ) -> OneShotThreadMemoryExtractor:
        extractor = OneShotThreadMemoryExtractor(
            llm, self._search_memories(ctx), es.memory_config()
        )
        extractor.image_limits = es.image_limits
        return extractor

    def _search_memories(self, ctx: ThreadContext) -> Any:
        """Candidates for deduplication: the closest memories of the thread's user and agent
        (any thread), with the cosine similarity of their text to the query's.

        ``search(text, k)`` serves one text; ``search.many(texts, k)`` serves a whole job with
        two embedding calls (the memories, then their candidates) when the store keeps
        vectors; a store without vectors is searched by keyword and gives no similarity.
        ``search.link_candidates(texts, k)`` finds the candidates of automatic links: the
        user's memories of any agent and thread (none when the thread has no user).
        """
        store = self._store
        scope = {
            "user_id": ctx.user_id,
            "agent_id": ctx.agent_id,
            "exact_user_match": True,
            "exact_agent_match": True,
        }

        def many(texts: list[str], k: int) -> list[list[MemoryLinkTargetCandidate]]:
            return similar_memories(store, texts, k, scope)

        def search(text: str, k: int) -> list[MemoryLinkTargetCandidate]:
            return many([text], k)[0]

        def link_candidates(texts: list[str], k: int) -> list[list[MemoryLinkTargetCandidate]]:
            if ctx.user_id is None:
                return [[] for _ in texts]
            return similar_memories(
                store, texts, k, {"user_id": ctx.user_id, "exact_user_match": True}
            )

        embedder: Any = getattr(store, "embedder", None)
        search.many = many  # type: ignore[attr-defined]
        search.link_candidates = link_candidates  # type: ignore[attr-defined]
        search.duplicate_threshold = duplicate_threshold(  # type: ignore[attr-defined]
            getattr(embedder, "model_identity", None) if keeps_vectors(store) else None
        )
        return search

    # ------------------------------------------------------------------ image captions

    def _queue_captions(
        self,
        image_ids: Sequence[str],
        ctx: ThreadContext,
        llm: ILlm,
        settings: ResolvedSettings,
        es: ExtractionSettings,
    ) -> None:
        limits = settings.config("image_input_limit_config", ImageInputLimitConfig)
        for image_id in image_ids:
            self.queue_caption(
                image_id,
                llm,
                limits,
                key=ctx.thread_id,
                owners=(ctx.user_id, ctx.agent_id),
                behavior=es.config.background_extraction_queue_full_behavior,
                timeout=es.config.background_extraction_queue_put_timeout_seconds,
                replace=False,
            )

    def queue_caption(
        self,
        image_id: str,
        llm: ILlm,
        limits: Any,
        *,
        key: str,
        owners: tuple[str | None, str | None],
        behavior: BackgroundExtractionQueueFullBehavior,
        timeout: float,
        replace: bool,
    ) -> bool:
        """Queue a caption for a stored image (on ``key``'s queue, after that key's earlier
        work); True when accepted. ``replace``: overwrite a description written meanwhile
        (``update_image(description=None)``); otherwise a described image is left alone."""
        if self._queue.closed:
            raise RuntimeError("this client is closed: it accepts no more background work")

        def job() -> None:
            self.caption_image(image_id, llm, limits, replace=replace)

        return self._queue.submit(
            key,
            job,
            owners=owners,
            behavior=behavior,
            timeout=timeout,
        )

    def caption_image(self, image_id: str, llm: ILlm, limits: Any, *, replace: bool) -> bool:
        """Describe a stored image with ``llm`` and store the caption; False when there was
        nothing to do (image gone, bytes missing, or already described and not ``replace``)."""
        record = self._store.get("image", image_id, include_bytes=True)
        if not isinstance(record, ImageRecord) or record.bytes is None:
            return False
        if record.content and not replace:
            return False
        text = describe_image(llm, record.bytes, record.mime_type, limits)
        self._store.update("image", image_id, text=text)
        with self._lock:
            self._counts["captions"] += 1
        return True

    # ------------------------------------------------------------------ summaries

    def thread_summary(
        self, ctx: ThreadContext, settings: ResolvedSettings, cut_seq_no: int
    ) -> tuple[str, tuple[str, ...]] | None:
        """The LLM summary of a thread's messages up to ``cut_seq_no``, or None when the
        thread has no LLM summary (no LLM, summaries off, no messages, or the LLM failed).

        The stored summary is reused while fewer than ``context_summary_update_frequency``
        messages came after it (or while a background job of this thread will refresh it);
        otherwise it is refreshed now and stored. A summary for an earlier cut than the
        stored one is made from scratch and not stored.
        """
        llm = settings.get("llm")
        if llm is None or cut_seq_no <= 0 or not supports_extraction(self._store):
            return None
        es = ExtractionSettings.resolve(settings)
        if not es.config.enable_context_summary:
            return None
        stored = self._store.get("thread_summary", ctx.thread_id)
        text, covered = summary_of(stored)
        topics = topics_of(stored)
        if stored is not None and covered == cut_seq_no:
            return text, topics
        try:
            extractor = self._extractor(llm, ctx, es)
            limit = es.context_card_token_limit
            if stored is not None and covered < cut_seq_no:
                pending = self._messages(ctx.thread_id, covered + 1, cut_seq_no)
                every = es.config.context_summary_update_frequency
                if (every > 0 and len(pending) < every) or self._queue.has_work(ctx.thread_id):
                    return text, topics
                refreshed = extractor.update_context_summary(
                    text, self._prompt_copies(pending, llm, es), limit
                )
                if refreshed is None:
                    return text, topics
                self._bookkeeping.save_thread_summary(
                    SummaryWrite(ctx.thread_id, ctx.user_id, ctx.agent_id, *refreshed, cut_seq_no)
                )
                return refreshed
            messages = self._messages(ctx.thread_id, None, cut_seq_no)
            fresh = extractor.update_context_summary(
                "", self._prompt_copies(messages, llm, es), limit
            )
            if fresh is not None and stored is None:
                self._bookkeeping.save_thread_summary(
                    SummaryWrite(ctx.thread_id, ctx.user_id, ctx.agent_id, *fresh, cut_seq_no)
                )
            return fresh
        except Exception:
            self._queue.failures.add(ctx.thread_id, f"summary: {_reason()}")
            log.warning(
                "summarising thread %r failed: %s",
                ctx.thread_id,
                _reason(),
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            return (text, topics) if stored is not None and covered <= cut_seq_no else None

    # ------------------------------------------------------------------ resume, waits

    def resume(self, *, opening: bool = False) -> int:
        """Queue the stored jobs nothing runs (their lease ran out, or their process is
        gone); returns how many were taken over."""
        if self._llm is None or not supports_extraction(self._store) or self._queue.closed:
            return 0
        taken = 0
        for work in self._store.list_pending_work(None if opening else self._owner):
            orphaned = takeover(
                work.owner, work.id, work.lease_expired, self._owner, opening=opening
            )
            if orphaned is False or not try_activate(work.id):
                continue  # held, or being taken by another client of this process
            accepted = False
            try:
                if not self._store.claim_pending_work(
                    work.id, work.owner, self._owner, only_expired=orphaned is True
                ):
                    continue
                thread = self._store.get("thread", work.thread_id)
                if not isinstance(thread, ThreadRecord):
                    self._store.finish_pending_work(work.id, self._owner)
                    continue
                ctx = ThreadContext(thread.id, thread.user_id, thread.agent_id)
                accepted = self._submit(
                    work,
                    ctx,
                    self._llm,
                    BackgroundExtractionQueueFullBehavior.DROP,
                    0.0,
                    resumed=True,
                )
            finally:
                if not accepted:
                    _deactivate(work.id)
            if accepted:
                taken += 1
                self._keep_leases()
            else:
                log.warning("queue full: pending extraction job %s stays for later", work.id)
        if taken:
            log.info("resumed %d pending memory-extraction job(s)", taken)
        return taken

    def wait(
        self,
        thread_ids: Iterable[str] | None,
        timeout: float | None,
        raise_on_failure: bool = False,
    ) -> bool:
        """Wait for the background work accepted so far (on ``thread_ids``, or all). With
        ``raise_on_failure``, failures not reported yet (on those threads) raise
        :class:`MemoryExtractionError` once the wait ends."""
        keys = None if thread_ids is None else list(thread_ids)
        finished = self._queue.wait(keys, timeout)
        if raise_on_failure:
            failures = self._queue.failures.take(keys)
            if failures:
                raise MemoryExtractionError(failures)
        return finished

    def threads_of(self, *, user_id: Any = None, agent_id: Any = None) -> list[str]:
        """Threads of a user (or agent) that this client accepted background work for."""
        return self._queue.keys_owned_by(user_id=user_id, agent_id=agent_id)

    def close(self, timeout: float | None) -> bool:
        """Stop accepting background work and drain it for up to ``timeout`` seconds."""
        try:
            return self._queue.close(timeout)
        finally:
            self._leases.stop()

    def poll(self) -> int:
        """Resume what is left in the store now, then keep taking over the jobs whose lease
        runs out (see ``LeaseKeeper``) while this client is open."""
        self._leases.polling = True
        taken = self.resume(opening=True)
        self._keep_leases()
        return taken

    def _keep_leases(self) -> None:
        if not (self._borrowed or self._queue.closed) and supports_extraction(self._store):
            self._leases.start()

    @property
    def closed(self) -> bool:
        return self._queue.closed

    def stats(self) -> MemoryExtractionStats:
        """Counters of background jobs, plus inline jobs as completed / failed."""
        snapshot = self._queue.stats()
        with self._lock:
            counts = dict(self._counts)
        return dataclasses.replace(
            snapshot,
            completed=snapshot.completed + counts["completed"],
            failed=snapshot.failed + counts["failed"],
            memories=counts["memories"],
            duplicates=counts["duplicates"],
            links=counts["links"],
            invalidated=counts["invalidated"],
            captions=counts["captions"],
        )

"""From ``OracleThread.add_messages``' arguments to the batch the store writes.

Each message is checked and coerced (:func:`coerce_message`), its images without a description
are captioned by the thread's LLM or queued for it (:func:`caption_message_images`), and
:func:`message_batch` aligns the per-message metadata and builds the ``PendingRecordBatch``,
indexing each short message together with the one before it (:func:`retrieval_windows`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.thread import message_text
from oracleagentmemory.core._client._runtime import ResolvedSettings
from oracleagentmemory.core._client.messages._captions import (
    can_see,
    caption_request,
    check_request,
    resolved_limits,
)
from oracleagentmemory.core._client.messages._images import (
    CaptionSettings,
    _caption_now,
    image_limits,
)
from oracleagentmemory.core._client.messages._message_content import (
    images_of,
    normalize_content,
    with_descriptions,
)
from oracleagentmemory.core._shared._exit_gate import native_call
from oracleagentmemory.core.extractors._service import ThreadContext
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
)
from oracleagentmemory.core.imageinputlimitconfig import validate_image_request
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.store._limits import check_text
from oracleagentmemory.core.store.schema._planning import MessageBatch
from oracleagentmemory.core.store.schema._rows import Chunker


def coerce_message(item: Any, index: int, limits: Any = None) -> Message:
    """A message to store: text, or parts (images checked against ``limits``)."""
    if isinstance(item, Message):
        msg = item
        content = normalize_content(item.content, f"messages[{index}].content", limits)
    elif isinstance(item, Mapping):
        unknown = set(item) - {"role", "content", "id", "timestamp", "metadata"}
        if unknown:
            raise ValueError(f"messages[{index}] has unknown keys: {sorted(unknown)}")
        if "role" not in item or "content" not in item:
            raise ValueError(f"messages[{index}] needs 'role' and 'content'")
        content = normalize_content(item["content"], f"messages[{index}].content", limits)
        msg = Message(
            role=item["role"],
            content=content,
            timestamp=item.get("timestamp"),
            metadata=item.get("metadata"),
            id=item.get("id"),
        )
    else:
        raise TypeError(f"messages[{index}] must be a Message or a mapping with role and content")
    if not isinstance(msg.role, str) or not msg.role:
        raise ValueError(f"messages[{index}].role must be a non-empty string")
    # Checked before the thread embeds anything: NUL and lone surrogates are never stored
    # (normalize_content checks the text of the content and of its parts).
    check_text(msg.role, f"messages[{index}].role")
    if content is not msg.content:
        msg = dataclasses.replace(msg, content=content)
    return msg


def caption_message_images(
    msgs: list[Message],
    settings: ResolvedSettings,
    service: Any,
    captions: Callable[[], CaptionSettings],
) -> tuple[list[Message], list[str]]:
    """Images without a description get one from the thread's LLM when it can see them:
    now (INLINE; the descriptions are stored with the images) or after the write
    (BACKGROUND; their ids are returned, queued before this call's extraction). With an
    LLM that cannot see, image contexts that need the images fail here, before anything
    is written. ``service`` is the thread's extraction service (None: no captions);
    ``captions`` gives the thread's caption settings, asked for only when an image needs
    one."""
    missing = [
        image
        for m in msgs
        for image in images_of(m.content)
        if not (image.description or "").strip()
    ]
    llm = settings.get("llm")
    if service is None or llm is None:
        return msgs, []
    config = settings.config("memory_extraction_config", MemoryExtractionConfig)
    resolved = config.resolve()
    context = resolved.memory_extraction_image_context
    has_images = any(images_of(m.content) for m in msgs)
    if has_images and resolved.extract_memories and context is MemoryExtractionImageContext.IMAGE:
        limits = resolved_limits(image_limits(settings))
        for m in msgs:  # each message's images go to the llm in one request
            validate_image_request([m], limits)
    if not can_see(llm):
        if has_images and resolved.extract_memories:
            if context is MemoryExtractionImageContext.IMAGE:
                raise ValueError(
                    "memory_extraction_image_context=IMAGE sends images to the llm, which "
                    "cannot see images (supports_vision=False)"
                )
            if missing and context is MemoryExtractionImageContext.CAPTION:
                raise ValueError(
                    "memory_extraction_image_context=CAPTION needs a non-blank description "
                    "for every image, and the llm cannot describe images "
                    "(supports_vision=False): give each ImageContent a description"
                )
        return msgs, []
    if not missing:
        return msgs, []
    caption = captions()
    for image in missing:
        check_request(caption_request(image.bytes or b"", image.mime_type), caption.limits)
    if not caption.inline:
        return msgs, [image.id for image in missing]
    found: dict[str, str] = {}
    for image in missing:
        text = _caption_now(caption, image.bytes or b"", image.mime_type)
        if text:
            found[image.id] = text
    return [dataclasses.replace(m, content=with_descriptions(m.content, found)) for m in msgs], []


_LATE_CHUNKING: ContextVar[bool] = ContextVar("oam_late_chunking", default=False)
"""Whether ``add_messages`` calls in this context late-chunk (see :func:`late_chunked`)."""


@contextmanager
def late_chunked(on: bool = True) -> Iterator[None]:
    """Within the block, ``add_messages`` calls of several text messages get their vectors by
    late chunking (:func:`late_embeddings`) where the embedder can; the bulk import
    (``oam import``) writes under it. Other writes keep each message's pair window, the vector
    with the best recall measured (``docs/retrieval-quality.md``)."""
    token = _LATE_CHUNKING.set(on)
    try:
        yield
    finally:
        _LATE_CHUNKING.reset(token)


def retrieval_windows(
    store: OracleMemoryStore, thread_id: str, contents: list[Any], late: bool = False
) -> dict[str, Any]:
    """Index each short message together with the message before it (keyword text and
    vector alike), and, for keyword search only, with the two messages before it.

    A turn often makes sense only with the turn it answers ("Yes, in May" after "When did
    you move?"). Measured on LoCoMo (dev, leave-one-conversation-out): keyword recall@10
    0.63 -> 0.73 with the window; the window's vector is as good as the message's alone
    with all-MiniLM-L6-v2 and far better with multilingual-e5-small (dense recall@10
    0.52 -> 0.65). The second keyword row (the two previous messages + the message, its
    best row counting) adds +0.024 to HYBRID recall@10 [+0.011, +0.038] out of fold; as a
    vector it adds nothing, so it is never embedded. Messages too long for one retrieval
    chunk keep the store's chunking; caller-given ``embeddings`` are used as they are.

    With ``late`` (several text messages, no caller-given vectors) and an embedder that late-
    chunks (``embed_run``: the default one), the window's vector comes from one pass over a
    few consecutive messages instead (:func:`late_embeddings`), at about 1.3x the turns'
    tokens instead of 1.9x; the window texts stay the rows' texts.
    """
    embedder = getattr(store, "embedder", None)
    chunker = Chunker.for_tokens(embedder.max_input_tokens if embedder else None)
    last = store.list_thread_messages(thread_id, last_n=2)
    before = [message_text(m.content, image_placeholders=True) for m in last]
    previous = before[-1] if before else None
    windows: list[str | None] = []
    keyword: list[str | None] = []
    for content in contents:
        text = message_text(content, image_placeholders=True)
        window = window_text(before[-1] if before else None, text, chunker.max_words)
        if window is not None:
            windows.append(window)
            wider = f"{before[-2]}\n{window}" if len(before) > 1 else None
            keyword.append(wider if wider is not None and _fits(wider, chunker) else None)
        else:  # a message with images is indexed with their descriptions
            windows.append(text if not isinstance(content, str) and text else None)
            keyword.append(None)
        before = [*before[-1:], text]
    out: dict[str, Any] = {}
    if any(w is not None for w in windows):
        out["index_texts"] = windows
    if any(k is not None for k in keyword):
        out["keyword_texts"] = keyword
    if late and len(contents) > 1 and all(isinstance(c, str) for c in contents):
        vectors = late_embeddings(embedder, previous, contents, windows, chunker)
        if vectors is not None:
            out["embeddings"] = vectors
    return out


def late_embeddings(
    embedder: Any,
    previous: str | None,
    texts: list[str],
    windows: list[str | None],
    chunker: Chunker,
) -> list[Any] | None:
    """Each message's vector by late chunking (the embedder's ``embed_run``, given the
    thread's message before them), None for a message it gives none or whose retrieval text
    (``windows``, else its own) is more than one chunk (the store embeds those as always);
    None for all when the embedder does not late-chunk (``embed_run`` and a ``late_reach``:
    a delete re-embeds that many messages on each side of a deleted one)."""
    run = getattr(embedder, "embed_run", None)
    reach = getattr(embedder, "late_reach", 0)
    if run is None or not isinstance(reach, int) or reach <= 0:
        return None  # no delete could find the vectors a message shaped: never late
    with native_call():  # a worker must not be inside the model when the process exits
        vectors = run(texts, previous)
    return [
        v if v is not None and _fits(w if w is not None else t, chunker) else None
        for v, w, t in zip(vectors, windows, texts, strict=True)
    ]


def window_text(previous: str | None, text: str, max_words: int) -> str | None:
    """The retrieval window of a message whose text is ``text``: the previous message's text
    and its own, one per line; None (the message alone) when there is no previous message,
    ``text`` is empty, or the two together exceed ``max_words`` words (one retrieval chunk).
    Every route that writes messages gets its windows here (:func:`retrieval_windows`)."""
    if previous is None or not text or len(f"{previous} {text}".split()) > max_words:
        return None
    return f"{previous}\n{text}"


def _fits(text: str, chunker: Chunker) -> bool:
    """Whether ``text`` is one retrieval chunk as the store cuts them (a keyword-only row is
    never cut)."""
    return len(text.split()) <= chunker.max_words and len(text) <= chunker.max_chars


def message_batch(
    store: OracleMemoryStore,
    owner: ThreadContext,
    msgs: list[Message],
    metadata: Any,
    ttl_days: Any,
    ttl_anchor: Any,
    store_kwargs: dict[str, Any],
) -> PendingRecordBatch:
    """The batch of ``msgs`` for the thread ``owner``.

    ``metadata`` / ``ttl_days`` / ``ttl_anchor`` are one value for all messages or a list
    aligned with them; a message's own metadata wins over ``metadata``. The retrieval
    payload (``index_texts`` / ``embeddings``) moves from ``store_kwargs`` (edited in place:
    what is left are the store's options) into the batch; without caller-given index texts,
    the messages' windows (:func:`retrieval_windows`) are used.
    """
    n = len(msgs)
    if isinstance(metadata, list):
        if len(metadata) != n:
            raise ValueError(f"metadata has {len(metadata)} entries but messages has {n}")
        metas = list(metadata)
    else:
        metas = [None if metadata is NOT_SET_MARKER else metadata] * n
    metas = [m.metadata if m.metadata is not None else metas[i] for i, m in enumerate(msgs)]
    contents = [m.content for m in msgs]
    keyword_texts = None
    late_vectors: list[bool] | None = None
    if "index_texts" not in store_kwargs:
        late = _LATE_CHUNKING.get() and "embeddings" not in store_kwargs
        windows = retrieval_windows(store, owner.thread_id, contents, late)
        keyword_texts = windows.pop("keyword_texts", None)
        if "embeddings" in windows:  # only late chunking gives vectors here
            late_vectors = [v is not None for v in windows["embeddings"]]
        store_kwargs.update(windows)
    payload = {k: store_kwargs.pop(k) for k in ("index_texts", "embeddings") if k in store_kwargs}
    return MessageBatch(
        keyword_texts=keyword_texts,
        late_vectors=late_vectors,
        contents=contents,
        record_type="message",
        record_ids=[m.id for m in msgs],
        thread_ids=owner.thread_id,
        user_ids=owner.user_id,
        agent_ids=owner.agent_id,
        roles=[m.role for m in msgs],
        timestamps=[m.timestamp for m in msgs],
        metadata=metas,
        ttl_days=ttl_days,
        ttl_anchor=ttl_anchor,
        **payload,
    )

"""Images for the client and threads: validation, MIME detection, and the store calls."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.message import ImageMimeType
from oracleagentmemory.apis.records import ImageRecord
from oracleagentmemory.core._client._validation import check_single
from oracleagentmemory.core._client.messages._captions import (
    can_see,
    caption_request,
    check_request,
    describe_image,
)
from oracleagentmemory.core._client.search._scope import in_thread
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    BackgroundExtractionQueueFullBehavior,
)
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore

log = logging.getLogger("oracleagentmemory.images")

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", ImageMimeType.PNG),
    (b"\xff\xd8\xff", ImageMimeType.JPEG),
)


def sniff_mime_type(data: bytes) -> ImageMimeType | None:
    """The format named by the file's own signature (PNG, JPEG, WEBP), if any."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ImageMimeType.WEBP
    return None


def check_image(image: Any, mime_type: Any, limits: Any) -> tuple[bytes, ImageMimeType]:
    """Validate bytes against the raw-size limit and settle the MIME type (given, else
    detected from the bytes)."""
    if not isinstance(image, bytes | bytearray | memoryview):
        raise TypeError("image must be bytes")
    data = bytes(image)
    if not data:
        raise ValueError("image must not be empty")
    config = limits if isinstance(limits, ImageInputLimitConfig) else ImageInputLimitConfig()
    cap = config.resolve().max_raw_image_bytes
    if len(data) > cap:
        raise ValueError(f"image has {len(data)} bytes, above max_raw_image_bytes={cap}")
    if mime_type is NOT_SET_MARKER or mime_type is None:
        sniffed = sniff_mime_type(data)
        if sniffed is None:
            raise ValueError(
                "mime_type is required: the bytes are not a recognisable PNG, JPEG or WEBP image"
            )
        return data, sniffed
    try:
        return data, ImageMimeType(mime_type)
    except ValueError:
        raise ValueError(
            f"mime_type must be one of {[m.value for m in ImageMimeType]}, got {mime_type!r}"
        ) from None


def check_description(description: Any) -> str | None:
    """An explicit description, or None when it is omitted (or None)."""
    if description is NOT_SET_MARKER or description is None:
        return None
    if not isinstance(description, str):
        raise TypeError("description must be a string or None")
    return description


ADD_ARGUMENTS: Final = (
    "description",
    "mime_type",
    "image_id",
    "user_id",
    "agent_id",
    "thread_id",
    "metadata",
    "timestamp",
    "ttl_days",
    "ttl_anchor",
)
"""The arguments of a client's or thread's ``add_image`` but the bytes and store options."""
UPDATE_ARGUMENTS: Final = (
    "image",
    "description",
    "mime_type",
    "metadata",
    "timestamp",
    "ttl_days",
    "ttl_anchor",
)
"""The fields of a client's or thread's ``update_image``."""


def image_arguments(
    arguments: Mapping[str, Any], names: tuple[str, ...], scope: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``names`` arguments of a call, from its ``locals()`` (one value each, else a
    TypeError); omitted scope ids taken from ``scope`` (a thread's own)."""
    out = {name: arguments[name] for name in names}
    check_single(**out)
    for name, value in (scope or {}).items():
        if out[name] is NOT_SET_MARKER:
            out[name] = value
    return out


def image_limits(settings: Any) -> ImageInputLimitConfig:
    """The ``ImageInputLimitConfig`` in force for resolved client or thread settings
    (``core._client._runtime.ResolvedSettings``)."""
    limits: ImageInputLimitConfig = settings.config(
        "image_input_limit_config", ImageInputLimitConfig
    )
    return limits


@dataclass(frozen=True)
class CaptionSettings:
    """How an image without a description gets one: the client's or thread's LLM, INLINE
    (before the write returns) or BACKGROUND (queued like extraction, with its queue-full
    behaviour), and the queue key (the thread's id, so a thread's captions run before its
    later extraction; else the image's own)."""

    llm: Any
    limits: Any
    inline: bool
    behavior: BackgroundExtractionQueueFullBehavior
    timeout: float
    service: Any
    key: str | None = None
    owners: tuple[str | None, str | None] = (None, None)

    @classmethod
    def of(
        cls,
        settings: Any,
        service: Any,
        key: str | None = None,
        owners: tuple[str | None, str | None] = (None, None),
    ) -> CaptionSettings:
        """From resolved client or thread settings (``core._client._runtime.ResolvedSettings``)."""
        from oracleagentmemory.core.extractors.memoryextractionconfig import (
            MemoryExtractionConfig,
            MemoryExtractionMode,
        )

        config = settings.config("memory_extraction_config", MemoryExtractionConfig).resolve()
        return cls(
            settings.get("llm"),
            settings.config("image_input_limit_config", ImageInputLimitConfig),
            config.extraction_mode is MemoryExtractionMode.INLINE,
            config.background_extraction_queue_full_behavior,
            config.background_extraction_queue_put_timeout_seconds,
            service,
            key,
            owners,
        )


def client_captions(
    settings: Any, service: Any, thread_id: Any, user_id: Any, agent_id: Any
) -> CaptionSettings:
    """Caption settings for an image a client writes: queued under its thread (when it has
    one) for its owners; omitted ids count as None."""

    def given(value: Any) -> Any:
        return None if value is NOT_SET_MARKER else value

    key = given(thread_id)
    owners = (given(user_id), given(agent_id))
    return CaptionSettings.of(settings, service, key if isinstance(key, str) else None, owners)


def _caption_now(captions: CaptionSettings, data: bytes, mime: ImageMimeType) -> str | None:
    """INLINE caption; an LLM failure is logged and leaves the image undescribed."""
    try:
        return describe_image(captions.llm, data, mime, captions.limits)
    except Exception as exc:
        log.warning(
            "describing an image failed (%s: %s): stored without a description",
            type(exc).__name__,
            exc,
            exc_info=log.isEnabledFor(logging.DEBUG),
        )
        return None


def add_image(
    store: OracleMemoryStore,
    image: Any,
    *,
    description: Any,
    mime_type: Any,
    image_id: Any,
    user_id: Any,
    agent_id: Any,
    thread_id: Any,
    metadata: Any,
    timestamp: Any,
    ttl_days: Any,
    ttl_anchor: Any,
    limits: Any,
    captions: CaptionSettings | None,
    store_kwargs: dict[str, Any],
) -> str:
    """The one write path for images added by a client or a thread.

    Without a description, an image gets a caption from the configured LLM: before the
    write (INLINE) or queued after it (BACKGROUND). The caption request is checked against
    the image limits first; an LLM that cannot see images leaves the image undescribed
    (with a warning)."""
    guard = {k: store_kwargs.pop(k) for k in ("require_thread",) if k in store_kwargs}
    if store_kwargs:
        raise TypeError(f"unexpected store option(s) for add_image: {sorted(store_kwargs)}")
    data, mime = check_image(image, mime_type, limits)
    text = check_description(description)
    llm = captions.llm if captions is not None else None
    later = False
    if text is None and llm is not None:
        if not can_see(llm):
            warnings.warn(
                "the configured llm cannot see images (supports_vision=False): the image is "
                "stored without a description (pass description=... to make it searchable)",
                RuntimeWarning,
                stacklevel=4,
            )
        else:
            assert captions is not None
            check_request(caption_request(data, mime), captions.limits)
            if captions.inline:
                text = _caption_now(captions, data, mime)
            else:
                later = True
    writer = getattr(store, "add_image", None)
    if writer is None:
        raise NotImplementedError(f"{type(store).__name__} does not store images")

    def opt(value: Any) -> Any:
        return None if value is NOT_SET_MARKER else value

    result: str = writer(
        data,
        mime_type=mime.value,
        description=text,
        image_id=opt(image_id),
        user_id=opt(user_id),
        agent_id=opt(agent_id),
        thread_id=opt(thread_id),
        metadata=opt(metadata),
        timestamp=opt(timestamp),
        ttl_days=ttl_days,
        ttl_anchor=ttl_anchor,
        **guard,
    )
    if later:
        assert captions is not None
        _queue_caption(captions, result, replace=False)
    return result


def _queue_caption(captions: CaptionSettings, image_id: str, *, replace: bool) -> None:
    service = captions.service
    if service is None:
        log.warning("image %r: no background queue here; left without a description", image_id)
        return
    service.queue_caption(
        image_id,
        captions.llm,
        captions.limits,
        key=captions.key or f"image:{image_id}",
        owners=captions.owners,
        behavior=captions.behavior,
        timeout=captions.timeout,
        replace=replace,
    )


def find_image(
    store: OracleMemoryStore, image_id: Any, thread: tuple[str, str | None] | None = None
) -> ImageRecord:
    """The image ``image_id`` (KeyError when absent, or not in ``thread``: its id and owner)."""
    if not isinstance(image_id, str):
        raise TypeError("image_id must be a string")
    record = store.get("image", image_id)
    if not isinstance(record, ImageRecord) or (
        thread is not None and not in_thread(record, *thread)
    ):
        where = "" if thread is None else f" in thread {thread[0]!r}"
        raise KeyError(f"no image with id {image_id!r}{where}")
    return record


def update_image(
    store: OracleMemoryStore,
    image_id: str,
    *,
    image: Any,
    description: Any,
    mime_type: Any,
    metadata: Any,
    timestamp: Any,
    ttl_days: Any,
    ttl_anchor: Any,
    limits: Any,
    thread: tuple[str, str | None] | None = None,
    captions: CaptionSettings | None = None,
) -> str:
    """Update an image: new bytes need their ``mime_type``; a new description is re-indexed;
    omitted fields are kept. ``description=None`` asks the configured LLM for a new one
    (INLINE: before anything is written; BACKGROUND: queued after the other fields are
    written). KeyError when there is no such image."""
    record = find_image(store, image_id, thread)
    new_bytes: tuple[bytes, ImageMimeType] | None = None
    if image is not NOT_SET_MARKER:
        if mime_type is NOT_SET_MARKER:
            raise ValueError("mime_type is required when image bytes are replaced")
        new_bytes = check_image(image, mime_type, limits)
    elif mime_type is not NOT_SET_MARKER:
        raise ValueError("mime_type can change only together with the image bytes")
    later = False
    if description is None:
        llm = captions.llm if captions is not None else None
        if llm is None:
            raise ValueError(
                "description=None asks the configured llm for a new description, and no llm "
                "is configured; pass the description"
            )
        assert captions is not None
        if new_bytes is None:
            stored = store.get("image", image_id, include_bytes=True)
            if not isinstance(stored, ImageRecord) or stored.bytes is None:
                raise KeyError(f"no image bytes stored for {image_id!r}")
            new_bytes = (stored.bytes, ImageMimeType(record.mime_type))
        if not can_see(llm):
            describe_image(llm, *new_bytes, captions.limits)  # raises the reason
        check_request(caption_request(*new_bytes), captions.limits)
        if captions.inline:
            description = describe_image(llm, *new_bytes, captions.limits)
        else:
            description, later = NOT_SET_MARKER, True
    if image is not NOT_SET_MARKER:
        assert new_bytes is not None
        data, mime = new_bytes
        store.update_image_payload(image_id, image=data, mime_type=mime.value)  # type: ignore[attr-defined]
    fields = {
        "text": description,
        "metadata": metadata,
        "timestamp": timestamp,
        "ttl_days": ttl_days,
        "ttl_anchor": ttl_anchor,
    }
    if description is not NOT_SET_MARKER and not isinstance(description, str):
        raise TypeError("description must be a string")
    given = {k: v for k, v in fields.items() if v is not NOT_SET_MARKER}
    if given:
        store.update("image", image_id, **given)
    if later:
        assert captions is not None
        _queue_caption(captions, image_id, replace=True)
    return image_id


def delete_image(
    store: OracleMemoryStore, image_id: str, thread: tuple[str, str | None] | None = None
) -> int:
    """Delete an image (and its bytes); returns 1, or 0 when there is none (in ``thread``)."""
    try:
        find_image(store, image_id, thread)
    except KeyError:
        return 0
    return store.delete("image", image_id)

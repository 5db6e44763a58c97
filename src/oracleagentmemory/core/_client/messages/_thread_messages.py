"""A thread's messages read back and edited (``OracleThread.get_messages``, ``get_message``,
``update_message``, ``delete_message``) and its memories deleted (``delete_memory``); new
messages go through ``_message_batch``.

``thread`` is the thread's (id, user id): a record belongs to the thread when it has the
thread's id and its user or none (``_scope.in_thread``); other threads' records are never
returned, changed or deleted here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.records import MessageRecord
from oracleagentmemory.apis.thread import IThread
from oracleagentmemory.core._client._memory_ops import find_memory_for_write
from oracleagentmemory.core._client._validation import check_int
from oracleagentmemory.core._client.messages._message_content import (
    load_images,
    message_from_record,
)
from oracleagentmemory.core._client.search._scope import in_thread
from oracleagentmemory.core.extractors._service import (
    DELETE_WAIT_SECONDS,
    ExtractionService,
    supports_extraction,
)
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore

DEFAULT_MESSAGE_HISTORY_LIMIT: Final = 100
"""``get_messages()`` without ``start``/``end`` returns at most this many recent messages."""
DEFAULT_MESSAGE_WINDOW: Final = DEFAULT_MESSAGE_HISTORY_LIMIT


def holds(thread: tuple[str, str | None], record: Any) -> bool:
    """Whether ``record`` is a row of ``thread`` (its id, and its owner's or no user)."""
    return record is not None and in_thread(record, thread[0], thread[1])


def image_bytes_wanted(include_image_bytes: Any) -> bool:
    """Whether ``include_image_bytes`` (a bool, or omitted) asks for image bytes."""
    if include_image_bytes is not NOT_SET_MARKER and not isinstance(include_image_bytes, bool):
        raise TypeError("include_image_bytes must be a bool")
    return include_image_bytes is True


def thread_messages(
    store: OracleMemoryStore, thread_id: str, start: Any, end: Any, include_image_bytes: Any
) -> list[Message]:
    """``OracleThread.get_messages`` (its docstring says which window)."""
    with_bytes = image_bytes_wanted(include_image_bytes)
    if start is NOT_SET_MARKER and end is NOT_SET_MARKER:
        records = store.list_thread_messages(thread_id, last_n=DEFAULT_MESSAGE_WINDOW)
        return load_images(store, [message_from_record(r) for r in records], with_bytes)
    first = 0 if start in (NOT_SET_MARKER, None) else check_int("start", start)
    records = store.list_thread_messages(thread_id)[first:]
    if end is NOT_SET_MARKER:
        records = records[-DEFAULT_MESSAGE_WINDOW:]
    elif end is not None and end != -1:
        stop = check_int("end", end)
        records = records[: max(0, stop - first)]
    return load_images(store, [message_from_record(r) for r in records], with_bytes)


def thread_message(
    store: OracleMemoryStore,
    thread: tuple[str, str | None],
    message_id: str,
    included_image_ids: Any,
) -> Message:
    """One message of ``thread`` (the bytes of ``included_image_ids`` loaded); KeyError when
    it is not in the thread."""
    record = store.get("message", message_id)
    if not isinstance(record, MessageRecord) or not holds(thread, record):
        raise KeyError(f"message {message_id!r} is not in thread {thread[0]!r}")
    wanted: list[str] = []
    if included_image_ids not in (NOT_SET_MARKER, None):
        if isinstance(included_image_ids, str) or not isinstance(included_image_ids, Sequence):
            raise TypeError("included_image_ids must be a list of image ids")
        wanted = list(included_image_ids)
    loaded: Message = load_images(store, [message_from_record(record)], wanted)[0]
    return loaded


def update_thread_message(
    store: OracleMemoryStore,
    thread: tuple[str, str | None],
    message_id: str,
    fields: dict[str, Any],
) -> str:
    """``OracleThread.update_message`` with its ``text`` / ``metadata`` / ``ttl_days`` /
    ``ttl_anchor`` in ``fields`` (omitted ones ``NOT_SET_MARKER``)."""
    with store._reads_for_write():  # a replica's older copy must not decide the write
        record = store.get("message", message_id)
    if not holds(thread, record):
        raise KeyError(f"message {message_id!r} is not in thread {thread[0]!r}")
    content = fields["text"]
    if content is not NOT_SET_MARKER and not isinstance(content, str):
        raise TypeError(
            "content must be a string (structured content with images is not supported yet)"
        )
    given = {k: v for k, v in fields.items() if v is not NOT_SET_MARKER}
    if given:
        store.update("message", message_id, **given)
    return message_id


def delete_thread_message(
    store: OracleMemoryStore,
    service: ExtractionService | None,
    thread: tuple[str, str | None],
    message_id: Any,
    cascade: Any,
) -> int:
    """``OracleThread.delete_message`` (its docstring says what ``cascade`` deletes);
    ``service`` is the thread's extraction service, waited for before a cascade."""
    if not isinstance(message_id, str):
        raise TypeError("message_id must be a string")
    if not isinstance(cascade, bool):
        raise TypeError("cascade must be a bool")
    if cascade:
        if not supports_extraction(store):
            raise TypeError("cascade=True needs a store that records provenance")
        if service is not None:
            service.wait([thread[0]], DELETE_WAIT_SECONDS)
        return store.delete_message_cascade(thread[0], message_id)[0]
    with store._reads_for_write():
        record = store.get("message", message_id)
    if not holds(thread, record):
        return 0
    return store.delete("message", message_id)


def clear_thread_messages(thread: IThread) -> int:
    """Delete every message of ``thread`` in one transaction where its store can (ours),
    else one by one (another thread or store implementation); the thread, its memories and
    summary stay. Returns how many were deleted."""
    clear = getattr(getattr(thread, "_store", None), "delete_thread_messages", None)
    if clear is not None:
        return int(clear(thread.thread_id))
    done = 0
    for message in thread.get_messages(start=0, end=None):
        if message.id is not None:
            done += int(thread.delete_message(message.id))
    return done


def delete_thread_memory(
    store: OracleMemoryStore, thread: tuple[str, str | None], memory_id: str
) -> int:
    """``OracleThread.delete_memory``: a memory-like record of this exact thread (0 for
    unknown ids or other threads)."""
    record = find_memory_for_write(store, memory_id)
    if record is None or not holds(thread, record):
        return 0
    return store.delete(record.record_type, memory_id)

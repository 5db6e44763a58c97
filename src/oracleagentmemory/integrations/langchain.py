"""LangChain integration: a chat message history on a thread, and a retriever over search.

- :class:`AgentMemoryChatMessageHistory` is a ``BaseChatMessageHistory`` backed by one
  thread (an ``OracleThread``): every LangChain message is one stored message, in order.
- :class:`AgentMemoryRetriever` is a ``BaseRetriever`` over ``OracleAgentMemory.search``:
  every result is one ``Document``.

Needs ``langchain-core`` (``pip install "recallwell[langchain]"``); ``langchain``
itself is not needed.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
        messages_from_dict,
    )
    from langchain_core.retrievers import BaseRetriever
    from pydantic import AliasChoices, ConfigDict, Field, model_validator
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "oracleagentmemory.integrations.langchain needs langchain-core: "
        'pip install "recallwell[langchain]"'
    ) from error

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.agentmemory import IAgentMemory
from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.records import MessageRecord, ScopedRecord
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.thread import IThread, message_text
from oracleagentmemory.core._client.messages._thread_messages import clear_thread_messages
from oracleagentmemory.core._client.search._search import SEARCH_OPTIONS
from oracleagentmemory.core.searchresult import AGENT_MEMORY_METADATA_KEY
from oracleagentmemory.core.store._limits import MAX_SEARCH_RESULTS

__all__ = ["AgentMemoryChatMessageHistory", "AgentMemoryRetriever"]

log = logging.getLogger("oracleagentmemory.integrations.langchain")

LANGCHAIN_METADATA_KEY: Final = "langchain"
"""Key, under the SDK's reserved ``$agent_memory`` metadata key, of a message's LangChain
fields (never rendered into prompts nor inherited by extracted memories)."""

ROLE_OF_TYPE: Final[dict[str, str]] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "FunctionMessageChunk": "function",
}
"""The stored role of each LangChain message type (``ChatMessage`` keeps its own role)."""

_IMAGE_PART_TYPES: Final = frozenset({"image", "image_url"})


# ---------------------------------------------------------------------- messages


def content_text(content: str | list[str | dict[str, Any]]) -> str:
    """The readable text of LangChain content: text as is; of a list of parts, the text
    parts (plain strings and ``{"type": "text"}`` blocks) joined by newlines, each image
    part as ``[image]``; other parts (reasoning, tool-use blocks, ...) are left out."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind in _IMAGE_PART_TYPES:
                texts.append("[image]")
    return "\n".join(texts)


def _stored_role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return message.role
    role = ROLE_OF_TYPE.get(message.type)
    if role is None:
        raise TypeError(f"a {type(message).__name__} ({message.type!r}) cannot be stored")
    return role


def to_stored_message(message: BaseMessage, index: int) -> dict[str, Any]:
    """A LangChain message as an ``add_messages`` dict: role, readable text, the message's
    id (when set) and, in metadata, every other non-empty field (list content included)."""
    if isinstance(message, RemoveMessage) or not isinstance(message, BaseMessage):
        raise TypeError(
            f"messages[{index}] must be a LangChain message (not a RemoveMessage), "
            f"got {type(message).__name__}"
        )
    data = message.model_dump()
    data.pop("type", None)
    message_id = data.pop("id", None)
    if isinstance(message.content, str):
        data.pop("content")
    kept = {k: v for k, v in data.items() if k == "content" or v not in (None, {}, [])}
    stored: dict[str, Any] = {
        "role": _stored_role(message),
        "content": content_text(message.content),
        "metadata": {
            AGENT_MEMORY_METADATA_KEY: {
                LANGCHAIN_METADATA_KEY: {"type": message.type, "data": kept},
            }
        },
    }
    if message_id is not None:
        stored["id"] = message_id
    return stored


def _native_message(message: Message) -> BaseMessage:
    """A message stored without LangChain fields, by its role."""
    text = message_text(message.content, image_placeholders=True)
    role, ident = message.role, message.id
    if role == "user":
        return HumanMessage(content=text, id=ident)
    if role == "assistant":
        return AIMessage(content=text, id=ident)
    if role == "system":
        return SystemMessage(content=text, id=ident)
    if role == "tool":
        call_id = (message.metadata or {}).get("tool_call_id")
        return ToolMessage(
            content=text, id=ident, tool_call_id=call_id if isinstance(call_id, str) else ""
        )
    return ChatMessage(content=text, role=role, id=ident)


def from_stored_message(message: Message) -> BaseMessage:
    """A stored message as the LangChain message it was written from (type, fields, list
    content); messages written without this integration are mapped by role."""
    reserved = (message.metadata or {}).get(AGENT_MEMORY_METADATA_KEY)
    saved = reserved.get(LANGCHAIN_METADATA_KEY) if isinstance(reserved, dict) else None
    if not isinstance(saved, dict):
        return _native_message(message)
    data = copy.deepcopy(saved.get("data"))
    if not isinstance(data, dict):
        data = {}
    data.setdefault("content", message_text(message.content, image_placeholders=True))
    data["id"] = message.id
    try:
        return messages_from_dict([{"type": saved.get("type"), "data": data}])[0]
    except (ValueError, TypeError, KeyError) as error:
        log.warning(
            "message %s: unreadable LangChain fields (%s); mapped by role", message.id, error
        )
        return _native_message(message)


class AgentMemoryChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat message history stored in one thread.

    Each LangChain message is one message of the thread: role ``user`` (``HumanMessage``),
    ``assistant`` (``AIMessage``), ``system``, ``tool``, ``function`` or a ``ChatMessage``'s
    own role; the content's readable text is the stored (searchable) content. Everything
    else (list content, tool calls, ``tool_call_id``, name, ``additional_kwargs``, response
    and usage metadata) is kept in the message's metadata under ``$agent_memory`` and
    restored on read. A message's id is its stored id (generated when it had none).
    """

    def __init__(self, thread: IThread) -> None:
        if not isinstance(thread, IThread):
            raise TypeError(
                f"thread must be an OracleThread (an IThread), got {type(thread).__name__}"
            )
        self.thread = thread

    @classmethod
    def for_thread(
        cls,
        client: IAgentMemory,
        thread_id: str,
        *,
        user_id: str,
        agent_id: str | None = None,
    ) -> AgentMemoryChatMessageHistory:
        """The history of thread ``thread_id``, created for ``user_id`` (and ``agent_id``)
        when it does not exist; ValueError when it exists for another user or agent.
        Suits ``RunnableWithMessageHistory``'s ``get_session_history``."""
        if not isinstance(client, IAgentMemory):
            raise TypeError(f"client must be an OracleAgentMemory, got {type(client).__name__}")
        if not isinstance(thread_id, str) or not thread_id:
            raise TypeError("thread_id must be a non-empty string")
        if not isinstance(user_id, str) or not user_id:
            raise TypeError("user_id must be a non-empty string")
        if agent_id is not None and not isinstance(agent_id, str):
            raise TypeError("agent_id must be a string or None")
        try:
            thread = client.get_thread(thread_id)
        except KeyError:
            agent = NOT_SET_MARKER if agent_id is None else agent_id
            try:
                thread = client.create_thread(thread_id=thread_id, user_id=user_id, agent_id=agent)
            except ValueError as refused:  # created meanwhile by another caller?
                try:
                    thread = client.get_thread(thread_id)
                except KeyError:
                    raise refused from None
        if thread.user_id != user_id:
            raise ValueError(f"thread {thread_id!r} belongs to another user than {user_id!r}")
        if agent_id is not None and thread.agent_id != agent_id:
            raise ValueError(f"thread {thread_id!r} belongs to another agent than {agent_id!r}")
        return cls(thread)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """All the thread's messages, oldest first."""
        stored = self.thread.get_messages(start=0, end=None)
        return [from_stored_message(m) for m in stored]

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages` (the read runs in a worker thread)."""
        stored = await self.thread.get_messages_async(start=0, end=None)
        return [from_stored_message(m) for m in stored]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` in order, in one write (all or none are stored)."""
        stored = _stored_batch(messages)
        if stored:
            self.thread.add_messages(stored)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages` (the write runs in a worker thread)."""
        stored = _stored_batch(messages)
        if stored:
            await self.thread.add_messages_async(stored)

    def clear(self) -> None:
        """Delete all the thread's messages, in one transaction; memories extracted from
        them are kept, and the thread itself stays."""
        clear_thread_messages(self.thread)

    async def aclear(self) -> None:
        """Async :meth:`clear` (run in a worker thread)."""
        await asyncio.to_thread(self.clear)

    def __repr__(self) -> str:
        return f"AgentMemoryChatMessageHistory(thread_id={self.thread.thread_id!r})"


def _stored_batch(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    if isinstance(messages, str | bytes | BaseMessage) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of LangChain messages")
    return [to_stored_message(m, i) for i, m in enumerate(messages)]


# ---------------------------------------------------------------------- retriever

_OPTION_FIELDS: Final = ("exact_agent_match", "exact_thread_match", *SEARCH_OPTIONS)
"""Search options passed when not None (None: the client's default)."""
_CALL_OPTIONS: Final = frozenset(SEARCH_OPTIONS)
"""Options one ``invoke`` may override (``k`` is ``max_results``)."""


def _check_options(values: dict[str, Any]) -> None:
    """TypeError / ValueError naming the argument for a malformed search option."""
    for name in ("exact_agent_match", "exact_thread_match", "include_invalid_results"):
        value = values.get(name)
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    as_of = values.get("as_of")
    if as_of is not None and not isinstance(as_of, datetime):
        raise TypeError(f"as_of must be a datetime or None, got {type(as_of).__name__}")
    for name, least in (
        ("max_results", 1),
        ("token_budget", 1),
        ("soft_token_budget", 1),
        ("num_hops", 0),
        ("max_linked_results", 1),
    ):
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < least:
            raise ValueError(f"{name} must be at least {least}, got {value}")
    k = values.get("max_results")
    if k is not None and k > MAX_SEARCH_RESULTS:
        raise ValueError(f"max_results must be at most {MAX_SEARCH_RESULTS}, got {k}")
    types = values.get("record_types")
    if types is not None and (
        isinstance(types, str)
        or not isinstance(types, list | tuple)
        or not all(isinstance(t, str) for t in types)
    ):
        raise TypeError("record_types must be a list of record type names")
    metadata_filter = values.get("metadata_filter")
    if metadata_filter is not None and not isinstance(metadata_filter, dict):
        raise TypeError(
            f"metadata_filter must be a dict or None, got {type(metadata_filter).__name__}"
        )


def result_metadata(result: SearchResult) -> dict[str, Any]:
    """A search result's fields as ``Document.metadata``: id, record_type, user_id,
    agent_id, thread_id, role and seq_no (messages), timestamp, status, distance, score
    (1 - distance), record_metadata (the record's own, without ``$agent_memory``),
    source_message_ids and linked_records."""
    record = result.record
    metadata: dict[str, Any] = {"id": record.id, "record_type": record.record_type}
    if isinstance(record, ScopedRecord):
        metadata.update(
            user_id=record.user_id, agent_id=record.agent_id, thread_id=record.thread_id
        )
    if isinstance(record, MessageRecord):
        metadata.update(role=record.role, seq_no=record.seq_no)
    metadata.update(timestamp=record.timestamp, status=record.status.value)
    distance = getattr(result, "distance", None)  # every OracleSearchResult has one
    if isinstance(distance, int | float):
        metadata.update(distance=float(distance), score=1.0 - float(distance))
    own = {k: v for k, v in (record.metadata or {}).items() if k != AGENT_MEMORY_METADATA_KEY}
    metadata["record_metadata"] = copy.deepcopy(own)
    sources = getattr(result, "source_message_ids", ())
    if sources:
        metadata["source_message_ids"] = list(sources)
    linked = getattr(result, "linked_results", [])
    if linked:
        metadata["linked_records"] = [
            {
                "relation_type": relation.relation_type,
                "id": other.record.id,
                "record_type": other.record.record_type,
                "content": other.content,
            }
            for relation, other in linked
        ]
    return metadata


def to_document(result: SearchResult) -> Document:
    """A search result as a ``Document`` (content: the record's text)."""
    return Document(
        page_content=result.content, id=result.record.id, metadata=result_metadata(result)
    )


class AgentMemoryRetriever(BaseRetriever):
    """A LangChain retriever over ``OracleAgentMemory.search``.

    ``user_id`` is required (searches are always scoped to one user, matched exactly;
    ``None`` means records without a user). ``agent_id`` / ``thread_id`` narrow the scope
    when given (exactly, unless ``exact_*_match=False`` makes them a ranking preference).
    Options left None take the client's defaults (``max_results`` 10 unless the client's
    search config says otherwise); ``k`` is accepted for ``max_results``. ``invoke`` may
    override the options (not the scope) per call: ``retriever.invoke(q, k=3)``.
    """

    model_config = ConfigDict(
        arbitrary_types_allowed=True, populate_by_name=True, strict=True, extra="forbid"
    )

    client: IAgentMemory
    """The client searched (an ``OracleAgentMemory``)."""
    user_id: str | None
    """The user whose records are searched (exact match; required)."""
    agent_id: str | None = None
    """The agent scope; unset: any agent. ``None`` given explicitly: records without one."""
    thread_id: str | None = None
    """The thread scope; unset: any thread. ``None`` given explicitly: records without one."""
    exact_agent_match: bool | None = None
    """False: ``agent_id`` only ranks its records higher."""
    exact_thread_match: bool | None = None
    """False: ``thread_id`` only ranks its records higher."""
    max_results: int | None = Field(default=None, validation_alias=AliasChoices("max_results", "k"))
    """Most documents returned (alias ``k``)."""
    token_budget: int | None = None
    """Hard cap, in estimated tokens, of the results' renderings."""
    soft_token_budget: int | None = None
    """Target, in estimated tokens: the result crossing it is the last."""
    record_types: list[str] | None = None
    """Record types searched (``message``, ``memory``, ``fact``, ...); None: the default."""
    metadata_filter: dict[str, Any] | None = None
    """A metadata filter on the records (see the client's ``search``)."""
    num_hops: int | None = None
    """Relation hops to follow from each result (linked records in ``linked_records``)."""
    max_linked_results: int | None = None
    """Most linked records attached per search."""
    include_invalid_results: bool | None = None
    """Whether records marked INVALID are returned."""
    as_of: datetime | None = None
    """Rank what was true at this time (the client's ``search(..., as_of=...)``; None: now)."""

    @model_validator(mode="before")
    @classmethod
    def _require_user(cls, data: Any) -> Any:
        if isinstance(data, dict) and "user_id" not in data:
            raise ValueError(
                "user_id is required: searches are scoped to one user "
                "(user_id=None for records without a user)"
            )
        return data

    @model_validator(mode="after")
    def _check(self) -> AgentMemoryRetriever:
        if not isinstance(self.client, IAgentMemory):
            raise TypeError(
                f"client must be an OracleAgentMemory, got {type(self.client).__name__}"
            )
        for name in ("user_id", "agent_id", "thread_id"):
            value = getattr(self, name)
            if value is not None and not value:
                raise ValueError(f"{name} must not be an empty string")
        _check_options({name: getattr(self, name) for name in _OPTION_FIELDS})
        return self

    def search_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """The keyword arguments this retriever passes to ``client.search``."""
        if "k" in overrides:
            if "max_results" in overrides:
                raise TypeError("give k or max_results, not both")
            overrides["max_results"] = overrides.pop("k")
        unknown = sorted(set(overrides) - _CALL_OPTIONS)
        if unknown:
            raise TypeError(
                f"unknown search option(s) {unknown}; a call may set {sorted(_CALL_OPTIONS)}"
            )
        _check_options(overrides)
        kwargs: dict[str, Any] = {"user_id": self.user_id}
        for name in ("agent_id", "thread_id"):
            if name in self.model_fields_set:
                kwargs[name] = getattr(self, name)
        for name in _OPTION_FIELDS:
            value = overrides.get(name, getattr(self, name))
            if value is not None:
                kwargs[name] = list(value) if name == "record_types" else value
        return kwargs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        results = self.client.search(query, **self.search_kwargs(**kwargs))
        return [to_document(r) for r in results]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        results = await self.client.search_async(query, **self.search_kwargs(**kwargs))
        return [to_document(r) for r in results]

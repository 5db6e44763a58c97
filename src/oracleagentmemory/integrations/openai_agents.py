"""Agent memory for the OpenAI Agents SDK (``openai-agents>=0.24,<0.25``).

- :class:`AgentMemorySession`: an SDK ``Session`` backed by one thread of an
  :class:`~oracleagentmemory.core.OracleAgentMemory` client. Each item is one message (role,
  readable text, and the item's exact JSON in its metadata), so search, context cards and
  memory extraction see the conversation.
- :func:`memory_tools`: ``search_memory`` and ``add_memory`` function tools bound to one user.

Install with ``pip install "recallwell[openai-agents]"``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

try:
    from agents import RunContextWrapper, Tool, default_tool_error_function, function_tool
    from agents.memory import SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ImportError as err:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "oracleagentmemory.integrations.openai_agents needs the OpenAI Agents SDK: "
        'pip install "recallwell[openai-agents]"'
    ) from err

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core._client.messages._thread_messages import clear_thread_messages
from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory
from oracleagentmemory.core.store._limits import MAX_LIST_ROWS, MAX_SEARCH_RESULTS, check_id
from oracleagentmemory.core.store._threads import ThreadOwnershipError
from oracleagentmemory.core.thread import OracleThread
from oracleagentmemory.integrations._openai_agents_items import check_items, record_item

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

__all__ = ["AgentMemorySession", "memory_tools"]

T = TypeVar("T")

_OWN_ARGUMENTS = frozenset({"thread_id", "user_id", "agent_id", "metadata"})


async def _mutation(work: Callable[[], T]) -> T:
    """Run a write in a worker thread; a cancelled caller still waits for its outcome (the
    write cannot be stopped once started), then sees the cancellation."""
    task = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        raise


def _check_client(client: Any) -> OracleAgentMemory:
    if not isinstance(client, OracleAgentMemory):
        raise TypeError(f"client must be an OracleAgentMemory, got {type(client).__name__}")
    return client


def _check_agent(agent_id: Any) -> str | None:
    return None if agent_id is None else check_id(agent_id, "agent_id")


class AgentMemorySession:
    """An OpenAI Agents SDK session stored as the thread ``session_id`` of ``client``.

    The thread is opened, or created for ``user_id`` / ``agent_id`` (with
    ``thread_metadata``), when the session is built; a thread of another user raises
    ``ThreadOwnershipError`` (a ValueError), one of another agent (when ``agent_id`` is
    given) ValueError; building the session is one short store call. ``thread_settings``
    (e.g. ``llm``, ``memory_extraction_config``) go to ``create_thread`` / ``get_thread``, so
    the client's extraction pipeline runs on the stored messages as for any thread.
    ``session_settings.limit`` is the default ``get_items`` limit, as in ``SQLiteSession``.
    Any JSON-serialisable item is stored and read back exactly, in order (items that are not
    chat items, such as ``EncryptedSession``'s envelopes, are kept but not indexed as text).
    :meth:`close` ends the session; the client stays open (it is the caller's).
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        client: OracleAgentMemory,
        *,
        user_id: str,
        agent_id: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        thread_metadata: dict[str, Any] | None = None,
        **thread_settings: Any,
    ) -> None:
        self.session_id = check_id(session_id, "session_id")
        self._client = _check_client(client)
        self._user_id = check_id(user_id, "user_id")
        self._agent_id = _check_agent(agent_id)
        if session_settings is not None and not isinstance(
            session_settings, SessionSettings | Mapping
        ):
            raise TypeError("session_settings must be a SessionSettings, a dict or None")
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(dict(session_settings))
            if isinstance(session_settings, Mapping)
            else session_settings
        )
        if thread_metadata is not None and not isinstance(thread_metadata, dict):
            raise TypeError("thread_metadata must be a dict or None")
        clash = sorted(_OWN_ARGUMENTS & set(thread_settings))
        if clash:
            raise TypeError(
                f"thread_settings may not set {clash}: the session's arguments give the thread"
            )
        self._thread_metadata = thread_metadata
        self._thread_settings = thread_settings
        self._closed = False
        self._thread = self._open_thread()

    # ------------------------------------------------------------------ the thread

    @property
    def user_id(self) -> str:
        """The user who owns this session's thread."""
        return self._user_id

    @property
    def agent_id(self) -> str | None:
        """The thread's agent (None: no agent)."""
        return self._thread.agent_id

    @property
    def thread(self) -> OracleThread:
        """The thread handle (for its context card, summary, search or memories)."""
        return self._thread

    def _open_thread(self) -> OracleThread:
        """The stored thread ``session_id``, created when missing, checked to be ours."""
        client, sid = self._client, self.session_id
        try:
            thread = client.get_thread(sid, **self._thread_settings)
        except KeyError:
            owner: dict[str, Any] = {"user_id": self._user_id, "agent_id": self._agent_id}
            try:
                return client.create_thread(
                    thread_id=sid, metadata=self._thread_metadata, **owner, **self._thread_settings
                )
            except ValueError as err:  # created meanwhile, or another user's thread id
                try:
                    thread = client.get_thread(sid, **self._thread_settings)
                except KeyError:
                    raise err from None
        if thread.user_id != self._user_id:
            raise ThreadOwnershipError(f"thread {sid!r} belongs to another user")
        if self._agent_id is not None and thread.agent_id != self._agent_id:
            raise ValueError(f"thread {sid!r} belongs to another agent")
        return thread

    def _add(self, messages: list[dict[str, Any]]) -> None:
        try:
            self._thread.add_messages(messages)
        except KeyError:  # the thread was deleted meanwhile: start it again
            self._thread = self._open_thread()
            self._thread.add_messages(messages)

    def _records(self, limit: int | None) -> list[Any]:
        return self._client.store.list_thread_messages(self.session_id, last_n=limit)

    def _pop(self) -> Any:
        while True:
            last = self._records(1)
            if not last:
                return None
            if self._thread.delete_message(last[0].id) == 1:
                return record_item(last[0])
            # another caller deleted it first: look again

    def _clear(self) -> None:
        clear_thread_messages(self._thread)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("AgentMemorySession is closed")

    # ------------------------------------------------------------------ Session protocol

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items (default ``session_settings.limit``; None: all) in
        chronological order; 0 gives ``[]``."""
        self._check_open()
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
        resolved = resolve_session_limit(limit, self.session_settings)
        if resolved is not None and not 0 <= resolved <= MAX_LIST_ROWS:
            raise ValueError(f"limit must be between 0 and {MAX_LIST_ROWS}, got {resolved}")
        if resolved == 0:
            return []
        records = await asyncio.to_thread(self._records, resolved)
        return [record_item(r) for r in records]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` as messages, all in one write (checked before anything is
        written: TypeError naming ``items[i]``): any JSON-serialisable values."""
        self._check_open()
        messages = check_items(items)
        if messages:
            await _mutation(lambda: self._add(messages))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the most recent item; None when the session is empty."""
        self._check_open()
        item: TResponseInputItem | None = await _mutation(self._pop)
        return item

    async def clear_session(self) -> None:
        """Delete every message of the thread in one transaction (the thread, its settings
        and the memories extracted from it stay)."""
        self._check_open()
        await _mutation(self._clear)

    def close(self) -> None:
        """End the session, as ``SQLiteSession.close``: its methods then raise RuntimeError.
        Idempotent; the client and its store stay open (close them with the client)."""
        self._closed = True

    def __repr__(self) -> str:
        return f"AgentMemorySession(session_id={self.session_id!r}, user_id={self._user_id!r})"


MemoryType = Literal["memory", "fact", "preference", "guideline"]


class _ToolArgumentError(ValueError):
    """A tool argument the model got wrong; its message is shown to the model."""


def _tool_error(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """The model sees what was wrong with its arguments; other failures stay hidden (the
    SDK's default message)."""
    if isinstance(error, _ToolArgumentError):
        return f"Invalid arguments: {error}"
    return default_tool_error_function(ctx, error)


def _positive(value: Any, name: str, maximum: int, error: type[ValueError] = ValueError) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if error is ValueError:
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        raise error(f"{name} must be an integer")
    if not 1 <= value <= maximum:
        raise error(f"{name} must be between 1 and {maximum}, got {value}")
    return value


def memory_tools(
    client: OracleAgentMemory,
    *,
    user_id: str,
    agent_id: str | None = None,
    thread_id: str | None = None,
    max_results: int = 5,
    max_results_limit: int = 20,
    record_types: Sequence[str] = MEMORY_RECORD_TYPES,
) -> list[Tool]:
    """``[search_memory, add_memory]``: function tools on ``user_id``'s memories.

    The scope is fixed here; the model chooses only the query, the number of results (1 to
    ``max_results_limit``, default ``max_results``), and the content and type of a new
    memory. Search is exact on the user and ranks ``agent_id`` / ``thread_id`` (when given)
    higher; new memories take the user, ``agent_id`` and ``thread_id`` (None: not scoped to
    one).
    """
    _check_client(client)
    user = check_id(user_id, "user_id")
    agent = _check_agent(agent_id)
    thread = None if thread_id is None else check_id(thread_id, "thread_id")
    limit = _positive(max_results_limit, "max_results_limit", MAX_SEARCH_RESULTS)
    default = _positive(max_results, "max_results", limit)
    if isinstance(record_types, str) or not isinstance(record_types, Sequence):
        raise TypeError("record_types must be a list of record type names")
    types = list(record_types)
    if not types or not all(isinstance(t, str) and t for t in types):
        raise ValueError("record_types must be a non-empty list of record type names")
    scope: dict[str, Any] = {"user_id": user, "exact_user_match": True}
    if agent is not None:
        scope.update(agent_id=agent, exact_agent_match=False)
    if thread is not None:
        scope.update(thread_id=thread, exact_thread_match=False)
    owner: dict[str, Any] = {"user_id": user}
    if agent is not None:
        owner["agent_id"] = agent
    if thread is not None:
        owner["thread_id"] = thread

    async def search_memory(query: str, max_results: int = default) -> str:
        """Search the user's long-term memory (facts, preferences, guidelines, past notes).

        Args:
            query: What to look for, in natural language.
            max_results: How many memories to return at most.
        """
        if not isinstance(query, str) or not query.strip():
            raise _ToolArgumentError("query must be a non-empty string")
        k = _positive(max_results, "max_results", limit, _ToolArgumentError)
        results = await client.search_async(query, **scope, max_results=k, record_types=types)
        if not results:
            return "No memories found."
        return "\n".join(r.formatted_content for r in results)

    async def add_memory(content: str, memory_type: MemoryType = "memory") -> str:
        """Save something worth remembering about the user for later conversations.

        Args:
            content: The memory, as a short self-contained statement.
            memory_type: fact, preference, guideline (how to behave) or memory (anything else).
        """
        if not isinstance(content, str) or not content.strip():
            raise _ToolArgumentError("content must be a non-empty string")
        if memory_type not in MEMORY_RECORD_TYPES:
            raise _ToolArgumentError(f"memory_type must be one of {list(MEMORY_RECORD_TYPES)}")
        memory_id = await client.add_memory_async(content, memory_type=memory_type, **owner)
        return f"Saved {memory_type} {memory_id}."

    return [
        function_tool(search_memory, failure_error_function=_tool_error),
        function_tool(add_memory, failure_error_function=_tool_error),
    ]

"""The MCP server: tools and resources over the client API, for one fixed user.

The user (and optional agent) the server acts for are given when it starts (``--user-id`` /
``--agent-id`` or ``OAM_MCP_USER_ID`` / ``OAM_MCP_AGENT_ID``). No tool takes a user id: every
read is scoped to that user exactly, every write is owned by it, and a record of another user
is reported as not found, so an agent cannot reach another user's memory through the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field

from oracleagentmemory.admin.connect import Target, open_client

T = TypeVar("T")
MemoryType = Literal["memory", "guideline", "fact", "preference"]
MEMORY_TYPES: tuple[str, ...] = ("memory", "guideline", "fact", "preference")
LinkType = Literal["supersedes", "contradicts", "refines", "supports", "duplicates"]
INSTRUCTIONS = (
    "Long-term memory for one user. Use search_memories before answering questions about the "
    "user, add_memory to remember durable facts and preferences, and add_messages to keep a "
    "conversation's transcript in a thread."
)


class MessageIn(BaseModel):
    """One chat message."""

    role: Annotated[
        str, Field(min_length=1, max_length=64, description="user, assistant, system, ...")
    ]
    content: Annotated[str, Field(max_length=200_000)]
    timestamp: str | None = Field(default=None, description="ISO-8601")


def _record(record: Any) -> dict[str, Any]:
    status = getattr(record, "status", "valid")
    return {
        "id": record.id,
        "record_type": record.record_type,
        "content": record.content
        if isinstance(record.content, str | None)
        else str(record.content),
        "status": str(getattr(status, "value", status)),
        "timestamp": record.timestamp,
        "metadata": record.metadata,
        "thread_id": getattr(record, "thread_id", None),
    }


class MemoryTools:
    """The operations behind the tools, bound to one client, user and agent."""

    def __init__(self, client: Any, user_id: str, agent_id: str | None) -> None:
        if not isinstance(user_id, str) or not user_id:
            raise ValueError("user_id must be a non-empty string")
        self.client = client
        self.user_id = user_id
        self.agent_id = agent_id

    def _owned_memory(self, memory_id: str) -> Any:
        store = self.client.store
        for rtype in MEMORY_TYPES:
            record = store.get(rtype, memory_id)
            if record is not None:
                if record.user_id != self.user_id or (
                    self.agent_id is not None and record.agent_id not in (None, self.agent_id)
                ):
                    break
                return record
        raise ValueError(f"no memory with id {memory_id!r}")

    def _thread(self, thread_id: str, *, create: bool) -> Any:
        record = self.client.store.get("thread", thread_id)
        if record is None:
            if not create:
                raise ValueError(f"no thread with id {thread_id!r}")
            kwargs: dict[str, Any] = {"thread_id": thread_id, "user_id": self.user_id}
            if self.agent_id is not None:
                kwargs["agent_id"] = self.agent_id
            return self.client.create_thread(**kwargs)
        if record.user_id != self.user_id:
            raise ValueError(f"no thread with id {thread_id!r}")
        return self.client.get_thread(thread_id)

    def add_memory(
        self,
        content: str,
        memory_type: str = "memory",
        metadata: dict[str, Any] | None = None,
        thread_id: str | None = None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"memory_type": memory_type, "user_id": self.user_id}
        if self.agent_id is not None:
            kwargs["agent_id"] = self.agent_id
        if metadata is not None:
            kwargs["metadata"] = metadata
        if thread_id is not None:
            self._thread(thread_id, create=False)
            kwargs["thread_id"] = thread_id
        memory_id = self.client.add_memory(content, **kwargs)
        return _record(self.client.store.get(memory_type, memory_id))

    def search_memories(
        self,
        query: str,
        max_results: int = 10,
        record_types: list[str] | None = None,
        thread_id: str | None = None,
    ) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "user_id": self.user_id,
            "exact_user_match": True,
            "max_results": max_results,
        }
        if self.agent_id is not None:
            kwargs["agent_id"] = self.agent_id
        if record_types:
            kwargs["record_types"] = record_types
        if thread_id is not None:
            kwargs["thread_id"] = thread_id
        return [
            {**_record(r.record), "distance": float(r.distance)}
            for r in self.client.search(query, **kwargs)
        ]

    def list_memories(self, thread_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {"user_id": self.user_id, "limit": limit}
        if self.agent_id is not None:
            kwargs["agent_id"] = self.agent_id
        if thread_id is not None:
            kwargs["thread_id"] = thread_id
        return [_record(r) for r in self.client.list_memories(**kwargs)]

    def update_memory(
        self,
        memory_id: str,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        status: Literal["valid", "invalid"] | None = None,
    ) -> dict[str, Any]:
        record = self._owned_memory(memory_id)
        kwargs: dict[str, Any] = {}
        if content is not None:
            kwargs["content"] = content
        if metadata is not None:
            kwargs["metadata"] = metadata
        if status is not None:
            kwargs["status"] = status
        if kwargs:
            self.client.update_memory(memory_id, **kwargs)
        return _record(self.client.store.get(record.record_type, memory_id))

    def delete_memory(self, memory_id: str) -> dict[str, int]:
        self._owned_memory(memory_id)
        return {"deleted": self.client.delete_memory(memory_id)}

    def add_messages(self, thread_id: str, messages: list[MessageIn]) -> dict[str, list[str]]:
        thread = self._thread(thread_id, create=True)
        msgs = [m.model_dump(exclude_none=True) for m in messages]
        return {"ids": thread.add_messages(msgs)}

    def get_context_card(
        self,
        thread_id: str,
        max_relevant_results: int | None = None,
        max_recent_messages: int | None = None,
    ) -> str:
        kwargs: dict[str, Any] = {}
        if max_relevant_results is not None:
            kwargs["max_relevant_results"] = max_relevant_results
        if max_recent_messages is not None:
            kwargs["max_recent_messages"] = max_recent_messages
        return str(self._thread(thread_id, create=False).get_context_card(**kwargs).content)

    def link_memories(
        self, source_record_id: str, target_record_id: str, relation_type: str
    ) -> dict[str, str]:
        source = self._owned_memory(source_record_id)
        target = self._owned_memory(target_record_id)
        rid = self.client.link_records(
            source.id, source.record_type, target.id, target.record_type, relation_type
        )
        return {"relation_id": rid}

    def profile(self) -> str:
        record = self.client.store.get("user_profile", self.user_id)
        return "" if record is None else str(record.content or "")

    def thread_summary(self, thread_id: str) -> str:
        return str(self._thread(thread_id, create=False).get_summary().content)


def build_server(client: Any, user_id: str, agent_id: str | None = None) -> Any:
    """An ``MCPServer`` whose tools act on ``client`` for ``user_id`` (and ``agent_id``)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    ops = MemoryTools(client, user_id, agent_id)

    def call(fn: Callable[..., T], *args: Any) -> T:
        """Run one operation; a refused request is a tool error the agent can read."""
        try:
            return fn(*args)
        except (ValueError, TypeError, KeyError) as exc:
            raise ToolError(str(exc.args[0]) if isinstance(exc, KeyError) else str(exc)) from None

    server = MCPServer(name="oracleagentmemory", instructions=INSTRUCTIONS)

    @server.tool(description="Remember something durable about the user.")
    def add_memory(
        content: Annotated[str, Field(min_length=1, max_length=100_000)],
        memory_type: MemoryType = "memory",
        metadata: dict[str, Any] | None = None,
        thread_id: str | None = None,
    ) -> dict[str, Any]:
        return call(ops.add_memory, content, memory_type, metadata, thread_id)

    @server.tool(
        description="Search the user's memories and messages; lower distance is more relevant."
    )
    def search_memories(
        query: Annotated[str, Field(min_length=1, max_length=10_000)],
        max_results: Annotated[int, Field(ge=1, le=100)] = 10,
        record_types: list[Literal["message", "memory", "guideline", "fact", "preference"]]
        | None = None,
        thread_id: str | None = None,
    ) -> list[dict[str, Any]]:
        return call(ops.search_memories, query, max_results, record_types, thread_id)

    @server.tool(description="List the user's memories, oldest first.")
    def list_memories(
        thread_id: str | None = None, limit: Annotated[int, Field(ge=1, le=1000)] = 50
    ) -> list[dict[str, Any]]:
        return call(ops.list_memories, thread_id, limit)

    @server.tool(description="Change a memory's content, metadata or status.")
    def update_memory(
        memory_id: str,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        status: Literal["valid", "invalid"] | None = None,
    ) -> dict[str, Any]:
        return call(ops.update_memory, memory_id, content, metadata, status)

    @server.tool(description="Delete a memory.")
    def delete_memory(memory_id: str) -> dict[str, int]:
        return call(ops.delete_memory, memory_id)

    @server.tool(description="Append messages to a thread (created for the user if new).")
    def add_messages(
        thread_id: Annotated[str, Field(min_length=1, max_length=256)],
        messages: Annotated[list[MessageIn], Field(min_length=1, max_length=1000)],
    ) -> dict[str, list[str]]:
        return call(ops.add_messages, thread_id, messages)

    @server.tool(
        description="A prompt-ready context card for a thread: summary, relevant "
        "memories and recent messages."
    )
    def get_context_card(
        thread_id: str,
        max_relevant_results: int | None = None,
        max_recent_messages: int | None = None,
    ) -> str:
        return call(ops.get_context_card, thread_id, max_relevant_results, max_recent_messages)

    @server.tool(description="Link two memories (source relation_type target).")
    def link_memories(
        source_record_id: str, target_record_id: str, relation_type: LinkType
    ) -> dict[str, str]:
        return call(ops.link_memories, source_record_id, target_record_id, relation_type)

    @server.resource(
        "memory://profile",
        name="user profile",
        mime_type="text/plain",
        description="The profile of the user this server acts for",
    )
    def profile() -> str:
        return call(ops.profile)

    @server.resource(
        "memory://threads/{thread_id}/summary",
        name="thread summary",
        mime_type="text/plain",
        description="A thread's summary",
    )
    def thread_summary(thread_id: str) -> str:
        return call(ops.thread_summary, thread_id)

    return server


def run(
    target: Target,
    *,
    user_id: str,
    agent_id: str | None,
    transport: str,
    host: str,
    port: int,
    embedder: str | None,
    search_strategy: str | None,
) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (http)."""
    client = open_client(target, embedder=embedder, search_strategy=search_strategy, create=True)
    try:
        server = build_server(client, user_id, agent_id)
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        client.close()

"""The MCP server: tools and resources over the client API, for one fixed user.

The user (and optional agent) the server acts for are given when it starts (``--user-id`` /
``--agent-id`` or ``OAM_MCP_USER_ID`` / ``OAM_MCP_AGENT_ID``). No tool takes a user id: every
read is scoped to that user exactly (and to that agent exactly, when one is given), every
write is owned by them, and a record or thread of another user or agent is reported as not
found, so an agent cannot reach another user's (or agent's) memory through the server.

Over streamable HTTP every request needs an API key of the REST server's key table
(``Authorization: Bearer <key>``) that may touch the server's user; the server refuses to
start beyond loopback while no such key exists.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field

from oracleagentmemory.admin.apikeys import ApiKeyStore
from oracleagentmemory.admin.connect import Target, open_client
from oracleagentmemory.core._shared._actor import acting_as
from oracleagentmemory.core.store._limits import MAX_REQUEST_TEXT
from oracleagentmemory.core.store._overview import MAX_OFFSET

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
    content: Annotated[str, Field(max_length=MAX_REQUEST_TEXT)]
    timestamp: str | None = Field(default=None, description="ISO-8601")


def _record(record: Any) -> dict[str, Any]:
    status = getattr(record, "status", "valid")
    times = {
        name: getattr(record, name)
        for name in ("updated_at", "valid_from", "valid_until")
        if hasattr(record, name)  # memories: when it changed, became and stopped being true
    }
    return {
        **times,
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

    def _mine(self, user_id: str | None, agent_id: str | None) -> bool:
        """Whether a record (or thread) of this user and agent is this server's: its user, and
        its agent when the server has one."""
        return user_id == self.user_id and (self.agent_id is None or agent_id == self.agent_id)

    def _owned_memory(self, memory_id: str) -> Any:
        store = self.client.store
        for rtype in MEMORY_TYPES:
            record = store.get(rtype, memory_id)
            if record is not None:
                if not self._mine(record.user_id, record.agent_id):
                    break
                return record
        raise ValueError(f"no memory with id {memory_id!r}")

    def _filter_thread(self, thread_id: str) -> None:
        """A thread id a read filters on: unknown (nothing matches) or this server's."""
        owner = self.client.store.thread_owner(thread_id)
        if owner is not None and not self._mine(*owner):
            raise ValueError(f"no thread with id {thread_id!r}")

    def _thread(self, thread_id: str, *, create: bool) -> Any:
        # Another user's (or agent's) thread answers alike whether it has a thread row or
        # only messages naming it: nothing tells what it holds.
        missing = f"no thread with id {thread_id!r}"
        taken = missing + (" (the id is taken: use another)" if create else "")
        record = self.client.store.get("thread", thread_id)
        if record is not None:
            if not self._mine(record.user_id, record.agent_id):
                raise ValueError(taken)
            return self.client.get_thread(thread_id)
        owner = self.client.store.thread_owner(thread_id)
        if owner is not None and not self._mine(*owner):
            raise ValueError(taken)
        if not create:
            raise ValueError(missing)
        # No agent (None) when this server acts for none: never a generated agent id.
        return self.client.create_thread(
            thread_id=thread_id, user_id=self.user_id, agent_id=self.agent_id
        )

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
        if thread_id is not None:  # the thread's scope (user and agent), as thread.add_memory
            del kwargs["user_id"]
            kwargs.pop("agent_id", None)
            memory_id = self._thread(thread_id, create=False).add_memory(content, **kwargs)
        else:
            memory_id = self.client.add_memory(content, **kwargs)
        return _record(self.client.store.get(memory_type, memory_id))

    def search_memories(
        self,
        query: str,
        max_results: int = 10,
        record_types: list[str] | None = None,
        thread_id: str | None = None,
        as_of: str | None = None,
    ) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "user_id": self.user_id,
            "exact_user_match": True,
            "max_results": max_results,
        }
        if as_of is not None:  # what was true then (ISO-8601; naive: UTC)
            try:
                kwargs["as_of"] = datetime.fromisoformat(as_of)
            except (TypeError, ValueError):
                raise ValueError(f"as_of is not an ISO-8601 time: {as_of[:64]!r}") from None
        if self.agent_id is not None:
            kwargs.update(agent_id=self.agent_id, exact_agent_match=True)
        if record_types:
            kwargs["record_types"] = record_types
        if thread_id is not None:
            self._filter_thread(thread_id)
            kwargs["thread_id"] = thread_id
        return [
            {**_record(r.record), "distance": float(r.distance)}
            for r in self.client.search(query, **kwargs)
        ]

    def list_memories(
        self, thread_id: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` memories after the ``offset`` newest, oldest first: one
        ``LIMIT``/``OFFSET`` query, so a page costs the page, whatever the user holds."""
        kwargs: dict[str, Any] = {"user_id": self.user_id, "limit": limit, "offset": offset}
        if self.agent_id is not None:
            kwargs["agent_id"] = self.agent_id
        if thread_id is not None:
            self._filter_thread(thread_id)
            kwargs["thread_id"] = thread_id
        found = self.client.store.overview.records(MEMORY_TYPES, newest_first=True, **kwargs)
        return [_record(r) for r in reversed(found.items)]

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
        total = sum(len(m.content) for m in messages)
        if total > MAX_REQUEST_TEXT:
            raise ValueError(
                f"messages hold {total} characters of content; one call may hold "
                f"at most {MAX_REQUEST_TEXT}"
            )
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

    def get_memory_history(self, memory_id: str) -> list[dict[str, Any]]:
        versions = self.client.get_memory_history(memory_id)
        try:
            self._owned_memory(memory_id)
        except ValueError:  # deleted: its tombstone says whose it was
            if not versions or not self._mine(versions[-1].user_id, versions[-1].agent_id):
                raise
        return [
            {
                "version": v.version,
                "change": v.change,
                "at": v.at.isoformat(),
                "actor": v.actor,
                "content": v.content,
                "metadata": v.metadata,
                "memory_type": v.memory_type,
                "status": None if v.status is None else v.status.value,
                "changed": list(v.changed),
                "source_message_ids": list(v.source_message_ids),
                "superseded_by": v.superseded_by,
            }
            for v in versions
            if self._mine(v.user_id, v.agent_id)
        ]

    def profile(self) -> str:
        record = self.client.store.get("user_profile", self.user_id)
        return "" if record is None else str(record.content or "")

    def thread_summary(self, thread_id: str) -> str:
        return str(self._thread(thread_id, create=False).get_summary().content)


def build_server(client: Any, user_id: str, agent_id: str | None = None) -> Any:
    """An ``MCPServer`` whose tools act on ``client`` for ``user_id`` (and ``agent_id``)."""
    try:  # the [mcp] extra
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        raise ImportError(
            "the MCP server needs the mcp extra: pip install 'recallwell[mcp]'"
        ) from exc

    ops = MemoryTools(client, user_id, agent_id)

    actor = f"agent:{agent_id}" if agent_id else f"user:{user_id}"

    def call(fn: Callable[..., T], *args: Any) -> T:
        """Run one operation (its changes made by this server's agent, else its user, in
        a memory's history); a refused request is a tool error the agent can read."""
        try:
            with acting_as(actor):
                return fn(*args)
        except (ValueError, TypeError, KeyError) as exc:
            raise ToolError(str(exc.args[0]) if isinstance(exc, KeyError) else str(exc)) from None

    server = MCPServer(name="oracleagentmemory", instructions=INSTRUCTIONS)

    @server.tool(description="Remember something durable about the user.")
    def add_memory(
        content: Annotated[str, Field(min_length=1, max_length=MAX_REQUEST_TEXT)],
        memory_type: MemoryType = "memory",
        metadata: dict[str, Any] | None = None,
        thread_id: str | None = None,
    ) -> dict[str, Any]:
        return call(ops.add_memory, content, memory_type, metadata, thread_id)

    @server.tool(
        description="Search the user's memories and messages; lower distance is more relevant."
        " as_of (ISO-8601 time): what was true then, superseded memories included."
    )
    def search_memories(
        query: Annotated[str, Field(min_length=1, max_length=10_000)],
        max_results: Annotated[int, Field(ge=1, le=100)] = 10,
        record_types: list[Literal["message", "memory", "guideline", "fact", "preference"]]
        | None = None,
        thread_id: str | None = None,
        as_of: Annotated[str | None, Field(max_length=64)] = None,
    ) -> list[dict[str, Any]]:
        return call(ops.search_memories, query, max_results, record_types, thread_id, as_of)

    @server.tool(
        description="List the user's memories, oldest first: the newest `limit`, "
        "after skipping the `offset` newest (page back with offset += limit)."
    )
    def list_memories(
        thread_id: str | None = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0,
    ) -> list[dict[str, Any]]:
        return call(ops.list_memories, thread_id, limit, offset)

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

    @server.tool(
        description="A memory's versions, oldest first: each change (created, "
        "updated, status, superseded, merged, deleted) with when, who and the content after it."
    )
    def get_memory_history(memory_id: str) -> list[dict[str, Any]]:
        return call(ops.get_memory_history, memory_id)

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
    llm: dict[str, str] | None = None,
) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (http). The store
    is opened and the embedding model loaded before the first request is read. With ``llm``
    (see ``open_client``), messages added through the tools are extracted into memories."""
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per LLM request
    keys = None
    if transport != "stdio":
        keys = _http_keys(target, user_id, host)
    client = open_client(
        target, embedder=embedder, search_strategy=search_strategy, create=True, llm=llm
    )
    try:
        from oracleagentmemory.admin.serving import load_embedder

        load_embedder(client)  # before the first request, which would otherwise wait for it
        server = build_server(client, user_id, agent_id)
        if keys is None:
            import sys

            agent = f", agent {agent_id!r}" if agent_id else ""
            extraction = f"memory extraction by {llm['model']}" if llm else "no LLM: no extraction"
            print(
                f"oam mcp: serving user {user_id!r}{agent} over stdio (store "
                f"{target.memory_store_id or 'oam'} in {target.shown}; {extraction})",
                file=sys.stderr,
                flush=True,
            )
            server.run("stdio")
        else:
            _serve_http(server, keys, user_id, host, port)
    finally:
        client.close()
        if keys is not None:
            keys.close()


def _http_keys(target: Target, user_id: str, host: str) -> ApiKeyStore:
    """The key table HTTP requests are checked against; refuses (RuntimeError) to serve beyond
    loopback while no active key may touch ``user_id``."""
    from oracleagentmemory.admin.serving import is_loopback, network_warning

    keys = ApiKeyStore(target)
    usable = [k for k in keys.list() if k.revoked_at is None and k.allows(user_id)]
    if not usable:
        hint = f"create one with `oam keys create --user-id {user_id}`"
        if not is_loopback(host):
            keys.close()
            raise RuntimeError(
                f"refusing to serve MCP on {host}: no API key may touch user "
                f"{user_id!r}, so no client could be authenticated; {hint}"
            )
        print(
            f"warning: oam mcp: no API key may touch user {user_id!r} yet: every request is "
            f"refused until one exists ({hint})",
            file=sys.stderr,
            flush=True,
        )
    warning = network_warning(host, "oam mcp")
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    return keys


def _serve_http(server: Any, keys: ApiKeyStore, user_id: str, host: str, port: int) -> None:
    import uvicorn

    from oracleagentmemory.admin.serving import HTTP_PROTOCOL, announce, listen

    app = BearerKeys(server.streamable_http_app(host=host), keys, user_id)
    sock = listen(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", http=HTTP_PROTOCOL)
    announce("oam mcp", sock, f"MCP streamable HTTP at /mcp, acting for user {user_id!r}")
    uvicorn.Server(config).run(sockets=[sock])


class BearerKeys:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <key>`` for a key
    that may touch ``user_id`` (401 without a valid key, 403 for a key of other users)."""

    def __init__(self, app: Any, keys: ApiKeyStore, user_id: str) -> None:
        self.app = app
        self.keys = keys
        self.user_id = user_id

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        import anyio.to_thread

        header = ""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                header = value.decode("latin-1")
        scheme, _, token = header.partition(" ")
        key = None
        if scheme.lower() == "bearer" and token.strip():
            key = await anyio.to_thread.run_sync(self.keys.verify, token.strip())
        if key is None:
            await _deny(
                send,
                401,
                "missing or invalid API key: send 'Authorization: Bearer "
                "<key>' (a key from `oam keys create`)",
            )
        elif not key.allows(self.user_id):
            await _deny(send, 403, "this API key may not access this server's user")
        else:
            await self.app(scope, receive, send)


async def _deny(send: Any, status: int, message: str) -> None:
    import json

    body = json.dumps({"error": {"status": status, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

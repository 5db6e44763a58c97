"""The thread handles a client hands out (``OracleAgentMemory.create_thread``, ``get_thread``,
``update_thread``): the thread row written or read, the thread's settings resolved per field
(operation value > stored thread value > client value > SDK default, see ``_runtime``) and
checked, and the handle bound to the client's store and extraction service."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.agentmemory import IAgentMemory
from oracleagentmemory.apis.records import ThreadRecord
from oracleagentmemory.core._client._runtime import (
    ResolvedSettings,
    check_extraction,
    flatten,
    to_json,
)
from oracleagentmemory.core._client._validation import check_single
from oracleagentmemory.core.extractors._service import ExtractionService
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.thread import OracleThread

_HANDLE_ONLY = ("llm", "search_config")
"""Settings of a ``create_thread`` / ``update_thread`` call its returned handle resolves
over the stored ones (an LLM is never stored)."""


@dataclass(frozen=True)
class ThreadHandles:
    """What a client's thread handles share: its store, the client itself, its extraction
    service and its flat settings. ``settings`` arguments are a call's runtime settings by
    name (``_runtime.thread_settings``)."""

    store: OracleMemoryStore
    client: IAgentMemory
    service: ExtractionService
    client_settings: Mapping[str, Any]

    def resolve(self, stored: dict[str, Any], call: dict[str, Any]) -> ResolvedSettings:
        """A thread's settings from a call's, the stored ones and the client's (checked)."""
        settings = ResolvedSettings(flatten(call), stored, self.client_settings)
        check_extraction(settings, where="thread")
        return settings

    def load(self, thread_id: str) -> ThreadRecord:
        """The stored thread row; KeyError when there is none."""
        if not isinstance(thread_id, str):
            raise TypeError("thread_id must be a string")
        record = self.store.get("thread", thread_id)
        if not isinstance(record, ThreadRecord):
            raise KeyError(f"no thread with id {thread_id!r}")
        return record

    def create(
        self,
        settings: dict[str, Any],
        thread_id: Any,
        user_id: Any,
        agent_id: Any,
        metadata: Any,
    ) -> OracleThread:
        """``create_thread``: the thread stored with its durable settings (all but ``llm``);
        its handle resolves the call's ``llm`` and ``search_config`` over them."""
        handle = OracleThread(
            self.store,
            self.client,
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            metadata=metadata,
        )
        stored = to_json(flatten(settings, "create_thread"))
        call = {name: settings.get(name, NOT_SET_MARKER) for name in _HANDLE_ONLY}
        resolved = self.resolve(stored, call)
        stored_id = self.store.create_thread_record(
            handle.thread_id,
            user_id=handle.user_id,
            agent_id=handle.agent_id,
            metadata=handle.metadata,
            runtime_config=stored,
        )
        return OracleThread._bind(
            self.store,
            self.client,
            stored_id,
            handle.user_id,
            handle.agent_id,
            handle.metadata,
            resolved,
            self.service,
        )

    def open(self, thread_id: str, settings: dict[str, Any]) -> OracleThread:
        """``get_thread``: a handle on the stored thread, the call's settings winning."""
        record = self.load(thread_id)
        resolved = self.resolve(record.runtime_config or {}, settings)
        return OracleThread._bind(
            self.store,
            self.client,
            record.id,
            record.user_id,
            record.agent_id,
            record.metadata,
            resolved,
            self.service,
        )

    def update(self, thread_id: str, metadata: Any, settings: dict[str, Any]) -> None:
        """``update_thread``'s write: new metadata (replaced whole) and the call's durable
        settings stored over the thread's, once the result resolves as ``get_thread`` would
        resolve it (nothing is written when it does not)."""
        check_single(metadata=metadata)
        record = self.load(thread_id)
        stored = dict(record.runtime_config or {})
        stored.update(to_json(flatten(settings, "update_thread")))
        self.resolve(stored, {name: settings.get(name, NOT_SET_MARKER) for name in _HANDLE_ONLY})
        self.store.update_thread_record(thread_id, metadata=metadata, runtime_config=stored)

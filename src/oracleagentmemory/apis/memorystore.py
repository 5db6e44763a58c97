"""The memory-store interface shared by every backend."""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from typing import Any, Final

from oracleagentmemory.apis.records import MessageRecord, Record

MAX_LIST_LIMIT: Final = 10000
"""Default upper bound of ``list()`` when ``limit`` is omitted."""


class IMemoryStore(ABC):
    """Persistence and similarity search over records (see ``OracleMemoryStore``)."""

    @abstractmethod
    def add(self, *args: Any, **kwargs: Any) -> list[str]:
        """Add records; returns their identifiers in input order."""

    @abstractmethod
    def add_user(self, user_id: str, information: str, metadata: Any = ...) -> str:
        """Add a user profile; returns the user id."""

    @abstractmethod
    def add_agent(self, agent_id: str, information: str, metadata: Any = ...) -> str:
        """Add an agent profile; returns the agent id."""

    @abstractmethod
    def get(self, record_type: str, record_id: str, *args: Any, **kwargs: Any) -> Record | None:
        """Return one record, or None."""

    @abstractmethod
    def list(self, record_type: str, *args: Any, **kwargs: Any) -> list[Record]:
        """List records of one type, oldest to newest within the window."""

    @abstractmethod
    def list_thread_messages(
        self, thread_id: str, *args: Any, **kwargs: Any
    ) -> builtins.list[MessageRecord]:
        """List a thread's messages in seq_no order."""

    @abstractmethod
    def search(
        self, query: str | None, k: int, *args: Any, **kwargs: Any
    ) -> builtins.list[tuple[Record, float]]:
        """Return (record, distance) pairs, distance ascending."""

    @abstractmethod
    def update(self, *args: Any, **kwargs: Any) -> int:
        """Update one record; returns 0 or 1."""

    @abstractmethod
    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record; returns 0 or 1."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread and everything scoped to it; returns 0 or 1."""

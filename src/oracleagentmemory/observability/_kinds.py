"""The operation kinds events report, apart from the events themselves (pydantic models), so
the classes that declare which methods emit events import no pydantic until one is built."""

from __future__ import annotations

from enum import Enum


class OperationKind(str, Enum):
    """Operation kinds used by public API observability events."""

    CREATE = "create"
    READ = "read"
    UPDATE = "update"
    DELETE = "delete"
    UNKNOWN = "unknown"


# Documented, pickled and shown as the public ``observability.event.OperationKind``.
OperationKind.__module__ = "oracleagentmemory.observability.event"

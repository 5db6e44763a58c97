"""A caller-prepared batch of records for ``add_batches``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER


@dataclass(slots=True)
class PendingRecordBatch:
    """The arguments of one ``store.add()`` call, prepared ahead of time.

    ``texts`` is an alias of ``contents``; give one of them. Every other field has the meaning
    of the ``add()`` parameter of the same name (scalars broadcast across the batch).
    """

    contents: Any = NOT_SET_MARKER
    record_type: Any = NOT_SET_MARKER
    record_ids: Any = NOT_SET_MARKER
    index_texts: Any = NOT_SET_MARKER
    embeddings: Any = NOT_SET_MARKER
    thread_ids: Any = NOT_SET_MARKER
    user_ids: Any = NOT_SET_MARKER
    agent_ids: Any = NOT_SET_MARKER
    roles: Any = NOT_SET_MARKER
    timestamps: Any = NOT_SET_MARKER
    metadata: Any = NOT_SET_MARKER
    ttl_days: Any = NOT_SET_MARKER
    ttl_anchor: Any = NOT_SET_MARKER
    statuses: Any = NOT_SET_MARKER
    _expires_at: list[datetime | None] | Any = NOT_SET_MARKER
    texts: Any = NOT_SET_MARKER
    _initialized: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.texts is not NOT_SET_MARKER:
            if self.contents is not NOT_SET_MARKER:
                raise ValueError("give either contents or texts, not both")
            self.contents = self.texts
            self.texts = NOT_SET_MARKER
        self._initialized = True

    def add_kwargs(self) -> dict[str, Any]:
        """The batch as ``add()`` keyword arguments (omitted fields left out)."""
        names = (
            "contents",
            "record_type",
            "record_ids",
            "index_texts",
            "embeddings",
            "thread_ids",
            "user_ids",
            "agent_ids",
            "roles",
            "timestamps",
            "metadata",
            "ttl_days",
            "ttl_anchor",
            "statuses",
        )
        return {n: getattr(self, n) for n in names if getattr(self, n) is not NOT_SET_MARKER}

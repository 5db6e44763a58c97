"""What every part of the SQL store shares: the engine, the lock, and the store's settings.

One :class:`StoreCore` per store. The parts (schema, writes, reads, search, ...) hold it and
never copy its fields, so a change one makes (``reembed`` swapping the embedder, the schema
enabling vectors) is what every other part sees next. Column lists and SQL fragments more
than one part uses live here too.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core._shared._exit_gate import native_call
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._dialect import Dialect
from oracleagentmemory.core.store._limits import check_text
from oracleagentmemory.core.store._threads import ThreadOwners
from oracleagentmemory.core.store.schema._planning import normalise_rows
from oracleagentmemory.core.store.schema._rows import Chunker, RetrievalPlan, WriteContext

COLS = (
    "rid, family, record_type, id, content, role, seq_no, thread_id, user_id, agent_id, "
    "event_ts, created_at, metadata, status, expires_at, extra"
)
"""The record columns every read selects, in the order ``Reader.to_record`` unpacks."""
TIMES = "updated_at, valid_from, valid_until"
"""Selected after ``COLS`` from schema 16 on (``StoreCore.note_times``): a memory's
``updated_at`` and validity (``schema/_validity``)."""
NOT_EXPIRED = "(r.expires_at IS NULL OR r.expires_at > ?)"
SCOPED_FAMILIES = "('message', 'memory', 'image', 'thread_summary')"
"""Families deleted with the thread or actor that owns them."""


def check_lookup(value: Any, name: str) -> str:
    """An id to look up: a string without NUL or lone surrogates (an unknown id is simply
    not found)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string")
    return check_text(value, name)


def enum_member(enum_cls: Any, value: Any, name: str) -> Any:
    """``value`` as a member of ``enum_cls`` (a member, or its value or name in any case)."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        for member in enum_cls:
            if value.lower() in (str(member.value).lower(), member.name.lower()):
                return member
    raise ValueError(f"{name} must be a {enum_cls.__name__}, got {value!r}")


class StoreCore:
    """The engine, the store lock, the open flag and the settings every part reads.

    ``vector_dim``, ``has_keyword`` and the retention settings are set by the schema part
    when the store opens; ``embedder``, ``vector_dim`` and ``chunker`` change only under
    the lock (``reembed``).
    """

    def __init__(
        self,
        dialect: Dialect,
        embedder: IEmbedder | None,
        *,
        store_id: str,
        schema_policy: Any,
        search_strategy: Any,
        search_index_sync: Any,
    ) -> None:
        self.dialect = dialect
        self.store_id = store_id
        self.cols = ""
        """``COLS`` as this engine selects them (JSON columns as text), ``TIMES`` after them
        where the schema has them."""
        self.record_cols = ""
        """``cols`` qualified by the records alias ``r``, for a statement that joins them."""
        self.note_times(False)
        self.lock = dialect.lock()
        self.closed = False
        self.embedder = embedder
        self.policy: SchemaPolicy = enum_member(SchemaPolicy, schema_policy, "schema_policy")
        self.strategy: SearchStrategy = enum_member(
            SearchStrategy, search_strategy, "search_strategy"
        )
        self.sync: SearchIndexSyncMode = enum_member(
            SearchIndexSyncMode, search_index_sync, "search_index_sync"
        )
        self.vector_dim: int | None = None
        self.has_keyword = False
        self.retention = MemoryRetentionConfig()
        self.owners = ThreadOwners(dialect)
        self.chunker = Chunker.for_tokens(None)
        """Replaced by the embedder's window once the schema is open (see the facade)."""

    def note_times(self, present: bool) -> None:
        """Select ``TIMES`` after ``COLS`` (the schema has them) or not."""
        cols = f"{COLS}, {TIMES}" if present else COLS
        self.cols = self.dialect.select_list(cols, ("metadata", "extra"))
        self.record_cols = self.dialect.select_list(
            ", ".join(f"r.{c.strip()}" for c in cols.split(",")), ("r.metadata", "r.extra")
        )

    @property
    def keyword_on_write(self) -> bool:
        """Whether writes maintain the keyword index themselves (not MANUAL sync).

        Asked inside a write transaction. A store opened before another client (or process)
        added the keyword index notices it here, re-indexes what it wrote meanwhile and
        keeps the index from then on, so no write is missing from keyword search."""
        return self.keyword_on_write_given(None)

    def keyword_probe(self) -> tuple[str, list[Any]] | None:
        """Inside a write, before :meth:`keyword_on_write_given`: the select-list item (and
        parameters) the write's first statement carries to learn whether the keyword index
        appeared, or None when there is nothing to learn or no round trip to save."""
        if self.sync is SearchIndexSyncMode.MANUAL or self.has_keyword:
            return None
        return self.dialect.keyword_index_probe_sql()

    def keyword_on_write_given(self, exists: bool | None) -> bool:
        """:attr:`keyword_on_write`, with ``exists``: what :meth:`keyword_probe`'s item
        answered in this write (None: ask the database now)."""
        if self.sync is SearchIndexSyncMode.MANUAL:
            return False
        if not self.has_keyword:
            if exists is None:
                exists = self.dialect.has_keyword_index()
            if exists:
                self.dialect.keyword_index_rebuild()
                self.has_keyword = True
        return self.has_keyword

    def check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this store is closed")
        self.dialect.check_end_user()

    def write_context(self, *, vectors: bool = True) -> WriteContext:
        """What write planning needs to know; ``vectors=False`` for rows that never have
        vectors (threads)."""
        if not vectors:
            return WriteContext(None, False, self.chunker, self.retention)
        return WriteContext(
            vector_dim=self.vector_dim,
            has_vectors=self.vector_dim is not None,
            chunker=self.chunker,
            retention=self.retention,
        )

    def embed(self, texts: builtins.list[str], *, is_query: bool) -> NDArray[np.float32]:
        """Unit vectors of ``texts`` from the store's embedder, shape checked."""
        if self.embedder is None:
            raise ValueError("embedder: no embedder is configured to embed text")
        with native_call():  # a worker must not be inside the model when the process exits
            raw = self.embedder.embed(list(texts), is_query=is_query)
        out = np.asarray(raw, dtype=np.float64)
        if out.shape != (len(texts), self.vector_dim):
            raise ValueError(
                f"embedder returned shape {out.shape}, expected ({len(texts)}, {self.vector_dim})"
            )
        return normalise_rows(out, "the embedder's output")

    def fill_vectors(self, plans: Iterable[RetrievalPlan]) -> None:
        """Embed the rows of ``plans`` that still need vectors (one embedder call)."""
        pending = [p for p in plans if p.needs_vectors]
        if not pending:
            return
        if self.embedder is None:
            if self.strategy is SearchStrategy.VECTOR:
                raise ValueError(
                    "embeddings: this store has no embedder, so VECTOR writes need explicit "
                    "embeddings"
                )
            for p in pending:
                p.needs_vectors = False
            return
        rows = [row for p in pending for row in p.rows]
        vecs = self.embed([r.text or "" for r in rows], is_query=False)
        for row, vec in zip(rows, vecs, strict=True):
            row.vector = vec
        for p in pending:
            p.needs_vectors = False

"""The one SQL store: validation, write planning, scope rules, TTL and ranking for every engine.

Engines differ only through :class:`~._dialect.Dialect`. Vectors are ranked in process by
:class:`~._vector_index.VectorIndex` (exact cosine over one float32 matrix); keyword search is
the engine's full-text index; hybrid search fuses both (``_hybrid``).
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT
from oracleagentmemory.apis.records import (
    ImageRecord,
    MessageRecord,
    Record,
    RecordStatus,
    build_record,
)
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION, Dialect, KeywordRow, chunked
from oracleagentmemory.core.store._extraction import ExtractionStoreMixin
from oracleagentmemory.core.store._filters import validate_metadata_filter
from oracleagentmemory.core.store._group_commit import JobQueue, WriteJob
from oracleagentmemory.core.store._hybrid import HYBRID_CANDIDATES, hybrid_rank
from oracleagentmemory.core.store._jsontext import load_json_column
from oracleagentmemory.core.store._keyword import query_terms
from oracleagentmemory.core.store._limits import (
    MAX_BATCH_SIZE,
    MAX_LINKED_RESULTS,
    MAX_LIST_ROWS,
    MAX_NUM_HOPS,
    MAX_SEARCH_RESULTS,
    MAX_SEQ_NO,
    MAX_TTL_DAYS,
    MAX_VECTOR_DIM,
    check_text,
)
from oracleagentmemory.core.store._message_parts import parts_from_extra
from oracleagentmemory.core.store._planning import (
    DEFAULT_SEARCH_TYPES,
    EXPIRING_FAMILIES,
    PROFILE_TYPES,
    SEARCHABLE_FAMILIES,
    Chunker,
    ChunkRow,
    PlannedRecord,
    RetrievalPlan,
    WriteContext,
    as_vector,
    caller_chunk_list,
    check_dims,
    check_metadata,
    check_positive_int,
    check_scope_id,
    check_status,
    check_unique_ids,
    dumps_json,
    family_of,
    new_id,
    normalise_rows,
    plan_batch,
    plan_retrieval,
    split_vectors,
    with_attachments,
)
from oracleagentmemory.core.store._relations import (
    PlannedRelation,
    RelationsMixin,
    plan_relations,
)
from oracleagentmemory.core.store._threads import ThreadOwners, claims_of, decode_head
from oracleagentmemory.core.store._time import (
    check_anchor,
    check_ttl_days,
    expiry,
    iso,
    parse_timestamp,
    resolve_ttl_days,
    stored_time,
    utcnow,
)
from oracleagentmemory.core.store._vector_index import PREFERENCE_PENALTY, IndexRow, VectorIndex

log = logging.getLogger("oracleagentmemory.store")

_STORE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,15}$")
DEFAULT_STORE_ID = "oam"
PURGE_INTERVAL_S = 600.0
"""Expired rows are purged on open and at most this often after writes (reads never wait)."""
SNAPSHOT_MIN_ROWS = 10000
"""Indexes at least this large are snapshotted beside a SQLite file for fast reopening."""
PARALLEL_BRANCH_ROWS = 50_000
"""An in-process index at least this large runs a hybrid search's vector scan beside its
keyword query; below it the scan costs less than handing it to another thread."""
FILTER_CHECK_PER_RESULT = 16
"""A scoped vector search with a metadata filter whose mask is not cached first ranks this
many records per result asked (at least 128) and checks the filter on those alone; too few
passing, more are ranked, up to ``FILTER_CHECK_MAX``, before the filter's mask is made."""
FILTER_CHECK_MAX = 4096
SCORED_CANDIDATES_PER_RESULT = 2
"""Where the dialect scored the records itself, the first round reads this many of the best
per result asked (at least 20): no full-text query is repeated when a round widens."""
KEYWORD_CANDIDATES = 200
"""Best-scored chunks of a keyword query joined to their records first (SQLite)."""
KEYWORD_CANDIDATES_MAX = 12_800
"""Past this many candidates, every match is joined."""
NATIVE_EXACT_MAX = 20_000
"""PostgreSQL: a scoped or filtered vector query with fewer candidate chunks than this is
ranked exactly (pgvector's HNSW index would filter after its search and lose results)."""
NATIVE_ANN_FETCH_MAX = 640
"""PostgreSQL: an index search that still lacks k records at this many rows turns exact."""
CATCH_UP_MAX_ROWS = 50_000
"""Catching up on more records than this rebuilds the in-process index instead."""
_COLS = (
    "rid, family, record_type, id, content, role, seq_no, thread_id, user_id, agent_id, "
    "event_ts, created_at, metadata, status, expires_at, extra"
)
_NOT_EXPIRED = "(r.expires_at IS NULL OR r.expires_at > ?)"
_SCOPED_FAMILIES = "('message', 'memory', 'image', 'thread_summary')"
"""Families deleted with the thread or actor that owns them."""


_json = load_json_column


def _check_lookup(value: Any, name: str) -> str:
    """An id to look up: a string without NUL or lone surrogates (an unknown id is simply
    not found)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string")
    return check_text(value, name)


class EmbedderMismatchError(ValueError):
    """The store's vectors were written by another embedding model than the one given."""

    def __init__(self, message: str, stored_model: str) -> None:
        super().__init__(message)
        self.stored_model = stored_model


class SchemaError(RuntimeError):
    """The managed schema is missing, outdated or cannot serve the requested strategy."""


def _enum(enum_cls: Any, value: Any, name: str) -> Any:
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        for member in enum_cls:
            if value.lower() in (str(member.value).lower(), member.name.lower()):
                return member
    raise ValueError(f"{name} must be a {enum_cls.__name__}, got {value!r}")


@dataclass(frozen=True)
class ScopeSpec:
    """Resolved search scope: dimensions filtered exactly, and dimensions only preferred."""

    exact: dict[str, str | None]
    prefer: dict[str, str | None]

    @classmethod
    def resolve(
        cls,
        thread_id: Any,
        user_id: Any,
        agent_id: Any,
        exact_user_match: Any,
        exact_agent_match: Any,
        exact_thread_match: Any,
    ) -> ScopeSpec:
        exact: dict[str, str | None] = {}
        prefer: dict[str, str | None] = {}
        for dim, value, flag in (
            ("user", user_id, exact_user_match),
            ("agent", agent_id, exact_agent_match),
            ("thread", thread_id, exact_thread_match),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"exact_{dim}_match must be a bool")
            value = check_scope_id(value, f"{dim}_id")
            if flag:
                exact[dim] = value
            elif value is not None:
                prefer[dim] = value
        return cls(exact, prefer)


def _more_to_read(missing: int, share: float) -> int:
    """Candidates to check next when ``missing`` results are still wanted and ``share`` of
    those checked so far passed: as many as that share says, a quarter more, at least 32."""
    return max(32, math.ceil(1.25 * missing / share))


class SQLMemoryStore(ExtractionStoreMixin, RelationsMixin, OracleMemoryStore):
    """Store over one SQL engine (see the module docstring). Construct an engine subclass."""

    def __init__(
        self,
        embedder: IEmbedder | None,
        dialect: Dialect,
        *,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: int | None = None,
        memory_store_id: str | NotSet = NOT_SET_MARKER,
        search_strategy: SearchStrategy = SearchStrategy.VECTOR,
        search_index_sync: SearchIndexSyncMode = SearchIndexSyncMode.ON_COMMIT,
        memory_retention_config: MemoryRetentionConfig | NotSet = NOT_SET_MARKER,
    ) -> None:
        self._dialect = dialect
        self._store_id = memory_store_id if isinstance(memory_store_id, str) else DEFAULT_STORE_ID
        self._store_id_recorded = False
        self._cols = dialect.select_list(_COLS, ("metadata", "extra"))
        self._lock = dialect.lock()
        self._closed = False
        self._embedder = embedder
        self._policy = _enum(SchemaPolicy, schema_policy, "schema_policy")
        self._strategy = _enum(SearchStrategy, search_strategy, "search_strategy")
        self._sync = _enum(SearchIndexSyncMode, search_index_sync, "search_index_sync")
        self._jobs = JobQueue()
        self._combine = threading.Lock()
        self._index: VectorIndex | None = None
        self._index_state: tuple[str, int] | None = None
        """(instance, generation) of the committed state ``_index`` reflects."""
        self._own_generations: set[int] = set()
        """Generations this store committed (and applied to its index) past its index's
        state, while another process's earlier commit held that state back: catching up
        skips them instead of re-reading this process's own rows."""
        self._saved_stamp: str | None = None
        self._last_purge = 0.0
        self._has_keyword = False
        self._branch_pool: ThreadPoolExecutor | None = None
        self._branch_pid = 0
        self._vector_dim: int | None = None
        self._retention = MemoryRetentionConfig()
        self._owners = ThreadOwners(dialect)
        try:
            with self._lock, dialect.transaction():
                self._check_store_id(self._store_id)
                self._setup_schema(vector_dim, memory_retention_config)
            self._chunker = Chunker.for_tokens(embedder.max_input_tokens if embedder else None)
            self.purge_expired()
        except BaseException:
            dialect.close()
            raise

    @staticmethod
    def check_arguments(
        embedder: Any,
        vector_dim: Any,
        memory_store_id: Any,
        search_strategy: Any,
        search_index_sync: Any,
        memory_retention_config: Any,
    ) -> str:
        """Validate constructor arguments before a connection is opened; returns the table
        prefix for ``memory_store_id``."""
        if embedder is not None and not isinstance(embedder, IEmbedder):
            raise TypeError("embedder must be an IEmbedder or None")
        if vector_dim is not None:
            check_positive_int(vector_dim, "vector_dim", maximum=MAX_VECTOR_DIM)
        if memory_store_id is NOT_SET_MARKER:
            memory_store_id = DEFAULT_STORE_ID
        if not isinstance(memory_store_id, str) or not _STORE_ID.match(memory_store_id):
            raise ValueError(
                "memory_store_id must start with a letter, contain only letters, digits and "
                f"underscores, and have at most 16 characters; got {memory_store_id!r}"
            )
        if memory_store_id.lower().startswith("sqlite_"):
            # Its tables would be named sqlite_..., which SQLite reserves for itself; refused
            # on every engine, so a store can move between them.
            raise ValueError(
                f"memory_store_id {memory_store_id!r} starts with 'sqlite_': SQLite reserves "
                "table names with that prefix, so choose another id"
            )
        strategy = _enum(SearchStrategy, search_strategy, "search_strategy")
        sync = _enum(SearchIndexSyncMode, search_index_sync, "search_index_sync")
        if sync is SearchIndexSyncMode.AUTO and strategy is SearchStrategy.KEYWORD:
            raise ValueError(
                "search_index_sync=SearchIndexSyncMode.AUTO is supported only with "
                "SearchStrategy.HYBRID; keyword search rejects AUTO"
            )
        if memory_retention_config is not NOT_SET_MARKER and not isinstance(
            memory_retention_config, MemoryRetentionConfig
        ):
            raise TypeError("memory_retention_config must be a MemoryRetentionConfig")
        return memory_store_id

    # ------------------------------------------------------------------ schema

    def _read_meta(self) -> dict[str, str]:
        return dict(self._dialect.execute(f"SELECT key, value FROM {self._dialect.tables.meta}"))

    def _write_meta(self, key: str, value: str) -> None:
        t = self._dialect.tables.meta
        self._dialect.execute(f"DELETE FROM {t} WHERE key = ?", (key,))
        self._dialect.execute(f"INSERT INTO {t} (key, value) VALUES (?, ?)", (key, value))

    def _check_store_id(self, store_id: str) -> None:
        """Refuse an id that differs only in case from the store owning these tables.

        SQL folds unquoted names to one case, so ``"Tenant"`` and ``"tenant"`` would share
        tables; the spelling that created a store is recorded and any other spelling is a
        ValueError naming both, before anything is written.
        """
        d = self._dialect
        if d.tables.meta not in d.managed_objects():
            return
        stored = dict(
            d.execute(f"SELECT key, value FROM {d.tables.meta} WHERE key = 'store_id'")
        ).get("store_id")
        if stored is not None and stored != store_id:
            raise ValueError(
                f"memory_store_id {store_id!r} differs only in case from the existing store "
                f"{stored!r} in this database; store ids are case-insensitive, so open it as "
                f"{stored!r} or choose another memory_store_id"
            )
        self._store_id_recorded = stored is not None

    def _setup_schema(self, vector_dim: int | None, retention: Any) -> None:
        d = self._dialect
        policy = self._policy
        hint = "open it with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY"
        if policy is SchemaPolicy.RECREATE:
            d.drop_all()
        existing = d.managed_objects()
        ddl_allowed = policy in (SchemaPolicy.CREATE_IF_NECESSARY, SchemaPolicy.RECREATE) or (
            policy is SchemaPolicy.CREATE_IF_EMPTY and not existing
        )
        meta: dict[str, str] = {}
        if d.tables.meta in existing:
            meta = self._read_meta()
        if not meta:
            if policy is SchemaPolicy.NO_CHECK:
                pass
            elif not ddl_allowed:
                raise SchemaError(
                    f"no managed schema for memory_store_id {d.tables.prefix!r}"
                    + (
                        " (some managed tables exist but the schema is incomplete)"
                        if existing
                        else ""
                    )
                    + f"; {hint} to create it"
                )
            else:
                d.migrate(0, SCHEMA_VERSION)
                meta = {
                    "store_id": self._store_id,
                    "schema_version": str(SCHEMA_VERSION),
                    "created_at": iso(utcnow()),
                    "instance": new_id(),
                    "generation": "0",
                }
                for key, value in meta.items():
                    self._write_meta(key, value)
        else:
            version = int(meta.get("schema_version", "0"))
            if version > SCHEMA_VERSION:
                raise SchemaError(
                    f"the managed schema is version {version}, newer than this SDK's "
                    f"{SCHEMA_VERSION}; upgrade oracleagentmemory"
                )
            if version < SCHEMA_VERSION and policy is not SchemaPolicy.NO_CHECK:
                if policy is not SchemaPolicy.CREATE_IF_NECESSARY:
                    raise SchemaError(
                        f"the managed schema is version {version}, older than {SCHEMA_VERSION}; "
                        f"{hint} to upgrade it"
                    )
                log.info("upgrading managed schema %s -> %s", version, SCHEMA_VERSION)
                d.migrate(version, SCHEMA_VERSION)
                self._write_meta("schema_version", str(SCHEMA_VERSION))
                if version < 7:  # thread owners were derived from the rows: say where not one
                    self._owners.report_conflicts()
                version = SCHEMA_VERSION
            d.note_schema_version(version)
        if meta and not self._store_id_recorded and policy is not SchemaPolicy.NO_CHECK:
            self._write_meta("store_id", self._store_id)  # stores created before ids were kept
        if meta and "instance" not in meta:  # stores created before index snapshots
            self._write_meta("instance", new_id())
            self._write_meta("generation", "0")

        # Vector capability and the model that owns the vectors.
        emb = self._embedder
        requested = vector_dim
        if emb is not None:
            edim = emb.embedding_dimension
            if requested is not None and requested != edim:
                raise ValueError(
                    f"vector_dim={requested} does not match the embedder's dimension {edim}"
                )
            requested = edim
        stored_dim = int(meta["vector_dim"]) if "vector_dim" in meta else None
        if stored_dim is not None and requested is not None and stored_dim != requested:
            raise ValueError(
                f"embedder / vector_dim: the store holds {stored_dim}-dimensional vectors, "
                f"but {requested} was requested"
            )
        needs_vectors = self._strategy in (SearchStrategy.VECTOR, SearchStrategy.HYBRID)
        dim = stored_dim
        if dim is None and requested is not None and (ddl_allowed or not meta):
            dim = requested
            if meta:
                self._write_meta("vector_dim", str(dim))
                self._vector_dim = dim
                d.enable_vectors(dim)
                self._backfill_vectors(dim)
        if needs_vectors and dim is None:
            if meta and not ddl_allowed and requested is not None:
                raise SchemaError(
                    f"{self._strategy} search needs local vector storage, which this schema "
                    f"lacks; {hint} to add it"
                )
            raise ValueError(
                f"{self._strategy} search needs an embedder or vector_dim (local vector storage)"
            )
        self._vector_dim = dim
        if emb is not None and dim is not None:
            stored_model = meta.get("embedder")
            if stored_model is not None and stored_model != emb.model_identity:
                raise EmbedderMismatchError(
                    f"embedder: this store's vectors were written by model {stored_model!r}, "
                    f"not {emb.model_identity!r}; vectors of different models must not be "
                    "mixed: use another memory_store_id, or open this store with its model "
                    "(or embedder=None) and call store.reembed(new_embedder)",
                    stored_model,
                )
            if stored_model is None and meta:
                self._write_meta("embedder", emb.model_identity)

        # Keyword capability.
        needs_keyword = self._strategy in (SearchStrategy.KEYWORD, SearchStrategy.HYBRID)
        has_keyword = bool(meta) and d.has_keyword_index()
        if has_keyword and ddl_allowed:
            d.complete_keyword_index()
        if needs_keyword and not has_keyword:
            if meta and ddl_allowed:
                d.create_keyword_index()
                has_keyword = True
            elif meta or policy is not SchemaPolicy.NO_CHECK:
                raise SchemaError(
                    f"{self._strategy} search needs the keyword index, which this schema "
                    f"lacks; {hint} to add it"
                )
        self._has_keyword = has_keyword
        # A store older than version 7 opened without upgrading has no owners table.
        self._owners.enabled = d.tables.owners in d.managed_objects()

        # Retention settings: an explicit config wins and is persisted where DDL is allowed.
        if retention is not NOT_SET_MARKER:
            self._retention = retention
            if meta and ddl_allowed:
                self._write_meta("retention", json.dumps(retention.to_json()))
        elif "retention" in meta:
            stored = json.loads(meta["retention"])
            self._retention = MemoryRetentionConfig(
                default_ttl_days=stored.get("default_ttl_days"),
                max_ttl_days=stored.get("max_ttl_days"),
            )

    def _backfill_vectors(self, dim: int) -> None:
        """Give existing chunks vectors when local vector storage is added to a schema."""
        if self._embedder is None:
            return
        c = self._dialect.tables.chunks
        self._dialect.note_changed(None)  # every vector may change: other processes rebuild
        rows = self._dialect.execute(
            f"SELECT cid, chunk_text FROM {c} WHERE vector IS NULL AND chunk_text IS NOT NULL"
            " AND chunk_text != ''"
        )
        for part in chunked(rows, 256):
            vecs = self._embed([t for _, t in part], is_query=False)
            self._dialect.executemany(
                f"UPDATE {c} SET vector = ? WHERE cid = ?",
                [
                    (self._dialect.vector_to_db(v), cid)
                    for (cid, _), v in zip(part, vecs, strict=True)
                ],
            )

    # ------------------------------------------------------------------ properties

    @property
    def search_strategy(self) -> SearchStrategy:
        """The strategy ``search()`` uses."""
        return self._strategy  # type: ignore[no-any-return]

    @property
    def embedder(self) -> IEmbedder | None:
        """The embedder used for writes and text queries (None: explicit vectors only)."""
        return self._embedder

    @property
    def vector_dim(self) -> int | None:
        """Dimension of the local vectors, or None for a store without vector storage."""
        return self._vector_dim

    @property
    def memory_retention_config(self) -> MemoryRetentionConfig:
        """Retention settings in force."""
        return self._retention

    # ------------------------------------------------------------------ helpers

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this store is closed")

    def _embed(self, texts: builtins.list[str], *, is_query: bool) -> NDArray[np.float32]:
        if self._embedder is None:
            raise ValueError("embedder: no embedder is configured to embed text")
        out = np.asarray(self._embedder.embed(list(texts), is_query=is_query), dtype=np.float64)
        if out.shape != (len(texts), self._vector_dim):
            raise ValueError(
                f"embedder returned shape {out.shape}, expected ({len(texts)}, {self._vector_dim})"
            )
        return normalise_rows(out, "the embedder's output")

    def _fill_vectors(self, plans: Iterable[RetrievalPlan]) -> None:
        pending = [p for p in plans if p.needs_vectors]
        if not pending:
            return
        if self._embedder is None:
            if self._strategy is SearchStrategy.VECTOR:
                raise ValueError(
                    "embeddings: this store has no embedder, so VECTOR writes need explicit "
                    "embeddings"
                )
            for p in pending:
                p.needs_vectors = False
            return
        rows = [row for p in pending for row in p.rows]
        vecs = self._embed([r.text or "" for r in rows], is_query=False)
        for row, vec in zip(rows, vecs, strict=True):
            row.vector = vec
        for p in pending:
            p.needs_vectors = False

    def _index_rows(
        self, rid: int, rec: PlannedRecord, expires_at: float | None
    ) -> builtins.list[IndexRow]:
        """The index entries of a record just written: one per chunk that has a vector."""
        valid = rec.status is RecordStatus.VALID
        return [
            IndexRow(
                rid,
                r.vector,
                rec.record_type,
                rec.user_id,
                rec.agent_id,
                rec.thread_id,
                valid,
                expires_at,
            )
            for r in rec.retrieval.rows
            if r.vector is not None
        ]

    def _maybe_purge(self) -> None:
        if time.time() - self._last_purge > PURGE_INTERVAL_S:
            self.purge_expired()

    # ------------------------------------------------------------------ writes

    def _add_prepared_batches(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """Add caller-prepared batches in one transaction; returns ids in input order.

        ``store_kwargs``: ``batch_size`` (rows per ``executemany``, default 256);
        ``require_thread`` (a thread id whose thread row must exist when the write commits,
        else KeyError and nothing is written: how a handle to a deleted thread is refused).
        """
        return self.add_with_relations(batches, [], **store_kwargs)[0]

    async def _add_prepared_batches_async(
        self, batches: builtins.list[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """:meth:`_add_prepared_batches` in a worker thread."""
        return await asyncio.to_thread(self._add_prepared_batches, batches, **store_kwargs)

    def add_with_relations(
        self,
        batches: builtins.list[PendingRecordBatch],
        relations: Sequence[Mapping[str, Any]],
        **store_kwargs: Any,
    ) -> tuple[builtins.list[str], builtins.list[str]]:
        """Add batches and relations in ONE transaction: all of it lands, or none.

        Each relation is a mapping of :meth:`add_relations` keyword arguments; its endpoints
        may be records of these batches (give them explicit ids). Returns (record ids,
        relation ids). ``store_kwargs`` as for :meth:`add_batches`.
        """
        require_thread = store_kwargs.pop("require_thread", None)
        planned, batch_size = self._plan_batches(batches, store_kwargs)
        if isinstance(relations, Mapping) or not isinstance(relations, builtins.list | tuple):
            raise TypeError("relations must be a list of mappings of add_relations arguments")
        links: builtins.list[PlannedRelation] = []
        for i, spec in enumerate(relations):
            if not isinstance(spec, Mapping):
                raise TypeError(f"relations[{i}] must be a mapping of add_relations arguments")
            links.extend(plan_relations(**spec))
        if not planned and not links:
            return [], []
        self._write_planned(planned, batch_size, links=links, require_thread=require_thread)
        return [p.id for p in planned], [str(link.values[0]) for link in links]

    def _plan_batches(
        self, batches: Any, store_kwargs: dict[str, Any]
    ) -> tuple[builtins.list[PlannedRecord], int]:
        """Validate and plan ``add_batches`` arguments (no I/O); vectors are filled in."""
        batch_size = store_kwargs.pop("batch_size", 256)
        check_positive_int(batch_size, "batch_size", maximum=MAX_BATCH_SIZE)
        if store_kwargs:
            raise TypeError(f"unexpected store option(s): {sorted(store_kwargs)}")
        if not isinstance(batches, builtins.list | tuple):
            raise TypeError("batches must be a list of PendingRecordBatch")
        ctx = WriteContext(
            vector_dim=self._vector_dim,
            has_vectors=self._vector_dim is not None,
            chunker=self._chunker,
            retention=self._retention,
        )
        dims: set[int] = set()
        planned: builtins.list[PlannedRecord] = []
        for i, batch in enumerate(batches):
            if not isinstance(batch, PendingRecordBatch):
                raise TypeError(f"batches[{i}] must be a PendingRecordBatch")
            planned.extend(plan_batch(batch, ctx, dims))
        check_dims(dims, self._vector_dim)
        check_unique_ids(planned)
        if planned:
            self._fill_vectors(p.retrieval for p in with_attachments(planned))
        return planned, batch_size

    def _write_planned(
        self,
        planned: builtins.list[PlannedRecord],
        batch_size: int,
        also: Callable[[], Any] | None = None,
        *,
        links: builtins.list[PlannedRelation] | None = None,
        require_thread: str | None = None,
    ) -> Any:
        """Insert planned records (and relations) in one transaction; ``also`` runs inside
        that transaction after the insert (its result is returned), so its writes land with
        the records. ``require_thread``: KeyError, and nothing written, unless that thread
        row exists. Concurrent writers of this process share transactions (group commit)."""
        if require_thread is not None:
            _check_lookup(require_thread, "require_thread")
        job = WriteJob(planned, links or [], batch_size, require_thread, also)
        self._jobs.put(job)
        # Writers of this process queue here (reads do not): whoever gets in writes the
        # whole queue. With a connection pool the store lock is a no-op, so this lock is
        # what lets PostgreSQL writers share a transaction too.
        with self._combine, self._lock:
            if not job.done.is_set():
                self._run_jobs()
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    def _run_jobs(self) -> None:
        """Write every queued job in one transaction (see ``_group_commit``); under the lock."""
        jobs = self._jobs.take_all()
        if not jobs:
            return
        d = self._dialect
        try:
            self._check_open()
            with self._write():
                for i, job in enumerate(jobs):
                    savepoint = f"oam_job_{i}" if len(jobs) > 1 else None
                    if savepoint:
                        d.execute(f"SAVEPOINT {savepoint}")
                    try:
                        self._require_thread(job.require_thread)
                        if job.planned:
                            job.index_rows = self._insert(job.planned, job.batch_size)
                        if job.links:
                            self._insert_relations(job.links)
                        if job.also is not None:
                            job.result = job.also()
                    except Exception as exc:
                        if savepoint is None:
                            raise
                        d.execute(f"ROLLBACK TO {savepoint}")
                        job.error, job.index_rows = exc, []
                    if savepoint:
                        d.execute(f"RELEASE {savepoint}")
            if self._index is not None:
                for job in jobs:
                    self._index.add(job.index_rows)
        except BaseException as exc:  # the whole group failed: every job reports it
            for job in jobs:
                if job.error is None:
                    job.error = exc
                job.index_rows = []
            if not isinstance(exc, Exception):
                raise
        finally:
            for job in jobs:
                job.done.set()
        self._maybe_purge()

    def _require_thread(self, thread_id: str | None) -> None:
        """Inside a write: KeyError unless the thread row ``thread_id`` exists."""
        if thread_id is None:
            return
        t = self._dialect.tables
        if not self._dialect.execute(
            f"SELECT 1 FROM {t.records} WHERE family = 'thread' AND id = ?", [thread_id]
        ):
            raise KeyError(
                f"no thread with id {thread_id!r}: it was deleted, so this handle cannot write"
            )

    def _insert(
        self, planned: builtins.list[PlannedRecord], batch_size: int
    ) -> builtins.list[IndexRow]:
        d = self._dialect
        t = d.tables
        now = utcnow()
        created = iso(now)
        planned = with_attachments(planned)
        by_family: dict[str, builtins.list[str]] = {}
        for p in planned:
            if not p.generated_id:  # fresh UUIDs cannot clash; the UNIQUE key backs that up
                by_family.setdefault(p.family, []).append(p.id)
        clash_sql = f"SELECT id FROM {t.records} WHERE family = ? AND id IN ({{}}) LIMIT 1"
        checks = [(family, part) for family, ids in by_family.items() for part in chunked(ids, 500)]
        # The usual write (one id list, at most one thread of messages) asks everything it
        # must know before inserting in ONE statement: the id clash, the top rid and cid,
        # and the thread's seq_no high-water mark.
        head = [
            f"(SELECT COALESCE(MAX(rid), 0) FROM {t.records})",
            f"(SELECT COALESCE(MAX(cid), 0) FROM {t.chunks})",
        ]
        head_params: builtins.list[Any] = []
        clash_in_head = len(checks) == 1
        if clash_in_head:
            family, part = checks.pop()
            head.append(f"({clash_sql.format(','.join('?' * len(part)))})")
            head_params += [family, *part]
        for family, part in checks:
            clash = d.execute(clash_sql.format(",".join("?" * len(part))), [family, *part])
            if clash:
                raise ValueError(f"record_ids: {clash[0][0]!r} already exists")
        # Every thread id named must be unclaimed or this user's (see _threads); one thread's
        # owner is read in the same statement.
        claims = claims_of(planned)
        owner_at = None  # a column position (the owner and seq_no items are two columns each)
        if len(claims) == 1 and self._owners.enabled:
            (claimed,) = claims
            owner_sql, owner_params = self._owners.head_sql(claimed)
            owner_at = len(head)
            head.append(owner_sql)
            head_params += owner_params
        threads = {p.thread_id for p in planned if p.family == "message"}
        one_thread = len(threads) == 1
        seq_at = len(head) + (owner_at is not None)
        if one_thread:
            (thread,) = threads
            seq_sql, seq_params = self._last_seq_sql(thread)
            head.append(seq_sql)
            head_params += seq_params
        top = d.execute(f"SELECT {', '.join(head)}", head_params)[0]
        rid, cid = int(top[0]), int(top[1])
        if clash_in_head and top[2] is not None:
            raise ValueError(f"record_ids: {top[2]!r} already exists")
        known = {} if owner_at is None else {claimed: decode_head(*top[owner_at : owner_at + 2])}
        self._owners.claim(claims, known)
        next_seq: dict[str | None, int] = {}
        if one_thread:
            mark, most = top[seq_at : seq_at + 2]
            next_seq[thread] = max(int(most), int(mark or 0)) + 1
        rec_rows: builtins.list[tuple[Any, ...]] = []
        chunk_rows: builtins.list[tuple[Any, ...]] = []
        fts_rows: builtins.list[KeywordRow] = []
        index_rows: builtins.list[IndexRow] = []
        blob_rows: builtins.list[tuple[int, bytes]] = []
        for p in planned:
            rid += 1
            if p.blob is not None:
                blob_rows.append((rid, p.blob))
            seq_no = None
            if p.family == "message":
                if p.thread_id not in next_seq:
                    next_seq[p.thread_id] = self._last_seq_no(p.thread_id) + 1
                seq_no = next_seq[p.thread_id]
                next_seq[p.thread_id] += 1
            expires_at = expiry(p.ttl_days, p.ttl_anchor, now, p.event_ts)
            rec_rows.append(
                (
                    rid,
                    p.family,
                    p.record_type,
                    p.id,
                    p.content,
                    p.role,
                    seq_no,
                    p.thread_id,
                    p.user_id,
                    p.agent_id,
                    p.event_ts,
                    created,
                    p.metadata_json,
                    p.status.value,
                    expires_at,
                    p.extra_json,
                    p.ttl_days,
                )
            )
            for i, row in enumerate(p.retrieval.rows):
                cid += 1
                vec = None if row.vector is None else d.vector_to_db(row.vector)
                chunk_rows.append((cid, rid, i, row.text, vec))
                if row.text:
                    fts_rows.append((cid, rid, i, row.text, p.user_id, p.agent_id, p.thread_id))
            index_rows.extend(self._index_rows(rid, p, expires_at))
        for part in chunked(rec_rows, batch_size):
            d.executemany(
                f"INSERT INTO {t.records} ({_COLS}, ttl_days) VALUES ({','.join('?' * 17)})", part
            )
        if next_seq:  # the high-water marks move with the messages, in the same transaction
            d.executemany(
                f"INSERT INTO {t.seq} (thread_key, last_seq) VALUES (?, ?) ON CONFLICT"
                " (thread_key) DO UPDATE SET last_seq = excluded.last_seq",
                [(thread or "", top - 1) for thread, top in next_seq.items()],
            )
        for part in chunked(chunk_rows, batch_size):
            d.executemany(
                f"INSERT INTO {t.chunks} (cid, rid, chunk_index, chunk_text, vector)"
                " VALUES (?, ?, ?, ?, ?)",
                part,
            )
        if blob_rows:
            d.executemany(f"INSERT INTO {t.blobs} (rid, data) VALUES (?, ?)", blob_rows)
        if self._has_keyword and self._sync is not SearchIndexSyncMode.MANUAL:
            d.keyword_index_add(fts_rows)
        d.note_changed([r[0] for r in rec_rows])
        return index_rows

    def _last_seq_no(self, thread_id: str | None) -> int:
        """The highest seq_no ever handed out in a thread (0 for none), inside a write.

        The high-water mark survives deleting or expiring the newest messages, so a seq_no
        is never reused; the records are consulted too, for rows written without one.
        """
        sql, params = self._last_seq_sql(thread_id)
        mark, top = self._dialect.execute(f"SELECT {sql}", params)[0]
        return max(int(top), int(mark or 0))

    def _last_seq_sql(self, thread_id: str | None) -> tuple[str, builtins.list[Any]]:
        """Select-list SQL (two columns: the high-water mark, the top seq_no) and its
        parameters for :meth:`_last_seq_no`."""
        t = self._dialect.tables
        # "= ?" (not the null-safe operator) lets every engine use the thread index.
        same, params = (
            ("thread_id IS NULL", []) if thread_id is None else ("thread_id = ?", [thread_id])
        )
        sql = (
            f"(SELECT last_seq FROM {t.seq} WHERE thread_key = ?),"
            f" (SELECT COALESCE(MAX(seq_no), 0) FROM {t.records}"
            f" WHERE {same} AND family = 'message')"
        )
        return sql, [thread_id or "", *params]

    def create_thread_record(
        self,
        thread_id: str,
        *,
        user_id: str | None,
        agent_id: str | None,
        metadata: dict[str, Any] | None,
        runtime_config: dict[str, Any] | None,
    ) -> str:
        """Insert a thread row with its persisted runtime configuration; returns its id."""
        extra = dumps_json({"runtime_config": runtime_config}, "runtime_config")
        batch = PendingRecordBatch(
            contents=[None],
            record_type="thread",
            record_ids=thread_id,
            user_ids=user_id,
            agent_ids=agent_id,
            metadata=metadata,
        )
        ctx = WriteContext(None, False, self._chunker, self._retention)
        planned = plan_batch(batch, ctx, set())
        planned[0].extra_json = extra
        with self._lock:
            self._check_open()
            with self._write():
                self._insert(planned, 1)
        return thread_id

    def update_thread_record(
        self,
        thread_id: str,
        *,
        metadata: Any = NOT_SET_MARKER,
        runtime_config: Any = NOT_SET_MARKER,
        runtime_state: Any = NOT_SET_MARKER,
    ) -> int:
        """Replace a thread's metadata / runtime configuration / state; returns 0 or 1."""
        _check_lookup(thread_id, "thread_id")
        meta_json = NOT_SET_MARKER if metadata is NOT_SET_MARKER else check_metadata(metadata)
        t = self._dialect.tables
        with self._lock:
            self._check_open()
            with self._write():
                rows = self._dialect.execute(
                    f"SELECT {self._dialect.json_as_text('extra')} FROM {t.records}"
                    " WHERE family = 'thread' AND id = ?",
                    [thread_id],
                )
                if not rows:
                    return 0
                extra = _json(rows[0][0]) or {}
                if runtime_config is not NOT_SET_MARKER:
                    extra["runtime_config"] = runtime_config
                if runtime_state is not NOT_SET_MARKER:
                    extra["runtime_state"] = runtime_state
                sets: builtins.list[str] = ["extra = ?"]
                params: builtins.list[Any] = [dumps_json(extra, "runtime_config")]
                if meta_json is not NOT_SET_MARKER:
                    sets.append("metadata = ?")
                    params.append(meta_json)
                self._dialect.execute(
                    f"UPDATE {t.records} SET {', '.join(sets)} WHERE family = 'thread' AND id = ?",
                    [*params, thread_id],
                )
        return 1

    # ------------------------------------------------------------------ reads

    def _to_record(self, row: Sequence[Any]) -> Record:
        (
            _rid,
            family,
            rtype,
            rid,
            content,
            role,
            seq_no,
            thread_id,
            user_id,
            agent_id,
            event_ts,
            created_at,
            metadata,
            status,
            _exp,
            extra,
        ) = row
        kwargs: dict[str, Any] = {}
        if family == "thread":
            ext = _json(extra) or {}
            kwargs = {
                "runtime_config": ext.get("runtime_config"),
                "runtime_state": ext.get("runtime_state"),
            }
        elif family == "image":
            ext = _json(extra) or {}
            kwargs = {"mime_type": ext["mime_type"], "message_id": ext.get("message_id")}
        elif family == "thread_summary":
            ext = _json(extra) or {}
            content = ext.get("content")
            kwargs = {"_covered_through_seq_no": int(ext.get("covered_through_seq_no", 0))}
        elif family == "message" and extra:
            content = parts_from_extra(extra) or content
        return build_record(
            rtype,
            rid,
            content=content,
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            role=role,
            seq_no=seq_no,
            timestamp=event_ts or stored_time(created_at),
            metadata=_json(metadata),
            status=RecordStatus(status),
            **kwargs,
        )

    def get(
        self, record_type: str, record_id: str, include_bytes: Any = NOT_SET_MARKER
    ) -> Record | None:
        """Return the record, or None when it does not exist or has expired."""
        family = family_of(record_type)
        _check_lookup(record_id, "record_id")
        with self._lock:
            self._check_open()
            rows = self._dialect.execute(
                f"SELECT {self._cols} FROM {self._dialect.tables.records} r"
                f" WHERE family = ? AND id = ? AND record_type = ? AND {_NOT_EXPIRED}",
                [family, record_id, record_type, time.time()],
            )
        if not rows:
            return None
        record = self._to_record(rows[0])
        if include_bytes is True and isinstance(record, ImageRecord):
            return self._attach_bytes([record], [int(rows[0][0])])[0]
        return record

    def _attach_bytes(
        self, images: Sequence[ImageRecord], rids: Sequence[int]
    ) -> builtins.list[ImageRecord]:
        """Copies of ``images`` with their bytes loaded."""
        d = self._dialect
        blobs: dict[int, bytes] = {}
        for part in chunked(builtins.list(rids), 500):
            marks = ",".join("?" * len(part))
            for rid, data in d.execute(
                f"SELECT rid, data FROM {d.tables.blobs} WHERE rid IN ({marks})", part
            ):
                blobs[int(rid)] = bytes(data)
        return [
            dataclasses.replace(image, bytes=blobs.get(rid))
            for image, rid in zip(images, rids, strict=True)
        ]

    def add_image(
        self,
        image: bytes,
        *,
        mime_type: str,
        description: str | None = None,
        image_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        message_id: str | None = None,
        metadata: Any = None,
        timestamp: str | None = None,
        ttl_days: Any = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        require_thread: str | None = None,
    ) -> str:
        """Store an image (bytes apart from the record) whose description is its retrieval
        text; returns its id. The record and its bytes are written in one transaction
        (``require_thread``: see :meth:`add_batches`)."""
        if not isinstance(image, bytes | bytearray | memoryview):
            raise TypeError("image must be bytes")
        if not image:
            raise ValueError("image must not be empty")
        if not isinstance(mime_type, str):
            raise TypeError("mime_type must be a string")
        if message_id is not None and not isinstance(message_id, str):
            raise TypeError("message_id must be a string or None")
        if require_thread is not None:
            _check_lookup(require_thread, "require_thread")
        batch = PendingRecordBatch(
            contents=[description],
            record_type="image",
            record_ids=image_id,
            thread_ids=thread_id,
            user_ids=user_id,
            agent_ids=agent_id,
            timestamps=timestamp,
            metadata=metadata,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
        )
        ctx = WriteContext(
            vector_dim=self._vector_dim,
            has_vectors=self._vector_dim is not None,
            chunker=self._chunker,
            retention=self._retention,
        )
        planned = plan_batch(batch, ctx, set(), internal=True)
        planned[0].extra_json = dumps_json(
            {"mime_type": mime_type, "message_id": message_id}, "mime_type"
        )
        self._fill_vectors(p.retrieval for p in planned)
        with self._lock:
            self._check_open()
            with self._write():
                self._require_thread(require_thread)
                index_rows = self._insert(planned, 1)
                rid = self._rid_of("image", planned[0].id)
                self._dialect.execute(
                    f"INSERT INTO {self._dialect.tables.blobs} (rid, data) VALUES (?, ?)",
                    [rid, bytes(image)],
                )
            if self._index is not None:
                self._index.add(index_rows)
        return planned[0].id

    def update_image_payload(
        self, image_id: str, *, image: Any = NOT_SET_MARKER, mime_type: Any = NOT_SET_MARKER
    ) -> int:
        """Replace an image's bytes and/or MIME type; returns 1, or 0 for an unknown id."""
        _check_lookup(image_id, "image_id")
        if image is not NOT_SET_MARKER:
            if not isinstance(image, bytes | bytearray | memoryview):
                raise TypeError("image must be bytes")
            if not image:
                raise ValueError("image must not be empty")
        if mime_type is not NOT_SET_MARKER:
            if not isinstance(mime_type, str):
                raise TypeError("mime_type must be a string")
            check_text(mime_type, "mime_type")
        d = self._dialect
        with self._lock:
            self._check_open()
            with self._write():
                rows = d.execute(
                    f"SELECT rid, {d.json_as_text('extra')} FROM {d.tables.records}"
                    " WHERE family = 'image' AND id = ?",
                    [image_id],
                )
                if not rows:
                    return 0
                rid, extra = int(rows[0][0]), _json(rows[0][1]) or {}
                if image is not NOT_SET_MARKER:
                    d.execute(f"DELETE FROM {d.tables.blobs} WHERE rid = ?", [rid])
                    d.execute(
                        f"INSERT INTO {d.tables.blobs} (rid, data) VALUES (?, ?)",
                        [rid, bytes(image)],
                    )
                if mime_type is not NOT_SET_MARKER:
                    extra["mime_type"] = mime_type
                    d.execute(
                        f"UPDATE {d.tables.records} SET extra = ? WHERE rid = ?",
                        [dumps_json(extra, "mime_type"), rid],
                    )
        return 1

    def _rid_of(self, record_type: str, record_id: str) -> int:
        t = self._dialect.tables
        return int(
            self._dialect.execute(
                f"SELECT rid FROM {t.records} WHERE family = ? AND id = ?",
                [family_of(record_type), record_id],
            )[0][0]
        )

    def list(
        self,
        record_type: str,
        limit: Any = NOT_SET_MARKER,
        thread_id: Any = NOT_SET_MARKER,
        user_id: Any = NOT_SET_MARKER,
        agent_id: Any = NOT_SET_MARKER,
        metadata_filter: Any = NOT_SET_MARKER,
        include_bytes: Any = NOT_SET_MARKER,
        record_id: Any = NOT_SET_MARKER,
    ) -> builtins.list[Record]:
        """List records of one type: the newest ``limit`` (default MAX_LIST_LIMIT, None = all),
        oldest to newest. Scope filters: omitted = any, None = unscoped only; ignored for
        profiles. ``metadata_filter``: omitted = any, None = records without metadata."""
        return self.list_records(
            [record_type],
            limit=limit,
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            metadata_filter=metadata_filter,
            record_id=record_id,
            include_bytes=include_bytes,
        )

    def list_records(
        self,
        record_types: Sequence[str],
        *,
        limit: Any = NOT_SET_MARKER,
        thread_id: Any = NOT_SET_MARKER,
        user_id: Any = NOT_SET_MARKER,
        agent_id: Any = NOT_SET_MARKER,
        metadata_filter: Any = NOT_SET_MARKER,
        record_id: Any = NOT_SET_MARKER,
        include_bytes: Any = NOT_SET_MARKER,
    ) -> builtins.list[Record]:
        """``list()`` over several record types at once, in one insertion order.

        ``include_bytes``: True loads every listed image's bytes; a list of image ids loads
        only those (an allow-list); otherwise images come without bytes.
        """
        if isinstance(record_types, str) or not record_types:
            raise TypeError("record_types must be a non-empty list of record type names")
        for rtype in record_types:
            family_of(rtype)
        if limit is NOT_SET_MARKER:
            limit = MAX_LIST_LIMIT
        elif limit is not None:
            check_positive_int(limit, "limit", maximum=MAX_LIST_ROWS)
        marks = ",".join("?" * len(record_types))
        conds = [f"r.record_type IN ({marks})", _NOT_EXPIRED]
        params: builtins.list[Any] = [*record_types, time.time()]
        if not all(t in PROFILE_TYPES for t in record_types):
            scoped = (("thread_id", thread_id), ("user_id", user_id), ("agent_id", agent_id))
            for col, value in scoped:
                if value is not NOT_SET_MARKER:
                    conds.append(f"r.{col} {self._dialect.IS} ?")
                    params.append(check_scope_id(value, col))
        if record_id is not NOT_SET_MARKER:
            _check_lookup(record_id, "record_id")
            conds.append("r.id = ?")
            params.append(record_id)
        if metadata_filter is None:
            conds.append("r.metadata IS NULL")
        elif metadata_filter is not NOT_SET_MARKER:
            flt = validate_metadata_filter(metadata_filter)
            sql, fparams = self._dialect.compile_filter(flt, "r.metadata")
            conds.append(sql)
            params.extend(fparams)
        sql = (
            f"SELECT {self._cols} FROM {self._dialect.tables.records} r WHERE {' AND '.join(conds)}"
        )
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY r.rid DESC LIMIT ?) w ORDER BY rid"
            params.append(limit)
        else:
            sql += " ORDER BY r.rid"
        with self._lock:
            self._check_open()
            rows = self._dialect.execute(sql, params)
            records = [self._to_record(r) for r in rows]
            if include_bytes not in (NOT_SET_MARKER, None, False):
                wanted = None if include_bytes is True else set(include_bytes)
                at = [
                    i
                    for i, rec in enumerate(records)
                    if isinstance(rec, ImageRecord) and (wanted is None or rec.id in wanted)
                ]
                loaded = self._attach_bytes(
                    [cast(ImageRecord, records[i]) for i in at], [int(rows[i][0]) for i in at]
                )
                for i, image in zip(at, loaded, strict=True):
                    records[i] = image
        return records

    def list_thread_messages(
        self,
        thread_id: str,
        last_n: int | None = None,
        range_start_seq_no: int | None = None,
        range_end_seq_no: int | None = None,
        include_bytes: Any = NOT_SET_MARKER,
    ) -> builtins.list[MessageRecord]:
        """A thread's messages in ``seq_no`` order: inclusive seq_no range, then the last
        ``last_n`` of those. Only the thread owner's messages (see ``_threads``)."""
        _check_lookup(thread_id, "thread_id")
        conds = ["r.family = 'message'", "r.thread_id = ?", _NOT_EXPIRED, self._owners.confine()]
        params: builtins.list[Any] = [thread_id, time.time()]
        for name, value, op in (
            ("range_start_seq_no", range_start_seq_no, ">="),
            ("range_end_seq_no", range_end_seq_no, "<="),
        ):
            if value is not None:
                check_positive_int(value, name, minimum=0, maximum=MAX_SEQ_NO)
                conds.append(f"r.seq_no {op} ?")
                params.append(value)
        sql = (
            f"SELECT {self._cols} FROM {self._dialect.tables.records} r WHERE {' AND '.join(conds)}"
        )
        if last_n is not None:
            check_positive_int(last_n, "last_n", minimum=0, maximum=MAX_LIST_ROWS)
            sql = f"SELECT * FROM ({sql} ORDER BY r.seq_no DESC LIMIT ?) w ORDER BY seq_no"
            params.append(last_n)
        else:
            sql += " ORDER BY r.seq_no"
        with self._lock:
            self._check_open()
            rows = self._dialect.execute(sql, params)
        return [self._to_record(r) for r in rows]  # type: ignore[misc]

    def _load(self, rids: Sequence[int]) -> dict[int, Record]:
        out: dict[int, Record] = {}
        now = time.time()
        for part in chunked(builtins.list(rids), 500):
            marks = ",".join("?" * len(part))
            rows = self._dialect.execute(
                f"SELECT {self._cols} FROM {self._dialect.tables.records} r"
                f" WHERE r.rid IN ({marks}) AND {_NOT_EXPIRED}",
                [*part, now],
            )
            for row in rows:
                out[int(row[0])] = self._to_record(row)
        return out

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str | None,
        k: int,
        query_vector: Any = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        exact_user_match: bool = False,
        exact_agent_match: bool = False,
        exact_thread_match: bool = False,
        record_types: set[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        num_hops: int = 0,
        max_linked_results: int = 100,
        include_invalid_results: bool = True,
    ) -> builtins.list[tuple[Record, float]]:
        """Up to ``k`` (record, distance) pairs, distance ascending, one per logical record.

        VECTOR: cosine distance. KEYWORD: ``1 / (1 + bm25)``. HYBRID: score fusion of both,
        with records from a period the query names preferred (``_hybrid.hybrid_rank``). A
        scope id given with ``exact_*_match=False`` filters nothing but adds a small penalty
        to records that miss it, so matches rank higher.
        """
        check_positive_int(k, "k", maximum=MAX_SEARCH_RESULTS)
        if (query is None) == (query_vector is None):
            raise ValueError("give exactly one of query and query_vector")
        if query is not None:
            if not isinstance(query, str):
                raise TypeError("query must be a string")
            if not query.strip():
                raise ValueError("query must contain at least one non-whitespace character")
            check_text(query, "query")
        qvec: NDArray[np.float32] | None = None
        if query_vector is not None:
            if self._strategy is SearchStrategy.KEYWORD:
                raise ValueError("query_vector: keyword search takes a text query, not a vector")
            qvec = as_vector(query_vector, "query_vector")
            if self._vector_dim is not None and qvec.shape[0] != self._vector_dim:
                raise ValueError(
                    f"query_vector has dimension {qvec.shape[0]}, the store's is {self._vector_dim}"
                )
        scope = ScopeSpec.resolve(
            thread_id, user_id, agent_id, exact_user_match, exact_agent_match, exact_thread_match
        )
        types = self._search_types(record_types)
        flt = None if metadata_filter is None else validate_metadata_filter(metadata_filter)
        check_positive_int(num_hops, "num_hops", minimum=0, maximum=MAX_NUM_HOPS)
        check_positive_int(
            max_linked_results, "max_linked_results", minimum=0, maximum=MAX_LINKED_RESULTS
        )
        if not isinstance(include_invalid_results, bool):
            raise TypeError("include_invalid_results must be a bool")
        valid_only = not include_invalid_results
        strategy = self._strategy
        if qvec is None and query is not None and strategy is not SearchStrategy.KEYWORD:
            if self._embedder is None:
                raise ValueError(
                    f"query: {strategy} search needs an embedder to embed a text query; "
                    "pass query_vector instead"
                )
            qvec = self._embed([query], is_query=True)[0]

        with self._lock:
            self._check_open()
            if strategy is SearchStrategy.VECTOR:
                assert qvec is not None
                hits = self._vector_branch(qvec, k, types, scope, flt, valid_only, parallel=False)()
            elif strategy is SearchStrategy.KEYWORD:
                assert query is not None
                hits = self._keyword_hits(query, k, types, scope, flt, valid_only)
            else:
                n = max(HYBRID_CANDIDATES, k)
                vector_branch = (
                    self._vector_branch(qvec, n, types, scope, flt, valid_only)
                    if qvec is not None
                    else None
                )
                try:
                    keyword_hits = (
                        self._keyword_hits(query, n, types, scope, flt, valid_only)
                        if query is not None
                        else []
                    )
                finally:
                    vector_hits = vector_branch() if vector_branch is not None else []
                hits = hybrid_rank(
                    vector_hits,
                    keyword_hits,
                    k,
                    query,
                    self._times_of,
                    keyword_span=self._dialect.keyword_span,
                )
            records = self._load([rid for rid, _ in hits])
            # A vector written before vectors were validated may be degenerate: never let a
            # non-finite distance out.
            found = [
                (records[rid], dist) for rid, dist in hits if rid in records and math.isfinite(dist)
            ]
            linked = self.expand_links(
                [r for r, _ in found], num_hops, max_linked_results, not valid_only, scope.exact
            )
        return [(record, dist) for record, (_, dist) in zip(linked, found, strict=True)]

    def _times_of(self, rids: builtins.list[int]) -> dict[int, str | None]:
        """Each record's time for date-aware ranking: its timestamp, else its creation."""
        marks = ",".join("?" * len(rids))
        rows = self._dialect.execute(
            f"SELECT rid, COALESCE(event_ts, created_at) FROM {self._dialect.tables.records}"
            f" WHERE rid IN ({marks})",
            rids,
        )
        return {int(rid): ts for rid, ts in rows}

    def _search_types(self, record_types: Any) -> builtins.list[str]:
        if record_types is None:
            return builtins.list(DEFAULT_SEARCH_TYPES)
        if isinstance(record_types, str) or not isinstance(record_types, Iterable):
            raise TypeError("record_types must be a set of record type names or None")
        types = builtins.list(dict.fromkeys(record_types))
        for t in types:
            if family_of(t, "record_types") not in SEARCHABLE_FAMILIES:
                raise ValueError(f"record_types: {t!r} records are not searchable")
        if not types:
            raise ValueError("record_types must not be empty")
        return types

    def _search_conditions(
        self,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> tuple[builtins.list[str], builtins.list[Any]]:
        """SQL conditions (over records ``r``) every ranked search applies."""
        marks = ",".join("?" * len(types))
        conds = [f"r.record_type IN ({marks})", _NOT_EXPIRED]
        params: builtins.list[Any] = [*types, time.time()]
        sc, sp = self._scope_sql(scope)
        conds += sc
        params += sp
        if valid_only:
            conds.append("r.status = 'valid'")
        if flt is not None:
            fsql, fparams = self._dialect.compile_filter(flt, "r.metadata")
            conds.append(fsql)
            params += fparams
        return conds, params

    def _scope_sql(self, scope: ScopeSpec) -> tuple[builtins.list[str], builtins.list[Any]]:
        conds, params = [], []
        for dim, value in scope.exact.items():
            conds.append(f"r.{dim}_id {self._dialect.IS} ?")
            params.append(value)
        return conds, params

    @contextmanager
    def _write(self) -> Iterator[None]:
        """A write transaction that keeps the in-process index's state exact.

        The caller applies its own changes to the index after the commit. When nobody else
        committed since the state the index reflects, the index then reflects the new
        generation; otherwise its state stays where it was, the new generation is noted as
        this store's own, and the next read replays the log from there but for its own
        generations (replaying a rid is idempotent: its rows are re-read), so writers never
        pay for other processes' writes and readers never re-read their own.
        """
        d = self._dialect
        with d.transaction():
            yield
        state = self._index_state
        if self._index is not None and state is not None and d.committed_generation is not None:
            if d.tx_base_generation == state[1]:
                self._index_state = (state[0], d.committed_generation)
            elif d.committed_generation > state[1]:
                self._own_generations.add(d.committed_generation)

    def _sync_index_state(self) -> None:
        """Catch up on what other processes committed since we looked (reads only)."""
        if not self._dialect.changed_externally() or self._index is None:
            return
        with self._dialect.snapshot():  # the state and the rows read describe one state
            self._catch_up()

    def _catch_up(self, *, rebuild_above: int = CATCH_UP_MAX_ROWS) -> None:
        """Apply the change log since the state the index reflects, in time proportional to
        the change; drop the index (rebuilt on next use) when the log cannot tell."""
        d = self._dialect
        index, mine = self._index, self._index_state
        state = d.read_state()
        if index is None:
            return
        if state is None or mine is None or state[0] != mine[0] or mine[1] < state[2]:
            self._drop_index()  # another store instance, or further behind than the log
            return
        if state[1] == mine[1]:
            return
        ranges = d.changes_since(mine[1], state[1], self._own_generations)
        if ranges is None or sum(hi - lo + 1 for lo, hi in ranges) > rebuild_above:
            self._drop_index()
            return
        if not ranges:
            self._caught_up_to(mine[0], state[1])
            return
        rids = np.unique(
            np.concatenate([np.arange(lo, hi + 1, dtype=np.int64) for lo, hi in ranges])
        )
        index.remove_array(rids)
        for part in chunked(rids.tolist(), 500):
            marks = ",".join("?" * len(part))
            self._load_index_rows(index, f" AND c.rid IN ({marks})", part)
        self._caught_up_to(mine[0], state[1])

    def _caught_up_to(self, instance: str, generation: int) -> None:
        self._index_state = (instance, generation)
        self._own_generations = {g for g in self._own_generations if g > generation}

    def _drop_index(self) -> None:
        if self._index is not None:
            self._index.ann_close()  # its background graph work is of no use any more
        self._index = None
        self._index_state = None
        self._own_generations = set()

    def _ensure_index(self) -> VectorIndex:
        self._sync_index_state()
        if self._index is None:
            assert self._vector_dim is not None
            snapshot = self._dialect.index_snapshot_dir()
            with self._dialect.snapshot():  # the state and the rows describe one state
                state = self._dialect.read_state()
                loaded = None
                if state is not None and snapshot is not None:
                    loaded = VectorIndex.load(snapshot, self._vector_dim)
                if loaded is not None and state is not None:
                    # A snapshot of an earlier state is brought forward from the change log.
                    instance, _, gen = loaded[1].rpartition(":")
                    if instance == state[0] and gen.isdigit() and state[2] <= int(gen) <= state[1]:
                        self._index, self._index_state = loaded[0], (instance, int(gen))
                        self._saved_stamp = loaded[1]
                        self._catch_up()
                if self._index is None:
                    self._index = self._build_index()
                    self._index_state = None if state is None else (state[0], state[1])
            index = self._index
            if (
                len(index) >= SNAPSHOT_MIN_ROWS
                and snapshot is not None
                and not (snapshot / "index.json").exists()
            ):
                # The first build of a large store leaves a snapshot for the next process;
                # later ones are refreshed when this store closes.
                self._save_index(index)
        return self._index

    def _build_index(self) -> VectorIndex:
        """Read every vector of the store into a fresh index."""
        assert self._vector_dim is not None
        index = VectorIndex(self._vector_dim)
        self._load_index_rows(index, "")
        index.cluster()
        return index

    def _load_index_rows(self, index: VectorIndex, where: str, params: Sequence[Any] = ()) -> None:
        """Add the chunks that have vectors (and match ``where``) to ``index``."""
        d = self._dialect
        t = d.tables
        rows = d.execute(
            f"SELECT c.rid, c.vector, r.record_type, r.user_id, r.agent_id, r.thread_id,"
            f" r.status, r.expires_at FROM {t.chunks} c JOIN {t.records} r ON r.rid = c.rid"
            f" WHERE c.vector IS NOT NULL{where} ORDER BY c.cid",
            params,
        )
        if not rows:
            return
        valid = RecordStatus.VALID.value
        columns = builtins.list(zip(*rows, strict=True))
        index.add_columns(
            d.vectors_from_db(columns[1], index.dim),
            columns[0],
            columns[2],
            columns[3],
            columns[4],
            columns[5],
            [status == valid for status in columns[6]],
            columns[7],
        )

    def _save_index(self, index: VectorIndex) -> None:
        """Snapshot the index with the state it reflects (coherent with the change log)."""
        snapshot = self._dialect.index_snapshot_dir()
        state = self._index_state
        stamp = None if state is None else f"{state[0]}:{state[1]}"
        if stamp is None or snapshot is None:
            return
        if stamp == self._saved_stamp and not index.ann_unsaved:
            return
        try:
            index.save(snapshot, stamp)
            self._saved_stamp = stamp
        except OSError as exc:  # a read-only directory only costs the next open some time
            log.warning("could not save the vector index snapshot to %s: %s", snapshot, exc)

    def _filter_rids(
        self, types: builtins.list[str], scope: ScopeSpec, flt: dict[str, Any]
    ) -> NDArray[np.int64]:
        conds, params = self._scope_sql(scope)
        fsql, fparams = self._dialect.compile_filter(flt, "r.metadata")
        marks = ",".join("?" * len(types))
        rows = self._dialect.execute(
            f"SELECT r.rid FROM {self._dialect.tables.records} r WHERE r.record_type IN ({marks})"
            f" AND {' AND '.join([*conds, fsql]) if conds else fsql}",
            [*types, *params, *fparams],
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def _vector_branch(
        self,
        qvec: NDArray[np.float32],
        k: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
        *,
        parallel: bool = True,
    ) -> Callable[[], builtins.list[tuple[int, float]]]:
        """Vector hits, to collect later: with ``parallel`` and a large in-process index the
        scan runs on the store's branch thread meanwhile (a hybrid search's keyword query
        runs here; numpy and SQLite both release the GIL). The database is read here first
        (catch-up, filter mask), so that thread reads none; collecting runs here too.

        An unscoped search's metadata filter is a mask over every row, evaluated in SQL and
        cached until the next write. A scoped search without that mask ranks its scope's
        best ``FILTER_CHECK_PER_RESULT * k`` records and checks the filter on those alone: a
        mask costs a JSON evaluation per record of the scope and a pass over the whole store
        (about 50 ms for one user's 10,000 records at 1M), and live applications write
        between searches, which drops it. Too few passing, more are ranked, as many as the
        share passing says are needed (at most ``FILTER_CHECK_MAX``); then the mask answers
        (and is kept)."""
        if self._vector_dim is None:
            return lambda: []
        if self._dialect.native_vector_search:
            hits = self._sql_vector_hits(qvec, k, types, scope, flt, valid_only)
            return lambda: hits
        index = self._ensure_index()
        search = partial(
            index.search,
            qvec,
            record_types=types,
            exact=scope.exact,
            prefer=scope.prefer,
            valid_only=valid_only,
            now=time.time(),
        )
        if flt is None:
            return self._run_branch(partial(search, k), len(index), parallel)
        key = (json.dumps(flt, sort_keys=True), tuple(types), tuple(scope.exact.items()))
        allowed = index.cached_filter_mask(key)

        def mask() -> NDArray[np.bool_]:
            return index.filter_mask(key, lambda: self._filter_rids(types, scope, flt))

        if allowed is not None or not scope.exact:
            allowed = mask() if allowed is None else allowed
            return self._run_branch(partial(search, k, allowed=allowed), len(index), parallel)
        fetch = max(FILTER_CHECK_PER_RESULT * k, 128)
        ranked = self._run_branch(partial(search, fetch), len(index), parallel)

        def checked() -> builtins.list[tuple[int, float]]:
            nonlocal fetch
            hits = ranked()
            looked_at: set[int] = set()
            passing: set[int] = set()
            kept: builtins.list[tuple[int, float]] = []
            seen, batch = 0, max(2 * k, 32)
            while True:
                # Hits come best first, so the first k that pass are the answer: the filter
                # is checked on more of them, batch by batch, until k pass. (A wider ranking
                # may order equal distances differently: any not yet checked are checked.)
                while seen < len(hits):
                    upto = min(len(hits), seen + batch)
                    todo = [rid for rid, _ in hits[:upto] if rid not in looked_at]
                    passing |= self._passing_filter(todo, flt)
                    looked_at.update(todo)
                    seen = upto
                    kept = [(rid, dist) for rid, dist in hits[:seen] if rid in passing][:k]
                    if len(kept) >= k:
                        return kept
                    batch = _more_to_read(k - len(kept), max(len(passing), 1) / seen)
                if len(hits) < fetch:  # every record of the scope was ranked
                    return kept
                if fetch >= FILTER_CHECK_MAX:
                    return search(k, allowed=mask())
                # Rank as many more as the share passing so far says are needed, twice over.
                share = max(len(passing), 1) / len(hits)
                fetch = min(FILTER_CHECK_MAX, max(4 * fetch, math.ceil(2 * k / share)))
                hits = search(fetch)

        return checked

    def _run_branch(
        self, job: Callable[[], builtins.list[tuple[int, float]]], rows: int, parallel: bool
    ) -> Callable[[], builtins.list[tuple[int, float]]]:
        """``job`` run now, or on the branch thread when ``parallel`` and ``rows`` is large."""
        if not parallel or rows < PARALLEL_BRANCH_ROWS:
            hits = job()
            return lambda: hits
        if self._branch_pool is None or self._branch_pid != os.getpid():  # none, or forked
            self._branch_pool = ThreadPoolExecutor(1, thread_name_prefix="oam-vector-branch")
            self._branch_pid = os.getpid()
        return self._branch_pool.submit(job).result

    def _passing_filter(self, rids: builtins.list[int], flt: dict[str, Any]) -> set[int]:
        """Those of ``rids`` whose record's metadata passes ``flt`` (SQLite: ``json_each``;
        engines with native vector search never get here)."""
        if not rids:
            return set()
        fsql, fparams = self._dialect.compile_filter(flt, "r.metadata")
        rows = self._dialect.execute(
            f"SELECT r.rid FROM json_each(?) j CROSS JOIN {self._dialect.tables.records} r"
            f" ON r.rid = j.value WHERE {fsql}",
            [json.dumps(rids), *fparams],
        )
        return {int(row[0]) for row in rows}

    def _sql_vector_hits(
        self,
        qvec: NDArray[np.float32],
        k: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> builtins.list[tuple[int, float]]:
        """Vector ranking inside an engine with native vector search (pgvector).

        Without scope preferences the inner query orders by the raw distance alone, so an
        ANN index can serve it; candidates are widened until ``k`` distinct records remain.
        """
        d = self._dialect
        t = d.tables
        conds, params = self._search_conditions(types, scope, flt, valid_only)
        conds.append("c.vector IS NOT NULL")
        qparam = d.vector_to_db(qvec / float(np.linalg.norm(qvec)))
        dist = d.cosine_distance_sql("c.vector")
        penalty = [
            f"(CASE WHEN r.{dim}_id {d.IS} ? THEN 0.0 ELSE {PREFERENCE_PENALTY} END)"
            for dim in scope.prefer
        ]
        order = f"{dist} + {' + '.join(penalty)}" if penalty else dist
        order_params = [qparam, *scope.prefer.values()] if penalty else [qparam]
        where = " AND ".join(conds)
        # The HNSW index filters after its search, so a selective scope or filter loses
        # results: a candidate set small enough is ranked exactly instead (pgvector's index
        # serves only ``ORDER BY <column> <=> <constant>``, so ``+ 0.0`` keeps it out).
        exact = bool(penalty)
        if not exact and (scope.exact or flt is not None):
            counted = d.execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {t.chunks} c JOIN {t.records} r"
                f" ON r.rid = c.rid WHERE {where} LIMIT ?) s",
                [*params, NATIVE_EXACT_MAX],
            )
            exact = int(counted[0][0]) < NATIVE_EXACT_MAX
        n = max(4 * k, 40)
        while True:
            ranked = f"({order}) + 0.0" if exact and not penalty else order
            sql = (
                f"SELECT c.rid, {order} AS dist FROM {t.chunks} c JOIN {t.records} r"
                f" ON r.rid = c.rid WHERE {where} ORDER BY {ranked} LIMIT ?"
            )
            rows = d.execute_vector_query(sql, [*order_params, *params, *order_params, n])
            best: dict[int, float] = {}
            for rid, distance in rows:
                if int(rid) not in best:
                    best[int(rid)] = float(distance)
            if len(best) >= k or len(rows) < n:
                return sorted(best.items(), key=lambda kv: kv[1])[:k]
            if not exact and n >= NATIVE_ANN_FETCH_MAX:
                exact = True  # the filter keeps too little of what the index returns
            else:
                n *= 4

    def _keyword_hits(
        self,
        query: str,
        k: int,
        types: builtins.list[str],
        scope: ScopeSpec,
        flt: dict[str, Any] | None,
        valid_only: bool,
    ) -> builtins.list[tuple[int, float]]:
        terms = query_terms(query)
        if not terms or not self._has_keyword:
            return []
        d = self._dialect
        t = d.tables
        conds, cparams = self._search_conditions(types, scope, flt, valid_only)
        penalty = ["0.0"]
        for dim in scope.prefer:
            penalty.append(
                f"(CASE WHEN r.{dim}_id {d.IS} ? THEN 0.0 ELSE {PREFERENCE_PENALTY} END)"
            )
        pparams = builtins.list(scope.prefer.values())
        scored = d.keyword_scores(terms, scope.exact)
        if scored is not None:
            return self._keyword_ranked(scored, k, conds, cparams, penalty, pparams)
        hits_sql, params = d.keyword_hits_sql(terms, scope.exact)
        params = [*params, *cparams]
        # Where the full-text engine narrows to the exact scope itself, only its best-scored
        # chunks are joined to their records (joining every match costs most of a large
        # scope's query); the candidate set widens until the answer is the full one.
        limit: int | None = max(KEYWORD_CANDIDATES, k) if d.keyword_hits_scoped else None
        while True:
            # MATERIALIZED keeps the engine's ranking function inside its full-text query.
            cte = hits_sql if limit is None else f"{hits_sql} ORDER BY score DESC LIMIT {limit}"
            sql = (
                f"WITH h AS MATERIALIZED ({cte})"
                f" SELECT r.rid, 1.0 / (1.0 + MAX(h.score)) + {' + '.join(penalty)} AS dist,"
                " (SELECT COUNT(*) FROM h), (SELECT MIN(score) FROM h)"
                f" FROM h JOIN {t.chunks} c ON c.cid = h.cid"
                f" JOIN {t.records} r ON r.rid = c.rid WHERE {' AND '.join(conds)}"
                " GROUP BY r.rid, r.user_id, r.agent_id, r.thread_id ORDER BY dist, r.rid LIMIT ?"
            )
            rows = d.execute(sql, [params[0], *pparams, *params[1:], k])
            if limit is None or (rows and int(rows[0][2]) < limit):
                break  # every match was a candidate
            # A chunk left out scores at most the lowest candidate's score, so its record's
            # distance is at least 1 / (1 + that): results nearer than that are final.
            if len(rows) >= k and float(rows[-1][1]) <= 1.0 / (1.0 + float(rows[0][3])):
                break
            limit = None if not rows or limit >= KEYWORD_CANDIDATES_MAX else limit * 8
        return [(int(row[0]), float(row[1])) for row in rows]

    def _keyword_ranked(
        self,
        scored: builtins.list[tuple[int, float]],
        k: int,
        conds: builtins.list[str],
        params: builtins.list[Any],
        penalty: builtins.list[str],
        pparams: builtins.list[Any],
    ) -> builtins.list[tuple[int, float]]:
        """The keyword answer from the records' best chunk scores the dialect computed (best
        first): the best records are read, more at each round, until the answer is the full
        one; as the SQL path above, distance ``1 / (1 + best chunk score)`` plus penalties."""
        t = self._dialect.tables
        # CROSS JOIN keeps this order: candidates first, each row looked up by key (the
        # planner would otherwise start from the user's index and scan every record).
        sql = (
            f"SELECT r.rid, {', '.join(penalty)} FROM json_each(?) j"
            f" CROSS JOIN {t.records} r ON r.rid = j.value WHERE {' AND '.join(conds)}"
        )
        score = dict(scored)
        nearest: dict[int, float] = {}
        done, limit = 0, max(SCORED_CANDIDATES_PER_RESULT * k, 20)
        while True:
            ids = json.dumps([rid for rid, _ in scored[done:limit]])
            for rid, *penalties in self._dialect.execute(sql, [*pparams, ids, *params]):
                dist = 1.0 / (1.0 + score[rid])
                for p in penalties:
                    dist += p
                nearest[rid] = dist
            ranked = sorted(nearest.items(), key=lambda kv: (kv[1], kv[0]))[:k]
            done = min(limit, len(scored))
            if done == len(scored):
                return ranked  # every match was a candidate
            # A record left out scores at most the next candidate's score, so its distance is
            # at least 1 / (1 + that): when the k-th result is strictly nearer, no record left
            # out can enter the answer or win a tie with it.
            if len(ranked) >= k and ranked[-1][1] < 1.0 / (1.0 + scored[done][1]):
                return ranked
            if not nearest or limit >= KEYWORD_CANDIDATES_MAX:
                limit = len(scored)
            elif len(ranked) >= k:  # a tie straddles the cut
                limit *= 2
            else:  # filters rejected some
                limit = min(limit * 8, done + _more_to_read(k - len(ranked), len(nearest) / done))

    def sync_search_index(self) -> None:
        """Refresh the keyword index (needed under ``SearchIndexSyncMode.MANUAL``)."""
        with self._lock:
            self._check_open()
            if self._has_keyword:
                with self._write():
                    self._dialect.keyword_index_rebuild()

    def reembed(self, embedder: IEmbedder, *, batch_size: int = 256) -> int:
        """Move the store to another embedding model: every chunk with retrieval text is
        embedded again by ``embedder`` (``batch_size`` texts per call) and the store records
        the new model identity and dimension. One transaction: a crash or error leaves the
        store as it was. Returns the number of vectors written. Open the store with its old
        model (or ``embedder=None``) to call it; other processes must reopen the store."""
        from oracleagentmemory.core.store._reembed import reembed

        return reembed(self, embedder, batch_size)

    # ------------------------------------------------------------------ update

    def update(
        self,
        record_type: str,
        record_id: str,
        content: Any = NOT_SET_MARKER,
        index_text: Any = NOT_SET_MARKER,
        embedding: Any = NOT_SET_MARKER,
        metadata: Any = NOT_SET_MARKER,
        timestamp: Any = NOT_SET_MARKER,
        ttl_days: Any = NOT_SET_MARKER,
        ttl_anchor: Any = NOT_SET_MARKER,
        status: Any = NOT_SET_MARKER,
        text: Any = NOT_SET_MARKER,
    ) -> int:
        """Update one record (see page 000's rules); returns 1, or 0 for an unknown id.

        Omitted arguments leave fields unchanged; ``None`` clears them. An expired record
        that has not been purged can be revived by a new expiry.
        """
        family = family_of(record_type)
        _check_lookup(record_id, "record_id")
        if content is not NOT_SET_MARKER and text is not NOT_SET_MARKER:
            raise ValueError("give either text or content, not both")
        if text is NOT_SET_MARKER:
            text = content
        given = [
            a is not NOT_SET_MARKER
            for a in (
                text,
                index_text,
                embedding,
                metadata,
                timestamp,
                ttl_days,
                ttl_anchor,
                status,
            )
        ]
        if not any(given):
            raise ValueError("update needs at least one field to change")
        if text is not NOT_SET_MARKER and text is not None:
            if not isinstance(text, str):
                raise TypeError("text must be a string or None")
            check_text(text, "text")
        if text is None:
            if family in PROFILE_TYPES:
                raise ValueError(f"text: {record_type} records do not support text=None")
            if index_text not in (NOT_SET_MARKER, None) or embedding not in (NOT_SET_MARKER, None):
                raise ValueError(
                    "text=None clears the stored and retrieval text, so it cannot be combined "
                    "with index_text or embedding values"
                )
        vectors = None
        if embedding is not NOT_SET_MARKER and embedding is not None:
            if self._vector_dim is None:
                raise ValueError(
                    "embedding: this store has no local vector storage; give index_text instead"
                )
            vectors = split_vectors(embedding, "embedding")
            check_dims({int(v.shape[0]) for v in vectors[1]}, self._vector_dim, "embedding")
            if index_text is None and vectors[0] != "empty":
                raise ValueError(
                    "index_text=None clears the retrieval rows, so explicit embeddings are not "
                    "allowed in the same call"
                )
        caller_chunks: builtins.list[str] | None = None
        if isinstance(index_text, builtins.list | tuple):
            caller_chunks = caller_chunk_list(builtins.list(index_text), "index_text")
        elif index_text not in (NOT_SET_MARKER, None):
            if not isinstance(index_text, str):
                raise TypeError("index_text must be a string, a list of strings or None")
            check_text(index_text, "index_text")
        meta_json = NOT_SET_MARKER if metadata is NOT_SET_MARKER else check_metadata(metadata)
        if timestamp is not NOT_SET_MARKER and timestamp is not None:
            parse_timestamp(timestamp, "timestamp")
        if ttl_days is not NOT_SET_MARKER:
            check_ttl_days(ttl_days)
        anchor = (
            TimeToLiveAnchor.CREATED_AT
            if ttl_anchor is NOT_SET_MARKER
            else check_anchor(ttl_anchor)
        )
        new_status = None if status is NOT_SET_MARKER else check_status(status, "status")

        with self._lock:
            self._check_open()
            d = self._dialect
            t = d.tables
            # One transaction from reading the row to writing it: another process cannot
            # delete or change the record in between.
            with self._write():
                found = d.execute(
                    f"SELECT {self._cols} FROM {t.records} r"
                    " WHERE family = ? AND id = ? AND record_type = ?",
                    [family, record_id, record_type],
                )
                if not found:
                    return 0
                row = found[0]
                rid = int(row[0])
                old_event_ts, created_at = row[10], row[11]
                plan: RetrievalPlan | None = None
                if family in SEARCHABLE_FAMILIES:
                    plan = self._plan_update_rows(
                        rid, text, index_text, caller_chunks, embedding, vectors
                    )
                    if plan is not None and plan.needs_vectors:
                        self._fill_vectors([plan])
                sets: builtins.list[str] = []
                params: builtins.list[Any] = []
                if text is not NOT_SET_MARKER:
                    sets.append("content = ?")
                    params.append(text)
                if meta_json is not NOT_SET_MARKER:
                    sets.append("metadata = ?")
                    params.append(meta_json)
                event_ts = old_event_ts
                if timestamp is not NOT_SET_MARKER:
                    sets.append("event_ts = ?")
                    params.append(timestamp)
                    event_ts = timestamp
                if (
                    ttl_days is not NOT_SET_MARKER or ttl_anchor is not NOT_SET_MARKER
                ) and family in EXPIRING_FAMILIES:
                    if (
                        ttl_days is not NOT_SET_MARKER
                        or self._retention.default_ttl_days is not None
                    ):
                        days = resolve_ttl_days(ttl_days, self._retention)
                    else:  # ttl_anchor alone, no schema default: re-anchor the record's own TTL
                        days = self._stored_ttl_days(rid, row)
                    sets += ["expires_at = ?", "ttl_days = ?"]
                    params += [
                        expiry(
                            days, anchor, datetime.fromisoformat(created_at), event_ts, "timestamp"
                        ),
                        days,
                    ]
                if new_status is not None:
                    sets.append("status = ?")
                    params.append(new_status.value)
                if sets:
                    d.execute(
                        f"UPDATE {t.records} SET {', '.join(sets)} WHERE rid = ?", [*params, rid]
                    )
                if plan is not None:
                    self._replace_chunks(rid, plan, (row[8], row[9], row[7]))
                d.note_changed([rid])
            self._refresh_index([rid])
        return 1

    def _stored_ttl_days(self, rid: int, row: Sequence[Any]) -> int | None:
        """The TTL, in days, a record was given (None: it never expires).

        Rows written before schema 3 kept only their expiry: the TTL is recovered from it and
        the anchor it fits (creation time, else the event timestamp).
        """
        d = self._dialect
        stored = d.execute(f"SELECT ttl_days FROM {d.tables.records} WHERE rid = ?", [rid])
        if stored and stored[0][0] is not None:
            return int(stored[0][0])
        expires_at = row[14]
        if expires_at is None:
            return None
        bases = [datetime.fromisoformat(row[11]).timestamp()]
        if row[10]:
            bases.append(parse_timestamp(row[10]).timestamp())
        for base in bases:
            days = (float(expires_at) - base) / 86400
            if abs(days - round(days)) < 1e-4 and round(days) >= 1:
                return round(days)
        return min(MAX_TTL_DAYS, max(1, round((float(expires_at) - bases[0]) / 86400)))

    def _plan_update_rows(
        self,
        rid: int,
        text: Any,
        index_text: Any,
        caller_chunks: builtins.list[str] | None,
        embedding: Any,
        vectors: tuple[str, builtins.list[NDArray[np.float32]]] | None,
    ) -> RetrievalPlan | None:
        """New retrieval rows for an update, or None to keep the current ones."""
        if text is NOT_SET_MARKER and index_text is NOT_SET_MARKER:
            if embedding is NOT_SET_MARKER:
                return None
            # Embedding-only update: reuse the record's existing chunk text rows.
            texts = [
                r[0]
                for r in self._dialect.execute(
                    f"SELECT chunk_text FROM {self._dialect.tables.chunks} WHERE rid = ?"
                    " ORDER BY chunk_index",
                    [rid],
                )
            ]
            if vectors is None:  # embedding=None: keep the text rows, drop their vectors
                return RetrievalPlan([ChunkRow(tx) for tx in texts])
            kind, vecs = vectors
            if kind == "empty":
                if texts:
                    raise ValueError(
                        "embedding: an empty payload is allowed only for a record without "
                        "retrieval rows"
                    )
                return RetrievalPlan([])
            if len(vecs) != max(1, len(texts)):
                raise ValueError(
                    f"embedding: {len(vecs)} vector(s) for {len(texts)} existing retrieval "
                    "rows; an embedding-only update must match them"
                )
            return RetrievalPlan(
                [ChunkRow(tx, v) for tx, v in zip(texts or [None], vecs, strict=True)]
            )
        if text is None or index_text is None:
            return RetrievalPlan([])  # cleared (conflicting payloads were rejected earlier)
        source = text if index_text is NOT_SET_MARKER else index_text
        return plan_retrieval(
            source=None if caller_chunks is not None else source,
            caller_chunks=caller_chunks,
            vectors=vectors,
            chunker=self._chunker,
            has_vectors=self._vector_dim is not None,
            explicit_none=embedding is None,
            name="embedding",
        )

    def _replace_chunks(
        self, rid: int, plan: RetrievalPlan, scope: tuple[str | None, str | None, str | None]
    ) -> None:
        """Swap a record's retrieval rows; ``scope`` is its (user, agent, thread)."""
        d = self._dialect
        t = d.tables
        old = [r[0] for r in d.execute(f"SELECT cid FROM {t.chunks} WHERE rid = ?", [rid])]
        if self._has_keyword and self._sync is not SearchIndexSyncMode.MANUAL:
            d.keyword_index_remove(old)
        d.execute(f"DELETE FROM {t.chunks} WHERE rid = ?", [rid])
        cid = int(d.execute(f"SELECT COALESCE(MAX(cid), 0) FROM {t.chunks}")[0][0])
        rows: builtins.list[tuple[Any, ...]] = []
        fts: builtins.list[KeywordRow] = []
        for i, row in enumerate(plan.rows):
            cid += 1
            rows.append(
                (cid, rid, i, row.text, None if row.vector is None else d.vector_to_db(row.vector))
            )
            if row.text:
                fts.append((cid, rid, i, row.text, *scope))
        if rows:
            d.executemany(
                f"INSERT INTO {t.chunks} (cid, rid, chunk_index, chunk_text, vector)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )
        if self._has_keyword and self._sync is not SearchIndexSyncMode.MANUAL:
            d.keyword_index_add(fts)

    def _refresh_index(self, rids: builtins.list[int]) -> None:
        """Bring the cached vectors of ``rids`` in step with the database after a commit."""
        if self._index is None or not rids:
            return
        self._index.remove(rids)
        for part in chunked(rids, 500):
            marks = ",".join("?" * len(part))
            self._load_index_rows(self._index, f" AND c.rid IN ({marks})", builtins.list(part))

    # ------------------------------------------------------------------ delete

    def _delete_where(self, where: str, params: Sequence[Any]) -> builtins.list[int]:
        """Delete matching records with their chunks, index rows, blobs and relations."""
        d = self._dialect
        t = d.tables
        rows = d.execute(f"SELECT rid, record_type, id FROM {t.records} r WHERE {where}", params)
        if not rows:
            return []
        rids = [int(r[0]) for r in rows]
        d.note_changed(rids)
        for part in chunked(rids, 500):
            marks = ",".join("?" * len(part))
            cids = [
                r[0] for r in d.execute(f"SELECT cid FROM {t.chunks} WHERE rid IN ({marks})", part)
            ]
            if self._has_keyword and self._sync is not SearchIndexSyncMode.MANUAL:
                d.keyword_index_remove(cids)
            d.execute(f"DELETE FROM {t.chunks} WHERE rid IN ({marks})", part)
            d.execute(f"DELETE FROM {t.blobs} WHERE rid IN ({marks})", part)
            d.execute(f"DELETE FROM {t.sources} WHERE rid IN ({marks})", part)
            d.execute(f"DELETE FROM {t.records} WHERE rid IN ({marks})", part)
        d.executemany(
            f"DELETE FROM {t.relations} WHERE (source_record_type = ? AND source_record_id = ?)"
            " OR (target_record_type = ? AND target_record_id = ?)",
            [(r[1], r[2], r[1], r[2]) for r in rows],
        )
        # A deleted thread takes its seq_no high-water mark along (a new thread may reuse the id).
        d.executemany(
            f"DELETE FROM {t.seq} WHERE thread_key = ?",
            [(r[2],) for r in rows if r[1] == "thread"],
        )
        return rids

    def _run_delete(
        self,
        steps: builtins.list[tuple[str, Sequence[Any]]],
        forget_threads: Sequence[str] = (),
        forget_owned: Callable[[], builtins.list[str]] | None = None,
    ) -> builtins.list[builtins.list[int]]:
        """Run delete steps in one transaction; ``forget_threads`` (and the ids
        ``forget_owned`` finds before the steps run) lose their seq_no mark and owner."""
        with self._lock:
            self._check_open()
            with self._write():
                forget = [*forget_threads, *(forget_owned() if forget_owned else [])]
                results = [self._delete_where(w, p) for w, p in steps]
                for thread_id in forget_threads:
                    self._dialect.execute(
                        f"DELETE FROM {self._dialect.tables.seq} WHERE thread_key = ?", [thread_id]
                    )
                self._owners.release(forget)
            if self._index is not None:
                self._index.remove(rid for part in results for rid in part)
        return results

    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record with its retrieval rows; returns 0 or 1.

        With ``cascade`` an actor profile also takes its owned threads (with their messages
        and memories) and every remaining row scoped to the actor, in the same transaction,
        even when the profile row itself is already gone.
        """
        family = family_of(record_type)
        _check_lookup(record_id, "record_id")
        if not isinstance(cascade, bool):
            raise TypeError("cascade must be a bool")
        target = (
            "r.family = ? AND r.id = ? AND r.record_type = ?",
            [family, record_id, record_type],
        )
        steps: builtins.list[tuple[str, Sequence[Any]]] = [target]
        forget: Callable[[], builtins.list[str]] | None = None
        if cascade and family in PROFILE_TYPES:
            col = "user_id" if family == "user_profile" else "agent_id"
            t = self._dialect.tables
            owned = f"SELECT id FROM {t.records} WHERE family = 'thread' AND {col} = ?"
            steps += [
                # The actor's threads, with the rows of their owner in them.
                (
                    f"r.family IN {_SCOPED_FAMILIES} AND r.thread_id IN ({owned})"
                    f" AND {self._owners.confine()}",
                    [record_id],
                ),
                ("r.family = 'thread' AND r." + col + " = ?", [record_id]),
                (
                    f"r.family IN {_SCOPED_FAMILIES} AND r.{col} = ?",
                    [record_id],
                ),
            ]
            if col == "user_id":  # every thread id the user owns is free again
                forget = partial(self._owners.owned_by, record_id)
            else:
                forget = partial(self._thread_ids_where, f"{col} = ?", [record_id])
        elif cascade and family == "thread":
            return self.delete_thread(record_id)
        return len(self._run_delete(steps, forget_owned=forget)[0])

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread row, its owner's messages, thread-scoped memories and retrieval
        rows in one transaction, and release the thread id; returns the number of thread rows
        deleted (0 or 1). Rows another user wrote with this id before thread ids had owners
        stay (see ``_threads``)."""
        _check_lookup(thread_id, "thread_id")
        results = self._run_delete(
            [
                ("r.family = 'thread' AND r.id = ?", [thread_id]),
                (
                    f"r.family IN {_SCOPED_FAMILIES} AND r.thread_id = ?"
                    f" AND {self._owners.confine()}",
                    [thread_id],
                ),
            ],
            forget_threads=[thread_id],
        )
        return len(results[0])

    def _thread_ids_where(self, where: str, params: Sequence[Any]) -> builtins.list[str]:
        rows = self._dialect.execute(
            f"SELECT id FROM {self._dialect.tables.records} WHERE family = 'thread' AND {where}",
            params,
        )
        return [str(r[0]) for r in rows]

    def thread_owner(self, thread_id: str) -> tuple[str | None, str | None] | None:
        """(user_id, agent_id) owning ``thread_id`` since its first write, or None when no
        record names it (see ``_threads``)."""
        _check_lookup(thread_id, "thread_id")
        with self._lock:
            self._check_open()
            return self._owners.owner(thread_id)

    def thread_conflicts(self) -> builtins.list[str]:
        """Thread ids that hold rows of users other than their owner, written before thread
        ids had owners (schema version 7); reads through these threads show the owner's."""
        with self._lock:
            self._check_open()
            return self._owners.conflicts()

    def purge_expired(self) -> int:
        """Physically remove expired records; returns how many were removed.

        Expired records are invisible at once; the store also purges on open and after
        writes at most every ``PURGE_INTERVAL_S`` seconds.
        """
        self._last_purge = time.time()
        results = self._run_delete(
            [("r.expires_at IS NOT NULL AND r.expires_at <= ?", [time.time()])]
        )
        return len(results[0])

    def close(self) -> None:
        """Close the store's own connection (a caller's connection stays open); idempotent.

        A large in-process vector index is saved beside a SQLite file first, so the next
        open maps it instead of reading every vector back.
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                index = self._index
                if index is not None and len(index) >= SNAPSHOT_MIN_ROWS:
                    self._save_index(index)  # exactly the state it reflects, however old
                self._drop_index()
                if self._branch_pool is not None:
                    self._branch_pool.shutdown(wait=True)
                    self._branch_pool = None
                self._dialect.close()

"""What an SQL engine must provide to the one SQL store (SQLite today, PostgreSQL next).

The store writes portable SQL with ``?`` placeholders and table names from :class:`Tables`;
a dialect owns connections and transactions, DDL and migrations, the full-text index, the
metadata-filter compiler and vector (de)serialisation.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set as AbstractSet
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.core._shared._end_user import refuse_without_roles

T = TypeVar("T")

KeywordRow = tuple[int, int, int, str, "str | None", "str | None", "str | None"]
"""A chunk to index for keyword search: chunk id, record id, position in the record, text,
user, agent, thread."""

SCHEMA_VERSION = 18
"""Current managed-schema version; :meth:`Dialect.migrate` upgrades older ones.

3: extraction provenance and pending work. 4: ``records.ttl_days`` (the TTL a record was
given, so an expiry can be re-anchored), the per-thread ``seq_no`` high-water marks, and
(SQLite) the change log other processes catch up from. 5: (SQLite) the user-word table
beside the full-text index, which older versions would leave stale. 6: (SQLite) that table
keyed by record. 7: the owner of every thread id (``_threads``). 8: (PostgreSQL) ids from
sequences, and the approximate vector index moved off the write path (``_postgres_ann``).
9-11: (PostgreSQL) chunks carry their user and type; keyword rows on a side table, their
totals kept by triggers. 12: (PostgreSQL) the change log (``_postgres_changes``). 13:
(PostgreSQL) the keyword rows' ``user_id`` index (``search._user_vectors`` reads a user's
rows through it).
14: pending extraction work held by a lease (``pending.lease_until``, see ``_leases``).
15: the memories' history (``schema/_history``) and ``records.updated_at``. 16: each
record's ``valid_from`` / ``valid_until``. 17: (PostgreSQL) 13's index holds each keyword
row's length (a user's statistics counted in it, ``_postgres_words.statistics_sql``). 18:
(PostgreSQL) metadata as ``json`` text, filtered through a stored ``jsonb`` copy."""


class ReadOnlyStoreError(PermissionError):
    """A write to a store open on a standby (a read replica), which only reads."""

    def __init__(self, what: str = "this write") -> None:
        super().__init__(
            f"read-only: this store is open on a standby (read replica), so {what} is "
            "refused; write through the primary"
        )


class TooManyUsers(ValueError):
    """A write that would lock more users one by one than the engine allows
    (``Dialect.users_a_shared_write``): rolled back, nothing written."""


@dataclass(frozen=True)
class Tables:
    """Managed object names for one ``memory_store_id`` (qualified by ``schema`` if given)."""

    prefix: str
    schema: str | None = None

    def _name(self, suffix: str) -> str:
        name = f"{self.prefix}_{suffix}"
        return f"{self.schema}.{name}" if self.schema else name

    @cached_property
    def meta(self) -> str:
        return self._name("meta")

    @cached_property
    def records(self) -> str:
        return self._name("records")

    @cached_property
    def chunks(self) -> str:
        return self._name("chunks")

    @cached_property
    def fts(self) -> str:
        return self._name("chunks_fts")

    @cached_property
    def words_fts(self) -> str:
        """(SQLite) Each chunk's stems as its user's tokens, for user-scoped keyword search."""
        return self._name("words_fts")

    @cached_property
    def blobs(self) -> str:
        return self._name("blobs")

    @cached_property
    def relations(self) -> str:
        return self._name("relations")

    @cached_property
    def seq(self) -> str:
        """Per-thread ``seq_no`` high-water marks (a seq_no is never handed out twice)."""
        return self._name("seq")

    @cached_property
    def owners(self) -> str:
        """The user (and agent) owning each thread id, from its first write."""
        return self._name("thread_owners")

    @cached_property
    def changes(self) -> str:
        """The change log: one row per committed write (its generation and rid ranges)."""
        return self._name("changes")

    @cached_property
    def sources(self) -> str:
        """Provenance: which messages each extracted memory came from."""
        return self._name("sources")

    @cached_property
    def pending(self) -> str:
        """Accepted memory-extraction work not finished yet (resumed after a crash)."""
        return self._name("pending")

    @cached_property
    def ann(self) -> str:
        """(PostgreSQL) The vectors the approximate index holds, filled behind the writes."""
        return self._name("ann")

    @cached_property
    def kw(self) -> str:
        """(PostgreSQL) Each chunk's keyword row (stems as a tsvector, its length, its user):
        a narrow table, so the rows a keyword query scores stay in the buffer cache."""
        return self._name("kw")

    @cached_property
    def kw_totals(self) -> str:
        """(PostgreSQL) Rows and tokens of the keyword index, for BM25 (``_postgres_words``)."""
        return self._name("kw_totals")

    @cached_property
    def kw_totals_move(self) -> str:
        """(PostgreSQL) The function of the keyword rows' triggers that moves the totals."""
        return self._name("kw_totals_move")

    @cached_property
    def kw_documents(self) -> str:
        """(PostgreSQL, row security) The owner's function counting a word's rows."""
        return self._name("kw_documents")

    @cached_property
    def thread_open_to(self) -> str:
        """(PostgreSQL, row security) The owner's function: is a thread id open to a user?"""
        return self._name("thread_open_to")

    @cached_property
    def history(self) -> str:
        """Every version of every memory-like record (``schema/_history``)."""
        return self._name("history")

    @cached_property
    def ann_queue(self) -> str:
        """(PostgreSQL) Chunks written since: not in the approximate index yet."""
        return self._name("ann_queue")

    def all(self) -> tuple[str, ...]:
        return (
            self.kw_totals,
            self.kw,
            self.ann_queue,
            self.ann,
            self.words_fts,
            self.fts,
            self.changes,
            self.history,
            self.owners,
            self.seq,
            self.relations,
            self.blobs,
            self.sources,
            self.pending,
            self.chunks,
            self.records,
            self.meta,
        )


class Dialect(ABC):
    """One SQL engine."""

    tables: Tables
    IS = "IS"
    """Null-safe equality operator (``x IS ?`` matches NULL to None)."""
    IS_NOT = "IS NOT"
    """Null-safe inequality operator (NULL differs from every value, equals NULL)."""
    FOR_WRITE = ""
    """Appended to the read of rows a write is about to change: on PostgreSQL it locks them,
    and under row security it keeps only the rows this user may change (a visible global
    memory is not one), so the write reports what it really changed."""
    NOW_S = "((julianday('now') - 2440587.5) * 86400.0)"
    """The database's clock as epoch seconds (leases compare it, never a client's clock)."""
    leased_work = True
    """Whether the pending-work table has its lease column (schema 14; False for an older
    schema opened without upgrading: work is then held by its owner's liveness alone)."""
    keeps_history = True
    """Whether the store has its history table (schema 15; False for an older schema opened
    without upgrading: changes then leave no versions)."""
    layouts: tuple[str, ...] = ()
    """The table layouts besides the single-node one that this engine reads and writes (the
    meta table's ``layout``; a store of another layout is refused when it opens)."""
    layout: str | None = None
    """This store's table layout: None for the single-node one, else one of
    :attr:`layouts` (set when the store opens; statements that differ on it consult it)."""
    keeps_validity = True
    """Whether records have their validity columns (schema 16, ``schema/_validity``; False
    for an older schema opened without upgrading: ``as_of`` searches are refused)."""
    native_vector_search = False
    """True when the engine ranks vectors itself (pgvector); else the store's in-process
    exact index does (and the store keeps a change log so other processes can catch up)."""
    keyword_span = 0.0
    """The smallest spread of keyword scores a hybrid search normalises by (``_hybrid``), in
    this engine's score units; 0: always the candidates' own spread."""
    concurrent_writers = False
    """True when write transactions of several connections run at once (PostgreSQL): ids
    come from sequences, a thread's ``seq_no`` from its locked high-water-mark row, and
    plain inserts run beside each other (see :meth:`transaction`); else writers are
    serialised and a process's writers share transactions (``_group_commit``)."""
    borrowed = False
    """True when the store works through a connection its caller owns (a SQLite in-memory
    database: no second connection can reach it). The caller may close it once a call has
    returned, so no work of the store may outlive a call (no background work)."""

    read_only = False
    """True on a standby (a PostgreSQL read replica): no DDL, no purge, every write refused
    (:class:`ReadOnlyStoreError`)."""

    def routed_read(self, read: Callable[[], T]) -> T:
        """Run ``read`` (a search, get or list) where reads go: on an engine with a read
        replica, there once it has replayed this store's last commit (read-your-writes),
        else on the primary. Reads inside a write transaction stay on the primary."""
        return read()

    def primary_reads(self) -> AbstractContextManager[None]:
        """Inside it, a routed read's statements go to the primary (the in-process caches,
        whose watermark is the primary's)."""
        return nullcontext()

    def reads_as_of_now(self) -> AbstractContextManager[Any]:
        """Inside it, this context's routed reads need only what this store had committed
        when it began, and what the context commits itself (an extraction job's reads); it
        gives an object whose ``done()`` ends that, or None where nothing changes (no read
        replica)."""
        return nullcontext()

    def index_snapshot_dir(self) -> Path | None:
        """Where the store may keep a snapshot of its in-process vector index (None: never)."""
        return None

    def side_file_mode(self) -> int:
        """The permissions of files the store creates beside its database (``_files``)."""
        return 0o600

    def state_stamp(self) -> str | None:
        """Identifies the committed database state (changes with every write), or None."""
        return None

    tx_base_generation: int | None = None
    """Inside a write transaction: the generation it started from (None: not tracked)."""
    committed_generation: int | None = None
    """After a write transaction: the generation it committed (None: not tracked)."""

    def note_changed(self, rids: Sequence[int] | None) -> None:  # noqa: B027 - optional hook
        """Inside a write: record rids written, for the change log (None: every row)."""

    def read_state(self) -> tuple[str, int, int] | None:
        """(instance, generation, change-log floor) of the committed state, or None when the
        engine keeps no change log."""
        return None

    def changes_since(
        self, generation: int, upto: int, skip: AbstractSet[int] = frozenset()
    ) -> list[tuple[int, int]] | None:
        """Rid ranges written in generations (generation, upto], except the generations in
        ``skip``; None when unknown."""
        return None

    def check_end_user(self) -> None:
        """Before an operation: refuse an end-user scope this engine cannot honour (one
        without database roles), or one that has ended (``core._shared._end_user``)."""
        refuse_without_roles(type(self).__name__.removesuffix("Dialect"))

    def lock(self) -> AbstractContextManager[Any]:
        """The lock that serialises this store's calls in one process."""
        return threading.RLock()

    def enable_vectors(self, dim: int) -> None:  # noqa: B027 - optional hook
        """Called once local vector storage of ``dim`` dimensions is added to the schema."""

    def resize_vectors(self, dim: int) -> None:
        """Make the (emptied) vector column hold ``dim`` dimensions (re-embedding)."""
        self.enable_vectors(dim)

    def cosine_distance_sql(self, column: str) -> str:
        """SQL for the cosine distance between ``column`` and one ``?`` query vector."""
        raise NotImplementedError

    def execute_vector_query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run a native vector query (an engine may tune its ANN settings here)."""
        return self.execute(sql, params)

    def ann_candidates_sql(self) -> str:
        """(Native vector search) A subquery of ``(cid, dist)`` candidates from the engine's
        approximate index and the chunks not in it yet; parameters ``[query, query, limit,
        query]``."""
        raise NotImplementedError

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; returns all rows (empty for writes)."""

    def execute_all(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """Reads, in order, in one round trip where the engine can (each its own snapshot)."""
        return [self.execute(sql, params) for sql, params in statements]

    @abstractmethod
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for many parameter rows."""

    def id_head_sql(self, records: int, chunks: int) -> tuple[list[str], list[Any]]:
        """Select-list items (and their parameters) that give a write ``records`` new rids
        and ``chunks`` new cids, read back by :meth:`ids_from_head`. Here: the top rid and
        cid (writers are serialised)."""
        t = self.tables
        return [
            f"(SELECT COALESCE(MAX(rid), 0) FROM {t.records})",
            f"(SELECT COALESCE(MAX(cid), 0) FROM {t.chunks})",
        ], []

    def ids_from_head(
        self, row: Sequence[Any], records: int, chunks: int
    ) -> tuple[list[int], list[int]]:
        """The new rids and cids from the first items of a row of :meth:`id_head_sql`."""
        rid, cid = int(row[0]), int(row[1])
        return list(range(rid + 1, rid + records + 1)), list(range(cid + 1, cid + chunks + 1))

    def insert_at_once(
        self,
        records: Sequence[Sequence[Any]],
        chunks: Sequence[tuple[int, int, str | None, Any, tuple[Any, Any, Any]]],
        *,
        keyword: bool,
        probe: bool,
    ) -> tuple[list[int], bool] | None:
        """A plain insert (no thread claims, no bytes) as one atomic statement, outside any
        write transaction: ``records`` are record rows without their rid (then the writer
        and the sources of a memory's first version, ``schema/_history``), ``chunks`` are
        ``(record ordinal, chunk index, text, vector, (user, agent, thread))``; ``keyword``:
        write keyword rows; ``probe``: ask whether the keyword index exists. Returns the new
        rids in order and that answer (False when not asked), or None where the engine has
        no such statement (the caller then writes in a transaction)."""
        return None

    def settle(self) -> None:
        """Inside a write, after a statement failed: let the transaction take the next
        statement (a rollback to a savepoint). Engines that send statements without waiting
        read back what is still in flight, whose errors are the failure being handled."""
        return None

    def keyword_index_probe_sql(self) -> tuple[str, list[Any]] | None:
        """A select-list item (and its parameters) that is true when the keyword index
        exists, for a write to ask in the statement it sends anyway; None where asking
        :meth:`has_keyword_index` costs no round trip."""
        return None

    def new_chunk_ids(self, n: int) -> list[int]:
        """Inside a write: ``n`` unused chunk ids, ascending."""
        head, params = self.id_head_sql(0, n)
        return self.ids_from_head(self.execute(f"SELECT {', '.join(head)}", params)[0], 0, n)[1]

    def insert_rows(
        self, table: str, columns: str, rows: Sequence[Sequence[Any]], batch_size: int
    ) -> None:
        """Inside a write: insert ``rows`` (values of the comma-separated ``columns``)."""
        marks = ",".join("?" * (columns.count(",") + 1))
        for part in chunked(rows, batch_size):
            self.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", part)

    def insert_chunks(
        self,
        rows: Sequence[Sequence[Any]],
        keyword: Sequence[KeywordRow] | None,
        batch_size: int,
    ) -> None:
        """Inside a write: insert chunk rows ``(cid, rid, chunk_index, chunk_text, vector)``
        and, unless ``keyword`` is None, index those of them with text."""
        columns = "cid, rid, chunk_index, chunk_text, vector"
        self.insert_rows(self.tables.chunks, columns, rows, batch_size)
        if keyword is not None:
            self.keyword_index_add(keyword)

    @abstractmethod
    def transaction(self, shared: bool = False) -> AbstractContextManager[None]:
        """A write transaction (all of it commits, or none) that serialises writers; with
        ``shared``, one that runs beside other shared ones (engines with
        :attr:`concurrent_writers`: plain inserts), excluding only the serialised ones."""

    def opening(self) -> AbstractContextManager[None]:
        """The transaction a store opens in first, on engines with
        :attr:`concurrent_writers`: beside ordinary writes (PostgreSQL: the store lock
        shared). An open that finds store-wide work to do (create, migrate, add an index)
        gives it up and opens again under :meth:`transaction`."""
        return self.transaction(shared=True)

    def execute_nowait(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose result nobody reads (an engine may send it later, with the
        next statement that is read, or the commit)."""
        self.execute(sql, params)

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """A consistent read of several statements."""

    @abstractmethod
    def managed_objects(self) -> list[str]:
        """Names of this store's managed tables that exist."""

    @abstractmethod
    def migrate(self, from_version: int, to_version: int) -> None:
        """Apply schema migrations ``from_version`` (0 = nothing) up to ``to_version``."""

    def use_layout(self, layout: str | None) -> None:
        """The store's tables are in ``layout`` (None: the single-node one)."""
        self.layout = layout

    def reads_beside(self) -> bool:
        """Whether a statement of this thread's search may run on another thread meanwhile,
        on a connection of its own (not inside a transaction or an end user's scope)."""
        return False

    ranks_approximately = True
    """(Native vector search) Whether an unscoped search may ask the engine's approximate
    index (:meth:`ann_candidates_sql`); else it ranks exactly."""

    def joined(self, left: str, right: str) -> str:
        """More conditions (`` AND ...``) joining rows of one record's tables, aliased
        ``left`` and ``right``, beside their ``rid`` (a distributed layout: the same shard)."""
        return ""

    def user_shard(self, alias: str, user: str | None) -> tuple[str, list[Any]]:
        """A condition (`` AND ...``, and its parameters) that the rows of ``alias`` sit on
        ``user``'s shard, for a statement about that user's rows alone (a distributed
        layout routes it to one shard; nothing on one node)."""
        return "", []

    def placed(
        self,
        columns: str,
        rows: Sequence[Sequence[Any]],
        *,
        users: Sequence[str | None] | None = None,
        rid_at: int | None = None,
    ) -> tuple[str, list[Sequence[Any]], str]:
        """(Columns, rows, the prefix of a conflict target) of an insert whose rows belong to
        ``users`` (one each) or to the records whose rid is at ``rid_at`` in each row: on a
        distributed layout each row starts with its user's shard; on one node, unchanged."""
        return columns, list(rows), ""

    def ids_table(self) -> str:
        """Where a write looks for a record id taken already (the records' ``id``)."""
        return self.tables.records

    def new_layout(self) -> str | None:
        """The layout a store created now gets (None: the single-node one)."""
        return None

    def lay_out(self, layout: str) -> None:
        """Inside the creating transaction, right after the migrations: put the new tables
        in ``layout`` (one of :attr:`layouts`) and record it in the meta table."""
        raise ValueError(f"layout: {layout!r} is not one this engine serves")

    @abstractmethod
    def drop_all(self) -> None:
        """Drop every managed object of this store."""

    @abstractmethod
    def has_keyword_index(self) -> bool:
        """Whether the full-text index exists."""

    @abstractmethod
    def create_keyword_index(self) -> None:
        """Create the full-text index and fill it from existing chunks."""

    @abstractmethod
    def keyword_index_add(self, rows: Sequence[KeywordRow]) -> None:
        """Index chunks (see :data:`KeywordRow`)."""

    @abstractmethod
    def keyword_index_remove(self, chunk_ids: Sequence[int]) -> None:
        """Remove chunk ids from the full-text index."""

    @abstractmethod
    def keyword_index_rebuild(self) -> None:
        """Re-index every chunk (the MANUAL sync operation)."""

    def complete_keyword_index(self) -> None:  # noqa: B027 - optional hook, nothing by default
        """Add what an existing full-text index made by an older version lacks."""

    def keyword_index_complete(self) -> bool:
        """Whether :meth:`complete_keyword_index` has nothing to add."""
        return True

    def keyword_scores(
        self,
        terms: list[str],
        exact: Mapping[str, str | None],
        local: LocalScores | None = None,
    ) -> Sequence[tuple[int, float]] | None:
        """Every matching record's ``(rid, score)`` of its best chunk (higher = better), best
        first, where the dialect ranks a query itself (it may include records outside the
        ``exact`` scope: the store filters exactly again); None: the store uses
        :meth:`keyword_hits_sql`. A user-scoped ranking uses the statistics of that user's
        rows alone. ``local(stems)``, given, scores the rows of the scope in process instead,
        with their own statistics (``_user_words``)."""
        return None

    def neighbour_rows_sql(self, rids: Sequence[int], before: int, after: int) -> tuple[str, Any]:
        """(``FROM ... WHERE ...``, more conditions may follow after an ``AND``; its
        parameters): the records ``r`` and chunks ``c`` of the messages whose thread
        position is from ``before`` before to ``after`` after that of one of ``rids``, each
        message once however those cluster. CROSS JOIN: SQLite joins in the order written
        (the records of ``rids`` by rowid, their neighbours through the thread index, then
        those rows by key), not from a scope index over every row."""
        t = self.tables
        sql = (
            f"FROM (SELECT DISTINCT n.rid FROM {t.records} h CROSS JOIN {t.records} n"
            f" WHERE h.rid IN ({','.join('?' * len(rids))}) AND n.thread_id = h.thread_id"
            " AND n.family = 'message' AND n.seq_no BETWEEN h.seq_no - ? AND h.seq_no + ?) nb"
            f" CROSS JOIN {t.records} r CROSS JOIN {t.chunks} c WHERE r.rid = nb.rid"
            " AND c.rid = r.rid"
        )
        return sql, [*rids, before, after]

    def id_list(self, ids: Sequence[int]) -> tuple[str, Any]:
        """(A FROM item ``j`` with one column ``value`` listing ``ids``, then the join to
        the next item that keeps this order; its parameter). CROSS JOIN fixes SQLite's join
        order: candidates first, each row looked up by key."""
        import json

        return "json_each(?) j CROSS JOIN", json.dumps(list(ids))

    def opened(self) -> None:  # noqa: B027 - optional hook, nothing by default
        """The store's schema is open (checked, created or upgraded, and committed)."""

    def lock_scope(self, key: str) -> None:  # noqa: B027 - optional hook, nothing by default
        """Inside a write: take this store's lock on ``key`` (a thread's summary, say) until
        the transaction ends, for the read-modify-write of something no row lock covers.
        Engines whose writers take turns (SQLite) need nothing."""

    def lock_users(
        self,
        users: Iterable[str | None],
        records: Sequence[tuple[str, str]] = (),
        *,
        wait: bool = True,
    ) -> set[str]:
        """Inside a write: the users it touches (``users``, and those of ``records``, pairs
        of family and id), named before it writes. A layout without row locks across
        shards locks them (Citus: ``citus/_user_locks``); elsewhere row locks order the
        writes and this does nothing."""
        return {u or "" for u in users}

    def rounds(
        self, table: str, alias: str, where: str, params: Sequence[Any]
    ) -> Iterator[tuple[str, list[Any]]]:
        """``where`` split into rounds of at most :attr:`users_a_shared_write` users each
        (the users of the rows of ``table``, as ``alias``, it selects now), for work that
        commits a round at a time (the expiry purge); here one round, unchanged."""
        yield where, list(params)

    users_a_shared_write: int | None = None
    """The most users a shared write may lock one by one (:meth:`lock_users`), None for no
    limit: a write naming more takes the store-wide lock instead (a longer one is refused
    with a ValueError, nothing written)."""

    def lock_linked(  # noqa: B027 - optional hook, nothing by default
        self, where: str, params: Sequence[Any], *, wait: bool = True
    ) -> None:
        """Inside a delete, before its first statement: :meth:`lock_users` for the users of
        the records ``r`` that ``where`` selects and of the records linked to them, in one
        call (a delete changes the links' other ends). Nothing here (row locks)."""

    def lock_where(
        self, table: str, alias: str, where: str, params: Sequence[Any], *, wait: bool = True
    ) -> set[str] | None:
        """Inside a write: :meth:`lock_users` for the users of the rows ``where`` selects in
        ``table`` (as ``alias``); the users held, None for all (nothing to lock here)."""
        return None

    def locked_where(
        self,
        table: str,
        alias: str,
        where: str,
        params: Sequence[Any],
        *,
        wait: bool = True,
    ) -> tuple[str, list[Any]]:
        """:meth:`lock_where`, and ``where`` confined to the users held (unchanged here: the
        statement's ``FOR_WRITE`` row locks do the work)."""
        return where, list(params)

    def chunks_leaving(self, chunk_ids: Sequence[int]) -> None:  # noqa: B027 - optional hook
        """Inside a write, before chunk rows are deleted: what hangs off them in the engine
        goes first (PostgreSQL: the approximate index's queue and graph rows, so a delete
        never holds a chunk row the indexer waits for while it waits on the indexer)."""

    def ids_leaving(self, ids: Sequence[tuple[str, str]]) -> None:  # noqa: B027 - optional
        """Inside a write: the records of these ``(id, family)`` were deleted (a distributed
        layout frees their ids in its store-wide index of ids)."""

    def forget_inside(self) -> None:  # noqa: B027 - optional hook, nothing by default
        """Inside a forgetting delete, after its rows went: what the engine keeps of deleted
        rows beside them goes too (SQLite: the old segments of its full-text indexes)."""

    def forget_after(self) -> None:  # noqa: B027 - optional hook, nothing by default
        """After a forgetting delete committed: the engine's other copies of the old pages
        go (SQLite: the WAL is checkpointed and truncated)."""

    deletes_leave_bytes = False
    """Whether deleted rows' bytes stay in the table files until :meth:`vacuum` runs."""

    def vacuum(self) -> list[str]:
        """Rewrite the store's tables so no byte of a deleted row stays in their files;
        returns what was rewritten. Runs outside any transaction."""
        raise NotImplementedError

    def note_schema_version(self, version: int) -> None:  # noqa: B027 - optional hook
        """The version of the schema this store works on (older than this SDK's only when
        opened without upgrading it)."""

    keyword_hits_scoped = False
    """Whether :meth:`keyword_hits_sql` narrows to the exact scope inside the full-text engine
    (then the store may join only its best-scored chunks to their records)."""

    @abstractmethod
    def keyword_hits_sql(
        self, terms: list[str], exact: Mapping[str, str | None]
    ) -> tuple[str, list[Any]]:
        """A subquery with one parameter yielding ``(cid, score)`` rows (higher = better);
        it may pre-filter on the ``exact`` scope (the store filters exactly again)."""

    @abstractmethod
    def compile_filter(self, flt: dict[str, Any], column: str) -> tuple[str, list[Any]]:
        """A boolean SQL expression for a validated metadata filter over ``column``."""

    def json_as_text(self, column: str) -> str:
        """A select-list item reading JSON ``column`` as text, so the store decodes it (and
        can decode values of any depth); SQLite stores JSON as text already."""
        return column

    def select_list(self, columns: str, json_columns: Sequence[str]) -> str:
        """``columns`` (comma-separated) with each of ``json_columns`` read as text."""
        return ", ".join(
            self.json_as_text(c) if c in json_columns else c
            for c in (part.strip() for part in columns.split(","))
        )

    def vector_to_db(self, vector: NDArray[np.float32]) -> Any:
        return np.ascontiguousarray(vector, dtype="<f4").tobytes()

    def vector_read_sql(self, column: str) -> str:
        """The select-list item that reads a vector column for :meth:`vectors_from_db`."""
        return column

    def vectors_from_db(self, blobs: Sequence[Any], dim: int) -> NDArray[np.float32]:
        if not blobs:
            return np.empty((0, dim), dtype=np.float32)
        return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim).copy()

    def changed_externally(self) -> bool:
        """True when another connection committed since this one last looked."""
        return False

    def shared_writes_key(self) -> Any:
        """What names the database for the write queue this process's stores on it share
        (see ``_group_commit``), or None: this store queues its writes alone."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Close what this dialect opened (never a caller-owned connection)."""


LocalScores = Callable[[list[str]], Sequence[tuple[int, float]] | None]
"""Scores a keyword query's stems in process, with the statistics of the rows it holds (None:
it no longer holds them, the engine scores)."""


def chunked(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]

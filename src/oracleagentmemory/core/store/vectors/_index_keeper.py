"""The in-process vector index and how it stays exact across processes.

Engines without native vector search (SQLite) rank vectors in process, over
:class:`~._vector_index.VectorIndex`. The index knows the committed state it reflects
(``(instance, generation)`` of the engine's change log): writes of this store apply their
rows to it after commit (:meth:`IndexKeeper.write`), and reads first replay what other
processes committed since (:meth:`IndexKeeper.catch_up`), in time proportional to the
change. A large index is snapshotted beside a SQLite file so the next process maps it
instead of reading every vector back.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.core.store._dialect import TooManyUsers, chunked
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store.schema._rows import PlannedRecord
from oracleagentmemory.core.store.vectors._vector_index import IndexRow, VectorIndex

log = logging.getLogger("oracleagentmemory.store")

SNAPSHOT_MIN_ROWS = 10000
"""Indexes at least this large are snapshotted beside a SQLite file for fast reopening."""
CATCH_UP_MAX_ROWS = 50_000
"""Catching up on more records than this rebuilds the in-process index instead."""

T = TypeVar("T")


class RowColumns:
    """Rows of :meth:`IndexKeeper.rows_sql`, column by column, their vectors unit length."""

    __slots__ = ("meta", "vectors")

    def __init__(self, vectors: NDArray[np.float32], meta: tuple[Sequence[Any], ...]) -> None:
        self.vectors = vectors
        self.meta = meta
        """rids, record types, users, agents, threads, valid flags, expiries, seqs."""

    def __len__(self) -> int:
        return int(self.vectors.shape[0])


def index_rows_of(rid: int, rec: PlannedRecord, expires_at: float | None) -> list[IndexRow]:
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


class IndexKeeper:
    """Owns the in-process index (None until a search needs it) and the state it reflects."""

    def __init__(self, core: StoreCore) -> None:
        self._core = core
        self.index: VectorIndex | None = None
        self.state: tuple[str, int] | None = None
        """(instance, generation) of the committed state ``index`` reflects."""
        self._own_generations: set[int] = set()
        """Generations this store committed (and applied to its index) past its index's
        state, while another process's earlier commit held that state back: catching up
        skips them instead of re-reading this process's own rows."""
        self._saved_stamp: str | None = None
        self._built_at = 0
        """The generation the index (and so any graph in it) was built or loaded at."""

    @contextmanager
    def write(self, shared: bool = False) -> Iterator[None]:
        """A write transaction that keeps the in-process index's state exact.

        The caller applies its own changes to the index after the commit. When nobody else
        committed since the state the index reflects, the index then reflects the new
        generation; otherwise its state stays where it was, the new generation is noted as
        this store's own, and the next read replays the log from there but for its own
        generations (replaying a rid is idempotent: its rows are re-read), so writers never
        pay for other processes' writes and readers never re-read their own.
        """
        d = self._core.dialect
        with d.transaction(shared):
            yield
        state = self.state
        if self.index is not None and state is not None and d.committed_generation is not None:
            if d.tx_base_generation == state[1]:
                self.state = (state[0], d.committed_generation)
            elif d.committed_generation > max(state[1], d.tx_base_generation or 0):
                # Only a commit that moved the generation is this store's own: a write that
                # changed nothing "commits" the generation it read, another store's.
                self._own_generations.add(d.committed_generation)

    def shared_else_store_wide(self, body: Callable[[], T]) -> T:
        """``body`` in a shared :meth:`write`, run again store-wide when it finds more users
        than a shared write may lock (:class:`TooManyUsers`, Citus): the first attempt was
        rolled back, so ``body`` keeps its state inside itself."""
        try:
            with self.write(shared=True):
                return body()
        except TooManyUsers:
            with self.write(shared=False):
                return body()

    def add(self, rows: builtins.list[IndexRow]) -> None:
        """After a commit: index the rows this store wrote (nothing while no index)."""
        if self.index is not None:
            self.index.add(rows)

    def remove(self, rids: Iterable[int]) -> None:
        """After a commit: forget the records this store deleted."""
        if self.index is not None:
            self.index.remove(rids)

    def refresh(self, rids: builtins.list[int]) -> None:
        """Bring the cached vectors of ``rids`` in step with the database after a commit."""
        if self.index is None or not rids:
            return
        self.index.remove(rids)
        for part in chunked(rids, 500):
            marks = ",".join("?" * len(part))
            self.load_rows(self.index, f" AND c.rid IN ({marks})", builtins.list(part))

    def sync(self) -> None:
        """Catch up on what other processes committed since we looked (reads only)."""
        d = self._core.dialect
        if not d.changed_externally() or self.index is None:
            return
        with d.snapshot():  # the state and the rows read describe one state
            self.catch_up()

    def catch_up(self, *, rebuild_above: int = CATCH_UP_MAX_ROWS) -> None:
        """Apply the change log since the state the index reflects, in time proportional to
        the change; drop the index (rebuilt on next use) when the log cannot tell."""
        d = self._core.dialect
        index, mine = self.index, self.state
        state = d.read_state()
        if index is None:
            return
        if state is None or mine is None or state[0] != mine[0] or mine[1] < state[2]:
            self.drop()  # another store instance, or further behind than the log
            return
        if state[1] == mine[1]:
            return
        ranges = d.changes_since(mine[1], state[1], self._own_generations)
        if ranges is None or sum(hi - lo + 1 for lo, hi in ranges) > rebuild_above:
            self.drop()
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
            self.load_rows(index, f" AND c.rid IN ({marks})", part)
        self._caught_up_to(mine[0], state[1])

    def _caught_up_to(self, instance: str, generation: int) -> None:
        self.state = (instance, generation)
        self._own_generations = {g for g in self._own_generations if g > generation}

    def drop(self) -> None:
        """Forget the index (rebuilt from the database on next use)."""
        if self.index is not None:
            self.index.ann_close()  # its background graph work is of no use any more
        self.index = None
        self.state = None
        self._own_generations = set()

    def ensure(self) -> VectorIndex:
        """The index, caught up; built (or mapped from a snapshot) on first use."""
        self.sync()
        core = self._core
        d = core.dialect
        if self.index is None:
            assert core.vector_dim is not None
            snapshot = d.index_snapshot_dir()
            with d.snapshot():  # the state and the rows describe one state
                state = d.read_state()
                loaded = None
                if state is not None and snapshot is not None:
                    loaded = VectorIndex.load(snapshot, core.vector_dim)
                if loaded is not None and state is not None:
                    # A snapshot of an earlier state is brought forward from the change log.
                    instance, _, gen = loaded[1].rpartition(":")
                    if (
                        instance == state[0]
                        and gen.isdigit()
                        and max(state[2], self.forgotten_at()) <= int(gen) <= state[1]
                    ):
                        self.index, self.state = loaded[0], (instance, int(gen))
                        self._built_at = int(gen)
                        self._saved_stamp = loaded[1]
                        self.catch_up()
                if self.index is None:
                    self.index = self.build()
                    self.state = None if state is None else (state[0], state[1])
                    self._built_at = 0 if state is None else state[1]
            index = self.index
            if (
                len(index) >= SNAPSHOT_MIN_ROWS
                and snapshot is not None
                and not (snapshot / "index.json").exists()
            ):
                # The first build of a large store leaves a snapshot for the next process;
                # later ones are refreshed when this store closes.
                self.save(index)
        return self.index

    def build(self) -> VectorIndex:
        """Read every vector of the store into a fresh index."""
        assert self._core.vector_dim is not None
        index = VectorIndex(self._core.vector_dim)
        self.load_rows(index, "")
        index.cluster()
        return index

    def load_rows(self, index: VectorIndex, where: str, params: Sequence[Any] = ()) -> None:
        """Add the chunks that have vectors (and match ``where``) to ``index``."""
        self.add_rows(index, self._core.dialect.execute(self.rows_sql(where), params))

    def rows_sql(self, where: str) -> str:
        """The statement :meth:`load_rows` reads with (its rows go to :meth:`add_rows`)."""
        d = self._core.dialect
        t = d.tables
        vector = d.vector_read_sql("c.vector")
        return (
            f"SELECT c.rid, {vector}, r.record_type, r.user_id, r.agent_id, r.thread_id,"
            f" r.status, r.expires_at, r.seq_no FROM {t.chunks} c"
            f" JOIN {t.records} r ON r.rid = c.rid"
            f" WHERE c.vector IS NOT NULL{where} ORDER BY c.cid"
        )

    def add_rows(self, index: VectorIndex, rows: Sequence[Sequence[Any]]) -> None:
        """Add rows :meth:`rows_sql` read to ``index``."""
        self.add_columns(index, self.columns_of(rows, index.dim))

    def columns_of(self, rows: Sequence[Sequence[Any]], dim: int) -> RowColumns:
        """Rows :meth:`rows_sql` read, as the columns :meth:`add_columns` appends (the
        vectors parsed and normalised): the work that needs no lock on the index."""
        if not rows:
            return RowColumns(np.empty((0, dim), dtype=np.float32), ())
        valid = RecordStatus.VALID.value
        columns = builtins.list(zip(*rows, strict=True))
        vectors = self._core.dialect.vectors_from_db(columns[1], dim)
        if not vectors.flags.writeable:
            vectors = vectors.copy()
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        np.divide(vectors, norms, out=vectors)
        meta = (*columns[0:1], *columns[2:6], [status == valid for status in columns[6]])
        return RowColumns(vectors, (*meta, columns[7], columns[8]))

    def add_columns(self, index: VectorIndex, columns: RowColumns) -> None:
        """Append rows :meth:`columns_of` made to ``index``."""
        if not len(columns):
            return
        rids, types, users, agents, threads, valid, expires, seqs = columns.meta
        index.add_columns(
            columns.vectors, rids, types, users, agents, threads, valid, expires,
            unit=True, seqs=seqs,
        )  # fmt: skip

    def save(self, index: VectorIndex) -> None:
        """Snapshot the index with the state it reflects (coherent with the change log)."""
        snapshot = self._core.dialect.index_snapshot_dir()
        state = self.state
        stamp = None if state is None else f"{state[0]}:{state[1]}"
        if stamp is None or snapshot is None:
            return
        if stamp == self._saved_stamp and not index.ann_unsaved:
            return
        forgotten = self.forgotten_at()
        if state is not None and state[1] < forgotten:
            return  # the index predates a forget it has not caught up with
        try:
            # A graph built before the last forget keeps the vectors it deleted: left out.
            index.save(
                snapshot,
                stamp,
                self._core.dialect.side_file_mode(),
                with_graph=self._built_at >= forgotten,
            )
            self._saved_stamp = stamp
        except OSError as exc:  # a read-only directory only costs the next open some time
            log.warning("could not save the vector index snapshot to %s: %s", snapshot, exc)

    def close(self) -> None:
        """On close: snapshot a large index (exactly the state it reflects), then drop it."""
        index = self.index
        if index is not None and len(index) >= SNAPSHOT_MIN_ROWS:
            self.sync()  # a snapshot never holds rows another process deleted since
            if self.index is not None:
                self.save(self.index)
        self.drop()

    # ------------------------------------------------------------------ forgetting

    def forgotten_at(self) -> int:
        """The generation of the newest forgetting delete (0: none, or no snapshots)."""
        d = self._core.dialect
        if d.index_snapshot_dir() is None:
            return 0
        rows = d.execute(f"SELECT value FROM {d.tables.meta} WHERE key = 'forgotten_at'")
        return int(rows[0][0]) if rows else 0

    def mark_forgotten(self) -> None:
        """Inside a forgetting delete: snapshots of earlier states, and graphs built before
        it, are never loaded or saved again (see :meth:`save`)."""
        d = self._core.dialect
        if d.index_snapshot_dir() is None or d.tx_base_generation is None:
            return
        d.execute(
            f"INSERT INTO {d.tables.meta} (key, value) VALUES ('forgotten_at', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [str(d.tx_base_generation + 1)],
        )

    def drop_snapshot(self) -> None:
        """After a forgetting delete: the saved snapshot's files go (the next process builds
        from the database; this one saves a clean snapshot when it closes)."""
        directory = self._core.dialect.index_snapshot_dir()
        self._saved_stamp = None
        if directory is None or not directory.is_dir():
            return
        for path in directory.iterdir():
            if path.is_file():
                path.unlink(missing_ok=True)

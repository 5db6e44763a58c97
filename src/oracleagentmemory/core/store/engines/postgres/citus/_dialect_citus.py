"""The PostgreSQL dialect of a store whose tables are distributed by user on Citus.

A :class:`~.._postgres.PostgresDialect` becomes a :class:`CitusUserDialect` when the store's
meta table says ``layout = citus:user`` (``_layout``); single-node statements are untouched.
What differs here is what Citus's rules require of the statements (docs/scaling.md, section
3): every insert names ``shard_user`` (the row's user, ``''`` for none), taken from the
record a row belongs to; ids come from a statement of their own (a statement routed to a
worker cannot call the coordinator's sequences); record ids are claimed in ``record_ids``,
which keeps them unique across users; joins between a user's tables carry ``shard_user``;
there is no change log (transaction ids are per node) and no approximate index kept behind
the writes (a user's search ranks that user's rows exactly on their shard); the keyword
totals are rows per user, moved by the writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from oracleagentmemory.core.store._dialect import KeywordRow, chunked
from oracleagentmemory.core.store.engines.postgres import _postgres_words as words
from oracleagentmemory.core.store.engines.postgres._postgres import (
    ROWS_PER_STATEMENT_PARAMS,
)
from oracleagentmemory.core.store.engines.postgres._postgres_errors import as_clash
from oracleagentmemory.core.store.engines.postgres.citus._layout import (
    CITUS_LAYOUT,
    DIALECTS,
    SHARD_COLUMN,
    record_ids_table,
)
from oracleagentmemory.core.store.engines.postgres.citus._user_locks import UserLocks

SHARDS_KEPT = 10_000
"""Records whose shard a thread remembers (then it forgets them all and reads again)."""
RecordShard = tuple[str, "str | None", str]
"""A record's ``shard_user``, ``user_id`` and ``record_type``."""


class CitusUserDialect(UserLocks):
    """PostgreSQL on a Citus coordinator, the store's tables distributed by user."""

    FOR_WRITE = ""
    # Citus locks rows only in a statement routed to one shard: in place of the row locks
    # that order concurrent writes on one node, an ordinary write holds the store's lock
    # shared and each user's it touches (``_user_locks``), on the coordinator.
    ranks_approximately = False
    # Citus refuses VOLATILE functions (clock_timestamp) in a distributed UPDATE's SET and
    # WHERE (the pending jobs' leases): the statement's own time is STABLE.
    NOW_S = "extract(epoch FROM statement_timestamp())::float8"

    def transaction(self, shared: bool = False) -> AbstractContextManager[None]:
        return self._user_write(shared, super().transaction(shared))

    def opening(self) -> AbstractContextManager[None]:
        # Opening writes meta rows (no user's) and purges (each user's, skipping the busy).
        return self._user_write(True, super().opening(), named=True)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._checked(sql):
            return super().execute(sql, params)

    def execute_nowait(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._checked(sql):
            super().execute_nowait(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._checked(sql):
            super().executemany(sql, rows)

    def joined(self, left: str, right: str) -> str:
        return f" AND {left}.{SHARD_COLUMN} = {right}.{SHARD_COLUMN}"

    def user_shard(self, alias: str, user: str | None) -> tuple[str, list[Any]]:
        return f" AND {alias}.{SHARD_COLUMN} = ?", [user or ""]

    def placed(
        self,
        columns: str,
        rows: Sequence[Sequence[Any]],
        *,
        users: Sequence[str | None] | None = None,
        rid_at: int | None = None,
    ) -> tuple[str, list[Sequence[Any]], str]:
        if users is None:
            if rid_at is None:
                raise TypeError("placed: give users or rid_at")
            of = self.shards_of([row[rid_at] for row in rows])
            users = [of[int(row[rid_at])][0] for row in rows]
        shard = f"{SHARD_COLUMN}, "
        placed = [(user or "", *row) for user, row in zip(users, rows, strict=True)]
        return f"{shard}{columns}", list(placed), shard

    def ids_table(self) -> str:
        return record_ids_table(self.tables)  # distributed by id: one shard an id

    def note_schema_version(self, version: int) -> None:
        super().note_schema_version(version)
        self.change_log.enabled = False  # no change log: transaction ids are per node

    @property
    def _hand_totals(self) -> bool:
        return True  # no statement triggers on a distributed table

    def insert_at_once(self, *args: Any, **kwargs: Any) -> Any:
        return None  # nextval cannot run inside a statement routed to a worker

    def id_head_sql(self, records: int, chunks: int) -> tuple[list[str], list[Any]]:
        row = self.execute(
            f"SELECT (SELECT array_agg(nextval('{self.rid_seq}')) FROM generate_series(1, ?)),"
            f" (SELECT array_agg(nextval('{self.cid_seq}')) FROM generate_series(1, ?))",
            [records, chunks],
        )[0]
        return ["?::bigint[]", "?::bigint[]"], [list(row[0] or ()), list(row[1] or ())]

    # ------------------------------------------------------------------ the rows' shards

    def _known(self) -> dict[int, RecordShard]:
        """Records' shards this thread has seen (a record's user never changes; a rid is
        never reused), at most ``SHARDS_KEPT``."""
        known: dict[int, RecordShard] | None = getattr(self._local, "shards", None)
        if known is None or len(known) > SHARDS_KEPT:
            known = self._local.shards = {}
        return known

    def shards_of(self, rids: Sequence[int]) -> dict[int, RecordShard]:
        """Each record's shard, user and type (those this write inserted, then the table)."""
        known = self._known()
        missing = sorted({int(r) for r in rids} - set(known))
        if missing:
            for rid, shard, user, rtype in self.execute(
                f"SELECT rid, {SHARD_COLUMN}, user_id, record_type FROM {self.tables.records}"
                " WHERE rid = ANY(?)",
                [missing],
            ):
                known[int(rid)] = (str(shard), user, str(rtype))
        return known

    def insert_rows(
        self, table: str, columns: str, rows: Sequence[Sequence[Any]], batch_size: int
    ) -> None:
        names = [c.strip() for c in columns.split(",")]
        if table == self.tables.records:
            user, rid, family, rtype, ident = (
                names.index(n) for n in ("user_id", "rid", "family", "record_type", "id")
            )
            known = self._known()
            for row in rows:
                known[int(row[rid])] = (row[user] or "", row[user], str(row[rtype]))
            self._claim_ids([(row[ident], row[family], row[user] or "") for row in rows])
            shards = [row[user] or "" for row in rows]
        elif "user_id" in names:
            shards = [row[names.index("user_id")] or "" for row in rows]
        elif "rid" in names:
            at = names.index("rid")
            of = self.shards_of([row[at] for row in rows])
            shards = [of[int(row[at])][0] for row in rows]
        else:
            raise NotImplementedError(f"{table}: no user to place its rows by")
        super().insert_rows(
            table,
            f"{SHARD_COLUMN}, {columns}",
            [(shard, *row) for shard, row in zip(shards, rows, strict=True)],
            batch_size,
        )

    def _claim_ids(self, ids: Sequence[tuple[Any, Any, str]]) -> None:
        """Record ids are unique per store: each is claimed on its own shard first."""
        import psycopg

        table = record_ids_table(self.tables)
        for part in chunked(ids, 1000):
            try:
                self.execute(
                    f"INSERT INTO {table} (id, family, {SHARD_COLUMN}) VALUES"
                    f" {','.join(['(?, ?, ?)'] * len(part))}",
                    [v for row in part for v in row],
                )
            except psycopg.errors.UniqueViolation as exc:
                raise as_clash(exc) from exc

    def ids_leaving(self, ids: Sequence[tuple[str, str]]) -> None:
        if ids:  # each on its id's shard
            self.executemany(
                f"DELETE FROM {record_ids_table(self.tables)} WHERE id = ? AND family = ?", ids
            )

    def insert_chunks(
        self,
        rows: Sequence[Sequence[Any]],
        keyword: Sequence[KeywordRow] | None,
        batch_size: int,
    ) -> None:
        t = self.tables
        of = self.shards_of([row[1] for row in rows])
        scope = {row[0]: (row[4], row[5], row[6]) for row in keyword or ()}
        per = max(1, min(batch_size, ROWS_PER_STATEMENT_PARAMS // 8))
        totals: dict[str, list[int]] = {}
        for part in chunked(rows, per):
            chunk_rows, kw_rows = [], []
            for cid, rid, index, text, vector in part:
                shard, user, rtype = of[int(rid)]
                chunk_rows += [shard, cid, rid, index, text, vector, user, rtype]
                if cid in scope:
                    tsv, length = self.words.row(text, scope[cid])
                    if tsv is not None:
                        kw_rows += [shard, cid, rid, user, tsv, length]
                        total = totals.setdefault(shard, [0, 0])
                        total[0] += 1
                        total[1] += int(length or 0)
            self.execute_nowait(
                f"INSERT INTO {t.chunks} ({SHARD_COLUMN}, cid, rid, chunk_index, chunk_text,"
                " vector, user_id, record_type) VALUES"
                f" {','.join(['(?, ?, ?, ?, ?, ?::vector, ?, ?)'] * (len(chunk_rows) // 8))}",
                chunk_rows,
            )
            if kw_rows:
                self.execute_nowait(
                    f"INSERT INTO {t.kw} ({SHARD_COLUMN}, cid, rid, user_id, tsv, tsv_len)"
                    f" VALUES {','.join(['(?, ?, ?, ?, ?::tsvector, ?)'] * (len(kw_rows) // 6))}",
                    kw_rows,
                )
        for shard, (n, tokens) in totals.items():
            self.move_user_totals(shard, n, tokens)

    def move_user_totals(self, shard: str, rows: int, tokens: int) -> None:
        """Inside a write: ``shard``'s keyword rows grew by ``rows`` rows of ``tokens``."""
        totals = self.tables.kw_totals
        if rows or tokens:
            self.execute_nowait(
                f"INSERT INTO {totals} ({SHARD_COLUMN}, shard, rows, tokens)"
                f" VALUES (?, pg_backend_pid() % {words.TOTAL_SHARDS}, ?, ?)"
                f" ON CONFLICT ({SHARD_COLUMN}, shard) DO UPDATE"
                f" SET rows = {totals}.rows + excluded.rows,"
                f" tokens = {totals}.tokens + excluded.tokens",
                [shard, rows, tokens],
            )

    def keyword_index_add(self, rows: Sequence[KeywordRow]) -> None:
        values = [(r[0], *self.words.row(r[3], (r[4], r[5], r[6]))) for r in rows if r[3]]
        if not values:
            return
        t = self.tables
        self.keyword_index_remove([v[0] for v in values])  # an upsert: the totals move too
        marks = ",".join(["(?::bigint, ?::tsvector, ?::int)"] * len(values))
        moved = self.execute(
            f"INSERT INTO {t.kw} ({SHARD_COLUMN}, cid, rid, user_id, tsv, tsv_len)"
            f" SELECT c.{SHARD_COLUMN}, v.cid, c.rid, c.user_id, v.tsv, v.len"
            f" FROM (VALUES {marks}) v (cid, tsv, len) JOIN {t.chunks} c ON c.cid = v.cid"
            f" RETURNING {SHARD_COLUMN}, tsv_len",
            [x for row in values for x in row],
        )
        self._move_all(moved, 1)

    def _move_all(self, rows: Sequence[Sequence[Any]], sign: int) -> None:
        """Move the totals by ``rows`` (``shard_user, tsv_len``) added (1) or removed (-1)."""
        totals: dict[str, list[int]] = {}
        for shard, length in rows:
            total = totals.setdefault(str(shard), [0, 0])
            total[0] += sign
            total[1] += sign * int(length or 0)
        for shard, (n, tokens) in totals.items():
            self.move_user_totals(shard, n, tokens)

    def keyword_index_remove(self, chunk_ids: Sequence[int]) -> None:
        if chunk_ids:
            self._move_all(
                self.execute(
                    f"DELETE FROM {self.tables.kw} WHERE cid = ANY(?)"
                    f" RETURNING {SHARD_COLUMN}, tsv_len",
                    [list(chunk_ids)],
                ),
                -1,
            )

    def keyword_index_rebuild(self) -> None:
        self.execute(f"DELETE FROM {self.tables.kw_totals}")
        super().keyword_index_rebuild()

    def neighbour_rows_sql(self, rids: Sequence[int], before: int, after: int) -> tuple[str, Any]:
        # A thread's messages sit on its user's shard: every join stays on one shard.
        t, u = self.tables, SHARD_COLUMN
        sql = (
            f"FROM (SELECT DISTINCT n.{u}, n.rid FROM {t.records} h JOIN {t.records} n"
            f" ON n.{u} = h.{u} AND n.thread_id = h.thread_id WHERE h.rid = ANY(?::bigint[])"
            " AND n.family = 'message' AND n.seq_no BETWEEN h.seq_no - ? AND h.seq_no + ?) nb"
            f" JOIN {t.records} r ON r.{u} = nb.{u} AND r.rid = nb.rid"
            f" JOIN {t.chunks} c ON c.{u} = r.{u} AND c.rid = r.rid WHERE TRUE"
        )
        return sql, [list(rids), before, after]

    def note_changed(self, rids: Sequence[int] | None) -> None:
        return None  # no change log, no approximate index's queue

    def opened(self) -> None:
        return None  # no indexer: nothing is queued for an approximate index

    def ann_catch_up(self) -> None:
        return None  # no approximate index: nothing to catch up


DIALECTS[CITUS_LAYOUT] = CitusUserDialect

"""PostgreSQL: a plain insert as ONE statement, one round trip, no transaction block.

The usual write (records with their chunks, no thread to claim, no links, no follow-up
work, run as the connection's own role) needs nothing from the database before it
inserts: ids come from the sequences inside the statement, a clash on a record id is the
``UNIQUE (family, id)`` key's, and the rest is written by data-modifying CTEs that feed on
each other's ``RETURNING`` rows. So it is one statement in autocommit mode, atomic on its
own, with the same text for every write of the same shape (psycopg prepares it after a few
uses): the store's advisory lock in shared mode (taken before the first row is written,
so exclusive writers keep their serial semantics), the records, their chunks, the
approximate index's queue, the keyword rows and the change-log row. It returns
each record's ordinal and rid, and (for a store that has not seen the keyword index yet)
whether the index exists now.

Writes this does not cover (messages, thread claims, attachments' bytes, links,
follow-up statements, end users or row security, schemas older than 12) take the pipelined
transaction of ``_writes.Writer.insert``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from oracleagentmemory.core._shared._end_user import current_end_user
from oracleagentmemory.core.store.engines.postgres._postgres_errors import as_clash

RECORD_CASTS = (
    "text", "text", "text", "text", "text", "bigint", "text", "text", "text", "text", "text",
    "json", "text", "float8", "jsonb", "int",
)  # fmt: skip
"""The types of a record row after its rid, in ``RECORD_COLUMNS`` order."""
RECORD_COLUMNS = (
    "family, record_type, id, content, role, seq_no, thread_id, user_id, agent_id, event_ts,"
    " created_at, metadata, status, expires_at, extra, ttl_days"
)
HISTORY_CASTS = ("text", "text", "float8")
"""After a record row: who writes it and its sources (JSON), for its first version, and
when it became true (``schema/_validity``)."""
CHUNK_CASTS = ("int", "int", "text", "vector", "tsvector", "int")
"""A chunk row: its record's ordinal, chunk index, text, vector, keyword tsvector, length."""
STATEMENTS_KEPT = 256
"""Statement texts a store keeps, by shape (row counts and options)."""
MAX_PARAMS = 30_000
"""Parameters of one statement (PostgreSQL takes at most 65,535); a larger write takes the
pipelined path, whose inserts are cut into parts."""


def params_needed(records: int, chunks: int) -> int:
    return records * (len(RECORD_CASTS) + len(HISTORY_CASTS) + 1) + chunks * len(CHUNK_CASTS) + 8


def _values(casts: Sequence[str], rows: int) -> str:
    one = "(" + ", ".join(f"%s::{cast}" for cast in casts) + ")"
    return ", ".join([one] * rows)


def insert_sql(
    tables: Any,
    rid_seq: str,
    cid_seq: str,
    *,
    records: int,
    chunks: int,
    keyword: bool,
    log: bool,
    probe: str | None,
    history: bool = False,
    validity: bool = False,
) -> str:
    """The statement for ``records`` record rows and ``chunks`` chunk rows (``%s``
    placeholders; the parameters: the lock key, then :func:`insert_params`'s,
    then the probe's). ``keyword``: chunk rows carry keyword rows; ``log``: the change log
    gets its row; ``probe``: a select-list item answered beside each returned row;
    ``history``: each memory gets its first version (``schema/_history``); ``validity``:
    records get their ``valid_from`` (``schema/_validity``)."""
    t = tables
    columns = f"{RECORD_COLUMNS}, valid_from" if validity else RECORD_COLUMNS
    parts = [
        "WITH lk AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(%s::bigint) AS ok)",
        f"v (o, {RECORD_COLUMNS}, actor, sources, valid_from) AS"
        f" (VALUES {_values(('int', *RECORD_CASTS, *HISTORY_CASTS), records)})",
        # ORDER BY: nextval runs after the sort (PostgreSQL postpones volatile items), so
        # rids follow the write's order, as on SQLite.
        f"r AS (INSERT INTO {t.records} (rid, {columns}) SELECT nextval('{rid_seq}'),"
        f" {', '.join('v.' + c.strip() for c in columns.split(','))}"
        " FROM v CROSS JOIN lk ORDER BY v.o RETURNING rid, family, id, user_id, record_type)",
        "ro AS (SELECT v.o, r.rid, r.user_id, r.record_type FROM r JOIN v"
        " ON v.family = r.family AND v.id = r.id)",
    ]
    if chunks:
        parts += [
            f"cv (o, i, text, vector, tsv, len) AS (VALUES {_values(CHUNK_CASTS, chunks)})",
            f"c AS (INSERT INTO {t.chunks} (cid, rid, chunk_index, chunk_text, vector, user_id,"
            f" record_type) SELECT nextval('{cid_seq}'), ro.rid, cv.i, cv.text, cv.vector,"
            " ro.user_id, ro.record_type FROM cv JOIN ro ON ro.o = cv.o ORDER BY cv.o, cv.i"
            " RETURNING cid, rid, chunk_index, vector IS NOT NULL AS has_vector, user_id)",
            f"q AS (INSERT INTO {t.ann_queue} (cid) SELECT cid FROM c WHERE has_vector)",
        ]
        if keyword:
            parts.append(
                f"k AS (INSERT INTO {t.kw} (cid, rid, user_id, tsv, tsv_len) SELECT c.cid,"
                " c.rid, c.user_id, cv.tsv, cv.len FROM c JOIN ro ON ro.rid = c.rid JOIN cv"
                " ON cv.o = ro.o AND cv.i = c.chunk_index WHERE cv.tsv IS NOT NULL)"
            )
    if history:
        parts.append(
            f"h AS (INSERT INTO {t.history} (memory_id, version, change, at, actor, record_type,"
            " user_id, agent_id, content, metadata, status, changed, sources) SELECT v.id,"
            f" COALESCE((SELECT MAX(x.version) FROM {t.history} x WHERE x.memory_id = v.id), 0)"
            " + 1, 'created', v.created_at, v.actor, v.record_type, v.user_id, v.agent_id,"
            " v.content, v.metadata, v.status, 'content,metadata,status', v.sources FROM v"
            " JOIN ro ON ro.o = v.o WHERE v.family = 'memory')"
        )
    if log:
        parts.append(
            f"l AS (INSERT INTO {t.changes} (rids) SELECT array_agg(rid ORDER BY rid) FROM r)"
        )
    extra = f", {probe}" if probe else ""
    return ",\n ".join(parts) + f"\nSELECT ro.o, ro.rid{extra} FROM ro"


def insert_params(
    records: Sequence[Sequence[Any]],
    chunks: Sequence[Sequence[Any]],
) -> list[Any]:
    """The rows' parameters in :func:`insert_sql`'s order (each record row prefixed by its
    ordinal, the index in ``records``)."""
    out: list[Any] = []
    for o, row in enumerate(records):
        out.append(o)
        out.extend(row)
    for row in chunks:
        out.extend(row)
    return out


def chunk_params(
    chunks: Sequence[tuple[int, int, str | None, Any, tuple[Any, Any, Any]]],
    words: Any,
    keyword: bool,
) -> list[tuple[Any, ...]]:
    """Chunk rows ``(ordinal, index, text, vector, scope)`` as :data:`CHUNK_CASTS` rows: the
    keyword tsvector and length from ``words`` (``_postgres_words.Words``) when ``keyword``."""
    out = []
    for o, i, text, vector, scope in chunks:
        tsv, length = words.row(text, scope) if keyword else (None, None)
        out.append((o, i, text, vector, tsv, length))
    return out


class Inserts:
    """What a store keeps for its one-statement inserts."""

    def __init__(self) -> None:
        self.statements: dict[tuple[Any, ...], str] = {}
        """Statement texts by shape."""
        self.row_security: bool | None = None
        """Whether row security applies to the pool's role (asked at the first insert)."""


def insert_at_once(
    d: Any,
    records: Sequence[Sequence[Any]],
    chunks: Sequence[tuple[int, int, str | None, Any, tuple[Any, Any, Any]]],
    *,
    keyword: bool,
    probe: bool,
) -> tuple[list[int], bool] | None:
    """:meth:`Dialect.insert_at_once` on PostgreSQL, ``d`` (None where the write needs the
    pipelined transaction: inside another write, as an end user, an old schema, or more
    parameters than one statement takes)."""
    if (
        getattr(d._local, "conn", None) is not None
        or current_end_user() is not None
        or getattr(d, "_version", 0) < 12
        or params_needed(len(records), len(chunks)) > MAX_PARAMS
    ):
        return None
    if d.inserts.row_security is None:  # asked once: the pool's login role does not change
        d.inserts.row_security = bool(
            d.execute("SELECT row_security_active(?::regclass)", [d.tables.records])[0][0]
        )
    if d.inserts.row_security:
        # Policies that check a chunk's record cannot see a record inserted by the same
        # statement: each write then goes in steps, in a transaction.
        return None
    probe_sql, probe_params = d.keyword_index_probe_sql() if probe else (None, [])
    shape = (
        len(records),
        len(chunks),
        keyword,
        d.change_log.enabled,
        probe,
        d.keeps_history,
        d.keeps_validity,
    )
    sql = d.inserts.statements.get(shape)
    if sql is None:
        if len(d.inserts.statements) >= STATEMENTS_KEPT:
            d.inserts.statements.clear()
        sql = d.inserts.statements[shape] = insert_sql(
            d.tables,
            d.rid_seq,
            d.cid_seq,
            records=len(records),
            chunks=len(chunks),
            keyword=keyword,
            log=d.change_log.enabled,
            probe=None if probe_sql is None else d._q(probe_sql),
            history=d.keeps_history,
            validity=d.keeps_validity,
        )
    params = [d._lock_key, *insert_params(records, chunk_params(chunks, d.words, keyword))]
    try:
        with d._pool.connection() as conn:
            rows = conn.execute(sql, [*params, *probe_params]).fetchall()
            d.note_commit(conn)  # where it ended, for a read replica (_postgres_replica)
    except psycopg.errors.UniqueViolation as exc:
        raise as_clash(exc) from exc
    except psycopg.errors.InsufficientPrivilege:
        # Row security switched on since it was asked (nothing was written): the steps of
        # the transaction say whether the write is refused.
        d.inserts.row_security = True
        return None
    if d.change_log.enabled:
        d.change_log.counted()
    d.indexer.wrote(sum(chunk[3] is not None for chunk in chunks), changed=len(records))
    rows.sort()
    return [int(row[1]) for row in rows], bool(probe and rows and rows[0][2])

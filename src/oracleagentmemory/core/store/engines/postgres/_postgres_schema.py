"""The PostgreSQL schema, version by version: the statements each migration runs
(``{name}`` placeholders filled by ``PostgresDialect._fmt``). Steps that depend on what a
store holds (the approximate index's dimension, keyword rows) run in
``PostgresDialect.migrate``."""

from __future__ import annotations


def _epoch(text: str) -> str:
    """SQL: the stored ISO time ``text`` as epoch seconds (without an offset: UTC)."""
    # No "?" in the pattern: the dialect reads it as a placeholder.
    zoned = f"{text} ~ '[T ][0-9:.]+(Z|[+-][0-9][0-9](:*[0-9][0-9])*)$'"
    return (
        f"EXTRACT(EPOCH FROM (CASE WHEN {zoned} THEN ({text})::timestamptz"
        f" ELSE ({text})::timestamp AT TIME ZONE 'UTC' END))"
    )


MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {records} (
            rid BIGINT PRIMARY KEY,
            family TEXT NOT NULL,
            record_type TEXT NOT NULL,
            id TEXT NOT NULL,
            content TEXT,
            role TEXT,
            seq_no BIGINT,
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            event_ts TEXT,
            created_at TEXT NOT NULL,
            metadata JSONB,
            status TEXT NOT NULL DEFAULT 'valid',
            expires_at DOUBLE PRECISION,
            extra JSONB,
            UNIQUE (family, id)
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_records_type ON {records} (record_type, rid)",
        "CREATE INDEX IF NOT EXISTS {p}_records_thread ON {records} (thread_id, family, seq_no)",
        "CREATE INDEX IF NOT EXISTS {p}_records_user ON {records} (user_id, family)",
        "CREATE INDEX IF NOT EXISTS {p}_records_agent ON {records} (agent_id, family)",
        "CREATE INDEX IF NOT EXISTS {p}_records_expiry ON {records} (expires_at)"
        " WHERE expires_at IS NOT NULL",
        """CREATE TABLE IF NOT EXISTS {chunks} (
            cid BIGINT PRIMARY KEY,
            rid BIGINT NOT NULL,
            chunk_index INTEGER NOT NULL,
            chunk_text TEXT,
            vector vector,
            tsv tsvector
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_chunks_rid ON {chunks} (rid)",
    ],
    2: [
        "CREATE TABLE IF NOT EXISTS {blobs} (rid BIGINT PRIMARY KEY, data BYTEA NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {relations} (
            id TEXT PRIMARY KEY,
            source_record_id TEXT NOT NULL,
            source_record_type TEXT NOT NULL,
            target_record_id TEXT NOT NULL,
            target_record_type TEXT NOT NULL,
            relation_type TEXT NOT NULL,
            opposite_relation_type TEXT NOT NULL,
            timestamp TEXT,
            metadata JSONB,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_relations_source"
        " ON {relations} (source_record_type, source_record_id)",
        "CREATE INDEX IF NOT EXISTS {p}_relations_target"
        " ON {relations} (target_record_type, target_record_id)",
    ],
    3: [
        """CREATE TABLE IF NOT EXISTS {sources} (
            rid BIGINT NOT NULL,
            message_id TEXT NOT NULL,
            PRIMARY KEY (rid, message_id)
        )""",
        "CREATE INDEX IF NOT EXISTS {p}_sources_message ON {sources} (message_id)",
        """CREATE TABLE IF NOT EXISTS {pending} (
            id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL,
            payload TEXT NOT NULL,
            owner TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )""",
    ],
    4: [
        "ALTER TABLE {records} ADD COLUMN IF NOT EXISTS ttl_days INTEGER",
        "CREATE TABLE IF NOT EXISTS {seq} (thread_key TEXT PRIMARY KEY, last_seq BIGINT NOT NULL)",
        "INSERT INTO {seq} (thread_key, last_seq) SELECT COALESCE(thread_id, ''), MAX(seq_no)"
        " FROM {records} WHERE family = 'message' GROUP BY COALESCE(thread_id, '')"
        " ON CONFLICT (thread_key) DO NOTHING",
    ],
    5: [],  # SQLite's user-word table is made with the keyword index
    6: [],  # ... and keyed by record in SQLite
    # The owner of every thread id (see _threads): the thread row's user where there is one,
    # else the user of the first record naming the thread.
    7: [
        "CREATE TABLE IF NOT EXISTS {owners} (thread_id TEXT PRIMARY KEY, user_id TEXT,"
        " agent_id TEXT)",
        "CREATE INDEX IF NOT EXISTS {p}_thread_owners_user ON {owners} (user_id)",
        "INSERT INTO {owners} (thread_id, user_id, agent_id) SELECT t.id, t.user_id, t.agent_id"
        " FROM {records} t WHERE t.family = 'thread'"
        " ON CONFLICT (thread_id) DO NOTHING",
        "INSERT INTO {owners} (thread_id, user_id, agent_id) SELECT r.thread_id, r.user_id,"
        " r.agent_id FROM {records} r WHERE r.rid IN (SELECT MIN(rid) FROM {records}"
        " WHERE thread_id IS NOT NULL GROUP BY thread_id)"
        " ON CONFLICT (thread_id) DO NOTHING",
    ],
    # Ids from sequences (no store-wide lock on the write path); the approximate index on a
    # side table filled behind the writes (_postgres_ann), so the chunks lose theirs.
    8: [
        "CREATE SEQUENCE IF NOT EXISTS {rid_seq}",
        "CREATE SEQUENCE IF NOT EXISTS {cid_seq}",
        "SELECT setval('{rid_seq}', COALESCE((SELECT MAX(rid) FROM {records}), 0) + 1, false)",
        "SELECT setval('{cid_seq}', COALESCE((SELECT MAX(cid) FROM {chunks}), 0) + 1, false)",
        "CREATE TABLE IF NOT EXISTS {ann} (cid BIGINT PRIMARY KEY"
        " REFERENCES {chunks} (cid) ON DELETE CASCADE, vector vector NOT NULL)",
        "CREATE TABLE IF NOT EXISTS {ann_queue} (cid BIGINT PRIMARY KEY"
        " REFERENCES {chunks} (cid) ON DELETE CASCADE)",
        "INSERT INTO {ann_queue} (cid) SELECT cid FROM {chunks} WHERE vector IS NOT NULL"
        " ON CONFLICT (cid) DO NOTHING",
        "DROP INDEX IF EXISTS {s}{p}_chunks_hnsw",
        # Keyword rows as SQLite's FTS5 tokenizes them, and BM25's totals (_postgres_words).
        "ALTER TABLE {chunks} ADD COLUMN IF NOT EXISTS tsv_len INTEGER",
        "CREATE TABLE IF NOT EXISTS {kw_totals} (shard INTEGER PRIMARY KEY,"
        " rows BIGINT NOT NULL, tokens BIGINT NOT NULL)",
    ],
    # A chunk carries its record's user and type (neither ever changes), so a user's vectors
    # sit together in one covering index: a scoped search reads them there, in a few pages,
    # instead of one heap page of each table per record (_vector_branch.sql_hits).
    9: [
        "ALTER TABLE {chunks} ADD COLUMN IF NOT EXISTS user_id TEXT,"
        " ADD COLUMN IF NOT EXISTS record_type TEXT",
        "UPDATE {chunks} c SET user_id = r.user_id, record_type = r.record_type"
        " FROM {records} r WHERE r.rid = c.rid",
        "CREATE INDEX IF NOT EXISTS {p}_chunks_user ON {chunks} (user_id, record_type)"
        " INCLUDE (rid, vector)",
    ],
    # Keyword rows on a narrow side table (the chunks' rows, vectors inline, are too wide
    # for the buffer cache): what migrate() moves there, then drops from the chunks.
    10: [
        "CREATE TABLE IF NOT EXISTS {kw} (cid BIGINT PRIMARY KEY"
        " REFERENCES {chunks} (cid) ON DELETE CASCADE, rid BIGINT NOT NULL, user_id TEXT,"
        " tsv tsvector NOT NULL, tsv_len INTEGER NOT NULL)",
    ],
    # The keyword totals kept by triggers on the keyword rows (_postgres_words.
    # totals_trigger_sql, run by migrate()), so no writer moves them by hand.
    11: [],
    # The change log in-process vector caches read (_postgres_changes, _user_vectors).
    12: [
        "CREATE TABLE IF NOT EXISTS {changes} (xid xid8 NOT NULL"
        " DEFAULT pg_current_xact_id(), rids BIGINT[])",
        "CREATE INDEX IF NOT EXISTS {p}_changes_xid ON {changes} (xid)",
    ],
    # A user's keyword rows found by their user: the in-process cache reads them so
    # (search._user_vectors), where it scanned the whole table.
    13: [
        "CREATE INDEX IF NOT EXISTS {p}_kw_user ON {kw} (user_id)",
    ],
    # Pending extraction work held by a lease in the database's time (store._leases); rows
    # of processes that predate it get one lease from now to finish or be taken over.
    14: [
        "ALTER TABLE {pending} ADD COLUMN IF NOT EXISTS lease_until DOUBLE PRECISION",
        "UPDATE {pending} SET lease_until = extract(epoch FROM clock_timestamp()) + 15"
        " WHERE lease_until IS NULL",
    ],
    # Every version of every memory (schema/_history), and when a record last changed; each
    # memory there now gets its first version from its row.
    15: [
        "ALTER TABLE {records} ADD COLUMN IF NOT EXISTS updated_at TEXT",
        """CREATE TABLE IF NOT EXISTS {history} (
            memory_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            change TEXT NOT NULL,
            at TEXT NOT NULL,
            actor TEXT,
            record_type TEXT,
            user_id TEXT,
            agent_id TEXT,
            content TEXT,
            metadata JSONB,
            status TEXT,
            changed TEXT,
            sources TEXT,
            related_id TEXT,
            PRIMARY KEY (memory_id, version)
        )""",
        "INSERT INTO {history} (memory_id, version, change, at, record_type, user_id, agent_id,"
        " content, metadata, status, changed) SELECT id, 1, 'created', created_at, record_type,"
        " user_id, agent_id, content, metadata, status, 'content,metadata,status' FROM {records}"
        " WHERE family = 'memory' ON CONFLICT (memory_id, version) DO NOTHING",
        # A store under row security (core.deepsec): the history is under it too, with the
        # policies the records have (core.deepsec's own-rows and global rules for the
        # history, to the same roles), so end users' writes go on after the upgrade.
        "DO $$ DECLARE p record; who text; BEGIN"
        " IF (SELECT relrowsecurity FROM pg_class WHERE oid = '{records}'::regclass) THEN"
        " EXECUTE 'ALTER TABLE {history} ENABLE ROW LEVEL SECURITY';"
        " FOR p IN SELECT polname::text AS policyname, polroles AS roles FROM pg_policy"
        " WHERE polrelid = '{records}'::regclass"
        " AND polname IN ('oam_own_rows_records_select', 'oam_global_records_select') LOOP"
        " SELECT string_agg(CASE WHEN r = 0 THEN 'public' ELSE quote_ident(pg_get_userbyid(r))"
        " END, ', ') INTO who FROM unnest(p.roles) r;"
        " IF p.policyname = 'oam_own_rows_records_select' THEN"
        " EXECUTE format('CREATE POLICY oam_own_rows_history_select ON {history} FOR SELECT"
        " TO %s USING (user_id = (current_user)::text)', who);"
        " EXECUTE format('CREATE POLICY oam_own_rows_history_insert ON {history} FOR INSERT"
        " TO %s WITH CHECK (user_id = (current_user)::text)', who);"
        " EXECUTE format('CREATE POLICY oam_own_rows_history_update ON {history} FOR UPDATE"
        " TO %s USING (user_id = (current_user)::text)"
        " WITH CHECK (user_id = (current_user)::text)', who);"
        " EXECUTE format('CREATE POLICY oam_own_rows_history_delete ON {history} FOR DELETE"
        " TO %s USING (user_id = (current_user)::text)', who);"
        " ELSE EXECUTE format('CREATE POLICY oam_global_history_select ON {history}"
        " FOR SELECT TO %s USING (user_id IS NULL)', who); END IF;"
        " END LOOP; END IF; END $$",
    ],
    # When each record became true and stopped being so (epoch seconds, schema/_validity);
    # filled as SQLite's migration fills them (a naive time is UTC, as the SDK reads it).
    16: [
        "ALTER TABLE {records} ADD COLUMN IF NOT EXISTS valid_from DOUBLE PRECISION",
        "ALTER TABLE {records} ADD COLUMN IF NOT EXISTS valid_until DOUBLE PRECISION",
        f"UPDATE {{records}} SET valid_from = {_epoch('COALESCE(event_ts, created_at)')}",
        "UPDATE {records} r SET valid_from = COALESCE((SELECT MAX(m.valid_from) FROM {sources} s"
        " JOIN {records} m ON m.family = 'message' AND m.id = s.message_id"
        " WHERE s.rid = r.rid), r.valid_from) WHERE r.family = 'memory'",
        "UPDATE {records} SET valid_until = GREATEST(valid_from,"
        f" {_epoch('COALESCE(updated_at, created_at)')}) WHERE status = 'invalid'",
        "UPDATE {records} r SET valid_until = GREATEST(r.valid_from, COALESCE((SELECT"
        " MIN(n.valid_from) FROM {relations} l JOIN {records} n ON n.family = 'memory'"
        " AND n.id = l.source_record_id WHERE l.target_record_id = r.id"
        " AND l.relation_type = 'supersedes'), r.valid_until))"
        " WHERE r.family = 'memory' AND r.status = 'invalid'",
        "CREATE INDEX IF NOT EXISTS {p}_valid_from ON {records} (valid_from)",
        "CREATE INDEX IF NOT EXISTS {p}_valid_until ON {records} (valid_until)"
        " WHERE valid_until IS NOT NULL",
    ],
    # A user's keyword rows counted and their lengths summed in the index on their user,
    # which now holds each row's length (_postgres_words.statistics_sql): a user's first
    # keyword search reads the rows it scores, not every row of the user. It replaces
    # version 13's index on the user alone.
    17: [
        "CREATE INDEX IF NOT EXISTS {p}_kw_user_len ON {kw} (user_id) INCLUDE (tsv_len)",
        "DROP INDEX IF EXISTS {s}{p}_kw_user",
    ],
    # Metadata kept as written: ``json`` keeps its text (jsonb reorders keys, turns 1e20 into
    # an integer and -0.0 into 0.0); filters read a stored ``jsonb`` copy (_filters_postgres).
    # The history is read, never filtered: no copy. Values stored before stay normalised. A
    # copy already there is made again (the type cannot change under it): one rewrite.
    18: [
        *(
            f"ALTER TABLE {{{table}}} DROP COLUMN IF EXISTS metadata_jb,"
            " ALTER COLUMN metadata TYPE json USING metadata::json,"
            " ADD COLUMN metadata_jb jsonb GENERATED ALWAYS AS (metadata::jsonb) STORED"
            for table in ("records", "relations")
        ),
        "ALTER TABLE {history} ALTER COLUMN metadata TYPE json USING metadata::json",
    ],
}

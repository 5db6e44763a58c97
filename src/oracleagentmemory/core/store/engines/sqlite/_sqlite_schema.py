"""The SQLite schema, version by version: the statements each migration runs (``{name}``
placeholders filled by ``SQLiteDialect._fmt``; steps that depend on what a store holds run in
``SQLiteDialect.migrate``)."""

from __future__ import annotations

MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {records} (
            rid INTEGER PRIMARY KEY,
            family TEXT NOT NULL,
            record_type TEXT NOT NULL,
            id TEXT NOT NULL,
            content TEXT,
            role TEXT,
            seq_no INTEGER,
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            event_ts TEXT,
            created_at TEXT NOT NULL,
            metadata TEXT,
            status TEXT NOT NULL DEFAULT 'valid',
            expires_at REAL,
            extra TEXT,
            UNIQUE (family, id)
        )""",
        "CREATE INDEX IF NOT EXISTS {records}_type ON {records} (record_type, rid)",
        "CREATE INDEX IF NOT EXISTS {records}_thread ON {records} (thread_id, family, seq_no)",
        "CREATE INDEX IF NOT EXISTS {records}_user ON {records} (user_id, family)",
        "CREATE INDEX IF NOT EXISTS {records}_agent ON {records} (agent_id, family)",
        "CREATE INDEX IF NOT EXISTS {records}_expiry ON {records} (expires_at)"
        " WHERE expires_at IS NOT NULL",
        """CREATE TABLE IF NOT EXISTS {chunks} (
            cid INTEGER PRIMARY KEY,
            rid INTEGER NOT NULL,
            chunk_index INTEGER NOT NULL,
            chunk_text TEXT,
            vector BLOB
        )""",
        "CREATE INDEX IF NOT EXISTS {chunks}_rid ON {chunks} (rid)",
    ],
    2: [
        # Image bytes live apart from records so listing never drags them along.
        "CREATE TABLE IF NOT EXISTS {blobs} (rid INTEGER PRIMARY KEY, data BLOB NOT NULL)",
        """CREATE TABLE IF NOT EXISTS {relations} (
            id TEXT PRIMARY KEY,
            source_record_id TEXT NOT NULL,
            source_record_type TEXT NOT NULL,
            target_record_id TEXT NOT NULL,
            target_record_type TEXT NOT NULL,
            relation_type TEXT NOT NULL,
            opposite_relation_type TEXT NOT NULL,
            timestamp TEXT,
            metadata TEXT,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS {relations}_source"
        " ON {relations} (source_record_type, source_record_id)",
        "CREATE INDEX IF NOT EXISTS {relations}_target"
        " ON {relations} (target_record_type, target_record_id)",
    ],
    3: [
        # Provenance of extracted memories (rid of the memory, id of a source message).
        """CREATE TABLE IF NOT EXISTS {sources} (
            rid INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            PRIMARY KEY (rid, message_id)
        )""",
        "CREATE INDEX IF NOT EXISTS {sources}_message ON {sources} (message_id)",
        # Accepted extraction work, written with the messages it covers.
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
        "ALTER TABLE {records} ADD COLUMN ttl_days INTEGER",
        "CREATE TABLE IF NOT EXISTS {seq} (thread_key TEXT PRIMARY KEY, last_seq INTEGER NOT NULL)",
        "INSERT INTO {seq} (thread_key, last_seq) SELECT COALESCE(thread_id, ''), MAX(seq_no)"
        " FROM {records} WHERE family = 'message' GROUP BY COALESCE(thread_id, '')",
        # One row per committed write: its generation (the rowid: no extra index page to
        # write) and the rid ranges it touched, packed as little-endian int64 pairs.
        "CREATE TABLE IF NOT EXISTS {changes} (gen INTEGER PRIMARY KEY, rids BLOB NOT NULL)",
    ],
    5: [],  # SQLite's user-word table is made with the keyword index
    # The user-word table's rows are keyed by record and position from version 6: version
    # 5's is dropped here and made again with the keyword index on open.
    6: ["DROP TABLE IF EXISTS {words_fts}"],
    # The owner of every thread id (see _threads): the thread row's user where there is one,
    # else the user of the first record naming the thread.
    7: [
        "CREATE TABLE IF NOT EXISTS {owners} (thread_id TEXT PRIMARY KEY, user_id TEXT,"
        " agent_id TEXT)",
        "CREATE INDEX IF NOT EXISTS {owners}_user ON {owners} (user_id)",
        "INSERT INTO {owners} (thread_id, user_id, agent_id) SELECT t.id, t.user_id, t.agent_id"
        " FROM {records} t WHERE t.family = 'thread'"
        " AND NOT EXISTS (SELECT 1 FROM {owners} o WHERE o.thread_id = t.id)",
        "INSERT INTO {owners} (thread_id, user_id, agent_id) SELECT r.thread_id, r.user_id,"
        " r.agent_id FROM {records} r WHERE r.rid IN (SELECT MIN(rid) FROM {records}"
        " WHERE thread_id IS NOT NULL GROUP BY thread_id)"
        " AND NOT EXISTS (SELECT 1 FROM {owners} o WHERE o.thread_id = r.thread_id)",
    ],
    8: [],  # PostgreSQL's sequences and approximate-index tables
    9: [],  # ... and its chunks' copy of the record's user and type
    10: [],  # ... and its keyword rows on a side table
    11: [],  # ... and its keyword totals kept by triggers
    12: [],  # ... and its change log (SQLite's has been here since 5)
    13: [],  # ... and (PostgreSQL) its keyword rows' user index
    # Pending extraction work held by a lease in the database's time (store._leases); rows
    # of processes that predate it get one lease from now to finish or be taken over.
    14: [
        "ALTER TABLE {pending} ADD COLUMN lease_until REAL",
        "UPDATE {pending} SET lease_until = ((julianday('now') - 2440587.5) * 86400.0) + 15"
        " WHERE lease_until IS NULL",
    ],
    # Every version of every memory (schema/_history), and when a record last changed; each
    # memory there now gets its first version from its row.
    15: [
        "ALTER TABLE {records} ADD COLUMN updated_at TEXT",
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
            metadata TEXT,
            status TEXT,
            changed TEXT,
            sources TEXT,
            related_id TEXT,
            PRIMARY KEY (memory_id, version)
        )""",
        "INSERT INTO {history} (memory_id, version, change, at, record_type, user_id, agent_id,"
        " content, metadata, status, changed) SELECT id, 1, 'created', created_at, record_type,"
        " user_id, agent_id, content, metadata, status, 'content,metadata,status' FROM {records}"
        " WHERE family = 'memory'"
        " AND NOT EXISTS (SELECT 1 FROM {history} h WHERE h.memory_id = {records}.id)",
    ],
    # When each record became true and stopped being so (epoch seconds, schema/_validity):
    # from its event time, else its creation (an extracted memory: its newest source
    # message's); an INVALID one ended at its last change (a superseded one: when its
    # successor became true).
    16: [
        "ALTER TABLE {records} ADD COLUMN valid_from REAL",
        "ALTER TABLE {records} ADD COLUMN valid_until REAL",
        "UPDATE {records} SET valid_from ="
        " (julianday(COALESCE(event_ts, created_at)) - 2440587.5) * 86400.0",
        "UPDATE {records} SET valid_from = COALESCE((SELECT MAX(m.valid_from) FROM {sources} s"
        " JOIN {records} m ON m.family = 'message' AND m.id = s.message_id"
        " WHERE s.rid = {records}.rid), valid_from) WHERE family = 'memory'",
        "UPDATE {records} SET valid_until = MAX(valid_from,"
        " (julianday(COALESCE(updated_at, created_at)) - 2440587.5) * 86400.0)"
        " WHERE status = 'invalid'",
        "UPDATE {records} SET valid_until = MAX(valid_from, COALESCE((SELECT MIN(n.valid_from)"
        " FROM {relations} l JOIN {records} n ON n.family = 'memory' AND n.id ="
        " l.source_record_id WHERE l.target_record_id = {records}.id"
        " AND l.relation_type = 'supersedes'), valid_until))"
        " WHERE family = 'memory' AND status = 'invalid'",
        "CREATE INDEX IF NOT EXISTS {records}_valid_from ON {records} (valid_from)",
        "CREATE INDEX IF NOT EXISTS {records}_valid_until ON {records} (valid_until)"
        " WHERE valid_until IS NOT NULL",
    ],
    17: [],  # PostgreSQL's keyword rows' user index holds their lengths (SQLite has none)
    18: [],  # PostgreSQL's metadata kept as written (SQLite's is its text already)
}

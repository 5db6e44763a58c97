"""The two policies as PostgreSQL row-level security on one store's tables.

Each policy is a group role of the store (``<schema>_<store>_own_rows``,
``<schema>_<store>_global``) holding the table privileges it needs and named by the
store's RLS policies; granting a policy to a principal is ``GRANT <policy role> TO
<principal role>``, so revoking it takes effect on the principal's next statement.

The end user is ``current_user``: the role a session logged in as, or the one the store
set for its transaction (``SET LOCAL ROLE``, see ``core._shared._end_user``). Under the own-rows
policy a user's rows are the records whose ``user_id`` is that role's name, and what
hangs off them: chunks and keyword rows (which carry the record's user), image bytes,
provenance, approximate-index rows, thread claims and pending extraction work of the
user's threads. A link is readable when both its endpoints are readable and writable
when both are the user's. The global policy reads user-less memory records (and their
chunks and links between visible records); it writes nothing.

Left outside row security, with plain grants: the registry (``meta``, read only), the
thread ``seq_no`` marks (thread ids and counters, no content), the keyword totals (two
numbers per shard) and the change log (which record ids each write touched, added to by the
writers). The table owner is not subject to these policies (it administers the
store); nor is a superuser or a role with BYPASSRLS.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core.store._dialect import Tables

ME = "(current_user)::text"

PROTECTED = (
    "records",
    "chunks",
    "kw",
    "blobs",
    "sources",
    "relations",
    "owners",
    "pending",
    "ann",
    "ann_queue",
    "seq",
    "history",
)
"""Tables under row security (``Tables`` attribute names)."""
PLAIN = ("meta", "kw_totals", "changes")

RECORD_COLUMNS_UPDATED = (
    "content",
    "metadata",
    "event_ts",
    "expires_at",
    "ttl_days",
    "status",
    "extra",
    "updated_at",
    "valid_from",
    "valid_until",
)
"""What an update of a record may change (never its id, type, family, user, agent, thread,
position or creation time)."""


@dataclass(frozen=True)
class Store:
    """One store's names: its schema, tables and policy roles."""

    schema: str
    prefix: str

    @property
    def tables(self) -> Tables:
        return Tables(self.prefix, self.schema)

    def role(self, kind: str) -> str:
        """The group role of policy ``kind`` (``own_rows`` or ``global``), at most 63
        characters (PostgreSQL's limit; a longer name ends in a digest)."""
        name = f"{self.schema}_{self.prefix}_{kind}"
        if len(name) > 63:
            digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
            name = f"{name[: 63 - len(kind) - 10]}_{digest}_{kind}"
        return name

    def policy_name(self, kind: str, table: str, command: str) -> str:
        return f"oam_{kind}_{table}_{command}".lower()


def _family_of(type_column: str) -> str:
    memory = ", ".join(f"'{t}'" for t in MEMORY_RECORD_TYPES)
    return f"(CASE WHEN {type_column} IN ({memory}) THEN 'memory' ELSE {type_column} END)"


def _visible_record(t: Tables, where: str) -> str:
    """EXISTS over the records the current user can see (their own policies apply)."""
    return f"EXISTS (SELECT 1 FROM {t.records} r WHERE {where})"


def _endpoint(t: Tables, side: str, own: bool) -> str:
    where = (
        f"r.family = {_family_of(f'{side}_record_type')} AND r.id = {side}_record_id"
        f" AND r.record_type = {side}_record_type"
    )
    return _visible_record(t, where + (f" AND r.user_id = {ME}" if own else ""))


def own_rules(t: Tables, store: Store) -> dict[str, dict[str, str]]:
    """Table -> command -> the own-rows condition (USING and WITH CHECK alike)."""
    mine = f"user_id = {ME}"
    open_to = thread_function(store)
    # A new record names no thread, or one that is unclaimed or the user's (the claim of
    # another user is invisible to them: the owner's function reads it).
    record_in = f"{mine} AND (thread_id IS NULL OR {open_to}(thread_id, {ME}))"
    # A chunk or keyword row belongs to a record of the user's (of the type it says).
    chunk_in = (
        f"{mine} AND EXISTS (SELECT 1 FROM {t.records} r WHERE r.rid = {{alias}}.rid"
        f" AND r.user_id = {ME} AND r.record_type = {{alias}}.record_type)"
    )
    kw_in = f"{mine} AND {_visible_record(t, f'r.rid = {{alias}}.rid AND r.user_id = {ME}')}"
    # A thread's seq_no mark: readable (ids and counters), moved only in the user's threads
    # (or unclaimed ones, and the shared mark of messages without a thread).
    seq_mine = f"(thread_key = '' OR {open_to}(thread_key, {ME}))"
    rid_mine = _visible_record(t, f"r.rid = {{alias}}.rid AND r.user_id = {ME}")
    cid_mine = f"EXISTS (SELECT 1 FROM {t.chunks} c WHERE c.cid = {{alias}}.cid AND c.{mine})"
    thread_mine = (
        f"EXISTS (SELECT 1 FROM {t.owners} o WHERE o.thread_id = {{alias}}.thread_id AND o.{mine})"
    )
    both_mine = f"{_endpoint(t, 'source', True)} AND {_endpoint(t, 'target', True)}"
    both_seen = f"{_endpoint(t, 'source', False)} AND {_endpoint(t, 'target', False)}"

    def every(cond: str, update: bool = True) -> dict[str, str]:
        out = {"select": cond, "insert": cond, "delete": cond}
        if update:
            out["update"] = cond
        return out

    return {
        "records": {**every(mine), "insert": record_in},
        "chunks": {**every(mine, update=False), "insert": chunk_in},
        "kw": {**every(mine), "insert": kw_in, "update": kw_in},
        "seq": {"select": "true", "insert": seq_mine, "update": seq_mine, "delete": seq_mine},
        "blobs": every(rid_mine),
        "sources": every(rid_mine, update=False),
        "relations": {
            "select": both_seen,
            "insert": both_mine,
            "update": both_mine,
            "delete": both_mine,
        },
        "owners": every(mine),
        # A memory's versions carry its user (a deleted memory's tombstone too).
        "history": every(mine),
        "pending": every(thread_mine),
        "ann": every(cid_mine),
        # The queue row is inserted by the statement that inserts its chunk, which that
        # statement cannot see yet; the key to the chunk is its check (a queued chunk is
        # only ranked, and only for whoever may read it).
        # (update: the indexer locks the rows it moves, FOR UPDATE)
        "ann_queue": {"select": cid_mine, "insert": "true", "update": cid_mine, "delete": cid_mine},
    }


def global_rules(t: Tables, store: Store) -> dict[str, dict[str, str]]:
    """Table -> ``select`` -> the global-memories condition (it grants no write)."""
    memory = "user_id IS NULL AND family = 'memory'"
    memory_types = ", ".join(f"'{t}'" for t in MEMORY_RECORD_TYPES)
    rid_global = _visible_record(t, "r.rid = {alias}.rid AND r.user_id IS NULL")
    cid_global = (
        f"EXISTS (SELECT 1 FROM {t.chunks} c WHERE c.cid = {{alias}}.cid AND c.user_id IS NULL)"
    )
    both_seen = f"{_endpoint(t, 'source', False)} AND {_endpoint(t, 'target', False)}"
    return {
        "records": {"select": memory},
        # A chunk carries its record's user and type: no look-up of the record.
        "chunks": {"select": f"user_id IS NULL AND record_type IN ({memory_types})"},
        "kw": {"select": f"user_id IS NULL AND {rid_global}"},
        "blobs": {"select": rid_global},
        "relations": {"select": both_seen},
        "ann": {"select": cid_global},
        "ann_queue": {"select": cid_global},
        "seq": {"select": "true"},
        "history": {"select": "user_id IS NULL"},
    }


def all_tables(t: Tables) -> list[str]:
    return [getattr(t, name) for name in (*PROTECTED, *PLAIN)]


def table_privileges(t: Tables, own: bool) -> list[str]:
    """``GRANT ... ON <table>`` clauses (without ``TO``) of a policy role."""
    grants = [f"SELECT ON {', '.join(all_tables(t))}"]
    if not own:
        return grants
    writable = [getattr(t, name) for name in PROTECTED]
    grants += [
        f"INSERT, DELETE ON {', '.join(writable)}",
        f"INSERT ON {t.changes}",
        f"UPDATE ({', '.join(RECORD_COLUMNS_UPDATED)}) ON {t.records}",
        f"UPDATE (relation_type, opposite_relation_type, timestamp, metadata) ON {t.relations}",
        f"UPDATE (agent_id) ON {t.owners}",
        f"UPDATE (owner, attempts) ON {t.pending}",
        f"UPDATE (vector) ON {t.ann}",
        f"UPDATE (cid) ON {t.ann_queue}",
        f"UPDATE (tsv, tsv_len) ON {t.kw}",
        f"UPDATE (data) ON {t.blobs}",
        f"UPDATE (content, metadata, sources) ON {t.history}",
        f"UPDATE (last_seq) ON {t.seq}",
    ]
    return grants


def sequences(store: Store) -> str:
    qualify = f"{store.schema}."
    return f"{qualify}{store.prefix}_rid_seq, {qualify}{store.prefix}_cid_seq"


def policy_statements(store: Store, kind: str, role: str) -> list[str]:
    """CREATE POLICY statements of policy ``kind`` for ``role`` (quoted)."""
    t = store.tables
    rules = own_rules(t, store) if kind == "own_rows" else global_rules(t, store)
    out: list[str] = []
    for table, commands in rules.items():
        name = getattr(t, table)
        alias = name
        for command, cond in commands.items():
            cond = cond.replace("{alias}", alias)
            clause = {
                "select": f"USING ({cond})",
                "delete": f"USING ({cond})",
                "insert": f"WITH CHECK ({cond})",
                "update": f"USING ({cond}) WITH CHECK ({cond})",
            }[command]
            out.append(
                f"CREATE POLICY {store.policy_name(kind, table, command)} ON {name}"
                f" FOR {command.upper()} TO {role} {clause}"
            )
    return out


def drop_policy_statements(store: Store, kind: str) -> list[str]:
    t = store.tables
    rules = own_rules(t, store) if kind == "own_rows" else global_rules(t, store)
    return [
        f"DROP POLICY IF EXISTS {store.policy_name(kind, table, command)} ON {getattr(t, table)}"
        for table, commands in rules.items()
        for command in commands
    ]


def document_counts_function(store: Store) -> str:
    """A word's documents among the rows the caller may see (its policies apply: SECURITY
    INVOKER), never the store's: keyword scores depend only on what the caller may see
    (``_postgres_keyword``), so no count of other users' words is offered. Its existence
    tells keyword search that row security is on. It takes stems and quotes each as one
    plain lexeme (never an operator, a prefix or a phrase), and counts no scope lexeme."""
    t = store.tables
    # The stem as a quoted tsquery lexeme: backslashes and quotes escaped, as _quoted does.
    lexeme = "'''' || replace(replace(u.s, E'\\\\', E'\\\\\\\\'), '''', '''''') || ''''"
    return (
        f"CREATE OR REPLACE FUNCTION {counts_function(store)}(stems text[]) RETURNS bigint[]"
        " LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS"
        " $$ SELECT array_agg(CASE WHEN u.s = '' OR left(u.s, 1) = '@' THEN 0 ELSE"
        f" (SELECT count(*) FROM {t.kw} WHERE tsv @@ ({lexeme})::tsquery) END ORDER BY u.i)"
        " FROM unnest(stems) WITH ORDINALITY AS u(s, i) $$"
    )


def thread_function(store: Store) -> str:
    return store.tables.thread_open_to


def thread_open_function(store: Store) -> str:
    """Whether a thread id is unclaimed or claimed by ``who``: read as the table owner
    (SECURITY DEFINER), since another user's claim is hidden from the end user. It answers
    a yes or no about one id, never whose it is."""
    return (
        f"CREATE OR REPLACE FUNCTION {thread_function(store)}(thread text, who text)"
        " RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER"
        " SET search_path = pg_catalog, pg_temp AS $$ SELECT NOT EXISTS (SELECT 1 FROM"
        f" {store.tables.owners} WHERE thread_id = thread AND user_id IS DISTINCT FROM who) $$"
    )


def functions(store: Store) -> list[tuple[str, str]]:
    """(signature, CREATE statement) of the owner's functions the policies use."""
    return [
        (f"{counts_function(store)}(text[])", document_counts_function(store)),
        (f"{thread_function(store)}(text, text)", thread_open_function(store)),
    ]


def counts_function(store: Store) -> str:
    return store.tables.kw_documents


def keyword_user_index(store: Store, create: bool) -> str:
    """Under row security PostgreSQL cannot use the keyword rows' GIN index (``@@`` is not
    leakproof, so the policy's condition runs first): a user's rows are found through the
    schema's index on their user (``<prefix>_kw_user_len``, schema 17), which adding
    policies makes sure of. Removing them drops the index on the user alone that policies
    made before schema 17, where that one is not the schema's own (13-16: no index on
    (user, length) beside it)."""
    if create:
        return (
            f"CREATE INDEX IF NOT EXISTS {store.prefix}_kw_user_len ON {store.tables.kw}"
            " (user_id) INCLUDE (tsv_len)"
        )
    schema, prefix = store.schema, store.prefix
    return (
        f"DO $$ BEGIN IF to_regclass('{schema}.{prefix}_kw_user_len') IS NOT NULL THEN"
        f" DROP INDEX IF EXISTS {schema}.{prefix}_kw_user; END IF; END $$"
    )


def row_security_statements(store: Store, enable: bool) -> list[str]:
    verb = "ENABLE" if enable else "DISABLE"
    return [
        f"ALTER TABLE {getattr(store.tables, name)} {verb} ROW LEVEL SECURITY" for name in PROTECTED
    ]

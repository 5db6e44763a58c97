"""Opening a store's schema: the schema policy, migrations, the meta table, capabilities.

Runs once, when the store opens, inside one transaction under the store lock: it creates or
upgrades the managed tables as ``schema_policy`` allows, checks the id's spelling, records
the embedding model that owns the vectors, and decides what the store can do (local vectors
of which dimension, a keyword index, the retention settings in force). It writes what it
decides into :class:`~._store_core.StoreCore`, which every other part reads.

On an engine with concurrent writers the store first opens under the shared lock
(``Schema.shared_pass``): a current schema is only read, beside other nodes' writes. The
first store-wide change that pass would make (DDL, a meta row) raises :class:`StoreWideWork`
before it is made; the store then opens again under the exclusive lock.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._dialect import SCHEMA_VERSION, chunked
from oracleagentmemory.core.store._store_core import StoreCore
from oracleagentmemory.core.store._time import iso, utcnow
from oracleagentmemory.core.store.schema._planning import new_id
from oracleagentmemory.core.store.schema._rows import KEYWORD_ROW_INDEX

log = logging.getLogger("oracleagentmemory.store")

_HINT = "open it with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY"

LAYOUT = "layout"
"""Meta key of a store's table layout when it is not the single-node one."""

ID_SECRET = "id_secret"
"""Meta key of the store's random secret, the key of ids that must not be guessed."""


class EmbedderMismatchError(ValueError):
    """The store's vectors were written by another embedding model than the one given."""

    def __init__(self, message: str, stored_model: str) -> None:
        super().__init__(message)
        self.stored_model = stored_model


class SchemaError(RuntimeError):
    """The managed schema is missing, outdated or cannot serve the requested strategy."""


class StoreWideWork(Exception):
    """Opening under the shared lock found store-wide work to do (nothing was written)."""


class Schema:
    """The schema part: the meta table, open-time checks and capability decisions."""

    def __init__(self, core: StoreCore) -> None:
        self._core = core
        self._store_id_recorded = False
        self.shared_pass = False
        """Opening under the shared lock: any change raises :class:`StoreWideWork` first."""

    def _store_wide(self, what: str) -> None:
        """Before a change the open makes: refused in the shared pass."""
        if self.shared_pass:
            raise StoreWideWork(what)

    def read_meta(self) -> dict[str, str]:
        d = self._core.dialect
        return dict(d.execute(f"SELECT key, value FROM {d.tables.meta}"))

    def write_meta(self, key: str, value: str) -> None:
        self._store_wide(f"meta row {key}")
        d = self._core.dialect
        t = d.tables.meta
        d.execute(f"DELETE FROM {t} WHERE key = ?", (key,))
        d.execute(f"INSERT INTO {t} (key, value) VALUES (?, ?)", (key, value))

    def id_secret(self) -> bytes:
        """The store's random 32-byte secret for ids no one may compute without it (the
        integrations' derived ids), made once; every process and node reads the same one.

        A store opened with DDL allowed gets it then; an older store gets it here, on first
        use (the first writer's value wins a race).
        """
        core = self._core
        d = core.dialect
        read = f"SELECT value FROM {d.tables.meta} WHERE key = ?"
        with core.lock:
            core.check_open()
            rows = d.execute(read, (ID_SECRET,))
            if not rows:
                with d.transaction():
                    d.execute(
                        f"INSERT INTO {d.tables.meta} (key, value) VALUES (?, ?)"
                        " ON CONFLICT (key) DO NOTHING",
                        (ID_SECRET, secrets.token_hex(32)),
                    )
                    rows = d.execute(read, (ID_SECRET,))
        return bytes.fromhex(str(rows[0][0]))

    def adopt_id_secret(self, secret: bytes) -> bool:
        """Take ``secret`` (another store's, from its export) while this store holds no
        records, so the ids derived there are found here; returns whether it did."""
        if not isinstance(secret, bytes) or len(secret) != 32:
            raise TypeError("secret must be 32 bytes")
        core = self._core
        d = core.dialect
        with core.lock:
            core.check_open()
            with d.transaction():
                if d.execute(f"SELECT 1 FROM {d.tables.records} LIMIT 1"):
                    return False
                self.write_meta(ID_SECRET, secret.hex())
        return True

    def open(self, vector_dim: int | None, retention: Any) -> None:
        """Check, create or upgrade the schema and set the store's capabilities (in the
        caller's transaction, under the lock)."""
        self._check_store_id()
        meta, ddl_allowed = self._tables()
        self._vectors(meta, ddl_allowed, vector_dim)
        self._keyword(meta, ddl_allowed)
        self._retention(meta, ddl_allowed, retention)

    def _check_store_id(self) -> None:
        """Refuse an id that differs only in case from the store owning these tables.

        SQL folds unquoted names to one case, so ``"Tenant"`` and ``"tenant"`` would share
        tables; the spelling that created a store is recorded and any other spelling is a
        ValueError naming both, before anything is written.
        """
        d, store_id = self._core.dialect, self._core.store_id
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

    def _tables(self) -> tuple[dict[str, str], bool]:
        """Create or migrate the managed tables as the policy allows; returns the meta
        table's contents and whether DDL is allowed."""
        core = self._core
        d, policy = core.dialect, core.policy
        layout = d.layout  # a recreated store keeps its layout
        if policy is SchemaPolicy.RECREATE:
            self._store_wide("recreate")
            if d.tables.meta in d.managed_objects():
                layout = self.read_meta().get(LAYOUT)
                self._check_layout(layout)
            d.drop_all()
        existing = d.managed_objects()
        ddl_allowed = policy in (SchemaPolicy.CREATE_IF_NECESSARY, SchemaPolicy.RECREATE) or (
            policy is SchemaPolicy.CREATE_IF_EMPTY and not existing
        )
        meta: dict[str, str] = {}
        if d.tables.meta in existing:
            meta = self.read_meta()
            self._check_layout(meta.get(LAYOUT))
            d.use_layout(meta.get(LAYOUT))
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
                    + f"; {_HINT} to create it"
                )
            else:
                self._store_wide("create")
                d.migrate(0, SCHEMA_VERSION)
                layout = layout or d.new_layout()
                if layout is not None:
                    d.lay_out(layout)
                meta = {
                    "store_id": core.store_id,
                    "schema_version": str(SCHEMA_VERSION),
                    "created_at": iso(utcnow()),
                    "instance": new_id(),
                    "generation": "0",
                }
                for key, value in meta.items():
                    self.write_meta(key, value)
                d.note_schema_version(SCHEMA_VERSION)
                d.leased_work = True
                d.keeps_history = True
                d.keeps_validity = True
                core.note_times(True)
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
                        f"{_HINT} to upgrade it"
                    )
                self._store_wide("migrate")
                log.info("upgrading managed schema %s -> %s", version, SCHEMA_VERSION)
                d.migrate(version, SCHEMA_VERSION)
                self.write_meta("schema_version", str(SCHEMA_VERSION))
                if version < 7:  # thread owners were derived from the rows: say where not one
                    core.owners.report_conflicts()
                version = SCHEMA_VERSION
            d.note_schema_version(version)
            d.leased_work = version >= 14
            d.keeps_history = version >= 15
            d.keeps_validity = version >= 16
            core.note_times(version >= 16)
        if meta and not self._store_id_recorded and policy is not SchemaPolicy.NO_CHECK:
            self.write_meta("store_id", core.store_id)  # stores created before ids were kept
        if meta and "instance" not in meta:  # stores created before index snapshots
            self.write_meta("instance", new_id())
            self.write_meta("generation", "0")
        if ddl_allowed and ID_SECRET not in meta:  # new stores, and older ones opened to upgrade
            meta[ID_SECRET] = secrets.token_hex(32)
            self.write_meta(ID_SECRET, meta[ID_SECRET])
        return meta, ddl_allowed

    def _check_layout(self, layout: str | None) -> None:
        """Refuse, before anything is written, a store whose tables are laid out in a way
        this engine cannot read or write (a store distributed on Citus, docs/scaling.md)."""
        if layout is not None and layout not in self._core.dialect.layouts:
            raise SchemaError(
                f"this store's tables have the {layout!r} layout (distributed by user on "
                "Citus), which this engine cannot read or write; open it with "
                "PostgresMemoryStore on the Citus coordinator that holds it"
            )

    def _vectors(self, meta: dict[str, str], ddl_allowed: bool, vector_dim: int | None) -> None:
        """Vector capability, and the model that owns the vectors."""
        core = self._core
        d, emb, strategy = core.dialect, core.embedder, core.strategy
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
        needs_vectors = strategy in (SearchStrategy.VECTOR, SearchStrategy.HYBRID)
        dim = stored_dim
        if dim is None and requested is not None and (ddl_allowed or not meta):
            dim = requested
            if meta:
                self._store_wide("add vectors")
                self.write_meta("vector_dim", str(dim))
                core.vector_dim = dim
                d.enable_vectors(dim)
                self._backfill_vectors()
        if needs_vectors and dim is None:
            if meta and not ddl_allowed and requested is not None:
                raise SchemaError(
                    f"{strategy} search needs local vector storage, which this schema "
                    f"lacks; {_HINT} to add it"
                )
            raise ValueError(
                f"{strategy} search needs an embedder or vector_dim (local vector storage)"
            )
        core.vector_dim = dim
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
                self.write_meta("embedder", emb.model_identity)

    def _backfill_vectors(self) -> None:
        """Give existing chunks vectors when local vector storage is added to a schema."""
        core = self._core
        if core.embedder is None:
            return
        d = core.dialect
        c = d.tables.chunks
        d.note_changed(None)  # every vector may change: other processes rebuild
        rows = d.execute(
            f"SELECT cid, chunk_text FROM {c} WHERE vector IS NULL AND chunk_text IS NOT NULL"
            f" AND chunk_text != '' AND chunk_index <> {KEYWORD_ROW_INDEX}"
        )
        for part in chunked(rows, 256):
            vecs = core.embed([t for _, t in part], is_query=False)
            d.executemany(
                f"UPDATE {c} SET vector = ? WHERE cid = ?",
                [(d.vector_to_db(v), cid) for (cid, _), v in zip(part, vecs, strict=True)],
            )

    def _keyword(self, meta: dict[str, str], ddl_allowed: bool) -> None:
        """Keyword capability; and whether thread owners are kept (schema 7 and later)."""
        core = self._core
        d, strategy = core.dialect, core.strategy
        needs_keyword = strategy in (SearchStrategy.KEYWORD, SearchStrategy.HYBRID)
        has_keyword = bool(meta) and d.has_keyword_index()
        if has_keyword and ddl_allowed and not d.keyword_index_complete():
            self._store_wide("complete the keyword index")
            d.complete_keyword_index()
        if needs_keyword and not has_keyword:
            if meta and ddl_allowed:
                self._store_wide("add the keyword index")
                d.create_keyword_index()
                has_keyword = True
            elif meta or core.policy is not SchemaPolicy.NO_CHECK:
                raise SchemaError(
                    f"{strategy} search needs the keyword index, which this schema "
                    f"lacks; {_HINT} to add it"
                )
        core.has_keyword = has_keyword
        # A store older than version 7 opened without upgrading has no owners table.
        core.owners.enabled = d.tables.owners in d.managed_objects()

    def _retention(self, meta: dict[str, str], ddl_allowed: bool, retention: Any) -> None:
        """Retention settings: an explicit config wins and is persisted where DDL is allowed."""
        core = self._core
        if retention is not NOT_SET_MARKER:
            core.retention = retention
            text = json.dumps(retention.to_json())
            if meta and ddl_allowed and meta.get("retention") != text:  # written when it changes
                self.write_meta("retention", text)
        elif "retention" in meta:
            stored = json.loads(meta["retention"])
            core.retention = MemoryRetentionConfig(
                default_ttl_days=stored.get("default_ttl_days"),
                max_ttl_days=stored.get("max_ttl_days"),
            )

"""What an ``OracleAgentMemory`` client sets up when it is built: its store (the ``store`` it
was given, or one it opens on its ``connection`` with the store options and the embedder
resolved from what the caller gave: :func:`client_store`), its checked LLMs and its
extraction service (:func:`client_extraction`)."""

from __future__ import annotations

import logging
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis._duck import EMBEDDER_METHODS, as_embedder, check_llm
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core._client._runtime import ResolvedSettings, check_extraction
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.embedders._default import bundled_for_identity
from oracleagentmemory.core.extractors._service import ExtractionService, supports_extraction
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.store._sql_store import EmbedderMismatchError

log = logging.getLogger("oracleagentmemory.client")

LOCAL_MODEL_NAMES = {"local", "default"}
"""Names of the default bundled model; the bundled models also answer to their own names
(see ``core.embedders._default.bundled_embedder``)."""
STORE_OPTIONS = (
    "embedder",
    "schema_policy",
    "memory_store_id",
    "table_name_prefix",
    "schema_owner",
    "search_strategy",
    "search_index_sync",
    "memory_retention_config",
    "read_connection",
)
"""The client's arguments that configure a store it opens (not one it is given);
``read_connection``: a PostgreSQL hot standby for its reads (``PostgresMemoryStore``)."""


def store_options(arguments: dict[str, Any]) -> dict[str, Any]:
    """The store options of an ``OracleAgentMemory(...)`` call, from its ``locals()``."""
    return {name: arguments[name] for name in STORE_OPTIONS}


def resolve_embedder(embedder: Any, strategy: Any) -> IEmbedder | None:
    """An ``IEmbedder`` from what the caller gave: omitted = the bundled offline model (none
    for KEYWORD search, which needs no vectors); a string names a model (the bundled one, or
    an OpenAI-compatible served model)."""
    if isinstance(embedder, IEmbedder):
        return embedder
    if embedder is NOT_SET_MARKER:
        if strategy is SearchStrategy.KEYWORD or strategy == "keyword":
            return None
        from oracleagentmemory.core.embedders import default_embedder

        return default_embedder()
    if embedder is None:
        return None
    if isinstance(embedder, str):
        if embedder.strip().lower() in LOCAL_MODEL_NAMES:
            from oracleagentmemory.core.embedders import default_embedder

            return default_embedder()
        from oracleagentmemory.core.embedders._default import bundled_embedder

        bundled = bundled_embedder(embedder)
        if bundled is not None:
            return bundled
        from oracleagentmemory.core.embedders import Embedder

        return Embedder(model=embedder)
    if not any(callable(getattr(embedder, m, None)) for m in EMBEDDER_METHODS):
        raise TypeError(
            "embedder must be an IEmbedder (or an object with its embed and embed_async "
            f"methods), a model name or None, got {type(embedder).__name__}"
        )
    return as_embedder(embedder)  # TypeError naming a missing method


def open_store(
    connection: Any, embedder: IEmbedder | None, options: dict[str, Any]
) -> OracleMemoryStore:
    """The store for a ``connection``: a SQLite path, ``sqlite:///path``, ``:memory:`` or a
    ``sqlite3.Connection`` (embedded; created on first use by default), or a
    ``postgresql://`` URL, psycopg connection or pool (``REQUIRE_EXISTING`` by default, as
    the reference server store)."""
    from oracleagentmemory.core.oracledbmemorystore import (
        OracleDBMemoryStore,
        is_postgres,
        is_sqlite,
    )

    if not (is_postgres(connection) or is_sqlite(connection)):
        raise TypeError(
            "connection must be a SQLite path, 'sqlite:///path', ':memory:', a "
            "sqlite3.Connection, a postgresql:// URL, a psycopg connection or a psycopg pool"
        )
    kwargs = {k: v for k, v in options.items() if k != "embedder" and v is not NOT_SET_MARKER}
    if "schema_policy" not in kwargs and is_sqlite(connection):
        kwargs["schema_policy"] = SchemaPolicy.CREATE_IF_NECESSARY
    return OracleDBMemoryStore(embedder, connection, **kwargs)


def client_store(
    store: Any, connection: Any, options: dict[str, Any]
) -> tuple[OracleMemoryStore, bool]:
    """The client's store and whether the client owns it (opened it, so closes it).

    ``store`` and ``connection`` are the client's arguments (one of them given);
    ``options`` its store options by name (:data:`STORE_OPTIONS`, omitted ones
    ``NOT_SET_MARKER``), the embedder among them.
    """
    if store is not NOT_SET_MARKER:
        if connection is not NOT_SET_MARKER:
            raise ValueError("give store or connection, not both")
        given = [n for n in STORE_OPTIONS if options[n] is not NOT_SET_MARKER]
        if given:
            raise ValueError(
                f"{', '.join(given)}: store options need a connection; configure the store "
                "you pass instead"
            )
        if not isinstance(store, OracleMemoryStore):
            raise TypeError("store must be an OracleMemoryStore")
        return store, False
    if connection is NOT_SET_MARKER:
        raise ValueError("give a connection (e.g. a SQLite file path) or a store")
    embedder = options["embedder"]
    emb = resolve_embedder(embedder, options["search_strategy"])
    try:
        return open_store(connection, emb, options), True
    except EmbedderMismatchError as exc:
        # An omitted embedder means "the bundled model": a store written by an earlier
        # bundled default keeps its own model until the user re-embeds it.
        previous = bundled_for_identity(exc.stored_model)
        if embedder is not NOT_SET_MARKER or previous is None:
            raise
        log.warning(
            "this store was written by the bundled model %s; it is opened with that "
            "model (store.reembed(default_embedder()) moves it to the current default)",
            exc.stored_model,
        )
        return open_store(connection, previous, options), True


def check_llms(llm: Any, pruner_llm: Any) -> None:
    """The client's ``llm`` and ``pruner_llm`` are LLM adapters, None or omitted."""
    if llm is not NOT_SET_MARKER and llm is not None:
        check_llm(llm, "llm")
    if pruner_llm not in (NOT_SET_MARKER, None):
        check_llm(pruner_llm, "pruner_llm")


def client_extraction(
    store: OracleMemoryStore, client_settings: dict[str, Any]
) -> ExtractionService:
    """The client's extraction service (flat ``client_settings``), resuming the work left in
    the store when the client extracts memories, then taking over the jobs whose lease runs
    out while it is open (``ExtractionService.poll``); extraction asked for without an LLM,
    or an LLM on a store that cannot record extraction, fails here."""
    check_extraction(ResolvedSettings(client_settings), where="client")
    client_llm = client_settings.get("llm")
    if client_llm is not None and not supports_extraction(store):
        raise TypeError("llm: memory extraction needs one of the SQL stores")
    extraction = ExtractionService(store, client_llm)
    if (
        client_llm is not None
        and client_settings.get("memory_extraction_config.extract_memories") is not False
    ):
        extraction.poll()
    return extraction

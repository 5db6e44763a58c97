"""The agent-memory client, stores, configuration and adapters.

Public modules are named after the class they hold (``oracleagentmemory.OracleAgentMemory``,
``thread.OracleThread``, ``oraclememorystore`` / ``oracledbmemorystore``, the ``*config``
modules, ``searchresult``, ``contextcard``, ``summary``, ``reranker``). One floor down, the
private modules hold what the client and its threads share: ``_client_setup`` and
``_thread_handles`` (building a client, handing out threads), ``_runtime`` (settings),
``_scope`` and ``_search`` (search), ``_memory_ops`` (memory and link writes),
``_message_batch`` / ``_thread_messages`` / ``_message_content`` (messages), ``_images`` /
``_captions`` (images), ``_context_card`` (cards and summaries), ``_validation``,
``_observed``, ``_prune`` / ``_rerank``, ``_http`` and ``_config``. Subpackages:
``store`` (the SQL store), ``embedders``, ``llms``, ``extractors``, ``deepsec``. The names
below are imported on first use (``oracleagentmemory._lazy``), so importing the package alone
is cheap.
"""

from typing import TYPE_CHECKING

from oracleagentmemory._lazy import lazy_exports
from oracleagentmemory._notset import NOT_SET_MARKER

if TYPE_CHECKING:
    from oracleagentmemory.apis.relations import (
        MemoryLink,
        MemoryLinkOppositeType,
        MemoryLinkType,
        RecordRelation,
        RelationType,
    )
    from oracleagentmemory.apis.searchresult import SearchResultFormatConfig
    from oracleagentmemory.core.contextcard import OracleContextCard
    from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
    from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
    from oracleagentmemory.core.extractors.memoryextractionconfig import (
        BackgroundExtractionQueueFullBehavior,
        MemoryExtractionConfig,
        MemoryExtractionImageContext,
        MemoryExtractionMode,
        MemoryLinkExtractionMode,
    )
    from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
    from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory
    from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore
    from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
    from oracleagentmemory.core.reranker import Reranker
    from oracleagentmemory.core.retention import MemoryRetentionConfig
    from oracleagentmemory.core.searchconfig import (
        MemorySearchConfig,
        PruningEvaluationMode,
        PruningMemorySearchConfig,
        TopKMemorySearchConfig,
    )
    from oracleagentmemory.core.searchresult import (
        OracleSearchResult,
        OracleSearchResultFormatConfig,
    )
    from oracleagentmemory.core.store._sql_store import SchemaError
    from oracleagentmemory.core.store.engines.postgres._postgres_store import PostgresMemoryStore
    from oracleagentmemory.core.store.engines.sqlite._sqlite_store import SQLiteMemoryStore
    from oracleagentmemory.core.summary import OracleSummary
    from oracleagentmemory.core.thread import OracleThread

_EXPORTS = {
    "oracleagentmemory.apis.relations": (
        "MemoryLink",
        "MemoryLinkOppositeType",
        "MemoryLinkType",
        "RecordRelation",
        "RelationType",
    ),
    "oracleagentmemory.apis.searchresult": ("SearchResultFormatConfig",),
    "oracleagentmemory.core.contextcard": ("OracleContextCard",),
    "oracleagentmemory.core.dbschemapolicy": ("SchemaPolicy",),
    "oracleagentmemory.core.dbsearch": (
        "SearchIndexSyncMode",
        "SearchStrategy",
    ),
    "oracleagentmemory.core.extractors.memoryextractionconfig": (
        "BackgroundExtractionQueueFullBehavior",
        "MemoryExtractionConfig",
        "MemoryExtractionImageContext",
        "MemoryExtractionMode",
        "MemoryLinkExtractionMode",
    ),
    "oracleagentmemory.core.imageinputlimitconfig": ("ImageInputLimitConfig",),
    "oracleagentmemory.core.oracleagentmemory": ("OracleAgentMemory",),
    "oracleagentmemory.core.oracledbmemorystore": ("OracleDBMemoryStore",),
    "oracleagentmemory.core.oraclememorystore": ("OracleMemoryStore",),
    "oracleagentmemory.core.reranker": ("Reranker",),
    "oracleagentmemory.core.retention": ("MemoryRetentionConfig",),
    "oracleagentmemory.core.searchconfig": (
        "MemorySearchConfig",
        "PruningEvaluationMode",
        "PruningMemorySearchConfig",
        "TopKMemorySearchConfig",
    ),
    "oracleagentmemory.core.searchresult": (
        "OracleSearchResult",
        "OracleSearchResultFormatConfig",
    ),
    "oracleagentmemory.core.store.engines.postgres._postgres_store": ("PostgresMemoryStore",),
    "oracleagentmemory.core.store._sql_store": ("SchemaError",),
    "oracleagentmemory.core.store.engines.sqlite._sqlite_store": ("SQLiteMemoryStore",),
    "oracleagentmemory.core.summary": ("OracleSummary",),
    "oracleagentmemory.core.thread": ("OracleThread",),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "NOT_SET_MARKER",
    "BackgroundExtractionQueueFullBehavior",
    "ImageInputLimitConfig",
    "MemoryExtractionConfig",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLink",
    "MemoryLinkExtractionMode",
    "MemoryLinkOppositeType",
    "MemoryLinkType",
    "MemoryRetentionConfig",
    "MemorySearchConfig",
    "OracleAgentMemory",
    "OracleContextCard",
    "OracleDBMemoryStore",
    "OracleMemoryStore",
    "OracleSearchResult",
    "OracleSearchResultFormatConfig",
    "OracleSummary",
    "OracleThread",
    "PostgresMemoryStore",
    "PruningEvaluationMode",
    "PruningMemorySearchConfig",
    "RecordRelation",
    "RelationType",
    "Reranker",
    "SQLiteMemoryStore",
    "SchemaError",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchResultFormatConfig",
    "SearchStrategy",
    "TopKMemorySearchConfig",
]

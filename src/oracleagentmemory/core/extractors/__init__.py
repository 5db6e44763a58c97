"""Automatic memory extraction: its configuration and the extractors."""

from typing import TYPE_CHECKING

from oracleagentmemory._lazy import lazy_exports

if TYPE_CHECKING:
    from oracleagentmemory.apis.batch import PendingRecordBatch
    from oracleagentmemory.core.extractors._background import (
        MemoryExtractionError,
        MemoryExtractionStats,
    )
    from oracleagentmemory.core.extractors._extractor import ThreadMemoryExtractor
    from oracleagentmemory.core.extractors._oneshotextractor import OneShotThreadMemoryExtractor
    from oracleagentmemory.core.extractors.memoryextractionconfig import (
        BackgroundExtractionQueueFullBehavior,
        MemoryExtractionConfig,
        MemoryExtractionImageContext,
        MemoryExtractionMode,
        MemoryLinkExtractionMode,
    )

_EXPORTS = {
    "oracleagentmemory.apis.batch": ("PendingRecordBatch",),
    "oracleagentmemory.core.extractors._background": (
        "MemoryExtractionError",
        "MemoryExtractionStats",
    ),
    "oracleagentmemory.core.extractors._extractor": ("ThreadMemoryExtractor",),
    "oracleagentmemory.core.extractors._oneshotextractor": ("OneShotThreadMemoryExtractor",),
    "oracleagentmemory.core.extractors.memoryextractionconfig": (
        "BackgroundExtractionQueueFullBehavior",
        "MemoryExtractionConfig",
        "MemoryExtractionImageContext",
        "MemoryExtractionMode",
        "MemoryLinkExtractionMode",
    ),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "BackgroundExtractionQueueFullBehavior",
    "MemoryExtractionConfig",
    "MemoryExtractionError",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryExtractionStats",
    "MemoryLinkExtractionMode",
    "OneShotThreadMemoryExtractor",
    "PendingRecordBatch",
    "ThreadMemoryExtractor",
]

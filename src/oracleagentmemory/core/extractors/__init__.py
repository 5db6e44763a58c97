"""Automatic memory extraction: its configuration and the extractors."""

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

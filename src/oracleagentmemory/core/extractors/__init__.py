"""Automatic memory extraction: its configuration (and, as they land, the extractors)."""

from oracleagentmemory.apis.batch import PendingRecordBatch
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
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLinkExtractionMode",
    "PendingRecordBatch",
]

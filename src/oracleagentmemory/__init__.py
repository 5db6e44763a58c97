"""Durable, searchable memory for AI agents (the ``oracleagentmemory`` API)."""

from oracleagentmemory._notset import NOT_SET_MARKER

__version__ = "0.1.0"

__all__ = ["NOT_SET_MARKER", "__version__"]

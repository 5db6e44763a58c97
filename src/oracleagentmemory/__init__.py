"""Durable, searchable memory for AI agents (the ``oracleagentmemory`` API), from ``recallwell``.

An independent implementation of the documented API of Oracle AI Agent Memory, not affiliated
with Oracle; importing it next to Oracle's own ``oracleagentmemory`` distribution is an
ImportError that says how to keep one (``_distribution``).

``apis`` holds the value types and interfaces (no I/O); ``core`` the client
(``OracleAgentMemory``), its threads, the stores, embedders, LLM adapters and memory
extraction; ``observability`` the events every public operation emits; ``admin``, ``server``,
``mcpserver`` and ``cli`` the operator tools, the REST server, the MCP server and the ``oam``
command built on them. ``docs/architecture.md`` walks through the rooms.
"""

from oracleagentmemory._distribution import check_no_conflict
from oracleagentmemory._notset import NOT_SET_MARKER

check_no_conflict()

__version__ = "0.2.0"

__all__ = ["NOT_SET_MARKER", "__version__"]

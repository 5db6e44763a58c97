"""An MCP server on a store (``oam mcp``, extra ``[mcp]``): memory tools and resources for
one user (and agent), fixed when the server starts."""

from oracleagentmemory.mcpserver.server import build_server, run

__all__ = ["build_server", "run"]

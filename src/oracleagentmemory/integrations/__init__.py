"""Memory where agents are built: one module per framework, each behind its own extra.

- :mod:`oracleagentmemory.integrations.langgraph` (``[langgraph]``): ``AgentMemoryStore``,
  a LangGraph ``BaseStore``.
- :mod:`oracleagentmemory.integrations.openai_agents` (``[openai-agents]``):
  ``AgentMemorySession``, an OpenAI Agents SDK session, and memory tools.
- :mod:`oracleagentmemory.integrations.langchain` (``[langchain]``):
  ``AgentMemoryChatMessageHistory`` and ``AgentMemoryRetriever``.

Importing this package imports no framework; each module imports its framework when it is
imported itself.
"""

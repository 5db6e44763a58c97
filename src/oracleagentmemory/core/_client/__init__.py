"""The client's private machinery behind ``OracleAgentMemory`` and ``OracleThread``: building a
client from its arguments and picking its store (``_client_setup``), the resolved settings a
client or thread runs with (``_runtime``), opening threads (``_thread_handles``), memory
writes and links (``_memory_ops``), context cards (``_context_card``), argument checks
(``_validation``) and event reporting (``_observed``); messages and images in ``messages/``,
search, reranking and pruning in ``search/``. The public modules of ``core`` (and the
extractors and integrations) use it; nothing in ``core.store`` does. It imports nothing
eagerly: each public module imports the helpers it needs."""

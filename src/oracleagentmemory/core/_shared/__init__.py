"""Helpers shared by every part of ``core`` and importing none of them: configuration values
(``_config``, used by the public ``*config`` modules), the HTTP client of the LLM, embedder
and reranker adapters (``_http``), the end user a call runs as (``_end_user``, read by the
store's PostgreSQL engine, row security and the background extractors), who makes a change
(``_actor``, recorded in a memory's history) and the exit hook
that lets background work finish (``_exit_gate``). It sits below the client and the store
alike, so neither has to reach into the other for them."""

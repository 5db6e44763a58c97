"""The client side of a search: turning ``search`` arguments into one store query and its
results (``_search``), the scope a client or thread searches in (``_scope``), reranking
(``_rerank``) and LLM pruning of the results to a token budget (``_prune``). The store runs
the query itself (``core.store.search``). Private to the client (``core._client``)."""

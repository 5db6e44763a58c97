"""The store's search, engine-neutral: one search run end to end (``_searcher``), its vector
and keyword branches (``_vector_branch``, ``_keyword_branch``), the SQL they share
(``_search_sql``), keyword-query handling and FTS5's BM25 formula (``_keyword``), fusing the
branches (``_hybrid``, ``_fusion``), the messages that follow a hit (``_follow_ups``), the
metadata-filter grammar (``_filters``) and the in-process cache of often-searched users'
vectors and keyword rows (``_user_vectors``, ``_user_words``), kept exact by the engine's
change log. What differs between engines it asks the dialect; it imports no engine."""

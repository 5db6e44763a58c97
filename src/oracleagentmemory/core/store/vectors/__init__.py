"""The in-process vector index and what keeps it exact: the index (``_vector_index``) and its
approximate-search graph (``_ann_index``), its rows and on-disk snapshot (``_vector_rows``,
``_vector_snapshot``), the keeper that applies committed writes to it and replays other
processes' (``_index_keeper``), and re-embedding a store with another model (``_reembed``).
Engine-neutral; below search and writes, which use it."""

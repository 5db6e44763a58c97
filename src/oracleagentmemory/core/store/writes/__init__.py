"""The store's write path, engine-neutral: adding records in one transaction (``_writes``)
and grouping concurrent writers' commits (``_group_commit``), updates (``_updates``),
deletes (``_deletes``), retention sweeps (``_retention``) and image records
(``_image_rows``). It plans rows with ``schema``, keeps the vector index with ``vectors``
and runs its SQL through the dialect; it imports no engine."""

"""The one SQL store behind ``OracleMemoryStore``, for every engine (internal). At the top: the
facade ``SQLMemoryStore`` (``_sql_store``), the state its parts share (``_store_core``), the
dialect interface engines implement (``_dialect``), reads, browsing, relations, threads and
extraction bookkeeping, and small helpers (limits, times, dates, JSON text, files). Below
it, engine-neutral: ``schema/`` (tables and rows), ``vectors/`` (the in-process vector
index), ``search/`` and ``writes/``; beside them ``engines/`` (``sqlite/``, ``postgres/``),
which import the neutral parts and are imported by none of them. ``tests/test_layout.py``
holds the import directions."""

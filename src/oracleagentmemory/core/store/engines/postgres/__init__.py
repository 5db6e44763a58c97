"""The PostgreSQL engine: its dialect (``_postgres``), connections and pools
(``_postgres_connect``), schema DDL (``_postgres_schema``), one-statement inserts
(``_postgres_insert``), errors (``_postgres_errors``), pgvector search and its HNSW index
kept off the write path (``_postgres_vectors``, ``_postgres_ann``), keyword search scored as
FTS5 scores it (``_postgres_words``, ``_postgres_keyword``), the change log that keeps
in-process caches exact (``_postgres_changes``), metadata filters compiled to PostgreSQL SQL
(``_filters_postgres``), read replicas and stores open on a standby
(``_postgres_replica``) and the public ``PostgresMemoryStore`` (``_postgres_store``). Its
distributed layout on Citus is in its subpackage ``citus``."""

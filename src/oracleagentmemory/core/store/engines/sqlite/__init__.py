"""The SQLite engine: its dialect (``_sqlite``: connections, the write lock, FTS5 keyword
search, vectors ranked in process), user-scoped keyword search over the user-word table
(``_sqlite_words``), metadata filters compiled to SQLite SQL (``_filters_sqlite``) and the
public ``SQLiteMemoryStore`` (``_sqlite_store``)."""

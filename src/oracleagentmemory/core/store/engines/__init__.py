"""The database engines: one subpackage each (``sqlite/``, ``postgres/``; a distributed
PostgreSQL joins here as its own), holding its dialect (connections, transactions, SQL,
full-text search, vector search, filters compiled to its SQL) and its public store class.
Engines import the engine-neutral store (``core.store`` and its ``schema``, ``vectors``,
``search`` and ``writes``), never the reverse, and not each other: the neutral store sees an
engine only through the dialect object it is given (``core.store._dialect``)."""

"""The PostgreSQL engine on a Citus coordinator: the store's tables distributed by user
(``_layout``) and the statements a store in that layout sends (``_dialect_citus``). See
docs/scaling.md."""

"""The PostgreSQL engine on a Citus coordinator: the store's tables distributed by user
(``_layout``). See docs/scaling.md."""

"""Schema creation policy."""

from __future__ import annotations

from enum import Enum


class SchemaPolicy(str, Enum):
    """What a store may do to the managed schema when it opens.

    REQUIRE_EXISTING (default): the complete, current schema must exist; no DDL.
    CREATE_IF_EMPTY: create when no managed object exists; else require the current schema.
    CREATE_IF_NECESSARY: create missing objects and apply supported upgrades.
    RECREATE: drop and recreate every managed object (destructive).
    NO_CHECK: trust that the schema is there; no validation, no DDL.
    """

    REQUIRE_EXISTING = "require_existing"
    CREATE_IF_EMPTY = "create_if_empty"
    CREATE_IF_NECESSARY = "create_if_necessary"
    RECREATE = "recreate"
    NO_CHECK = "no_check"

"""PostgreSQL errors as the exceptions the store's API reports."""

from __future__ import annotations

import re

import psycopg

from oracleagentmemory.core._shared._end_user import current_end_user


def refused_by_database(exc: psycopg.Error) -> PermissionError:
    """A statement PostgreSQL refused for the role it ran as (row security, or a privilege
    the role lacks), as one PermissionError naming that role."""
    who = current_end_user()
    as_whom = f"end user {who!r}" if who is not None else "this connection's role"
    reason = " ".join(str(exc).split("\n")[0].split())
    return PermissionError(f"PostgreSQL refused this operation for {as_whom}: {reason}")


def missing_role(exc: psycopg.errors.InvalidParameterValue) -> Exception:
    """``SET ROLE`` to a role that does not exist (the end user has no role in this
    database) as the PermissionError a refused end user gets; any other invalid value as
    it was."""
    who = current_end_user()
    if who is None or not re.match(r'role ".*" does not exist', str(exc).split("\n")[0]):
        return exc
    return PermissionError(f"end user {who!r} has no role in this database")


RETRYABLE = (
    psycopg.errors.LockNotAvailable,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
)
"""The errors after which the server rolled the write back whole: ``lock_timeout`` (55P03),
a deadlock it broke (40P01), a serialization failure (40001)."""


def lock_timed_out(exc: psycopg.Error) -> TimeoutError:
    """A write the server rolled back for another transaction's locks (:data:`RETRYABLE`:
    nothing written) as a TimeoutError that says so: retry it."""
    reason = " ".join(str(exc).split("\n")[0].split())
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return TimeoutError(f"the write waited too long for a lock and was not written ({reason})")
    return TimeoutError(
        "the write conflicted with another write and was rolled back: nothing was written,"
        f" retry it ({reason})"
    )


def as_clash(exc: psycopg.errors.UniqueViolation) -> Exception:
    """A clash on the records' key as the ValueError a write reports (else ``exc``)."""
    clash = _record_clash(exc)
    return exc if clash is None else ValueError(f"record_ids: {clash!r} already exists")


def _record_clash(exc: psycopg.errors.UniqueViolation) -> str | None:
    """The record id of a clash on the records' ``(family, id)`` key (else None)."""
    diag = exc.diag
    if not (diag.constraint_name or "").endswith("records_family_id_key"):
        return None
    found = re.search(r"\(family, id\)=\([^,]*, (.*)\) already exists", diag.message_detail or "")
    return found.group(1) if found else "?"

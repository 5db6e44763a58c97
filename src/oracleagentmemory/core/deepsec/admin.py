"""Row-security administration (``core.deepsec``): principals, and the calls that create,
grant, list, revoke and remove a store's policies.

On PostgreSQL a policy is row-level security on the store's tables plus a group role
holding what it grants (``_postgres_rls``); a :class:`LocalEndUserPrincipal` is a login
role whose name is the ``user_id`` of its rows, an :class:`OciGroupPrincipal` a group role
(end users are its members: ``GRANT group TO alice``). Each call runs on an administration
connection (the store's owner, with CREATEROLE, or a superuser), in one transaction, and
commits before returning. SQLite has no roles: every call raises NotImplementedError.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from oracleagentmemory.core._shared import _end_user
from oracleagentmemory.core.deepsec.policies import (
    DeepDataSecurityPolicy as DeepDataSecurityPolicy,
    GlobalMemoriesDeepDataSecurityPolicy as GlobalMemoriesDeepDataSecurityPolicy,
    UserOwnRowsDeepDataSecurityPolicy as UserOwnRowsDeepDataSecurityPolicy,
)

_NO_ROLES = (
    "row security (core.deepsec) needs PostgreSQL: SQLite has no database roles, so the "
    "database cannot keep one user's rows from another; open the store on PostgreSQL, or "
    "keep users apart through `oam serve` with API keys bound to users "
    "(docs/operations/row-security.md)"
)
_KINDS: dict[type[DeepDataSecurityPolicy], str] = {
    UserOwnRowsDeepDataSecurityPolicy: "own_rows",
    GlobalMemoriesDeepDataSecurityPolicy: "global",
}
_GROUP_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,62}$")


class Principal:
    """Who receives policies: use :class:`LocalEndUserPrincipal` or
    :class:`OciGroupPrincipal` (the administration calls refuse this base type)."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items()))))


class LocalEndUserPrincipal(Principal):
    """A local end user: on PostgreSQL, the login role ``username`` (exact spelling; its
    rows are those whose ``user_id`` is ``username``)."""

    def __init__(self, username: str) -> None:
        if not isinstance(username, str) or not username:
            raise ValueError("username must be a non-empty string")
        self.username = username


class OciGroupPrincipal(Principal):
    """A group of end users: on PostgreSQL, the group role ``group_name`` (made when a
    policy is first granted to it; end users join it with ``GRANT group TO user``)."""

    def __init__(self, group_name: str) -> None:
        if not isinstance(group_name, str) or not group_name:
            raise ValueError("group_name must be a non-empty string")
        self.group_name = group_name


# ------------------------------------------------------------------ connections


def _is_sqlite(connection: Any) -> bool:
    import sqlite3

    if isinstance(connection, sqlite3.Connection):
        return True
    if isinstance(connection, str) and not connection.startswith(("postgresql://", "postgres://")):
        return True
    return type(connection).__module__.startswith("oracleagentmemory.core") and (
        "SQLite" in type(connection).__name__
    )


@contextmanager
def _admin(connection: Any) -> Iterator[Any]:
    """A psycopg connection for one administration call, inside one transaction that
    commits on success; the checks every call makes first."""
    if connection is None:
        raise TypeError("connection must be a PostgreSQL connection (psycopg), got None")
    if _is_sqlite(connection):
        raise NotImplementedError(_NO_ROLES)
    if _end_user.current_end_user() is not None:
        raise RuntimeError(
            "row-security administration cannot run inside an end-user security context; "
            "use a dedicated administration connection outside the `with` block"
        )
    try:
        import psycopg
        import psycopg_pool
    except ImportError:  # pragma: no cover - the [postgres] extra is missing
        raise NotImplementedError(_NO_ROLES) from None
    if isinstance(connection, str):
        from oracleagentmemory.core.store.engines.postgres._postgres import connect_checked

        conn = connect_checked(connection)
        try:
            with _transaction(conn):
                yield conn
        finally:
            conn.close()
    elif isinstance(connection, psycopg_pool.ConnectionPool):
        with connection.connection() as conn, _transaction(conn):
            yield conn
    elif isinstance(connection, psycopg.Connection):
        with _transaction(connection):
            yield connection
    else:
        raise TypeError(
            "connection must be a psycopg Connection, a psycopg_pool.ConnectionPool or a "
            f"postgresql:// URL, got {type(connection).__name__}"
        )


_DEADLOCK_RETRIES = 5


def _retrying_deadlocks(connection: Any, run: Any) -> None:
    """``run(conn)`` in one administration transaction, again when PostgreSQL chose it as a
    deadlock's victim: adding or removing policies locks every table of the store, which a
    live store's indexer or searches may hold in another order (the calls are idempotent)."""
    import psycopg

    for attempt in range(_DEADLOCK_RETRIES):
        try:
            with _admin(connection) as conn:
                run(conn)
            return
        except psycopg.errors.DeadlockDetected:
            if attempt == _DEADLOCK_RETRIES - 1:
                raise
            time.sleep(0.05 * 2**attempt)


@contextmanager
def _transaction(conn: Any) -> Iterator[None]:
    row = conn.execute("SELECT current_user = session_user").fetchone()
    if not row or not row[0]:
        raise RuntimeError(
            "this connection has an end-user role set (SET ROLE); row-security administration "
            "needs a dedicated administration connection"
        )
    if not conn.autocommit and conn.info.transaction_status != 0:
        conn.commit()  # the reference commits the connection: what came before lands first
    with conn.transaction():
        yield
    if not conn.autocommit:
        conn.commit()


def _ident(name: str) -> Any:
    from psycopg import sql

    return sql.Identifier(name)


def _store(conn: Any, owner_schema: str, memory_store_id: str) -> Any:
    from oracleagentmemory.core.deepsec._postgres_rls import Store
    from oracleagentmemory.core.store.engines.postgres._postgres import check_identifier

    store = Store(
        check_identifier(owner_schema, "owner_schema"),
        check_identifier(memory_store_id, "memory_store_id"),
    )
    found = conn.execute("SELECT to_regclass(%s)", [store.tables.records]).fetchone()
    if not found or found[0] is None:
        raise ValueError(
            f"no store {memory_store_id!r} in schema {owner_schema!r}: create it first (open it "
            "with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY as its owner)"
        )
    return store


def _refuse_distributed(conn: Any, store: Any) -> None:
    """Row security cannot hold on a store distributed by user on Citus (docs/scaling.md):
    Citus refuses the policies that read other tables."""
    from oracleagentmemory.core.store.schema._schema import LAYOUT

    row = conn.execute(f"SELECT value FROM {store.tables.meta} WHERE key = %s", [LAYOUT]).fetchone()
    if row is not None:
        raise NotImplementedError(
            f"deep data security policies cannot be added to store {store.prefix!r}: its "
            f"tables have the {row[0]!r} layout (distributed by user on Citus), where row "
            "security policies that read other tables are refused; scope every call by "
            "user_id in the application, or keep the store on a single PostgreSQL node"
        )


def _kinds(policies: Any) -> list[str]:
    if not isinstance(policies, (list, tuple)):
        raise TypeError(f"policies must be a list of policies, got {type(policies).__name__}")
    kinds: list[str] = []
    for policy in policies:
        kind = _KINDS.get(type(policy))
        if kind is None:
            raise TypeError(
                "policies must be UserOwnRowsDeepDataSecurityPolicy or "
                f"GlobalMemoriesDeepDataSecurityPolicy instances, got {type(policy).__name__}"
            )
        if kind not in kinds:
            kinds.append(kind)
    return kinds


def _principal_roles(principals: Any) -> list[tuple[Principal, str]]:
    if not isinstance(principals, (list, tuple)):
        raise TypeError(f"principals must be a list of principals, got {type(principals).__name__}")
    out: list[tuple[Principal, str]] = []
    for p in principals:
        if type(p) is LocalEndUserPrincipal:
            out.append((p, p.username))
        elif type(p) is OciGroupPrincipal:
            if not _GROUP_NAME.match(p.group_name):
                raise ValueError(
                    "an OciGroupPrincipal's group_name must start with a letter and hold at "
                    "most 63 letters, digits, underscores, periods, colons or hyphens; got "
                    f"{p.group_name!r}"
                )
            out.append((p, p.group_name))
        else:
            raise TypeError(
                "principals must be LocalEndUserPrincipal or OciGroupPrincipal instances, "
                f"got {type(p).__name__}"
            )
    return out


def _role_exists(conn: Any, name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [name]).fetchone() is not None


def _version(conn: Any) -> int:
    return int(conn.info.server_version)


def _run(conn: Any, statements: Sequence[Any]) -> None:
    for stmt in statements:
        conn.execute(stmt)


# ------------------------------------------------------------------ policies


def add_deep_data_security_policies(
    connection: Any,
    owner_schema: str,
    memory_store_id: str,
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Create ``policies`` for the store ``memory_store_id`` in ``owner_schema`` and turn row
    security on for its tables; adding a policy again replaces its definition (idempotent).
    Commits. TypeError for another policy type; RuntimeError inside an end-user context."""
    from psycopg import sql

    from oracleagentmemory.core.deepsec import _postgres_rls as rls

    kinds = _kinds(policies)

    def add(conn: Any) -> None:
        store = _store(conn, owner_schema, memory_store_id)
        _refuse_distributed(conn, store)
        if kinds:  # the owner's functions the policies call
            for signature, create in rls.functions(store):
                _run(conn, [create, f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC"])
        for kind in kinds:
            role = store.role(kind)
            quoted = _ident(role).as_string(conn)
            if not _role_exists(conn, role):
                conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(_ident(role)))
            conn.execute(
                sql.SQL("COMMENT ON ROLE {} IS {}").format(
                    _ident(role),
                    sql.Literal(
                        f"oracleagentmemory {kind} policy of {store.schema}.{store.prefix}"
                    ),
                )
            )
            _run(conn, [f"GRANT USAGE ON SCHEMA {store.schema} TO {quoted}"])
            privileges = rls.table_privileges(store.tables, own=kind == "own_rows")
            _run(conn, [f"GRANT {g} TO {quoted}" for g in privileges])
            if kind == "own_rows":
                _run(conn, [f"GRANT USAGE ON SEQUENCE {rls.sequences(store)} TO {quoted}"])
            _run(conn, rls.drop_policy_statements(store, kind))
            _run(conn, rls.policy_statements(store, kind, quoted))
        if kinds:
            _run(conn, rls.row_security_statements(store, enable=True))
            _run(conn, [rls.keyword_user_index(store, create=True)])
            for signature, _create in rls.functions(store):
                for kind in _created(conn, store):
                    quoted = _ident(store.role(kind)).as_string(conn)
                    _run(conn, [f"GRANT EXECUTE ON FUNCTION {signature} TO {quoted}"])

    _retrying_deadlocks(connection, add)


def remove_deep_data_security_policies(
    connection: Any,
    owner_schema: str,
    memory_store_id: str,
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Remove ``policies`` from the store: their RLS policies, their role and every grant of
    it; row security is turned off once no policy is left. Absent ones are ignored. Commits."""
    from psycopg import sql

    from oracleagentmemory.core.deepsec import _postgres_rls as rls

    kinds = _kinds(policies)

    def remove(conn: Any) -> None:
        store = _store(conn, owner_schema, memory_store_id)
        for kind in kinds:
            _run(conn, rls.drop_policy_statements(store, kind))
            role = store.role(kind)
            if _role_exists(conn, role):
                quoted = _ident(role).as_string(conn)
                for signature, _create in rls.functions(store):
                    if conn.execute("SELECT to_regprocedure(%s)", [signature]).fetchone()[0]:
                        _run(conn, [f"REVOKE ALL ON FUNCTION {signature} FROM {quoted}"])
                _run(
                    conn,
                    [
                        f"REVOKE ALL ON {', '.join(rls.all_tables(store.tables))} FROM {quoted}",
                        f"REVOKE ALL ON SEQUENCE {rls.sequences(store)} FROM {quoted}",
                        f"REVOKE ALL ON SCHEMA {store.schema} FROM {quoted}",
                    ],
                )
                conn.execute(sql.SQL("DROP ROLE {}").format(_ident(role)))
        if not _created(conn, store):
            _run(conn, rls.row_security_statements(store, enable=False))
            _run(conn, [f"DROP FUNCTION IF EXISTS {sig}" for sig, _ in rls.functions(store)])
            _run(conn, [rls.keyword_user_index(store, create=False)])

    _retrying_deadlocks(connection, remove)


def _created(conn: Any, store: Any) -> list[str]:
    """The kinds of policy the store has, in stable order."""
    return [kind for kind in ("own_rows", "global") if _role_exists(conn, store.role(kind))]


def _policy(kind: str) -> DeepDataSecurityPolicy:
    return next(cls for cls, name in _KINDS.items() if name == kind)()


def list_deep_data_security_policies(
    connection: Any, owner_schema: str, memory_store_id: str
) -> list[DeepDataSecurityPolicy]:
    """The policies the store has, own-rows first; empty when none."""
    with _admin(connection) as conn:
        store = _store(conn, owner_schema, memory_store_id)
        return [_policy(kind) for kind in _created(conn, store)]


# ------------------------------------------------------------------ grants


def grant_agent_memory_policies(
    connection: Any,
    memory_store_id: str,
    owner_schema: str,
    principals: list[Principal],
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Grant the store's ``policies`` to ``principals`` (idempotent). A local end user must
    exist as a role; a group role is made when missing. Commits. ValueError for a policy not
    added yet or a missing user; TypeError for other principal or policy types."""
    from psycopg import sql

    kinds = _kinds(policies)
    roles = _principal_roles(principals)
    with _admin(connection) as conn:
        store = _store(conn, owner_schema, memory_store_id)
        created = _created(conn, store)
        for kind in kinds:
            if kind not in created:
                raise ValueError(
                    f"{type(_policy(kind)).__name__} is not added to store {memory_store_id!r}: "
                    "call add_deep_data_security_policies first"
                )
        for principal, role in roles:
            if not _role_exists(conn, role):
                if isinstance(principal, LocalEndUserPrincipal):
                    raise ValueError(
                        f"no database role {role!r}: a LocalEndUserPrincipal is a PostgreSQL "
                        f'login role (CREATE ROLE "{role}" LOGIN)'
                    )
                conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(_ident(role)))
            # Members act with the policy's privileges but cannot become the policy role
            # (SET ROLE to it would be one identity shared by every grantee): PostgreSQL 16.
            option = sql.SQL(" WITH INHERIT TRUE, SET FALSE" if _version(conn) >= 160000 else "")
            for kind in kinds:
                conn.execute(
                    sql.SQL("GRANT {} TO {}{}").format(
                        _ident(store.role(kind)), _ident(role), option
                    )
                )


def revoke_agent_memory_policies(
    connection: Any,
    memory_store_id: str,
    owner_schema: str,
    principals: list[Principal],
    policies: list[DeepDataSecurityPolicy],
) -> None:
    """Revoke ``policies`` from ``principals`` (their roles stay); missing assignments are
    ignored. Commits: the principals' next statements no longer have them."""
    from psycopg import sql

    kinds = _kinds(policies)
    roles = _principal_roles(principals)
    with _admin(connection) as conn:
        store = _store(conn, owner_schema, memory_store_id)
        created = _created(conn, store)
        for _principal, role in roles:
            if not _role_exists(conn, role):
                continue
            for kind in kinds:
                if kind in created:
                    conn.execute(
                        sql.SQL("REVOKE {} FROM {}").format(_ident(store.role(kind)), _ident(role))
                    )


def list_agent_memory_granted_policies(
    connection: Any, memory_store_id: str, owner_schema: str
) -> list[tuple[Principal, list[DeepDataSecurityPolicy]]]:
    """Each principal holding policies of the store, with them: login roles as
    :class:`LocalEndUserPrincipal`, other roles as :class:`OciGroupPrincipal`; sorted by
    kind, then name."""
    with _admin(connection) as conn:
        store = _store(conn, owner_schema, memory_store_id)
        held: dict[tuple[bool, str], list[str]] = {}
        for kind in _created(conn, store):
            rows = conn.execute(
                "SELECT m.rolname, m.rolcanlogin FROM pg_auth_members a"
                " JOIN pg_roles g ON g.oid = a.roleid JOIN pg_roles m ON m.oid = a.member"
                " WHERE g.rolname = %s AND a.inherit_option",  # not a creator's ADMIN link
                [store.role(kind)],
            ).fetchall()
            for name, login in rows:
                held.setdefault((not login, str(name)), []).append(kind)
        out: list[tuple[Principal, list[DeepDataSecurityPolicy]]] = []
        for (group, name), kinds in sorted(held.items()):
            principal: Principal = OciGroupPrincipal(name) if group else LocalEndUserPrincipal(name)
            out.append((principal, [_policy(k) for k in kinds]))
        return out


def get_end_user_username(connection: Any) -> str | None:
    """The end user a connection acts for: the role set on it (``SET ROLE``) when that
    differs from the role it logged in as, else None. Pass a connection, not a pool."""
    if connection is None:
        raise TypeError("connection must be a psycopg Connection, got None")
    if _is_sqlite(connection):
        raise NotImplementedError(_NO_ROLES)
    import psycopg

    if not isinstance(connection, psycopg.Connection):
        raise TypeError(
            "connection must be an open psycopg Connection (not a pool or a URL: the answer "
            f"is about one session), got {type(connection).__name__}"
        )
    row = connection.execute("SELECT current_user, session_user").fetchone()
    if row is None or row[0] == row[1]:
        return None
    return str(row[0])

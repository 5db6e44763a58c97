"""``oam security``: a PostgreSQL store's row-security policies and who holds them.

``policies`` lists them, ``add`` / ``remove`` create or drop them (``own-rows``,
``global``), ``grant`` / ``revoke`` give or take them from end users' login roles
(``--end-user``) and group roles (``--group``), ``grants`` lists who holds what. Each runs
``core.deepsec`` on one administration connection (the store's owner).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from oracleagentmemory.admin.cli_errors import EXIT_OK
from oracleagentmemory.admin.connect import Target, UsageError
from oracleagentmemory.admin.db import DEFAULT_STORE_ID
from oracleagentmemory.core import deepsec as ds

POLICY_NAMES: dict[str, type[ds.DeepDataSecurityPolicy]] = {
    "own-rows": ds.UserOwnRowsDeepDataSecurityPolicy,
    "global": ds.GlobalMemoriesDeepDataSecurityPolicy,
}
_NAME_OF = {cls: name for name, cls in POLICY_NAMES.items()}


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``security`` and its actions on the verb parser ``sub``."""
    p = sub.add_parser(
        "security",
        help="row-security policies (PostgreSQL)",
        description="a PostgreSQL store's row-security policies: an end user "
        "reads and writes only their own rows, and reads global memories",
    )
    common(p)
    acts = p.add_subparsers(dest="security_verb", metavar="ACTION", required=True)

    def act(name: str, help_: str) -> argparse.ArgumentParser:
        a: argparse.ArgumentParser = acts.add_parser(name, help=help_, description=help_)
        common(a)
        return a

    act("policies", "list the store's policies")
    for name, help_ in (
        ("add", "add policies (again: replace their definition)"),
        ("remove", "remove policies, and every grant of them"),
    ):
        a = act(name, help_)
        a.add_argument("policy", nargs="+", choices=sorted(POLICY_NAMES))
        if name == "remove":
            a.add_argument("--yes", action="store_true", help="confirm the removal")
    for name, help_ in (
        ("grant", "grant policies to end users or groups"),
        ("revoke", "revoke policies from end users or groups"),
    ):
        a = act(name, help_)
        a.add_argument("policy", nargs="+", choices=sorted(POLICY_NAMES))
        a.add_argument(
            "--end-user",
            action="append",
            default=[],
            metavar="ROLE",
            help="an end user's login role (its rows have this user_id); repeatable",
        )
        a.add_argument(
            "--group",
            action="append",
            default=[],
            metavar="ROLE",
            help="a group role (made if missing); repeatable",
        )
    act("grants", "list who holds which policies")


def run(args: argparse.Namespace, target: Target, say: Callable[[str], None]) -> int:
    """Run one ``security`` action against ``target`` (a PostgreSQL URL)."""
    if not target.postgres:
        raise NotImplementedError(ds.admin._NO_ROLES)
    from oracleagentmemory.core.store.engines.postgres._postgres import connect_checked

    store_id = target.memory_store_id or DEFAULT_STORE_ID
    verb = args.security_verb
    with connect_checked(target.dsn, autocommit=True) as conn:
        schema = target.schema_owner or _current_schema(conn)
        if verb == "policies":
            found = ds.list_deep_data_security_policies(conn, schema, store_id)
            for policy in found:
                say(_NAME_OF[type(policy)])
            if not found:
                say(f"no policies on store {store_id!r} in schema {schema!r}")
        elif verb == "grants":
            held = ds.list_agent_memory_granted_policies(conn, store_id, schema)
            for principal, policies in held:
                if isinstance(principal, ds.LocalEndUserPrincipal):
                    kind, name = "end-user", principal.username
                else:
                    kind, name = "group", str(getattr(principal, "group_name", ""))
                say(f"{kind}\t{name}\t{','.join(_NAME_OF[type(p)] for p in policies)}")
            if not held:
                say("no grants")
        else:
            policies = [POLICY_NAMES[name]() for name in dict.fromkeys(args.policy)]
            names = ", ".join(dict.fromkeys(args.policy))
            if verb == "add":
                ds.add_deep_data_security_policies(conn, schema, store_id, policies)
                say(f"added {names} to store {store_id!r} in schema {schema!r}")
            elif verb == "remove":
                if not args.yes:
                    raise UsageError(
                        "security remove drops the policies and their grants: add --yes to confirm"
                    )
                ds.remove_deep_data_security_policies(conn, schema, store_id, policies)
                say(f"removed {names} from store {store_id!r}")
            else:
                principals: list[ds.Principal] = [
                    *(ds.LocalEndUserPrincipal(u) for u in args.end_user),
                    *(ds.OciGroupPrincipal(g) for g in args.group),
                ]
                if not principals:
                    raise UsageError(f"security {verb} needs --end-user ROLE or --group ROLE")
                call = (
                    ds.grant_agent_memory_policies
                    if verb == "grant"
                    else ds.revoke_agent_memory_policies
                )
                call(conn, store_id, schema, principals, policies)
                who = ", ".join([*args.end_user, *args.group])
                say(
                    f"{'granted' if verb == 'grant' else 'revoked'} {names}"
                    f" {'to' if verb == 'grant' else 'from'} {who}"
                )
    return EXIT_OK


def _current_schema(conn: Any) -> str:
    row = conn.execute("SELECT current_schema()").fetchone()
    if not row or not row[0]:
        raise UsageError("no current schema: give --schema-owner")
    return str(row[0])

"""``oam``: administer stores and reach them from outside Python.

The reference's verbs install its server-side package on Oracle; ours map them to our
engines: ``install-plsql`` creates a store's schema, ``check-plsql`` verifies it,
``upgrade-memory-store`` applies migrations, ``uninstall-plsql --purge --yes`` drops stores.
The other verbs serve the store (``serve``: REST + browser page, ``mcp``: an MCP server),
manage API keys, move data (``export``, ``import``), look at it (``search``, ``stats``,
``purge``, ``memories``) and set a PostgreSQL store's row security (``security``).
``--dsn`` is a SQLite path or a PostgreSQL URL. Errors are one line with shell advice; exit
codes say what happened (``admin.cli_errors``): 0 done, 1 failed, 2 usage error, 3 not
found, 4 database unreachable or unopenable, 130 interrupted, 141 the output pipe closed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oracleagentmemory.admin import cli_memories, cli_security, forgetting
from oracleagentmemory.admin.cli_errors import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    MissingExtra,
    NotFound,
    err,
    run_guarded,
)
from oracleagentmemory.admin.connect import Target, UsageError, resolve_target

SCHEMA_VERBS = ("install-plsql", "check-plsql", "uninstall-plsql", "upgrade-memory-store")
__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "MissingExtra", "build_parser", "main"]


def _need(module: str, extra: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtra(
            f"this command needs the '{extra}' extra: pip install 'recallwell[{extra}]'"
        )


# ---------------------------------------------------------------------------- parser


class _DeprecatedKeyUser(argparse.Action):
    """``keys create --user U``: the old spelling of ``--user-id U``, still accepted with a note
    (``--user`` is the database user everywhere else)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        print(
            "oam: warning: 'keys create --user U' is deprecated, say '--user-id U' (--user "
            "is the database user in every other command)",
            file=sys.stderr,
        )
        getattr(namespace, self.dest).append(values)


def _common(parser: argparse.ArgumentParser, *, suppress: bool, db_user: bool = True) -> None:
    """Connection options, accepted before or after the verb (``keys create`` keeps the old
    ``--user`` for user ids, deprecated: give the database user before the verb there)."""
    d = argparse.SUPPRESS if suppress else None
    g = parser.add_argument_group("connection")
    g.add_argument(
        "--dsn",
        default=d,
        help="SQLite file path or postgresql:// URL "
        "(default: $OAM_DSN, then $ORACLE_MEMORY_DB_CONNECT_STRING)",
    )
    if db_user:
        g.add_argument("--user", default=d, help="database user (PostgreSQL)")
    g.add_argument(
        "--password-stdin",
        action="store_true",
        default=d if suppress else False,
        help="read the database password from standard input instead of "
        "$OAM_DB_PASSWORD / $ORACLE_MEMORY_DB_PASSWORD",
    )
    g.add_argument(
        "--memory-store-id", default=d, help="the store's id (table prefix); default 'oam'"
    )
    g.add_argument("--schema-owner", default=d, help="PostgreSQL schema holding the tables")
    g.add_argument(
        "--embedder",
        default=d,
        help="embedding model: omitted = the bundled "
        "offline model; 'none' for keyword-only stores; 'onnx:DIR' = a local "
        "model directory (ONNX export + tokenizer.json); another name = a served "
        "OpenAI-compatible model",
    )
    g.add_argument(
        "--search-strategy",
        default=d,
        choices=["vector", "keyword", "hybrid"],
        help="search strategy the store is opened with (default vector)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oam",
        description="Administer oracleagentmemory stores (SQLite or PostgreSQL) and serve "
        "them over REST, a browser page or MCP.",
        epilog=EXIT_CODES_HELP,
    )
    _common(parser, suppress=False)
    parser.add_argument(
        "--purge",
        action="store_true",
        help="with uninstall-plsql: drop the store(s) and all their data",
    )
    parser.add_argument("--yes", action="store_true", help="confirm a destructive operation")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        _common(p, suppress=True)
        return p

    p = verb("install-plsql", "create the store's schema when missing (idempotent)")
    p = verb(
        "check-plsql",
        "check that the store's schema exists, is current and matches "
        "the embedding model (exit 1 when not, 3 when there is no store)",
    )
    p = verb(
        "uninstall-plsql",
        "there is no server-side package to remove; with --purge "
        "--yes, drop the store given by --memory-store-id, or every store in the database",
    )
    p.add_argument(
        "--purge",
        action="store_true",
        default=argparse.SUPPRESS,
        help="drop the store(s) and all their data",
    )
    p.add_argument("--yes", action="store_true", default=argparse.SUPPRESS, help="confirm --purge")
    verb(
        "upgrade-memory-store",
        "apply pending schema migrations to the store named by --memory-store-id",
    )

    p = verb("serve", "run the REST server (with the /ui memory browser)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        help="largest JSON request body accepted (default 1 MiB)",
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        help="seconds a client may take to send one request (default 60)",
    )
    p.add_argument(
        "--access-log", action="store_true", help="log one line per request on standard error"
    )
    p.add_argument(
        "--end-user-roles",
        action="store_true",
        help="(PostgreSQL) run each request of a one-user API key as that user's "
        "database role, so row security checks it (oam security)",
    )
    p.add_argument(
        "--read-dsn",
        default=None,
        help="(PostgreSQL) a hot standby of --dsn's server: searches and reads go "
        "there once it has replayed the server's last write (docs/scaling.md)",
    )
    _llm_options(p)

    p = verb("mcp", "run an MCP server acting for one user (fixed here, never by tools)")
    p.add_argument(
        "--user-id",
        default=os.environ.get("OAM_MCP_USER_ID"),
        help="the user this server acts for (default $OAM_MCP_USER_ID)",
    )
    p.add_argument(
        "--agent-id",
        default=os.environ.get("OAM_MCP_AGENT_ID"),
        help="the agent this server acts as (default $OAM_MCP_AGENT_ID)",
    )
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="with --transport http")
    p.add_argument("--port", type=int, default=8000, help="with --transport http")
    p.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        help="with --transport http: seconds a client may take to send one request (default 60)",
    )
    _llm_options(p)

    keys = verb("keys", "manage REST API keys (stored hashed in the store's database)")
    ksub = keys.add_subparsers(dest="keys_verb", metavar="ACTION", required=True)
    kc = ksub.add_parser(
        "create",
        help="create a key bound to user ids; the key is printed alone on the last line",
        description="create an API key",
    )
    _common(kc, suppress=True, db_user=False)
    kc.add_argument(
        "--user-id",
        dest="key_users",
        action="append",
        default=[],
        help="a user id the key may touch (repeat for several)",
    )
    kc.add_argument(
        "--user", dest="key_users", action=_DeprecatedKeyUser, default=[], help=argparse.SUPPRESS
    )
    kc.add_argument(
        "--admin", action="store_true", help="the key may touch every user, agents and purge"
    )
    kc.add_argument("--label", default=None)
    kl = ksub.add_parser("list", help="list keys (never the secrets)", description="list keys")
    _common(kl, suppress=True)
    kr = ksub.add_parser("revoke", help="revoke a key by id", description="revoke a key")
    _common(kr, suppress=True)
    kr.add_argument("key_id")

    p = verb("export", "write the whole store as portable JSON Lines")
    p.add_argument("--out", required=True, help="output file ('-' = standard output)")
    p.add_argument(
        "--vectors",
        action="store_true",
        help="include each chunk's vector (no re-embedding on import)",
    )

    p = verb(
        "import",
        "import a store export, or a conversation file (JSON/JSONL messages, LoCoMo) as threads",
    )
    p.add_argument("file")
    p.add_argument("--format", choices=["auto", "export", "conversation"], default="auto")
    p.add_argument("--user-id", default=None, help="conversations: the user of every thread")
    p.add_argument("--agent-id", default=None, help="conversations: the agent of every thread")
    p.add_argument(
        "--window-vectors",
        choices=["late", "pair"],
        default="late",
        help="conversations: messages' vectors by late chunking (default, faster) or each"
        " with the message before it, as add_messages writes them",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--progress",
        action="store_true",
        help="draw the progress bar even when standard error is not a terminal",
    )

    p = verb("search", "search a user's memory")
    p.add_argument("query")
    p.add_argument("--user-id", required=True)
    p.add_argument("--agent-id", default=None)
    p.add_argument("--thread-id", default=None)
    p.add_argument("--max-results", type=int, default=10)
    p.add_argument(
        "--record-types",
        default=None,
        help="comma-separated record types (default: all searchable types)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per result")

    verb("stats", "counts of records by type, users, threads and links")

    cli_memories.add_parser(sub, lambda q: _common(q, suppress=True))
    cli_security.add_parser(sub, lambda q: _common(q, suppress=True))

    p = verb(
        "purge",
        "remove expired records, or everything of a user or a thread (PostgreSQL: then"
        " rewrite the tables, VACUUM FULL)",
    )
    p.add_argument("--expired", action="store_true", help="physically remove expired records")
    p.add_argument("--user-id", default=None, help="delete this user and all their data")
    p.add_argument("--thread-id", default=None, help="delete this thread and its data")
    p.add_argument(
        "--yes",
        action="store_true",
        default=argparse.SUPPRESS,
        help="confirm deleting a user or thread",
    )
    return parser


def _llm_options(p: argparse.ArgumentParser) -> None:
    """``--llm-*``: the OpenAI-compatible LLM that extracts memories from the messages the
    server receives (without one, messages are stored and searchable, but nothing is
    extracted)."""
    g = p.add_argument_group("memory extraction")
    g.add_argument(
        "--llm-model",
        default=os.environ.get("OAM_LLM_MODEL"),
        help="model name on an OpenAI-compatible server (default $OAM_LLM_MODEL); "
        "enables memory extraction and thread summaries",
    )
    g.add_argument(
        "--llm-api-base",
        default=os.environ.get("OAM_LLM_API_BASE"),
        help="the server's base URL, e.g. http://localhost:11434/v1 (default $OAM_LLM_API_BASE)",
    )
    g.add_argument(
        "--llm-api-key-env",
        default=None,
        metavar="VAR",
        help="name of the environment variable holding the LLM's API key "
        "(the key itself never goes on the command line)",
    )


def _llm_settings(args: argparse.Namespace) -> dict[str, str] | None:
    """The ``--llm-*`` options as settings for the server's clients (None: no LLM)."""
    if not args.llm_model:
        given_base = args.llm_api_base and args.llm_api_base != os.environ.get("OAM_LLM_API_BASE")
        if given_base or args.llm_api_key_env:
            raise UsageError("--llm-api-base / --llm-api-key-env need --llm-model")
        return None
    out = {"model": args.llm_model}
    if args.llm_api_base:
        if not args.llm_api_base.startswith(("http://", "https://")):
            raise UsageError("--llm-api-base must be an http:// or https:// URL")
        out["api_base"] = args.llm_api_base
    if args.llm_api_key_env:
        if not os.environ.get(args.llm_api_key_env):
            raise UsageError(f"--llm-api-key-env: ${args.llm_api_key_env} is not set")
        out["api_key_env"] = args.llm_api_key_env
    return out


# ---------------------------------------------------------------------------- verbs


def _target(args: argparse.Namespace) -> Target:
    target = _resolve(args)
    if target.postgres:
        _need("psycopg", "postgres")
    return target


def _resolve(args: argparse.Namespace) -> Target:
    return resolve_target(
        args.dsn,
        user=args.user,
        password_stdin=bool(args.password_stdin),
        memory_store_id=args.memory_store_id,
        schema_owner=args.schema_owner,
    )


def _client(args: argparse.Namespace, target: Target, *, create: bool) -> Any:
    from oracleagentmemory.admin.connect import open_client

    return open_client(
        target, embedder=args.embedder, search_strategy=args.search_strategy, create=create
    )


def _say(text: str) -> None:
    print(text, flush=True)


def _err(message: str) -> None:
    err(message)


def cmd_schema(args: argparse.Namespace) -> int:
    from oracleagentmemory.admin import schema

    target = _target(args)
    opts = {"embedder": args.embedder, "search_strategy": args.search_strategy}
    if args.verb == "install-plsql":
        rep = schema.install(target, **opts)
        state = "created" if rep.created else "already present"
        _say(
            f"store {rep.store_id!r} in {target.shown}: {state} (schema version "
            f"{rep.version_after})"
        )
    elif args.verb == "check-plsql":
        rep = schema.check(target, **opts)
        _say(f"store {rep.store_id!r} in {target.shown}: ok (schema version {rep.version_after})")
    elif args.verb == "upgrade-memory-store":
        if not args.memory_store_id:
            raise UsageError("upgrade-memory-store needs --memory-store-id")
        rep = schema.upgrade(target, **opts)
        if rep.version_before == rep.version_after:
            _say(f"store {rep.store_id!r}: already at schema version {rep.version_after}")
        else:
            _say(
                f"store {rep.store_id!r}: upgraded from schema version {rep.version_before} "
                f"to {rep.version_after}"
            )
    else:  # uninstall-plsql
        if not args.purge:
            _say(
                "nothing to uninstall: this SDK installs no server-side package. "
                "`oam uninstall-plsql --purge --yes` drops stores and all their data."
            )
            return EXIT_OK
        if not args.yes:
            raise UsageError("uninstall-plsql --purge deletes data: add --yes to confirm")
        dropped = schema.drop_stores(target, args.memory_store_id)
        if not dropped:
            _say(f"no store in {target.shown}")
        for sid, n in dropped.items():
            _say(f"dropped store {sid!r} ({n} tables and views)")
    return EXIT_OK


def cmd_keys(args: argparse.Namespace) -> int:
    from oracleagentmemory.admin.apikeys import ApiKeyStore

    keys = ApiKeyStore(_target(args), create=args.keys_verb == "create")
    try:
        if args.keys_verb == "create":
            if not args.key_users and not args.admin:
                raise UsageError("keys create needs --user-id U (repeatable) or --admin")
            key, facts = keys.create(args.key_users, admin=args.admin, label=args.label)
            who = "every user (admin)" if facts.admin else ", ".join(facts.user_ids)
            _say(f"created key {facts.key_id} for {who}; it is shown only once:")
            _say(key)
        elif args.keys_verb == "list":
            for k in keys.list():
                state = f"revoked {k.revoked_at}" if k.revoked_at else "active"
                users = "*" if k.admin else ",".join(k.user_ids)
                _say(f"{k.key_id}\t{users}\t{state}\t{k.created_at}\t{k.label or ''}")
        else:
            if not keys.revoke(args.key_id):
                raise NotFound(f"no active key {args.key_id!r}")
            _say(f"revoked key {args.key_id}")
    finally:
        keys.close()
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from oracleagentmemory.admin.portable import export_store

    target = _target(args)
    client = _client(args, target, create=False)
    try:
        if args.out == "-":
            counts = export_store(client, target, sys.stdout, vectors=args.vectors)
        else:
            counts = _export_to_file(Path(args.out), client, target, args.vectors)
    finally:
        client.close()
    versions = f" ({counts['history']} memory versions)" if counts.get("history") else ""
    print(
        f"exported {counts['record']} records and {counts['link']} links{versions}", file=sys.stderr
    )
    return EXIT_OK


def _export_to_file(out: Path, client: Any, target: Target, vectors: bool) -> dict[str, int]:
    """Write the export beside ``out`` in a new file only this user can read (created
    exclusively: a file or link planted there is never followed), then rename it over
    ``out``, so a failed export never leaves a partial file."""
    import tempfile

    from oracleagentmemory.admin.portable import export_store

    fd, name = tempfile.mkstemp(
        prefix=f".{out.name}.", suffix=".partial", dir=out.parent if str(out.parent) else "."
    )
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            counts = export_store(client, target, fh, vectors=vectors)
        tmp.replace(out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return counts


def cmd_import(args: argparse.Namespace) -> int:
    from oracleagentmemory.admin.conversations import import_conversations, parse_conversations
    from oracleagentmemory.admin.portable import import_store, is_export
    from oracleagentmemory.admin.progress import ProgressBar

    path = Path(args.file)
    if path.is_dir():
        raise UsageError(f"{path} is a folder: import takes a file")
    if not path.is_file():
        raise NotFound(f"no such file: {path}")
    fmt = args.format
    if fmt == "auto":
        fmt = "export" if is_export(path) else "conversation"
    target = _target(args)
    if fmt == "export":
        with path.open(encoding="utf-8") as fh:
            n = sum(1 for _ in fh)
        client = _client(args, target, create=True)
        try:
            bar = ProgressBar(max(0, n - 2), "import", force=args.progress, quiet=args.no_progress)
            with path.open(encoding="utf-8") as fh:
                rep = import_store(client, iter(fh), progress=bar.update)
            bar.close()
        finally:
            client.close()
        extra = ""
        if rep.skipped_expired:
            extra += f"; {rep.skipped_expired} already expired, skipped"
        if rep.rounded_expiries:
            extra += f"; {rep.rounded_expiries} expiries rounded up to whole days"
        if rep.versions:
            extra += f"; {rep.versions} memory versions"
        _say(f"imported {rep.records} records and {rep.links} links{extra}")
        return EXIT_OK
    threads = parse_conversations(path)
    total = sum(len(t.messages) for t in threads)
    client = _client(args, target, create=True)
    try:
        bar = ProgressBar(total, "import", force=args.progress, quiet=args.no_progress)
        try:
            ids = import_conversations(
                client,
                threads,
                user_id=args.user_id,
                agent_id=args.agent_id,
                progress=bar.update,
                late_chunking=args.window_vectors == "late",
            )
        except KeyboardInterrupt:
            _err(
                f"interrupted after {bar.done} of {total} messages: those are stored, and "
                "importing the file again would store them a second time"
            )
            return EXIT_INTERRUPTED
        bar.close()
    finally:
        client.close()
    threads_word = "thread" if len(ids) == 1 else "threads"
    _say(f"imported {total} messages into {len(ids)} {threads_word}: {', '.join(ids)}")
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    target = _target(args)
    client = _client(args, target, create=False)
    try:
        kwargs: dict[str, Any] = {"user_id": args.user_id, "max_results": args.max_results}
        if args.agent_id:
            kwargs["agent_id"] = args.agent_id
        if args.thread_id:
            kwargs["thread_id"] = args.thread_id
        if args.record_types:
            kwargs["record_types"] = [t.strip() for t in args.record_types.split(",") if t]
        results = client.search(args.query, **kwargs)
    finally:
        client.close()
    for r in results:
        rec = r.record
        if args.json:
            _say(
                json.dumps(
                    {
                        "id": rec.id,
                        "record_type": rec.record_type,
                        "distance": r.distance,
                        "content": r.content,
                        "thread_id": getattr(rec, "thread_id", None),
                        "timestamp": rec.timestamp,
                    },
                    ensure_ascii=False,
                )
            )
        else:
            _say(f"{r.distance:.4f}\t{rec.record_type}\t{rec.id}\t{r.content}")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    from oracleagentmemory.admin.portable import RECORD_TYPES

    target = _target(args)
    client = _client(args, target, create=False)
    try:
        ov = client.store.overview  # counted in SQL: no record is loaded to be counted
        counts = {t: ov.count([t]) for t in RECORD_TYPES}
        links = ov.count_links()
        users = ov.count_users_with(["thread", "message", "memory"])
        store = client.store
        pending = store.list_pending_work()
    finally:
        client.close()
    _say(f"store {target.memory_store_id or 'oam'} in {target.shown}")
    for t, n in counts.items():
        _say(f"{t}\t{n}")
    _say(f"link\t{links}")
    _say(f"distinct users with data\t{users}")
    retried = sum(1 for w in pending if w.attempts > 0)
    _say(f"extraction jobs pending\t{len(pending)} ({retried} failed at least once)")
    return EXIT_OK


def cmd_purge(args: argparse.Namespace) -> int:
    if not (args.expired or args.user_id or args.thread_id):
        raise UsageError("purge needs --expired, --user-id U or --thread-id T")
    if (args.user_id or args.thread_id) and not args.yes:
        raise UsageError("deleting a user or a thread removes data: add --yes to confirm")
    target = _target(args)
    client = _client(args, target, create=False)
    missing: list[str] = []
    try:
        if args.thread_id:
            counts = _scoped_counts(client.store, thread_id=args.thread_id)
            if client.delete_thread(args.thread_id):
                _say(f"deleted thread {args.thread_id!r}: {_counted(counts)}")
            else:
                missing.append(f"no thread {args.thread_id!r}: nothing deleted")
        if args.user_id:
            counts = _scoped_counts(client.store, user_id=args.user_id)
            profile = client.delete_user(args.user_id, cascade=True)
            if profile or any(counts.values()):
                counts["user_profile"] = int(bool(profile))
                _say(f"deleted user {args.user_id!r}: {_counted(counts)}")
            else:
                missing.append(f"no user {args.user_id!r} (no profile, no data): nothing deleted")
        # PostgreSQL: the freed rows' bytes too.
        if (args.user_id or args.thread_id) and (tables := forgetting.vacuum_store(client.store)):
            _say(f"rewrote {len(tables)} tables (VACUUM FULL, ANALYZE)")
        if args.expired:
            n = client.store.purge_expired()
            _say(f"removed {n} expired records")
    finally:
        client.close()
    for line in missing:
        _err(line)
    return EXIT_NOT_FOUND if missing else EXIT_OK


_SCOPED_TYPES = (
    "thread",
    "message",
    "memory",
    "fact",
    "preference",
    "guideline",
    "image",
    "thread_summary",
)


def _scoped_counts(store: Any, **scope: str) -> dict[str, int]:
    """How many records of each type a user (or a thread) holds."""
    ov = store.overview  # COUNT(*) in SQL, not the rows loaded
    counts = {}
    for t in _SCOPED_TYPES:
        if t == "thread" and "thread_id" in scope:
            counts[t] = ov.count([t], ids=[scope["thread_id"]])
        else:
            counts[t] = ov.count([t], **scope)
    return counts


def _counted(counts: dict[str, int]) -> str:
    shown = [f"{n} {t}{'s' if n != 1 else ''}" for t, n in counts.items() if n]
    return ", ".join(shown) or "no records"


def _request_timeout(args: argparse.Namespace) -> None:
    """Hand ``--request-timeout`` to the server processes (through the environment)."""
    if args.request_timeout is None:
        return
    if not args.request_timeout > 0:
        raise UsageError("--request-timeout must be a positive number of seconds")
    os.environ["OAM_REQUEST_TIMEOUT_S"] = str(args.request_timeout)


def _read_dsn(args: argparse.Namespace, target: Target) -> str | None:
    """``--read-dsn``, with --dsn's user and password when it names none."""
    from oracleagentmemory.admin.connect import is_postgres_dsn, with_credentials_of

    if args.read_dsn is None:
        return None
    if not (target.postgres and is_postgres_dsn(args.read_dsn)):
        raise UsageError(
            "--read-dsn: read replicas need PostgreSQL: give postgresql:// URLs "
            "for both --dsn and --read-dsn"
        )
    return with_credentials_of(args.read_dsn, target.dsn)


def cmd_serve(args: argparse.Namespace) -> int:
    _need("fastapi", "server")
    _need("uvicorn", "server")
    from oracleagentmemory.server.run import serve

    target = _target(args)
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be 0-65535")
    llm = _llm_settings(args)
    _request_timeout(args)
    serve(
        target,
        host=args.host,
        port=args.port,
        workers=args.workers,
        embedder=args.embedder,
        search_strategy=args.search_strategy,
        max_body_bytes=args.max_body_bytes,
        llm=llm,
        access_log=args.access_log,
        end_user_roles=args.end_user_roles,
        read_dsn=_read_dsn(args, target),
    )
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    _need("mcp", "mcp")
    if not args.user_id:
        raise UsageError("mcp needs --user-id (or $OAM_MCP_USER_ID): the user it acts for")
    from oracleagentmemory.mcpserver.server import run

    target = _target(args)
    llm = _llm_settings(args)
    _request_timeout(args)
    run(
        target,
        user_id=args.user_id,
        agent_id=args.agent_id,
        transport=args.transport,
        host=args.host,
        port=args.port,
        embedder=args.embedder,
        search_strategy=args.search_strategy,
        llm=llm,
    )
    return EXIT_OK


def cmd_memories(args: argparse.Namespace) -> int:
    target = _target(args)
    client = _client(args, target, create=False)
    try:
        return cli_memories.run(args, client, _say)
    finally:
        client.close()


def cmd_security(args: argparse.Namespace) -> int:
    return cli_security.run(args, _target(args), _say)


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    **dict.fromkeys(SCHEMA_VERBS, cmd_schema),
    "keys": cmd_keys,
    "export": cmd_export,
    "import": cmd_import,
    "search": cmd_search,
    "stats": cmd_stats,
    "purge": cmd_purge,
    "serve": cmd_serve,
    "mcp": cmd_mcp,
    "memories": cmd_memories,
    "security": cmd_security,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``oam`` command line; returns the exit code (see ``admin.cli_errors``)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    dsn = getattr(args, "dsn", None)
    return run_guarded(
        lambda: _COMMANDS[args.verb](args), dsn, getattr(args, "memory_store_id", None)
    )


if __name__ == "__main__":
    sys.exit(main())

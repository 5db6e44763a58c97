"""Where a command's store lives: DSN resolution, passwords, redaction, and opening a client.

A DSN is a SQLite path (``memory.db``, ``sqlite:///memory.db``) or a PostgreSQL URL
(``postgresql://user@host/db``). The password never appears on the command line: it comes from
standard input (``--password-stdin``) or an environment variable, and is never printed.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

DSN_ENV = ("OAM_DSN", "ORACLE_MEMORY_DB_CONNECT_STRING")
"""Environment variables read, in order, when ``--dsn`` is omitted."""
PASSWORD_ENV = ("OAM_DB_PASSWORD", "ORACLE_MEMORY_DB_PASSWORD")
"""Environment variables read, in order, for the database password."""

_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]*:)([^@\s]+)(@)")


class UsageError(ValueError):
    """A command-line mistake: reported in one line with exit code 2."""


def redact(text: str) -> str:
    """``text`` with any password inside a PostgreSQL URL replaced by ``***``."""
    return _URL_PASSWORD.sub(r"\1***\3", text)


def is_postgres_dsn(dsn: str) -> bool:
    return dsn.startswith(("postgresql://", "postgres://"))


def sqlite_path(dsn: str) -> str:
    """The file path of a SQLite DSN."""
    return dsn[len("sqlite:///") :] if dsn.startswith("sqlite:///") else dsn


@dataclass(frozen=True)
class Target:
    """A resolved store location: the DSN (password included, never printed) and store id."""

    dsn: str = field(repr=False)
    memory_store_id: str | None = None
    schema_owner: str | None = None

    @property
    def postgres(self) -> bool:
        return is_postgres_dsn(self.dsn)

    @property
    def shown(self) -> str:
        """The DSN as it may be printed."""
        return redact(self.dsn)

    def store_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {}
        if self.memory_store_id is not None:
            opts["memory_store_id"] = self.memory_store_id
        if self.schema_owner is not None and self.postgres:
            opts["schema_owner"] = self.schema_owner
        return opts


def resolve_target(
    dsn: str | None,
    *,
    user: str | None = None,
    password_stdin: bool = False,
    memory_store_id: str | None = None,
    schema_owner: str | None = None,
    stdin: IO[str] | None = None,
    environ: dict[str, str] | None = None,
) -> Target:
    """Build a :class:`Target` from command-line values and the environment.

    The DSN falls back to ``OAM_DSN`` then ``ORACLE_MEMORY_DB_CONNECT_STRING``. For
    PostgreSQL, ``user`` and a password (standard input with ``password_stdin``, else
    ``OAM_DB_PASSWORD`` / ``ORACLE_MEMORY_DB_PASSWORD``) are placed into the URL. A SQLite
    file has no credentials: a password given for it is an error.
    """
    env = os.environ if environ is None else environ
    if not dsn:
        dsn = next((env[name] for name in DSN_ENV if env.get(name)), None)
    if not dsn:
        raise UsageError("--dsn is required (a SQLite path or a postgresql:// URL), or set OAM_DSN")
    password: str | None = None
    if password_stdin:
        stream = sys.stdin if stdin is None else stdin
        password = stream.readline().rstrip("\r\n")
        if not password:
            raise UsageError("--password-stdin: no password on standard input")
    else:
        password = next((env[name] for name in PASSWORD_ENV if env.get(name)), None)
    if is_postgres_dsn(dsn):
        dsn = _with_credentials(dsn, user, password)
    else:
        if user is not None or password_stdin:
            raise UsageError(
                "--user / --password-stdin apply to PostgreSQL; a SQLite file has none"
            )
        if dsn == ":memory:":
            raise UsageError("--dsn :memory: would vanish when the command ends; give a file path")
    return Target(dsn, memory_store_id, schema_owner)


def _with_credentials(url: str, user: str | None, password: str | None) -> str:
    if user is None and password is None:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    name = user if user is not None else (parts.username or "")
    auth = quote(name, safe="")
    pw = password if password is not None else parts.password
    if pw is not None:
        auth += ":" + quote(pw, safe="")
    return urlunsplit((parts.scheme, f"{auth}@{host}", parts.path, parts.query, parts.fragment))


def with_credentials_of(url: str, primary: str) -> str:
    """``url`` (a standby's) with the user and password of ``primary`` when it names no
    user of its own."""
    theirs = urlsplit(primary)
    if urlsplit(url).username or theirs.username is None:
        return url
    user, password = theirs.username, theirs.password
    return _with_credentials(url, unquote(user), None if password is None else unquote(password))


def share_writes(client: Any, other: Any) -> None:
    """Make ``client`` read ``other``'s writes as its own (read-your-writes across one
    server process's clients on one store: each search strategy has its own client)."""
    mine = getattr(getattr(client.store, "_dialect", None), "replica", None)
    theirs = getattr(getattr(other.store, "_dialect", None), "replica", None)
    if mine is not None and theirs is not None:
        mine.share_writes(theirs)


def open_client(
    target: Target,
    *,
    embedder: str | None = None,
    search_strategy: str | None = None,
    create: bool = True,
    llm: dict[str, str] | None = None,
    read_dsn: str | None = None,
) -> Any:
    """An ``OracleAgentMemory`` on ``target``. ``embedder``: a model name, ``"none"`` (only
    with keyword search) or None for the bundled model. ``create``: create the schema when
    missing (``CREATE_IF_NECESSARY``), else require it. ``llm``: ``model`` and optionally
    ``api_base`` and ``api_key_env`` (the variable holding the key) of an OpenAI-compatible
    LLM, which then extracts memories from the messages this client adds. ``read_dsn``: a
    PostgreSQL hot standby the client reads from (``read_connection``); the schema is only
    ever created or upgraded on ``target``."""
    from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy

    kwargs: dict[str, Any] = dict(target.store_options())
    kwargs["schema_policy"] = (
        SchemaPolicy.CREATE_IF_NECESSARY if create else SchemaPolicy.REQUIRE_EXISTING
    )
    if search_strategy is not None:
        kwargs["search_strategy"] = search_strategy
    if embedder is not None:
        kwargs["embedder"] = None if embedder.lower() == "none" else embedder
    if llm is not None:
        from oracleagentmemory.core.llms import Llm

        options: dict[str, Any] = {}
        if llm.get("api_base"):
            options["api_base"] = llm["api_base"]
        if llm.get("api_key_env"):
            options["api_key"] = os.environ.get(llm["api_key_env"]) or None
        kwargs["llm"] = Llm(model=llm["model"], **options)
    if read_dsn is not None:
        kwargs["read_connection"] = read_dsn
    return OracleAgentMemory(connection=target.dsn, **kwargs)

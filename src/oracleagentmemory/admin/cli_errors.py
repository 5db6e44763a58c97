"""What ``oam`` tells a shell user when a command fails: one line, advice in shell terms
(the verb to run, never a Python argument), and an exit code that says what happened."""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from collections.abc import Callable

from oracleagentmemory.admin.connect import UsageError, redact

EXIT_OK = 0
"""The command did what it was asked."""
EXIT_FAILED = 1
"""The operation failed (or ``check-plsql`` found the store not current)."""
EXIT_USAGE = 2
"""The command line is wrong: a missing or bad argument."""
EXIT_NOT_FOUND = 3
"""What the command names does not exist: the store, its file, a user, thread or memory."""
EXIT_UNREACHABLE = 4
"""The database cannot be reached or opened: server down, wrong host, no permission."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C)."""
EXIT_BROKEN_PIPE = 141
"""The reader of the output went away (``oam stats | head -2``), as for a shell tool."""

EXIT_CODES_HELP = (
    "exit codes: 0 done, 1 failed, 2 usage error, 3 not found (store, file, user, thread, "
    "memory), 4 database unreachable or unopenable, 130 interrupted"
)


class NotFound(LookupError):
    """What a command names does not exist (exit 3)."""


class MissingExtra(RuntimeError):
    """An optional dependency group is not installed."""


_PY_HINT = re.compile(
    r"open it with schema_policy=SchemaPolicy\.CREATE_IF_NECESSARY to "
    r"(create it|create one|upgrade it|add it)"
)
_REEMBED = "(or embedder=None) and call store.reembed(new_embedder)"


_STRATEGY = re.compile(r"SearchStrategy\.(VECTOR|KEYWORD|HYBRID)")
_NO_EMBEDDER = ("pass query_vector instead", "explicit embeddings")


def shell_advice(message: str, dsn: str | None, store_id: str | None) -> str:
    """``message`` with advice for Python callers rewritten as the ``oam`` verb to run."""
    where = f" --dsn {redact(dsn)}" if dsn else ""
    store = f" --memory-store-id {store_id}" if store_id else ""
    named = _STRATEGY.search(message)
    strategy = f" --search-strategy {named.group(1).lower()}" if named else ""

    def verb(match: re.Match[str]) -> str:
        what = match.group(1)
        if what == "upgrade it":
            return f"upgrade it with: oam upgrade-memory-store{where} --memory-store-id " + (
                store_id or "oam"
            )
        extra = strategy if what == "add it" else ""
        return f"{what.split()[0]} it with: oam install-plsql{where}{store}{extra}"

    message = _PY_HINT.sub(verb, message)
    message = _STRATEGY.sub(lambda m: m.group(1).lower(), message)
    if any(hint in message for hint in _NO_EMBEDDER):
        message = message.split(";")[0] + (
            "; the store is opened for vector search: omit "
            "--embedder none, or use --search-strategy keyword"
        )
    return message.replace(
        _REEMBED,
        "(--embedder MODEL); re-embedding is done from Python with store.reembed(new_embedder)",
    )


def _exit_code(exc: BaseException) -> int:
    from oracleagentmemory.core.store.schema._schema import SchemaError

    text = str(exc)
    from oracleagentmemory.admin.schema import StoreMissing

    if isinstance(exc, NotFound | FileNotFoundError | StoreMissing):
        return EXIT_NOT_FOUND
    if isinstance(exc, SchemaError) and text.startswith(("no managed schema", "no SQLite")):
        return EXIT_NOT_FOUND
    if isinstance(exc, ConnectionError | PermissionError | IsADirectoryError):
        return EXIT_UNREACHABLE
    if isinstance(exc, sqlite3.DatabaseError) and text.startswith("cannot open"):
        return EXIT_UNREACHABLE
    if type(exc).__module__.startswith(("psycopg", "psycopg_pool")) and (
        "connection" in text.lower() or type(exc).__name__ == "PoolTimeout"
    ):
        return EXIT_UNREACHABLE
    return EXIT_FAILED


def report(exc: BaseException, dsn: str | None, store_id: str | None) -> int:
    """Print ``exc`` as one ``oam: error:`` line on standard error; return its exit code."""
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    elif isinstance(
        exc,
        UsageError
        | MissingExtra
        | NotFound
        | ValueError
        | TypeError
        | LookupError
        | RuntimeError
        | OSError
        | sqlite3.Error
        | ImportError,
    ):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    err(shell_advice(text, dsn, store_id))
    return EXIT_USAGE if isinstance(exc, UsageError) else _exit_code(exc)


def err(message: str) -> None:
    """One error line on standard error (passwords redacted)."""
    print(f"oam: error: {redact(message)}", file=sys.stderr, flush=True)


def run_guarded(command: Callable[[], int], dsn: str | None, store_id: str | None) -> int:
    """Run one verb: errors become one line and an exit code; a closed output pipe ends the
    command quietly (exit 141), as it ends a shell tool."""
    try:
        return command()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        return report(exc, dsn, store_id)


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

"""``oam memories add | list | delete``: a user's durable memories from the shell."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from oracleagentmemory.admin.cli_errors import EXIT_OK, NotFound
from oracleagentmemory.admin.connect import UsageError
from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES

MEMORY_TYPES = ("memory", "fact", "preference", "guideline")


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``memories`` and its three actions on the verb parser ``sub``."""
    p = sub.add_parser(
        "memories",
        help="add, list or delete memories",
        description="add, list or delete a user's memories",
    )
    common(p)
    acts = p.add_subparsers(dest="memories_verb", metavar="ACTION", required=True)

    a = acts.add_parser(
        "add", help="add a memory; prints its id", description="add a memory; prints its id"
    )
    common(a)
    a.add_argument("content")
    a.add_argument(
        "--user-id", default=None, help="its user (with --thread-id: the thread's, by default)"
    )
    a.add_argument(
        "--agent-id", default=None, help="its agent (with --thread-id: the thread's, by default)"
    )
    a.add_argument(
        "--thread-id",
        default=None,
        help="the thread it belongs to; it takes the thread's user and agent",
    )
    a.add_argument("--type", dest="memory_type", choices=MEMORY_TYPES, default="memory")
    a.add_argument("--ttl-days", type=int, default=None, help="expire after N days")
    a.add_argument("--metadata", default=None, help="a JSON object")
    a.add_argument("--id", dest="memory_id", default=None, help="its id (default: new UUID)")

    ls = acts.add_parser(
        "list",
        help="list a user's memories, newest last",
        description="list a user's memories, newest last",
    )
    common(ls)
    ls.add_argument("--user-id", required=True)
    ls.add_argument("--agent-id", default=None)
    ls.add_argument("--thread-id", default=None)
    ls.add_argument("--type", dest="memory_type", choices=MEMORY_TYPES, default=None)
    ls.add_argument("--limit", type=int, default=20, help="the newest N (default 20; 0 = all)")
    ls.add_argument(
        "--offset",
        type=int,
        default=0,
        help="skip the N newest first (page back: --offset += --limit; needs --limit 1..1000)",
    )
    ls.add_argument("--json", action="store_true", help="one JSON object per memory")

    d = acts.add_parser("delete", help="delete a memory by id", description="delete a memory by id")
    common(d)
    d.add_argument("memory_id")
    d.add_argument("--yes", action="store_true", help="confirm the deletion")


def run(args: argparse.Namespace, client: Any, say: Callable[[str], None]) -> int:
    """Run one ``memories`` action on an open client."""
    if args.memories_verb == "add":
        say(_add(args, client))
    elif args.memories_verb == "list":
        for line in _list(args, client):
            say(line)
    else:
        if not args.yes:
            raise UsageError("memories delete removes data: add --yes to confirm")
        if not client.delete_memory(args.memory_id):
            raise NotFound(f"no memory {args.memory_id!r}")
        say(f"deleted memory {args.memory_id!r}")
    return EXIT_OK


def _add(args: argparse.Namespace, client: Any) -> str:
    kwargs: dict[str, Any] = {"memory_type": args.memory_type}
    if args.metadata is not None:
        try:
            kwargs["metadata"] = json.loads(args.metadata)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--metadata is not JSON: {exc}") from None
        if not isinstance(kwargs["metadata"], dict):
            raise UsageError("--metadata must be a JSON object")
    if args.ttl_days is not None:
        kwargs["ttl_days"] = args.ttl_days
    if args.memory_id is not None:
        kwargs["memory_id"] = args.memory_id
    if args.thread_id is not None:
        try:
            thread = client.get_thread(args.thread_id)
        except KeyError:
            raise NotFound(f"no thread {args.thread_id!r}") from None
        for flag, given, own in (
            ("--user-id", args.user_id, thread.user_id),
            ("--agent-id", args.agent_id, thread.agent_id),
        ):
            if given is not None and given != own:
                raise UsageError(
                    f"{flag} {given!r} is not thread {args.thread_id!r}'s "
                    f"({own!r}); a thread's memory takes the thread's scope"
                )
        return str(thread.add_memory(args.content, **kwargs))
    if args.user_id is None:
        raise UsageError("memories add needs --user-id (or --thread-id)")
    kwargs["user_id"] = args.user_id
    if args.agent_id is not None:
        kwargs["agent_id"] = args.agent_id
    return str(client.add_memory(args.content, **kwargs))


def _list(args: argparse.Namespace, client: Any) -> list[str]:
    if args.limit < 0:
        raise UsageError("--limit must be 0 (all) or more")
    from oracleagentmemory.core.store._overview import MAX_PAGE_ROWS  # late: a light --help

    if args.offset < 0 or (args.offset and not 1 <= args.limit <= MAX_PAGE_ROWS):
        raise UsageError(f"--offset must be 0 or more, with --limit 1..{MAX_PAGE_ROWS}")
    kwargs: dict[str, Any] = {"user_id": args.user_id, "limit": args.limit or None}
    if args.agent_id is not None:
        kwargs["agent_id"] = args.agent_id
    if args.thread_id is not None:
        kwargs["thread_id"] = args.thread_id
    types = [args.memory_type] if args.memory_type else list(MEMORY_RECORD_TYPES)
    if args.offset:  # one LIMIT/OFFSET query: a page deep in the list costs the page
        found = client.store.overview.records(
            types, newest_first=True, offset=args.offset, **kwargs
        )
        records = list(reversed(found.items))
    elif args.memory_type:
        records = client.store.list(args.memory_type, **kwargs)
    else:
        records = client.list_memories(**kwargs)
    lines = []
    for r in records:
        if args.json:
            lines.append(
                json.dumps(
                    {
                        "id": r.id,
                        "record_type": r.record_type,
                        "content": r.content,
                        "user_id": r.user_id,
                        "agent_id": r.agent_id,
                        "thread_id": r.thread_id,
                        "timestamp": r.timestamp,
                        "metadata": r.metadata,
                    },
                    ensure_ascii=False,
                    default=str,
                )
            )
        else:
            lines.append(f"{r.id}\t{r.record_type}\t{r.timestamp}\t{r.content}")
    return lines

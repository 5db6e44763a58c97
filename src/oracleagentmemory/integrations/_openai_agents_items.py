"""OpenAI Agents SDK items <-> thread messages, for ``integrations.openai_agents``.

Each item becomes one message: a role and a readable text (what search, context cards and
memory extraction see) plus the item's exact JSON in the message metadata, under the SDK's
reserved key (``$agent_memory``: never rendered into prompts nor inherited by extracted
memories) as ``{"openai_agents": {"item": json}}``. An item whose JSON does not fit the
metadata limit (``MAX_JSON_BYTES``) is stored with its JSON as the message content instead,
marked ``{"openai_agents": {"item_in_content": true}}``. Any JSON value is an item, as in
``SQLiteSession``: one that is not a chat item (a dict with a ``type`` or ``role`` string),
such as the envelopes of the SDK's ``EncryptedSession``, is stored exactly all the same, as a
message of role :data:`DATA_ROLE` whose text is :data:`DATA_TEXT` (so search, context cards
and extraction see nothing of it, unless its JSON is too large for the metadata and becomes
the text). This module imports no framework.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from oracleagentmemory.apis.records import MessageRecord
from oracleagentmemory.apis.thread import message_text
from oracleagentmemory.core.searchresult import AGENT_MEMORY_METADATA_KEY
from oracleagentmemory.core.store._limits import MAX_JSON_BYTES

_OURS: Final = "openai_agents"
"""Our entry inside the reserved metadata key."""

MESSAGE_ROLES: Final = frozenset({"user", "assistant", "system", "developer"})
_OUTPUT_TYPES: Final = frozenset({"mcp_approval_response", "program_output"})
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
DATA_ROLE: Final = "data"
"""The role of a message holding an item that is not a chat item."""
DATA_TEXT: Final = "[data]"
"""Its readable text: a placeholder, never the item's content."""


def _clean(text: str) -> str:
    """``text`` without NUL characters and with lone surrogates replaced (the store refuses
    both; the exact text stays in the item JSON)."""
    text = text.replace("\x00", "")
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _part_text(part: Any) -> str:
    """A content part (input/output text, refusal, image, file, audio) as text."""
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return ""
    kind = part.get("type")
    if isinstance(part.get("text"), str):
        return str(part["text"])
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return f"[refusal] {part['refusal']}"
    if kind == "input_image":
        return "[image]"
    if kind == "input_file":
        name = part.get("filename")
        return f"[file: {name}]" if isinstance(name, str) and name else "[file]"
    return f"[{kind}]" if isinstance(kind, str) else ""


def content_text(content: Any) -> str:
    """A message's or tool output's content (a string or a list of parts) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        return "\n".join(t for t in (_part_text(p) for p in content) if t)
    if isinstance(content, Mapping):
        return _part_text(content)
    return ""


def _call_text(item: Mapping[str, Any], kind: str) -> str:
    """A tool call (or other non-message item) as ``[type name] arguments``."""
    name = item.get("name")
    head = f"[{kind} {name}]" if isinstance(name, str) and name else f"[{kind}]"
    details = []
    for key in ("arguments", "input", "query", "code", "output", "error"):
        value = item.get(key)
        if isinstance(value, str) and value:
            details.append(value)
    action = item.get("action")
    if isinstance(action, Mapping):
        command = action.get("command") or action.get("commands")
        if isinstance(command, str):
            details.append(command)
        elif isinstance(command, Sequence):
            details.append(" ".join(str(c) for c in command))
        elif isinstance(action.get("query"), str):
            details.append(str(action["query"]))
    queries = item.get("queries")
    if isinstance(queries, Sequence) and not isinstance(queries, str):
        details.append("; ".join(str(q) for q in queries))
    return " ".join([head, *details])


def role_and_text(item: Mapping[str, Any]) -> tuple[str, str]:
    """The role and readable text of one item (see the module docstring)."""
    kind = item.get("type")
    role = item.get("role")
    if isinstance(role, str) and kind in (None, "message"):
        return role, content_text(item.get("content"))
    kind = str(kind)
    if kind == "reasoning":
        summary = content_text(item.get("summary"))
        return "assistant", f"[reasoning] {summary}" if summary else "[reasoning]"
    if kind.endswith("_output") or kind in _OUTPUT_TYPES:
        output = item.get("output")
        text = content_text(output) if output is not None else ""
        return "tool", text or _call_text(item, kind)
    return "assistant", _call_text(item, kind)


def _is_chat_item(item: Any) -> bool:
    """A dict with a non-empty ``type`` or ``role`` string: rendered as conversation text."""
    if not isinstance(item, Mapping):
        return False
    kind, role = item.get("type"), item.get("role")
    return (isinstance(kind, str) and bool(kind)) or (isinstance(role, str) and bool(role))


def _item_json(item: Any) -> str:
    """The item's JSON text: UTF-8 where it encodes, ASCII escapes otherwise (exact either
    way)."""
    text = json.dumps(item, ensure_ascii=False, allow_nan=False)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it as a \\u escape
        return json.dumps(item, allow_nan=False)
    return text


def check_items(items: Any) -> list[dict[str, Any]]:
    """``add_items``' argument checked (TypeError naming ``items[i]``) and turned into the
    messages to store, before anything is written."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise TypeError(f"items must be a list, got {type(items).__name__}")
    messages = []
    for i, item in enumerate(items):
        where = f"items[{i}]"
        if isinstance(item, Mapping) and not all(isinstance(key, str) for key in item):
            raise TypeError(f"{where} keys must be strings (JSON object keys)")
        try:
            text = _item_json(item)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{where} is not JSON-serialisable: {err}") from None
        if _is_chat_item(item):
            message_role, readable = role_and_text(item)
        else:
            message_role, readable = DATA_ROLE, DATA_TEXT
        metadata: dict[str, Any] = {AGENT_MEMORY_METADATA_KEY: {_OURS: {"item": text}}}
        size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode())
        if size > MAX_JSON_BYTES:
            metadata = {AGENT_MEMORY_METADATA_KEY: {_OURS: {"item_in_content": True}}}
            readable = text
        messages.append(
            {"role": _clean(message_role), "content": _clean(readable), "metadata": metadata}
        )
    return messages


def record_item(record: MessageRecord) -> Any:
    """The item a stored message holds: its exact JSON, or, for a message not written by a
    session (or with unreadable JSON), ``{"role": ..., "content": text}``."""
    ours = _ours(record.metadata)
    stored = ours.get("item")
    if ours.get("item_in_content") is True and isinstance(record.content, str):
        stored = record.content
    if isinstance(stored, str):
        try:
            return json.loads(stored)
        except ValueError:
            pass
    role = record.role if record.role in MESSAGE_ROLES else "assistant"
    content = record.content
    text = content if isinstance(content, str) else message_text(content, image_placeholders=True)
    return {"role": role, "content": text}


def _ours(metadata: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Our entry of a message's reserved metadata ({} when absent or malformed)."""
    reserved = (metadata or {}).get(AGENT_MEMORY_METADATA_KEY)
    ours = reserved.get(_OURS) if isinstance(reserved, Mapping) else None
    return ours if isinstance(ours, Mapping) else {}


def stored_item_json(record: MessageRecord) -> str | None:
    """The exact item JSON a message written by a session holds in its metadata."""
    item = _ours(record.metadata).get("item")
    return item if isinstance(item, str) else None

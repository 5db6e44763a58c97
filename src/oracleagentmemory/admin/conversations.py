"""Import conversation files as threads of messages.

Accepted shapes:

- **LoCoMo** (a JSON list of ``{"sample_id", "conversation": {"session_N": [turns], ...}}``):
  one thread per conversation (id ``sample_id``, user ``u-<sample_id>`` unless ``user_id``
  is given), one message per turn with content ``"speaker: text"`` (plus
  ``" [shares <caption>]"`` for a shared image), the session date as its timestamp, and
  ``dia_id`` / ``session`` / ``speaker`` in its metadata;
- **a thread object** ``{"thread_id"?, "user_id"?, "agent_id"?, "messages": [...]}`` or a
  JSON list of such objects;
- **messages**: a JSON list, or JSON Lines, of ``{"role", "content"}`` objects (optional
  ``id``, ``timestamp``, ``metadata``, and ``thread_id`` to spread them over threads).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

BATCH = 100
"""Messages written per ``add_messages`` call (each call is one transaction)."""


@dataclass
class ThreadInput:
    thread_id: str | None
    user_id: str | None
    agent_id: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None


def _session_date(text: str) -> str | None:
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def _dia_id(raw: str) -> str:
    m = re.fullmatch(r"D:?(\d+):(\d+)", raw.strip())
    return f"D{int(m[1])}:{int(m[2])}" if m else raw


def locomo_threads(data: list[Any]) -> list[ThreadInput]:
    out = []
    for conv in data:
        sid = str(conv["sample_id"])
        c = conv["conversation"]
        sessions = sorted(
            (int(k.split("_")[1]), v)
            for k, v in c.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        msgs = []
        for num, session in sessions:
            date = c.get(f"session_{num}_date_time")
            ts = _session_date(date) if isinstance(date, str) else None
            for t in session:
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shares {t['blip_caption']}]"
                msgs.append(
                    {
                        "role": "user",
                        "content": text,
                        "timestamp": ts,
                        "metadata": {
                            "dia_id": _dia_id(str(t["dia_id"])),
                            "session": num,
                            "speaker": t["speaker"],
                        },
                    }
                )
        out.append(ThreadInput(sid, f"u-{sid}", None, msgs))
    return out


def _is_locomo(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], dict)
        and "conversation" in data[0]
        and "sample_id" in data[0]
    )


def _check_message(m: Any, where: str) -> dict[str, Any]:
    if not isinstance(m, dict) or not isinstance(m.get("content"), str):
        raise ValueError(f"{where}: a message needs a string 'content'")
    if not isinstance(m.get("role", "user"), str):
        raise ValueError(f"{where}: 'role' must be a string")
    return m


def parse_conversations(path: Path) -> list[ThreadInput]:
    """Threads from a conversation file (see the module docstring); ValueError naming the
    line or item on bad input."""
    text = path.read_text(encoding="utf-8")
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    data.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
    if _is_locomo(data):
        return locomo_threads(data)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a list of messages or threads")
    if all(isinstance(d, dict) and "messages" in d for d in data):
        threads = []
        for i, d in enumerate(data):
            if not isinstance(d["messages"], list):
                raise ValueError(f"{path}: item {i}: 'messages' must be a list")
            msgs = [_check_message(m, f"{path}: item {i}") for m in d["messages"]]
            threads.append(
                ThreadInput(
                    d.get("thread_id"), d.get("user_id"), d.get("agent_id"), msgs, d.get("metadata")
                )
            )
        return threads
    by_thread: dict[str | None, ThreadInput] = {}
    for i, m in enumerate(data):
        _check_message(m, f"{path}: item {i}")
        tid = m.get("thread_id")
        if tid not in by_thread:
            by_thread[tid] = ThreadInput(tid, m.get("user_id"), m.get("agent_id"))
        by_thread[tid].messages.append(
            {k: v for k, v in m.items() if k not in ("thread_id", "user_id", "agent_id")}
        )
    return list(by_thread.values())


def import_conversations(
    client: Any,
    threads: list[ThreadInput],
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    progress: Callable[[int], None] | None = None,
    late_chunking: bool = True,
) -> list[str]:
    """Write each thread (created when new, appended to when it exists) and its messages in
    batches of ``BATCH``; returns the thread ids. ``user_id`` / ``agent_id`` override the
    file's. ``late_chunking``: the messages' vectors by late chunking where the embedder can
    (``late_chunked``: about 1.3x the turns' tokens instead of 1.9x, HYBRID recall@10 within
    noise of the pair windows on LoCoMo dev, ``docs/retrieval-quality.md``); False: each
    message's pair window, as ``add_messages`` writes them elsewhere."""
    from oracleagentmemory.core._client.messages._message_batch import late_chunked

    with late_chunked(late_chunking):
        return _write_threads(client, threads, user_id, agent_id, progress)


def _write_threads(
    client: Any,
    threads: list[ThreadInput],
    user_id: str | None,
    agent_id: str | None,
    progress: Callable[[int], None] | None,
) -> list[str]:
    ids = []
    for t in threads:
        uid = user_id or t.user_id
        aid = agent_id or t.agent_id
        existing = None
        if t.thread_id is not None:
            try:
                existing = client.get_thread(t.thread_id)
            except KeyError:
                existing = None
        if existing is not None:
            if (uid is not None and existing.user_id != uid) or (
                aid is not None and existing.agent_id != aid
            ):
                raise ValueError(f"thread {t.thread_id!r} exists with another user or agent")
            thread = existing
        else:
            kwargs: dict[str, Any] = {}
            if t.thread_id is not None:
                kwargs["thread_id"] = t.thread_id
            if uid is not None:
                kwargs["user_id"] = uid
            kwargs["agent_id"] = aid  # None: a thread without an agent, never a generated id
            if t.metadata is not None:
                kwargs["metadata"] = t.metadata
            thread = client.create_thread(**kwargs)
        for start in range(0, len(t.messages), BATCH):
            part = t.messages[start : start + BATCH]
            thread.add_messages([{k: v for k, v in m.items() if v is not None} for m in part])
            if progress is not None:
                progress(len(part))
        ids.append(thread.thread_id)
    return ids

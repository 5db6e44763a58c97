"""Messages whose content is a sequence of parts (text and images).

A message with parts is stored as one message record whose ``content`` column holds its text
parts joined by newlines (what keyword search and plain reads see) and whose ``extra`` holds
the layout (``{"parts": [...]}``: each text part, and each image part by id, MIME type and
description); each image becomes an image record (``message_id`` = the message, the message's
scope, expiry and time) with its bytes in the blob table, written in the same transaction.
Reading a message rebuilds its parts; image bytes are loaded only on request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from oracleagentmemory.apis.message import ImageContent, ImageMimeType, MessageContent, TextContent
from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core.store.schema._rows import (
    PlannedRecord,
    WriteContext,
    dumps_json,
    plan_retrieval,
)

PARTS_KEY = "parts"


def is_parts(content: Any) -> bool:
    """Whether ``content`` is a sequence of message content parts (not a string)."""
    return (
        isinstance(content, Sequence)
        and not isinstance(content, str | bytes | bytearray)
        and all(isinstance(part, MessageContent) for part in content)
    )


def plan_message_parts(
    parts: Sequence[MessageContent],
    *,
    where: str,
    message_id: str,
    thread_id: str | None,
    user_id: str | None,
    agent_id: str | None,
    event_ts: str | None,
    ttl_days: int | None,
    ttl_anchor: TimeToLiveAnchor,
    ctx: WriteContext,
) -> tuple[str, str, list[PlannedRecord]]:
    """The text, the layout JSON and the planned image records of a message with parts."""
    texts: list[str] = []
    layout: list[dict[str, Any]] = []
    images: list[PlannedRecord] = []
    for j, part in enumerate(parts):
        if isinstance(part, TextContent):
            texts.append(part.text)
            layout.append({"type": "text", "text": part.text, "id": part.id, "ts": part.timestamp})
            continue
        if not isinstance(part, ImageContent):
            raise TypeError(f"{where}[{j}] must be a TextContent or an ImageContent")
        if part.bytes is None or not part.bytes:
            raise ValueError(f"{where}[{j}]: an image part of a new message needs its bytes")
        if not part.id:
            raise ValueError(f"{where}[{j}]: an image part needs an id")
        mime = ImageMimeType(part.mime_type).value
        layout.append(
            {
                "type": "image",
                "id": part.id,
                "mime_type": mime,
                "description": part.description,
                "ts": part.timestamp,
            }
        )
        retrieval = plan_retrieval(
            source=part.description or None,
            caller_chunks=None,
            vectors=None,
            chunker=ctx.chunker,
            has_vectors=ctx.has_vectors,
            name=f"{where}[{j}]",
        )
        images.append(
            PlannedRecord(
                family="image",
                record_type="image",
                id=part.id,
                content=part.description,
                role=None,
                thread_id=thread_id,
                user_id=user_id,
                agent_id=agent_id,
                event_ts=part.timestamp or event_ts,
                metadata_json=None,
                status=RecordStatus.VALID,
                ttl_days=ttl_days,
                ttl_anchor=ttl_anchor,
                retrieval=retrieval,
                extra_json=dumps_json({"mime_type": mime, "message_id": message_id}, "mime_type"),
                blob=bytes(part.bytes),
            )
        )
    return "\n".join(texts), dumps_json({PARTS_KEY: layout}, "parts") or "{}", images


def parts_from_extra(extra: Any) -> tuple[MessageContent, ...] | None:
    """A stored message's parts (image bytes not loaded), or None for a plain-text message."""
    data = json.loads(extra) if isinstance(extra, str | bytes) else extra
    if not isinstance(data, dict) or not isinstance(data.get(PARTS_KEY), list):
        return None
    out: list[MessageContent] = []
    for item in data[PARTS_KEY]:
        if item.get("type") == "image":
            out.append(
                ImageContent(
                    None,
                    ImageMimeType(item["mime_type"]),
                    item.get("description"),
                    id=item["id"],
                    timestamp=item.get("ts"),
                )
            )
        else:
            kwargs = {"id": item["id"]} if item.get("id") else {}
            out.append(TextContent(item.get("text", ""), timestamp=item.get("ts"), **kwargs))
    return tuple(out)

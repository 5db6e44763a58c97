"""Message content with images: what ``add_messages`` accepts, and reading images back.

``add_messages`` takes a message's content as a string or as a sequence of parts:
``TextContent`` / ``ImageContent`` objects, or OpenAI-style dicts (``{"type": "text",
"text": ...}``, ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``,
``{"type": "input_image", "image_url": ...}``, Anthropic-style ``{"type": "image", "source":
{"type": "base64", ...}}``). Images must carry their bytes (a data URL, not a web address), be
PNG, JPEG or WEBP, and fit ``max_raw_image_bytes``. Reads rebuild the parts; an image's
description always comes from its image record (it may have been captioned since), its bytes
only when asked for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, MessageContent, TextContent
from oracleagentmemory.apis.records import ImageRecord, MessageRecord
from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core._client.messages._images import check_image, sniff_mime_type
from oracleagentmemory.core.llms._messages import ImagePart, TextPart, _dict_part
from oracleagentmemory.core.oraclememorystore import OracleMemoryStore
from oracleagentmemory.core.store._limits import check_text


def _image_from_dict(part: ImagePart, where: str, limits: Any) -> ImageContent:
    if part.data is None:
        raise ValueError(
            f"{where}: a stored message's image needs its bytes; pass a data: URL or an "
            "ImageContent, not a web address"
        )
    mime = part.mime_type or getattr(sniff_mime_type(part.data), "value", None)
    data, checked = check_image(part.data, mime if mime else NOT_SET_MARKER, limits)
    return ImageContent(data, checked)


def normalize_content(content: Any, where: str, limits: Any) -> str | tuple[MessageContent, ...]:
    """``content`` as a string or a tuple of parts (TypeError / ValueError naming ``where``);
    every image is checked against ``limits`` (``max_raw_image_bytes``)."""
    if isinstance(content, str):
        return check_text(content, where)
    if (
        isinstance(content, Mapping)
        or not isinstance(content, Sequence)
        or isinstance(content, bytes | bytearray)
    ):
        raise TypeError(f"{where} must be a string or a list of content parts")
    out: list[MessageContent] = []
    for j, part in enumerate(content):
        at = f"{where}[{j}]"
        if isinstance(part, TextContent):
            check_text(part.text, f"{at}.text")
            out.append(part)
        elif isinstance(part, ImageContent):
            if part.bytes is None:
                raise ValueError(f"{at}: an ImageContent of a new message needs its bytes")
            check_image(part.bytes, part.mime_type, limits)
            out.append(part)
        elif isinstance(part, Mapping):
            if part.get("type") == "image" and "source" not in part:
                raise ValueError(f"{at}: an image part needs its bytes (a base64 source)")
            parsed = _dict_part(part, at)
            if isinstance(parsed, TextPart):
                out.append(TextContent(check_text(parsed.text, f"{at}.text")))
            else:
                out.append(_image_from_dict(parsed, at, limits))
        else:
            raise TypeError(
                f"{at}: a content part must be a TextContent, an ImageContent or a dict"
            )
    return tuple(out)


def images_of(content: Any) -> list[ImageContent]:
    """The image parts of a message's content (none for a string)."""
    if isinstance(content, str) or content is None:
        return []
    return [part for part in content if isinstance(part, ImageContent)]


def with_descriptions(content: Any, descriptions: Mapping[str, str]) -> Any:
    """``content`` with the image parts named in ``descriptions`` described."""
    if not descriptions or isinstance(content, str):
        return content
    return tuple(
        dataclasses.replace(part, description=descriptions[part.id])
        if isinstance(part, ImageContent) and part.id in descriptions
        else part
        for part in content
    )


def load_images(
    store: OracleMemoryStore, messages: Sequence[Any], with_bytes: bool | Collection[str] = False
) -> list[Any]:
    """``messages`` (``Message`` objects or message records) with each image part's current
    description from its image record, and its bytes when ``with_bytes`` is True or names
    its id. Messages without images are returned as they are (one lookup per image)."""
    out = []
    for message in messages:
        parts = images_of(message.content)
        if not parts:
            out.append(message)
            continue
        fresh: dict[str, ImageContent] = {}
        for part in parts:
            wanted = with_bytes is True or (
                not isinstance(with_bytes, bool) and part.id in with_bytes
            )
            record = store.get("image", part.id, include_bytes=True if wanted else NOT_SET_MARKER)
            if isinstance(record, ImageRecord):
                fresh[part.id] = dataclasses.replace(
                    part,
                    description=record.content,
                    bytes=record.bytes if wanted else None,
                    mime_type=ImageMimeType(record.mime_type),
                )
        content = tuple(
            fresh.get(p.id, p) if isinstance(p, ImageContent) else p for p in message.content
        )
        out.append(dataclasses.replace(message, content=content))
    return out


def message_from_record(record: MessageRecord) -> Message:
    """A stored message record as a ``Message`` (its content as stored: text or parts)."""
    return Message(
        role=record.role or "",
        content=record.content,
        timestamp=record.timestamp,
        metadata=record.metadata,
        id=record.id,
    )

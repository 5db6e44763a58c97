"""Message content parts: text and images."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import Enum


class ImageMimeType(str, Enum):
    """Image formats accepted by the SDK."""

    PNG = "image/png"
    JPEG = "image/jpeg"
    WEBP = "image/webp"


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass
class MessageContent:
    """Base class of the ordered parts of a structured message."""


@dataclass
class TextContent(MessageContent):
    """A text part of a message."""

    text: str
    id: str = field(default_factory=_new_id, kw_only=True)
    timestamp: str | None = field(default=None, kw_only=True)


@dataclass
class ImageContent(MessageContent):
    """An image part of a message (bytes may be omitted when only the reference is loaded)."""

    bytes: bytes | None
    mime_type: ImageMimeType
    description: str | None = None
    id: str = field(default_factory=_new_id, kw_only=True)
    timestamp: str | None = field(default=None, kw_only=True)

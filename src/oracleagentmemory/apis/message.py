"""Chat messages and their content parts: text and images (immutable value types)."""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Literal, TypeAlias

MetadataValue: TypeAlias = dict[str, Any] | None
"""Metadata of a record: a JSON object, or None."""
JsonSchema: TypeAlias = dict[str, Any]
"""A JSON Schema document."""


class ImageMimeType(str, Enum):
    """Image formats accepted by the SDK."""

    JPEG = "image/jpeg"
    PNG = "image/png"
    WEBP = "image/webp"


def _new_id() -> str:
    return str(uuid.uuid4())


def _set(obj: object, name: str, value: Any) -> None:
    """Normalise a field of a frozen dataclass during ``__post_init__``."""
    object.__setattr__(obj, name, value)


def _check_optional_str(owner: str, name: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{owner} {name} must be a str or None, got {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class MessageContent(ABC):
    """Base class of the ordered parts of a structured message (frozen, hashable)."""

    id: str = field(default_factory=_new_id, kw_only=True)
    timestamp: str | None = field(default=None, kw_only=True)

    @abstractmethod
    def _to_dict(self) -> dict[str, Any]:
        """The part as an OpenAI-style content-part dict."""

    def _check_common(self) -> None:
        owner = type(self).__name__
        if not isinstance(self.id, str):
            raise TypeError(f"{owner} id must be a str, got {type(self.id).__name__}")
        _check_optional_str(owner, "timestamp", self.timestamp)


@dataclass(frozen=True, slots=True)
class TextContent(MessageContent):
    """A text part of a message."""

    type: ClassVar[Literal["text"]] = "text"
    text: str

    def __post_init__(self) -> None:
        self._check_common()
        if not isinstance(self.text, str):
            raise TypeError(f"TextContent text must be a str, got {type(self.text).__name__}")

    def _to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ImageContent(MessageContent):
    """An image part of a message (``bytes`` is None when only the reference was loaded).

    ``mime_type`` may be given as an :class:`ImageMimeType` or its value (``"image/png"``).
    """

    type: ClassVar[Literal["image"]] = "image"
    bytes: bytes | None
    mime_type: ImageMimeType
    description: str | None = None
    _validated_image: bool | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check_common()
        if self.bytes is not None and not isinstance(self.bytes, bytes | bytearray | memoryview):
            raise TypeError(
                f"ImageContent bytes must be bytes or None, got {type(self.bytes).__name__}"
            )
        if self.bytes is not None and not isinstance(self.bytes, bytes):
            _set(self, "bytes", bytes(self.bytes))
        try:
            _set(self, "mime_type", ImageMimeType(self.mime_type))
        except ValueError:
            raise ValueError(
                "ImageContent mime_type must be one of "
                f"{[m.value for m in ImageMimeType]}, got {self.mime_type!r}"
            ) from None
        _check_optional_str("ImageContent", "description", self.description)
        _set(self, "_validated_image", True)

    def _to_dict(self) -> dict[str, Any]:
        part: dict[str, Any] = {"type": "image", "mime_type": self.mime_type.value, "id": self.id}
        if self.description is not None:
            part["description"] = self.description
        return part


def content_parts(owner: str, content: Any) -> str | tuple[MessageContent, ...]:
    """``content`` as a str or a tuple of parts; TypeError for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts = tuple(content)
        if all(isinstance(part, MessageContent) for part in parts):
            return parts
    raise TypeError(f"{owner} content must be a str or a sequence of MessageContent parts")


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message, as given to ``add_messages`` and returned by reads (immutable).

    ``content`` is plain text or an ordered sequence of text and image parts (stored as a
    tuple). ``id`` and ``timestamp`` are filled in by the thread when it stores the message.
    """

    role: str
    content: str | Sequence[MessageContent]
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        # Fail at construction, not deep inside a store write or a prompt render.
        if not isinstance(self.role, str):
            raise TypeError(f"Message role must be a str, got {type(self.role).__name__}")
        _set(self, "content", content_parts("Message", self.content))
        _check_optional_str("Message", "timestamp", self.timestamp)
        if self.metadata is not None and not isinstance(self.metadata, Mapping):
            raise TypeError(
                f"Message metadata must be a dict or None, got {type(self.metadata).__name__}"
            )
        if self.metadata is not None and not isinstance(self.metadata, dict):
            _set(self, "metadata", dict(self.metadata))
        _check_optional_str("Message", "id", self.id)

    def __hash__(self) -> int:
        # metadata (a dict) is left out so messages hash; equal messages still hash equal.
        return hash((self.role, self.content, self.timestamp, self.id))

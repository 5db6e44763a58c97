"""Prompts in every accepted form -> one chat transcript -> each API's wire format.

A prompt is a str (one user message), a single message mapping, or a sequence of
:class:`Message` objects and ``{"role", "content"}`` mappings. Content is text or a list of
parts: :class:`TextContent` / :class:`ImageContent`, or OpenAI-style dict parts
(``text``/``input_text``, ``image_url``/``input_image``, and Anthropic-style ``image`` with a
base64 ``source``). Images travel as data URLs; an http(s) image URL given in a dict part is
passed through unchanged (its size cannot be checked here).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.apis.message import ImageContent, TextContent
from oracleagentmemory.apis.thread import Message

_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^;,]*)*?);base64,", re.I)


@dataclass(frozen=True)
class TextPart:
    """A text part of a message."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image part: a data URL (``data`` holds its decoded bytes) or a remote URL
    (``data`` None: its size is unknown here and nothing is fetched)."""

    url: str
    mime_type: str | None
    data: bytes | None
    where: str
    detail: str | None = None


Part = TextPart | ImagePart


@dataclass
class ChatMessage:
    """One message of the normalised transcript."""

    role: str
    parts: list[Part] = field(default_factory=list)

    @property
    def images(self) -> list[ImagePart]:
        """The message's image parts, in order."""
        return [part for part in self.parts if isinstance(part, ImagePart)]

    @property
    def text(self) -> str:
        """The message's text parts joined by newlines."""
        return "\n".join(part.text for part in self.parts if isinstance(part, TextPart))


def data_url(mime_type: str, data: bytes) -> str:
    """``data:<mime>;base64,<data>``."""
    return f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"


def _image_from_url(url: object, where: str, detail: object = None) -> ImagePart:
    if not isinstance(url, str) or not url:
        raise ValueError(f"{where}: an image part needs a non-empty url string")
    if detail is not None and not isinstance(detail, str):
        raise TypeError(f"{where}: detail must be a str")
    match = _DATA_URL.match(url)
    if match:
        try:
            raw = base64.b64decode(url[match.end() :], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{where}: the image data URL is not valid base64") from exc
        mime = match.group("mime")
        if mime is None or not mime.lower().startswith("image/"):
            raise ValueError(f"{where}: a data URL image must have an image/* type, got {mime!r}")
        return ImagePart(url, mime.lower(), raw, where, detail)
    if url.startswith(("http://", "https://")):
        return ImagePart(url, None, None, where, detail)
    raise ValueError(f"{where}: an image url must be a data: URL or an http(s) URL")


def _dict_part(part: Mapping[str, Any], where: str) -> Part:
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text"):
        text = part.get("text")
        if not isinstance(text, str):
            raise TypeError(f"{where}: a {kind} part needs a str 'text'")
        return TextPart(text)
    if kind == "image_url":
        spec = part.get("image_url")
        if isinstance(spec, Mapping):
            return _image_from_url(spec.get("url"), where, spec.get("detail"))
        return _image_from_url(spec, where)
    if kind == "input_image":
        return _image_from_url(part.get("image_url"), where, part.get("detail"))
    if kind == "image":
        source = part.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64":
            mime, data = source.get("media_type"), source.get("data")
            if not isinstance(mime, str) or not isinstance(data, str):
                raise TypeError(f"{where}: an image source needs str media_type and data")
            return _image_from_url(f"data:{mime};base64,{data}", where)
        if isinstance(source, Mapping) and source.get("type") == "url":
            return _image_from_url(source.get("url"), where)
        raise ValueError(f"{where}: an image part needs a base64 or url source")
    raise ValueError(
        f"{where}: unsupported content part type {kind!r} "
        "(use text, image_url, input_text or input_image)"
    )


def _content_parts(content: object, where: str) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)]
    if isinstance(content, Mapping) or not isinstance(content, Sequence):
        raise TypeError(f"{where} must be a str or a list of parts, got {type(content).__name__}")
    parts: list[Part] = []
    for j, part in enumerate(content):
        at = f"{where}[{j}]"
        if isinstance(part, TextContent):
            parts.append(TextPart(part.text))
        elif isinstance(part, ImageContent):
            if part.bytes is None:
                raise ValueError(f"{at}: the ImageContent has no bytes loaded")
            mime = getattr(part.mime_type, "value", part.mime_type)
            parts.append(ImagePart(data_url(str(mime), part.bytes), str(mime), part.bytes, at))
        elif isinstance(part, Mapping):
            parts.append(_dict_part(part, at))
        else:
            raise TypeError(f"{at}: unsupported content part {type(part).__name__}")
    return parts


def _message(item: object, where: str) -> ChatMessage:
    if isinstance(item, Message):
        role, content = item.role, item.content
    elif isinstance(item, Mapping):
        if "role" not in item or "content" not in item:
            raise ValueError(f"{where} must have 'role' and 'content'")
        role, content = item["role"], item["content"]
    else:
        raise TypeError(
            f"{where} must be a Message or a mapping with role and content, "
            f"got {type(item).__name__}"
        )
    if not isinstance(role, str) or not role.strip():
        raise ValueError(f"{where}.role must be a non-empty str")
    return ChatMessage(role, _content_parts(content, f"{where}.content"))


def normalize_prompt(prompt: object) -> list[ChatMessage]:
    """The prompt as a list of :class:`ChatMessage` (ValueError/TypeError naming ``prompt``)."""
    if isinstance(prompt, str):
        return [ChatMessage("user", [TextPart(prompt)])]
    if isinstance(prompt, Message | Mapping):
        return [_message(prompt, "prompt")]
    if isinstance(prompt, Sequence) and not isinstance(prompt, bytes | bytearray):
        messages = [_message(item, f"prompt[{i}]") for i, item in enumerate(prompt)]
        if not messages:
            raise ValueError("prompt must not be an empty list of messages")
        return messages
    raise TypeError(
        "prompt must be a str, a message mapping, or a sequence of Message objects / mappings, "
        f"got {type(prompt).__name__}"
    )


def images_of(messages: Sequence[ChatMessage]) -> list[ImagePart]:
    """Every image part of the transcript, in order."""
    return [image for message in messages for image in message.images]


def append_user_text(messages: list[ChatMessage], text: str) -> list[ChatMessage]:
    """A copy of ``messages`` with ``text`` added to the last user message (or a new one)."""
    out = [ChatMessage(m.role, list(m.parts)) for m in messages]
    for message in reversed(out):
        if message.role == "user":
            message.parts.append(TextPart(("\n\n" if message.parts else "") + text))
            return out
    out.append(ChatMessage("user", [TextPart(text)]))
    return out


# -- wire formats -------------------------------------------------------------------------------


def to_chat_completions(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """``messages`` for ``POST /chat/completions``: text-only content as a plain string."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if not message.images:
            out.append({"role": message.role, "content": message.text})
            continue
        parts: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "text": part.text})
            else:
                url: dict[str, Any] = {"url": part.url}
                if part.detail is not None:
                    url["detail"] = part.detail
                parts.append({"type": "image_url", "image_url": url})
        out.append({"role": message.role, "content": parts})
    return out


def to_responses_input(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """``input`` for ``POST /responses``: text-only content as a plain string."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if not message.images:
            out.append({"role": message.role, "content": message.text})
            continue
        text_type = "output_text" if message.role == "assistant" else "input_text"
        parts: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"type": text_type, "text": part.text})
            else:
                image: dict[str, Any] = {"type": "input_image", "image_url": part.url}
                if part.detail is not None:
                    image["detail"] = part.detail
                parts.append(image)
        out.append({"role": message.role, "content": parts})
    return out

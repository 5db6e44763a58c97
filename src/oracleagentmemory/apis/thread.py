"""Thread-level value types: the chat ``Message`` and the ``IThread`` interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from oracleagentmemory.apis.message import ImageContent, MessageContent, TextContent

if TYPE_CHECKING:
    from oracleagentmemory.apis.contextcard import ContextCard
    from oracleagentmemory.apis.searchresult import SearchResult
    from oracleagentmemory.apis.summary import Summary


class ThreadMessageTypedDictT(TypedDict):
    """A message given as a plain dict: ``role`` and ``content`` are required.

    Structured ``content`` is a list of part dicts (``{"type": "text", "text": ...}`` and the
    like); the thread converts them into :class:`MessageContent` parts.
    """

    role: str
    content: str | Sequence[Mapping[str, Any]]
    id: NotRequired[str | None]
    timestamp: NotRequired[str | None]
    metadata: NotRequired[dict[str, Any] | None]


@dataclass
class Message:
    """One chat message of a thread, as given to ``add_messages`` and returned by reads.

    ``content`` is plain text or an ordered sequence of text and image parts. ``id`` and
    ``timestamp`` are filled in by the thread when it stores the message.
    """

    role: str
    content: str | Sequence[MessageContent]
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        # Fail at construction, not deep inside a store write or a prompt render.
        if not isinstance(self.role, str):
            raise TypeError(f"role must be a str, got {type(self.role).__name__}")
        if not isinstance(self.content, str) and not (
            isinstance(self.content, Sequence)
            and all(isinstance(part, MessageContent) for part in self.content)
        ):
            raise TypeError("content must be a str or a sequence of MessageContent parts")
        if self.timestamp is not None and not isinstance(self.timestamp, str):
            raise TypeError(f"timestamp must be a str or None, got {type(self.timestamp).__name__}")
        if self.metadata is not None and not isinstance(self.metadata, dict):
            raise TypeError(f"metadata must be a dict or None, got {type(self.metadata).__name__}")
        if self.id is not None and not isinstance(self.id, str):
            raise TypeError(f"id must be a str or None, got {type(self.id).__name__}")


def message_text(content: Any, *, image_placeholders: bool = False) -> str:
    """The text of a message's content: plain text as is, text parts joined by newlines.

    With ``image_placeholders`` an image part reads ``[image: description]`` (``[image]`` with
    no description), so a prompt still shows that the message carried an image. ``None``
    reads as ``''``.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, TextContent):
            parts.append(part.text)
        elif isinstance(part, ImageContent) and image_placeholders:
            parts.append(f"[image: {part.description}]" if part.description else "[image]")
    return "\n".join(parts)


class IThread(ABC):
    """A conversation thread: its messages, memories, context card and summary.

    The abstract surface is deliberately small; ``OracleThread`` documents the full parameters
    of each method.
    """

    @property
    @abstractmethod
    def thread_id(self) -> str:
        """Identifier of the thread."""

    @property
    @abstractmethod
    def user_id(self) -> str | None:
        """Identifier of the user the thread belongs to."""

    @property
    @abstractmethod
    def agent_id(self) -> str | None:
        """Identifier of the agent the thread belongs to."""

    @abstractmethod
    def add_messages(self, *args: Any, **kwargs: Any) -> list[str]:
        """Store messages; returns their identifiers in input order."""

    @abstractmethod
    def get_messages(self, *args: Any, **kwargs: Any) -> list[Message]:
        """Return stored messages in chronological order."""

    @abstractmethod
    def add_memory(self, *args: Any, **kwargs: Any) -> str:
        """Store a memory scoped to the thread; returns its identifier."""

    @abstractmethod
    def search(self, *args: Any, **kwargs: Any) -> list[SearchResult]:
        """Search records relevant to a query with the thread's default scope."""

    @abstractmethod
    def get_context_card(self, *args: Any, **kwargs: Any) -> ContextCard:
        """Return a context card for the thread."""

    @abstractmethod
    def get_summary(self, *args: Any, **kwargs: Any) -> Summary:
        """Return a summary of the thread."""

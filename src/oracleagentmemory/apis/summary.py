"""The thread-summary interface returned by thread APIs."""

from __future__ import annotations

from abc import ABC, abstractmethod


class Summary(ABC):
    """A synthesized summary of a thread."""

    @property
    @abstractmethod
    def content(self) -> str:
        """The synthesized summary text."""

    @property
    def formatted_content(self) -> str:
        """The text used in prompt flows; the summary text unless a subclass says otherwise."""
        return self.content

    def __str__(self) -> str:
        return self.content

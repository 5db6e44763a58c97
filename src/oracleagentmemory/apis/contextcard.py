"""The context-card interface returned by thread APIs."""

from __future__ import annotations

from abc import ABC, abstractmethod


class ContextCard(ABC):
    """A rendered, prompt-ready view of a thread's state."""

    @property
    @abstractmethod
    def content(self) -> str:
        """The rendered context card text."""

    @property
    def formatted_content(self) -> str:
        """The text used in prompt flows; the rendered card unless a subclass says otherwise."""
        return self.content

    def __str__(self) -> str:
        return self.content

"""The concrete thread summary."""

from __future__ import annotations

from oracleagentmemory.apis.summary import Summary


class OracleSummary(Summary):
    """Summary returned by an Oracle thread: plain synthesized text.

    ``content``, ``formatted_content`` and ``str()`` all return the text unchanged; callers
    that embed it in XML-like prompts escape it there (a context card does).
    """

    def __init__(self, content: str) -> None:
        if not isinstance(content, str):
            raise TypeError(f"content must be a str, got {type(content).__name__}")
        self._content = content

    @property
    def content(self) -> str:
        """The synthesized summary text."""
        return self._content

    @property
    def formatted_content(self) -> str:
        """The summary text used in prompt flows (the plain text)."""
        return self._content

    def __str__(self) -> str:
        return self._content

    def __repr__(self) -> str:
        return f"OracleSummary(content={self._content!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OracleSummary):
            return NotImplemented
        return self._content == other._content

    def __hash__(self) -> int:
        return hash(self._content)

"""Errors raised by the LLM adapters."""

from __future__ import annotations

from oracleagentmemory.core._shared._http import HttpRequestError


class LlmRequestError(HttpRequestError):
    """The model server could not be reached or refused a request (after retries).

    ``status_code`` is the HTTP status (``None`` when no response came back) and
    ``server_message`` the server's own explanation, when it gave one.
    """


class LlmOutputError(ValueError):
    """The model answered, but not with what was asked: no JSON, JSON that does not match the
    schema (after the repair retry), or an answer cut off at the token limit.

    ``text`` is the model's last answer, ``errors`` the reasons it was rejected and
    ``finish_reason`` the provider's.
    """

    def __init__(
        self,
        message: str,
        *,
        text: str = "",
        errors: list[str] | None = None,
        finish_reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.text = text
        self.errors = list(errors or [])
        self.finish_reason = finish_reason

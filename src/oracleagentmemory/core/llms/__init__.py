"""LLM adapters: ``Llm`` for served models (OpenAI protocol or litellm) and its errors.

The offline llama.cpp model lives in :mod:`oracleagentmemory.core.llms.local` (extra
``[local-llm]``).
"""

from typing import TYPE_CHECKING

from oracleagentmemory._lazy import lazy_exports

if TYPE_CHECKING:
    from oracleagentmemory.core.llms._errors import LlmOutputError, LlmRequestError
    from oracleagentmemory.core.llms.llm import Llm, LlmApiType

_EXPORTS = {
    "oracleagentmemory.core.llms._errors": (
        "LlmOutputError",
        "LlmRequestError",
    ),
    "oracleagentmemory.core.llms.llm": (
        "Llm",
        "LlmApiType",
    ),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = ["Llm", "LlmApiType", "LlmOutputError", "LlmRequestError"]

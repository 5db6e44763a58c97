"""LLM adapters: ``Llm`` for served models (OpenAI protocol or litellm) and its errors.

The offline llama.cpp model lives in :mod:`oracleagentmemory.core.llms.local` (extra
``[local-llm]``).
"""

from oracleagentmemory.core.llms._errors import LlmOutputError, LlmRequestError
from oracleagentmemory.core.llms.llm import Llm, LlmApiType

__all__ = ["Llm", "LlmApiType", "LlmOutputError", "LlmRequestError"]

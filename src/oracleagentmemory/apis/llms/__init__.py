"""The LLM adapter interface."""

from oracleagentmemory.apis.llms.llm import (
    ChatMessageMappingT,
    ChatMessages,
    ChatMessageTypedDictT,
    ILlm,
    LlmPrompt,
    LlmResponse,
    LlmUsage,
    Prompt,
)

__all__ = [
    "ChatMessageMappingT",
    "ChatMessageTypedDictT",
    "ChatMessages",
    "ILlm",
    "LlmPrompt",
    "LlmResponse",
    "LlmUsage",
    "Prompt",
]

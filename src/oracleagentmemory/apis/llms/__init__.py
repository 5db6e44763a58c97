"""The LLM adapter interface: ``ILlm`` and the prompt, chat-message, response and usage types
it speaks; ``core.llms`` holds the adapters."""

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

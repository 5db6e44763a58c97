"""The LLM adapter interface."""

from oracleagentmemory.apis.llms.llm import ChatMessageTypedDictT, ILlm, LlmPrompt, LlmResponse

__all__ = ["ChatMessageTypedDictT", "ILlm", "LlmPrompt", "LlmResponse"]

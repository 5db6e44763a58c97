"""A user's own LLM and reranker, written with the reference's signatures.

``make test`` runs ``mypy --strict`` here; ``tests/test_llm_interfaces.py`` instantiates them.
The reference requires both ``generate`` and ``generate_async`` of an ``ILlm`` and only
``rerank_async`` of an ``IReranker``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oracleagentmemory.apis import ILlm, IReranker, LlmResponse, Message, RerankResponse
from oracleagentmemory.apis.llms.llm import ChatMessageTypedDictT
from oracleagentmemory.apis.reranker import RerankResponseResult


class UserLlm(ILlm):
    def generate(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        return LlmResponse(text="{}" if response_json_schema else "hello")

    async def generate_async(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        return self.generate(prompt, response_json_schema=response_json_schema, **kwargs)


class UserReranker(IReranker):
    async def rerank_async(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        scored = sorted(range(len(documents)), key=lambda i: -documents[i].count(query))
        return RerankResponse(
            results=[
                RerankResponseResult(index=i, relevance_score=float(documents[i].count(query)))
                for i in scored
            ]
        )

"""Which transport serves a model name: our OpenAI-protocol client, or litellm.

The rule, applied to the text before the first ``/`` of the model name (its *prefix*):

- A prefix naming an OpenAI-compatible server kind (:data:`OPENAI_COMPATIBLE`: ``openai``,
  ``hosted_vllm``, ``ollama``, ``lm_studio``, ...) is removed and the rest is sent over the
  OpenAI protocol; where the kind has a well-known local address it is the default
  ``api_base``.
- A prefix naming any other litellm provider (:data:`LITELLM_PROVIDERS`: ``anthropic``,
  ``bedrock``, ``vertex_ai``, ``gemini``, ``azure``, ...) routes through litellm, which must be
  installed (``pip install 'recallwell[litellm]'``).
- Anything else (no slash, or a slash that is part of the served model's own name, such as
  ``Qwen/Qwen2.5-7B-Instruct`` on vLLM) is sent unchanged over the OpenAI protocol.
"""

from __future__ import annotations

from dataclasses import dataclass

# prefix -> default api_base ("" = OPENAI_BASE_URL or OpenAI's; None = api_base is required)
OPENAI_COMPATIBLE: dict[str, str | None] = {
    "openai": "",
    "custom_openai": None,
    "openai_like": None,
    "hosted_vllm": None,
    "vllm": None,
    "ollama": "http://localhost:11434/v1",
    "ollama_chat": "http://localhost:11434/v1",
    "lm_studio": "http://localhost:1234/v1",
    "llamafile": "http://localhost:8080/v1",
}

LITELLM_PROVIDERS = frozenset(
    {
        "ai21",
        "aleph_alpha",
        "anthropic",
        "anyscale",
        "azure",
        "azure_ai",
        "baseten",
        "bedrock",
        "bedrock_converse",
        "cerebras",
        "clarifai",
        "cloudflare",
        "codestral",
        "cohere",
        "cohere_chat",
        "dashscope",
        "databricks",
        "deepinfra",
        "deepseek",
        "fireworks_ai",
        "friendliai",
        "gemini",
        "github",
        "groq",
        "huggingface",
        "mistral",
        "moonshot",
        "nebius",
        "nlp_cloud",
        "novita",
        "nvidia_nim",
        "oci",
        "openrouter",
        "palm",
        "perplexity",
        "predibase",
        "replicate",
        "sagemaker",
        "sagemaker_chat",
        "sambanova",
        "snowflake",
        "together_ai",
        "vertex_ai",
        "vertex_ai_beta",
        "volcengine",
        "watsonx",
        "xai",
    }
)


@dataclass(frozen=True)
class Route:
    """How to reach a model: ``via`` is ``"openai"`` or ``"litellm"``; ``model`` is the name to
    send; ``default_api_base`` as in :data:`OPENAI_COMPATIBLE`."""

    via: str
    model: str
    default_api_base: str | None = ""


def route(model: str) -> Route:
    """The :class:`Route` for ``model`` under the rule of the module docstring."""
    prefix, slash, rest = model.partition("/")
    if slash and prefix in OPENAI_COMPATIBLE:
        if not rest:
            raise ValueError(f"model {model!r} names a provider but no model")
        return Route("openai", rest, OPENAI_COMPATIBLE[prefix])
    if slash and prefix in LITELLM_PROVIDERS:
        return Route("litellm", model, None)
    return Route("openai", model, "")

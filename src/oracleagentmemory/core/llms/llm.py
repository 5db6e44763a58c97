"""``Llm``: any chat model behind the OpenAI protocol (or litellm), with structured output."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from enum import Enum
from types import TracebackType
from typing import Any

from oracleagentmemory._notset import NOT_SET, NOT_SET_MARKER as NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.llms.llm import (
    ChatMessageTypedDictT,
    ILlm,
    LlmResponse,
    Prompt as Prompt,
)
from oracleagentmemory.apis.message import (
    ImageContent,
    ImageMimeType,
    JsonSchema as JsonSchema,
    TextContent as TextContent,
)
from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core._shared._http import (
    ConcurrencyLimit,
    JsonHttpClient,
    RetryPolicy,
    api_base_arg,
    bool_arg,
    optional_file,
    optional_str,
    positive_int,
    tls_verify,
)
from oracleagentmemory.core.imageinputlimitconfig import (
    ImageInputLimitConfig,
    ResolvedImageInputLimitConfig,
    validate_image_request,
)
from oracleagentmemory.core.llms import _openai
from oracleagentmemory.core.llms._backends import (
    Backend,
    CallOptions,
    HttpBackend,
    LitellmBackend,
)
from oracleagentmemory.core.llms._errors import LlmOutputError, LlmRequestError
from oracleagentmemory.core.llms._events import instrument_llm
from oracleagentmemory.core.llms._jsonschema import check_schema
from oracleagentmemory.core.llms._messages import (
    ChatMessage,
    ImagePart,
    images_of,
    normalize_prompt,
)
from oracleagentmemory.core.llms._routing import route
from oracleagentmemory.core.llms._structured import (
    Flow,
    OutputMode,
    Request,
    adrive,
    drive,
    plain_flow,
    structured_flow,
)

logger = logging.getLogger("oracleagentmemory.llm")

_OPENAI_API_BASE = "https://api.openai.com/v1"
# Keyword arguments that configure the client rather than the request body (litellm's names).
_CLIENT_KWARGS = frozenset({"timeout", "max_retries", "num_retries", "extra_headers"})
# Keyword arguments that change one call's settings.
_CALL_KWARGS = frozenset(
    {
        "api_type",
        "image_input_limit_config",
        "stream",
        "temperature",
        "max_tokens",
        "reasoning_effort",
    }
)
_RESERVED_BODY = frozenset({"model", "messages", "input"})


class LlmApiType(str, Enum):
    """Which OpenAI endpoint ``Llm`` calls: ``/chat/completions`` or ``/responses``."""

    CHAT_COMPLETIONS = "chat_completions"
    RESPONSES = "responses"


def _api_type(value: object, name: str = "api_type") -> LlmApiType:
    try:
        return LlmApiType(value)
    except ValueError:
        options = ", ".join(repr(t.value) for t in LlmApiType)
        raise ValueError(f"{name} must be an LlmApiType ({options}), got {value!r}") from None


def _optional_number(name: str, value: object, *, minimum: float = 0.0) -> float | None:
    if value is NOT_SET or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number or None, got {type(value).__name__}")
    if not math.isfinite(value) or value < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, got {value}")
    return float(value)


def _optional_positive_int(name: str, value: object) -> int | None:
    if value is NOT_SET or value is None:
        return None
    return positive_int(name, value)


def _limits(value: object, name: str = "image_input_limit_config") -> ResolvedImageInputLimitConfig:
    if value is NOT_SET or value is None:
        return ImageInputLimitConfig().resolve()
    if not isinstance(value, ImageInputLimitConfig):
        raise TypeError(f"{name} must be an ImageInputLimitConfig, got {type(value).__name__}")
    return value.resolve()


def check_image_limits(images: Sequence[ImagePart], limits: ResolvedImageInputLimitConfig) -> None:
    """ValueError naming the limit when the images of one request exceed ``limits``
    (:func:`validate_image_request` on the images' bytes). An image given by http(s) URL
    counts towards the number of images only: its size is not known without fetching it."""
    parts: list[Any] = []
    for image in images:
        try:
            mime = ImageMimeType(image.mime_type)
        except ValueError:
            mime = ImageMimeType.PNG  # only the byte count matters to the check
        parts.append(ImageContent(image.data, mime))
    validate_image_request([Message("user", parts)], limits)


@instrument_llm("generate", "generate_async")
class Llm(ILlm):
    """A chat model served over the OpenAI protocol (OpenAI, Azure/OCI OpenAI-compatible
    endpoints, vLLM, Ollama, llama.cpp's server, LM Studio, ...), or through litellm for
    providers with their own protocols.

    Omitted arguments: ``api_base`` from ``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``
    (or the provider prefix's local default, see docs/guides/llms.md); ``api_key`` from
    ``OPENAI_API_KEY`` (an explicit ``None`` sends no key); ``api_type`` chat completions;
    ``stream=False``; ``temperature``, ``max_tokens``, ``reasoning_effort`` not sent (server
    defaults); ``enable_structured_output_reminder=True``; ``supports_vision=False``;
    ``image_input_limit_config`` the SDK defaults; ``max_concurrent_requests=None``
    (unlimited); ``trust_env=True``. Other keyword arguments go into every request body,
    except ``timeout`` (seconds), ``max_retries``/``num_retries`` and ``extra_headers``, which
    configure the client.
    """

    #: Extra attempts after a timeout, a connection failure or a 408/429/5xx answer.
    max_retries: int = 2
    #: Seconds to wait for an answer (connecting has its own 10 s limit).
    timeout: float = 600.0
    #: First backoff in seconds (doubling per retry, with jitter, up to ``retry_max_delay``).
    retry_base_delay: float = 0.5
    #: Longest backoff between retries, in seconds (a server's Retry-After may ask for more).
    retry_max_delay: float = 8.0

    def __init__(
        self,
        model: str,
        api_base: str | NotSet | None = NOT_SET,
        api_key: str | NotSet | None = NOT_SET,
        api_type: LlmApiType | NotSet = NOT_SET,
        stream: bool | NotSet = NOT_SET,
        temperature: float | NotSet | None = NOT_SET,
        max_tokens: int | NotSet | None = NOT_SET,
        reasoning_effort: str | NotSet | None = NOT_SET,
        enable_structured_output_reminder: bool | NotSet = NOT_SET,
        supports_vision: bool | NotSet = NOT_SET,
        image_input_limit_config: ImageInputLimitConfig | NotSet = NOT_SET,
        max_concurrent_requests: int | NotSet | None = NOT_SET,
        key_file: str | NotSet | None = NOT_SET,
        cert_file: str | NotSet | None = NOT_SET,
        ca_file: str | NotSet | None = NOT_SET,
        proxy: str | NotSet | None = NOT_SET,
        trust_env: bool | NotSet = NOT_SET,
        **default_kwargs: Any,
    ) -> None:
        if not isinstance(model, str):
            raise TypeError(f"model must be a str, got {type(model).__name__}")
        if not model.strip():
            raise ValueError("model must be a non-empty str")
        self._model = model
        self._api_type = LlmApiType.CHAT_COMPLETIONS if api_type is NOT_SET else _api_type(api_type)
        self._stream = bool_arg("stream", stream, False)
        self._temperature = _optional_number("temperature", temperature)
        self._max_tokens = _optional_positive_int("max_tokens", max_tokens)
        self._reasoning_effort = optional_str("reasoning_effort", reasoning_effort)
        self._reminder = bool_arg(
            "enable_structured_output_reminder", enable_structured_output_reminder, True
        )
        self._supports_vision = bool_arg("supports_vision", supports_vision, False)
        self._image_limits = _limits(image_input_limit_config)
        self._limit = ConcurrencyLimit(
            _optional_positive_int("max_concurrent_requests", max_concurrent_requests)
        )
        self._client_options, self._default_body = self._split_kwargs(default_kwargs, "")
        # The structured-output mode each API type of this server accepted last.
        self._accepted_modes: dict[LlmApiType, OutputMode] = {}

        trusted_env = bool_arg("trust_env", trust_env, True)
        target = route(model)
        key = os.environ.get("OPENAI_API_KEY") if api_key is NOT_SET else api_key
        if target.via == "litellm":
            for name, value in (
                ("key_file", key_file),
                ("cert_file", cert_file),
                ("ca_file", ca_file),
                ("proxy", proxy),
            ):
                if value is not NOT_SET and value is not None:
                    raise ValueError(
                        f"{name} applies to OpenAI-compatible endpoints; model {model!r} is "
                        "served through litellm, configure TLS and proxies in its environment"
                    )
            base = optional_str("api_base", api_base)
            secret = optional_str("api_key", api_key)
            self._api_base = base
            self._backend: Backend = LitellmBackend(
                model=model, api_base=base, api_key=secret, limit=self._limit
            )
            return

        if api_base is NOT_SET or api_base is None:
            default = target.default_api_base
            if default is None:
                raise ValueError(f"model {model!r} needs an api_base (the server's URL)")
            if default == "":
                default = os.environ.get("OPENAI_BASE_URL") or _OPENAI_API_BASE
            elif api_key is NOT_SET:
                key = None  # local servers (Ollama, LM Studio, ...) take no key
            base = api_base_arg(default, default)
        else:
            base = api_base_arg(api_base, _OPENAI_API_BASE)
        self._api_base = base
        http = JsonHttpClient(
            what="LLM",
            error_class=LlmRequestError,
            api_key=optional_str("api_key", key) or None,
            verify=tls_verify(
                cert_file=optional_file("cert_file", cert_file),
                key_file=optional_file("key_file", key_file),
                ca_file=optional_file("ca_file", ca_file),
                trust_env=trusted_env,
            ),
            proxy=optional_str("proxy", proxy),
            trust_env=trusted_env,
            timeout=self.timeout,
            limit=self._limit,
        )
        self._backend = HttpBackend(model=target.model, api_base=base, http=http)

    # -- settings ---------------------------------------------------------------------------

    @staticmethod
    def _split_kwargs(
        kwargs: Mapping[str, Any], where: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(client options, request-body extras) of keyword arguments."""
        clash = _RESERVED_BODY.intersection(kwargs)
        if clash:
            raise ValueError(
                f"{', '.join(sorted(clash))} cannot be passed{where} as extra request fields"
            )
        client = {k: v for k, v in kwargs.items() if k in _CLIENT_KWARGS}
        body = {k: v for k, v in kwargs.items() if k not in _CLIENT_KWARGS}
        if "timeout" in client:
            _optional_number("timeout", client["timeout"], minimum=0.001)
        for name in ("max_retries", "num_retries"):
            if name in client:
                value = client[name]
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        headers = client.get("extra_headers")
        if headers is not None and not (
            isinstance(headers, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        ):
            raise TypeError("extra_headers must be a mapping of str to str")
        return client, body

    @property
    def model(self) -> str:
        """The model name as given."""
        return self._model

    @property
    def supports_vision(self) -> bool:
        """Whether image parts may be sent to this model."""
        return self._supports_vision

    @property
    def api_type(self) -> LlmApiType:
        """The endpoint used when a call does not choose one."""
        return self._api_type

    @property
    def structured_output_mode(self) -> str | None:
        """The structured-output mode the server last accepted for the default API type
        (``"json_schema"``, ``"json_object"`` or ``"prompt"``; ``None`` before the first)."""
        mode = self._accepted_modes.get(self._api_type)
        return None if mode is None else mode.value

    def __repr__(self) -> str:
        return f"Llm(model={self._model!r}, api_base={self._api_base!r})"

    # -- one call ---------------------------------------------------------------------------

    def _prepare(
        self, prompt: Any, schema: Any, kwargs: dict[str, Any]
    ) -> tuple[Flow, CallOptions, LlmApiType]:
        """Validate everything and check images before any request is made."""
        if schema is not None:
            schema = check_schema(schema)
        call = {k: kwargs.pop(k) for k in list(kwargs) if k in _CALL_KWARGS}
        client, body = self._split_kwargs(kwargs, " to generate")
        api_type = _api_type(call.get("api_type", self._api_type))
        messages = normalize_prompt(prompt)
        images = images_of(messages)
        if images:
            if not self._supports_vision:
                raise ValueError(
                    f"the prompt has {len(images)} image part(s) but this Llm was built with "
                    "supports_vision=False; pass supports_vision=True for a vision model"
                )
            limits = (
                _limits(call["image_input_limit_config"])
                if "image_input_limit_config" in call
                else self._image_limits
            )
            check_image_limits(images, limits)

        merged_body = {**self._default_body, **body}
        if schema is not None and ({"response_format", "text"} & merged_body.keys()):
            raise ValueError(
                "response_json_schema cannot be combined with a response_format/text field"
            )
        options = {**self._client_options, **client}
        headers = dict(options.get("extra_headers") or {})
        retries = options.get("max_retries", options.get("num_retries", self.max_retries))
        sampling = _openai.Sampling(
            temperature=_optional_number("temperature", call.get("temperature", self._temperature)),
            max_tokens=_optional_positive_int(
                "max_tokens", call.get("max_tokens", self._max_tokens)
            ),
            reasoning_effort=optional_str(
                "reasoning_effort", call.get("reasoning_effort", self._reasoning_effort)
            ),
            extra=merged_body,
        )
        call_options = CallOptions(
            api_type=api_type.value,
            stream=bool_arg("stream", call.get("stream", self._stream), False),
            sampling=sampling,
            timeout=float(options.get("timeout", self.timeout)),
            policy=RetryPolicy(
                max_retries=retries,
                base_delay=self.retry_base_delay,
                max_delay=self.retry_max_delay,
            ),
            headers=headers,
        )
        flow = self._flow(messages, schema, api_type)
        return flow, call_options, api_type

    def _flow(
        self, messages: list[ChatMessage], schema: dict[str, Any] | None, api_type: LlmApiType
    ) -> Flow:
        if schema is None:
            return plain_flow(messages)
        start = self._accepted_modes.get(api_type, OutputMode.JSON_SCHEMA)
        return structured_flow(messages, schema, start=start, reminder=self._reminder)

    def _accepted(self, api_type: LlmApiType, request: Request) -> None:
        if request.mode is None:
            return
        previous = self._accepted_modes.get(api_type)
        if previous is not request.mode:
            if previous is not None or request.mode is not OutputMode.JSON_SCHEMA:
                logger.info("%r: structured output now asked as %s", self, request.mode.value)
            self._accepted_modes[api_type] = request.mode

    def generate(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Generate a completion for ``prompt`` (see the class and docs/guides/llms.md for the
        options).

        With ``response_json_schema`` the text is JSON (``json.dumps``) valid for the schema, or
        :class:`LlmOutputError` is raised. Per-call keyword arguments: ``api_type``,
        ``image_input_limit_config``, ``stream``, ``temperature``, ``max_tokens``,
        ``reasoning_effort``, the client options, and extra request-body fields.
        """
        flow, options, api_type = self._prepare(prompt, response_json_schema, dict(kwargs))
        return drive(
            flow,
            lambda request: self._backend.complete(request, options),
            lambda request: self._accepted(api_type, request),
        )

    async def generate_async(
        self,
        prompt: str
        | Sequence[Message | Mapping[str, str | Sequence[Mapping[str, Any]]]]
        | ChatMessageTypedDictT,
        *,
        response_json_schema: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LlmResponse:
        """Like :meth:`generate`, on the running loop's own connection pool."""
        flow, options, api_type = self._prepare(prompt, response_json_schema, dict(kwargs))
        return await adrive(
            flow,
            lambda request: self._backend.acomplete(request, options),
            lambda request: self._accepted(api_type, request),
        )

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Release pooled connections; a later call opens new ones."""
        self._backend.close()

    async def aclose(self) -> None:
        """Release pooled connections, the running loop's async pool included."""
        await self._backend.aclose()

    def __enter__(self) -> Llm:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Llm:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


__all__ = ["Llm", "LlmApiType", "LlmOutputError", "LlmRequestError"]

"""``llm.generation.started`` / ``.completed`` events around the LLM adapters' ``generate``.

Like every instrumented operation, a call costs one context-variable read when no listener is
registered; the events are built only for a subscribed listener. Prompts and answers travel
in the events' sensitive fields, which their dumps redact unless asked not to.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

from oracleagentmemory.apis.llms.llm import LlmResponse
from oracleagentmemory.core.llms._messages import normalize_prompt
from oracleagentmemory.observability._instrument import plain, summary
from oracleagentmemory.observability.event import (
    LlmGenerationCompletedEvent,
    LlmGenerationStartedEvent,
    new_event_id,
)
from oracleagentmemory.observability.eventlistener import _LISTENERS, emit_event, listeners_for

C = TypeVar("C", bound=type)


def _prompt_view(prompt: Any) -> Any:
    """The transcript as role/text pairs (images counted, not copied) for the started event."""
    try:
        messages = normalize_prompt(prompt)
    except (TypeError, ValueError):
        return plain(prompt)
    return [
        {"role": m.role, "content": m.text, **({"images": len(m.images)} if m.images else {})}
        for m in messages
    ]


def _started(
    self: Any, prompt: Any, schema: Any, kwargs: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    event_id = new_event_id()
    api_type = kwargs.get("api_type", getattr(self, "api_type", "llama_cpp"))
    common: dict[str, Any] = {
        "concrete_class": type(self).__name__,
        "model": str(getattr(self, "model", type(self).__name__)),
        "api_type": str(getattr(api_type, "value", api_type)),
        "llm_config": {"supports_vision": bool(getattr(self, "supports_vision", False))},
    }
    if listeners_for(LlmGenerationStartedEvent):
        arguments = {"prompt": plain(prompt), "response_json_schema": schema, **plain(kwargs)}
        emit_event(
            LlmGenerationStartedEvent(
                event_id=f"{event_id}.started",
                arguments=arguments,
                argument_summary={
                    "prompt": summary(prompt),
                    "response_json_schema": schema is not None,
                    **{key: summary(value) for key, value in kwargs.items()},
                },
                llm_generation_config=plain(kwargs),
                prompt=_prompt_view(prompt),
                response_json_schema=schema,
                **common,
            )
        )
    return event_id, common


def _completed(
    event_id: str,
    common: dict[str, Any],
    begin: float,
    response: LlmResponse | None,
    error: BaseException | None,
) -> None:
    if not listeners_for(LlmGenerationCompletedEvent):
        return
    fields: dict[str, Any] = {}
    if response is not None:
        usage = response.usage
        fields = {
            "content": response.text,
            "result_summary": {
                "length": len(response.text),
                "finish_reason": response.finish_reason,
            },
        }
        if usage is not None:
            fields.update(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
            )
    emit_event(
        LlmGenerationCompletedEvent(
            event_id=f"{event_id}.completed",
            started_event_id=f"{event_id}.started",
            success=error is None,
            error_type=None if error is None else type(error).__name__,
            duration_ms=(time.perf_counter() - begin) * 1000,
            **fields,
            **common,
        )
    )


def _wrap(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def observed(self: Any, prompt: Any, *, response_json_schema: Any = None, **kwargs: Any) -> Any:
        if not _LISTENERS.get():
            return method(self, prompt, response_json_schema=response_json_schema, **kwargs)
        event_id, common = _started(self, prompt, response_json_schema, kwargs)
        begin = time.perf_counter()
        try:
            response = method(self, prompt, response_json_schema=response_json_schema, **kwargs)
        except BaseException as exc:
            _completed(event_id, common, begin, None, exc)
            raise
        _completed(event_id, common, begin, response, None)
        return response

    return observed


def _wrap_async(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def observed(
        self: Any, prompt: Any, *, response_json_schema: Any = None, **kwargs: Any
    ) -> Any:
        if not _LISTENERS.get():
            return await method(self, prompt, response_json_schema=response_json_schema, **kwargs)
        event_id, common = _started(self, prompt, response_json_schema, kwargs)
        begin = time.perf_counter()
        try:
            response = await method(
                self, prompt, response_json_schema=response_json_schema, **kwargs
            )
        except BaseException as exc:
            _completed(event_id, common, begin, None, exc)
            raise
        _completed(event_id, common, begin, response, None)
        return response

    return observed


def instrument_llm(*names: str) -> Callable[[C], C]:
    """Class decorator: the named methods (``generate`` and, when it does not call
    ``generate`` itself, ``generate_async``) emit LLM events."""

    def decorate(cls: C) -> C:
        for name in names:
            method = cls.__dict__[name]
            wrapped = _wrap_async(method) if inspect.iscoroutinefunction(method) else _wrap(method)
            setattr(cls, name, wrapped)
        return cls

    return decorate

"""Structured output: the request sequence behind ``generate(..., response_json_schema=...)``.

The sequence is written once, as a generator that yields the requests to make and receives
their completions (or has the request's error thrown in), so the sync and async paths of every
backend drive the same logic:

1. Ask in the best mode the server is known (or hoped) to accept: ``json_schema``
   (``response_format={"type": "json_schema", ...}``), then ``json_object`` with the schema
   attached (llama-cpp-python's server dialect), then ``prompt`` (the schema in the prompt
   only). A mode the server rejects (HTTP 400/422/500/501) moves to the next one.
2. Parse the answer tolerantly (code fences, prose around it, reasoning blocks, trailing
   commas) and validate it against the schema.
3. If that fails, ask once more in the same mode, quoting the errors; if it fails again, raise
   :class:`LlmOutputError`. An answer cut off at the token limit (``finish_reason ==
   "length"``) or refused fails at once: a retry would be cut off or refused again.

The returned text is the validated value re-serialised with ``json.dumps`` (fences and prose gone).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from oracleagentmemory.apis.llms.llm import LlmResponse, LlmUsage
from oracleagentmemory.core.llms._errors import LlmOutputError, LlmRequestError
from oracleagentmemory.core.llms._jsonschema import validation_errors
from oracleagentmemory.core.llms._jsontext import parse_json_text
from oracleagentmemory.core.llms._messages import ChatMessage, TextPart, append_user_text


class OutputMode(str, Enum):
    """How structured output is asked of the server, best first."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"


FALLBACK_ORDER = (OutputMode.JSON_SCHEMA, OutputMode.JSON_OBJECT, OutputMode.PROMPT)

# Statuses with which servers turn down a response_format they do not support.
FORMAT_REJECTED = frozenset({400, 422, 500, 501})

REMINDER = "Answer only with a JSON value that matches the requested schema, with no other text."


@dataclass
class Completion:
    """What one request returned."""

    text: str
    finish_reason: str | None = None
    usage: LlmUsage | None = None


@dataclass
class Request:
    """One request to make: the transcript and how to ask for structure (None: plain text)."""

    messages: list[ChatMessage]
    mode: OutputMode | None = None
    schema: dict[str, Any] | None = None


@dataclass
class Outcome:
    """The final answer and the mode the server accepted (None for plain text)."""

    response: LlmResponse
    mode: OutputMode | None


Flow = Generator[Request, Completion, Outcome]


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as compact JSON, for prompts."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def schema_instruction(schema: dict[str, Any]) -> str:
    """The instruction that carries the schema when the server does not enforce it."""
    return (
        "Answer only with a JSON value (no code fences, no other text) that matches this "
        f"JSON schema:\n{schema_text(schema)}"
    )


def _add_usage(total: LlmUsage | None, more: LlmUsage | None) -> LlmUsage | None:
    if more is None:
        return total
    return more if total is None else total + more


def plain_flow(messages: list[ChatMessage]) -> Flow:
    """One request, the answer as is."""
    completion = yield Request(messages)
    return Outcome(
        LlmResponse(
            completion.text, finish_reason=completion.finish_reason, usage=completion.usage
        ),
        None,
    )


def _check(completion: Completion, schema: dict[str, Any]) -> tuple[Any, list[str]]:
    """(value, []) when the answer is valid, else (None, reasons)."""
    expect = schema.get("type") if schema.get("type") in ("object", "array") else None
    try:
        value = parse_json_text(completion.text, expect)
    except ValueError as exc:
        return None, [str(exc)]
    errors = validation_errors(value, schema)
    return (value, []) if not errors else (None, errors)


def _final_failure(completion: Completion, schema: dict[str, Any]) -> LlmOutputError | None:
    if completion.finish_reason == "length":
        return LlmOutputError(
            "the structured answer was cut off at the token limit (finish_reason='length'); "
            "raise max_tokens or bound the schema (maxItems, maxLength)",
            text=completion.text,
            errors=["cut off at the token limit"],
            finish_reason=completion.finish_reason,
        )
    if completion.finish_reason in ("refusal", "content_filter"):
        return LlmOutputError(
            f"the model declined to answer (finish_reason={completion.finish_reason!r})",
            text=completion.text,
            errors=[completion.finish_reason],
            finish_reason=completion.finish_reason,
        )
    return None


def _prepare(
    messages: list[ChatMessage], mode: OutputMode, schema: dict[str, Any], reminder: bool
) -> list[ChatMessage]:
    if mode is OutputMode.JSON_SCHEMA:
        return append_user_text(messages, REMINDER) if reminder else list(messages)
    # json_object servers mostly ignore the attached schema; prompt mode has nothing else.
    return append_user_text(messages, schema_instruction(schema))


def _repair(
    sent: list[ChatMessage], answer: str, errors: list[str], schema: dict[str, Any]
) -> list[ChatMessage]:
    listed = "\n".join(f"- {error}" for error in errors)
    note = (
        f"Your answer could not be used:\n{listed}\n"
        "Reply again with only the corrected JSON value, no other text. "
        f"It must match this JSON schema:\n{schema_text(schema)}"
    )
    return [
        *sent,
        ChatMessage("assistant", [TextPart(answer)]),
        ChatMessage("user", [TextPart(note)]),
    ]


def structured_flow(
    messages: list[ChatMessage],
    schema: dict[str, Any],
    *,
    start: OutputMode,
    reminder: bool,
    modes: tuple[OutputMode, ...] = FALLBACK_ORDER,
) -> Flow:
    """The request sequence of the module docstring, starting at mode ``start``."""
    usage: LlmUsage | None = None
    chain = modes[modes.index(start) :]
    for position, mode in enumerate(chain):
        sent = _prepare(messages, mode, schema, reminder)
        try:
            completion = yield Request(sent, mode, schema)
        except LlmRequestError as exc:
            last_mode = position == len(chain) - 1
            if last_mode or exc.status_code not in FORMAT_REJECTED:
                raise
            continue
        usage = _add_usage(usage, completion.usage)
        failure = _final_failure(completion, schema)
        if failure is not None:
            raise failure
        value, errors = _check(completion, schema)
        if not errors:
            return Outcome(_response(value, completion, usage), mode)

        retry = yield Request(_repair(sent, completion.text, errors, schema), mode, schema)
        usage = _add_usage(usage, retry.usage)
        failure = _final_failure(retry, schema)
        if failure is not None:
            raise failure
        value, retry_errors = _check(retry, schema)
        if not retry_errors:
            return Outcome(_response(value, retry, usage), mode)
        raise LlmOutputError(
            "the model's answer did not match the response schema after one repair retry: "
            + "; ".join(retry_errors),
            text=retry.text,
            errors=retry_errors,
            finish_reason=retry.finish_reason,
        )
    raise AssertionError("unreachable: the last mode either answers or raises")


def _response(value: Any, completion: Completion, usage: LlmUsage | None) -> LlmResponse:
    text = json.dumps(value, ensure_ascii=False)
    return LlmResponse(text, finish_reason=completion.finish_reason, usage=usage)


# -- drivers: run a flow against a transport (the only sync/async difference) -----------------


def _step(
    flow: Flow, completion: Completion | None, error: LlmRequestError | None
) -> Request | LlmResponse:
    try:
        if error is not None:
            return flow.throw(error)
        assert completion is not None
        return flow.send(completion)
    except StopIteration as stop:
        outcome: Outcome = stop.value
        return outcome.response


def drive(
    flow: Flow,
    complete: Callable[[Request], Completion],
    accepted: Callable[[Request], None] | None = None,
) -> LlmResponse:
    """Run ``flow``, answering each request with ``complete(request)``; ``accepted`` hears of
    every request that got an answer (the server accepted its mode)."""
    request = next(flow)
    while True:
        try:
            completion = complete(request)
        except LlmRequestError as exc:
            step = _step(flow, None, exc)
        else:
            if accepted is not None:
                accepted(request)
            step = _step(flow, completion, None)
        if isinstance(step, LlmResponse):
            return step
        request = step


async def adrive(
    flow: Flow,
    complete: Callable[[Request], Awaitable[Completion]],
    accepted: Callable[[Request], None] | None = None,
) -> LlmResponse:
    """Async twin of :func:`drive`."""
    request = next(flow)
    while True:
        try:
            completion = await complete(request)
        except LlmRequestError as exc:
            step = _step(flow, None, exc)
        else:
            if accepted is not None:
                accepted(request)
            step = _step(flow, completion, None)
        if isinstance(step, LlmResponse):
            return step
        request = step

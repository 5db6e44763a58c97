"""The OpenAI wire protocol: request bodies and answers of ``/chat/completions`` and
``/responses``, plain and streamed (server-sent events)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.apis.llms.llm import LlmUsage
from oracleagentmemory.core.llms._errors import LlmRequestError
from oracleagentmemory.core.llms._messages import to_chat_completions, to_responses_input
from oracleagentmemory.core.llms._structured import Completion, OutputMode, Request

CHAT = "chat_completions"
RESPONSES = "responses"


@dataclass
class Sampling:
    """Per-call generation settings (``None``: not sent, the server's default applies)."""

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _strict_ok(schema: Any) -> bool:
    """True when OpenAI's strict mode accepts the schema: every object closes its properties
    (``additionalProperties: false``) and requires all of them."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties", {})
            if schema.get("additionalProperties") is not False:
                return False
            if set(schema.get("required", ())) != set(props):
                return False
        return all(_strict_ok(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_strict_ok(v) for v in schema)
    return True


def _schema_name(schema: dict[str, Any]) -> str:
    title = schema.get("title")
    if isinstance(title, str):
        name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in title)[:64]
        if name:
            return name
    return "response"


def _chat_format(mode: OutputMode | None, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if mode is None or schema is None or mode is OutputMode.PROMPT:
        return None
    if mode is OutputMode.JSON_SCHEMA:
        return {
            "type": "json_schema",
            "json_schema": {
                "name": _schema_name(schema),
                "schema": schema,
                "strict": _strict_ok(schema),
            },
        }
    return {"type": "json_object", "schema": schema}


def _responses_format(
    mode: OutputMode | None, schema: dict[str, Any] | None
) -> dict[str, Any] | None:
    if mode is None or schema is None or mode is OutputMode.PROMPT:
        return None
    if mode is OutputMode.JSON_SCHEMA:
        return {
            "type": "json_schema",
            "name": _schema_name(schema),
            "schema": schema,
            "strict": _strict_ok(schema),
        }
    return {"type": "json_object", "schema": schema}


def request_body(
    api_type: str, model: str, request: Request, sampling: Sampling, stream: bool
) -> dict[str, Any]:
    """The JSON body for ``request`` in ``api_type``'s dialect.

    Extra fields (the adapter's ``default_kwargs`` and per-call keyword arguments) are merged
    last, so they can override anything; an extra field set to ``None`` is left out.
    """
    body: dict[str, Any] = {"model": model}
    if api_type == CHAT:
        body["messages"] = to_chat_completions(request.messages)
        if sampling.max_tokens is not None:
            body["max_tokens"] = sampling.max_tokens
        if sampling.reasoning_effort is not None:
            body["reasoning_effort"] = sampling.reasoning_effort
        fmt = _chat_format(request.mode, request.schema)
        if fmt is not None:
            body["response_format"] = fmt
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
    else:
        body["input"] = to_responses_input(request.messages)
        if sampling.max_tokens is not None:
            body["max_output_tokens"] = sampling.max_tokens
        if sampling.reasoning_effort is not None:
            body["reasoning"] = {"effort": sampling.reasoning_effort}
        fmt = _responses_format(request.mode, request.schema)
        if fmt is not None:
            body["text"] = {"format": fmt}
        body["store"] = False
        if stream:
            body["stream"] = True
    if sampling.temperature is not None:
        body["temperature"] = sampling.temperature
    for key, value in sampling.extra.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


# -- answers --------------------------------------------------------------------------------------


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_usage(raw: Any) -> LlmUsage | None:
    """Token usage in either API's naming (``prompt_tokens`` / ``input_tokens``, ...)."""
    if not isinstance(raw, dict):
        return None
    prompt = _int_or_none(raw.get("prompt_tokens", raw.get("input_tokens")))
    completion = _int_or_none(raw.get("completion_tokens", raw.get("output_tokens")))
    total = _int_or_none(raw.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    if prompt is None and completion is None and total is None:
        return None
    return LlmUsage(prompt, completion, total)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def parse_chat(body: Any, url: str) -> Completion:
    """A ``/chat/completions`` answer."""
    try:
        choice = body["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed chat completions response from {url}: no choices") from exc
    text = _text_of(message.get("content"))
    finish = choice.get("finish_reason")
    refusal = message.get("refusal")
    if not text and isinstance(refusal, str) and refusal:
        text, finish = refusal, "refusal"
    return Completion(
        text, finish if isinstance(finish, str) else None, parse_usage(body.get("usage"))
    )


def _responses_finish(body: dict[str, Any]) -> str | None:
    status = body.get("status")
    if status == "incomplete":
        details = body.get("incomplete_details") or {}
        reason = details.get("reason") if isinstance(details, dict) else None
        return "length" if reason == "max_output_tokens" else str(reason or "incomplete")
    if status == "completed":
        return "stop"
    return status if isinstance(status, str) else None


def parse_responses(body: Any, url: str) -> Completion:
    """A ``/responses`` answer: the ``output_text`` parts of its message items."""
    if not isinstance(body, dict) or not isinstance(body.get("output"), list):
        raise ValueError(f"malformed responses API response from {url}: no output list")
    if body.get("status") == "failed":
        error = body.get("error") or {}
        message = error.get("message") if isinstance(error, dict) else None
        raise LlmRequestError(f"responses request to {url} failed: {message or 'status failed'}")
    texts: list[str] = []
    refusal = ""
    for item in body["output"]:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue  # reasoning items, tool calls
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "output_text":
                texts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") == "refusal":
                refusal += str(part.get("refusal", ""))
    finish = _responses_finish(body)
    text = "".join(texts)
    if not text and refusal:
        text, finish = refusal, "refusal"
    return Completion(text, finish, parse_usage(body.get("usage")))


def parse(api_type: str, body: Any, url: str) -> Completion:
    """A non-streamed answer of ``api_type``."""
    return parse_chat(body, url) if api_type == CHAT else parse_responses(body, url)


# -- streams ---------------------------------------------------------------------------------------


class StreamAssembler:
    """Folds server-sent events of either API into one :class:`Completion`."""

    def __init__(self, api_type: str, url: str) -> None:
        self.api_type = api_type
        self.url = url
        self.parts: list[str] = []
        self.finish: str | None = None
        self.usage: LlmUsage | None = None
        self.done = False
        self.final_text: str | None = None

    def feed_line(self, line: str) -> None:
        """Take one line of the event stream."""
        if not line or line.startswith((":", "event:", "id:", "retry:")):
            return
        if not line.startswith("data:"):
            return
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except ValueError as exc:
            raise ValueError(
                f"malformed event in the stream from {self.url}: {data[:80]!r}"
            ) from exc
        if not isinstance(event, dict):
            return
        if self.api_type == CHAT:
            self._chat_event(event)
        else:
            self._responses_event(event)

    def _raise_error(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else error
        raise LlmRequestError(f"the stream from {self.url} reported an error: {message}")

    def _chat_event(self, event: dict[str, Any]) -> None:
        if event.get("error"):
            self._raise_error(event["error"])
        for choice in event.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            piece = _text_of(delta.get("content")) if isinstance(delta, dict) else ""
            if piece:
                self.parts.append(piece)
            if isinstance(choice.get("finish_reason"), str):
                self.finish = choice["finish_reason"]
        usage = parse_usage(event.get("usage"))
        if usage is not None:
            self.usage = usage

    def _responses_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.output_text.delta":
            self.parts.append(str(event.get("delta", "")))
        elif kind in ("response.completed", "response.incomplete"):
            body = event.get("response") or {}
            self.finish = _responses_finish(body)
            self.usage = parse_usage(body.get("usage"))
            self.done = True
        elif kind == "response.failed":
            body = event.get("response") or {}
            self._raise_error(body.get("error") or "status failed")
        elif kind == "error":
            self._raise_error(event)

    def result(self) -> Completion:
        """The assembled completion."""
        return Completion("".join(self.parts), self.finish, self.usage)


def assemble(api_type: str, url: str, lines: Iterable[str]) -> Completion:
    """Read a whole event stream (sync)."""
    assembler = StreamAssembler(api_type, url)
    for line in lines:
        assembler.feed_line(line)
        if assembler.done:
            break
    return assembler.result()


async def aassemble(api_type: str, url: str, lines: AsyncIterator[str]) -> Completion:
    """Read a whole event stream (async)."""
    assembler = StreamAssembler(api_type, url)
    async for line in lines:
        assembler.feed_line(line)
        if assembler.done:
            break
    return assembler.result()
